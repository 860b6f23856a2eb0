//! A job's lock judged slot by slot (`max_concurrent`), for the views:
//! every slot's verdict, read over one store call for all jobs, and which
//! of them speaks for the job where a view shows one holder.
//!
//! With them, for `status`, whether the store holds grants back after its
//! server changed ([`survey`]).
//!
//! It judges and never takes, claims or writes anything (but the store's
//! record of a new server, when asking for the hold is the first look at
//! it, as a grant's would be); a slot that cannot be read is `None`, as
//! one lock that cannot be read is.

use baton_lease::Verdict;
use baton_store::store::HeldBack;

use crate::config::{Config, Job};

/// Each slot's verdict on one job's lock, slot 1 first.
#[derive(Debug, Clone, Default)]
pub struct Slots(pub Vec<Option<Verdict>>);

/// Every slot of each of `jobs` (and the slots above them a run from when
/// `max_concurrent` was higher left: [`crate::store::Store::slots_above`]),
/// judged over one store call (and one more only when such slots are
/// left); when the store cannot be used, nothing is known of any.
pub fn judge(config: &Config, jobs: &[&Job]) -> Vec<Slots> {
    let Ok(store) = crate::store::open(config) else {
        return jobs
            .iter()
            .map(|j| Slots(vec![None; j.slots() as usize]))
            .collect();
    };
    read(store.as_ref(), jobs, false).0
}

/// As [`judge`], through `store`, and whether it holds grants back after
/// its server changed, for the longest TTL plus takeover grace of `jobs`
/// ([`crate::store::Store::survey`]: one round trip for both in
/// PostgreSQL). Without a store (it cannot be used) nothing is known of
/// any lock, and the hold is not asked.
pub fn survey(
    store: Option<&dyn crate::store::Store>,
    jobs: &[&Job],
) -> (
    Vec<Slots>,
    Option<Result<Option<HeldBack>, crate::store::Error>>,
) {
    match store {
        Some(s) => read(s, jobs, true),
        None => (
            jobs.iter()
                .map(|j| Slots(vec![None; j.slots() as usize]))
                .collect(),
            None,
        ),
    }
}

