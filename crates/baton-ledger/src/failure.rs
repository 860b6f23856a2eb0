//! Why a connection to the database was not made ([`Failure`]), and what
//! SQLite's failures mean. What counts as corrupt is decided here and
//! nowhere else: SQLite's `SQLITE_CORRUPT` and `SQLITE_NOTADB`, a schema
//! whose version names a table that is not there, and an empty `baton.db`
//! (judged by its length before SQLite opens it, in [`crate::db`]: a new
//! ledger is never empty, [`crate::create`]). A busy or locked database is
//! never corrupt, and neither is an I/O error, a full disk, or a schema
//! version this build does not know.
//!
//! This module sorts failures and nothing else: it never opens, moves or
//! repairs a file. What a corrupt file leads to is [`crate::recover`]'s.

use std::path::Path;

use crate::backup;
use crate::error::{BUSY_TIMEOUT, Error};
use crate::schema::{self, Unsound};

/// Why [`crate::db::connect`] did not give a connection.
pub(crate) enum Failure {
    /// The file is corrupt, not a database, or its schema is damaged: the
    /// reason, for [`crate::Recovered::reason`].
    Corrupt(String),
    /// Anything else (busy, I/O, a symbolic link, an unknown version).
    Error(Error),
    /// Nothing is at the path, and the caller may not create it there.
    Missing,
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Self::Error(e)
    }
}

/// Whether SQLite says the file is damaged or is no database at all.
pub(crate) fn is_corrupt(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

/// Whether SQLite gave up waiting for another connection's lock.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// An SQLite failure that is not corruption, as an [`Error`]: busy is told
/// apart, so a locked database never reads as a damaged one.
pub(crate) fn sqlite_error(path: &Path, action: String, source: rusqlite::Error) -> Error {
    if is_busy(&source) {
        return Error::Busy {
            waited_ms: crate::error::millis(BUSY_TIMEOUT),
            action,
            path: path.to_owned(),
            source,
        };
    }
    Error::Sqlite {
        action,
        path: path.to_owned(),
        source,
    }
}

/// An SQLite failure while opening, sorted into corruption and the rest.
pub(crate) fn sqlite_failure(path: &Path, what: &'static str, source: rusqlite::Error) -> Failure {
    if is_corrupt(&source) {
        return Failure::Corrupt(format!("{what}: {source}"));
    }
    Failure::Error(sqlite_error(path, what.to_owned(), source))
}

/// What the schema's probe or migration found wrong, sorted as any other
/// failure to connect.
pub(crate) fn unsound(path: &Path, u: Unsound) -> Failure {
    match u {
        Unsound::Sqlite { what, source } => sqlite_failure(path, what, source),
        Unsound::Missing { version, table } => Failure::Corrupt(format!(
            "the schema of version {version} has no table {table}"
        )),
        Unsound::Unknown(found) => Failure::Error(Error::UnknownSchema {
            path: path.to_owned(),
            found,
            supported: schema::VERSION,
        }),
        Unsound::Backup(backup::Failed::Sqlite(source)) => {
            sqlite_failure(path, "copy the ledger before migrating it", source)
        }
        Unsound::Backup(backup::Failed::Io {
            action,
            path,
            source,
        }) => Failure::Error(Error::Io {
            action,
            path,
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_not_corrupt() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        let corrupt = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT),
            None,
        );
        assert!(!is_corrupt(&busy));
        assert!(is_corrupt(&corrupt));
        let e = sqlite_error(Path::new("/s/baton.db"), "write".into(), busy);
        assert!(matches!(e, Error::Busy { .. }), "{e:?}");
        assert!(!e.to_string().contains("corrupt"), "{e}");
    }
}
