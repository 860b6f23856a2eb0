//! One run of a job inside a held lease: its `started` record, its steps in
//! order with their retries, its checks, its verdict.
//!
//! A step is retried on failure as its schedule says (`retry.rs`: a
//! delay that doubles from `backoff` up to `backoff_max`, and exit codes
//! that are never retried); a step that still fails stops the steps after
//! it. An HTTP step runs as `baton __http` (the current executable; see
//! [`crate::http`]), through the runner like any other; its exit 22, a 4xx
//! answer, is never retried. The checks run once each whatever the steps
//! did (not after a lost lease, a signal or a request that the run stop
//! for a later one: then nothing more of it may run). A run replaced by a
//! later one (`overlap = "replace"`) is recorded `replaced`, stops its
//! retries, and is neither a failure nor an alert: the job asked for it.
//! This module never takes, restates or releases the lease: [`crate::engine::run`]
//! does, around one run or several in a row.
//!
//! When runs are traced ([`crate::engine::trace`]), each attempt's span id
//! is drawn before it starts and given to its command as `TRACEPARENT`;
//! the run's spans are sent once its verdict is recorded.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use baton_runner::{Ending, Event, Holding, Paused, Session, StepResult};
use baton_store::words::{AlertKind, AttemptOutcome, MissReason, RunVerdict};
use jiff::Timestamp;

use crate::config::{Step, StepKind};
use crate::engine::early::Early;
use crate::engine::request::{Context, Request};
use crate::engine::retry::{NoRetry, Schedule};
use crate::engine::run_record::{Begin, RunRecord};
use crate::engine::step_spec::step_spec;
use crate::engine::surfaces::Surfaces;
use crate::engine::trace::{self, RunTrace};
use crate::outcome::Outcome;
use crate::state::output::{OutputSink, slot_tag};
use crate::units::show_duration;

/// How long, at least, a run on a shared store tries to record its end
/// while its lease renews, before it keeps the end in its slot and lets
/// go ([`RunRecord::end_patience`]).
const END_PATIENCE: Duration = Duration::from_secs(30);

/// How long each try of a run's start after the first waits for the local
/// ledger's lock (another process's write) before it is tried again,
/// stamped afresh.
const START_TRY_WAIT: Duration = Duration::from_millis(100);

/// Runs one occurrence (or a manual run) to its verdict under `session`'s
/// lease, whose claim already names it. Returns the run's outcome.
pub(crate) fn one(
    req: &Request<'_>,
    ctx: &Rc<RefCell<Context>>,
    session: &mut Session<'_>,
    current: &Rc<RefCell<Option<String>>>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let c = ctx.borrow().clone();
    let env = environment(req, &c, session.lease());
    let at = surfaces.borrow().now();
    let trace = surfaces.borrow_mut().trace_run(&c.job, at);
    // The first attempt is spawned and held at its gate before the start
    // is recorded, so that a store names its process group with that
    // record (`Session::prepare`); a run that does not start kills it.
    let early = req
        .job
        .steps
        .first()
        .map(|step| Early::prepare(req, &env, step, trace.as_ref(), c.slot, session, surfaces));
    // The run's budget counts from its recorded start, not while the
    // start waits for the ledger.
    session.hold_budget();
    let record = match begin(req, &c, session, surfaces) {
        Ok(record) => record,
        Err(outcome) => return outcome,
    };
    session.start_budget();
    let started = surfaces.borrow().mark();
    let (tally, trace) = {
        let mut run = Running {
            req,
            ctx: &c,
            env: &env,
            session: &mut *session,
            current,
            surfaces,
            tally: Tally {
                failed: None,
                stopped: None,
                seq: 0,
                record,
            },
            trace,
            early,
        };
        run.steps_and_checks();
        (run.tally, run.trace)
    };
    *current.borrow_mut() = None;
    finish(req, &c, (tally, trace), started, session, surfaces)
}

