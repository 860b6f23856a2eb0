//! What became of an occurrence: what was decided for one that runs or
//! waits ([`Decision`]), why one will not run ([`MissReason`]), and why one
//! never ran itself yet was served or had run ([`SkipReason`]).

use super::AlertKind;

words! {
    /// What was decided for one occurrence of a job that runs or waits.
    /// Each occurrence has at most one such decision. Occurrences that will
    /// not run are not decided one by one: they are ranges of missed
    /// occurrences, each with its [`MissReason`].
    pub enum Decision ("decision") {
        /// A run was started for it
        /// ([`crate::ledger::Records::begin_run`]).
        Started = "started",
        /// It waits for the job's lock and will start, in order
        /// ([`crate::ledger::Records::enqueue`]);
        /// [`crate::ledger::Records::begin_run`] turns it into `started`.
        Queued = "queued",
        /// It arrived while another occurrence was waiting, and is served by
        /// that one (named in [`crate::ledger::DecisionRow::joined`]). It
        /// never runs itself.
        Coalesced = "coalesced",
        /// The lock file says it started, under a ledger that was lost since
        /// ([`crate::ledger::Records::claimed`]). It never runs again.
        Claimed = "claimed",
    }
}

words! {
    /// Why occurrences will not run, as a missed range records it: the
    /// planner's reasons, the lock's refusals, and a start the ledger could
    /// not record.
    pub enum MissReason ("miss reason") {
        /// Older than `catch_up_window` when first planned.
        OutsideWindow = "outside-window",
        /// A later occurrence runs in their place (`catch_up = "latest"`).
        Superseded = "superseded",
        /// More than a minute old, with `catch_up = "none"`.
        Late = "late",
        /// Beyond the `catch_up_max` newest (`catch_up = "all"`).
        CatchUpMax = "catch-up-max",
        /// The job was paused at their time: deliberate.
        Paused = "paused",
        /// The job was disabled: deliberate.
        Disabled = "disabled",
        /// The lock was held by a healthy holder.
        Busy = "busy",
        /// The lock's holder is alive but has stopped renewing.
        Hung = "hung",
        /// The lock's holder is gone but its job still runs.
        Orphaned = "orphaned",
        /// The lock holds a foreign or unreadable record.
        VersionConflict = "version-conflict",
        /// Its start could not be recorded in the ledger.
        LedgerUnavailable = "ledger-unavailable",
        /// The scheduler could not start the process that runs it (out of
        /// file descriptors or processes): it was due, and did not run.
        StartFailed = "start-failed",
    }
    former {
        /// A version 1 ledger's `missed` occurrence recorded without a
        /// reason: its decision word became its reason when the ledger was
        /// migrated.
        MissedUnstated = "missed",
        /// A version 1 ledger's `skipped` occurrence recorded without a
        /// reason, likewise.
        SkippedUnstated = "skipped",
    }
}

impl MissReason {
    /// Whether it is a decision, not a fault (a pause, a disabled job):
    /// its misses extend one streak, and no alert is raised for them.
    pub fn is_deliberate(self) -> bool {
        matches!(self, Self::Paused | Self::Disabled)
    }

    /// The kind of alert raised for occurrences missed for it: a refusal of
    /// the lock's is its own kind (`busy`, `hung`, `orphaned`,
    /// `version-conflict`); any other reason is `missed`.
    pub fn alert_kind(self) -> AlertKind {
        match self {
            Self::Busy => AlertKind::Busy,
            Self::Hung => AlertKind::Hung,
            Self::Orphaned => AlertKind::Orphaned,
            Self::VersionConflict => AlertKind::VersionConflict,
            _ => AlertKind::Missed,
        }
    }
}

words! {
    /// Why an occurrence that had a decision other than a missed range
    /// still never ran itself.
    pub enum SkipReason ("skip reason") {
        /// It joined an occurrence already waiting in the queue, which runs
        /// for it.
        Coalesced = "coalesced",
        /// The lock file says it started, under a ledger lost since.
        Claimed = "claimed",
    }
}
