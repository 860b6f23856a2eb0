//! `baton tick` and `baton run`: what is due now, and running it.
//!
//! A job's due occurrence is its latest scheduled instant at or before now,
//! no older than its `catch_up_window`, and not yet decided in the ledger
//! (started or skipped). The ledger is only the fast path: a process that
//! finds an occurrence due still has to claim it inside the job's lease
//! ([`crate::run`]), so two ticks that both find it due run it once.
//!
//! Due jobs run concurrently, each in a process of its own forked from the
//! tick (at most `max_parallel` at once), because each run needs its own
//! subreaper and signal handlers; `tick` waits for them and exits with the
//! worst code. The tick itself stays single-threaded until every run has
//! been forked. The kill switch is checked before anything is touched: no
//! directory, lock, ledger or log.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use baton_lease::Clock;
use jiff::Timestamp;

use crate::config::{Config, Job};
use crate::run::{self, CANNOT, FAILED, OK};
use crate::surfaces::Surfaces;

/// The occurrence of `job` due at `now`, given the latest occurrence the
/// ledger has decided for it.
pub fn due(job: &Job, now: Timestamp, last_decided: Option<i64>) -> Option<i64> {
    let latest = job
        .when
        .value
        .schedule
        .latest_at_or_before(now, &job.timezone.value.tz)?;
    let age = now.duration_since(latest);
    let window = jiff::SignedDuration::try_from(job.policy.catch_up_window.value).ok()?;
    if age > window {
        return None;
    }
    let at = latest.as_second();
    match last_decided {
        Some(d) if d >= at => None,
        _ => Some(at),
    }
}

/// Checks that the names are jobs of `config`; the first that is not.
fn unknown<'a>(config: &Config, names: &'a [String]) -> Option<&'a str> {
    names
        .iter()
        .find(|n| !config.jobs.contains_key(n.as_str()))
        .map(String::as_str)
}