/// Records the run's start in the ledger, ends the runs of the lock's jobs
/// that can no longer end on their own, and says that the run starts; the
/// run's record, or the outcome of a run that does not start (the ledger
/// decided its occurrence already, or would not record its start).
fn begin(
    req: &Request<'_>,
    c: &Context,
    session: &mut Session<'_>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Result<RunRecord, Outcome> {
    let job = req.job;
    let occurrence = req.start.occurrence();
    let (host, pid) = (session.lease().host().to_owned(), std::process::id());
    fail::fail_point!("start-record");
    let row = baton_store::ledger::NewRun {
        run_id: c.run_id.clone(),
        job: job.name.clone(),
        occurrence,
        fence: c.fence,
        host: host.clone(),
        pid,
        started: surfaces.borrow().now(),
        backfill: req.backfill,
    };
    let patience = job.policy.ttl.value;
    let state = &req.config.settings.state_dir.value;
    let mates = crate::engine::request::lock_mates(req.config, job);
    let beside = live_beside(req, &mates, &host, session.lease().fence(), surfaces);
    let beside = match beside {
        Ok(beside) => beside,
        Err(why) => {
            // Fail closed: a run of the lock whose file was replaced may
            // live beside. Nothing starts, as when the start is not
            // recorded: the occurrence is missed (`ledger-unavailable`), or
            // left due with its claim taken back when the ledger takes no
            // miss either.
            let why = format!(
                "it cannot be told whether a run of its lock still runs on this host ({why})"
            );
            not_recorded(req, c, occurrence, &why, session, surfaces);
            return Err(Outcome::Unable);
        }
    };
    if let Some(live) = beside {
        // Its lock file was removed or replaced under it: this lease is
        // not the only one. Nothing starts; the occurrence stays due.
        if let Some(at) = occurrence {
            let _ = withdraw_claim(req, c, at, session, surfaces);
        }
        let why = match former_lock(req, &live) {
            Some(former) => format!(
                "under the lock its job had before the configuration changed ({former}); a \
                 job put on another lock waits there for its runs under the old one to end"
            ),
            None => "though the lock file it holds was removed or replaced while it ran; never \
                     remove a lock file while its run lives (`baton lock show` says who holds it)"
                .to_owned(),
        };
        surfaces.borrow_mut().warn(&format!(
            "{}: not run: run {} of job {} still runs on this host (pid {}), {why}",
            job.name,
            live.run_id,
            live.job,
            live.pid.unwrap_or_default()
        ));
        return Err(Outcome::Failed);
    }
    // On the local store each try of the start after a first that waited
    // in vain waits a short while for the ledger's lock, so that the start
    // it stamps when it begins is within that while of when the run really
    // starts (a shared store's calls keep their own deadline: its round
    // trips are the wait).
    let started_within = (!crate::store::shared(req.config)).then_some(START_TRY_WAIT);
    let (mut record, began) = RunRecord::begin(
        row,
        (&mates, patience, started_within),
        state,
        session,
        surfaces,
    );
    if crate::store::shared(req.config) {
        record.end_patience(END_PATIENCE);
    }
    match began {
        Begin::Started => {}
        Begin::Missed(m) => {
            // It does not start: its claim must not say it did (with the
            // ledger lost later, only the claim would be left, and the
            // occurrence would never run).
            if let Some(at) = occurrence {
                let _ = withdraw_claim(req, c, at, session, surfaces);
            }
            surfaces.borrow_mut().note(&format!(
                "{} occurrence={} already recorded missed ({}) by another process; not run",
                job.name,
                c.occurrence,
                m.reason.as_str()
            ));
            return Err(Outcome::Done);
        }
        Begin::Decided(d) => {
            surfaces.borrow_mut().note(&format!(
                "{} occurrence={} already {} (the ledger says so); not run again",
                job.name,
                c.occurrence,
                d.decision.as_str()
            ));
            return Err(Outcome::Done);
        }
        Begin::NotRecorded(why) => {
            // No run starts without its start recorded: it does not run,
            // and its claim must not stand for a run.
            not_recorded(req, c, occurrence, &why, session, surfaces);
            return Err(Outcome::Unable);
        }
    }
    let lease = session.lease();
    abandon_the_dead(
        req,
        &c.run_id,
        &host,
        lease.fence(),
        (&mates, &mut record),
        surfaces,
    );
    let start = crate::engine::surfaces::RunStart {
        job: job.name.clone(),
        run_id: c.run_id.clone(),
        occurrence,
        fence: lease.fence(),
    };
    surfaces.borrow_mut().started(
        &start,
        &format!(
            "{} run={} occurrence={} start fence={} host={host} pid={pid}",
            job.name,
            c.run_id,
            c.occurrence,
            lease.fence()
        ),
    );
    Ok(record)
}

/// The environment every attempt of the run starts with, before its step's
/// own: who the run is and the lease it holds.
fn environment(req: &Request<'_>, c: &Context, lease: &Holding) -> Vec<(String, String)> {
    vec![
        ("BATON_JOB".into(), req.job.name.clone()),
        ("BATON_OCCURRENCE".into(), c.occurrence.clone()),
        ("BATON_RUN_ID".into(), c.run_id.clone()),
        ("BATON_FENCE".into(), lease.fence().to_string()),
        ("BATON_SLOT".into(), c.slot.max(1).to_string()),
        ("BATON_TOKEN".into(), lease.token()),
        ("BATON_LOCK".into(), lease.describe()),
        ("BATON_CONFIG".into(), req.config.path.display().to_string()),
    ]
}

/// Records the run's end (its verdict from `tally`) and says it, then
/// sends its `trace`; the run's outcome.
fn finish(
    req: &Request<'_>,
    c: &Context,
    (tally, trace): (Tally, Option<RunTrace>),
    started: crate::engine::surfaces::Mark,
    session: &mut Session<'_>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    // On the run's own timeline: a wall clock stepped during the run
    // neither lengthens it nor ends it before it began.
    let now = surfaces.borrow().since(started);
    let elapsed = Duration::try_from(now.duration_since(started.wall)).unwrap_or_default();
    let (verdict, code, success) = tally.verdict();
    let row = baton_store::ledger::Finished {
        run_id: c.run_id.clone(),
        job: req.job.name.clone(),
        finished: now,
        verdict,
        exit_code: code,
        success,
    };
    let keep = req.config.settings.history_keep.value;
    fail::fail_point!("end-record");
    let attempts = tally.seq;
    // The holder drains the queue next unless the run lost its lease or
    // was interrupted (`engine::run`): its first look is read with the end.
    let drains = session.lost().is_none() && session.interrupted().is_none();
    let mates = crate::engine::request::drainable(req.config, req.job);
    let queue = drains.then_some(&mates[..]);
    tally.record.finish(&row, keep, queue, session, surfaces);
    if let Some(t) = trace {
        let host = session.lease().host().to_owned();
        let facts = trace::attrs::RunFacts {
            job: &req.job.name,
            run_id: &c.run_id,
            occurrence: &c.occurrence,
            fence: c.fence,
            slot: c.slot.max(1),
            host: &host,
            verdict,
            exit_code: code,
            attempts,
        };
        let error = (!success).then(|| format!("verdict {verdict} (exit code {code})"));
        let spans = t.finish(
            trace::attrs::run_name(&req.job.name),
            now,
            trace::attrs::run(&facts),
            error,
        );
        surfaces.borrow_mut().trace_ended(&host, spans);
    }
    surfaces.borrow_mut().note(&format!(
        "{} run={} verdict={verdict} ({})",
        req.job.name,
        c.run_id,
        show_duration(elapsed)
    ));
    if success || verdict == RunVerdict::Replaced {
        // A replaced run is what the job's policy asked for.
        Outcome::Done
    } else {
        Outcome::Failed
    }
}

/// The exit code a run stopped at this step is recorded with: its command's
/// own when it exited (a run whose lease was lost keeps its job's real
/// code), else the code that stands for its ending (76 for a lost lease).
fn run_code(failed: &(String, StepKind, Ending, Option<i32>)) -> i32 {
    let (_, _, ending, code) = failed;
    match (ending, code) {
        (Ending::LeaseLost | Ending::Replaced, Some(c)) => *c,
        _ => i32::from(ending.exit_code()),
    }
}

