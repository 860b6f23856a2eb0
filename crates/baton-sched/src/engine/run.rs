//! Runs of a job under its lease: scheduled (`tick`), by hand (`run`),
//! from the queue, or a backfill; what a refused lock means; and draining
//! the queue before the lease is let go.
//!
//! The order is the guarantee:
//!
//! 1. take the job's lease, claiming a scheduled occurrence in the same
//!    critical section (`baton_lease::Once`): an occurrence already claimed,
//!    or one a live holder is running now, ends here quietly; a lock held by
//!    another run waits in the queue (`overlap = "queue"`; with `"replace"`
//!    it also asks that run, when it is the job's own, to stop:
//!    `engine::replace`) or is missed (`busy`); a hung, orphaned
//!    or foreign holder is missed, decided once in the ledger (the process
//!    that records the decision alerts; the others stay quiet);
//!    Before the lease, and again under it, the job's guard is read and
//!    then taken ([`crate::store::Store::take_guard`]): a job whose run
//!    under another lock (its former one) is in flight is refused as that
//!    lock's holder would refuse it, and one that claimed this occurrence
//!    there ends quietly;
//! 2. record `started` in the ledger while holding the lease, before the
//!    first step; an occurrence the ledger already decided ends there;
//! 3. run the steps and checks ([`crate::engine::steps`]) and record the
//!    verdict; a run of a job with `overlap = "replace"` listens for a
//!    request that it stop, and is then stopped as a lost lease stops it,
//!    keeping the lease for the queue;
//! 4. before releasing, run what waits in the queue of every job sharing the
//!    lock, oldest first, each restating the lease's claim; after
//!    releasing, look once more, because an occurrence may have been queued
//!    between the last look and the release (`DESIGN.md`, "The queue"),
//!    unless the store's release itself said that nothing waits
//!    ([`baton_store::Held::release_peeking`]).
//!
//! Outcomes ([`Outcome`]): done for success or nothing to do, failed for a
//! failure or a missed occurrence (an alert was raised), unable when the
//! lock cannot be used at all.

use std::cell::RefCell;
use std::rc::Rc;

use baton_lease::Once;
use baton_runner::{Finish, Session, SessionConfig};
use baton_store::words::{AlertKind, MissReason};
use baton_store::{Held, Restated};

use crate::config::{Config, Job};
use crate::engine::alerts::HolderInfo;
use crate::engine::steps::{self, Events};
use crate::engine::surfaces::Surfaces;
use crate::outcome::Outcome;
use crate::store::{Guard, Refused, Taken};

use crate::engine::request::drainable;
pub(crate) use crate::engine::request::{Context, owned_mates};
pub use crate::engine::request::{
    Request, Start, Teller, Told, lock_for, lock_label, lock_mates, occurrence_text,
};

/// The outcome of a command whose ledger failed it: [`Outcome::Unable`]
/// when the configuration cannot be honoured (its shared store cannot be
/// used, or a newer baton wrote its ledger, which nothing may read or
/// decide from until baton is upgraded), else [`Outcome::Failed`]. Every
/// command that opens the ledger maps its failure through this one rule.
pub fn ledger_failed(config: &Config, e: &baton_store::ledger::Error) -> Outcome {
    if crate::store::shared(config) || e.is_newer_schema() {
        Outcome::Unable
    } else {
        Outcome::Failed
    }
}

/// How many times one process takes the lease again after its release to
/// run what was queued meanwhile.
const RETAKES: u32 = 8;

fn tell(req: &Request<'_>, t: Told) {
    if let Some(teller) = req.teller {
        teller.tell(&t);
    }
}

/// The oldest occurrence queued for one of `mates` that no pause holds now
/// (a paused job's queue waits for the resume), read in one call.
fn next_queued(mates: &[&str], surfaces: &Rc<RefCell<Surfaces>>) -> Option<(String, i64)> {
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    s.ledger(|l| l.next_unpaused(mates, now)).flatten()
}

fn fresh_run_id(job: &Job, surfaces: &Rc<RefCell<Surfaces>>) -> Option<String> {
    match baton_lease::Token::fresh() {
        Ok(t) => Some(t.to_string()),
        Err(e) => {
            surfaces.borrow_mut().warn(&format!(
                "{}: failed to read random bytes for a run id: {e}",
                job.name
            ));
            None
        }
    }
}

