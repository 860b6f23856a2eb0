//! `baton status`: per job, its state ([`crate::views::job_state`]) and what it is
//! decided from, out of the configuration, the ledger and the lock, read
//! without changing anything (a state directory or ledger that does not
//! exist yet reads as "never run", and is not created).
//!
//! Here the facts are gathered; [`crate::views::job_state::decide`] chooses the
//! state from them and [`crate::views::overdue`] judges lateness, so the fields of
//! a [`JobStatus`] (`state`, `overdue`, `failing`, `crashed`) never
//! disagree. `status` exits 1 when a job it shows is hung, unknown, overdue, failing
//! or crashed ([`JobState::healthy`]), or when the ledger could not be
//! read; 0 otherwise (a fresh install's jobs are `new`, and 0 is right
//! there, until an occurrence after their file last changed should have
//! started and no tick came: [`crate::views::overdue`]). The shape of `--json`
//! is [`Status`]. With a PostgreSQL store, [`read_with_connection`] also
//! says whether a connection to it is encrypted and what of the server it
//! verified, and whether it holds grants back after its server changed
//! ([`Status::store`]); with local files nothing of a store is shown.

use std::time::Duration;

use baton_store::words::RunVerdict;
use jiff::Timestamp;
use serde::Serialize;

use crate::config::{Config, Job};
use crate::units::show_duration;
use crate::views::job_state::{Facts, JobState};
use crate::views::overdue::Fate;

/// The whole status.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// The configuration file.
    pub config: String,
    /// Whether jobs may run (the kill switch).
    pub enabled: bool,
    /// Where the kill switch's value came from.
    pub enabled_source: String,
    /// The scheduler's zone.
    pub timezone: String,
    /// The state directory.
    pub state_dir: String,
    /// The logs' directory.
    pub logs: String,
    /// When this status was read (RFC 3339).
    pub now: String,
    /// Whether every job shown is healthy ([`JobState::healthy`]) and the
    /// ledger could be read (the exit code is 0).
    pub healthy: bool,
    /// The jobs, by name.
    pub jobs: Vec<JobStatus>,
    /// Runs in flight on this host of jobs the configuration no longer
    /// names (renamed or removed while they ran): a run of the job under
    /// its new name would run beside them. Read for a whole status only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unconfigured_runs: Vec<UnconfiguredRun>,
    /// Why the ledger could not be read, when it could not: the jobs then
    /// show only what the configuration and the logs say.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The PostgreSQL store's connection, when there is a store and
    /// [`read_with_connection`] examined it: encrypted or not, the server
    /// verified or not, and until when it holds grants back after its
    /// server changed (absent with local files).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<crate::store::examine::Connection>,
    /// The ledger was written by a newer baton ([`Self::error`] says so):
    /// none of it was read, so the jobs' states are not to be shown.
    #[serde(skip)]
    pub ledger_newer: bool,
}

/// A run in flight of a job the configuration no longer names, whose
/// supervisor on this host still lives.
#[derive(Debug, Clone, Serialize)]
pub struct UnconfiguredRun {
    /// The job's name when the run started.
    pub job: String,
    /// The run.
    pub run_id: String,
    /// Its supervisor's pid on this host.
    pub pid: u32,
    /// When it started (RFC 3339).
    pub started: String,
}

/// One job.
#[derive(Debug, Clone, Serialize)]
pub struct JobStatus {
    /// The job.
    pub job: String,
    /// Whether it runs at all: the job, and the scheduler's kill switch.
    pub enabled: bool,
    /// Whether a run of it is in flight (its lock's holder, or its former
    /// lock's while that run goes on, is live): what `running` means on
    /// every surface. Not in the JSON: `state` and `holder` say it there.
    #[serde(skip)]
    pub in_flight: bool,
    /// When the run in flight started (with `max_concurrent`, the oldest
    /// of them): the ledger's start of the run its lock's holder names,
    /// else, for a run the ledger has no row of, when that holder took the
    /// lease. `None` when nothing of the job runs. Not in the JSON:
    /// `last_run` and `holder` say it there.
    #[serde(skip)]
    pub run_started: Option<Timestamp>,
    /// A run in flight has used the whole budget its holder declared
    /// (`max_runtime`), by the one rule of [`baton_lease::overran`]: what
    /// the run's own `overrunning` alert and a refused contender's say.
    /// Not in the JSON.
    #[serde(skip)]
    pub overrunning: bool,
    /// Its state: `disabled`, `paused`, `running`, `hung`, `unknown`,
    /// `overdue`, `failing`, `crashed`, `new` or `ok`
    /// ([`crate::views::job_state`]).
    pub state: JobState,
    /// Its schedule as written (`0 3 * * *`, or `every 15m`).
    pub schedule: String,
    /// Its zone.
    pub timezone: String,
    /// Its lock's name.
    pub lock: String,
    /// Who runs it, for a job a service embedding baton's scheduler
    /// declared in the ledger rather than `baton.toml` naming it (the
    /// service, host and process that declared it last). Left out for the
    /// configuration's jobs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub declared_by: Option<String>,
    /// When the next occurrence that may run starts (its instant, moved on
    /// by the job's jitter), in the job's zone (RFC 3339 with
    /// offset): for a paused job, the first at or after the pause's end
    /// (none while the pause has no end); none while the job or the
    /// scheduler is disabled.
    pub next_run: Option<String>,
    /// Seconds until then.
    pub next_run_in_seconds: Option<i64>,
    /// With `jitter`: the occurrence the next run is for (RFC 3339 UTC),
    /// which it starts [`Self::jitter_offset_seconds`] after. Left out
    /// without jitter, where it is the next run itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_occurrence: Option<String>,
    /// With `jitter`: how long after each occurrence the job starts
    /// ([`crate::jitter`]). Left out without jitter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_offset_seconds: Option<u64>,
    /// The newest run.
    pub last_run: Option<RunSummary>,
    /// When its newest run started.
    pub last_attempt: Option<String>,
    /// When its newest successful run finished.
    pub last_success: Option<String>,
    /// When its newest failed run finished.
    pub last_failure: Option<String>,
    /// Failed runs in a row; `None` when the ledger cannot be read.
    pub consecutive_failures: Option<u64>,
    /// Each step and check.
    pub steps: Vec<StepStatus>,
    /// Who holds the lock now, if anyone (with `max_concurrent`, the
    /// first live slot's holder).
    pub holder: Option<HolderStatus>,
    /// How many runs of it may be in flight at once (`max_concurrent`).
    pub max_concurrent: u32,
    /// Every slot's holder (`max_concurrent`), slot 1 first; with one
    /// slot, the holder's.
    pub holders: Vec<HolderStatus>,
    /// It has never run; `None` when the ledger cannot be read.
    pub never_run: Option<bool>,
    /// The occurrence that should have started and did not, when the
    /// overdue test holds ([`crate::views::overdue`]).
    pub overdue: Option<Overdue>,
    /// Its newest finished run failed (and was not `interrupted`); `None`
    /// when the ledger cannot be read.
    pub failing: Option<bool>,
    /// Its newest run started, never recorded an end, and nothing of it
    /// runs now; `None` when the ledger cannot be read.
    pub crashed: Option<bool>,
    /// The pause in force, if the job is paused.
    pub paused: Option<PauseStatus>,
    /// Occurrences that will not run, counted per reason; `None` when the
    /// ledger cannot be read.
    pub missed: Option<MissedStatus>,
    /// Occurrences waiting to run, oldest first; `None` when the ledger
    /// cannot be read.
    pub queued: Option<Vec<QueuedStatus>>,
    /// The job's watermark, once one was settled.
    pub watermark: Option<WatermarkStatus>,
    /// Its newest alerts, newest first; `None` when the ledger cannot be
    /// read.
    pub recent_alerts: Option<Vec<AlertSummary>>,
    /// Today's output log of the job.
    pub log: String,
}

