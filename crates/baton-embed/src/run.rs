//! One occurrence of a job, under its lease. The order is the engine's
//! (`baton_sched`'s `engine/run.rs`), and it is the guarantee:
//!
//! 1. take the job's lease with the occurrence claimed in the same
//!    critical section ([`baton_store::Store::try_acquire`] with a
//!    [`baton_lease::Once`]): an occurrence already claimed, or one a live
//!    holder runs now, ends here quietly; a lock held by another run (the
//!    job's previous occurrence, overrunning) is missed `busy`, or with
//!    [`crate::Overlap::Queue`] waits in the ledger's queue (or joins the
//!    occurrence waiting there); a hung or orphaned holder is missed
//!    `hung` or `orphaned`; each decided once in the ledger whichever
//!    replicas try;
//! 2. read the job's pauses under the lease: an occurrence a pause covers
//!    (`baton pause JOB`) is missed `paused`, decided once in the ledger;
//!    pauses that cannot be read keep it from running;
//! 3. record `started` in the ledger under the lease, before the job's
//!    function is called; an occurrence the ledger already decided ends
//!    there, and a start that cannot be recorded does not run (its claim is
//!    taken back where the store can);
//! 4. record `abandoned` the job's runs that can no longer end on their
//!    own (a lower fence: their replica's lease moved on; or their process
//!    on this host is gone), as the command line does;
//! 5. run the attempts while the lease is renewed (`keeper.rs`); a lost
//!    lease or a shutdown fires the run's cancellation, and a function that
//!    has not returned within the grace is dropped;
//! 6. record each attempt and the verdict;
//! 7. before releasing, run what waits in the queue of the scheduler's
//!    jobs sharing the lock, oldest first, each under the same lease
//!    restated to claim it (the fence stays: the runs are one after
//!    another); after releasing, look once more, since an occurrence may
//!    have been queued between the last look and the release.
//!
//! Nothing here waits but through the scheduler's clock, and every call
//! into the store or the ledger runs on a blocking thread.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Claim, Once};
use baton_store::Restated;
use baton_store::ledger::{Attempt, Begun, Finished, Miss, Missed, NewRun, Queued};
use baton_store::store::{Guard, GuardClaim, LockRef, Refused, Taken};
use baton_store::words::{AlertKind, AttemptOutcome, MissReason, RunVerdict, StepKind};
use jiff::Timestamp;
use tokio::sync::watch;

use crate::context::{Cancel, RunContext};
use crate::env::{Env, blocking};
use crate::error::JobError;
use crate::keeper::Kept;
use crate::ledgers::Ledger;
use crate::plan::Plan;
use crate::store::Opened;
use crate::timer;

/// The exit code an interrupted run is recorded with: 128 + SIGTERM, as a
/// run the command line's graceful shutdown stopped.
const INTERRUPTED: i32 = 143;

/// One run counted in flight until it is dropped (its task ended, or was
/// dropped with its runtime).
pub(crate) struct InFlight(Arc<watch::Sender<usize>>);

