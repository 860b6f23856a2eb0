//! The failures of the ledger. Every message says what was being done to
//! which file. A database that is merely busy is never called corrupt: it is
//! [`Error::Busy`], and only `SQLITE_CORRUPT`, `SQLITE_NOTADB` or a damaged
//! schema ever lead to recovery (see the crate's documentation).

use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// Why an operation on the ledger failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A system call on a file of the ledger failed.
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
    /// The database path is a symbolic link. Nothing was followed, opened or
    /// created.
    #[error(
        "refusing to open the ledger {}: it is a symbolic link, and the ledger follows none; \
         nothing was opened: {}",
        path.display(),
        remedy(path)
    )]
    Symlink {
        /// The database path.
        path: PathBuf,
    },
    /// Something other than a regular file is at the database path.
    #[error(
        "refusing to open the ledger {}: it is {what}, not a regular file; nothing was opened: {}",
        path.display(),
        remedy(path)
    )]
    NotAFile {
        /// The database path.
        path: PathBuf,
        /// What is there ("a directory", "a named pipe", …).
        what: &'static str,
    },
    /// A file of the ledger (`baton.db`, or a file SQLite keeps beside it),
    /// or the state directory, is owned by another user or writable by
    /// others: whoever could write it could rewrite the records runs are
    /// decided by. Nothing was opened.
    #[error("refusing to use the ledger: {0}")]
    Untrusted(#[from] baton_lease::trust::Untrusted),
    /// SQLite failed (a constraint, an I/O error, a full disk, …).
    #[error("failed to {action} in {}: {source}{}", path.display(), io_hint(source))]
    Sqlite {
        /// What was being done.
        action: String,
        /// The database.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// Another writer held the database's lock for longer than the busy
    /// timeout (10 s, or less while a run's supervisor bounds its calls to
    /// renew its lease between them). The database is not damaged; nothing
    /// was written.
    #[error(
        "failed to {action} in {}: another process held the database lock for more than {}; \
         nothing was written",
        path.display(),
        seconds(*waited_ms)
    )]
    Busy {
        /// How long this call waited for the lock, in milliseconds.
        waited_ms: u32,
        /// What was being done.
        action: String,
        /// The database.
        path: PathBuf,
        /// What SQLite said.
        #[source]
        source: rusqlite::Error,
    },
    /// The database was found corrupt again right after a recovery: the
    /// operation was tried on the fresh ledger and failed the same way.
    #[error("failed to {action} in {}: the database is corrupt even after recovery: {reason}", path.display())]
    Corrupt {
        /// What was being done.
        action: String,
        /// The database.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// The database has a schema version this build does not know: a newer
    /// baton wrote it. It is left untouched: it is not corrupt, and moving it
    /// aside would lose the newer ledger. Reading it anyway could misread
    /// it, so nothing that needs the ledger goes on.
    #[error(
        "refusing to open the ledger {}: its schema version is {found}, newer than this baton \
         reads (up to {supported}): a newer baton wrote it; nothing was read or changed: upgrade \
         baton to that version or later",
        path.display()
    )]
    UnknownSchema {
        /// The database.
        path: PathBuf,
        /// The schema version found (`PRAGMA user_version`).
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The repair mutex could not be taken or released (I/O, or a state
    /// directory another user could write, which the mutex refuses).
    #[error("failed to {action} the repair mutex {}: {source}", path.display())]
    Lease {
        /// `take` or `release`.
        action: &'static str,
        /// The mutex file.
        path: PathBuf,
        /// What the mutex said.
        #[source]
        source: Box<baton_lease::Error>,
    },
    /// Another process kept the repair mutex for longer than this one waits.
    #[error(
        "failed to take the repair mutex {} within {waited:?}: {holder}; the ledger was not opened",
        path.display()
    )]
    LeaseBusy {
        /// The mutex file.
        path: PathBuf,
        /// How long this process waited.
        waited: Duration,
        /// Who holds it, for a human.
        holder: String,
    },
    /// An argument cannot be stored, or contradicts the ledger (a run
    /// named with another job than its own). Nothing was written.
    #[error("failed to {action} in {}: {problem}; nothing was written", path.display())]
    Invalid {
        /// What was being done.
        action: String,
        /// The database.
        path: PathBuf,
        /// What is wrong with the argument.
        problem: String,
    },
}

impl Error {
    /// Whether the ledger was written by a newer baton
    /// ([`Error::UnknownSchema`]): it was neither read nor changed, and
    /// nothing may be decided from it until baton is upgraded.
    pub fn is_newer_schema(&self) -> bool {
        matches!(self, Error::UnknownSchema { .. })
    }