/// A run, summed up.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// Its id.
    pub run_id: String,
    /// Its occurrence (RFC 3339 UTC), or `manual`.
    pub occurrence: String,
    /// When it started.
    pub started: String,
    /// When it finished, if it did.
    pub finished: Option<String>,
    /// Its verdict, once finished.
    pub verdict: Option<String>,
    /// How long it ran, in milliseconds, once finished.
    pub duration_ms: Option<u64>,
    /// Its exit code, once finished.
    pub exit_code: Option<i32>,
}

/// A step or check.
#[derive(Debug, Clone, Serialize)]
pub struct StepStatus {
    /// Its name.
    pub step: String,
    /// `step` or `check`.
    pub kind: &'static str,
    /// When its newest attempt started.
    pub last_attempt: Option<String>,
    /// When its newest successful attempt finished.
    pub last_success: Option<String>,
    /// When its newest failed attempt finished.
    pub last_failure: Option<String>,
    /// Failed attempts in a row; `None` when the ledger cannot be read.
    pub consecutive_failures: Option<u64>,
}

/// The lock's holder.
#[derive(Debug, Clone, Serialize)]
pub struct HolderStatus {
    /// The holder's pid.
    pub pid: Option<u32>,
    /// Its host.
    pub host: Option<String>,
    /// Its fence.
    pub fence: Option<u64>,
    /// Its run id.
    pub run_id: Option<String>,
    /// Since when it holds the lock.
    pub since: Option<String>,
    /// The verdict on it now (`live`, `hung`, `orphaned`, …).
    pub verdict: &'static str,
    /// The slot of the lock it holds (1-based; `max_concurrent`).
    pub slot: u32,
}

/// An overdue occurrence.
#[derive(Debug, Clone, Serialize)]
pub struct Overdue {
    /// The occurrence (RFC 3339 UTC).
    pub occurrence: String,
    /// How long after its time it may go unstarted before the job is
    /// overdue, in seconds ([`crate::views::overdue::GRACE`]).
    pub grace_seconds: u64,
}

/// How many occurrences will not run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct MissedStatus {
    /// In all (what pruning has kept).
    pub total: u64,
    /// Whether a count is a lower bound (a long outage is not walked whole).
    pub at_least: bool,
    /// Per reason: `outside-window`, `superseded`, `late`, `catch-up-max`,
    /// `paused`, `disabled`, `busy`, `hung`, `orphaned`, `version-conflict`,
    /// `ledger-unavailable`, `start-failed`.
    pub by_reason: std::collections::BTreeMap<String, u64>,
}

/// A pause in force.
#[derive(Debug, Clone, Serialize)]
pub struct PauseStatus {
    /// Since when (RFC 3339).
    pub since: String,
    /// Until when, if it ends by itself.
    pub until: Option<String>,
    /// Why, as given.
    pub reason: Option<String>,
    /// Who paused it (`user@host`).
    pub by: String,
}

/// An occurrence waiting to run.
#[derive(Debug, Clone, Serialize)]
pub struct QueuedStatus {
    /// The occurrence (RFC 3339 UTC).
    pub occurrence: String,
    /// How many later occurrences coalesced into it.
    pub coalesced: u64,
}

/// A job's watermark.
#[derive(Debug, Clone, Serialize)]
pub struct WatermarkStatus {
    /// The value.
    pub value: String,
    /// When it was settled.
    pub settled: String,
    /// By which run.
    pub run_id: Option<String>,
    /// Under which fence.
    pub fence: Option<u64>,
}

/// An alert, summed up.
#[derive(Debug, Clone, Serialize)]
pub struct AlertSummary {
    /// When.
    pub time: String,
    /// Its kind.
    pub kind: String,
    /// Its message, naming instants in RFC 3339 UTC; the text shows them on
    /// the job's wall clock ([`crate::times::human_in`]).
    pub message: String,
}

fn stamp(t: Timestamp) -> String {
    t.to_string()
}