/// Runs `req` to its end, and whatever waits in the queue after it; returns
/// the worst outcome.
pub fn run(req: &Request<'_>, surfaces: &Rc<RefCell<Surfaces>>) -> Outcome {
    let job = req.job;
    let store = match crate::store::open(req.config) {
        Ok(s) => s,
        Err(e) => {
            let message = format!("{}: not run: {e}", job.name);
            surfaces.borrow_mut().warn(&message);
            tell(req, Told::Error { message });
            return Outcome::Unable;
        }
    };
    if surfaces.borrow().refuses_runs() {
        // Said when the ledger failed to open: no run starts before its
        // start is recorded (in the shared store, a run it cannot record
        // could run an occurrence another host has decided otherwise; a
        // ledger whose files are refused could have been written by
        // another user).
        tell(
            req,
            Told::Error {
                message: format!("{}: not run: the ledger is unavailable", job.name),
            },
        );
        return Outcome::Unable;
    }
    // The job's output log is checked before the lease is taken: refused
    // now, the occurrence stays due and nothing is lost; refused later, the
    // output of a run under way would be.
    let checked = surfaces.borrow_mut().check_job_log(&job.name);
    if let Err(e) = checked {
        let message = format!("{}: not run: {e}", job.name);
        surfaces.borrow_mut().warn(&message);
        tell(req, Told::Error { message });
        return Outcome::Unable;
    }
    let Some(run_id) = fresh_run_id(job, surfaces) else {
        tell(
            req,
            Told::Error {
                message: "failed to read random bytes for a run id".into(),
            },
        );
        return Outcome::Unable;
    };
    let occurrence = req.start.occurrence();
    let mut ctx = Context {
        job: job.name.clone(),
        occurrence: occurrence_text(occurrence),
        run_id: run_id.clone(),
        lock: store.lock_label(&job.lock_ref()),
        name: job.lock.value.clone(),
        fence: None,
        slot: 1,
        guard: None,
    };
    let claim = baton_lease::Claim {
        run: (req.start != Start::Queue).then(|| run_id.clone()),
        occ: (req.start != Start::Queue).then(|| ctx.occurrence.clone()),
        budget: job.policy.max_runtime.value,
        once: occurrence.map(|at| Once {
            key: job.name.clone(),
            at,
        }),
        mates: owned_mates(req.config, job),
    };
    if req.start != Start::Queue {
        // The common case of a job whose lock was changed while it ran:
        // refused before the new lock is taken (and its occurrence claimed).
        match store.runs_elsewhere(&job.lock_ref(), occurrence) {
            Ok(Guard::Clear) => {}
            Ok(Guard::Elsewhere(refused)) => {
                return refused_lock(req, &ctx, (&refused, None), true, surfaces);
            }
            Ok(Guard::Claimed { .. }) if another_slot_held(req.config, job, 0) => {
                return left_to_another_slot(req, surfaces);
            }
            Ok(Guard::Claimed { at }) => {
                return claimed_already(req, at, "the job's guard", surfaces);
            }
            Err(e) => return cannot(req, &format!("{}: not run: {e}", job.name), surfaces),
        }
    }
    // The slot the last try ended at ([`crate::engine::slots`]).
    let mut slot = 1;
    // A run of its own takes the job's guard once it holds the lease; a
    // start from the queue does not.
    let guarding = req.start != Start::Queue;
    let mut acquire = || {
        crate::engine::slots::try_acquire(store.as_ref(), job, &claim, guarding).map(|t| {
            slot = t.slot;
            t.taken
        })
    };
    let first = acquire();
    // Kept until the run reserves its end slot, under the lease below.
    let mut spare = None;
    let taken = if req.start == Start::Manual {
        // A run by hand replaces the job's run in flight, and waits for it.
        crate::engine::replace::wait_replacing(
            req.config,
            job,
            first,
            &mut acquire,
            &mut spare,
            surfaces,
        )
    } else {
        first
    };
    let outcome = match taken {
        Ok(o) => o,
        Err(e) => {
            surfaces
                .borrow_mut()
                .warn(&format!("{}: not run: {e}", job.name));
            tell(
                req,
                Told::Error {
                    message: format!("{}: not run: {e}", job.name),
                },
            );
            return Outcome::Unable;
        }
    };
    match outcome {
        Taken::Acquired(lease) => {
            ctx.slot = slot;
            ctx.lock = store.lock_label(&job.slot_ref(slot));
            if req.start != Start::Queue {
                // Under the lease, before anything runs: the job's guard
                // decides between two runs of it under two locks at once.
                match store.take_guard(&job.slot_ref(slot), lease.fence(), occurrence) {
                    Ok((Guard::Clear, claim)) => ctx.guard = claim,
                    Ok((Guard::Elsewhere(refused), _)) => {
                        let_go_unused(lease, &job.name, occurrence);
                        return refused_lock(req, &ctx, (&refused, None), false, surfaces);
                    }
                    Ok((Guard::Claimed { at }, _)) => {
                        let_go_unused(lease, &job.name, occurrence);
                        if another_slot_held(req.config, job, slot) {
                            return left_to_another_slot(req, surfaces);
                        }
                        return claimed_already(req, at, "the job's guard", surfaces);
                    }
                    Err(e) => {
                        let_go_unused(lease, &job.name, occurrence);
                        return cannot(req, &format!("{}: not run: {e}", job.name), surfaces);
                    }
                }
            }
            fail::fail_point!("claim");
            tell(
                req,
                Told::Started {
                    run_id: claim.run.clone().unwrap_or_default(),
                    fence: lease.fence(),
                },
            );
            let first = (req.start != Start::Queue).then_some(First {
                ctx,
                start: req.start,
                restate: false,
            });
            hold(req, (lease, slot), first.into_iter().collect(), surfaces)
        }
        Taken::Claimed { .. } if another_slot_held(req.config, job, slot) => {
            left_to_another_slot(req, surfaces)
        }
        Taken::Claimed { at } => match occurrence {
            Some(occ) if store.shared() => {
                tell(req, Told::Claimed);
                claimed_unstarted(req, &ctx, occ, at, surfaces)
            }
            _ => claimed_already(req, at, "the lock's claim", surfaces),
        },
        Taken::Refused(refused) => refused_lock(req, &ctx, (&refused, Some(slot)), true, surfaces),
    }
}