/// Creates (or checks) the state directory and its `locks/`; says why not.
fn prepare(config: &Config) -> Result<(), String> {
    crate::state_dir::locks_dir(&config.settings.state_dir.value)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// `baton tick [JOB…]`: runs what is due now; returns the exit code.
pub fn tick(config: &Config, only: &[String], clock: Arc<dyn Clock>) -> u8 {
    if !config.enabled() {
        return OK;
    }
    if let Some(name) = unknown(config, only) {
        crate::say::line(format_args!(
            "tick: no job named {name:?} in {}",
            config.path.display()
        ));
        return CANNOT;
    }
    if let Err(e) = prepare(config) {
        crate::say::line(format_args!("tick: {e}"));
        return CANNOT;
    }
    let now = clock.wall();
    let due_jobs: Vec<(&Job, i64)> = {
        let mut s = Surfaces::open(config, Arc::clone(&clock));
        let names: Vec<&str> = config.jobs.keys().map(String::as_str).collect();
        let _ = s.ledger(|l| l.see_jobs(&names, now));
        let states = s.ledger(|l| l.jobs()).unwrap_or_default();
        let decided_by_job: std::collections::HashMap<&str, Option<i64>> = states
            .iter()
            .map(|j| (j.job.as_str(), j.last_decided))
            .collect();
        let decided = |name: &str| decided_by_job.get(name).copied().flatten();
        let chosen = config
            .jobs
            .values()
            .filter(|j| only.is_empty() || only.contains(&j.name))
            .filter(|j| j.enabled.value)
            .filter_map(|j| due(j, now, decided(&j.name)).map(|at| (j, at)))
            .collect();
        // Alert commands (a corrupt ledger's) finish here: no thread may
        // outlive this block, or the runs could not be forked.
        s.finish();
        chosen
    };
    let code = if due_jobs.is_empty() {
        OK
    } else {
        let code = run_all(config, &due_jobs, &clock);
        checkpoint(config, &clock);
        code
    };
    crate::logs::Logs::new(
        &config.settings.state_dir.value,
        config.settings.timezone.value.tz.clone(),
    )
    .prune(clock.wall(), config.settings.log_keep.value);
    code
}

/// Brings the ledger's file up to date after runs (see
/// [`baton_ledger::Ledger::checkpoint`]); a failure is said, never fatal.
fn checkpoint(config: &Config, clock: &Arc<dyn Clock>) {
    let mut s = Surfaces::open(config, Arc::clone(clock));
    let _ = s.ledger(baton_ledger::Ledger::checkpoint);
    s.finish();
}

/// Runs each due job in a worker process of its own; the worst code.
fn run_all(config: &Config, due_jobs: &[(&Job, i64)], clock: &Arc<dyn Clock>) -> u8 {
    let one = |job: &Job, at: i64| -> u8 {
        let s = Rc::new(RefCell::new(Surfaces::open(config, Arc::clone(clock))));
        let req = run::Request {
            config,
            job,
            occurrence: Some(at),
            tee: false,
        };
        let code = run::run(&req, &s);
        s.borrow_mut().finish();
        code
    };
    let max = usize::try_from(config.settings.max_parallel.value).unwrap_or(1);
    let mut pool = match baton_runner::Pool::new(max) {
        Ok(p) => p,
        Err(_) => {
            // Not forkable here (another thread exists): one after another.
            return due_jobs
                .iter()
                .map(|(job, at)| one(job, *at))
                .max()
                .unwrap_or(OK);
        }
    };
    let mut worst = OK;
    let mut not_started = 0usize;
    for (job, at) in due_jobs {
        if pool.stopped().is_some() {
            // Asked to stop: what has not started is left to the next tick.
            not_started += 1;
            continue;
        }
        if let Err(e) = pool.spawn(job.name.clone(), || one(job, *at)) {
            if pool.stopped().is_some() {
                not_started += 1;
            } else {
                crate::say::line(format_args!("tick: {} not started: {e}", job.name));
            }
            worst = worst.max(FAILED);
        }
    }
    let (ended, stopped) = pool.finish();
    let mut cut_short = 0usize;
    for (name, end) in ended {
        match end {
            baton_runner::WorkerEnd::Exited(c) => worst = worst.max(c.min(CANNOT)),
            // A worker the stop reached before it could take the signal
            // over: counted below, not reported one by one.
            baton_runner::WorkerEnd::Signaled(sig) if Some(sig) == stopped => {
                cut_short += 1;
                worst = worst.max(FAILED);
            }
            baton_runner::WorkerEnd::Signaled(sig) => {
                crate::say::line(format_args!(
                    "tick: the process running {name} died of signal {sig}; its lease speaks \
                     for it (`baton lock show {name}`)"
                ));
                worst = worst.max(FAILED);
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
        worst = worst.max(FAILED);
    }
    worst
}

/// `baton run JOB`: runs the job now, by hand, under its lock.
pub fn run_now(config: &Config, name: &str, clock: Arc<dyn Clock>) -> u8 {
    let Some(job) = config.jobs.get(name) else {
        crate::say::line(format_args!(
            "run: no job named {name:?} in {}",
            config.path.display()
        ));
        return CANNOT;
    };
    if !config.enabled() {
        crate::say::line(format_args!(
            "{name}: not run: the kill switch is off ({})",
            match &config.settings.enabled.source {
                crate::config::Source::Default => "enabled = false".to_owned(),
                other => format!("enabled = false, {other}"),
            }
        ));
        return OK;
    }
    if !job.enabled.value {
        crate::say::line(format_args!(
            "{name}: not run: the job is disabled (enabled = false, {})",
            job.enabled.source
        ));
        return OK;
    }
    if let Err(e) = prepare(config) {
        crate::say::line(format_args!("run: {e}"));
        return CANNOT;
    }
    let s = Rc::new(RefCell::new(Surfaces::open(config, clock)));
    let code = run::run(
        &run::Request {
            config,
            job,
            occurrence: None,
            tee: true,
        },
        &s,
    );
    let _ = s.borrow_mut().ledger(baton_ledger::Ledger::checkpoint);
    s.borrow_mut().finish();
    code
}