    /// Whether the ledger's files themselves are refused: a symbolic link or
    /// anything but a regular file where one of them belongs, or a file or
    /// directory another user could write. Retrying changes nothing; an
    /// operator must act. (A busy, full or corrupt ledger is not refused:
    /// those pass, or are recovered.)
    pub fn is_refused_file(&self) -> bool {
        matches!(
            self,
            Error::Untrusted(_) | Error::Symlink { .. } | Error::NotAFile { .. }
        )
    }
}

/// What to do about something other than a regular file at `path`, a file
/// of the ledger: the database itself is put back (or moved aside, for a new
/// ledger); a file SQLite keeps beside it (`-wal`, `-shm`, `-journal`) is
/// removed, and SQLite makes it again.
fn remedy(path: &std::path::Path) -> &'static str {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if ["-wal", "-shm", "-journal"]
        .iter()
        .any(|s| name.ends_with(s))
    {
        "remove it (SQLite makes the file again beside the database) while no baton runs"
    } else {
        "move it aside and put the database file itself there (with no file there, \
         a new, empty ledger is made)"
    }
}

/// What to look at when SQLite reports a failed read or write of its files
/// (`SQLITE_IOERR`), which it names no better than "disk I/O error": the
/// system refused the operation, and these are the refusals an operator can
/// do something about. Empty for every other failure.
fn io_hint(e: &rusqlite::Error) -> &'static str {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) {
        " (the system refused to read or write the ledger's files: look for a failing disk, \
         a file-size limit on this process (`ulimit -f`), or files replaced under it)"
    } else {
        ""
    }
}

/// How an operation inside a transaction fails, before the ledger adds the
/// action and the path: SQLite's error (which may be corruption, and lead to
/// recovery), a refusal of the caller's arguments, or a schema a newer baton
/// migrated the file to since this connection opened it.
#[derive(Debug)]
pub(crate) enum Fail {
    /// SQLite failed.
    Sql(rusqlite::Error),
    /// An argument cannot be stored, or contradicts the ledger.
    Invalid(String),
    /// The schema version found, newer than this build's: nothing was read.
    Newer(i64),
}

impl From<rusqlite::Error> for Fail {
    fn from(e: rusqlite::Error) -> Self {
        Self::Sql(e)
    }
}

/// A failure of the SQLite ledger as every store's callers see it: the
/// arguments refused in the same words as every store, else this error as
/// it is, classed by what a caller may do about it.
impl From<Error> for baton_store::ledger::Error {
    fn from(e: Error) -> Self {
        use baton_store::ledger::Kind;
        match e {
            Error::Invalid {
                action,
                path,
                problem,
            } => Self::Invalid {
                action,
                store: path.display().to_string(),
                problem,
            },
            e => {
                let kind = match &e {
                    Error::UnknownSchema { .. } => Kind::NewerSchema,
                    e if e.is_refused_file() => Kind::Refused,
                    _ => Kind::Failed,
                };
                Self::store(kind, e)
            }
        }
    }
}

/// A wait in milliseconds, as messages say it: `10 s`, `0.6 s`.
fn seconds(ms: u32) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", f64::from(ms) / 1000.0)
    }
}

/// How long a statement waits for another process's lock before it fails
/// with [`Error::Busy`].
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// A wait as [`Error::Busy`] keeps it.
pub(crate) fn millis(d: std::time::Duration) -> u32 {
    u32::try_from(d.as_millis()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(code: std::ffi::c_int) -> String {
        Error::Sqlite {
            action: "record the end of run r".into(),
            path: "/state/baton.db".into(),
            source: rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None),
        }
        .to_string()
    }

    #[test]
    fn a_refused_read_or_write_says_what_to_look_at_and_nothing_else_does() {
        let io = failed(rusqlite::ffi::SQLITE_IOERR_WRITE);
        assert!(
            io.contains("disk I/O error") && io.contains("ulimit -f"),
            "{io}"
        );
        let full = failed(rusqlite::ffi::SQLITE_FULL);
        assert!(!full.contains("ulimit"), "{full}");
    }
}

#[cfg(test)]
mod remedy_tests {
    use super::*;

    #[test]
    fn a_file_beside_the_database_is_removed_and_the_database_put_back() {
        let side = Error::NotAFile {
            path: "/s/baton.db-shm".into(),
            what: "a named pipe",
        }
        .to_string();
        assert!(side.contains("a named pipe, not a regular file"), "{side}");
        assert!(
            side.contains("remove it (SQLite makes the file again"),
            "{side}"
        );
        let link = Error::Symlink {
            path: "/s/baton.db-wal".into(),
        }
        .to_string();
        assert!(link.contains("remove it"), "{link}");
        assert!(!link.contains("database file itself"), "{link}");
        let main = Error::NotAFile {
            path: "/s/baton.db".into(),
            what: "a directory",
        }
        .to_string();
        assert!(
            main.contains("put the database file itself there"),
            "{main}"
        );
    }
}
