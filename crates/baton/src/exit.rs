//! baton's exit codes: one enum, the documented numbers, nothing else decides
//! what a process exit means. The tables are in `baton exec --help` and
//! `baton lock --help` (and the README).
//!
//! `baton exec` passes the command's own status through; every other number
//! below is baton's. `baton __http`'s numbers are defined with its contract
//! in [`baton_sched::http`]. The scheduler's commands end with a
//! [`baton_sched::outcome::Outcome`], which [`Exit::of_outcome`] turns into
//! their exit: the scheduler never picks a number.

/// An exit code baton chooses itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success.
    Ok,
    /// `lock break`: refused (the lease is not provably dead); the
    /// scheduler's commands: a failure, a missed occurrence or a refusal.
    Refused,
    /// `lock` commands: bad arguments; the scheduler's commands: the
    /// configuration or the arguments cannot be honoured.
    Usage,
    /// `lock` commands: no lock file at that name or path.
    NoSuchLock,
    /// `lock` commands: a damaged record or a foreign version's lease.
    Unjudgeable,
    /// `exec`: the lock was not free (default 75, `EX_TEMPFAIL`; `--busy-exit`).
    Busy(u8),
    /// `exec`: the lease was lost while the command ran; the command was
    /// stopped, or had ended on its own before the release found it lost.
    LeaseLost,
    /// `exec`: the command ran past `--timeout` and was stopped (as `timeout(1)`).
    Timeout,
    /// baton's own failure: bad option, unusable or untrusted state
    /// directory, a path that is no lock file, I/O.
    Failure,
    /// `exec`: the command exists but cannot be run.
    NotExecutable,
    /// `exec`: the command was not found.
    NotFound,
    /// `exec`: the command's own status, or 128 + N for death by signal N.
    Child(u8),
    /// `__http`: how the request went, as its contract numbers it.
    Http(baton_sched::http::HttpExit),
}

/// The default busy code: `EX_TEMPFAIL`, "try again later".
pub const BUSY_DEFAULT: u8 = 75;

impl Exit {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Refused => 1,
            Self::Usage => 2,
            Self::NoSuchLock => 3,
            Self::Unjudgeable => 4,
            Self::Busy(n) | Self::Child(n) => n,
            Self::LeaseLost => baton_runner::LEASE_LOST,
            Self::Timeout => baton_runner::TIMED_OUT,
            Self::Failure => 125,
            Self::NotExecutable => 126,
            Self::NotFound => 127,
            Self::Http(h) => h.code(),
        }
    }

    /// The exit of a scheduler command that came to `outcome`: 0 when it
    /// was done, 1 when it failed, 2 when it could not act at all.
    pub fn of_outcome(outcome: baton_sched::outcome::Outcome) -> Self {
        use baton_sched::outcome::Outcome;
        match outcome {
            Outcome::Done => Self::Ok,
            Outcome::Failed => Self::Refused,
            Outcome::Unable => Self::Usage,
        }
    }

    /// The exit of `baton daemon`: 0 when it stopped on a signal, 2 when its
    /// configuration cannot be served, 125 when it could not start serving.
    pub fn of_daemon(ending: baton_daemon::Ending) -> Self {
        use baton_daemon::Ending;
        match ending {
            Ending::Stopped => Self::Ok,
            Ending::Unservable => Self::Usage,
            Ending::Failed => Self::Failure,
        }
    }

    /// The exit for a step's ending.
    pub fn of(ending: &baton_runner::Ending) -> Self {
        use baton_runner::{Ending, SpawnKind};
        match ending {
            Ending::TimedOut => Self::Timeout,
            Ending::LeaseLost => Self::LeaseLost,
            Ending::NotStarted(f) => match f.kind {
                SpawnKind::NotFound => Self::NotFound,
                SpawnKind::NotExecutable => Self::NotExecutable,
                SpawnKind::Other => Self::Failure,
            },
            other => Self::Child(other.exit_code()),
        }
    }

    /// The exit for a library error on a lock: a path that is no lock file,
    /// an untrusted one, or a failure.
    pub fn of_error(_e: &baton_lease::Error) -> Self {
        Self::Failure
    }

    /// The worse of two lock-command exits (the one a script must see).
    pub fn worst(self, other: Self) -> Self {
        let rank = |e: Self| match e {
            Self::Ok => 0,
            Self::NoSuchLock => 1,
            Self::Unjudgeable => 2,
            Self::Refused => 3,
            Self::Usage => 4,
            _ => 5,
        };
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}
