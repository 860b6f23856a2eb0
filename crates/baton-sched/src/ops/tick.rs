//! `baton tick` and `baton run`: what to do now, and running it.
//!
//! For each job the tick decides its pending occurrences
//! ([`crate::engine::decide`]: the plan, the misses recorded once, a catch-up batch
//! queued) and starts what must start: a scheduled occurrence, or the
//! job's queue. The ledger is only the fast path and the record: a process
//! that starts an occurrence still has to claim it inside the job's lease
//! ([`crate::engine::run`]), so two ticks that both find it due run it once.
//!
//! Runs go concurrently, each in a process of its own forked from the tick
//! (at most `max_parallel` at once), because each run needs its own
//! subreaper and signal handlers; `tick` waits for them and ends with the
//! worst outcome. The tick itself stays single-threaded until every run has
//! been forked. The kill switch is checked before anything is touched: no
//! directory, lock, ledger or log.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use baton_lease::Clock;

use crate::config::{Config, Job};
use crate::engine::pending::Pending;
use crate::engine::run::{self, Start};
use crate::engine::surfaces::Surfaces;
use crate::outcome::Outcome;

/// Checks that the names are jobs of `config`; the first that is not.
fn unknown<'a>(config: &Config, names: &'a [String]) -> Option<&'a str> {
    names
        .iter()
        .find(|n| !config.jobs.contains_key(n.as_str()))
        .map(String::as_str)
}

/// Why nothing may run: the state directory, the logs or the ledger's
/// files cannot be used ([`prepare`], [`preflight`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unprepared {
    /// The state directory, `locks/`, `logs/` or `ends/` cannot be used.
    #[error(transparent)]
    State(#[from] crate::state::state_dir::StateError),
    /// A log a run writes cannot be written.
    #[error("the logs cannot be written: {0}")]
    Logs(#[source] crate::state::logs::LogError),
    /// The embedded ledger's files cannot be used.
    #[error(transparent)]
    Ledger(#[from] baton_ledger::Error),
    /// The ledger could not be opened or read, or a newer baton wrote it
    /// (said when it was tried, [`Due::ledger_unavailable`]): nothing was
    /// decided.
    #[error(
        "the ledger (or a shared store's clock) could not be read; the daemon's log says why, \
         and `baton doctor` checks the store"
    )]
    LedgerUnavailable,
}

/// Creates (or checks) the state directory and its `locks/`, `logs/` and
/// `ends/` (where each run reserves room for its end before it starts): a
/// subdirectory that cannot be used refuses everything before a lease is
/// taken, so no occurrence is refused halfway, under its lease, and
/// recorded missed for a fault of the state directory's.
///
/// # Errors
///
/// [`Unprepared::State`], saying why not.
pub fn prepare(config: &Config) -> Result<(), Unprepared> {
    let state = &config.settings.state_dir.value;
    crate::state::state_dir::locks_dir(state)?;
    crate::state::state_dir::logs_dir(state)?;
    crate::state::state_dir::ends_dir(state)?;
    Ok(())
}

/// Prepares the state directory ([`prepare`]), then checks the files every
/// run at `now` writes: the envelope of the day, `alerts.log`, and in the
/// embedded store the ledger's files. Each must be absent or a regular file
/// nobody but this user or root may write (or, for a log, a special file the
/// run sets aside: [`crate::state::logs`]). Says why not: then nothing runs, and
/// nothing is lost (the occurrences stay due), where running would write
/// through what another user could have planted, or lose the runs'
/// records.
///
/// # Errors
///
/// [`Unprepared`], saying which cannot be used and why.
pub fn preflight(config: &Config, now: jiff::Timestamp) -> Result<(), Unprepared> {
    prepare(config)?;
    let state = &config.settings.state_dir.value;
    crate::state::logs::Logs::new(state, config.settings.timezone.value.tz.clone())
        .check_shared(now)
        .map_err(Unprepared::Logs)?;
    if !crate::store::shared(config) {
        baton_ledger::Ledger::check(state)?;
    }
    Ok(())
}

/// `baton tick [JOB…]`: runs what is due now; returns the worst outcome.
pub fn tick(config: &Config, only: &[String], clock: Arc<dyn Clock>) -> Outcome {
    tick_report(config, only, clock).outcome
}