impl InFlight {
    /// Counts one more run in flight.
    pub(crate) fn count(counter: &Arc<watch::Sender<usize>>) -> Self {
        counter.send_modify(|n| *n += 1);
        Self(Arc::clone(counter))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// The job's lock, as the store knows it: a lock named after the job.
fn lock_ref(plan: &Plan) -> LockRef<'_> {
    LockRef {
        job: &plan.name,
        lock: &plan.lock,
        slot: 1,
        ttl: plan.ttl,
        takeover_grace: plan.takeover_grace,
    }
}

/// A fresh run id, or `None` (said) when no random bytes could be read.
fn fresh_run_id(name: &str) -> Option<String> {
    match baton_lease::Token::fresh() {
        Ok(t) => Some(t.to_string()),
        Err(e) => {
            tracing::warn!("{name}: not run: failed to read random bytes for a run id: {e}");
            None
        }
    }
}

/// Runs occurrence `at` (Unix seconds) of `plan` to its end, then what
/// waits in the queue of the jobs sharing its lock, under the same lease.
pub(crate) async fn occurrence(env: Env, plan: Arc<Plan>, at: i64) {
    let name = plan.name.clone();
    let Some(run_id) = fresh_run_id(&name) else {
        return;
    };
    let occ = Timestamp::from_second(at).unwrap_or(Timestamp::UNIX_EPOCH);
    let claim = Claim {
        run: Some(run_id.clone()),
        occ: Some(occ.to_string()),
        budget: None,
        once: Some(Once {
            key: name.clone(),
            at,
        }),
        mates: plan.mates.clone(),
    };
    // What came due while the store did not answer is recorded before
    // this occurrence is decided (the ledger takes no miss before it then).
    settle_owed(&env, &plan).await;
    let sent = env.clock.boot();
    let p = Arc::clone(&plan);
    // The lease, then under it, before anything runs, the job's guard,
    // which decides between two runs of the job under two locks at once
    // (replicas that disagree on its lock, as a rolling deploy that
    // changes it does). Both on one blocking thread; a store that can
    // takes the guard in the acquisition's round trip.
    let taken = blocking(&env, move |s| {
        let lock = lock_ref(&p);
        let taken = s.try_acquire_guarding(&lock, &claim)?;
        let guarded = match &taken {
            Taken::Acquired(held) => Some(s.take_guard(&lock, held.fence(), Some(at))),
            _ => None,
        };
        Ok::<_, baton_store::store::Error>((taken, guarded))
    })
    .await;
    let (held, guarded) = match taken {
        Some(Ok((Taken::Acquired(held), guarded))) => (held, guarded),
        Some(Ok((Taken::Claimed { at: claimed }, _))) => {
            return claimed_already(&env, &plan, at, claimed).await;
        }
        Some(Ok((Taken::Refused(refused), _))) => {
            return refused_lock(&env, &plan, at, refused).await;
        }
        Some(Err(e)) => {
            tracing::warn!("{name} occurrence={occ}: not run: {e}");
            owe(&plan, at);
            return;
        }
        None => {
            tracing::warn!("{name} occurrence={occ}: not run: the store's thread failed");
            owe(&plan, at);
            return;
        }
    };
    let tenure = Tenure::of(held.as_ref());
    let kept = Kept::start(held, sent, Arc::clone(&env.clock));
    let guard_back = match guarded {
        Some(Ok((Guard::Clear, claim))) => claim.map(|claim| GuardBack {
            store: Arc::clone(&env.store),
            plan: Arc::clone(&plan),
            claim,
        }),
        Some(Ok((Guard::Elsewhere(refused), _))) => {
            let_go(kept, &name, at, true).await;
            return refused_lock(&env, &plan, at, refused).await;
        }
        Some(Ok((Guard::Claimed { at: claimed }, _))) => {
            let_go(kept, &name, at, true).await;
            return claimed_already(&env, &plan, at, claimed).await;
        }
        Some(Err(e)) => {
            tracing::warn!("{name} occurrence={occ}: not run: {e}");
            let_go(kept, &name, at, true).await;
            owe(&plan, at);
            return;
        }
        None => {
            tracing::warn!("{name} occurrence={occ}: not run: the guard was not taken");
            let_go(kept, &name, at, true).await;
            owe(&plan, at);
            return;
        }
    };
    let Some(mut ledger) = Ledger::open(&env).await else {
        // It never started: its claims (the lease's and the guard's) must
        // not say it did, and the miss is recorded once the ledger opens.
        let_go_back(kept, &name, at, true, guard_back).await;
        owe(&plan, at);
        return;
    };
    let this = Occurrence {
        at,
        backfill: false,
        claimed: true,
    };
    let Some(kept) = under_lease(
        &env,
        &mut ledger,
        &plan,
        this,
        &run_id,
        (kept, guard_back),
        &tenure,
    )
    .await
    else {
        // It did not start, its claim taken back: unless the ledger decided
        // it (then the miss changes nothing), it is recorded missed before
        // the next occurrence, as one the store did not answer for.
        owe(&plan, at);
        return;
    };
    let Some(kept) = drain(&env, &mut ledger, &plan, kept, &tenure).await else {
        return;
    };
    release(kept, &name).await;
    // An occurrence queued between the last look and the release waits
    // for the next holder: look once more.
    drain_fresh(&env, &plan).await;
}

/// The most occurrences a job keeps owed while its store does not answer;
/// the oldest beyond it are said and forgotten.
const OWED_MAX: usize = 1_000;

/// Notes occurrence `at`, not run because the store did not answer, to be
/// recorded missed once it does.
fn owe(plan: &Plan, at: i64) {
    let mut owed = plan
        .owed
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    owed.push(at);
    if owed.len() > OWED_MAX {
        let gone = owed.remove(0);
        tracing::warn!(
            "{}: occurrence {gone} is not recorded missed: more than {OWED_MAX} came due while \
             the store did not answer",
            plan.name
        );
    }
}

/// Records missed (`ledger-unavailable`) the occurrences of `plan` that came
/// due while the store did not answer ([`owe`]), once across replicas (one
/// that ran such an occurrence decided it, and the miss then changes
/// nothing); kept for a later try when the ledger does not open.
async fn settle_owed(env: &Env, plan: &Plan) {
    let owed = std::mem::take(
        &mut *plan
            .owed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    if owed.is_empty() {
        return;
    }
    let Some(mut ledger) = Ledger::open(env).await else {
        let mut kept = plan
            .owed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let later = std::mem::take(&mut *kept);
        *kept = owed;
        kept.extend(later);
        return;
    };
    for at in owed {
        let detail =
            "it did not run: the store did not answer, or did not record its start, when it was due"
                .to_owned();
        miss(
            env,
            &mut ledger,
            plan,
            at,
            MissReason::LedgerUnavailable,
            detail,
        )
        .await;
    }
}

/// What one tenure of a lease runs under: its fence and the host holding it.
struct Tenure {
    fence: u64,
    host: String,
    /// The lease's token: what the store vouches for when a run settles
    /// its watermark.
    token: String,
}

impl Tenure {
    /// The tenure `held` begins.
    fn of(held: &dyn baton_store::Held) -> Self {
        Self {
            fence: held.fence(),
            host: held.host().to_owned(),
            token: held.token(),
        }
    }
}

/// One occurrence to run under a lease.
#[derive(Clone, Copy)]
struct Occurrence {
    /// When (Unix seconds).
    at: i64,
    /// An operator asked for it (`baton backfill`, or a run asked for now
    /// through the router): a pause that covered it when it was due does
    /// not keep it from running now (the queue waits for a pause in force;
    /// see [`next_waiting`]).
    backfill: bool,
    /// The lease claims it (else a start that fails has no claim to take
    /// back).
    claimed: bool,
}

/// Runs occurrence `at` of `plan` as `run_id` under the lease `kept`
/// already claims it in (or, for a backfill, holds without a claim): its
/// pauses read, its start recorded, the dead
/// runs of the job recorded `abandoned`, its attempts and checks run, its
/// verdict recorded. Returns the lease for its release (or the queue);
/// `None` when it was let go already (the occurrence did not run).
async fn under_lease(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    this: Occurrence,
    run_id: &str,
    (kept, guard_back): (Kept, Option<GuardBack>),
    tenure: &Tenure,
) -> Option<Kept> {
    let name = plan.name.clone();
    let at = this.at;
    let occ = Timestamp::from_second(at).unwrap_or(Timestamp::UNIX_EPOCH);
    let Tenure { fence, host, .. } = tenure;
    let fence = *fence;
    // An occurrence run without a claim has no claim to take back.
    let claimed = this.claimed;
    // What the start needs read, in one call: the job's pauses (not for a
    // backfill) and its runs the ledger calls running.
    let (job, read_pauses) = (name.clone(), !this.backfill);
    let read = ledger
        .call(move |l| {
            let pauses = read_pauses.then(|| l.pauses(&job, 3));
            (pauses, l.unfinished(&job))
        })
        .await;
    let Some((pauses, unfinished)) = read else {
        let_go_back(kept, &name, at, claimed, guard_back).await;
        return None;
    };
    let covered = match pauses {
        None => Some(false),
        Some(pauses) => paused(env, ledger, plan, at, occ, pauses).await,
    };
    match covered {
        Some(false) => {}
        // Recorded missed: the ledger decided it.
        Some(true) => {
            let_go(kept, &name, at, false).await;
            return None;
        }
        // Unknown: it never started, and its claim must not say it did.
        None => {
            let_go_back(kept, &name, at, claimed, guard_back).await;
            return None;
        }
    }
    let row = NewRun {
        run_id: run_id.to_owned(),
        job: name.clone(),
        occurrence: Some(at),
        fence: Some(fence),
        host: host.clone(),
        pid: std::process::id(),
        started: env.clock.wall(),
        backfill: false,
    };
    // A local store's starts are committed together (`starts.rs`); a
    // shared store's in the run's own transaction, which a separate
    // committer's would only add to.
    let begun = match &env.starts {
        Some(starts) => starts.begin(row).await,
        None => ledger.call(move |l| l.begin_run(&row)).await,
    };
    match begun {
        Some(Ok(Begun::Started)) => {}
        Some(Ok(Begun::AlreadyDecided(d))) => {
            tracing::debug!(
                "{name} occurrence={occ} already {} (the ledger says so); not run again",
                d.decision.as_str()
            );
            let_go(kept, &name, at, false).await;
            return None;
        }
        Some(Ok(Begun::Missed(m))) => {
            tracing::debug!(
                "{name} occurrence={occ} already recorded missed ({}); not run",
                m.reason.as_str()
            );
            // It never started: its claim must not say it did.
            let_go_back(kept, &name, at, claimed, guard_back).await;
            return None;
        }
        Some(Err(e)) => {
            tracing::warn!("{name} occurrence={occ}: not run: its start was not recorded: {e}");
            let_go_back(kept, &name, at, claimed, guard_back).await;
            return None;
        }
        None => {
            let_go_back(kept, &name, at, claimed, guard_back).await;
            return None;
        }
    }
    abandon_the_dead(ledger, env, plan, (host, fence), unfinished).await;
    tracing::info!("{name} run={run_id} occurrence={occ} start fence={fence} host={host}");
    let lease = Arc::new(crate::context::Lease {
        store: Arc::clone(&env.store),
        clock: Arc::clone(&env.clock),
        token: tenure.token.clone(),
        lock: plan.lock.clone(),
        ttl: plan.ttl,
        takeover_grace: plan.takeover_grace,
    });
    // The budget is counted from now, not from the watcher's first poll.
    let overrun = plan.max_runtime.map(|budget| {
        let due = env.clock.boot() + budget;
        tokio::spawn(overrunning(
            env.clone(),
            plan.name.clone(),
            run_id.to_owned(),
            occ,
            (budget, due),
        ))
    });
    let mut unrecorded = Vec::new();
    let verdict = Attempts {
        env,
        plan,
        ledger,
        run_id,
        fence,
        lease,
        occ,
        lost: kept.lost.clone(),
        seq: 0,
        unrecorded: &mut unrecorded,
    }
    .run()
    .await;
    if let Some(watch) = overrun {
        watch.abort();
    }
    let (verdict, exit_code, success) = match verdict {
        RunVerdict::Ok => (verdict, 0, true),
        RunVerdict::LeaseLost => (verdict, i32::from(baton_runner::LEASE_LOST), false),
        RunVerdict::Interrupted => (verdict, INTERRUPTED, false),
        _ => (verdict, 1, false),
    };
    let finished = Finished {
        run_id: run_id.to_owned(),
        job: name.clone(),
        finished: env.clock.wall(),
        verdict,
        exit_code,
        success,
    };
    let keep = plan.history_keep;
    // With the attempts the ledger did not take as they ended. A shared
    // store's ledger that does not answer (a server restarting) is tried
    // again while the lease is held, as the command line does: else the
    // next run would find the run unfinished and call it abandoned.
    let within = if env.store.shared() {
        PERSIST.max(plan.ttl)
    } else {
        Duration::ZERO
    };
    let end = move |l: &mut dyn baton_store::ledger::Records| {
        l.finish_run_after(&unrecorded, &finished, keep)
    };
    if let Err(e) = persist(env, ledger, within, end).await {
        tracing::warn!("{name} run={run_id}: its end was not recorded: {e}");
    }
    tracing::info!("{name} run={run_id} verdict={verdict}");
    let kind = match verdict {
        RunVerdict::Failed => Some(AlertKind::StepFailed),
        RunVerdict::CheckFailed => Some(AlertKind::CheckFailed),
        RunVerdict::LeaseLost => Some(AlertKind::LeaseLost),
        _ => None,
    };
    if let Some(kind) = kind {
        let alert = crate::Alert {
            job: name.clone(),
            kind,
            run_id: Some(run_id.to_owned()),
            occurrence: Some(occ),
            message: format!("run {run_id} of occurrence {occ} ended {verdict}"),
            time: env.clock.wall(),
        };
        crate::alert::raise(env, ledger, alert).await;
    }
    Some(kept)
}

/// How long a run's end is written again, at least, when a shared store's
/// ledger does not answer (the job's TTL when that is longer).
const PERSIST: Duration = Duration::from_secs(30);

/// Why the ledger never took a write [`persist`] made: the last try's
/// answer.
#[derive(Debug, thiserror::Error)]
enum Unpersisted {
    /// The ledger refused it.
    #[error(transparent)]
    Ledger(baton_store::ledger::Error),
    /// The ledger's blocking thread failed (the ledger is gone with it).
    #[error("the ledger's thread failed")]
    Thread,
}

/// Writes with `f` until the ledger takes it, for at most `within` on the
/// scheduler's boot clock, waiting 100 ms (doubling, at most 2 s) between
/// tries; the last error when it never did. `f` must be safe to repeat
/// (the ledger's end of a run is: an end recorded already is kept).
async fn persist(
    env: &Env,
    ledger: &mut Ledger,
    within: Duration,
    f: impl Fn(&mut dyn baton_store::ledger::Records) -> Result<(), baton_store::ledger::Error>
    + Send
    + Sync
    + 'static,
) -> Result<(), Unpersisted> {
    let f = Arc::new(f);
    let until = env.clock.boot().saturating_add(within);
    let mut wait = Duration::from_millis(100);
    loop {
        let g = Arc::clone(&f);
        let failed = match ledger.call(move |l| g(l)).await {
            Some(Ok(())) => return Ok(()),
            Some(Err(e)) => Unpersisted::Ledger(e),
            None => Unpersisted::Thread,
        };
        let now = env.clock.boot();
        if now >= until {
            return Err(failed);
        }
        timer::until_boot(&*env.clock, now.saturating_add(wait).min(until)).await;
        wait = (wait * 2).min(Duration::from_secs(2));
    }
}

/// Waits until `due` (boot clock: the run's start plus its `budget`), then
/// raises one `overrunning` alert; aborted when the run ends first.
/// Nothing is stopped.
async fn overrunning(
    env: Env,
    job: String,
    run_id: String,
    occ: Timestamp,
    (budget, due): (Duration, Duration),
) {
    timer::until_boot(&*env.clock, due).await;
    let Some(mut ledger) = Ledger::open(&env).await else {
        return;
    };
    let alert = crate::Alert {
        job,
        kind: AlertKind::Overrunning,
        message: format!(
            "run {run_id} of occurrence {occ} has run past its budget ({budget:?}); it goes on"
        ),
        run_id: Some(run_id),
        occurrence: Some(occ),
        time: env.clock.wall(),
    };
    crate::alert::raise(&env, &mut ledger, alert).await;
}

/// The oldest occurrence queued for one of the scheduler's jobs sharing
/// `plan`'s lock that no pause holds now, if any (`None` too when the
/// ledger cannot say: the queue then waits for a later holder).
async fn next_waiting(env: &Env, ledger: &mut Ledger, plan: &Plan) -> Option<(String, i64)> {
    let mates: Vec<String> = plan
        .mates
        .iter()
        // A command job's queue is drained by its own runner.
        .filter(|m| env.jobs.get(*m).is_some_and(|p| p.in_process()))
        .cloned()
        .collect();
    let now = env.clock.wall();
    let next = ledger
        .call(move |l| {
            let mates: Vec<&str> = mates.iter().map(String::as_str).collect();
            l.next_unpaused(&mates, now)
        })
        .await;
    match next {
        Some(Ok(next)) => next,
        Some(Err(e)) => {
            tracing::warn!("{}: the queue could not be read: {e}", plan.lock);
            None
        }
        None => None,
    }
}

/// Runs what waits in the queue of the scheduler's jobs sharing `plan`'s
/// lock, oldest first, each under the same lease restated to claim it
/// (`overlap = "queue"`), while the lease holds and the scheduler is not
/// shutting down. Returns the lease for its release; `None` when it is
/// gone (lost, or let go).
async fn drain(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    kept: Kept,
    tenure: &Tenure,
) -> Option<Kept> {
    let mut kept = kept;
    let mut last: Option<(String, i64)> = None;
    loop {
        if kept.lost.borrow().is_some() || env.shutdown.borrow().is_some() {
            return Some(kept);
        }
        let Some((job, at)) = next_waiting(env, ledger, plan).await else {
            return Some(kept);
        };
        if last.as_ref() == Some(&(job.clone(), at)) {
            // The ledger did not let go of it: stop rather than spin.
            tracing::warn!(
                "{job}: queued occurrence {at} could not be taken from the queue; left for a \
                 later holder"
            );
            return Some(kept);
        }
        last = Some((job.clone(), at));
        let (Some(mate), Some(run_id)) = (env.jobs.get(&job).cloned(), fresh_run_id(&job)) else {
            return Some(kept);
        };
        let occ = Timestamp::from_second(at).unwrap_or(Timestamp::UNIX_EPOCH);
        // A mate whose run goes on under another lock (replicas that
        // disagree on its lock): its queue waits for a later holder.
        let (m, fence) = (Arc::clone(&mate), tenure.fence);
        match blocking(env, move |s| s.take_guard(&lock_ref(&m), fence, None)).await {
            Some(Ok((Guard::Clear, _))) => {}
            Some(Ok((Guard::Elsewhere(refused), _))) => {
                tracing::info!(
                    "{job}: queued occurrence {occ} left in the queue: {}",
                    refused.why
                );
                return Some(kept);
            }
            Some(Ok((Guard::Claimed { .. }, _))) | Some(Err(_)) | None => {
                tracing::warn!(
                    "{job}: queued occurrence {occ} left in the queue: its guard could not be taken"
                );
                return Some(kept);
            }
        }
        let row = {
            let (name, at) = (job.clone(), at);
            match ledger.call(move |l| l.decision(&name, at)).await {
                Some(Ok(row)) => row,
                _ => {
                    // Whether it still waits is not known: it waits for a
                    // later holder, untouched.
                    tracing::warn!(
                        "{job}: the queue was left at occurrence {occ}: its record could not be read"
                    );
                    return Some(kept);
                }
            }
        };
        // Asked for (a backfill, or a run asked for now), not scheduled:
        // behind the claims on purpose, it claims nothing, as the command
        // line's backfill claims nothing.
        let backfill = row.as_ref().is_some_and(|d| d.requested());
        // Still waiting in the ledger: no run of it has started, since a
        // run starts only once its start turned this row `started`.
        let waiting = row.is_some_and(|d| d.decision == baton_store::ledger::Decision::Queued);
        let once = Once {
            key: job.clone(),
            at,
        };
        let sent = env.clock.boot();
        let held = kept.stop().await?;
        let label = (run_id.clone(), occ.to_string());
        let (mut held, mut restated) = restate(held, &label, (!backfill).then_some(once)).await?;
        let mut claimed = !backfill;
        if waiting && matches!(restated, Ok(Restated::Claimed { .. })) {
            // Overtaken: a later occurrence took the lock first, claiming
            // past it. The ledger's row, turned `started` under this lease
            // only if it still waits, is its record.
            (held, restated) = restate(held, &label, None).await?;
            claimed = false;
        }
        match restated {
            Ok(Restated::Done) => {
                kept = Kept::start(held, sent, Arc::clone(&env.clock));
                tracing::info!(
                    "{job} occurrence={occ}: run from the queue{}",
                    if backfill { " (a backfill)" } else { "" }
                );
                let this = Occurrence {
                    at,
                    backfill,
                    claimed,
                };
                kept = under_lease(env, ledger, &mate, this, &run_id, (kept, None), tenure).await?;
            }
            Ok(Restated::Claimed { .. }) => {
                // Claimed, and the ledger's row no longer waits: it ran,
                // or was decided. The ledger learns it, and the queue
                // moves on.
                kept = Kept::start(held, sent, Arc::clone(&env.clock));
                let now = env.clock.wall();
                let detail = "the lock's claim says it started already".to_owned();
                let name = job.clone();
                let _ = ledger
                    .call(move |l| l.claimed(&name, at, &detail, now))
                    .await;
            }
            Ok(Restated::Lost(why) | Restated::Unconfirmed(why)) => {
                tracing::warn!("{job}: the queue was left: the lease was not restated: {why}");
                let _ = tokio::task::spawn_blocking(move || held.release()).await;
                return None;
            }
            Err(e) => {
                tracing::warn!("{job}: the queue was left: the lease was not restated: {e}");
                let _ = tokio::task::spawn_blocking(move || held.release()).await;
                return None;
            }
        }
    }
}

/// Restates `held` to run `label` (run id, occurrence) and claim `once`;
/// `None` when the store's thread failed (the lease is gone with it).
async fn restate(
    mut held: Box<dyn baton_store::Held>,
    label: &(String, String),
    once: Option<Once>,
) -> Option<(
    Box<dyn baton_store::Held>,
    Result<Restated, baton_store::HeldError>,
)> {
    let (run, occ) = label.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let r = held.restate(Some(run), Some(occ), once.as_ref());
        (held, r)
    })
    .await;
    if answer.is_err() {
        tracing::warn!(
            "the queue was left at occurrence {}: the store's thread failed",
            label.1
        );
    }
    answer.ok()
}