/// Lets go of a lease the job's guard kept from being used: its claim of
/// `occurrence` is taken back first, since the run never started. A claim
/// left in the lock's record would tell every later tick that the
/// occurrence started, and it would be neither run nor recorded missed.
/// (A claim its store cannot take back, not answering, stays, and the
/// ledger decides there.)
fn let_go_unused(mut lease: Box<dyn Held>, job: &str, occurrence: Option<i64>) {
    if let Some(at) = occurrence {
        let once = Once {
            key: job.to_owned(),
            at,
        };
        let _ = lease.withdraw(&once);
    }
    let _ = lease.release();
}

/// In the shared store, a claim of `occ` (or of the later `at`) that the
/// lease row holds but the ledger never recorded a start for: no run starts
/// there without its start recorded, so the occurrence did not run. It is
/// recorded missed (`ledger-unavailable`) and alerted, once; an occurrence
/// the ledger did decide ends here quietly.
fn claimed_unstarted(
    req: &Request<'_>,
    ctx: &Context,
    occ: i64,
    at: i64,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let job = req.job;
    let mut s = surfaces.borrow_mut();
    let Some(None) = s.ledger(|l| l.decision(&job.name, occ)) else {
        return Outcome::Done; // Decided (or the ledger cannot say): nothing to add.
    };
    let now = s.now();
    let detail = if at == occ {
        format!(
            "claimed through {} by a run whose start the ledger never recorded; it did not run",
            ctx.lock
        )
    } else {
        format!(
            "a later occurrence ({}) was claimed through {} before it; it did not run",
            occurrence_text(Some(at)),
            ctx.lock
        )
    };
    let miss = baton_store::ledger::Miss {
        job: &job.name,
        reason: MissReason::LedgerUnavailable,
        first: occ,
        last: occ,
        count: 1,
        at_least: false,
        detail: Some(&detail),
        streak: false,
    };
    if s.ledger(|l| l.miss(&miss, now)) != Some(baton_store::ledger::Missed::Recorded) {
        return Outcome::Done;
    }
    let mut alert = ctx.alert(
        AlertKind::Missed,
        now,
        None,
        format!(
            "{}: occurrence {} missed (ledger-unavailable): {detail}",
            job.name, ctx.occurrence
        ),
    );
    alert.run_id = None;
    alert.reason = Some(MissReason::LedgerUnavailable.to_string());
    alert.missed = Some(crate::engine::alerts::MissedInfo::one(
        &ctx.occurrence,
        MissReason::LedgerUnavailable,
    ));
    s.alert(&alert);
    Outcome::Failed
}