/// Reads the status of `config`'s jobs (`only` names one, when given):
/// what the daemon's API and page show. For a shared store, as `baton
/// status` does, the holders are surveyed with whether the store holds
/// grants back after its server changed, and [`Status::store`] says so,
/// with what the ledger's own connection is (no connection is made only
/// to say it).
pub fn read(config: &Config, only: Option<&str>, now: Timestamp) -> Status {
    let opened = crate::engine::surfaces::existing_records_alerting(config, now);
    let shared = crate::store::shared(config);
    let encrypted = match &opened {
        Some(Ok(ledger)) if shared => ledger.encrypted(),
        _ => None,
    };
    let (mut s, hold) = read_from(config, only, now, opened, shared);
    if let (None, Some(encrypted)) = (&s.error, encrypted) {
        s.store = crate::store::examine::connection_made(config, encrypted)
            .and_then(Result::ok)
            .map(|c| match hold {
                Some(hold) => c.with_hold(hold),
                None => c,
            });
    }
    s
}

/// [`read`], from the ledger `opened` (none yet: `None`); with `hold`,
/// also whether the store holds grants back after its server changed,
/// read with the locks ([`crate::views::slots::survey`]; `None` when it
/// was not asked or the store cannot be used).
fn read_from(
    config: &Config,
    only: Option<&str>,
    now: Timestamp,
    opened: Option<Result<Box<dyn baton_store::ledger::Records>, baton_store::ledger::Error>>,
    hold: bool,
) -> (Status, Hold) {
    let state = &config.settings.state_dir.value;
    let (mut ledger, error, ledger_newer) = match opened {
        None => (None, None, false),
        Some(Ok(l)) => (Some(l), None, false),
        Some(Err(e)) => (None, Some(e.to_string()), e.is_newer_schema()),
    };
    let logs = crate::state::logs::Logs::new(state, config.settings.timezone.value.tz.clone());
    let shown: Vec<&Job> = config
        .jobs
        .values()
        .map(Box::as_ref)
        .filter(|j| only.is_none_or(|o| o == j.name))
        .collect();
    let (verdicts, hold) = if hold {
        let store = crate::store::open(config).ok();
        crate::views::slots::survey(store.as_deref(), &shown)
    } else {
        (crate::views::slots::judge(config, &shown), None)
    };
    // A state directory every run would refuse: no job can run, so none
    // is shown as if it could.
    let refused = crate::state::state_dir::judge(state)
        .err()
        .map(|e| e.to_string());
    let mut error = refused.or(error);
    let asks: Vec<baton_store::ledger::JobAsk> = shown
        .iter()
        .map(|j| baton_store::ledger::JobAsk {
            job: j.name.clone(),
            // The latest occurrence due, whenever the job was first seen:
            // whether it counts is known once its row is read.
            occurrence: crate::views::overdue::latest_due(j, now, Some(Timestamp::MIN))
                .map(Timestamp::as_second),
            alerts: 5,
            missed: MISSED_READ,
        })
        .collect();
    // Every job's records at once, or none: a ledger that fails is said,
    // and no job is shown from a half-read one. A whole status also reads
    // the runs of jobs the configuration no longer names.
    let known: Vec<String> = config.jobs.keys().cloned().collect();
    let read = ledger.as_deref_mut().map(|l| match only {
        Some(_) => l.job_records(&asks).map(|r| (r, Vec::new())),
        None => l.job_records_and_others(&asks, &known),
    });
    let (records, others) = match read {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            error = Some(e.to_string());
            (Vec::new(), Vec::new())
        }
        None => (Vec::new(), Vec::new()),
    };
    let mut records = records.into_iter();
    let unconfigured_runs = unconfigured(others);
    let mut jobs = Vec::with_capacity(shown.len());
    for (j, v) in shown.into_iter().zip(verdicts) {
        let recorded = records
            .next()
            .map(|r| Recorded::of(r, j, now))
            .unwrap_or_default();
        let v =
            crate::views::slots::with_former_lock(config, j, v, recorded.in_flight.as_deref(), now);
        jobs.push(job_status(
            config,
            j,
            (recorded, error.is_some()),
            v,
            &logs,
            now,
        ));
    }
    let healthy = error.is_none() && jobs.iter().all(|j| j.state.healthy());
    let status = Status {
        config: config.path.display().to_string(),
        enabled: config.enabled(),
        enabled_source: config.settings.enabled.provenance(),
        timezone: config.settings.timezone.value.name.clone(),
        state_dir: state.display().to_string(),
        logs: logs.dir().display().to_string(),
        now: stamp(now),
        healthy,
        jobs,
        unconfigured_runs,
        store: None,
        error,
        ledger_newer,
    };
    (status, hold)
}

/// Of the unfinished runs of jobs the configuration does not name, those
/// whose supervisor on this host still lives
/// ([`crate::engine::steps::supervisor_lives`]); the others ended without
/// a record, or run on another host.
fn unconfigured(runs: Vec<baton_store::ledger::RunRow>) -> Vec<UnconfiguredRun> {
    if runs.is_empty() {
        return Vec::new();
    }
    let host = baton_lease::Observer::here().host;
    let clock = baton_lease::SystemClock;
    runs.into_iter()
        .filter(|r| r.host.as_deref() == Some(host.as_str()))
        .filter_map(|r| {
            let pid = r.pid?;
            crate::engine::steps::supervisor_lives(pid, r.started, &clock).then(|| {
                UnconfiguredRun {
                    job: r.job,
                    run_id: r.run_id,
                    pid,
                    started: stamp(r.started),
                }
            })
        })
        .collect()
}

/// Whether the store holds grants back, as read with the locks: `None`
/// when it was not asked.
type Hold = Option<Result<Option<baton_store::store::HeldBack>, crate::store::Error>>;

