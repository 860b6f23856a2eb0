//! The copy of a ledger kept before its schema is migrated:
//! `STATE_DIR/baton.db.bak-vN`, the whole database as schema version `N`
//! left it, so that going back to the baton that wrote it is a rename.
//!
//! It is written while the migration's `BEGIN IMMEDIATE` transaction holds
//! the write lock and before its first statement, with SQLite's online
//! backup API reading through a second connection of its own (SQLite
//! refuses to copy from a connection inside a write transaction). No
//! process can commit while the lock is held, so that connection reads
//! exactly what the migration starts from, the write-ahead log included.
//! It is written to `baton.db.bak-vN.partial`
//! (mode `0600`, never through a symbolic link), synced, renamed over any
//! older copy of the same version, and the directory synced, so the name
//! only ever holds a whole copy. One copy per version: the newest
//! migration from `N` replaces the copy an older one left.
//!
//! Only [`write`] creates these files; nothing in baton reads or deletes
//! them. A copy that cannot be written stops the migration (fail closed):
//! the ledger stays as it was, and the error names the file.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rusqlite::backup::{Backup, StepResult};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::file;

/// Where the copy of the ledger at `path`, at schema version `version`,
/// is kept.
pub(crate) fn path_for(path: &Path, version: i64) -> PathBuf {
    file::with_suffix(path, &format!(".bak-v{version}"))
}

/// Why the copy was not written.
#[derive(Debug)]
pub(crate) enum Failed {
    /// SQLite failed, reading the ledger or writing the copy.
    Sqlite(rusqlite::Error),
    /// A file operation failed.
    Io {
        /// What was being done, as a verb phrase.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

/// Copies the database at `path` (schema `version`) to [`path_for`]. The
/// caller's transaction holds the database's write lock and has written
/// nothing yet. Returns where the copy is.
pub(crate) fn write(path: &Path, version: i64) -> Result<PathBuf, Failed> {
    let target = path_for(path, version);
    let partial = file::with_suffix(&target, ".partial");
    let io = |action: &'static str, p: &Path| {
        let p = p.to_owned();
        move |source| Failed::Io {
            action,
            path: p,
            source,
        }
    };
    // A partial copy is what a migration that died midway left; only the
    // process that holds the ledger's write lock writes one, so it is ours.
    match fs::remove_file(&partial) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(io("remove the unfinished copy", &partial)(e)),
    }
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(file::nofollow())
        .open(&partial)
        .map_err(io("create the copy of the ledger", &partial))?;
    copy(path, &partial).map_err(Failed::Sqlite)?;
    File::open(&partial)
        .and_then(|f| f.sync_all())
        .map_err(io("sync the copy of the ledger", &partial))?;
    fs::rename(&partial, &target).map_err(io("put in place the copy of the ledger", &target))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("sync the state directory", dir))?;
    Ok(target)
}

/// The whole database at `from`, in one step of the backup API, into the
/// empty file at `to`.
fn copy(from: &Path, to: &Path) -> rusqlite::Result<()> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let source = Connection::open_with_flags(from, flags)?;
    // As every connection to the ledger: closing it deletes and
    // checkpoints nothing (see the crate's documentation).
    source.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    source.busy_timeout(crate::error::BUSY_TIMEOUT)?;
    let mut dest = Connection::open_with_flags(to, flags)?;
    // No journal beside the copy: until it is renamed, a copy cut short is
    // only an unfinished file, written again next time.
    dest.pragma_update(None, "journal_mode", "OFF")?;
    {
        let backup = Backup::new(&source, &mut dest)?;
        match backup.step(-1)? {
            StepResult::Done => {}
            // Nothing else has the copy open, and a reader of the ledger
            // waits for no writer, so one step copies it all; should SQLite
            // say otherwise, the copy is refused.
            _ => {
                return Err(rusqlite::Error::SqliteFailure(
                    rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
                    Some("the copy did not complete in one step".into()),
                ));
            }
        }
    }
    dest.close().map_err(|(_, e)| e)?;
    source.close().map_err(|(_, e)| e)
}