/// The runner's events, reported on the surfaces.
pub(crate) struct Events {
    pub(crate) surfaces: Rc<RefCell<Surfaces>>,
    pub(crate) ctx: Rc<RefCell<Context>>,
    pub(crate) step: Rc<RefCell<Option<String>>>,
}

impl baton_runner::Report for Events {
    fn event(&mut self, e: Event) {
        let mut s = self.surfaces.borrow_mut();
        let now = s.now();
        let step = self.step.borrow().clone();
        let ctx = self.ctx.borrow().clone();
        match said(e, &ctx, step.as_deref()) {
            Said::Alert(kind, message) => {
                let alert = ctx.alert(kind, now, step.as_deref(), message);
                s.alert_in_step(&alert);
            }
            Said::Warn(line) => s.warn(&line),
            Said::Note(line) => s.note(&line),
        }
    }
}

/// What an event of the runner says, and where.
enum Said {
    /// An alert, in the step.
    Alert(AlertKind, String),
    /// A warning.
    Warn(String),
    /// A note.
    Note(String),
}

/// What the runner's event `e` says of the run `ctx` at its step `step`.
fn said(e: Event, ctx: &Context, step: Option<&str>) -> Said {
    let job = &ctx.job;
    let step = step.unwrap_or("?");
    match e {
        Event::Overrunning { budget } => Said::Alert(
            AlertKind::Overrunning,
            format!(
                "{job}: run {} still running after its max_runtime of {}; nothing is stopped",
                ctx.run_id,
                show_duration(budget)
            ),
        ),
        Event::TimedOut { after } => Said::Alert(
            AlertKind::Timeout,
            format!(
                "{job}: step {step} timed out after {}; its whole process tree is being stopped",
                show_duration(after)
            ),
        ),
        Event::LeaseLost { why } => Said::Alert(
            AlertKind::LeaseLost,
            format!("{job}: {why}; the run is stopped and nothing more of it runs"),
        ),
        Event::Replaced { why } => Said::Note(format!(
            "{job} run={} replaced: {why}; its tree is stopped and nothing more of it runs",
            ctx.run_id
        )),
        Event::RenewTrouble { why } => Said::Warn(format!("{job}: {why}")),
        Event::Leftovers { count } => Said::Note(format!(
            "{job} run={} step={step} left {count} process(es) running; stopping them",
            ctx.run_id
        )),
        Event::Stuck { pids, after } => Said::Warn(format!(
            "{job}: processes {pids:?} still run {} after SIGKILL; the lease is kept",
            show_duration(after)
        )),
        Event::Forwarded { signal } => Said::Note(format!(
            "{job} run={} passed signal {signal} to step {step}",
            ctx.run_id
        )),
        Event::NoCgroup { why } => Said::Note(format!("{job}: {why}")),
        Event::Unseen { why, stopping } => Said::Warn(format!(
            "{job} run={} step={step} ended, and whether processes it started still run \
             cannot be seen ({why}); {}; the lease is kept until they are gone (raise the \
             supervisor's open-file limit: prlimit --pid {} --nofile=…)",
            ctx.run_id,
            if stopping {
                "stopping the step's whole PID namespace"
            } else {
                "nothing can be found to stop"
            },
            std::process::id()
        )),
        Event::Uncontained { why } => Said::Alert(
            AlertKind::Uncontained,
            format!(
                "{job}: run {} has no PID namespace ({why}); if its supervisor is killed, \
                 processes a step detached from its group may outlive it (contain = false \
                 asks for this and does not alert)",
                ctx.run_id
            ),
        ),
    }
}

/// How the steps went, and the run's rows the ledger has yet to take.
struct Tally {
    /// The step that failed, its ending and its command's own exit code.
    failed: Option<(String, StepKind, Ending, Option<i32>)>,
    stopped: Option<RunVerdict>,
    seq: u32,
    record: RunRecord,
}

impl Tally {
    /// The run's verdict, the exit code it is recorded with, and whether it
    /// succeeded.
    fn verdict(&self) -> (RunVerdict, i32, bool) {
        match (&self.stopped, &self.failed) {
            (Some(why), _) => (*why, self.failed.as_ref().map_or(1, run_code), false),
            (None, Some((_, kind, ending, _))) => (
                if *kind == StepKind::Check {
                    RunVerdict::CheckFailed
                } else {
                    RunVerdict::Failed
                },
                i32::from(ending.exit_code()),
                false,
            ),
            (None, None) => (RunVerdict::Ok, 0, true),
        }
    }

    /// `step` failed for good with `result`; `stop` stops the run. A step's
    /// failure is kept over a check's, and the first check's over later
    /// ones.
    fn fail(&mut self, step: &Step, stop: Option<RunVerdict>, result: StepResult) {
        self.stopped = self.stopped.or(stop);
        if self.failed.is_none() || step.kind == StepKind::Step {
            self.failed = Some((step.name.clone(), step.kind, result.ending, result.code));
        }
    }

    /// The run was stopped (`why`) while `step` waited to be retried after
    /// `result`.
    fn cut_short(&mut self, why: RunVerdict, step: &Step, result: StepResult) {
        self.stopped = Some(why);
        self.failed = Some((step.name.clone(), step.kind, result.ending, result.code));
    }
}

