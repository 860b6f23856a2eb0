//! What one run is: the request to make it ([`Request`], [`Start`]), what
//! its alerts say about where it is (`Context`), what the lock decided
//! for it ([`Told`]), and which lock it runs under and which jobs share it.
//! Nothing here takes a lease, writes a record or runs a step: that is
//! [`crate::engine::run`] and [`crate::engine::steps`], which both speak these words.

use baton_store::words::{AlertKind, MissReason};
use jiff::Timestamp;

use crate::config::{Config, Job};
use crate::engine::alerts::{Alert, HolderInfo};

/// What a run is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A scheduled occurrence (seconds since 1970).
    Scheduled(i64),
    /// A run by hand.
    Manual,
    /// Only what waits in the queue of the jobs sharing the lock.
    Queue,
}

impl Start {
    /// The occurrence, for a scheduled run.
    pub fn occurrence(self) -> Option<i64> {
        match self {
            Start::Scheduled(at) => Some(at),
            Start::Manual | Start::Queue => None,
        }
    }
}

/// What the lock decided for a run, told once, as soon as it is known (the
/// daemon's workers print it as their first line).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Told {
    /// The lease is held (and the occurrence claimed): the run starts.
    Started {
        /// The run's id (empty for a queue drained without a run of its own).
        run_id: String,
        /// The lease's fence.
        fence: u64,
    },
    /// The lock file's claim says this occurrence started already.
    Claimed,
    /// Another process runs this occurrence (or a later one) now, or the
    /// holder will drain the queue.
    Running {
        /// Who holds the lock.
        holder: Option<HolderInfo>,
    },
    /// Queued behind the run in flight (`overlap = "queue"`).
    Queued,
    /// Joined the occurrence already waiting in the queue.
    Coalesced,
    /// Not run: recorded as missed for `reason`.
    Missed {
        /// `busy`, `hung`, `orphaned`, `version-conflict`.
        reason: MissReason,
        /// Who holds the lock.
        holder: Option<HolderInfo>,
        /// What was said.
        message: String,
    },
    /// Another process decided this occurrence first.
    Decided,
    /// The lock could not be used.
    Error {
        /// Why.
        message: String,
    },
}

/// Where a [`Told`] goes: called at most once per [`crate::engine::run::run`].
pub struct Teller<'a> {
    told: std::cell::Cell<bool>,
    to: &'a dyn Fn(&Told),
}

impl<'a> Teller<'a> {
    /// Tells `to` what the lock decided, once.
    pub fn new(to: &'a dyn Fn(&Told)) -> Self {
        Self {
            told: std::cell::Cell::new(false),
            to,
        }
    }

    pub(crate) fn tell(&self, t: &Told) {
        if !self.told.replace(true) {
            (self.to)(t);
        }
    }
}

impl std::fmt::Debug for Teller<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Teller")
            .field("told", &self.told.get())
            .finish()
    }
}

/// A run to make.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The job.
    pub job: &'a Job,
    /// What the run is for.
    pub start: Start,
    /// Copy the steps' output to standard output as well as the log.
    pub tee: bool,
    /// Told what the lock decided, once.
    pub teller: Option<&'a Teller<'a>>,
    /// A caught SIGINT, SIGTERM or SIGHUP stops the running step's whole
    /// tree (the daemon's runs at shutdown) instead of being passed to it
    /// (see `baton_runner::SessionConfig::stop_on_signal`).
    pub stop_on_signal: bool,
    /// A backfill's runs: the only ones that may run an occurrence the
    /// ledger records missed ([`baton_store::ledger::NewRun::backfill`]).
    pub backfill: bool,
}

/// An occurrence as the ledger, the logs and the job see it: RFC 3339 in
/// UTC, or `manual`.
pub fn occurrence_text(occurrence: Option<i64>) -> String {
    match occurrence.and_then(|s| Timestamp::from_second(s).ok()) {
        Some(t) => t.to_string(),
        None => "manual".into(),
    }
}

/// The lock file of a job in the state directory (the embedded store).
pub fn lock_for(config: &Config, job: &Job) -> baton_lease::Lock {
    crate::store::lock_file(&config.settings.state_dir.value, job)
}

/// Where a job's lock is, for messages and alerts: its file, or its row in
/// the configured store.
pub fn lock_label(config: &Config, job: &Job) -> String {
    match crate::store::open(config) {
        Ok(s) => s.lock_label(&job.lock_ref()),
        Err(_) => lock_for(config, job).path().display().to_string(),
    }
}

/// The jobs that share `job`'s lock (itself included), by name.
pub fn lock_mates<'c>(config: &'c Config, job: &Job) -> Vec<&'c str> {
    config
        .jobs
        .values()
        .filter(|j| j.lock.value == job.lock.value)
        .map(|j| j.name.as_str())
        .collect()
}

/// The jobs sharing `job`'s lock whose queue may run: the enabled ones.
/// Of these, the ledger skips the paused (`next_queued`, in
/// [`crate::engine::run`]).
pub(crate) fn drainable<'c>(config: &'c Config, job: &Job) -> Vec<&'c str> {
    lock_mates(config, job)
        .into_iter()
        .filter(|name| config.jobs.get(*name).is_some_and(|j| j.enabled.value))
        .collect()
}

/// [`lock_mates`], owned: the keys whose claims the lock keeps whatever
/// else it drops to make room.
pub(crate) fn owned_mates(config: &Config, job: &Job) -> Vec<String> {
    lock_mates(config, job)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// What an alert of a run says about where it is.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    pub(crate) job: String,
    pub(crate) occurrence: String,
    pub(crate) run_id: String,
    pub(crate) lock: String,
    pub(crate) name: String,
    pub(crate) fence: Option<u64>,
    /// The slot of the lock the run holds (1-based; `max_concurrent`).
    pub(crate) slot: u32,
    /// What the run's take of the job's guard claimed, to take back should
    /// the run not start after all.
    pub(crate) guard: Option<crate::store::GuardClaim>,
}

impl Context {
    pub(crate) fn alert(
        &self,
        kind: AlertKind,
        now: Timestamp,
        step: Option<&str>,
        message: String,
    ) -> Alert {
        Alert {
            kind,
            job: self.job.clone(),
            occurrence: Some(self.occurrence.clone()),
            run_id: Some(self.run_id.clone()).filter(|_| self.fence.is_some()),
            lock: self.lock.clone(),
            name: self.name.clone(),
            holder: None,
            fence: self.fence,
            time: now.to_string(),
            step: step.map(str::to_owned),
            message,
            status: None,
            reason: None,
            missed: None,
        }
    }
}
