//! baton's exit codes: one enum, the documented numbers, nothing else decides
//! what a process exit means.
//!
//! `baton exec` passes the command's own status through; every other number
//! below is baton's.

/// An exit code baton chooses itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Success.
    Ok,
    /// `lock` commands: something was refused or not found.
    Refused,
    /// `lock` commands: bad arguments or a failure.
    LockUsage,
    /// `exec`: the lock was not free (default 75, `EX_TEMPFAIL`; `--busy-exit`).
    Busy(u8),
    /// `exec`: the lease was lost while the command ran; the command was stopped.
    LeaseLost,
    /// `exec`: the command ran past `--timeout` and was stopped (as `timeout(1)`).
    Timeout,
    /// `exec`: baton's own failure (bad option, unusable state directory, I/O).
    Failure,
    /// `exec`: the command exists but cannot be run.
    NotExecutable,
    /// `exec`: the command was not found.
    NotFound,
    /// `exec`: the command's own status, or 128 + N for death by signal N.
    Child(u8),
}

/// The default busy code: `EX_TEMPFAIL`, "try again later".
pub const BUSY_DEFAULT: u8 = 75;
/// The lease-lost code.
pub const LEASE_LOST: u8 = 76;

impl Exit {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Refused => 1,
            Self::LockUsage => 2,
            Self::Busy(n) | Self::Child(n) => n,
            Self::LeaseLost => LEASE_LOST,
            Self::Timeout => 124,
            Self::Failure => 125,
            Self::NotExecutable => 126,
            Self::NotFound => 127,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e.code())
    }
}