/// A run whose start the ledger did not record: it does not run. Its
/// occurrence is recorded missed (`ledger-unavailable`) with an alert, by
/// whoever records it. When the ledger takes no miss either, the lock
/// file's claim is taken back, so that the occurrence is left to a later
/// tick (which runs it, or records it missed once the ledger answers). A
/// claim that cannot be taken back either (the shared store's, whose
/// ledger does not answer) stays, and the miss is said on every surface but
/// the ledger: the next process that meets the claim records it then.
fn not_recorded(
    req: &Request<'_>,
    c: &Context,
    occurrence: Option<i64>,
    why: &str,
    session: &mut Session<'_>,
    surfaces: &Rc<RefCell<Surfaces>>,
) {
    let Some(at) = occurrence else {
        surfaces
            .borrow_mut()
            .warn(&format!("{}: not run: {why}", c.job));
        return;
    };
    let recorded = {
        let mut s = surfaces.borrow_mut();
        let now = s.now();
        let miss = baton_store::ledger::Miss {
            job: &c.job,
            reason: MissReason::LedgerUnavailable,
            first: at,
            last: at,
            count: 1,
            at_least: false,
            detail: Some(why),
            streak: false,
        };
        s.ledger(|l| l.miss(&miss, now))
    };
    if recorded == Some(baton_store::ledger::Missed::Moved) {
        return; // Decided elsewhere.
    }
    if recorded.is_none() && take_back_claim(req, c, at, why, session, surfaces) {
        return;
    }
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    let message = format!(
        "{}: occurrence {} not run: {why}; it is missed (ledger-unavailable)",
        c.job, c.occurrence
    );
    let mut alert = c.alert(AlertKind::Missed, now, None, message);
    alert.run_id = None;
    alert.reason = Some(MissReason::LedgerUnavailable.to_string());
    alert.missed = Some(crate::engine::alerts::MissedInfo::one(
        &c.occurrence,
        MissReason::LedgerUnavailable,
    ));
    if recorded.is_some() {
        s.alert(&alert);
    } else {
        s.alert_in_step(&alert);
    }
}

/// Takes back the lock file's claim on occurrence `at`, which the ledger
/// records neither started nor missed (`why`); whether it was taken back
/// (then said). A claim the store cannot take back stays.
fn take_back_claim(
    req: &Request<'_>,
    c: &Context,
    at: i64,
    why: &str,
    session: &mut Session<'_>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> bool {
    match withdraw_claim(req, c, at, session, surfaces) {
        Ok(true) => {
            surfaces.borrow_mut().warn_of(
                &c.job,
                &format!(
                    "{}: occurrence {} not run: {why}; the ledger records no miss either, so \
                 its claim on {} is taken back: a later tick runs it or records it missed",
                    c.job, c.occurrence, c.lock
                ),
            );
            true
        }
        Ok(false) => false,
        Err(e) => {
            surfaces.borrow_mut().warn_of(
                &c.job,
                &format!(
                    "{}: occurrence {}: failed to take back its claim on {}: {e}",
                    c.job, c.occurrence, c.lock
                ),
            );
            false
        }
    }
}

/// Takes back the lock file's claim on occurrence `at` of a run that did
/// not start, and then what its take of the job's guard claimed; whether
/// the claim was taken back.
fn withdraw_claim(
    req: &Request<'_>,
    c: &Context,
    at: i64,
    session: &mut Session<'_>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Result<bool, baton_store::held::HeldError> {
    let once = baton_lease::Once {
        key: c.job.clone(),
        at,
    };
    let taken = session.withdraw(&once)?;
    if taken {
        take_back_guard(req, c, surfaces);
    }
    Ok(taken)
}

/// Takes back what the run's take of the job's guard claimed, once the
/// lease's claim was taken back: else a run of the job under another lock
/// would find the occurrence claimed by the guard, and neither run it nor
/// record it missed.
fn take_back_guard(req: &Request<'_>, c: &Context, surfaces: &Rc<RefCell<Surfaces>>) {
    let Some(claim) = c.guard else {
        return;
    };
    let taken = crate::store::open(req.config)
        .map_err(|e| e.to_string())
        .and_then(|s| {
            s.withdraw_guard(&req.job.lock_ref(), &claim)
                .map_err(|e| e.to_string())
        });
    if let Err(e) = taken {
        surfaces.borrow_mut().warn_of(
            &c.job,
            &format!(
                "{}: occurrence {}: failed to take back the claim of its guard: {e}",
                c.job, c.occurrence
            ),
        );
    }
}

/// A run under way: what each attempt of its steps needs, and what they
/// have come to.
struct Running<'a, 's> {
    req: &'a Request<'a>,
    ctx: &'a Context,
    /// The run's environment ([`environment`]).
    env: &'a [(String, String)],
    session: &'a mut Session<'s>,
    /// The step running, as the runner's events report it.
    current: &'a Rc<RefCell<Option<String>>>,
    surfaces: &'a Rc<RefCell<Surfaces>>,
    tally: Tally,
    /// Its spans, when runs are traced.
    trace: Option<RunTrace>,
    /// Its first attempt, spawned before its start was recorded.
    early: Option<Early>,
}

/// One attempt that ran (or could not start).
struct Tried {
    /// Its number, 1 for the first.
    attempt: u32,
    result: StepResult,
    /// Its ending, as the logs say it.
    shown: String,
}

impl Running<'_, '_> {
    /// The job's steps in order, until one fails for good or the run is
    /// stopped; then its checks, unless the run was stopped.
    fn steps_and_checks(&mut self) {
        let job = self.req.job;
        for step in &job.steps {
            if self.tally.failed.is_some() || self.tally.stopped.is_some() {
                self.surfaces.borrow_mut().note(&format!(
                    "{} run={} step={} skipped: an earlier step failed",
                    job.name, self.ctx.run_id, step.name
                ));
                continue;
            }
            self.attempts(step);
        }
        for check in &job.checks {
            if self.tally.stopped.is_some() {
                self.surfaces.borrow_mut().note(&format!(
                    "{} run={} check={} not run: the run was stopped",
                    job.name, self.ctx.run_id, check.name
                ));
                continue;
            }
            self.attempts(check);
        }
    }