/// [`read`] at the time of the clock decisions are made by
/// ([`crate::store::decision_clock`]: a shared store's, measured on the
/// ledger's own connection, else `local`), and the store's connection
/// examined ([`Status::store`]): what `baton status` shows. A `[store]`
/// that cannot be used, or whose ledger could not be read, is not
/// examined: the ledger's error says why, and a second attempt would only
/// wait again.
///
/// # Errors
///
/// When a shared store's clock cannot be read: nothing may then be said
/// of what is due.
pub fn read_with_connection(
    config: &Config,
    only: Option<&str>,
    local: std::sync::Arc<dyn baton_lease::Clock>,
) -> Result<Status, baton_store::ledger::Error> {
    // A shared store's ledger is checked with its first read (the clock),
    // whose failure is said as the open's; local files are opened as
    // `read` opens them.
    let mut opened = if crate::store::shared(config) {
        Some(crate::store::records_pipelined(config, local.wall()))
    } else {
        crate::engine::surfaces::existing_records_alerting(config, local.wall())
    };
    let mut now = local.wall();
    let mut encrypted = None;
    let mut declared = Vec::new();
    if crate::store::shared(config)
        && let Some(Ok(ledger)) = opened.as_mut()
    {
        // The jobs services declared come with the store's clock, in its
        // round trip.
        let (clock, d) = crate::store::decision_clock_with(ledger.as_mut(), local, |l| {
            l.clock_and_declarations()
        })?;
        now = clock.wall();
        declared = d;
        encrypted = ledger.encrypted();
    } else if let Some(Ok(ledger)) = opened.as_mut() {
        match ledger.declarations() {
            Ok(d) => declared = d,
            Err(e) => opened = Some(Err(e)),
        }
    }
    let (config, problems) = crate::config::declared::merged(config, &declared);
    for p in problems {
        crate::say::warn(format_args!("{p}"));
    }
    let config = &config;
    let (mut s, hold) = read_from(config, only, now, opened, true);
    if s.error.is_none() {
        // Said of the ledger's connection when it made one, rather than of
        // one made only to say it.
        s.store = match encrypted {
            Some(e) => crate::store::examine::connection_made(config, e),
            None => crate::store::examine::connection(config),
        }
        .and_then(Result::ok)
        .map(|c| match hold {
            Some(hold) => c.with_hold(hold),
            None => c,
        });
    }
    Ok(s)
}

/// What the ledger holds of one job, read together: one read that fails
/// fails them all, so that no surface shows a default as if it were
/// recorded. Without a ledger (none yet, or one that cannot be read), all
/// is empty.
#[derive(Default)]
struct Recorded {
    state: Option<baton_store::ledger::JobState>,
    last: Option<baton_store::ledger::RunRow>,
    steps: Vec<baton_store::ledger::StepState>,
    missed: MissedStatus,
    pause: Option<baton_store::ledger::PauseRow>,
    queued: Vec<QueuedStatus>,
    watermark: Option<WatermarkStatus>,
    alerts: Vec<baton_store::ledger::AlertRow>,
    in_flight: Option<String>,
    /// When that run started, as the ledger says.
    in_flight_started: Option<Timestamp>,
    /// What became of `job`'s latest due occurrence, by when it was due.
    fates: std::collections::BTreeMap<i64, Fate>,
}

/// How many of a job's newest missed ranges are read to find the latest
/// due occurrence's.
const MISSED_READ: u32 = 16;

impl Recorded {
    /// What `record` (read for `job` at `now`) shows.
    fn of(record: baton_store::ledger::JobRecord, job: &Job, now: Timestamp) -> Self {
        let baton_store::ledger::JobRecord {
            state,
            last,
            running,
            steps,
            missed_counts,
            missed: ranges,
            pause,
            queued,
            watermark,
            alerts,
            decision,
        } = record;
        let mut missed = MissedStatus::default();
        for (reason, count, at_least) in missed_counts {
            missed.total += count;
            missed.at_least |= at_least;
            missed.by_reason.insert(reason.to_string(), count);
        }
        let mut fates = std::collections::BTreeMap::new();
        let seen = crate::views::overdue::first_sighting(
            state.as_ref().map(|s| s.first_seen),
            defined_at(job),
            now,
        );
        if let Some(at) = crate::views::overdue::latest_due(job, now, seen) {
            let at = at.as_second();
            fates.insert(at, fate(decision.is_some(), &ranges, state.as_ref(), at));
        }
        Recorded {
            last,
            steps,
            missed,
            pause: pause.filter(|p| p.active(now)),
            queued: queued
                .into_iter()
                .map(|d| QueuedStatus {
                    occurrence: crate::engine::run::occurrence_text(Some(d.occurrence)),
                    coalesced: d.coalesced,
                })
                .collect(),
            watermark: watermark.map(|w| WatermarkStatus {
                value: w.value,
                settled: stamp(w.settled),
                run_id: w.run_id,
                fence: w.fence,
            }),
            alerts,
            in_flight_started: running.as_ref().map(|r| r.started),
            in_flight: running.map(|r| r.run_id),
            state,
            fates,
        }
    }
}

/// What a slot's verdict says of its holder, when it names one.
fn holder_status(slot: u32, verdict: &baton_lease::Verdict) -> Option<HolderStatus> {
    let h = match verdict {
        baton_lease::Verdict::Live { holder, .. }
        | baton_lease::Verdict::Hung { holder, .. }
        | baton_lease::Verdict::Orphaned { holder, .. }
        | baton_lease::Verdict::Dead { holder, .. }
        | baton_lease::Verdict::Expired { holder, .. } => holder,
        _ => return None,
    };
    Some(HolderStatus {
        pid: h.pid(),
        host: h.host().map(str::to_owned),
        fence: h.fence().map(|f| f.get()),
        run_id: h.run().map(str::to_owned),
        since: h.acquired().map(stamp),
        verdict: verdict.word(),
        slot,
    })
}