/// With slots, an occurrence claimed already while another slot is held:
/// that slot's holder runs it (or ran it), or, having claimed it, is about
/// to record its start; nothing is recorded here ([`another_slot_held`]).
fn left_to_another_slot(req: &Request<'_>, surfaces: &Rc<RefCell<Surfaces>>) -> Outcome {
    tell(req, Told::Claimed);
    if let Some(occ) = req.start.occurrence() {
        surfaces.borrow_mut().note(&format!(
            "{} occurrence={} not run: claimed by the run in another slot",
            req.job.name,
            occurrence_text(Some(occ))
        ));
    }
    Outcome::Done
}

/// `record` (the lock's claim, or the job's guard) says this occurrence
/// started already, up to `at`: the ledger learns it (a lost ledger did not
/// know), and it never runs again.
fn claimed_already(
    req: &Request<'_>,
    at: i64,
    record: &str,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let job = req.job;
    tell(req, Told::Claimed);
    if let Some(occ) = req.start.occurrence() {
        learn_claimed(surfaces, &job.name, occ, record);
        surfaces.borrow_mut().note(&format!(
            "{} occurrence={} not run: claimed already (up to {})",
            job.name,
            occurrence_text(Some(occ)),
            occurrence_text(Some(at))
        ));
    }
    Outcome::Done
}

/// The ledger learns that `job`'s occurrence `at` started already, as
/// `record` (the lock's claim, or the job's guard) says.
fn learn_claimed(surfaces: &Rc<RefCell<Surfaces>>, job: &str, at: i64, record: &str) {
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    let detail = format!("{record} says {job} started already");
    let _ = s.ledger(|l| l.claimed(job, at, &detail, now));
}

/// The run cannot start: said on the surfaces and to the teller.
fn cannot(req: &Request<'_>, message: &str, surfaces: &Rc<RefCell<Surfaces>>) -> Outcome {
    surfaces.borrow_mut().warn_of(&req.job.name, message);
    tell(
        req,
        Told::Error {
            message: message.to_owned(),
        },
    );
    Outcome::Unable
}

/// A lock that was not free: quiet when another process runs this very
/// occurrence (or a later one) or when the holder will drain the queue;
/// queued behind a live holder with `overlap = "queue"` (when `may_queue`:
/// not once this run's lease claimed the occurrence, which a queued start
/// would then find claimed and never run); otherwise missed, decided once
/// in the ledger and alerted by whoever decided it (a run by hand always
/// alerts). The holder is named with its slot (`in_slot`) when it holds
/// one of the job's lock's.
fn refused_lock(
    req: &Request<'_>,
    ctx: &Context,
    (refused, in_slot): (&Refused, Option<u32>),
    may_queue: bool,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let job = req.job;
    let (reason, holder) = (refused.reason, refused.holder.as_ref());
    if req.start == Start::Queue {
        // The holder drains the queue on its way out; a hung or orphaned
        // one leaves it for the tick after the lock frees.
        tell(
            req,
            Told::Running {
                holder: holder.map(|h| HolderInfo::in_slot(h, in_slot)),
            },
        );
        return Outcome::Done;
    }
    if let (Some(at), Some(h)) = (req.start.occurrence(), holder)
        && reason == MissReason::Busy
        && h.claim(&job.name).is_some_and(|c| c >= at)
    {
        // Another process runs this occurrence (or a later one) now.
        tell(
            req,
            Told::Running {
                holder: Some(HolderInfo::in_slot(h, in_slot)),
            },
        );
        return Outcome::Done;
    }
    let why = refused.why.clone();
    if let Some(at) = req.start.occurrence() {
        if may_queue
            && reason == MissReason::Busy
            && holder.is_some()
            && job.policy.overlap.value.waits()
        {
            return queue_behind(req, ctx, at, holder.and_then(|h| h.run()), surfaces);
        }
        let mut s = surfaces.borrow_mut();
        let now = s.now();
        let miss = baton_store::ledger::Miss {
            job: &job.name,
            reason,
            first: at,
            last: at,
            count: 1,
            at_least: false,
            detail: Some(&why),
            streak: false,
        };
        if let Some(baton_store::ledger::Missed::Moved) = s.ledger(|l| l.miss(&miss, now)) {
            drop(s);
            tell(req, Told::Decided);
            return Outcome::Done; // Decided elsewhere.
        }
    }
    let mut s = surfaces.borrow_mut();
    let now = s.now();
    let mut alert = ctx.alert(
        reason.alert_kind(),
        now,
        None,
        format!("{}: occurrence {} not run, {why}", job.name, ctx.occurrence),
    );
    alert.holder = holder.map(|h| HolderInfo::in_slot(h, in_slot));
    alert.run_id = None;
    alert.reason = Some(reason.to_string());
    s.alert(&alert);
    drop(s);
    tell(
        req,
        Told::Missed {
            reason,
            holder: alert.holder.clone(),
            message: alert.message.clone(),
        },
    );
    Outcome::Failed
}