/// Takes `plan`'s lock, claiming no occurrence, to run what waits in the
/// queue, when something does; a lock held by another run is left alone
/// (its holder looks at the queue before and after its release).
pub(crate) async fn drain_fresh(env: &Env, plan: &Arc<Plan>) {
    let Some(mut ledger) = Ledger::open(env).await else {
        return;
    };
    if env.shutdown.borrow().is_some() || next_waiting(env, &mut ledger, plan).await.is_none() {
        return;
    }
    let claim = Claim {
        mates: plan.mates.clone(),
        ..Claim::default()
    };
    let sent = env.clock.boot();
    let p = Arc::clone(plan);
    let taken = blocking(env, move |s| s.try_acquire(&lock_ref(&p), &claim)).await;
    let Some(Ok(Taken::Acquired(held))) = taken else {
        return;
    };
    let tenure = Tenure::of(held.as_ref());
    let kept = Kept::start(held, sent, Arc::clone(&env.clock));
    if let Some(kept) = drain(env, &mut ledger, plan, kept, &tenure).await {
        release(kept, &plan.name).await;
    }
}

/// Releases a lease whose run is over.
async fn release(kept: Kept, name: &str) {
    let Some(held) = kept.stop().await else {
        return;
    };
    let answer = tokio::task::spawn_blocking(move || held.release()).await;
    match answer {
        Ok(Ok(baton_store::Release::Released)) => {}
        Ok(Ok(other)) => tracing::info!("{name}: the lease was not released: {other:?}"),
        Ok(Err(e)) => tracing::warn!("{name}: failed to release the lease: {e}"),
        Err(_) => tracing::warn!("{name}: failed to release the lease: its thread failed"),
    }
}