    /// Runs `step` (or a check) until an attempt succeeds, its schedule
    /// allows no retry, or the run is stopped; a failure for good goes to
    /// the tally.
    fn attempts(&mut self, step: &Step) {
        let schedule = Schedule::of(step);
        *self.current.borrow_mut() = Some(step.name.clone());
        for attempt in 1..=schedule.attempts() {
            let tried = self.attempt(step, attempt);
            if tried.result.ending.success() {
                self.surfaces.borrow_mut().note(&format!(
                    "{} ok ({})",
                    self.label(step, attempt),
                    show_duration(tried.result.duration)
                ));
                return;
            }
            let code = tried.result.ending.exit_code();
            let refusal = schedule.refusal(code, tried.result.code);
            let next = schedule.next(attempt, refusal);
            let stop = self.stop(&tried.result, next.is_some());
            if let (None, Some(delay)) = (stop, next) {
                self.surfaces.borrow_mut().note(&format!(
                    "{} {} ({}); retry {attempt} of {} in {}",
                    self.label(step, attempt),
                    tried.shown,
                    show_duration(tried.result.duration),
                    schedule.attempts() - 1,
                    show_duration(delay)
                ));
                // Recorded before the wait: the ledger shows the failed
                // attempt while its retry waits.
                self.tally.record.flush(&mut self.surfaces.borrow_mut());
                match self.session.pause(delay) {
                    Paused::Elapsed => continue,
                    Paused::Interrupted(_) => {
                        return self
                            .tally
                            .cut_short(RunVerdict::Interrupted, step, tried.result);
                    }
                    Paused::LeaseLost => {
                        return self
                            .tally
                            .cut_short(RunVerdict::LeaseLost, step, tried.result);
                    }
                    Paused::Replaced => {
                        return self
                            .tally
                            .cut_short(RunVerdict::Replaced, step, tried.result);
                    }
                }
            }
            let why = why_last(code, attempt, schedule.attempts(), refusal);
            return self.give_up(step, &why, stop, tried);
        }
    }

    /// What stops the run after an attempt that failed with `result`;
    /// `retried` says whether another attempt would follow. A lost lease
    /// cuts the run short only where it stopped the command or keeps a
    /// retry from running: a command that failed by itself on its last
    /// attempt keeps its own verdict (`DESIGN.md`, "What a lost lease does
    /// to the record").
    fn stop(&self, result: &StepResult, retried: bool) -> Option<RunVerdict> {
        match &result.ending {
            Ending::LeaseLost => Some(RunVerdict::LeaseLost),
            _ if self.session.lost().is_some() && retried => Some(RunVerdict::LeaseLost),
            Ending::Replaced => Some(RunVerdict::Replaced),
            _ if self.session.replaced().is_some() && retried => Some(RunVerdict::Replaced),
            _ if result.interrupted.is_some() || self.session.interrupted().is_some() => {
                Some(RunVerdict::Interrupted)
            }
            _ => None,
        }
    }

    /// How the logs name attempt `attempt` of `step`.
    /// The attempt's name in its log's frames and the envelope: `job
    /// run=ID step=NAME attempt=N`, with `slot=N` after the run's id when
    /// its lines are tagged with their slot ([`slot_tag`]).
    fn label(&self, step: &Step, attempt: u32) -> String {
        let slot = slot_tag(self.req.job.policy.max_concurrent.value, self.ctx.slot)
            .map_or_else(String::new, |_| format!(" slot={}", self.ctx.slot));
        format!(
            "{} run={}{slot} {}={} attempt={attempt}",
            self.req.job.name,
            self.ctx.run_id,
            step.kind.as_str(),
            step.name
        )
    }

    /// Attempt `attempt` of `step`: framed in the job's log, run, and
    /// recorded.
    fn attempt(&mut self, step: &Step, attempt: u32) -> Tried {
        // The attempts before this one are recorded before it starts.
        self.tally.record.flush(&mut self.surfaces.borrow_mut());
        let job = self.req.job;
        let label = self.label(step, attempt);
        let logs = self.surfaces.borrow().logs.clone();
        let early = self.early.take_if(|e| attempt == 1 && e.step == step.name);
        // `at` names the log its lines go to (an early attempt's output
        // was set up when it was made); `begun` is when its command is let
        // run, after the run's start was recorded, however long that took.
        let begun_at = self.surfaces.borrow().mark();
        let begun = begun_at.wall;
        let at = early.as_ref().map_or(begun, |e| e.at);
        let header = format!("=== {} {label} start\n", logs.stamp(begun));
        let _ = logs.job_lines(&job.name, at, header.as_bytes());
        self.surfaces.borrow_mut().note(&format!("{label} start"));
        let (prepared, captured, span) = match early {
            Some(e) => (e.prepared, e.captured, e.span),
            None => {
                let limit = step.output_limit.value;
                let (sink, captured) =
                    OutputSink::new(logs.clone(), &job.name, at, limit, self.req.tee);
                let sink = sink.tagged(slot_tag(job.policy.max_concurrent.value, self.ctx.slot));
                let span = self.trace.as_ref().and_then(|t| t.child().ok());
                let spec = step_spec(self.req, self.env, step, attempt, sink, span);
                (self.session.prepare(spec), captured, span)
            }
        };
        fail::fail_point!("attempt-start");
        let result = match prepared {
            Ok(p) => self.session.run_prepared(p),
            Err(not_run) => *not_run,
        };
        fail::fail_point!("attempt-end");
        let finished = self.surfaces.borrow().since(begun_at);
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
            "=== {} {label} {shown} ({})\n",
            logs.stamp(finished),
            show_duration(result.duration)
        );
        let _ = logs.job_lines(&job.name, at, footer.as_bytes());
        let row = self.row(step, attempt, (begun, finished), &result);
        if let (Some(t), Some(span)) = (self.trace.as_mut(), span) {
            let attrs =
                trace::attrs::attempt((step.kind, &step.name), attempt, row.outcome, row.exit_code);
            let error = (row.outcome != AttemptOutcome::Ok).then(|| shown.clone());
            let name = trace::attrs::attempt_name(step.kind, &step.name);
            t.ended(span, name, (begun, finished), attrs, error);
        }
        let mut s = self.surfaces.borrow_mut();
        self.tally.record.attempt(row);
        if let Some(problem) = cut.failed {
            s.warn(&format!("{}: {problem}", job.name));
        }
        Tried {
            attempt,
            result,
            shown,
        }
    }

    /// The ledger's row of attempt `attempt` of `step`, run from `started`
    /// to `finished`: the run's next in sequence.
    fn row(
        &mut self,
        step: &Step,
        attempt: u32,
        (started, finished): (Timestamp, Timestamp),
        result: &StepResult,
    ) -> baton_store::ledger::Attempt {
        let outcome = outcome_of(result);
        self.tally.seq += 1;
        baton_store::ledger::Attempt {
            run_id: self.ctx.run_id.clone(),
            job: self.req.job.name.clone(),
            seq: self.tally.seq,
            step: step.name.clone(),
            kind: step.kind,
            attempt,
            started,
            finished,
            exit_code: result.code.or(match &result.ending {
                Ending::NotStarted(f) => Some(i32::from(f.exit_code())),
                // A timed-out attempt is recorded as exit 124, as
                // timeout(1) says it (the signal that ended it is kept too).
                Ending::TimedOut => Some(124),
                _ => None,
            }),
            signal: result.signal,
            outcome,
        }
    }

    /// `step` failed for good (`why` says why no attempt follows): said,
    /// alerted unless the run is stopped (`stop`) or the step timed out
    /// (both alerted already), and tallied.
    fn give_up(&mut self, step: &Step, why: &str, stop: Option<RunVerdict>, tried: Tried) {
        let job = self.req.job;
        let what = step.kind.as_str();
        let Tried {
            attempt,
            result,
            shown,
        } = tried;
        let mut s = self.surfaces.borrow_mut();
        // Recorded before its alert goes out.
        self.tally.record.flush(&mut s);
        // A run replaced by a later one was stopped; it did not fail.
        let ended = if stop == Some(RunVerdict::Replaced) {
            "stopped"
        } else {
            "failed"
        };
        s.note(&format!(
            "{} {shown} ({}): {what} {ended}{why}",
            self.label(step, attempt),
            show_duration(result.duration)
        ));
        if stop.is_none() && result.ending != Ending::TimedOut {
            let kind = if step.kind == StepKind::Check {
                AlertKind::CheckFailed
            } else {
                AlertKind::StepFailed
            };
            let now = s.now();
            let mut alert = self.ctx.alert(
                kind,
                now,
                Some(&step.name),
                format!("{}: {what} {} {shown}{why}", job.name, step.name),
            );
            alert.status = Some(i32::from(result.ending.exit_code()));
            s.alert(&alert);
        }
        drop(s);
        self.tally.fail(step, stop, result);
    }
}