/// `overlap = "queue"`: the occurrence waits for the run in flight (or
/// joins the one already waiting), then the lock is tried once more, in case
/// the holder released it in between. With `"replace"`, once it waits, the
/// run in flight (`holder_run`, when it is the job's own) is asked to stop
/// first.
fn queue_behind(
    req: &Request<'_>,
    ctx: &Context,
    at: i64,
    holder_run: Option<&str>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let job = req.job;
    let queued = {
        let mut s = surfaces.borrow_mut();
        let now = s.now();
        let q = s.ledger(|l| l.enqueue(&job.name, &[at], true, now));
        match &q {
            Some(baton_store::ledger::Queued::Queued) => {
                tell(req, Told::Queued);
                s.note(&format!(
                    "{} occurrence={} queued: the job's run is in flight",
                    job.name, ctx.occurrence
                ));
            }
            Some(baton_store::ledger::Queued::Coalesced { into }) => {
                tell(req, Told::Coalesced);
                s.note(&format!(
                    "{} occurrence={} coalesced into the waiting occurrence {}",
                    job.name,
                    ctx.occurrence,
                    occurrence_text(Some(*into))
                ));
            }
            Some(baton_store::ledger::Queued::Moved) => tell(req, Told::Decided),
            None => tell(
                req,
                Told::Error {
                    message: "the ledger could not queue the occurrence".into(),
                },
            ),
        }
        q
    };
    if let (
        Some(baton_store::ledger::Queued::Queued | baton_store::ledger::Queued::Coalesced { .. }),
        Some(run),
    ) = (&queued, holder_run)
    {
        crate::engine::replace::ask(req.config, job, run, Some(at), surfaces);
    }
    if queued.is_none() {
        // Neither queued nor decided: nothing ran, and nothing says so yet.
        surfaces.borrow_mut().warn_of(
            &job.name,
            &format!(
                "{}: occurrence {} not queued behind the run in flight: the ledger would not \
                 take it; it stays due, for a later tick to queue, run or record missed",
                job.name, ctx.occurrence
            ),
        );
        return Outcome::Unable;
    }
    if !matches!(queued, Some(baton_store::ledger::Queued::Queued)) {
        return Outcome::Done;
    }
    run(
        &Request {
            start: Start::Queue,
            ..*req
        },
        surfaces,
    )
}

/// With slots (`max_concurrent`), whether a queued occurrence that `job`'s
/// guard or claims say was claimed may be another slot's, taken from the
/// queue by its holder and not started yet: so while any other slot (not
/// `mine`) is held live, it is left alone, and that holder runs it or, when
/// it ends, finds it here as this one does. Recording it claimed now would
/// tell the ledger it started, and the holder about to start it would then
/// find it decided and never run it. Once no other slot is held, nothing
/// can be about to start it, and it is recorded as the claim says. A slot
/// that cannot be read counts as held.
fn another_slot_held(config: &Config, job: &Job, mine: u32) -> bool {
    if job.slots() <= 1 {
        return false;
    }
    let Ok(store) = crate::store::open(config) else {
        return true;
    };
    (1..=job.slots())
        .filter(|k| *k != mine)
        .any(|k| match store.inspect(&job.slot_ref(k)) {
            Ok(Some(baton_lease::Verdict::Live { .. })) | Err(_) => true,
            Ok(_) => false,
        })
}

/// A run to make under a fresh lease before the queue is drained.
pub(crate) struct First {
    /// Its context (job, occurrence text, run id).
    pub(crate) ctx: Context,
    /// What it is for.
    pub(crate) start: Start,
    /// Whether the lease must be restated for it first (every run after the
    /// one the acquisition named).
    pub(crate) restate: bool,
}

