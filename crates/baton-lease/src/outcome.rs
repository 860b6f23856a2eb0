//! What an operation on a lock can come to when nothing failed: why an
//! acquisition did not take the lease, renewed or lost, released or lost,
//! broken or refused. Contention is one of these values, never an
//! [`crate::Error`]. The acquisition's own result, [`crate::Outcome`], is
//! with the acquisition (`acquire`): it carries the [`crate::Lease`], and
//! the lease and the lock's sections answer with the values here.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::decide::{Foreign, Holder, Verdict};
use crate::record::Body;

/// Why a lock is busy.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // Returned once per attempt; boxing buys nothing.
pub enum Busy {
    /// A live holder.
    Held {
        /// The holder.
        holder: Holder,
        /// Set when the holder's stamp lies in this process's future.
        skew: Option<SignedDuration>,
    },
    /// An empty file, written recently during this boot: its record is being
    /// written (v2 writes after creating).
    Writing {
        /// Its age by mtime.
        age: SignedDuration,
    },
    /// Another process held the file's mutex for longer than the mutex wait.
    MutexHeld {
        /// How long this process waited.
        waited: Duration,
        /// The file's mode when others could open it (`flock -n` made it
        /// with a umask of 022): any local user could then be the one
        /// holding its mutex. It was made `0600` before the wait, but a
        /// process that opened it earlier keeps its descriptor.
        exposed: Option<u32>,
    },
    /// The file was replaced under every one of the bounded attempts to lock it.
    Unstable {
        /// How many attempts were made.
        attempts: u32,
    },
    /// A process of this user (or root) holds a lease on this lock whose file
    /// is no longer at the path (moved or removed, with its directory or
    /// alone): its presence outside the filesystem still stands. It ends at
    /// that holder's next renewal, which finds its file gone and stops its
    /// job.
    Elsewhere {
        /// The holder's pid, 0 when it is in no pid namespace this process
        /// can name.
        pid: u32,
    },
}

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Held { holder, skew: None } => write!(f, "busy: held by {holder}"),
            Self::Held {
                holder,
                skew: Some(s),
            } => {
                write!(
                    f,
                    "busy: held by {holder} (its stamp is {} in this host's future: clock skew)",
                    human_signed(*s)
                )
            }
            Self::Writing { age } => {
                write!(
                    f,
                    "busy: the lock file is empty and {} old: a record is being written",
                    human_signed(*age)
                )
            }
            Self::MutexHeld {
                waited,
                exposed: None,
            } => write!(
                f,
                "busy: another process (flock(1), or a writer that is stuck) held the lock file's \
                 mutex for more than {}",
                human(*waited)
            ),
            Self::MutexHeld {
                waited,
                exposed: Some(mode),
            } => write!(
                f,
                "busy: another process held the lock file's mutex for more than {}, and the file \
                 was open to other users (mode {mode:04o}), so the holder may be any local user \
                 (`fuser -v` on the lock file names it); it is 0600 now, which keeps out whoever \
                 opens it from now on",
                human(*waited)
            ),
            Self::Unstable { attempts } => {
                write!(
                    f,
                    "busy: the lock file was replaced during each of {attempts} attempts to lock it"
                )
            }
            Self::Elsewhere { pid: 0 } => write!(
                f,
                "busy: a process in another pid namespace holds a lease on this lock, and no lock \
                 file is at the path (moved away with its directory, or removed): the holder \
                 stops at its next renewal"
            ),
            Self::Elsewhere { pid } => write!(
                f,
                "busy: process {pid} holds a lease on this lock, and no lock file is at the path \
                 (moved away with its directory, or removed): the holder stops at its next \
                 renewal"
            ),
        }
    }
}

/// A lease this build refuses to judge, with the one-line diagnostic the
/// operator needs (seed 003 §11.3–11.4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The lock file.
    pub path: PathBuf,
    /// What was found.
    pub found: Foreign,
    /// The file's first line, as read (lossy UTF-8, whole: a record is at
    /// most 4096 bytes).
    pub raw: String,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = self.path.display();
        match &self.found {
            Foreign::Version(v) => write!(
                f,
                "version conflict: {path} holds a lease of {v}; this build writes v3 and judges \
                 v3 and v2 leases only, so the file was left untouched; remedy: stop every \
                 instance that uses another lock implementation, then remove the lease once \
                 nothing runs under it (`baton lock break --force --lock {path}`)"
            ),
            Foreign::Unreadable(why) => write!(
                f,
                "an unreadable record in {path} ({why}): this build writes v3 records and could \
                 not read this one, so it was left untouched; remedy: make sure nothing runs \
                 under this lock (`ps`, the job's own logs), then replace the record with a free \
                 one (`baton lock break --force --lock {path}`, which keeps its fence)"
            ),
            Foreign::NotALock(why) => write!(
                f,
                "{path} is no lock file ({why}); it was left untouched; remedy: look at it, remove \
                 it by hand if it is not needed, or choose another lock path"
            ),
        }
    }
}