/// What an attempt that ended with `result` came to, as the ledger (and
/// its span) records it.
pub fn outcome_of(result: &StepResult) -> AttemptOutcome {
    match &result.ending {
        e if e.success() => AttemptOutcome::Ok,
        Ending::TimedOut => AttemptOutcome::Timeout,
        Ending::LeaseLost => AttemptOutcome::LeaseLost,
        Ending::Replaced => AttemptOutcome::Replaced,
        Ending::NotStarted(_) => AttemptOutcome::NotStarted,
        _ if result.interrupted.is_some() => AttemptOutcome::Interrupted,
        _ => AttemptOutcome::Failed,
    }
}

/// Why failed attempt `attempt` of `attempts` (exit `code`) was the last,
/// as the logs add it.
fn why_last(code: u8, attempt: u32, attempts: u32, refusal: Option<NoRetry>) -> String {
    match refusal {
        Some(NoRetry::ClientError) if attempt < attempts => format!(
            " (exit code {code}: the server answered 4xx, a client error, which is never \
             retried)"
        ),
        Some(NoRetry::Listed) if attempt < attempts => {
            format!(" (exit code {code} is never retried)")
        }
        _ if attempts > 1 => format!(" after {attempt} attempts"),
        _ => String::new(),
    }
}

/// What the guard of `live`'s job says when that run holds the lock its
/// job had before its `lock` was changed (so it holds no lease on this one,
/// and no lock file was removed): the guard's account of that lock and its
/// holder. `None` when the guard names no such lock held by that run.
fn former_lock(req: &Request<'_>, live: &baton_store::ledger::RunRow) -> Option<String> {
    let job = req.config.jobs.get(&live.job)?;
    let store = crate::store::open(req.config).ok()?;
    match store.runs_elsewhere(&job.lock_ref(), None) {
        Ok(baton_store::store::Guard::Elsewhere(r))
            if r.holder.as_ref().and_then(|h| h.run()) == Some(live.run_id.as_str()) =>
        {
            Some(r.why)
        }
        _ => None,
    }
}

/// Why [`live_beside`] cannot tell whether a run of the lock lives beside.
#[derive(Debug, thiserror::Error)]
enum Untold {
    /// The store the configuration names cannot be opened.
    #[error("{0}")]
    Store(crate::store::Unusable),
    /// A slot of the lock cannot be read.
    #[error("a slot of its lock cannot be read")]
    Slot,
    /// The ledger cannot list the unfinished runs of this job.
    #[error("the ledger cannot list the unfinished runs of job {0}")]
    Ledger(String),
}