/// Holds `lease` (of the lock's slot it names) for `firsts`, in order, and
/// then for what waits in the queue of the jobs sharing the lock; releases;
/// looks once more.
pub(crate) fn hold(
    req: &Request<'_>,
    lease: (Box<dyn Held>, u32),
    firsts: Vec<First>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let mut worst = Outcome::Done;
    let mut lease = Some(lease);
    let mut firsts = firsts;
    for _ in 0..=RETAKES {
        let Some(held) = lease.take() else { break };
        let (outcome, stop, queued) = hold_once(req, held, std::mem::take(&mut firsts), surfaces);
        // Read before the release: never an answer after it.
        surfaces.borrow_mut().kept_queue().forget();
        worst = worst.max(outcome);
        if stop || queued == Some(false) {
            // Stopped, or the store said in the release's own round trip
            // that nothing waits: read after the lease was free, so what
            // is queued from now on finds the lock free, or its new
            // holder looks.
            break;
        }
        // Queued between the last look and the release?
        let mates = drainable(req.config, req.job);
        let waiting = next_queued(&mates, surfaces);
        if waiting.is_none() {
            break;
        }
        // The lease is taken again in any of the job's slots as it was
        // read: its highest must still be allowed, or nothing is taken.
        if let Some(why) =
            crate::engine::current::forbids(req.config, &req.job.name, req.job.slots())
        {
            surfaces.borrow_mut().note(&format!(
                "{}: what was queued meanwhile is left in the queue: {why}",
                req.job.name
            ));
            break;
        }
        let Ok(store) = crate::store::open(req.config) else {
            break;
        };
        let claim = baton_lease::Claim {
            budget: req.job.policy.max_runtime.value,
            mates: owned_mates(req.config, req.job),
            ..baton_lease::Claim::default()
        };
        match crate::engine::slots::try_acquire(store.as_ref(), req.job, &claim, false) {
            Ok(crate::engine::slots::Tried {
                taken: Taken::Acquired(l),
                slot,
            }) => lease = Some((l, slot)),
            _ => break, // Someone else holds it: they will look too.
        }
    }
    worst
}

/// The ledger's calls bounded while it lives ([`Surfaces::bound_ledger`]).
struct LedgerBound<'a>(&'a Rc<RefCell<Surfaces>>);

impl<'a> LedgerBound<'a> {
    fn set(surfaces: &'a Rc<RefCell<Surfaces>>, within: std::time::Duration) -> Self {
        surfaces.borrow_mut().bound_ledger(Some(within));
        Self(surfaces)
    }
}

impl Drop for LedgerBound<'_> {
    fn drop(&mut self) {
        if let Ok(mut s) = self.0.try_borrow_mut() {
            s.bound_ledger(None);
        }
    }
}

