//! One run of a job, scheduled (`tick`) or by hand (`run`): the lease and
//! the occurrence claim, the steps with their retries, the checks, and
//! everything written about it.
//!
//! The order is the guarantee:
//!
//! 1. take the job's lease, claiming the occurrence in the same critical
//!    section (`baton_lease::Once`): an occurrence already claimed, or one a
//!    live holder is running now, ends here quietly; a lock held by another
//!    run, a hung, orphaned or foreign holder is a skip, decided once in the
//!    ledger (the process that records the decision alerts; the others stay
//!    quiet);
//! 2. record `started` in the ledger while holding the lease, before the
//!    first step; an occurrence the ledger already decided (its lock file
//!    deleted meanwhile) ends here;
//! 3. run the steps in order under one `baton_runner::Session` (the lease
//!    is held through every step, retry, pause and check); a step is retried
//!    on failure, with a delay that doubles from `backoff` up to
//!    `backoff_max`, unless its exit code is one that is never retried; a
//!    step that still fails stops the steps after it;
//! 4. run the checks, each once, whatever the steps did (not after a lost
//!    lease or a signal: then nothing more may run);
//! 5. record the verdict, release the lease.
//!
//! Exit codes: 0 for success or nothing to do, 1 for a failure or a skip
//! (an alert was raised), 2 when the lock cannot be used at all.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use baton_lease::{Lease, Outcome};
use baton_runner::{Ending, Event, Finish, Paused, Session, SessionConfig, Stdin, StepSpec};
use jiff::Timestamp;

use crate::alerts::{Alert, HolderInfo, Kind};
use crate::config::{Config, Job, Step, StepKind};
use crate::logs::OutputSink;
use crate::surfaces::Surfaces;
use crate::units::show_duration;

/// The exit code of a run that succeeded, or had nothing to do.
pub const OK: u8 = 0;
/// The exit code of a run that failed or was skipped (an alert was raised).
pub const FAILED: u8 = 1;
/// The exit code when the configuration cannot be honoured.
pub const CANNOT: u8 = 2;

/// A run to make.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The configuration.
    pub config: &'a Config,
    /// The job.
    pub job: &'a Job,
    /// The occurrence (seconds since 1970), or `None` for a run by hand.
    pub occurrence: Option<i64>,
    /// Copy the steps' output to standard output as well as the log.
    pub tee: bool,
}

/// An occurrence as the ledger, the logs and the job see it: RFC 3339 in
/// UTC, or `manual`.
pub fn occurrence_text(occurrence: Option<i64>) -> String {
    match occurrence.and_then(|s| Timestamp::from_second(s).ok()) {
        Some(t) => t.to_string(),
        None => "manual".into(),
    }
}

/// The lock of a job.
pub fn lock_for(config: &Config, job: &Job) -> baton_lease::Lock {
    let p = &job.policy;
    let path = config
        .settings
        .state_dir
        .value
        .join("locks")
        .join(format!("{}.lock", job.lock.value));
    baton_lease::Lock::new(path).with_options(baton_lease::Options {
        ttl: p.ttl.value,
        mutex_wait: baton_runner::mutex_wait_for(p.ttl.value),
        policy: baton_lease::Policy {
            takeover_grace: p.takeover_grace.value,
            ..baton_lease::Policy::default()
        },
        fsync: false,
    })
}

/// What an alert of this run says about where it is.
#[derive(Debug, Clone)]
struct Context {
    job: String,
    occurrence: String,
    run_id: String,
    lock: String,
    name: String,
    fence: Option<u64>,
}

impl Context {
    fn alert(&self, kind: Kind, now: Timestamp, step: Option<&str>, message: String) -> Alert {
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
        }
    }
}