/// The job's row and newest run as they will read once a tick records the
/// end that run kept in its slot (the ledger would not take it): the run
/// finished with its verdict and exit code, and the job's last success or
/// failure and its failures in a row moved as that end moves them.
fn with_kept_end(
    config: &Config,
    mut state: Option<baton_store::ledger::JobState>,
    mut last: Option<baton_store::ledger::RunRow>,
) -> (
    Option<baton_store::ledger::JobState>,
    Option<baton_store::ledger::RunRow>,
) {
    let Some(run) = last.as_mut().filter(|r| r.finished.is_none()) else {
        return (state, last);
    };
    let Some(crate::state::end_slot::Kept { end, .. }) =
        crate::state::end_slot::kept(&config.settings.state_dir.value, &run.run_id)
    else {
        return (state, last);
    };
    run.finished = Some(end.finished);
    run.verdict = Some(end.verdict);
    run.exit_code = Some(end.exit_code);
    if let Some(s) = state.as_mut() {
        let effect = baton_store::ledger::Effect::of_run(end.verdict, end.success);
        if effect.success() {
            s.last_success = s.last_success.max(Some(end.finished));
            s.consecutive_failures = 0;
        } else if effect.failure() {
            s.last_failure = s.last_failure.max(Some(end.finished));
            s.consecutive_failures += 1;
        }
    }
    (state, last)
}

/// `value`, a fact read from the ledger, or `None` when the ledger could
/// not be read (`unread`): what the ledger could not tell is never shown as
/// the default it was read as.
fn known<T>(unread: bool, value: T) -> Option<T> {
    (!unread).then_some(value)
}

/// The status of `job`, from what the ledger `recorded` of it (nothing,
/// and `unread`, when the ledger could not be read).
fn job_status(
    config: &Config,
    job: &Job,
    (recorded, unread): (Recorded, bool),
    slots: crate::views::slots::Slots,
    logs: &crate::state::logs::Logs,
    now: Timestamp,
) -> JobStatus {
    let verdict = slots.main().cloned();
    let tz = &job.timezone.value.tz;
    let schedule = &job.when.value.schedule;
    let Recorded {
        state,
        last,
        steps,
        missed,
        pause,
        queued,
        watermark,
        alerts,
        in_flight,
        in_flight_started,
        fates,
    } = recorded;
    let (state, last) = with_kept_end(config, state, last);
    let pause_ends = pause.as_ref().map(|p| p.until);
    let paused = pause.map(|p| PauseStatus {
        since: stamp(p.since),
        until: p.until.map(stamp),
        reason: p.reason,
        by: p.who,
    });
    let enabled = job.enabled.value && config.enabled();
    let shared = config
        .jobs
        .values()
        .any(|other| other.name != job.name && other.lock.value == job.lock.value);
    // A stuck run on any slot is the job's `hung`, even beside a live one
    // on another slot ([`Slots::main`] shows the live one).
    let holding = {
        use crate::views::job_state::{Holding, holding};
        let stuck = slots
            .held()
            .any(|(_, v)| holding(Some(v), shared, in_flight.as_deref()) == Holding::Stuck);
        if stuck {
            Holding::Stuck
        } else {
            holding(verdict.as_ref(), shared, in_flight.as_deref())
        }
    };
    let (run_started, overrunning) = match holding {
        crate::views::job_state::Holding::Live => in_flight_runs(
            &slots,
            shared,
            in_flight.as_deref().zip(in_flight_started),
            now,
        ),
        _ => (None, false),
    };
    let seen = crate::views::overdue::first_sighting(
        state.as_ref().map(|s| s.first_seen),
        defined_at(job),
        now,
    );
    let due = crate::views::overdue::latest_due(job, now, seen);
    // With the ledger unread, whether an occurrence started is not known:
    // never said that it did not.
    let overdue = crate::views::overdue::judge(
        due,
        state.as_ref().and_then(|s| s.last_started),
        !enabled || paused.is_some(),
        matches!(verdict, Some(baton_lease::Verdict::Live { .. })),
        |at| fates.get(&at).cloned().unwrap_or(Fate::Unknown),
    )
    .filter(|_| !unread);
    // The newest run's verdict as it is now: one without a recorded end is
    // `abandoned` once nothing of it can still run.
    let last_verdict = last.as_ref().and_then(|r| {
        r.verdict.or_else(|| {
            crate::views::history::unfinished(
                &config.settings.state_dir.value,
                &r.run_id,
                r.host.as_deref(),
                r.pid,
                slots.of_run(&r.run_id),
            )
        })
    });
    let last_finished = last.as_ref().is_some_and(|r| r.finished.is_some());
    let crashed = !last_finished && last_verdict == Some(RunVerdict::Abandoned);
    // A run `interrupted` or `replaced` is neither success nor failure: it
    // leaves the count as it was, and so the job failing or not.
    let failing = state.as_ref().is_some_and(|s| s.consecutive_failures > 0);
    let never_run = last.is_none();
    let facts = Facts {
        enabled,
        paused: paused.is_some(),
        holding,
        overdue: overdue.is_some(),
        failing,
        crashed,
        ran: !never_run || state.as_ref().is_some_and(|s| s.last_attempt.is_some()),
        unread,
        // Or one was decided already: a missed occurrence came due too,
        // before its grace passed.
        came_due: due.is_some() || missed.total > 0,
    };
    let next = match pause_ends {
        // Nothing runs while the job or the scheduler is disabled.
        _ if !enabled => None,
        // The first occurrence the pause does not cover: at or after its end.
        Some(until) => until.and_then(|u| {
            let before = u.checked_sub(jiff::SignedDuration::from_nanos(1)).ok()?;
            schedule.next_after(job.due_clock(before), tz)
        }),
        None => schedule.next_after(job.due_clock(now), tz),
    };
    // The occurrence keeps its instant; the run starts after it by the
    // job's jitter.
    let next_occurrence = next;
    let next = next.map(|t| job.starts_at(t));
    let offset = job.start_offset();
    let holders: Vec<HolderStatus> = slots
        .held()
        .filter_map(|(slot, verdict)| holder_status(slot, verdict))
        .collect();
    let holder = holders
        .iter()
        .find(|h| h.verdict == "live")
        .or_else(|| holders.first())
        .cloned();
    JobStatus {
        job: job.name.clone(),
        declared_by: match &job.source {
            crate::config::Source::Declared(by) => Some(by.clone()),
            _ => None,
        },
        enabled,
        in_flight: holding == crate::views::job_state::Holding::Live,
        run_started,
        overrunning,
        state: crate::views::job_state::decide(&facts),
        schedule: match job.when.value.key {
            "every" => format!("every {}", job.when.value.text),
            _ => job.when.value.text.clone(),
        },
        timezone: job.timezone.value.name.clone(),
        lock: job.lock.value.clone(),
        next_run: next.map(|t| {
            t.to_zoned_datetime(tz.clone())
                .strftime("%Y-%m-%dT%H:%M:%S%:z")
                .to_string()
        }),
        next_run_in_seconds: next.map(|t| t.duration_since(now).as_secs()),
        next_occurrence: next_occurrence
            .filter(|_| !offset.is_zero())
            .map(|t| crate::engine::run::occurrence_text(Some(t.as_second()))),
        jitter_offset_seconds: (!offset.is_zero()).then_some(offset.as_secs()),
        last_run: last.map(|r| {
            // An abandoned run's end is unknown: it is recorded when the
            // next run found it so, which says nothing of how long it ran.
            let known = last_verdict != Some(RunVerdict::Abandoned);
            RunSummary {
                occurrence: crate::engine::run::occurrence_text(r.occurrence),
                started: stamp(r.started),
                duration_ms: r
                    .finished
                    .filter(|_| known)
                    .and_then(|f| u64::try_from(f.duration_since(r.started).as_millis()).ok()),
                finished: r.finished.map(stamp),
                verdict: last_verdict.map(|v| v.to_string()),
                exit_code: r.exit_code.filter(|_| known),
                run_id: r.run_id,
            }
        }),
        last_attempt: state.as_ref().and_then(|s| s.last_attempt).map(stamp),
        last_success: state.as_ref().and_then(|s| s.last_success).map(stamp),
        last_failure: state.as_ref().and_then(|s| s.last_failure).map(stamp),
        consecutive_failures: known(unread, state.as_ref().map_or(0, |s| s.consecutive_failures)),
        steps: job
            .all_steps()
            .map(|st| {
                let known = steps.iter().find(|s| s.step == st.name);
                StepStatus {
                    step: st.name.clone(),
                    kind: st.kind.as_str(),
                    last_attempt: known.and_then(|k| k.last_attempt).map(stamp),
                    last_success: known.and_then(|k| k.last_success).map(stamp),
                    last_failure: known.and_then(|k| k.last_failure).map(stamp),
                    consecutive_failures: (!unread)
                        .then(|| known.map_or(0, |k| k.consecutive_failures)),
                }
            })
            .collect(),
        holder,
        max_concurrent: job.slots(),
        holders,
        never_run: known(unread, never_run),
        overdue: overdue.map(|at| Overdue {
            occurrence: crate::engine::run::occurrence_text(Some(at)),
            grace_seconds: crate::views::overdue::GRACE.as_secs(),
        }),
        failing: known(unread, failing),
        crashed: known(unread, crashed),
        paused,
        missed: known(unread, missed),
        queued: known(unread, queued),
        watermark,
        recent_alerts: known(
            unread,
            alerts
                .into_iter()
                .map(|a| AlertSummary {
                    time: stamp(a.time),
                    kind: a.kind.to_string(),
                    message: a.message,
                })
                .collect(),
        ),
        log: logs.dated(&job.name, now).display().to_string(),
    }
}