/// What one `baton tick` did, for `tick --json`.
#[derive(Debug, Clone, Default)]
pub struct TickReport {
    /// The worst outcome.
    pub outcome: Outcome,
    /// Whether the kill switch let it look at all.
    pub enabled: bool,
    /// What it decided: the starts, the misses it recorded.
    pub due: Due,
    /// How each start ended, by job name, in the order of `due.starts`.
    pub ended: Vec<(String, RunEnd)>,
    /// The process that ran each start, by job name: its worker, or this
    /// process when it ran it itself. A run the ledger records for the
    /// occurrence under another pid was another scheduler's.
    pub workers: Vec<(String, u32)>,
}

/// How the process running one start ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// It exited with this outcome (as `baton run`'s).
    Exited(Outcome),
    /// It died of this signal.
    Signaled(i32),
    /// It was not started (a stop came first, or it could not be forked).
    NotStarted,
}

/// As [`tick`], with what it did.
pub fn tick_report(config: &Config, only: &[String], clock: Arc<dyn Clock>) -> TickReport {
    let mut report = TickReport::default();
    if !config.enabled() {
        return report;
    }
    report.enabled = true;
    if let Some(name) = unknown(config, only) {
        crate::say::line(format_args!(
            "tick: no job named {name:?} in {}",
            config.path.display()
        ));
        report.outcome = Outcome::Unable;
        return report;
    }
    if let Err(e) = preflight(config, clock.wall()) {
        crate::say::line(format_args!("tick: {e}; nothing was run"));
        report.outcome = Outcome::Unable;
        return report;
    }
    // In the shared store, nothing is decided without the ledger; it is
    // opened once here and closed before the runs are forked.
    let ledger = if crate::store::shared(config) {
        // Checked with the first read, whose failure refuses the tick as
        // the open's would ([`Due::ledger_unavailable`]).
        match crate::store::records_pipelined(config, clock.wall()) {
            Ok(l) => Some(l),
            Err(e) => {
                crate::say::line(format_args!("tick: {e}; nothing was run"));
                report.outcome = Outcome::Unable;
                return report;
            }
        }
    } else {
        None
    };
    let mut due = decide_due_with(config, only, &clock, ledger).0;
    let held = std::mem::take(&mut due.webhooks);
    if due.ledger_newer || due.ledger_unavailable {
        // Said once, by the decision: nothing was decided, nothing runs.
        post_held(config, &clock, held);
        report.outcome = Outcome::Unable;
        return report;
    }
    let due_jobs: Vec<(&Job, Start)> = due
        .starts
        .iter()
        .filter_map(|(name, start)| config.jobs.get(name).map(|j| (&**j, *start)))
        .collect();
    let alerted = due.alerted;
    let decided = if alerted {
        Outcome::Failed
    } else {
        Outcome::Done
    };
    let outcome = if due_jobs.is_empty() {
        post_held(config, &clock, held);
        decided
    } else {
        let (outcome, ended, workers) = run_all(config, &due_jobs, &clock, held);
        report.ended = ended;
        report.workers = workers;
        checkpoint(config, &clock);
        outcome.max(decided)
    };
    let pruned = crate::state::logs::Logs::new(
        &config.settings.state_dir.value,
        config.settings.timezone.value.tz.clone(),
    )
    .prune(clock.wall(), config.settings.log_keep.value);
    if let Err(e) = pruned {
        crate::say::line(format_args!("tick: old logs are not pruned: {e}"));
    }
    report.outcome = outcome;
    report.due = due;
    report
}

/// What one tick decided: the starts, and the misses it recorded.
#[derive(Debug, Clone, Default)]
pub struct Due {
    /// What to start, by job name, in the configuration's order.
    pub starts: Vec<(String, Start)>,
    /// The missed ranges this tick recorded, by job name.
    pub missed: Vec<(String, crate::engine::plan::MissedRange)>,
    /// Whether an alert was raised.
    pub alerted: bool,
    /// How far the clock it was decided by (a shared store's) was ahead of
    /// the one it was given: zero with files.
    pub offset: jiff::SignedDuration,
    /// The instant it was decided at, on that clock: what was due then is
    /// what it decided. `None` when nothing was decided.
    pub decided_at: Option<jiff::Timestamp>,
    /// The ledger was written by a newer baton (said on stderr): nothing
    /// was decided, and nothing may start until baton is upgraded.
    pub ledger_newer: bool,
    /// The ledger could not be opened (or, in a store several hosts
    /// share, read): said on stderr; nothing was decided, and nothing may
    /// start.
    pub ledger_unavailable: bool,
    /// The webhook deliveries of the alerts the decision raised, held so
    /// that no receiver delays a start: the caller posts them once the
    /// runs are started ([`post_held`]).
    pub webhooks: Vec<crate::engine::webhook::Delivery>,
}

