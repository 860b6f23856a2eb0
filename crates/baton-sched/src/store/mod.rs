//! Where the scheduler keeps what it shares between processes and hosts:
//! the leases and occurrence claims, and the ledger (runs, decisions, missed
//! ranges, the queue, alerts, pauses, watermarks, tallies).
//!
//! [`Store`] is the one trait the rest of the scheduler talks to; it has two
//! implementations. [`Files`] is the embedded default: lock files in
//! `STATE_DIR/locks/` and the SQLite ledger `STATE_DIR/baton.db`, nothing to
//! install or start. [`Postgres`] (`[store] url`, or `BATON_STORE_URL`)
//! keeps both in PostgreSQL, so schedulers on several hosts share them.
//! [`open`] chooses from the configuration, and refuses rather than fall
//! back to files when the configured store cannot be used: two hosts that
//! silently used local locks would run a job twice. Nothing else in the
//! scheduler may name either implementation, open a ledger or take a lease
//! by itself. [`examine`] is an operator's look at either that changes
//! nothing (`baton doctor`).

pub mod examine;
mod files;
mod pg;
mod taken;

pub use files::{Files, lock_file};
pub use pg::{Postgres, deadline_for};
pub use taken::{Guard, Refused, Taken};

use baton_lease::{Claim, Verdict};
use baton_store::ledger::{Error as LedgerError, Records};
use jiff::Timestamp;

use crate::config::{Config, Job};

/// Whether a token holds a job's lease, for a command the run's steps call
/// (`baton watermark settle`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Vouch {
    /// The lease is held with that token, with this fence and run id; the
    /// action ran.
    Holder {
        /// The lease's fence.
        fence: u64,
        /// The run the lease names.
        run: Option<String>,
    },
    /// It is not, and the action did not run: the text says what stands
    /// there instead.
    NotHolder(String),
    /// Nothing names the lease at all (`where` says where it would be): no
    /// run holds it, and the action did not run.
    Missing(String),
}