/// The runs of a job in flight, from its lock's `slots`: when the oldest
/// started, and whether any is past its budget. A slot counts when its
/// holder is live and is the job's run ([`crate::views::job_state::holding`]);
/// its run started when the ledger's newest unfinished run (`recorded`: its
/// id and start) says, when the holder names that run, else when the
/// holder took the lease (a run the ledger has no row of, or an older one
/// of several slots).
fn in_flight_runs(
    slots: &crate::views::slots::Slots,
    shared: bool,
    recorded: Option<(&str, Timestamp)>,
    now: Timestamp,
) -> (Option<Timestamp>, bool) {
    let mut oldest: Option<Timestamp> = None;
    let mut overrunning = false;
    for (_, verdict) in slots.held() {
        let baton_lease::Verdict::Live { holder, .. } = verdict else {
            continue;
        };
        let mine = crate::views::job_state::holding(Some(verdict), shared, recorded.map(|r| r.0));
        if mine != crate::views::job_state::Holding::Live {
            continue;
        }
        let started = match recorded {
            Some((run, started)) if holder.run() == Some(run) => Some(started),
            _ => holder.acquired(),
        };
        let Some(started) = started else {
            continue;
        };
        oldest = Some(oldest.map_or(started, |o| o.min(started)));
        overrunning |= holder.overrunning(started, now);
    }
    (oldest, overrunning)
}

/// When the file that defines `job` last changed: the earlier of its
/// modification time and its status-change time (which `touch -d` cannot
/// set); `None` when it cannot be read.
fn defined_at(job: &Job) -> Option<Timestamp> {
    use std::os::unix::fs::MetadataExt;
    let crate::config::Source::File { path, .. } = &job.source else {
        return None;
    };
    let meta = std::fs::metadata(path).ok()?;
    let modified = Timestamp::try_from(meta.modified().ok()?).ok()?;
    let changed = i32::try_from(meta.ctime_nsec())
        .ok()
        .and_then(|nanos| Timestamp::new(meta.ctime(), nanos).ok());
    Some(changed.map_or(modified, |c| c.min(modified)))
}

/// What became of occurrence `at`: `decided` says whether the ledger
/// holds a decision for it, `ranges` are the job's newest missed ranges.
fn fate(
    decided: bool,
    ranges: &[baton_store::ledger::MissedRow],
    state: Option<&baton_store::ledger::JobState>,
    at: i64,
) -> Fate {
    if decided {
        return Fate::Served;
    }
    // The newest ranges: the latest due occurrence, when missed, is in one
    // of them.
    if let Some(m) = ranges.iter().find(|m| m.first <= at && at <= m.last) {
        return Fate::Missed(m.reason);
    }
    match state.and_then(|s| s.last_decided) {
        Some(mark) if mark >= at => Fate::Unknown,
        _ => Fate::Undecided,
    }
}