/// Each job's own slots read over one store call (with the hold, when
/// `hold`), then the slots above them that the store records, read over one
/// more call only when there are any. They are asked for after the own
/// slots were read: a store may learn which exist in that read's round
/// trip (the PostgreSQL store does).
fn read(
    store: &dyn crate::store::Store,
    jobs: &[&Job],
    hold: bool,
) -> (
    Vec<Slots>,
    Option<Result<Option<HeldBack>, crate::store::Error>>,
) {
    let own: Vec<Vec<(u32, crate::store::LockRef<'_>)>> = jobs
        .iter()
        .map(|j| (1..=j.slots()).map(|k| (k, j.slot_ref(k))).collect())
        .collect();
    let refs: Vec<_> = own.iter().flatten().map(|(_, r)| *r).collect();
    let (all, held) = if hold {
        let (all, held) = store.survey(&refs);
        (all, Some(held))
    } else {
        (store.inspect_all(&refs), None)
    };
    let mut slots = by_job(&own, all);
    let above: Vec<Vec<(u32, crate::store::LockRef<'_>)>> = jobs
        .iter()
        .map(|j| {
            // Unreadable: the job's own slots are shown.
            let left = store
                .slots_above(&j.lock_ref(), j.slots())
                .unwrap_or_default();
            left.into_iter().map(|k| (k, j.slot_ref(k))).collect()
        })
        .collect();
    if above.iter().any(|a| !a.is_empty()) {
        let refs: Vec<_> = above.iter().flatten().map(|(_, r)| *r).collect();
        let extra = by_job(&above, store.inspect_all(&refs));
        for (mine, extra) in slots.iter_mut().zip(extra) {
            let n = mine.0.len();
            mine.0.extend(extra.0.into_iter().skip(n));
        }
    }
    (slots, held)
}

/// `all`, each numbered slot of each job in order, cut into each job's:
/// slot K at index K - 1, a slot above the job's own that nothing records
/// `None`.
fn by_job(
    numbered: &[Vec<(u32, crate::store::LockRef<'_>)>],
    all: Vec<Option<Verdict>>,
) -> Vec<Slots> {
    let mut all = all.into_iter();
    numbered
        .iter()
        .map(|slots| {
            let mut each = Vec::new();
            for &(k, _) in slots {
                let at = k.saturating_sub(1) as usize;
                if each.len() <= at {
                    each.resize(at + 1, None);
                }
                each[at] = all.next().flatten();
            }
            Slots(each)
        })
        .collect()
}

/// `slots`, or, when none of them holds the job's run `in_flight` (its
/// newest run without an end) and the job's guard says that run holds the
/// job's former lock (its `lock` was changed while it ran), that lock's
/// holder in slot 1's place: judged as [`crate::store::Store::runs_elsewhere`]
/// judges it, so that a run under a former lock, live or hung, is seen as
/// the scheduler refuses by it. One more look at the store, only then.
pub fn with_former_lock(
    config: &Config,
    job: &Job,
    slots: Slots,
    in_flight: Option<&str>,
    now: jiff::Timestamp,
) -> Slots {
    let Some(run) = in_flight else {
        return slots;
    };
    if slots.0.iter().flatten().any(|v| v.holder().is_some()) {
        return slots;
    }
    let Ok(store) = crate::store::open(config) else {
        return slots;
    };
    let Ok(baton_store::store::Guard::Elsewhere(r)) = store.runs_elsewhere(&job.lock_ref(), None)
    else {
        return slots;
    };
    let Some(holder) = r.holder.filter(|h| h.run() == Some(run)) else {
        return slots;
    };
    let verdict = match r.reason {
        baton_store::words::MissReason::Busy => Verdict::Live { holder, skew: None },
        baton_store::words::MissReason::Hung => {
            let renewed = match &holder {
                baton_lease::Holder::V3(h) => h.renewed,
                baton_lease::Holder::V2(_) => now,
            };
            Verdict::Hung {
                lapsed: now.duration_since(renewed).unsigned_abs(),
                holder,
            }
        }
        baton_store::words::MissReason::Orphaned => Verdict::Orphaned {
            pgid: match &holder {
                baton_lease::Holder::V3(h) => h.pgid.unwrap_or(0),
                baton_lease::Holder::V2(_) => 0,
            },
            holder,
            strangers: None,
        },
        _ => return slots,
    };
    let mut slots = slots;
    match slots.0.first_mut() {
        Some(first) => *first = Some(verdict),
        None => slots.0.push(Some(verdict)),
    }
    slots
}

impl Slots {
    /// The slot that speaks for the job where one holder is shown: the
    /// first whose holder is live, else the first with a holder, else
    /// slot 1's. With one slot, its verdict.
    pub fn main(&self) -> Option<&Verdict> {
        let known = || self.0.iter().flatten();
        known()
            .find(|v| matches!(v, Verdict::Live { .. }))
            .or_else(|| known().find(|v| v.holder().is_some()))
            .or_else(|| self.0.first().and_then(Option::as_ref))
    }

    /// The verdict on the slot whose holder is the run `run_id`, else
    /// [`Slots::main`]: what says whether that run may still be going.
    pub fn of_run(&self, run_id: &str) -> Option<&Verdict> {
        self.0
            .iter()
            .flatten()
            .find(|v| v.holder().and_then(|h| h.run()) == Some(run_id))
            .or_else(|| self.main())
    }

    /// Each slot with a holder (live, hung, orphaned, dead or expired):
    /// its number (1-based) and verdict.
    pub fn held(&self) -> impl Iterator<Item = (u32, &Verdict)> {
        (1u32..)
            .zip(&self.0)
            .filter_map(|(k, v)| v.as_ref().filter(|v| v.holder().is_some()).map(|v| (k, v)))
    }
}