/// What a run's take of its job's guard claimed, to take back when the
/// run does not start after all (`Store::withdraw_guard`): else a run of
/// the job under another lock would find the occurrence claimed by the
/// guard, and neither run it nor record it missed.
struct GuardBack {
    store: Opened,
    plan: Arc<Plan>,
    claim: GuardClaim,
}

impl GuardBack {
    /// Takes the claim back (on a blocking thread: the store's calls may
    /// block); a failure is said, and the guard keeps its claim.
    fn take_back(self) {
        if let Err(e) = self
            .store
            .withdraw_guard(&lock_ref(&self.plan), &self.claim)
        {
            tracing::warn!(
                "{}: failed to take back the claim of its guard: {e}",
                self.plan.name
            );
        }
    }
}

/// As [`let_go`]; when `withdraw` and the run took its job's guard
/// (`back`), the guard's claim is taken back after the lease's.
async fn let_go_back(kept: Kept, name: &str, at: i64, withdraw: bool, back: Option<GuardBack>) {
    let_go(kept, name, at, withdraw).await;
    if let Some(back) = back.filter(|_| withdraw) {
        let _ = tokio::task::spawn_blocking(move || back.take_back()).await;
    }
}

/// Lets go of a lease no run used; its claim of `at` is taken back first
/// when `withdraw` (the run never started, and nothing says it did).
async fn let_go(kept: Kept, name: &str, at: i64, withdraw: bool) {
    if withdraw {
        let Some(mut held) = kept.stop().await else {
            return;
        };
        let once = Once {
            key: name.to_owned(),
            at,
        };
        let _ = tokio::task::spawn_blocking(move || {
            let _ = held.withdraw(&once);
            held.release()
        })
        .await;
    } else {
        release(kept, name).await;
    }
}