/// One tenure of the lease: the first run, the queue, the release. Returns
/// the worst outcome, whether to stop (a signal or a lost lease) and, when
/// the store said in its release, whether anything waits in the queue of
/// the jobs sharing the lock now that it is free.
fn hold_once(
    req: &Request<'_>,
    (lease, slot): (Box<dyn Held>, u32),
    firsts: Vec<First>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> (Outcome, bool, Option<bool>) {
    let job = req.job;
    let fence = lease.fence();
    let placeholder = Context {
        job: job.name.clone(),
        occurrence: "queue".into(),
        run_id: String::new(),
        lock: lease.describe(),
        name: job.lock.value.clone(),
        fence: Some(fence),
        slot,
        guard: None,
    };
    let ctx = Rc::new(RefCell::new(firsts.first().map_or(placeholder, |f| {
        let mut c = f.ctx.clone();
        c.fence = Some(fence);
        c.slot = slot;
        c
    })));
    let current = Rc::new(RefCell::new(None));
    let mut events = Events {
        surfaces: Rc::clone(surfaces),
        ctx: Rc::clone(&ctx),
        step: Rc::clone(&current),
    };
    let session_cfg = SessionConfig {
        max_runtime: job.policy.max_runtime.value,
        cgroup: None,
        label: ctx.borrow().run_id.clone(),
        stop_on_signal: req.stop_on_signal,
    };
    let mut session = match Session::start(lease, session_cfg, &mut events) {
        Ok(s) => s,
        Err(failed) => {
            let (lease, e) = *failed;
            let _ = lease.release();
            surfaces
                .borrow_mut()
                .warn(&format!("{}: cannot supervise the run: {e}", job.name));
            return (Outcome::Unable, true, None);
        }
    };
    // No ledger call outlasts the lease's renewal wait while it is held: the
    // supervisor renews between calls, and a lost reply must not keep it
    // from renewing past its TTL.
    let _bounded = LedgerBound::set(surfaces, session.lease().renew_wait());
    // An alert a step raises (overrunning) reaches the ledger while the
    // step runs, without the supervision waiting for it.
    surfaces.borrow_mut().write_step_alerts_apart(req.config);
    let mut worst = Outcome::Done;
    let mut handed = false;
    let count = firsts.len();
    for (i, f) in firsts.into_iter().enumerate() {
        if session.lost().is_some() || session.interrupted().is_some() {
            // What is left is not run: a lease lost between two runs fails
            // the whole as a lease lost in one does.
            if session.lost().is_some() {
                worst = worst.max(Outcome::Failed);
            }
            break;
        }
        // The runs after this one are this holder's to start, under this
        // lease: its end must not let the lease go.
        session.more_follow(i + 1 < count);
        if f.restate {
            if let Some(why) = crate::engine::current::forbids(req.config, &job.name, slot) {
                surfaces.borrow_mut().note(&format!(
                    "{}: occurrence {} not run now: {why}; left for a later tick",
                    job.name, f.ctx.occurrence
                ));
                break;
            }
            let occ = Some(f.ctx.occurrence.clone());
            match session.restate(Some(f.ctx.run_id.clone()), occ, None) {
                Ok(Restated::Done) => {}
                Ok(_) | Err(_) => break,
            }
        }
        *ctx.borrow_mut() = Context {
            fence: Some(fence),
            slot,
            guard: None,
            ..f.ctx
        };
        let sub = Request {
            start: f.start,
            ..*req
        };
        let run_id = ctx.borrow().run_id.clone();
        let (outcome, by_hand) =
            one_listening(&sub, &run_id, &ctx, &mut session, &current, surfaces);
        worst = worst.max(outcome);
        if by_hand {
            handed = true;
            break;
        }
    }
    // A run whose start the shared ledger would not record (Outcome::Unable) leaves
    // the queue to a later holder: the ledger is not answering. Nor is the
    // queue read after the lease is gone. A holder whose run a run by hand
    // replaced leaves it to that run's holder.
    let mut mates = if handed
        || worst == Outcome::Unable
        || session.lost().is_some()
        || session.interrupted().is_some()
    {
        Vec::new()
    } else {
        drainable(req.config, job)
    };
    let store = crate::store::open(req.config);
    let mut last_taken: Option<(String, i64)> = None;
    while worst != Outcome::Unable && session.lost().is_none() && session.interrupted().is_none() {
        // The queue as the last run recorded its end, when it was read
        // then, else read now.
        let kept = surfaces.borrow_mut().kept_queue().take(&mates);
        let next = kept.unwrap_or_else(|| next_queued(&mates, surfaces));
        let Some((name, at)) = next else { break };
        if last_taken == Some((name.clone(), at)) {
            // The ledger did not let go of it: stop rather than spin.
            surfaces.borrow_mut().warn_of(
                &name,
                &format!(
                    "{name}: queued occurrence {} could not be taken from the queue; left for a \
                 later tick",
                    occurrence_text(Some(at))
                ),
            );
            break;
        }
        last_taken = Some((name.clone(), at));
        let Some(mate) = req.config.jobs.get(&name) else {
            break;
        };
        if let Some(why) = crate::engine::current::forbids(req.config, &name, slot) {
            surfaces.borrow_mut().note(&format!(
                "{name}: queued occurrence {} left in the queue: {why}",
                occurrence_text(Some(at))
            ));
            break;
        }
        // An occurrence someone asked for (a backfill of a job a service
        // runs, a run asked for through its router) is behind the claims
        // on purpose: it claims nothing, as `baton backfill` claims
        // nothing, and its ledger row, turned `started` under this lease
        // only while it still waits, is its record.
        let asked = surfaces
            .borrow_mut()
            .ledger(|l| l.decision(&name, at))
            .flatten()
            .is_some_and(|d| d.decision == baton_store::ledger::Decision::Queued && d.requested());
        let claimed = (!asked).then_some(at);
        // A mate whose lock was changed while it ran may still run under
        // its former lock: its queue waits for a later holder.
        let guarded = match &store {
            Ok(s) => s
                .take_guard(&mate.slot_ref(slot), fence, claimed)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        let guard = match guarded {
            Ok((Guard::Clear, claim)) => claim,
            Ok((Guard::Claimed { .. }, _)) if another_slot_held(req.config, mate, slot) => {
                break;
            }
            Ok((Guard::Claimed { .. }, _)) => {
                learn_claimed(surfaces, &name, at, "the job's guard");
                continue;
            }
            Ok((Guard::Elsewhere(refused), _)) => {
                surfaces.borrow_mut().note(&format!(
                    "{name}: queued occurrence {} left in the queue: {}",
                    occurrence_text(Some(at)),
                    refused.why
                ));
                mates.retain(|m| *m != name);
                continue;
            }
            Err(e) => {
                surfaces.borrow_mut().warn_of(
                    &name,
                    &format!(
                        "{name}: queued occurrence {} left in the queue: {e}",
                        occurrence_text(Some(at))
                    ),
                );
                break;
            }
        };
        let Some(run_id) = fresh_run_id(mate, surfaces) else {
            break;
        };
        let occurrence = occurrence_text(Some(at));
        let once = Once {
            key: name.clone(),
            at,
        };
        fail::fail_point!("queue");
        let once = (!asked).then_some(&once);
        match session.restate(Some(run_id.clone()), Some(occurrence.clone()), once) {
            Ok(Restated::Done) => {}
            Ok(Restated::Claimed { .. }) if another_slot_held(req.config, mate, slot) => {
                break;
            }
            Ok(Restated::Claimed { .. }) => {
                learn_claimed(surfaces, &name, at, "the lock's claim");
                continue;
            }
            Ok(Restated::Lost(_) | Restated::Unconfirmed(_)) | Err(_) => break,
        }
        let lock = ctx.borrow().lock.clone();
        *ctx.borrow_mut() = Context {
            job: name.clone(),
            occurrence,
            run_id,
            lock,
            name: mate.lock.value.clone(),
            fence: Some(fence),
            slot,
            guard,
        };
        let sub = Request {
            job: mate,
            start: Start::Scheduled(at),
            ..*req
        };
        let run_id = ctx.borrow().run_id.clone();
        let (outcome, by_hand) =
            one_listening(&sub, &run_id, &ctx, &mut session, &current, surfaces);
        worst = worst.max(outcome);
        if by_hand {
            handed = true;
            break;
        }
    }
    if handed {
        surfaces.borrow_mut().note(&format!(
            "{}: run {} was replaced by a run by hand or a backfill; the lock is handed to it, \
             and what else this holder had to run is left for a later tick",
            job.name,
            ctx.borrow().run_id
        ));
    }
    let stop = handed
        || worst == Outcome::Unable
        || session.lost().is_some()
        || session.interrupted().is_some();
    let peek: Vec<String> = if stop {
        Vec::new()
    } else {
        drainable(req.config, job)
            .into_iter()
            .map(str::to_owned)
            .collect()
    };
    let (finish, queued) = session.finish_peeking(&peek);
    drop(events);
    let c = ctx.borrow().clone();
    let mut s = surfaces.borrow_mut();
    match finish {
        Finish::Released => {}
        Finish::Lost(why) => s.note(&format!("{} run={}: {why}", c.job, c.run_id)),
        Finish::Unconfirmed(why) => s.warn(&format!("{}: {why}", c.job)),
    }
    (worst, stop, queued)
}

/// One run ([`steps::one`]) that listens, for a job whose policy is
/// `replace`, for a request that it stop ([`crate::engine::replace::watch`]);
/// the next run of the lease listens to its own. Also whether a run by
/// hand or a backfill asked it to stop: that run waits for the lock, so
/// this holder hands it over ([`crate::engine::replace::Watch::by_hand`]) rather
/// than start what else it holds the lease for, each of which would be
/// asked to stop in turn.
fn one_listening(
    req: &Request<'_>,
    run_id: &str,
    ctx: &Rc<RefCell<Context>>,
    session: &mut Session<'_>,
    current: &Rc<RefCell<Option<String>>>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> (Outcome, bool) {
    let watching = crate::engine::replace::watch(req.config, req.job, run_id, surfaces);
    session.listen(watching.as_ref().map(|(_, ask)| ask.clone()));
    let outcome = steps::one(req, ctx, session, current, surfaces);
    session.listen(None);
    let by_hand = watching.is_some_and(|(watch, _)| watch.by_hand());
    (outcome, by_hand)
}
