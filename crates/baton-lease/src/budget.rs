//! A run's soft budget (`max_runtime`, `baton exec --max-runtime`): the one
//! rule for when a run is *overrunning*.
//!
//! A run that has gone on for its whole budget is overrunning; nothing is
//! stopped for it. Three places ask, each with its own clock, and all of
//! them through [`overran`]: the runner that supervises the run (on the boot
//! clock, from when its command started; it raises the run's one
//! `overrunning` alert), a contender that finds the lock held (on the wall
//! clock, from when the holder took the lease; its refusal is then
//! `overrunning` rather than `busy`), and the scheduler's views (`/metrics`,
//! from when the ledger says the run started). Nothing else may compare a
//! run's age with its budget.

use std::time::Duration;

use jiff::Timestamp;

use crate::decide::Holder;

/// Whether a run that has gone on for `ran` is past its soft `budget`: it
/// has used all of it.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// let hour = Duration::from_secs(3600);
/// assert!(!baton_lease::overran(hour - Duration::from_secs(1), hour));
/// assert!(baton_lease::overran(hour, hour));
/// ```
pub fn overran(ran: Duration, budget: Duration) -> bool {
    ran >= budget
}

impl Holder {
    /// The soft runtime budget the holder declared with its lease (v3
    /// only), if any.
    pub fn budget(&self) -> Option<Duration> {
        match self {
            Self::V3(h) => h.budget,
            Self::V2(_) => None,
        }
    }

    /// Whether the run this holder supervises, started at `started`, is
    /// past the budget the holder declared ([`overran`]) at `now`. False
    /// without a budget, and for a start after `now` (a clock that was
    /// ahead): its age is unknown, never taken for a long one.
    pub fn overrunning(&self, started: Timestamp, now: Timestamp) -> bool {
        let Some(budget) = self.budget() else {
            return false;
        };
        Duration::try_from(now.duration_since(started)).is_ok_and(|ran| overran(ran, budget))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(budget: Option<Duration>) -> Holder {
        let at: Timestamp = "2026-11-29T03:00:00Z".parse().unwrap();
        Holder::V3(crate::record::Held {
            fence: crate::Fence::new(1),
            token: "0123456789abcdef".parse().unwrap(),
            pid: 42,
            host: "h1".into(),
            acquired: at,
            renewed: at,
            ttl: Duration::from_secs(30),
            run: None,
            machine: None,
            boot: None,
            pidns: None,
            pstart: None,
            renewed_boot: None,
            pgid: None,
            jstart: None,
            leader: crate::Leader::Command,
            uid: None,
            grace: None,
            occ: None,
            exe: None,
            budget,
            claims: crate::Claims::default(),
        })
    }

    #[test]
    fn a_run_overruns_once_it_has_used_its_whole_budget() {
        let start: Timestamp = "2026-11-29T03:00:00Z".parse().unwrap();
        let at = |secs: i64| start + jiff::SignedDuration::from_secs(secs);
        let h = holder(Some(Duration::from_secs(600)));
        assert_eq!(h.budget(), Some(Duration::from_secs(600)));
        assert!(!h.overrunning(start, at(599)));
        assert!(h.overrunning(start, at(600)));
        assert!(h.overrunning(start, at(86_400)));
        // A start the clock has not reached yet says nothing of its age.
        assert!(!h.overrunning(at(60), start));
        // No budget, never overrunning.
        let none = holder(None);
        assert_eq!(none.budget(), None);
        assert!(!none.overrunning(start, at(86_400)));
    }
}
