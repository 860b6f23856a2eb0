//! One connection to the database file, set up the one way the ledger uses
//! SQLite: the settings below, a probed schema, the current version.
//!
//! [`connect`] is the only place that opens the database; it runs under the
//! repair mutex (see [`crate::recover`]), never on its own. What it checks,
//! in order: the path holds a regular file reached through no symbolic link
//! (put in place whole when missing and the caller may create it,
//! [`crate::create`]), owned by this user or root and writable by nobody
//! else, and not empty (baton never leaves an empty ledger, so an empty one
//! was emptied or cut short by something else: it is damage, and SQLite,
//! which takes an empty file for a new database and deletes a `-wal` it
//! finds beside one, never opens it), and so are the side files SQLite will open by name when they
//! are there (`-wal`, `-shm`, `-journal`), SQLite opens it with `SQLITE_OPEN_NOFOLLOW`,
//! the connection gets its settings, the probe reads the schema and the first
//! row of every b-tree (writing nothing, so a corrupt file is moved aside
//! byte for byte as it was found), WAL mode is set, and the schema is
//! migrated. A connection also remembers which file it opened, so the ledger
//! can tell when the path has moved on to another file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::create;
use crate::error::{BUSY_TIMEOUT, Error};
use crate::failure::{Failure, sqlite_failure, unsound};
use crate::file::{self, FileId};
use crate::schema;

/// A set-up connection, the file it opened and the log beside it.
pub(crate) struct Db {
    conn: Connection,
    id: FileId,
    /// The `-wal` this connection reads and writes, as found once the
    /// connection had opened it (`None` when none could be seen then).
    log: Option<FileId>,
    path: PathBuf,
}

/// Why [`Db::save_log`] could not copy the log. Its message is the reason
/// a ledger moved aside gives for the transactions its removed log lost.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LogNotSaved {
    /// Another log, not empty, is at the log's path.
    #[error("another log is at {}", .0.display())]
    Replaced(PathBuf),
    /// The log's path could not be looked at.
    #[error(transparent)]
    Look(Error),
    /// SQLite's checkpoint failed.
    #[error(transparent)]
    Checkpoint(rusqlite::Error),
}

/// Opens, probes and migrates the database at `path`, creating it when
/// missing and `may_create`. The caller holds the repair mutex, exclusively
/// when it may create.
pub(crate) fn connect(path: &Path, may_create: bool) -> Result<Db, Failure> {
    let id = match file::look(path)? {
        Some(found) => judge(path, found)?,
        None if may_create => {
            create::create(path)?;
            match file::look(path)? {
                Some(found) => judge(path, found)?,
                None => {
                    return Err(Failure::Error(Error::Io {
                        action: "create the ledger",
                        path: path.to_owned(),
                        source: std::io::Error::new(
                            std::io::ErrorKind::NotFound,
                            "the ledger put in place was removed at once",
                        ),
                    }));
                }
            }
        }
        None => return Err(Failure::Missing),
    };
    file::check_sides(path)?;
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|source| sqlite_failure(path, "open the ledger", source))?;
    let mut db = Db {
        conn,
        id,
        log: None,
        path: path.to_owned(),
    };
    db.configure()?;
    let version = schema::probe(&db.conn).map_err(|u| unsound(path, u))?;
    let mode = into_wal(&db.conn)
        .map_err(|source| sqlite_failure(path, "set WAL mode on the ledger", source))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Failure::Error(Error::Invalid {
            action: "set WAL mode on the ledger".to_owned(),
            path: path.to_owned(),
            problem: format!("SQLite kept the journal mode {mode:?}"),
        }));
    }
    if version < schema::VERSION {
        schema::migrate(&mut db.conn, path).map_err(|u| unsound(path, u))?;
    }
    // The probe's read opened the log (SQLite creates it when missing), and
    // SQLite keeps its descriptor for the connection's life.
    db.log = file::identify(&file::with_suffix(path, "-wal"))?;
    Ok(db)
}

/// The file found at `path`, unless it is empty: damage (see the module's
/// documentation).
fn judge(path: &Path, (id, len): (FileId, u64)) -> Result<FileId, Failure> {
    if len == 0 {
        return Err(Failure::Corrupt(empty(path)));
    }
    Ok(id)
}

