//! What a run came to ([`RunVerdict`]), what each attempt of one of its
//! steps came to ([`AttemptOutcome`]), and whether that was a step or a
//! check ([`StepKind`]).

words! {
    /// What a finished run came to, as its row and its tallies record it.
    ///
    /// A step's attempt that timed out has the *outcome* `timeout`; its
    /// run's verdict is `failed`.
    pub enum RunVerdict ("run verdict") {
        /// Every step and check succeeded.
        Ok = "ok",
        /// A step failed, after its retries.
        Failed = "failed",
        /// The steps succeeded and a check failed.
        CheckFailed = "check-failed",
        /// The lease was lost while it ran, and it was stopped.
        LeaseLost = "lease-lost",
        /// A graceful shutdown (SIGTERM or SIGINT to the daemon, or to the
        /// tick or run supervising it) stopped it.
        Interrupted = "interrupted",
        /// Its process was gone before it recorded an end, and a later run
        /// under its lock recorded it so.
        Abandoned = "abandoned",
        /// A later occurrence (or a run by hand) of its job, with
        /// `overlap = "replace"`, asked it to stop, and it was stopped as a
        /// lost lease stops a run; the lease was kept for the one that
        /// replaced it.
        Replaced = "replaced",
    }
}

words! {
    /// What one attempt of a step or a check came to.
    pub enum AttemptOutcome ("attempt outcome") {
        /// It succeeded.
        Ok = "ok",
        /// It exited with a nonzero status or died of a signal.
        Failed = "failed",
        /// It ran past its timeout and was stopped.
        Timeout = "timeout",
        /// The lease was lost while it ran, and it was stopped.
        LeaseLost = "lease-lost",
        /// Its command could not be started.
        NotStarted = "not-started",
        /// A graceful shutdown stopped it.
        Interrupted = "interrupted",
        /// A run that replaces its run (`overlap = "replace"`) stopped it.
        Replaced = "replaced",
    }
}

words! {
    /// What an attempt ran: a step of the job, or a check that guards it.
    pub enum StepKind ("step kind") {
        /// A step of the job.
        Step = "step",
        /// A check run after the steps.
        Check = "check",
    }
}
