//! The failures of the lock: I/O, permissions, a path that is no lock file,
//! no file mutex. A lock that is merely not free is never an error; that is
//! an [`crate::Outcome`]. Every message says what was being done to which
//! path, and what to do about it.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why an operation on a lock failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call failed.
    #[error("failed to {action} {}: {source}", path.display())]
    Io {
        /// What was being done, as a verb phrase.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The directory that should hold the lock file does not exist.
    #[error("the lock directory {} does not exist: create it, or choose another lock path", dir.display())]
    MissingDirectory {
        /// The directory.
        dir: PathBuf,
    },
    /// Something other than a lock file is at the lock path: a directory, a
    /// symbolic link, a device, or a file whose content is no lock record.
    /// Nothing was read into a verdict or written.
    #[error("{} is {what}, not a lock file; nothing was changed: {remedy}", path.display())]
    NotALockFile {
        /// The path.
        path: PathBuf,
        /// What is there ("a symbolic link", "a directory", …).
        what: String,
        /// What to do.
        remedy: &'static str,
    },
    /// The lock file, or its directory, could be changed by another user.
    #[error("refusing an untrusted lock: {0}")]
    Untrusted(#[from] crate::trust::Untrusted),
    /// The record's fence leaves no room for a next one.
    #[error(
        "the fence of {} is {fence}, the largest a record may carry: no later acquisition can be \
         fenced; remove the file once nothing runs under it",
        path.display()
    )]
    FenceExhausted {
        /// The lock file.
        path: PathBuf,
        /// The fence found.
        fence: u64,
    },
    /// The filesystem offers no `flock`; no lease is judged or broken.
    #[error(
        "no file mutex for {}: flock failed ({source}); baton judges and breaks leases only under \
         flock, so nothing was changed: move the lock to a local filesystem",
        path.display()
    )]
    NoMutex {
        /// The lock file.
        path: PathBuf,
        /// What `flock` said.
        #[source]
        source: io::Error,
    },
    /// The record has no room for one more claim: the claims of the jobs
    /// sharing the lock fill its field.
    #[error(
        "the lock {} has no room for the claim of {key}: {count} jobs' claims already fill its \
         record ({max} bytes); nothing was changed: give some of the jobs sharing this lock a \
         lock of their own",
        path.display(),
        max = crate::value::MAX_CLAIMS_BYTES
    )]
    ClaimsFull {
        /// The lock file.
        path: PathBuf,
        /// Whose claim did not fit.
        key: String,
        /// How many claims the record holds.
        count: usize,
    },
    /// A key's guard file cannot be read: which lock its key last ran under
    /// is unknown.
    #[error(
        "the guard file {} cannot be read ({why}): it names the lock its job last ran under, so \
         the job does not start while it is unknown; nothing was changed: once no run of the job \
         is in flight, remove the file",
        path.display()
    )]
    UnreadableGuard {
        /// The guard file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Another process kept the file's mutex longer than allowed.
    #[error(
        "the mutex of {} was held by another process for more than {waited:?} (is something running \
         `flock` on this file?): nothing was read or changed",
        path.display()
    )]
    MutexTimeout {
        /// The lock file.
        path: PathBuf,
        /// How long this process waited.
        waited: Duration,
    },
    /// A value given for a record field cannot be written into one.
    #[error("invalid {field} {value:?}: use 1 to 128 printable ASCII characters, no spaces")]
    InvalidField {
        /// Which field.
        field: &'static str,
        /// The value given.
        value: String,
    },
    /// A duration option is out of range.
    #[error("invalid {what}: {why}")]
    InvalidOption {
        /// Which option.
        what: &'static str,
        /// Why.
        why: String,
    },
}

impl Error {
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }
}
