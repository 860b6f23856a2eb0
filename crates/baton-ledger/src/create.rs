//! A new ledger, put in place whole: built under a scratch name beside
//! `baton.db` (`.baton.db.new`), its schema written and WAL mode set, then
//! given its path in one step (`link`), so that `baton.db` never names an
//! empty or half-made file of baton's own, not even after a crash midway.
//! That is what lets an empty `baton.db` be judged as damage
//! ([`crate::db`]): it can only be someone else's doing (`: > baton.db`, a
//! disk that lost the file's blocks), never a creation cut short.
//!
//! This module owns the scratch name. It runs only under the repair mutex
//! held exclusively ([`crate::recover`]), so one process at a time builds
//! there, and what it finds there is the leftover of a creation cut short,
//! never a ledger: it is removed before a new one is built. It never puts
//! a file at `baton.db` when one is there already (a `link` refuses to
//! replace), and it never removes anything at `baton.db`.

use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use crate::error::{BUSY_TIMEOUT, Error};
use crate::failure::{Failure, sqlite_failure, unsound};
use crate::file::{self, SIDE_SUFFIXES};
use crate::schema;

/// The scratch name a new ledger is built under, in the state directory.
pub(crate) const SCRATCH_NAME: &str = ".baton.db.new";

/// Builds a new ledger and links it to `path`, when nothing is there. A
/// file that appears at `path` meanwhile is left as it is, and taken as
/// found by the caller, who judges it. The caller holds the repair mutex
/// exclusively.
///
/// # Errors
///
/// I/O failures, naming the file and what was being done; SQLite's
/// failures while the schema is written (corruption of a file this call
/// just made means a failing disk, and is said as such by the caller).
pub(crate) fn create(path: &Path) -> Result<(), Failure> {
    let scratch = path.with_file_name(SCRATCH_NAME);
    clear(&scratch)?;
    file::create_empty(&scratch, "create the new ledger")?;
    let built = build(&scratch).and_then(|()| {
        sync(&scratch)?;
        match std::fs::hard_link(&scratch, path) {
            Ok(()) => Ok(()),
            // Someone else's file: the caller judges it as found.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(source) => Err(Failure::Error(Error::Io {
                action: "put the new ledger in place at",
                path: path.to_owned(),
                source,
            })),
        }
    });
    // The scratch name goes either way: after the link it is a second name
    // of the ledger, before it a file that never was one.
    let cleared = clear(&scratch);
    built?;
    cleared?;
    if let Some(dir) = path.parent() {
        // Best effort, as for a move aside: with `synchronous = NORMAL` a
        // power loss may undo recent changes anyway; it never leaves an
        // empty `baton.db`, since the name is only ever linked to a whole
        // file.
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(())
}

/// Writes the schema into the empty file at `scratch` and sets WAL mode,
/// then closes the connection. The schema is written in rollback-journal
/// mode, straight into the file; WAL mode is set last, and it writes only
/// the file's header, so nothing is left in a `-wal` the link would not
/// take along.
fn build(scratch: &Path) -> Result<(), Failure> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let sqlite = |what: &'static str| move |e| sqlite_failure(scratch, what, e);
    let mut conn =
        Connection::open_with_flags(scratch, flags).map_err(sqlite("open the new ledger"))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(sqlite("set the busy timeout of the new ledger"))?;
    schema::migrate(&mut conn, scratch).map_err(|u| unsound(scratch, u))?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        .map_err(sqlite("set WAL mode on the new ledger"))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Failure::Error(Error::Invalid {
            action: "set WAL mode on the new ledger".to_owned(),
            path: scratch.to_owned(),
            problem: format!("SQLite kept the journal mode {mode:?}"),
        }));
    }
    conn.close()
        .map_err(|(_, e)| sqlite("close the new ledger")(e))
}

/// Syncs the file at `path` to disk.
fn sync(path: &Path) -> Result<(), Failure> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|source| {
            Failure::Error(Error::Io {
                action: "sync the new ledger",
                path: path.to_owned(),
                source,
            })
        })
}

/// Removes the scratch file and the files SQLite keeps beside it, when they
/// are there.
fn clear(scratch: &Path) -> Result<(), Error> {
    let sides = SIDE_SUFFIXES.iter().map(|s| file::with_suffix(scratch, s));
    for p in std::iter::once(scratch.to_owned()).chain(sides) {
        remove(&p)?;
    }
    Ok(())
}

fn remove(p: &PathBuf) -> Result<(), Error> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(Error::Io {
            action: "remove the leftover of a ledger creation cut short",
            path: p.clone(),
            source,
        }),
    }
}