/// The result of a renewal (or of another rewrite of one's own record).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a lost lease means the job must stop"]
pub enum Renewal {
    /// The record is ours and now says so afresh.
    Renewed,
    /// The record is no longer ours: stop the job.
    Lost(Lost),
    /// The record could not be reached this time (its mutex was held too
    /// long); whether it is still ours is unknown.
    Unconfirmed(Busy),
}

/// The result of [`crate::Lease::restate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restated {
    /// The record is ours and says what runs now.
    Done,
    /// The claim's key already holds occurrence `at`, this one or a later
    /// one: it must not run. Nothing was written.
    Claimed {
        /// The occurrence the key holds.
        at: i64,
    },
    /// The record is no longer ours: stop.
    Lost(Lost),
    /// The record could not be reached this time (its mutex was held too
    /// long); whether it is still ours is unknown.
    Unconfirmed(Busy),
}

/// The result of a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Release {
    /// The lease was ours and is now free.
    Released,
    /// The lease had already passed to someone else (or the file was
    /// removed); nothing was changed.
    Lost(Lost),
    /// The record could not be reached; it stays until its holder (this
    /// process) is judged dead or stale.
    Unconfirmed(Busy),
}

/// What stood where our lease should have been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    /// The lock file.
    pub path: PathBuf,
    /// What is there now; `None` when the file is gone.
    pub found: Option<Body>,
}

impl std::fmt::Display for Lost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let now = match &self.found {
            None => "the file is gone".to_owned(),
            Some(Body::Held(h)) => format!(
                "it is now held by pid {} on {} (fence {})",
                h.pid, h.host, h.fence
            ),
            Some(Body::Free(_)) => "it was freed by someone else".to_owned(),
            Some(Body::V2(_)) => "it now holds a Scheduler Lock v2 lease".to_owned(),
            Some(Body::Empty) => "it is empty".to_owned(),
            Some(Body::Foreign(v)) => format!("it now holds a lease of {v}"),
            Some(Body::Unreadable(why)) => format!("it is unreadable ({why})"),
            Some(Body::NotALock(why)) => format!("it is no lock record ({why})"),
        };
        write!(f, "lease lost on {}: {now}", self.path.display())
    }
}

/// What a lock file says, and the verdict on it now. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inspection {
    /// The lock file.
    pub path: PathBuf,
    /// The parsed record; `None` when there is no file.
    pub body: Option<Body>,
    /// The first line as read (lossy UTF-8, whole).
    pub raw: Option<String>,
    /// The file's modification time.
    pub mtime: Option<Timestamp>,
    /// The judgement now.
    pub verdict: Verdict,
}

/// The result of an operator's break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Broken {
    /// The lease was replaced by a free marker.
    Freed {
        /// The verdict on what was replaced.
        verdict: Verdict,
        /// The replaced first line, for the log.
        raw: String,
    },
    /// The lease is not provably dead; nothing was changed.
    Refused {
        /// The verdict.
        verdict: Verdict,
    },
    /// Nothing to break: no file, or a free marker.
    NothingHeld {
        /// The verdict.
        verdict: Verdict,
    },
}

/// A duration for people: `2h5m`, `3.2s`, `250ms`.
pub fn human(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h{}m", secs / 3600, (secs % 3600) / 60)
    } else if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else if secs >= 1 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// A signed duration for people: `3.2s`, or `-3.2s` for one in the past.
pub fn human_signed(d: SignedDuration) -> String {
    let abs = human(d.unsigned_abs());
    if d.is_negative() {
        format!("-{abs}")
    } else {
        abs
    }
}

pub(crate) fn first_line(bytes: &[u8]) -> String {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    String::from_utf8_lossy(bytes[..end].trim_ascii_end()).into_owned()
}

pub(crate) fn conflict(path: &Path, found: Foreign, bytes: &[u8]) -> Conflict {
    Conflict {
        path: path.to_owned(),
        found,
        raw: first_line(bytes),
    }
}