/// Decides every job of `config` (or those in `only`) at the clock's now,
/// recording misses and catch-up batches in the ledger; starts nothing.
/// The caller has checked the kill switch and prepared the state directory.
pub fn decide_due(config: &Config, only: &[String], clock: &Arc<dyn Clock>) -> Due {
    decide_due_with(config, only, clock, None).0
}

/// As [`decide_due`], on a ledger already open on `config`'s state
/// directory; hands the ledger back for the next tick.
pub fn decide_due_with(
    config: &Config,
    only: &[String],
    clock: &Arc<dyn Clock>,
    ledger: Option<Box<dyn baton_store::ledger::Records>>,
) -> (Due, Option<Box<dyn baton_store::ledger::Records>>) {
    let mut due = Due::default();
    let mut s = Surfaces::open_holding(config, Arc::clone(clock), ledger);
    if s.refuses_runs() {
        // Said when it was opened: without the ledger (or a shared store's
        // clock), nothing is decided, and the tick says it could not run
        // anything rather than that nothing was due.
        due.ledger_unavailable = true;
        due.ledger_newer = s.ledger_is_newer();
        due.webhooks = s.take_held();
        s.finish();
        return (due, None);
    }
    // The store's clock, when several hosts share it.
    let now = s.now();
    due.offset = now.duration_since(clock.wall());
    due.decided_at = Some(now);
    // Read with the store's clock when the surfaces opened, when it was.
    let overview = s.take_overview();
    let (mut states, queued) = match overview {
        Some(o) => (o.jobs, Some(o.queued)),
        None => match s.ledger(|l| l.jobs()) {
            Some(jobs) => (jobs, None),
            None => {
                // Said once by the ledger's surface. Without the jobs'
                // marks and sightings every job would look new and nothing
                // would ever be due: the tick says it could not decide,
                // rather than that nothing was due.
                due.ledger_unavailable = true;
                due.webhooks = s.take_held();
                s.finish();
                return (due, None);
            }
        },
    };
    if s.ledger_is_newer() {
        // A newer baton wrote it (before this process opened it, or since
        // the daemon's kept connection did): whatever the jobs looked like
        // without it would be a guess.
        due.ledger_newer = true;
        due.webhooks = s.take_held();
        s.finish();
        return (due, None);
    }
    // Ends this host kept while the ledger would not take them.
    crate::engine::steps::record_kept_ends(config, &mut s);
    // The ledger learns of new jobs (a write only when there are some),
    // seen first now: their occurrences before now are neither run nor
    // missed. Read back, so that this tick plans from the sighting the
    // ledger keeps (another process's, when it saw them first) as every
    // later tick will.
    let unseen: Vec<&str> = config
        .jobs
        .keys()
        .map(String::as_str)
        .filter(|n| !states.iter().any(|st| st.job == *n))
        .collect();
    if !unseen.is_empty() && s.ledger(|l| l.see_jobs(&unseen, now)).is_some() {
        states = s.ledger(|l| l.jobs()).unwrap_or(states);
    }
    let by_name: std::collections::HashMap<&str, &baton_store::ledger::JobState> =
        states.iter().map(|j| (j.job.as_str(), j)).collect();
    let queued: std::collections::HashSet<String> = match queued {
        Some(q) => q,
        None => s.ledger(|l| l.queued_jobs()).unwrap_or_default(),
    }
    .into_iter()
    .collect();
    for j in config
        .jobs
        .values()
        .filter(|j| only.is_empty() || only.contains(&j.name))
    {
        let state = by_name.get(j.name.as_str()).copied();
        let has_queue = queued.contains(&j.name);
        let d = crate::engine::decide::job(&mut s, config, j, now, state, has_queue);
        due.alerted |= d.alerted;
        due.missed
            .extend(d.missed.into_iter().map(|m| (j.name.clone(), m)));
        if let Some(start) = d.start {
            due.starts.push((j.name.clone(), start));
        }
    }
    // Alert commands finish here: no thread may outlive this call, or the
    // runs could not be forked. Webhook deliveries, which may take longer,
    // are held for the caller to post once the runs are started.
    due.webhooks = s.take_held();
    let ledger = s.into_ledger();
    (due, ledger)
}