/// A run of the jobs sharing this lock, on a lock file store, that the
/// ledger still calls running, whose supervisor on this host still lives
/// (a process of this program, started before the run did: not a pid
/// reused since, which a long-lived process of another program would keep
/// for good), yet whose lease
/// is not the lock's any more: under a lower fence than `fence`, or, with
/// slots, named by no slot. On this host a live holder is never taken
/// over, so its lock file was removed or replaced under it, and a run now
/// would run beside it. On a shared store the lease is a row no file
/// operation removes, and a run of another host is judged by its lease.
/// Why it cannot be told (the store, a slot or the ledger unreadable): then
/// nothing may start.
fn live_beside(
    req: &Request<'_>,
    mates: &[&str],
    host: &str,
    fence: u64,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Result<Option<baton_store::ledger::RunRow>, Untold> {
    if crate::store::shared(req.config) {
        return Ok(None);
    }
    // With slots (the job's own, or ones left above them from when
    // `max_concurrent` was higher), a run is displaced when no slot names it.
    let store = crate::store::open(req.config).map_err(Untold::Store)?;
    let named = if slotted(store.as_ref(), req.job) {
        let named = named_by_slots(store.as_ref(), req.job);
        Some(named.ok_or(Untold::Slot)?)
    } else {
        None
    };
    let mut s = surfaces.borrow_mut();
    let clock = s.clock();
    for &mate in mates {
        let runs = s
            .ledger(|l| l.unfinished(mate))
            .ok_or_else(|| Untold::Ledger(mate.to_owned()))?;
        for run in runs {
            let (Some(pid), Some(run_host)) = (run.pid, run.host.as_deref()) else {
                continue;
            };
            let displaced = match &named {
                Some(named) => !named.contains(&run.run_id),
                None => run.fence.is_some_and(|f| f < fence),
            };
            // A run whose end the ledger would not take kept it in its slot
            // and let its lease go: over, though its process may not have
            // exited yet.
            let state = &req.config.settings.state_dir.value;
            if run_host != host
                || !displaced
                || pid == std::process::id()
                || crate::state::end_slot::kept(state, &run.run_id).is_some()
            {
                continue;
            }
            if supervisor_lives(pid, run.started, clock.as_ref()) {
                return Ok(Some(run));
            }
        }
    }
    Ok(None)
}

/// Whether process `pid` of this host is the live supervisor of a run that
/// started at `started`: it runs (a zombie, not yet reaped, runs nothing),
/// it is a process of this program, and it started before the run did
/// (not a pid reused since, which a long-lived process of another program
/// would keep for good).
pub(crate) fn supervisor_lives(
    pid: u32,
    started: Timestamp,
    clock: &dyn baton_lease::Clock,
) -> bool {
    let program = |pid: &str| std::fs::read_to_string(format!("/proc/{pid}/comm")).ok();
    let this_program = program("self");
    let Some(start) = baton_lease::job::process_start(pid)
        .filter(|_| baton_lease::job::process_runs(pid))
        .filter(|_| this_program.is_some() && program(&pid.to_string()) == this_program)
    else {
        return false;
    };
    // When the process started, on the wall clock.
    let ticks = rustix::param::clock_ticks_per_second().max(1);
    let age = clock
        .boot()
        .saturating_sub(std::time::Duration::from_millis(start * 1000 / ticks));
    let since = jiff::SignedDuration::try_from(age)
        .ok()
        .and_then(|age| clock.wall().checked_sub(age).ok());
    let slack = jiff::SignedDuration::from_secs(2);
    since.is_some_and(|at| at <= started.saturating_add(slack).unwrap_or(started))
}

/// Runs of the jobs sharing this lock that the ledger still calls running,
/// but that can no longer end on their own: their supervising process on
/// this host is gone (killed, or its machine rebooted), or, on any host,
/// they held the lock under a lower fence than this run's. This run holds
/// the lock now, and a holder whose lease moved on had stopped its job
/// before it could move (self-fencing) or died; so the ledger records them
/// `abandoned`. A run of this host whose process still lives, under no
/// fence or this one, is left alone, and so is every run of a job whose
/// guard says it runs under another lock now (its lock was changed while it
/// ran: a lower fence of another lock says nothing about it). The runs are
/// those of `mates` (the jobs sharing the lock) that `record` read with the
/// start, or read now.
fn abandon_the_dead(
    req: &Request<'_>,
    current: &str,
    host: &str,
    fence: u64,
    (mates, record): (&[&str], &mut RunRecord),
    surfaces: &Rc<RefCell<Surfaces>>,
) {
    let store = crate::store::open(req.config);
    // With slots, a lower fence is another slot's, and says nothing: a run
    // is superseded when no slot's record names it any more.
    let slotted = store
        .as_ref()
        .is_ok_and(|store| slotted(store.as_ref(), req.job));
    let named = match &store {
        Ok(store) if slotted => named_by_slots(store.as_ref(), req.job),
        _ => None,
    };
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    for &mate in mates {
        let runs = match record.take_unfinished(mate) {
            Some(runs) => runs,
            None => s.ledger(|l| l.unfinished(mate)).unwrap_or_default(),
        };
        let mut elsewhere = None;
        for run in runs {
            let here = run.host.as_deref().is_none_or(|h| h == host);
            let gone = run
                .pid
                .is_none_or(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists());
            let mut superseded = if slotted {
                named.as_ref().is_some_and(|n| !n.contains(&run.run_id))
            } else {
                run.fence.is_some_and(|f| f < fence)
            };
            if superseded && !(here && gone) {
                // Asked once per job, and only when it decides: a guard that
                // cannot be read leaves the run alone. With slots too: a run
                // no slot names may be one under the job's former lock.
                superseded =
                    !*elsewhere.get_or_insert_with(|| match (&store, req.config.jobs.get(mate)) {
                        (Ok(store), Some(job)) => !matches!(
                            store.runs_elsewhere(&job.lock_ref(), None),
                            Ok(crate::store::Guard::Clear)
                        ),
                        _ => true,
                    });
            }
            if run.run_id == current || !(superseded || (here && gone)) {
                continue;
            }
            let why = why_abandoned(&run, superseded, fence);
            end_abandoned(req, mate, &run, &why, now, &mut s);
        }
    }
}

/// Whether `job`'s lock has slots: its own (`max_concurrent` above 1), or
/// ones above them whose record still names a holder, left by runs from
/// when it was higher ([`crate::store::Store::slots_above`]; a slot file
/// stays once freed, and a free one names no run). Then a lower fence is
/// another slot's, and a run is judged by whether a slot names it.
fn slotted(store: &dyn crate::store::Store, job: &crate::config::Job) -> bool {
    job.slots() > 1
        // Unreadable: as if a slot above named one.
        || store
            .slots_above(&job.lock_ref(), job.slots())
            .map_or(true, |above| above.into_iter().any(|k| {
                // Unreadable: as if it named one (judged by slots, which
                // decides nothing from a slot it cannot read).
                store.inspect(&job.slot_ref(k)).map_or(true, |v| {
                    v.is_some_and(|v| v.holder().is_some() || !v.claimable())
                })
            }))
}

/// The runs the slots of `job`'s lock name now, whatever their holders'
/// state (a dead holder's run is named until its slot is taken over):
/// `None` when a slot cannot be read, so that nothing is decided from it.
fn named_by_slots(
    store: &dyn crate::store::Store,
    job: &crate::config::Job,
) -> Option<std::collections::BTreeSet<String>> {
    use baton_lease::Verdict;
    let mut named = std::collections::BTreeSet::new();
    for (_, lock) in job.slot_refs_in(store) {
        match store.inspect(&lock).ok()? {
            None | Some(Verdict::Absent | Verdict::Free(_)) => {}
            Some(
                Verdict::Live { holder, .. }
                | Verdict::Hung { holder, .. }
                | Verdict::Orphaned { holder, .. }
                | Verdict::Dead { holder, .. }
                | Verdict::Expired { holder, .. },
            ) => {
                // A holder of no run (`baton lock`, `baton exec`) names none.
                if let Some(run) = holder.run() {
                    named.insert(run.to_owned());
                }
            }
            Some(_) => return None,
        }
    }
    Some(named)
}

/// Why the run `run` is `abandoned`: its lease passed to this run's
/// (`superseded`, under `fence`), or its process is gone.
fn why_abandoned(run: &baton_store::ledger::RunRow, superseded: bool, fence: u64) -> String {
    if superseded {
        format!(
            "its lease (fence {}) passed to this run (fence {fence}) and it never recorded an \
             end",
            run.fence.unwrap_or_default()
        )
    } else {
        format!(
            "its process ({}) is gone and never recorded an end",
            run.pid
                .map_or_else(|| "unknown".into(), |p| format!("pid {p}"))
        )
    }
}

/// Records the ends this host kept in its end slots, because the ledger
/// would not take them when their runs ended (a full disk, a ledger locked
/// for longer than the run could wait), for every run the ledger still has
/// unfinished; a slot whose run the ledger has finished (or never knew) is
/// removed. Each tick does this, so a run that ended is not shown
/// `abandoned` (nor its job crashed) until the job's next run under its
/// lock would record it; recording an end needs no lease, the run being
/// over. A ledger that fails says so once and leaves the rest for the next
/// tick.
pub(crate) fn record_kept_ends(config: &crate::config::Config, s: &mut Surfaces) {
    let state = &config.settings.state_dir.value;
    let keep = config.settings.history_keep.value;
    for crate::state::end_slot::Kept {
        end,
        attempts,
        alerts,
    } in crate::state::end_slot::all_kept(state)
    {
        let Some(unfinished) = s.ledger(|l| l.unfinished(&end.job)) else {
            return;
        };
        if unfinished.iter().any(|r| r.run_id == end.run_id) {
            if s.ledger(|l| l.finish_run_after(&attempts, &end, keep))
                .is_none()
            {
                return;
            }
            record_kept_alerts(&alerts, s);
            s.note(&format!(
                "{} run={} verdict={} (exit {}): recorded from its end slot",
                end.job, end.run_id, end.verdict, end.exit_code
            ));
        }
        crate::state::end_slot::forget(state, &end.run_id);
    }
}

/// Records the alerts a run kept in its end slot with its end (the ledger
/// took neither when they were raised), once its end is recorded; one the
/// ledger does not take is said and left in `alerts.log` only.
fn record_kept_alerts(alerts: &[baton_store::ledger::NewAlert], s: &mut Surfaces) {
    for a in alerts {
        if s.ledger(|l| l.record_alert(a)).is_none() {
            return;
        }
    }
}

/// Records the end of `mate`'s run `run`, which can no longer end on its
/// own: the end it kept in its slot when the ledger would not take it, else
/// `abandoned` (`why`) at `now`.
fn end_abandoned(
    req: &Request<'_>,
    mate: &str,
    run: &baton_store::ledger::RunRow,
    why: &str,
    now: Timestamp,
    s: &mut Surfaces,
) {
    let state = &req.config.settings.state_dir.value;
    let keep = req.config.settings.history_keep.value;
    // A run that ended while the ledger would not take its end kept it in
    // its slot: that is its record, not `abandoned`.
    if let Some(crate::state::end_slot::Kept {
        end,
        attempts,
        alerts,
    }) = crate::state::end_slot::kept(state, &run.run_id)
        && end.job == mate
    {
        if s.ledger(|l| l.finish_run_after(&attempts, &end, keep))
            .is_some()
        {
            record_kept_alerts(&alerts, s);
            crate::state::end_slot::forget(state, &run.run_id);
            s.note(&format!(
                "{mate} run={} verdict={} (exit {}): recorded from its end slot",
                run.run_id, end.verdict, end.exit_code
            ));
        }
        return;
    }
    let finished = baton_store::ledger::Finished {
        run_id: run.run_id.clone(),
        job: mate.to_owned(),
        finished: now,
        verdict: RunVerdict::Abandoned,
        exit_code: 125,
        success: false,
    };
    if s.ledger(|l| l.finish_run(&finished, keep)).is_some() {
        crate::state::end_slot::forget(state, &run.run_id);
        s.note(&format!("{mate} run={} abandoned: {why}", run.run_id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_failed_attempt_says_why_no_retry_follows() {
        let cases = [
            (
                22,
                1,
                3,
                Some(NoRetry::ClientError),
                " (exit code 22: the server answered 4xx, a client error, which is never retried)",
            ),
            (
                2,
                2,
                3,
                Some(NoRetry::Listed),
                " (exit code 2 is never retried)",
            ),
            (2, 3, 3, Some(NoRetry::Listed), " after 3 attempts"),
            (1, 3, 3, None, " after 3 attempts"),
            (1, 1, 1, None, ""),
            (2, 1, 1, Some(NoRetry::Listed), ""),
        ];
        for (code, attempt, attempts, refusal, why) in cases {
            assert_eq!(
                why_last(code, attempt, attempts, refusal),
                why,
                "{code} {attempt}/{attempts}"
            );
        }
    }
}
