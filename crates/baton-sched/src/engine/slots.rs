//! Which slot of its lock a run takes: with `max_concurrent = N`, a job's
//! lock has N slots (`baton_lease::slot`), each a lease like any other, and
//! a run takes the first one free, slot 1 first.
//!
//! The order is the guarantee's: every contender tries the slots in the
//! same order, and one that finds a slot's holder running its occurrence
//! (or a later one) stops there, so two contenders for one occurrence meet
//! in the same slot before either can reach the next (the lease's claim
//! decides between them, as it does for one slot). Across slots, an
//! occurrence is still claimed once: by the job's guard with lock files,
//! by the claims table in a store ([`crate::store::Store::take_guard`]). At most N
//! runs are in flight because each holds one of N leases. This module
//! never runs anything and never waits: it asks each slot once.

use baton_lease::Claim;

use baton_store::words::MissReason;

use crate::config::Job;
use crate::store::{Error, Refused, Store, Taken};

/// What trying the slots of a job's lock came to, and which slot it is
/// (1-based): the one taken, the one whose claim or holder ended the
/// search, or, when every slot is held, the first.
pub struct Tried {
    /// As [`Store::try_acquire`] answers; every slot held reads as one
    /// refusal naming them all.
    pub taken: Taken,
    /// The slot.
    pub slot: u32,
}

/// Tries each slot of `job`'s lock once, in order, for `claim`; `guarding`
/// when the caller takes the job's guard on the slot it gets
/// ([`Store::try_acquire_guarding`]).
///
/// # Errors
///
/// When the store cannot decide for a slot: the run must not start, as it
/// would not with one slot.
pub fn try_acquire(
    store: &dyn Store,
    job: &Job,
    claim: &Claim,
    guarding: bool,
) -> Result<Tried, Error> {
    let at = claim.once.as_ref().map(|o| o.at);
    if let Some((slot, refused)) = over_the_limit(store, job)? {
        return Ok(Tried {
            taken: Taken::Refused(refused),
            slot,
        });
    }
    let mut refusals: Vec<(u32, Refused)> = Vec::new();
    for slot in 1..=job.slots() {
        let lock = job.slot_ref(slot);
        let taken = if guarding {
            store.try_acquire_guarding(&lock, claim)?
        } else {
            store.try_acquire(&lock, claim)?
        };
        match taken {
            Taken::Refused(r) if !runs_it(&r, &job.name, at) => refusals.push((slot, r)),
            taken => return Ok(Tried { taken, slot }),
        }
    }
    let (slot, refused) = every_slot_held(refusals, job.slots());
    Ok(Tried {
        taken: Taken::Refused(refused),
        slot,
    })
}

/// A refusal when runs left in slots above `max_concurrent` (from when it
/// was higher, [`crate::store::Store::slots_above`]) still run, and they
/// and the holders of the job's own slots are `max_concurrent` or more:
/// lowering it leaves those runs alone until they end, and no run starts
/// beside them past the new limit. Nothing to refuse (the common case: no
/// slot above) costs one look at the store's slots, none at a lock.
///
/// # Errors
///
/// When a slot cannot be judged: the run must not start.
fn over_the_limit(store: &dyn Store, job: &Job) -> Result<Option<(u32, Refused)>, Error> {
    let n = job.slots();
    let mut left = Vec::new();
    for k in store.slots_above(&job.lock_ref(), n)? {
        if let Some(v) = store.inspect(&job.slot_ref(k))?
            && holds(&v)
        {
            left.push((k, v));
        }
    }
    let Some((k, first)) = left.first() else {
        return Ok(None);
    };
    let mut running = left.len();
    for slot in 1..=n {
        if store
            .inspect(&job.slot_ref(slot))?
            .is_some_and(|v| holds(&v))
        {
            running += 1;
        }
    }
    if running < n as usize {
        return Ok(None);
    }
    let holder = first.holder().cloned();
    let run = holder
        .as_ref()
        .and_then(|h| h.run())
        .map_or_else(String::new, |r| format!("run {r} "));
    Ok(Some((
        *k,
        Refused {
            reason: MissReason::Busy,
            holder,
            why: format!(
                "{run}still holds slot {k} of the lock, above max_concurrent = {n} (lowered \
                 while it ran), and {running} run(s) hold its slots: at most {n} run at once; \
                 the next run starts once one ends"
            ),
        },
    )))
}

/// Whether a slot may still hold a run (live, hung or orphaned, or a
/// record being written or that this build will not judge): one that
/// counts against `max_concurrent`. Unsure counts as running.
fn holds(v: &baton_lease::Verdict) -> bool {
    !v.claimable()
}

/// Whether the holder `r` names runs `job`'s occurrence `at`, or a later
/// one: a contender for `at` stops there.
fn runs_it(r: &Refused, job: &str, at: Option<i64>) -> bool {
    match (at, r.holder.as_ref()) {
        (Some(at), Some(h)) => h.claim(job).is_some_and(|c| c >= at),
        _ => false,
    }
}

/// One refusal for every slot held, and the slot of the holder it names:
/// with one slot, its own; with more, `busy` with its holder when any
/// slot's holder is live (a slot frees when its run ends), else the first
/// slot's, and `why` names each slot's.
fn every_slot_held(mut refusals: Vec<(u32, Refused)>, n: u32) -> (u32, Refused) {
    if refusals.len() <= 1 {
        return refusals.pop().unwrap_or_else(|| {
            (
                1,
                Refused {
                    reason: MissReason::Busy,
                    holder: None,
                    why: "the lock is held (try again)".into(),
                },
            )
        });
    }
    let each: Vec<String> = refusals
        .iter()
        .map(|(slot, r)| format!("slot {slot}: {}", r.why))
        .collect();
    let live = refusals
        .iter()
        .position(|(_, r)| r.reason == MissReason::Busy)
        .unwrap_or(0);
    let (slot, named) = refusals.swap_remove(live);
    (
        slot,
        Refused {
            reason: named.reason,
            holder: named.holder,
            why: format!(
                "all {n} slots are held (max_concurrent = {n}): {}",
                each.join("; ")
            ),
        },
    )
}