/// Brings the ledger's file up to date after runs (see
/// [`baton_store::ledger::Records::checkpoint`]); a failure is said, never fatal.
pub fn checkpoint(config: &Config, clock: &Arc<dyn Clock>) {
    let mut s = Surfaces::open(config, Arc::clone(clock));
    let _ = s.ledger(|l| l.checkpoint());
    s.finish();
}

/// Posts `held` (a decision's webhook deliveries, [`Due::webhooks`]), each
/// on a thread of its own, and waits for them (each ends within
/// [`crate::engine::alerts::ALERT_TIMEOUT`]); a failure is said on stderr
/// and in the envelope log, never fatal.
pub fn post_held(
    config: &Config,
    clock: &Arc<dyn Clock>,
    held: Vec<crate::engine::webhook::Delivery>,
) {
    let mut posting = Pending::default();
    for d in held {
        posting.post(d, Arc::clone(clock));
    }
    said(config, clock, posting.finish());
}

/// `problems` of webhook deliveries, on stderr and in the envelope log, as
/// [`Surfaces::warn`] says them (without opening the ledger).
fn said(config: &Config, clock: &Arc<dyn Clock>, problems: Vec<String>) {
    if problems.is_empty() {
        return;
    }
    let logs = crate::state::logs::Logs::new(
        &config.settings.state_dir.value,
        config.settings.timezone.value.tz.clone(),
    );
    for p in problems {
        crate::say::warn(format_args!("{p}"));
        if let Err(e) = logs.envelope(clock.wall(), &format!("WARNING {p}")) {
            crate::say::warn(format_args!("the envelope log is not written: {e}"));
        }
    }
}

/// The process that ran each start, by job name ([`TickReport::workers`]).
type Workers = Vec<(String, u32)>;

/// Runs each due job in a worker process of its own; the worst outcome, how
/// each ended, and the process that ran each. The decision's webhook deliveries (`held`) are posted
/// once every run is forked (the tick must be single-threaded until then),
/// while the runs go on, and waited for after them.
fn run_all(
    config: &Config,
    due_jobs: &[(&Job, Start)],
    clock: &Arc<dyn Clock>,
    held: Vec<crate::engine::webhook::Delivery>,
) -> (Outcome, Vec<(String, RunEnd)>, Workers) {
    let mut posting = Pending::default();
    let one = |job: &Job, start: Start| -> Outcome {
        let s = Rc::new(RefCell::new(Surfaces::open(config, Arc::clone(clock))));
        let req = run::Request {
            config,
            job,
            start,
            tee: false,
            teller: None,
            stop_on_signal: false,
            backfill: false,
        };
        let outcome = run::run(&req, &s);
        s.borrow_mut().finish();
        outcome
    };
    let max = usize::try_from(config.settings.max_parallel.value).unwrap_or(1);
    let mut pool = match baton_runner::Pool::new(max) {
        Ok(p) => p,
        Err(_) => {
            // Not forkable here (another thread exists): one after another,
            // the deliveries beside them.
            for d in held {
                posting.post(d, Arc::clone(clock));
            }
            let ends: Vec<(String, RunEnd)> = due_jobs
                .iter()
                .map(|(job, at)| (job.name.clone(), RunEnd::Exited(one(job, *at))))
                .collect();
            let worst = ends
                .iter()
                .filter_map(|(_, e)| match e {
                    RunEnd::Exited(c) => Some(*c),
                    _ => None,
                })
                .max()
                .unwrap_or(Outcome::Done);
            said(config, clock, posting.finish());
            let workers = due_jobs
                .iter()
                .map(|(job, _)| (job.name.clone(), std::process::id()))
                .collect();
            return (worst, ends, workers);
        }
    };
    let mut worst = Outcome::Done;
    let mut not_started = 0usize;
    let mut ends: Vec<(String, RunEnd)> = Vec::new();
    let mut workers: Workers = Vec::new();
    for (job, at) in due_jobs {
        if pool.stopped().is_some() {
            // Asked to stop: what has not started is left to the next tick.
            not_started += 1;
            ends.push((job.name.clone(), RunEnd::NotStarted));
            continue;
        }
        match pool.spawn(job.name.clone(), || one(job, *at).worker_status()) {
            Ok(pid) => workers.push((job.name.clone(), pid)),
            Err(e) => {
                if pool.stopped().is_some() {
                    not_started += 1;
                } else {
                    crate::say::line(format_args!("tick: {} not started: {e}", job.name));
                }
                ends.push((job.name.clone(), RunEnd::NotStarted));
                worst = worst.max(Outcome::Failed);
            }
        }
    }
    // Every run is forked: threads may start now.
    for d in held {
        posting.post(d, Arc::clone(clock));
    }
    let (ended, stopped) = pool.finish();
    said(config, clock, posting.finish());
    let mut cut_short = 0usize;
    for (name, end) in ended {
        ends.push((
            name.clone(),
            match end {
                baton_runner::WorkerEnd::Exited(c) => RunEnd::Exited(Outcome::of_worker_status(c)),
                baton_runner::WorkerEnd::Signaled(sig) => RunEnd::Signaled(sig),
            },
        ));
        match end {
            baton_runner::WorkerEnd::Exited(c) => {
                worst = worst.max(Outcome::of_worker_status(c));
            }
            // A worker the stop reached before it could take the signal
            // over: counted below, not reported one by one.
            baton_runner::WorkerEnd::Signaled(sig) if Some(sig) == stopped => {
                cut_short += 1;
                worst = worst.max(Outcome::Failed);
            }
            baton_runner::WorkerEnd::Signaled(sig) => {
                crate::say::line(format_args!(
                    "tick: the process running {name} died of signal {sig}; its lease speaks \
                     for it (`baton status {name}` names its holder)"
                ));
                worst = worst.max(Outcome::Failed);
            }
        }
    }
    if let Some(sig) = stopped {
        let mut what = Vec::new();
        if cut_short > 0 {
            what.push(format!("{cut_short} run(s) ended by it"));
        }
        if not_started > 0 {
            what.push(format!(
                "{not_started} due job(s) not started (left to the next tick)"
            ));
        }
        if what.is_empty() {
            crate::say::line(format_args!("tick: stopped by signal {sig}"));
        } else {
            crate::say::line(format_args!(
                "tick: stopped by signal {sig}: {}",
                what.join(", ")
            ));
        }
        worst = worst.max(Outcome::Failed);
    }
    // In the order of the starts, as the report promises.
    ends.sort_by_key(|(name, _)| due_jobs.iter().position(|(j, _)| j.name == *name));
    (worst, ends, workers)
}