/// Whether a pause set with `baton pause` (or through the ledger's
/// [`Records::pause`](baton_store::ledger::Records::pause)) covers occurrence `at`; if so, it is recorded missed
/// `paused`, once across replicas. Read with the lease held, so a pause set
/// before any replica took the lease for `at` keeps `at` from running.
/// `None` when the pauses cannot be read: the occurrence does not run (it
/// cannot be known not to be paused) and nothing is recorded.
async fn paused(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    at: i64,
    occ: Timestamp,
    pauses: Result<Vec<baton_store::ledger::PauseRow>, baton_store::ledger::Error>,
) -> Option<bool> {
    // A newer pause ends the one before it, so the newest few (the caller
    // reads 3) hold any that covers an occurrence due moments ago.
    let pauses = match pauses {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(
                "{} occurrence={occ}: not run: its pauses could not be read: {e}",
                plan.name
            );
            return None;
        }
    };
    let Some(pause) = pauses.into_iter().find(|p| p.covers(occ)) else {
        return Some(false);
    };
    let detail = format!(
        "paused by {} since {}{}",
        pause.who,
        pause.since,
        pause
            .reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    );
    miss(env, ledger, plan, at, MissReason::Paused, detail).await;
    Some(true)
}

/// The lock was free, but the job had claimed `at` or a later occurrence
/// (`claimed`): another replica ran it. In a shared store, a claim whose
/// start the ledger never recorded did not run: it is recorded missed
/// (`ledger-unavailable`), once.
async fn claimed_already(env: &Env, plan: &Plan, at: i64, claimed: i64) {
    if !env.store.shared() {
        return;
    }
    let Some(mut ledger) = Ledger::open(env).await else {
        return;
    };
    let name = plan.name.clone();
    let undecided = ledger.call(move |l| l.decision(&name, at)).await;
    if !matches!(undecided, Some(Ok(None))) {
        return;
    }
    let detail = if claimed == at {
        "claimed by a run whose start the ledger never recorded; it did not run".to_owned()
    } else {
        format!("a later occurrence ({claimed}) was claimed before it; it did not run")
    };
    miss(
        env,
        &mut ledger,
        plan,
        at,
        MissReason::LedgerUnavailable,
        detail,
    )
    .await;
}

