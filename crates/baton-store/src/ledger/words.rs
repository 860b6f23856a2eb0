//! The words the tallies count by, each list whole: every verdict a run is
//! finished with, every reason an occurrence is recorded missed for, and
//! every reason one is recorded skipped for.
//!
//! The ledger stores whatever word its caller gives; these lists are what
//! baton's callers give, kept in one place so that a reader of the tallies
//! (the metrics) can show every word at 0 before its first event, and a
//! Prometheus rule's `increase()` sees that first event. A caller that
//! records a new word adds it here; `baton-sched`'s tests check that every
//! reason its planner and its lock refusals name is listed.

/// Every verdict a finished run is recorded with: `ok`; `failed` (a step
/// failed, after its retries); `check-failed` (the steps succeeded and a
/// check failed); `lease-lost` (the lease was lost while it ran, and it was
/// stopped); `interrupted` (a graceful shutdown stopped it); `abandoned`
/// (its process was gone before it recorded an end, and a later run under
/// its lock recorded it so). A step's attempt that timed out has the
/// *outcome* `timeout`; its run's verdict is `failed`.
pub const VERDICTS: [&str; 6] = [
    "ok",
    "failed",
    "check-failed",
    "lease-lost",
    "interrupted",
    "abandoned",
];

/// Every reason an occurrence is recorded missed for: the planner's
/// (`outside-window`, `superseded`, `late`, `catch-up-max`, and the
/// deliberate `paused` and `disabled`), the lock's refusals (`busy`,
/// `hung`, `orphaned`, `version-conflict`), and `ledger-unavailable` (its
/// start could not be recorded).
pub const MISS_REASONS: [&str; 11] = [
    "outside-window",
    "superseded",
    "late",
    "catch-up-max",
    "paused",
    "disabled",
    "busy",
    "hung",
    "orphaned",
    "version-conflict",
    "ledger-unavailable",
];

/// The miss reasons that are a decision, not a fault: a pause or a
/// disabled job. No alert is raised for them.
pub const DELIBERATE_MISS_REASONS: [&str; 2] = ["paused", "disabled"];

/// Every reason an occurrence is recorded skipped for: `coalesced` (it
/// joined an occurrence already waiting in the queue, which runs for it)
/// and `claimed` (the lock file says it started, under a ledger lost
/// since).
pub const SKIP_REASONS: [&str; 2] = ["coalesced", "claimed"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_listed_once_and_deliberate_reasons_are_reasons() {
        for list in [&VERDICTS[..], &MISS_REASONS, &SKIP_REASONS] {
            let mut sorted = list.to_vec();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), list.len(), "{list:?}");
        }
        for w in DELIBERATE_MISS_REASONS {
            assert!(MISS_REASONS.contains(&w), "{w}");
        }
    }
}