/// A duration ago or ahead, for people: `5h ago`, `in 18h`.
pub(crate) fn relative(now: Timestamp, t: &str) -> String {
    let Ok(t) = t.parse::<Timestamp>() else {
        return String::new();
    };
    let d = now.duration_since(t);
    let abs = Duration::try_from(d.abs()).unwrap_or_default();
    if abs < Duration::from_secs(1) {
        return "just now".into();
    }
    let shown = show_duration(Duration::from_secs(abs.as_secs()));
    if d.is_negative() {
        format!("in {shown}")
    } else {
        format!("{shown} ago")
    }
}

/// For a job with jitter, what the next run's instant is made of:
/// " for occurrence OCC, jitter offset 2m17s"; else nothing.
fn jittered(j: &JobStatus, local: &dyn Fn(&str) -> String) -> String {
    match (&j.next_occurrence, j.jitter_offset_seconds) {
        (Some(o), Some(secs)) => format!(
            ", for occurrence {} (jitter offset {})",
            local(o),
            crate::jitter::show(Duration::from_secs(secs))
        ),
        _ => String::new(),
    }
}

/// The human form.
pub fn render(s: &Status) -> String {
    let now: Timestamp = s.now.parse().unwrap_or(Timestamp::UNIX_EPOCH);
    let mut out = format!(
        "baton — {}, {}; config {}; state {}\n",
        if s.enabled {
            "ENABLED".to_owned()
        } else {
            format!("DISABLED by the kill switch ({})", s.enabled_source)
        },
        s.timezone,
        s.config,
        s.state_dir
    );
    if let Some(c) = &s.store {
        out.push_str(&format!(
            "store {}: {}
",
            c.store,
            c.words()
        ));
        if let Some(hold) = c.hold_words() {
            let tz = crate::config::keys::zone_named(&s.timezone);
            out.push_str(&format!("  {}\n", crate::times::human_in(&hold, &tz)));
        }
    }
    for j in &s.jobs {
        let tz = crate::config::keys::zone_named(&j.timezone);
        let local = |t: &str| crate::times::human_in(t, &tz);
        let when = |t: &Option<String>| match t {
            Some(t) => format!("{} ({})", local(t), relative(now, t)),
            None => "never".into(),
        };
        out.push('\n');
        out.push_str(&format!(
            "{}  {}  {} ({}), lock {}\n",
            j.job,
            j.state.word().to_uppercase(),
            j.schedule,
            j.timezone,
            j.lock
        ));
        if let Some(by) = &j.declared_by {
            out.push_str(&format!("  run by        {by} (declared in the ledger)\n"));
        }
        // Nothing the ledger keeps is known when it cannot be read: said
        // once, not shown as "never".
        let unread = s.error.is_some();
        match &j.last_run {
            None if unread => {
                out.push_str("  last run      unknown: the ledger cannot be read\n");
            }
            None => out.push_str("  last run      never run\n"),
            Some(r) => out.push_str(&format!(
                "  last run      {} {}{} (occurrence {}, run {})\n",
                when(&Some(r.started.clone())),
                r.verdict.as_deref().unwrap_or("running"),
                r.duration_ms
                    .map(|ms| format!(" in {}", show_duration(Duration::from_millis(ms))))
                    .unwrap_or_default(),
                local(&r.occurrence),
                r.run_id
            )),
        }
        if !unread {
            out.push_str(&format!(
                "  last success  {}\n  last failure  {}\n",
                when(&j.last_success),
                when(&j.last_failure)
            ));
        }
        // A step's count is unknown exactly when the ledger is unread.
        for (st, failures) in j
            .steps
            .iter()
            .filter_map(|st| st.consecutive_failures.map(|n| (st, n)))
        {
            out.push_str(&format!(
                "  {} {:<9} last attempt {}, last success {}, last failure {}, {failures} failure(s) in a row\n",
                st.kind,
                st.step,
                when(&st.last_attempt),
                when(&st.last_success),
                when(&st.last_failure),
            ));
        }
        match (&j.paused, &j.next_run) {
            (Some(p), next) => match &p.until {
                Some(u) => out.push_str(&format!(
                    "  next run      paused until {} ({}){}\n",
                    local(u),
                    relative(now, u),
                    next.as_ref()
                        .map(|n| format!(", then {}{}", local(n), jittered(j, &local)))
                        .unwrap_or_default()
                )),
                None => out.push_str(&format!(
                    "  next run      paused, with no end (baton resume {} ends it)\n",
                    j.job
                )),
            },
            (None, Some(n)) => out.push_str(&format!(
                "  next run      {} ({}){}\n",
                local(n),
                relative(now, n),
                jittered(j, &local),
            )),
            (None, None) if j.state == JobState::Disabled => {
                out.push_str("  next run      none while disabled\n")
            }
            (None, None) => out.push_str("  next run      none\n"),
        }
        // Slots above max_concurrent still held: left by runs from when it
        // was higher, shown with their numbers.
        let slotted = j.max_concurrent > 1 || j.holders.iter().any(|h| h.slot > j.max_concurrent);
        if slotted {
            out.push_str(&format!(
                "  slots         {} of {} held (max_concurrent)\n",
                j.holders.len(),
                j.max_concurrent
            ));
        }
        let shown: Vec<&HolderStatus> = if slotted {
            j.holders.iter().collect()
        } else {
            j.holder.iter().collect()
        };
        for h in shown {
            let slot = if slotted {
                format!("slot {}: ", h.slot)
            } else {
                String::new()
            };
            out.push_str(&format!(
                "  holder        {slot}{} pid {} on {}, fence {}, since {}\n",
                h.verdict,
                h.pid.map_or("?".into(), |p| p.to_string()),
                h.host.as_deref().unwrap_or("?"),
                h.fence.map_or("?".into(), |f| f.to_string()),
                when(&h.since)
            ));
        }
        if let Some(o) = &j.overdue {
            out.push_str(&format!(
                "  OVERDUE       occurrence {} did not start (grace {})\n",
                local(&o.occurrence),
                show_duration(Duration::from_secs(o.grace_seconds))
            ));
        }
        if j.crashed == Some(true)
            && let Some(r) = &j.last_run
        {
            out.push_str(&format!(
                "  CRASHED       run {} never recorded an end, and nothing of it runs now\n",
                r.run_id
            ));
        }
        if let (Some(true), Some(failures)) = (j.failing, j.consecutive_failures) {
            out.push_str(&format!(
                "  FAILING       {failures} run(s) in a row failed\n"
            ));
        }
        if let Some(p) = &j.paused {
            out.push_str(&format!(
                "  PAUSED        since {} by {}{}{}\n",
                local(&p.since),
                p.by,
                p.until
                    .as_ref()
                    .map(|u| format!(", until {}", local(u)))
                    .unwrap_or_default(),
                p.reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ));
        }
        if let Some(missed) = j.missed.as_ref().filter(|m| m.total > 0) {
            let counts: Vec<String> = missed
                .by_reason
                .iter()
                .map(|(reason, n)| format!("{reason} {n}"))
                .collect();
            out.push_str(&format!(
                "  missed        {}{} ({})\n",
                if missed.at_least { "at least " } else { "" },
                missed.total,
                counts.join(", ")
            ));
        }
        for q in j.queued.iter().flatten() {
            out.push_str(&format!(
                "  queued        occurrence {}{}\n",
                local(&q.occurrence),
                if q.coalesced > 0 {
                    format!(" (+{} coalesced into it)", q.coalesced)
                } else {
                    String::new()
                }
            ));
        }
        if let Some(w) = &j.watermark {
            out.push_str(&format!(
                "  watermark     {:?} (settled {}{})\n",
                w.value,
                when(&Some(w.settled.clone())),
                w.run_id
                    .as_ref()
                    .map(|r| format!(" by run {r}"))
                    .unwrap_or_default()
            ));
        }
        match j.recent_alerts.as_deref() {
            None => out.push_str("  recent alerts unknown\n"),
            Some([]) => out.push_str("  recent alerts none\n"),
            Some(alerts) => {
                for a in alerts {
                    out.push_str(&format!(
                        "  alert         {} {}: {}\n",
                        local(&a.time),
                        a.kind,
                        local(&a.message)
                    ));
                }
            }
        }
        out.push_str(&format!("  log           {}\n", j.log));
    }
    if !s.unconfigured_runs.is_empty() {
        out.push_str(
            "\nin flight, of jobs the configuration no longer names (a job renamed or removed \
             while it ran; a run under its new name would run beside it):\n",
        );
        let tz = crate::config::keys::zone_named(&s.timezone);
        let local = |t: &str| crate::times::human_in(t, &tz);
        for r in &s.unconfigured_runs {
            out.push_str(&format!(
                "  {}  run {}, pid {}, since {}\n",
                r.job,
                r.run_id,
                r.pid,
                local(&r.started)
            ));
        }
    }
    out.push_str(&format!("\nlogs: {}\n", s.logs));
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use baton_lease::Verdict;
    use jiff::{SignedDuration, Timestamp};

    use super::in_flight_runs;
    use crate::views::slots::Slots;

    fn at(minutes: i64) -> Timestamp {
        "2026-11-29T03:00:00Z".parse::<Timestamp>().unwrap() + SignedDuration::from_mins(minutes)
    }

    /// A live holder of run `run`, which took the lease at minute `taken`
    /// with a budget of `budget` minutes.
    fn live(run: &str, taken: i64, budget: Option<u64>) -> Option<Verdict> {
        Some(Verdict::Live {
            holder: baton_lease::Holder::V3(baton_lease::record::Held {
                fence: baton_lease::Fence::new(1),
                token: "0123456789abcdef".parse().unwrap(),
                pid: 42,
                host: "h1".into(),
                acquired: at(taken),
                renewed: at(taken),
                ttl: Duration::from_secs(30),
                run: Some(run.to_owned()),
                machine: None,
                boot: None,
                pidns: None,
                pstart: None,
                renewed_boot: None,
                pgid: None,
                jstart: None,
                leader: baton_lease::Leader::Command,
                uid: None,
                grace: None,
                occ: None,
                exe: None,
                budget: budget.map(|m| Duration::from_secs(m * 60)),
                claims: baton_lease::Claims::default(),
            }),
            skew: None,
        })
    }

    #[test]
    fn a_run_in_flight_started_when_the_ledger_says_and_overruns_by_its_holders_budget() {
        // The lease was taken at minute 0 for a queue; the ledger says the
        // run it now names started at minute 50, with a budget of an hour.
        let slots = Slots(vec![live("r2", 0, Some(60))]);
        let ledger = Some(("r2", at(50)));
        assert_eq!(
            in_flight_runs(&slots, false, ledger, at(109)),
            (Some(at(50)), false)
        );
        assert_eq!(
            in_flight_runs(&slots, false, ledger, at(110)),
            (Some(at(50)), true)
        );
        // A run the ledger has no row of started when its lease was taken.
        assert_eq!(
            in_flight_runs(&slots, false, None, at(60)),
            (Some(at(0)), true)
        );
        // No budget: never overrunning.
        let unbounded = Slots(vec![live("r2", 0, None)]);
        assert_eq!(
            in_flight_runs(&unbounded, false, None, at(10_000)),
            (Some(at(0)), false)
        );
    }

    #[test]
    fn of_several_slots_the_oldest_run_counts_and_a_lock_mates_not_at_all() {
        let slots = Slots(vec![
            live("r3", 30, Some(60)),
            None,
            live("r1", 10, Some(60)),
        ]);
        assert_eq!(
            in_flight_runs(&slots, false, Some(("r3", at(30))), at(75)),
            (Some(at(10)), true)
        );
        // Shared with another job: only the job's own newest run is its.
        let mate = Slots(vec![live("theirs", 0, Some(1))]);
        assert_eq!(
            in_flight_runs(&mate, true, Some(("mine", at(5))), at(100)),
            (None, false)
        );
    }
}