/// Someone holds the lock: quiet when the holder runs this occurrence (or a
/// later one), else the occurrence is missed for the holder's state.
async fn refused_lock(env: &Env, plan: &Arc<Plan>, at: i64, refused: Refused) {
    if refused
        .holder
        .as_ref()
        .and_then(|h| h.claim(&plan.name))
        .is_some_and(|c| c >= at)
    {
        return; // Another replica runs it now.
    }
    let Some(mut ledger) = Ledger::open(env).await else {
        return;
    };
    if plan.overlap == crate::Overlap::Queue && refused.reason == MissReason::Busy {
        return queue_behind(env, &mut ledger, plan, at).await;
    }
    miss(env, &mut ledger, plan, at, refused.reason, refused.why).await;
}

/// `overlap = "queue"`: occurrence `at` waits in the ledger's queue for the
/// run in flight (or joins the one already waiting), decided once across
/// replicas; then the lock is tried once more, in case the holder let it go
/// before it could see the queue.
async fn queue_behind(env: &Env, ledger: &mut Ledger, plan: &Arc<Plan>, at: i64) {
    let name = plan.name.clone();
    let now = env.clock.wall();
    let occ = Timestamp::from_second(at).unwrap_or(Timestamp::UNIX_EPOCH);
    match ledger
        .call(move |l| l.enqueue(&name, &[at], true, now))
        .await
    {
        Some(Ok(Queued::Queued)) => {
            tracing::info!(
                "{} occurrence={occ} queued: the job's run is in flight",
                plan.name
            );
        }
        Some(Ok(Queued::Coalesced { into })) => {
            tracing::info!(
                "{} occurrence={occ} coalesced into the waiting occurrence {into}",
                plan.name
            );
            return;
        }
        // Decided by another replica already.
        Some(Ok(Queued::Moved)) => return,
        Some(Err(e)) => {
            tracing::warn!(
                "{} occurrence={occ}: not run: it could not be queued: {e}",
                plan.name
            );
            return;
        }
        None => return,
    }
    drain_fresh(env, plan).await;
}

/// Records occurrence `at` missed for `reason`, once across replicas.
async fn miss(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    at: i64,
    reason: MissReason,
    detail: String,
) {
    missed_range(env, ledger, &plan.name, (at, at, 1, false), reason, detail).await;
}

/// Records the range `(first, last, count, at_least)` of `job`'s
/// occurrences missed (`at_least`: the count is a lower bound).
pub(crate) async fn missed_range(
    env: &Env,
    ledger: &mut Ledger,
    job: &str,
    (first, last, count, at_least): (i64, i64, u64, bool),
    reason: MissReason,
    detail: String,
) {
    let now = env.clock.wall();
    let name = job.to_owned();
    let recorded = ledger
        .call(move |l| {
            let m = Miss {
                job: &name,
                reason,
                first,
                last,
                count,
                at_least,
                detail: Some(&detail),
                // A pause's misses extend one range, as the command line's.
                streak: reason.is_deliberate(),
            };
            l.miss(&m, now).map(|r| (r, detail))
        })
        .await;
    match recorded {
        Some(Ok((Missed::Recorded, detail))) if reason.is_deliberate() => {
            tracing::info!("{job}: occurrence {first} not run ({reason}): {detail}");
        }
        Some(Ok((Missed::Recorded, detail))) => {
            let occurrence = Timestamp::from_second(first).ok();
            let from = occurrence.map_or_else(|| first.to_string(), |t| t.to_string());
            let alert = crate::Alert {
                job: job.to_owned(),
                kind: reason.alert_kind(),
                run_id: None,
                occurrence,
                message: format!(
                    "{}{count} occurrence{} from {from} missed ({reason}): {detail}",
                    if at_least { "at least " } else { "" },
                    if count == 1 { "" } else { "s" }
                ),
                time: now,
            };
            crate::alert::raise(env, ledger, alert).await;
        }
        Some(Ok(_)) => {} // Decided by another replica.
        Some(Err(e)) => tracing::warn!("{job}: a missed occurrence was not recorded: {e}"),
        None => {}
    }
}

/// The job's runs the ledger calls running that can no longer end on
/// their own: under a lower fence (this run holds the lock now, so their
/// lease moved on and their replica self-fenced or died), or of a process
/// on this host that is gone. They are recorded `abandoned`, as the command
/// line records them.
async fn abandon_the_dead(
    ledger: &mut Ledger,
    env: &Env,
    plan: &Plan,
    (host, fence): (&str, u64),
    unfinished: Result<Vec<baton_store::ledger::RunRow>, baton_store::ledger::Error>,
) {
    let unfinished = match unfinished {
        Ok(runs) => runs,
        Err(e) => {
            tracing::warn!("failed to record abandoned runs: {e}");
            return;
        }
    };
    let dead: Vec<String> = unfinished
        .into_iter()
        .filter(|run| {
            let here = run.host.as_deref().is_none_or(|h| h == host);
            let gone = run
                .pid
                .is_none_or(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists());
            let superseded = run.fence.is_some_and(|f| f < fence);
            superseded || (here && gone)
        })
        .map(|run| run.run_id)
        .collect();
    if dead.is_empty() {
        return;
    }
    let job = plan.name.clone();
    let keep = plan.history_keep;
    let now = env.clock.wall();
    let ended = ledger
        .call(move |l| {
            for run_id in &dead {
                let finished = Finished {
                    run_id: run_id.clone(),
                    job: job.clone(),
                    finished: now,
                    verdict: RunVerdict::Abandoned,
                    exit_code: 125,
                    success: false,
                };
                l.finish_run(&finished, keep)?;
            }
            Ok::<_, baton_store::ledger::Error>(dead)
        })
        .await;
    match ended {
        Some(Ok(ended)) => {
            for run in ended {
                tracing::info!("run={run} abandoned: its lease moved on or its process is gone");
            }
        }
        Some(Err(e)) => tracing::warn!("failed to record abandoned runs: {e}"),
        None => {}
    }
}