/// Runs `req` to its end; returns the exit code.
pub fn run(req: &Request<'_>, surfaces: &Rc<RefCell<Surfaces>>) -> u8 {
    let job = req.job;
    let lock = lock_for(req.config, job);
    let run_id = match baton_lease::Token::fresh() {
        Ok(t) => t.to_string(),
        Err(e) => {
            surfaces.borrow_mut().warn(&format!(
                "{}: failed to read random bytes for a run id: {e}",
                job.name
            ));
            return CANNOT;
        }
    };
    let occurrence = occurrence_text(req.occurrence);
    let mut ctx = Context {
        job: job.name.clone(),
        occurrence: occurrence.clone(),
        run_id: run_id.clone(),
        lock: lock.path().display().to_string(),
        name: job.lock.value.clone(),
        fence: None,
    };
    let claim = baton_lease::Claim {
        run: Some(run_id.clone()),
        occ: Some(occurrence.clone()),
        budget: job.policy.max_runtime.value,
        once: req.occurrence.map(|at| baton_lease::Once {
            key: job.name.clone(),
            at,
        }),
    };
    let outcome = match lock.try_acquire_as(&claim) {
        Ok(o) => o,
        Err(e) => {
            surfaces
                .borrow_mut()
                .warn(&format!("{}: not run: {e}", job.name));
            return CANNOT;
        }
    };
    let lease = match outcome {
        Outcome::Acquired(lease) => lease,
        Outcome::Claimed { .. } => return OK,
        refused => return skip(req, &ctx, &refused, surfaces),
    };
    ctx.fence = Some(lease.fence().get());
    let (host, pid) = (lease.record().host.clone(), std::process::id());
    let began = {
        let mut s = surfaces.borrow_mut();
        let now = s.now();
        let row = baton_ledger::NewRun {
            run_id: run_id.clone(),
            job: job.name.clone(),
            occurrence: req.occurrence,
            fence: ctx.fence,
            host: host.clone(),
            pid,
            started: now,
        };
        s.ledger(|l| l.begin_run(&row))
    };
    if let Some(baton_ledger::Begun::AlreadyDecided(d)) = began {
        // The lock file was replaced since that decision; the ledger
        // remembers it. The claim just written stands: it is the same one.
        surfaces.borrow_mut().note(&format!(
            "{} occurrence={occurrence} already {} (the ledger says so); not run again",
            job.name,
            d.decision.as_str()
        ));
        let _ = lease.release();
        return OK;
    }
    surfaces.borrow_mut().note(&format!(
        "{} run={run_id} occurrence={occurrence} start fence={} host={host} pid={pid}",
        job.name,
        lease.fence()
    ));
    steps(req, &ctx, lease, surfaces)
}