/// `baton run JOB`: runs the job now, by hand, under its lock.
pub fn run_now(config: &Config, name: &str, clock: Arc<dyn Clock>) -> Outcome {
    run_now_with(config, name, clock, true, None)
}

/// As [`run_now`]: the steps' output copied to stdout when `tee` (not for
/// `run --json`), and what the lock decided told to `teller`.
pub fn run_now_with(
    config: &Config,
    name: &str,
    clock: Arc<dyn Clock>,
    tee: bool,
    teller: Option<&run::Teller<'_>>,
) -> Outcome {
    let Some(job) = config.jobs.get(name) else {
        crate::say::line(format_args!(
            "run: no job named {name:?} in {}",
            config.path.display()
        ));
        return Outcome::Unable;
    };
    if !config.enabled() {
        crate::say::line(format_args!(
            "{name}: not run: the kill switch is off ({})",
            match &config.settings.enabled.source {
                crate::config::Source::Default => "enabled = false".to_owned(),
                other => format!("enabled = false, {other}"),
            }
        ));
        return Outcome::Done;
    }
    if !job.enabled.value {
        crate::say::line(format_args!(
            "{name}: not run: the job is disabled (enabled = false, {})",
            job.enabled.source
        ));
        return Outcome::Done;
    }
    if let Err(e) = preflight(config, clock.wall()) {
        crate::say::line(format_args!("run: {name}: not run: {e}"));
        return Outcome::Unable;
    }
    // The run asks its job's guard first ([`run::run`]); a store that can
    // reads it with the ledger's first look, in its round trip. The value
    // lives through the run, so the run's store shares its connection.
    let store = crate::store::open(config).ok();
    if let Some(store) = &store {
        store.foresee_guard(&job.lock_ref());
    }
    let s = Rc::new(RefCell::new(Surfaces::open(config, clock)));
    let outcome = run::run(
        &run::Request {
            config,
            job,
            start: Start::Manual,
            tee,
            teller,
            stop_on_signal: false,
            backfill: false,
        },
        &s,
    );
    let _ = s.borrow_mut().ledger(|l| l.checkpoint());
    s.borrow_mut().finish();
    drop(store);
    outcome
}