/// The attempts of one run.
struct Attempts<'a> {
    env: &'a Env,
    plan: &'a Plan,
    ledger: &'a mut Ledger,
    run_id: &'a str,
    fence: u64,
    /// The lease, for the contexts' watermark.
    lease: Arc<crate::context::Lease>,
    occ: Timestamp,
    lost: watch::Receiver<Option<String>>,
    /// Attempts recorded so far, the checks' included.
    seq: u32,
    /// The attempts the ledger did not take as they ended, recorded with
    /// the run's end.
    unrecorded: &'a mut Vec<Attempt>,
}

/// How one attempt ended.
enum Ended {
    /// The function returned; `cancelled` when it was asked to stop first.
    Returned(Result<(), JobError>, Option<Cancel>),
    /// It did not return within the grace after being asked to stop: its
    /// future was dropped.
    Dropped(Cancel),
}

impl Attempts<'_> {
    /// Runs the attempts, then the checks; the run's verdict.
    async fn run(mut self) -> RunVerdict {
        let verdict = self.steps().await;
        if !matches!(verdict, RunVerdict::Ok | RunVerdict::Failed) {
            return verdict; // Stopped: nothing more of it may run.
        }
        let mut check_failed = false;
        for check in &self.plan.checks {
            match self.check(check).await {
                Ok(ok) => check_failed |= !ok,
                Err(stopped) => return stopped,
            }
        }
        // A step's failure is kept over a check's.
        match verdict {
            RunVerdict::Ok if check_failed => RunVerdict::CheckFailed,
            v => v,
        }
    }

    /// Runs one check once, never retried: whether it passed, or the
    /// verdict of a run stopped meanwhile.
    async fn check(&mut self, check: &crate::job::Check) -> Result<bool, RunVerdict> {
        if self.lost.borrow().is_some() {
            return Err(RunVerdict::LeaseLost);
        }
        let (cancel_tx, cancel_rx) = watch::channel(None);
        let ctx = RunContext {
            job: self.plan.name.clone(),
            run_id: self.run_id.to_owned(),
            fence: self.fence,
            occurrence: self.occ,
            attempt: 1,
            cancel: cancel_rx,
            lease: Arc::clone(&self.lease),
        };
        let started = self.env.clock.wall();
        let ended = self.supervise((check.run)(ctx), &cancel_tx).await;
        let outcome = match &ended {
            Ended::Returned(Ok(()), _) => AttemptOutcome::Ok,
            Ended::Returned(_, Some(Cancel::Timeout)) | Ended::Dropped(Cancel::Timeout) => {
                AttemptOutcome::Timeout
            }
            Ended::Returned(Err(_), Some(c)) | Ended::Dropped(c) => {
                let (o, v) = stopped(*c);
                self.record(&check.name, StepKind::Check, 1, started, o)
                    .await;
                return Err(v);
            }
            Ended::Returned(Err(e), None) => {
                tracing::warn!(
                    "{} run={} check {} failed: {e}",
                    self.plan.name,
                    self.run_id,
                    check.name
                );
                AttemptOutcome::Failed
            }
        };
        self.record(&check.name, StepKind::Check, 1, started, outcome)
            .await;
        Ok(outcome == AttemptOutcome::Ok)
    }

    /// Runs the job's function, retried as its rule says; its verdict
    /// (`Ok` or `Failed` when it ran to an end).
    async fn steps(&mut self) -> RunVerdict {
        let (cancel_tx, cancel_rx) = watch::channel(None);
        let mut attempt = 0;
        loop {
            attempt += 1;
            if self.lost.borrow().is_some() {
                return RunVerdict::LeaseLost; // Nothing more of it may run.
            }
            let ctx = RunContext {
                job: self.plan.name.clone(),
                run_id: self.run_id.to_owned(),
                fence: self.fence,
                occurrence: self.occ,
                attempt,
                cancel: cancel_rx.clone(),
                lease: Arc::clone(&self.lease),
            };
            let started = self.env.clock.wall();
            // A timeout asked the previous attempt to stop, not this one.
            cancel_tx.send_replace(None);
            let crate::plan::Work::Function(run) = &self.plan.work else {
                // A command job's runs are its runner's (`child.rs`).
                return RunVerdict::Failed;
            };
            let ended = self.supervise(run(ctx), &cancel_tx).await;
            // A retry's backoff counts from here, before anything is recorded.
            let ended_at = self.env.clock.boot();
            let (outcome, verdict, never) = match &ended {
                // Its own word stands: it finished, even after being asked
                // to stop (its writes are the fence's to judge).
                Ended::Returned(Ok(()), _) => (AttemptOutcome::Ok, Some(RunVerdict::Ok), false),
                // Past its limit, with the lease still held: a failed
                // attempt, retried as one.
                Ended::Returned(Err(e), Some(Cancel::Timeout)) => {
                    tracing::warn!(
                        "{} run={} attempt {attempt} timed out: {e}",
                        self.plan.name,
                        self.run_id
                    );
                    (AttemptOutcome::Timeout, None, e.is_never_retry())
                }
                Ended::Dropped(Cancel::Timeout) => {
                    tracing::warn!(
                        "{} run={} attempt {attempt} timed out and was dropped",
                        self.plan.name,
                        self.run_id
                    );
                    (AttemptOutcome::Timeout, None, false)
                }
                // An error after the cancellation is the cancellation's.
                Ended::Returned(Err(_), Some(c)) | Ended::Dropped(c) => {
                    let (o, v) = stopped(*c);
                    (o, Some(v), true)
                }
                Ended::Returned(Err(e), None) => {
                    tracing::warn!(
                        "{} run={} attempt {attempt} failed: {e}",
                        self.plan.name,
                        self.run_id
                    );
                    (AttemptOutcome::Failed, None, e.is_never_retry())
                }
            };
            let step = self.plan.name.clone();
            self.record(&step, StepKind::Step, attempt, started, outcome)
                .await;
            if let Some(v) = verdict {
                return v;
            }
            let Some(delay) = self.plan.retry.next(attempt, never) else {
                return RunVerdict::Failed;
            };
            if let Some(c) = self.wait(ended_at + delay).await {
                return stopped(c).1;
            }
        }
    }

    /// Runs one attempt's future as a task of its own: to its end, or,
    /// once the run is asked to stop, for at most the grace before the task
    /// is aborted (and awaited: nothing of it runs once this returns, but a
    /// blocking section delays that; see the crate's "Self-fencing"). A
    /// panic fails the attempt.
    async fn supervise(
        &mut self,
        fut: crate::job::RunFuture,
        cancel: &watch::Sender<Option<Cancel>>,
    ) -> Ended {
        let clock = Arc::clone(&self.env.clock);
        // The limit counts from before the function is first polled.
        let limit = self.plan.timeout.map(|t| clock.boot() + t);
        let mut task = Task(tokio::spawn(fut));
        let mut shutdown = self.env.shutdown.clone();
        let mut lost = self.lost.clone();
        let (why, grace) = tokio::select! {
            // A function that is done when asked to stop ended on its own.
            biased;
            r = &mut task.0 => return Ended::Returned(joined(r), None),
            _ = lost.wait_for(Option::is_some) => (Cancel::LeaseLost, self.plan.grace),
            g = shutdown.wait_for(Option::is_some) => {
                let g = g.ok().and_then(|g| *g).unwrap_or_default();
                (Cancel::Shutdown, g)
            }
            () = timer::until_boot(&*clock, limit.unwrap_or_default()), if limit.is_some() => {
                (Cancel::Timeout, self.plan.grace)
            }
        };
        // The grace counts from before the request, which the function
        // may act on at once.
        let mut deadline = clock.boot() + grace;
        let _ = cancel.send(Some(why));
        let mut why = why;
        let why = loop {
            tokio::select! {
                biased;
                r = &mut task.0 => return Ended::Returned(joined(r), Some(why)),
                () = timer::until_boot(&*clock, deadline) => break why,
                _ = lost.wait_for(Option::is_some), if why != Cancel::LeaseLost => {
                    // Lost during a shutdown's grace: the lease's grace bounds it now.
                    why = Cancel::LeaseLost;
                    deadline = deadline.min(clock.boot() + self.plan.grace);
                    let _ = cancel.send(Some(why));
                }
            }
        };
        task.0.abort();
        // An aborted task stops at its next `.await`; one that does not
        // within another grace is in a blocking section, which nothing here
        // can stop: said, and still waited for.
        let again = clock.boot() + self.plan.grace;
        let gone = tokio::select! {
            _ = &mut task.0 => true,
            () = timer::until_boot(&*clock, again) => false,
        };
        if !gone {
            tracing::error!(
                "{} run={}: its function was aborted but has not stopped: it runs a blocking \
                 section, unfenced but for the fence its writes carry; waiting for it",
                self.plan.name,
                self.run_id
            );
            let _ = (&mut task.0).await;
        }
        Ended::Dropped(why)
    }

    /// Waits until `at` (boot clock) before a retry; the reason when the
    /// run is asked to stop meanwhile (no retry then).
    async fn wait(&mut self, at: Duration) -> Option<Cancel> {
        let clock = Arc::clone(&self.env.clock);
        let mut shutdown = self.env.shutdown.clone();
        let mut lost = self.lost.clone();
        tokio::select! {
            () = timer::until_boot(&*clock, at) => None,
            _ = lost.wait_for(Option::is_some) => Some(Cancel::LeaseLost),
            _ = shutdown.wait_for(Option::is_some) => Some(Cancel::Shutdown),
        }
    }

    /// Records one attempt of `step` (the job's one step, named after the
    /// job as the command line names the step of a job with a single `run`,
    /// so `baton status` shows it; or a check, named as declared).
    async fn record(
        &mut self,
        step: &str,
        kind: StepKind,
        attempt: u32,
        started: Timestamp,
        outcome: AttemptOutcome,
    ) {
        self.seq += 1;
        let a = Attempt {
            run_id: self.run_id.to_owned(),
            job: self.plan.name.clone(),
            seq: self.seq,
            step: step.to_owned(),
            kind,
            attempt,
            started,
            finished: self.env.clock.wall(),
            // The command line's codes: 124 for a timeout, as timeout(1).
            exit_code: Some(match outcome {
                AttemptOutcome::Ok => 0,
                AttemptOutcome::Timeout => 124,
                _ => 1,
            }),
            signal: None,
            outcome,
        };
        let kept = a.clone();
        match self.ledger.call(move |l| l.record_attempt(&a)).await {
            Some(Ok(())) => {}
            failed => {
                if let Some(Err(e)) = failed {
                    tracing::warn!(
                        "{}: an attempt was not recorded yet (it is, with the run's end): {e}",
                        self.plan.name
                    );
                }
                self.unrecorded.push(kept);
            }
        }
    }
}

/// An attempt's task, aborted if it is dropped before it ended (the run
/// itself was dropped, with its runtime).
struct Task(tokio::task::JoinHandle<Result<(), JobError>>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What an attempt's task came to: its function's result, or a failure
/// for a panic.
fn joined(r: Result<Result<(), JobError>, tokio::task::JoinError>) -> Result<(), JobError> {
    match r {
        Ok(r) => r,
        Err(e) if e.is_panic() => {
            let payload = e.into_panic();
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            Err(JobError::msg(format!(
                "the job's function panicked: {text}"
            )))
        }
        Err(_) => Err(JobError::msg("the job's task was cancelled")),
    }
}

/// What a run stopped for `c` is recorded as: its attempt, its verdict.
fn stopped(c: Cancel) -> (AttemptOutcome, RunVerdict) {
    match c {
        Cancel::LeaseLost => (AttemptOutcome::LeaseLost, RunVerdict::LeaseLost),
        Cancel::Shutdown => (AttemptOutcome::Interrupted, RunVerdict::Interrupted),
        // Not reached: a timeout is the attempt's, not the run's.
        Cancel::Timeout => (AttemptOutcome::Timeout, RunVerdict::Failed),
    }
}