/// Why an empty ledger is judged damaged, for the alert that says so.
pub(crate) fn empty(path: &Path) -> String {
    format!(
        "{} is empty (0 bytes); baton never leaves an empty ledger, so it was emptied or cut \
         short by something else; restore it from a backup to get its records back",
        path.display()
    )
}

/// Puts the file in WAL mode (a no-op once it is), and says the mode it
/// is in. Turning a rollback-journal file (a ledger of the first schema)
/// into WAL needs the file's exclusive lock, and SQLite answers `BUSY` at
/// once, without its busy handler, when another connection reads the file
/// at that instant (another process opening it): the switch is tried again
/// every 10 ms for up to [`BUSY_TIMEOUT`], as any other wait for the file.
fn into_wal(conn: &Connection) -> rusqlite::Result<String> {
    use baton_lease::Clock as _;
    let clock = baton_lease::SystemClock;
    let until = clock.boot() + BUSY_TIMEOUT;
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
            Err(rusqlite::Error::SqliteFailure(f, _))
                if f.code == rusqlite::ErrorCode::DatabaseBusy && clock.boot() < until =>
            {
                clock.sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

impl Db {
    /// The settings, each justified in the crate's documentation.
    fn configure(&self) -> Result<(), Failure> {
        let set = |what: &'static str, r: rusqlite::Result<()>| {
            r.map_err(|source| sqlite_failure(&self.path, what, source))
        };
        set(
            "set the busy timeout of the ledger",
            self.conn.busy_timeout(BUSY_TIMEOUT),
        )?;
        // On close SQLite would delete `-wal` and `-shm` *by name*; after a
        // move-aside those names belong to the new ledger (see the crate's
        // documentation, "Connection settings").
        set(
            "configure the ledger",
            self.conn
                .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
                .map(drop),
        )?;
        set(
            "configure the ledger",
            self.conn
                .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;"),
        )?;
        Ok(())
    }

    /// The connection.
    pub(crate) fn conn(&mut self) -> &mut Connection {
        &mut self.conn
    }

    /// The file this connection opened.
    pub(crate) fn id(&self) -> FileId {
        self.id
    }

    /// Whether the log this connection writes to is still the `-wal` at
    /// the path. When it is not (removed alone, or replaced), the
    /// connection's commits go where no newcomer reads them.
    ///
    /// # Errors
    ///
    /// As [`file::identify`]: a symbolic link or anything but a regular
    /// file at the log's path, or one that may not be trusted.
    pub(crate) fn log_in_place(&self) -> Result<bool, Error> {
        let at_path = file::identify(&file::with_suffix(&self.path, "-wal"))?;
        Ok(self.log.is_none() || at_path == self.log)
    }

    /// Copies what this connection's log holds into the database file
    /// (a full checkpoint), for a log no longer at the path: the caller
    /// holds the repair mutex exclusively, and no other log is at the path
    /// (none, or an empty one a newcomer made), so every connection still
    /// at work shares this one. Says whether every frame was copied.
    ///
    /// # Errors
    ///
    /// [`LogNotSaved`]: another log at the path, a failed look at it, or a
    /// failed checkpoint.
    pub(crate) fn save_log(&mut self) -> Result<bool, LogNotSaved> {
        let log = file::with_suffix(&self.path, "-wal");
        match file::look(&log) {
            Ok(None | Some((_, 0))) => {}
            Ok(Some(_)) => return Err(LogNotSaved::Replaced(log)),
            Err(e) => return Err(LogNotSaved::Look(e)),
        }
        let (busy, frames, copied): (i64, i64, i64) = self
            .conn
            .query_row("PRAGMA wal_checkpoint(FULL)", [], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .map_err(LogNotSaved::Checkpoint)?;
        Ok(busy == 0 && frames == copied)
    }

    /// Closes the connection without touching the file: for a file found
    /// corrupt or no longer at the path. (No connection checkpoints on
    /// close: SQLite's automatic checkpoint, every 1,000 pages, run by the
    /// writer that crosses it, keeps the WAL short, and a checkpoint on every
    /// close would make each of a tick's many short-lived processes copy the
    /// log and `fsync` the database on its way out.)
    pub(crate) fn abandon(self) {}
}