/// The scheduler's shared state, in files or in PostgreSQL.
pub trait Store {
    /// `files` or `postgres`, for messages and `status`.
    fn kind(&self) -> &'static str;
    /// Where it is, for messages and to tell two stores apart: the ledger's
    /// path, or the server without the password.
    fn location(&self) -> String;
    /// Opens the ledger for writing (creating it when it does not exist).
    ///
    /// # Errors
    ///
    /// When the ledger cannot be opened: the caller says so and goes on
    /// unrecorded (a run, whose lease still guards it) or fails (a command
    /// that only reads or edits the ledger).
    fn records(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError>;
    /// Opens the ledger to read it: `None` when there is none yet (a reader
    /// never creates one).
    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>>;
    /// Where `job`'s lock is, for messages and alerts: the lock file's path,
    /// or `lock NAME in HOST:PORT (database …)`.
    fn lock_label(&self, job: &Job) -> String;
    /// Tries once to take `job`'s lock for `claim`, claiming its occurrence
    /// in the same critical section.
    ///
    /// # Errors
    ///
    /// When the store cannot decide (unreachable, unreadable, refused): the
    /// run must not start.
    fn try_acquire(&self, job: &Job, claim: &Claim) -> Result<Taken, String>;
    /// Judges `job`'s lock without changing it: `None` when it was never
    /// taken.
    ///
    /// # Errors
    ///
    /// When the store cannot be read.
    fn inspect(&self, job: &Job) -> Result<Option<Verdict>, String>;
    /// What `job`'s guard says: whether the job runs now under a lock
    /// other than its own (its lock was changed while it ran), or already
    /// claimed `occurrence` (or a later one) under another lock. Changes
    /// nothing; asked before a lease is taken, so that the common case
    /// claims nothing it will not run.
    ///
    /// # Errors
    ///
    /// When the store or the job's guard cannot be read: the run must not
    /// start.
    fn runs_elsewhere(&self, job: &Job, occurrence: Option<i64>) -> Result<Guard, String>;
    /// Takes `job`'s guard for the lease held on its lock under `fence`,
    /// claiming `occurrence`: [`Guard::Elsewhere`] when the job's run under
    /// another lock is in flight, [`Guard::Claimed`] when it claimed that
    /// occurrence or a later one there (either way nothing changed: the
    /// lease must be let go unused), else [`Guard::Clear`], and the guard
    /// names this lock and fence from now on. A job never runs under two
    /// locks at once, whatever its lock is renamed to (`DESIGN.md`, "A
    /// job's guard").
    ///
    /// # Errors
    ///
    /// As [`Store::runs_elsewhere`].
    fn take_guard(&self, job: &Job, fence: u64, occurrence: Option<i64>) -> Result<Guard, String>;
    /// The occurrence `job` last claimed under its lock (its claim: every
    /// scheduled occurrence at or before it may have started), read without
    /// changing anything: `None` when the job never claimed one there.
    ///
    /// # Errors
    ///
    /// When the store cannot be read, or the lock's record cannot be read
    /// (so its claims are unknown).
    fn claim_of(&self, job: &Job) -> Result<Option<i64>, String> {
        let verdict = self.inspect(job)?;
        claim_in(verdict.as_ref(), &job.name)
            .map_err(|why| format!("{}: its claims cannot be read: {why}", self.lock_label(job)))
    }
    /// [`Store::inspect`] of each of `jobs`, in order; a lock that cannot
    /// be read is `None`. One connection for all of them in PostgreSQL.
    fn inspect_all(&self, jobs: &[&Job]) -> Vec<Option<Verdict>> {
        jobs.iter()
            .map(|j| self.inspect(j).ok().flatten())
            .collect()
    }
    /// Runs `action` (with the lease's fence and run id) if `token` holds
    /// `job`'s lease now. With files it runs inside the lock file's critical
    /// section, so the lease cannot move meanwhile; in PostgreSQL it runs
    /// right after the row was read holding that token.
    ///
    /// # Errors
    ///
    /// When the store cannot be read; `action` did not run.
    fn while_held(
        &self,
        job: &Job,
        token: &str,
        action: &mut dyn FnMut(u64, Option<&str>),
    ) -> Result<Vouch, String>;
}

/// `key`'s claim in what a judgement of its lock saw: the free marker's or
/// the holder's (live or not). No record, an empty one or a v2 lease hold
/// none; a record this build cannot read may hold one, so it is an error.
fn claim_in(verdict: Option<&Verdict>, key: &str) -> Result<Option<i64>, String> {
    use baton_lease::Holder;
    use baton_lease::decide::Foreign;
    let claims = match verdict {
        None | Some(Verdict::Absent | Verdict::Writing { .. } | Verdict::Abandoned { .. }) => {
            return Ok(None);
        }
        Some(Verdict::Free(f)) => &f.claims,
        Some(
            Verdict::Live { holder, .. }
            | Verdict::Hung { holder, .. }
            | Verdict::Orphaned { holder, .. }
            | Verdict::Dead { holder, .. }
            | Verdict::Expired { holder, .. },
        ) => match holder {
            Holder::V3(h) => &h.claims,
            Holder::V2(_) => return Ok(None),
        },
        Some(Verdict::Refused(Foreign::Version(v))) => {
            return Err(format!("it holds a record of {v}"));
        }
        Some(Verdict::Refused(Foreign::Unreadable(why) | Foreign::NotALock(why))) => {
            return Err(why.clone());
        }
    };
    Ok(claims.get(key))
}

/// The store `config` names: PostgreSQL with `[store] url`, else files in
/// the state directory.
///
/// # Errors
///
/// When `[store]` is set but cannot be used (the URL or the password):
/// nothing falls back to local files.
pub fn open(config: &Config) -> Result<Box<dyn Store>, String> {
    match &config.store {
        Some(s) => Ok(Box::new(pg::from_settings(s)?)),
        None => Ok(Box::new(Files::new(
            config.settings.state_dir.value.clone(),
        ))),
    }
}

fn unusable(config: &Config, why: String) -> LedgerError {
    LedgerError::store(
        baton_store::ledger::Kind::Failed,
        baton_store::ledger::Unusable {
            action: "open the ledger".into(),
            store: config
                .store
                .as_ref()
                .map_or_else(|| "the store".into(), |s| s.url.value.to_string()),
            source: why.into(),
        },
    )
}

/// Opens the ledger of `config`'s store for writing.
///
/// # Errors
///
/// As [`Store::records`], and when the store cannot be used.
pub fn records(config: &Config, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
    open(config).map_err(|e| unusable(config, e))?.records(now)
}

/// Opens the ledger of `config`'s store to read it, when there is one.
pub fn existing_records(
    config: &Config,
    now: Timestamp,
) -> Option<Result<Box<dyn Records>, LedgerError>> {
    match open(config) {
        Ok(s) => s.existing_records(now),
        Err(e) => Some(Err(unusable(config, e))),
    }
}

/// How far this host's clock may be from a shared store's before it is
/// said on stderr (decisions use the store's either way).
const SKEW_SAID: jiff::SignedDuration = jiff::SignedDuration::from_secs(2);

/// The clock decisions are made by: for a store several hosts share, its
/// own, measured through `ledger` once (the store's time against the middle
/// of the round trip, by this host's boot clock), so that what is due, what
/// is missed and every stamp are the same whichever host's clock is off;
/// `local` otherwise.
///
/// # Errors
///
/// When the store's clock cannot be read: nothing may then be decided.
pub fn decision_clock(
    ledger: &mut dyn Records,
    local: std::sync::Arc<dyn baton_lease::Clock>,
) -> Result<std::sync::Arc<dyn baton_lease::Clock>, LedgerError> {
    let boot0 = local.boot();
    let wall0 = local.wall();
    let Some(store) = ledger.store_clock()? else {
        return Ok(local);
    };
    let half = local.boot().saturating_sub(boot0) / 2;
    let mid = wall0
        .checked_add(jiff::SignedDuration::try_from(half).unwrap_or_default())
        .unwrap_or(wall0);
    let offset = store.duration_since(mid);
    let at_boot = boot0 + half;
    if offset.abs() > SKEW_SAID {
        let (how, by) = if offset.is_negative() {
            ("ahead of", offset.abs())
        } else {
            ("behind", offset)
        };
        crate::say::line(format_args!(
            "this host's clock is {} {how} the store's ({}); what is due is decided by the \
             store's clock",
            crate::units::show_duration(by.unsigned_abs()),
            ledger.location()
        ));
    }
    Ok(std::sync::Arc::new(baton_lease::ShiftedClock::new(
        local, store, at_boot, offset,
    )))
}

/// The clock a command of `config` decides by ([`decision_clock`]): the
/// shared store's, measured on a connection of its own, or `local`.
///
/// # Errors
///
/// When the shared store cannot be reached: nothing may then be decided.
pub fn clock_for(
    config: &Config,
    local: std::sync::Arc<dyn baton_lease::Clock>,
) -> Result<std::sync::Arc<dyn baton_lease::Clock>, String> {
    if config.store.is_none() {
        return Ok(local);
    }
    let mut l = records(config, local.wall()).map_err(|e| e.to_string())?;
    decision_clock(l.as_mut(), local).map_err(|e| e.to_string())
}
