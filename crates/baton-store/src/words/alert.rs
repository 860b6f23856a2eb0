//! What an alert is about ([`AlertKind`]): the scheduler's alerts and
//! `baton exec`'s, each one word in their JSON, their log lines, the
//! ledger's `alerts` table and `baton exec --alert-on`.

words! {
    /// What happened. The scheduler raises every kind but `failed`;
    /// `baton exec` raises the kinds its `--alert-on` lists.
    pub enum AlertKind ("alert kind") {
        /// A step failed, after its retries (the scheduler).
        StepFailed = "step-failed",
        /// A check failed.
        CheckFailed = "check-failed",
        /// A step attempt (or `baton exec`'s command) ran past its timeout
        /// and was stopped.
        Timeout = "timeout",
        /// The lock was held by a healthy holder, so nothing ran.
        Busy = "busy",
        /// The lock's holder is alive but has stopped renewing.
        Hung = "hung",
        /// The lock's holder is gone but its job still runs.
        Orphaned = "orphaned",
        /// The lock file holds a foreign or unreadable record.
        VersionConflict = "version-conflict",
        /// The lease was lost while the run went on; it was stopped.
        LeaseLost = "lease-lost",
        /// A run passed its `max_runtime` budget; nothing was stopped.
        Overrunning = "overrunning",
        /// The ledger was corrupt; it was moved aside and a fresh one
        /// started.
        LedgerCorrupt = "ledger-corrupt",
        /// Occurrences will not run: outside the catch-up window,
        /// superseded, late, beyond `catch_up_max`, paused, disabled, or
        /// their start could not be recorded.
        Missed = "missed",
        /// The daemon refused a new configuration; the old one stays in
        /// force.
        ReloadRefused = "reload-refused",
        /// The kernel refused the PID namespace that makes a step's whole
        /// tree die with its supervisor: processes a step detaches may
        /// outlive a killed supervisor.
        Uncontained = "uncontained",
        /// The ledger holds decisions ahead of this host's clock (a process
        /// whose clock was ahead made them, or this clock was set back):
        /// they are not trusted to supersede the present.
        ClockSkew = "clock-skew",
        /// Missed ranges that a process whose clock was ahead recorded were
        /// taken back: those occurrences are decided again by this host's
        /// clock.
        MissedWithdrawn = "missed-withdrawn",
        /// A special file (a named pipe, a socket, a device) was found at a
        /// log: it was moved aside, unopened, and the log written afresh.
        LogSetAside = "log-set-aside",
        /// Nothing happened: `baton doctor` checks that the alert command
        /// runs.
        Test = "test",
        /// `baton exec`'s command exited with a nonzero status or died of a
        /// signal (the scheduler says `step-failed`).
        Failed = "failed",
    }
}