/// A lock that was not free: quiet when another process runs this very
/// occurrence; otherwise a skip, decided once in the ledger and alerted by
/// whoever decided it (a run by hand always alerts).
fn skip(
    req: &Request<'_>,
    ctx: &Context,
    refused: &Outcome,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> u8 {
    let job = req.job;
    let (kind, holder) = match refused {
        Outcome::Busy(baton_lease::Busy::Held { holder, .. }) => (Kind::Busy, Some(holder)),
        Outcome::Hung { holder, .. } => (Kind::Hung, Some(holder)),
        Outcome::Orphaned { holder, .. } => (Kind::Orphaned, Some(holder)),
        Outcome::VersionConflict(_) => (Kind::VersionConflict, None),
        _ => (Kind::Busy, None),
    };
    if let (Some(at), Some(h)) = (req.occurrence, holder)
        && kind == Kind::Busy
        && h.claim(&job.name) == Some(at)
    {
        // Another tick runs this occurrence now: nothing to do here.
        return OK;
    }
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    let why = refused.describe();
    if let Some(at) = req.occurrence {
        let first = s.ledger(|l| {
            l.decide(
                &job.name,
                at,
                baton_ledger::Decision::Skipped,
                kind.as_str(),
                &why,
                now,
            )
        });
        if first == Some(false) {
            // Another process decided this occurrence and alerted.
            return OK;
        }
    }
    let mut alert = ctx.alert(
        kind,
        now,
        None,
        format!("{}: occurrence {} not run, {why}", job.name, ctx.occurrence),
    );
    alert.holder = holder.map(HolderInfo::of);
    alert.run_id = None;
    s.alert(&alert);
    FAILED
}

/// The runner's events, reported on the surfaces.
struct Events {
    surfaces: Rc<RefCell<Surfaces>>,
    ctx: Context,
    step: Rc<RefCell<Option<String>>>,
}

impl baton_runner::Report for Events {
    fn event(&mut self, e: Event) {
        let mut s = self.surfaces.borrow_mut();
        let now = s.now();
        let step = self.step.borrow().clone();
        let job = &self.ctx.job;
        let (kind, message) = match e {
            Event::Overrunning { budget } => (
                Kind::Overrunning,
                format!(
                    "{job}: run {} still running after its max_runtime of {}; nothing is stopped",
                    self.ctx.run_id,
                    show_duration(budget)
                ),
            ),
            Event::TimedOut { after } => (
                Kind::Timeout,
                format!(
                    "{job}: step {} timed out after {}; its whole process tree is being stopped",
                    step.as_deref().unwrap_or("?"),
                    show_duration(after)
                ),
            ),
            Event::LeaseLost { why } => (
                Kind::LeaseLost,
                format!("{job}: {why}; the run is stopped and nothing more of it runs"),
            ),
            Event::RenewTrouble { why } => return s.warn(&format!("{job}: {why}")),
            Event::Leftovers { count } => {
                return s.note(&format!(
                    "{job} run={} step={} left {count} process(es) running; stopping them",
                    self.ctx.run_id,
                    step.as_deref().unwrap_or("?")
                ));
            }
            Event::Stuck { pids, after } => {
                return s.warn(&format!(
                    "{job}: processes {pids:?} still run {} after SIGKILL; the lease is kept",
                    show_duration(after)
                ));
            }
            Event::Forwarded { signal } => {
                return s.note(&format!(
                    "{job} run={} passed signal {signal} to step {}",
                    self.ctx.run_id,
                    step.as_deref().unwrap_or("?")
                ));
            }
            Event::NoCgroup { why } => return s.note(&format!("{job}: {why}")),
        };
        let alert = self.ctx.alert(kind, now, step.as_deref(), message);
        s.alert(&alert);
    }
}

/// How the steps went.
struct Tally {
    failed: Option<(String, StepKind, Ending)>,
    stopped: Option<&'static str>,
    seq: u32,
}

fn steps(req: &Request<'_>, ctx: &Context, lease: Lease, surfaces: &Rc<RefCell<Surfaces>>) -> u8 {
    let job = req.job;
    let started = surfaces.borrow().now();
    let current = Rc::new(RefCell::new(None));
    let mut events = Events {
        surfaces: Rc::clone(surfaces),
        ctx: ctx.clone(),
        step: Rc::clone(&current),
    };
    let env_base: Vec<(String, String)> = vec![
        ("BATON_JOB".into(), job.name.clone()),
        ("BATON_OCCURRENCE".into(), ctx.occurrence.clone()),
        ("BATON_RUN_ID".into(), ctx.run_id.clone()),
        ("BATON_FENCE".into(), lease.fence().to_string()),
        ("BATON_TOKEN".into(), lease.token().to_string()),
        (
            "BATON_LOCK".into(),
            lease.lock().path().display().to_string(),
        ),
    ];
    let session_cfg = SessionConfig {
        max_runtime: job.policy.max_runtime.value,
        cgroup: None,
        label: ctx.run_id.clone(),
    };
    let mut session = match Session::start(lease, session_cfg, &mut events) {
        Ok(s) => s,
        Err(failed) => {
            let (lease, e) = *failed;
            let _ = lease.release();
            surfaces.borrow_mut().warn(&format!(
                "{}: failed to install signal handlers: {e}",
                job.name
            ));
            return CANNOT;
        }
    };
    let mut tally = Tally {
        failed: None,
        stopped: None,
        seq: 0,
    };
    for step in &job.steps {
        if tally.failed.is_some() || tally.stopped.is_some() {
            surfaces.borrow_mut().note(&format!(
                "{} run={} step={} skipped: an earlier step failed",
                job.name, ctx.run_id, step.name
            ));
            continue;
        }
        attempts(
            req,
            ctx,
            step,
            &env_base,
            &mut session,
            &current,
            &mut tally,
            surfaces,
        );
    }
    for check in &job.checks {
        if tally.stopped.is_some() {
            surfaces.borrow_mut().note(&format!(
                "{} run={} check={} not run: the run was stopped",
                job.name, ctx.run_id, check.name
            ));
            continue;
        }
        attempts(
            req,
            ctx,
            check,
            &env_base,
            &mut session,
            &current,
            &mut tally,
            surfaces,
        );
    }
    let finish = session.finish();
    drop(events);
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    let elapsed = Duration::try_from(now.duration_since(started)).unwrap_or_default();
    let (verdict, code, success) = match (&tally.stopped, &tally.failed) {
        (Some(why), _) => (
            *why,
            tally
                .failed
                .as_ref()
                .map_or(1, |f| i32::from(f.2.exit_code())),
            false,
        ),
        (None, Some((_, kind, ending))) => (
            if *kind == StepKind::Check {
                "check-failed"
            } else {
                "failed"
            },
            i32::from(ending.exit_code()),
            false,
        ),
        (None, None) => ("ok", 0, true),
    };
    let row = baton_ledger::Finished {
        run_id: ctx.run_id.clone(),
        job: job.name.clone(),
        finished: now,
        verdict: verdict.to_owned(),
        exit_code: code,
        success,
    };
    let keep = req.config.settings.history_keep.value;
    let _ = s.ledger(|l| l.finish_run(&row, keep));
    s.note(&format!(
        "{} run={} verdict={verdict} ({})",
        job.name,
        ctx.run_id,
        show_duration(elapsed)
    ));
    match finish {
        Finish::Released => {}
        Finish::Lost(why) => s.note(&format!("{} run={}: {why}", job.name, ctx.run_id)),
        Finish::Unconfirmed(why) => s.warn(&format!("{}: {why}", job.name)),
    }
    if success { OK } else { FAILED }
}

/// The delay before retry `n` (1 for the first retry): `backoff` doubled
/// per retry, at most `backoff_max`.
pub fn retry_delay(step: &Step, n: u32) -> Duration {
    let factor = 2u32.saturating_pow(n.saturating_sub(1));
    step.backoff
        .value
        .saturating_mul(factor)
        .min(step.backoff_max.value)
}

#[allow(clippy::too_many_arguments)] // The run's state, passed down one level.
fn attempts(
    req: &Request<'_>,
    ctx: &Context,
    step: &Step,
    env_base: &[(String, String)],
    session: &mut Session<'_>,
    current: &Rc<RefCell<Option<String>>>,
    tally: &mut Tally,
    surfaces: &Rc<RefCell<Surfaces>>,
) {
    let job = req.job;
    let what = step.kind.as_str();
    let max = step.retries.value + 1;
    *current.borrow_mut() = Some(step.name.clone());
    for attempt in 1..=max {
        let logs = surfaces.borrow().logs.clone();
        let at = surfaces.borrow().now();
        let header = format!(
            "=== {} {} run={} {what}={} attempt={attempt} start\n",
            logs.stamp(at),
            job.name,
            ctx.run_id,
            step.name
        );
        let _ = logs.job_lines(&job.name, at, header.as_bytes());
        surfaces.borrow_mut().note(&format!(
            "{} run={} {what}={} attempt={attempt} start",
            job.name, ctx.run_id, step.name
        ));
        let (sink, captured) = OutputSink::new(
            logs.clone(),
            &job.name,
            at,
            step.output_limit.value,
            req.tee,
        );
        let argv = step.run.value.argv();
        let mut spec = StepSpec::new(argv[0].clone(), argv[1..].iter().map(Into::into).collect());
        spec.env = env_base
            .iter()
            .cloned()
            .chain([
                ("BATON_STEP".to_owned(), step.name.clone()),
                ("BATON_ATTEMPT".to_owned(), attempt.to_string()),
            ])
            .chain(step.env.iter().cloned())
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        spec.cwd = step.cwd.clone();
        spec.timeout = step.timeout.value;
        spec.kill_grace = step.kill_grace.value;
        spec.stdin = Stdin::Null;
        spec.output = baton_runner::Output::Capture(Box::new(sink));
        let result = session.run(spec);
        let finished = surfaces.borrow().now();
        let outcome = match &result.ending {
            e if e.success() => "ok",
            Ending::TimedOut => "timeout",
            Ending::LeaseLost => "lease-lost",
            Ending::NotStarted(_) => "not-started",
            _ if result.interrupted.is_some() => "interrupted",
            _ => "failed",
        };
        let shown = match &result.ending {
            Ending::NotStarted(f) => f.message.clone(),
            e => e.describe(),
        };
        let cut = captured
            .lock()
            .ok()
            .and_then(|c| c.clone())
            .unwrap_or_default();
        let footer = format!(
            "=== {} {} run={} {what}={} attempt={attempt} {shown} ({})\n",
            logs.stamp(finished),
            job.name,
            ctx.run_id,
            step.name,
            show_duration(result.duration)
        );
        let _ = logs.job_lines(&job.name, at, footer.as_bytes());
        tally.seq += 1;
        let row = baton_ledger::Attempt {
            run_id: ctx.run_id.clone(),
            job: job.name.clone(),
            seq: tally.seq,
            step: step.name.clone(),
            kind: match step.kind {
                StepKind::Step => baton_ledger::StepKind::Step,
                StepKind::Check => baton_ledger::StepKind::Check,
            },
            attempt,
            started: at,
            finished,
            exit_code: result.code.or(match &result.ending {
                Ending::NotStarted(f) => Some(i32::from(f.exit_code())),
                _ => None,
            }),
            signal: result.signal,
            outcome: outcome.to_owned(),
        };
        let mut s = surfaces.borrow_mut();
        let _ = s.ledger(|l| l.record_attempt(&row));
        if let Some(problem) = cut.failed {
            s.warn(&format!("{}: {problem}", job.name));
        }
        if result.ending.success() {
            s.note(&format!(
                "{} run={} {what}={} attempt={attempt} ok ({})",
                job.name,
                ctx.run_id,
                step.name,
                show_duration(result.duration)
            ));
            return;
        }
        let code = result.ending.exit_code();
        let stop = match &result.ending {
            Ending::LeaseLost => Some("lease-lost"),
            _ if session.lost().is_some() => Some("lease-lost"),
            _ if result.interrupted.is_some() || session.interrupted().is_some() => {
                Some("interrupted")
            }
            _ => None,
        };
        let no_retry = step.no_retry_exit_codes.value.contains(&i32::from(code));
        let last = attempt == max || stop.is_some() || no_retry;
        if !last {
            let delay = retry_delay(step, attempt);
            s.note(&format!(
                "{} run={} {what}={} attempt={attempt} {shown} ({}); retry {} of {} in {}",
                job.name,
                ctx.run_id,
                step.name,
                show_duration(result.duration),
                attempt,
                max - 1,
                show_duration(delay)
            ));
            drop(s);
            match session.pause(delay) {
                Paused::Elapsed => continue,
                Paused::Interrupted(_) => {
                    tally.stopped = Some("interrupted");
                    tally.failed = Some((step.name.clone(), step.kind, result.ending));
                    return;
                }
                Paused::LeaseLost => {
                    tally.stopped = Some("lease-lost");
                    tally.failed = Some((step.name.clone(), step.kind, result.ending));
                    return;
                }
            }
        }
        let why = if no_retry && attempt < max {
            format!(" (exit code {code} is never retried)")
        } else if max > 1 {
            format!(" after {attempt} attempts")
        } else {
            String::new()
        };
        s.note(&format!(
            "{} run={} {what}={} attempt={attempt} {shown} ({}): {what} failed{why}",
            job.name,
            ctx.run_id,
            step.name,
            show_duration(result.duration)
        ));
        if stop.is_none() && result.ending != Ending::TimedOut {
            let kind = if step.kind == StepKind::Check {
                Kind::CheckFailed
            } else {
                Kind::StepFailed
            };
            let now = s.now();
            let mut alert = ctx.alert(
                kind,
                now,
                Some(&step.name),
                format!("{}: {what} {} {shown}{why}", job.name, step.name),
            );
            alert.status = Some(i32::from(code));
            s.alert(&alert);
        }
        tally.stopped = tally.stopped.or(stop);
        if tally.failed.is_none() || step.kind == StepKind::Step {
            tally.failed = Some((step.name.clone(), step.kind, result.ending));
        }
        return;
    }
}
