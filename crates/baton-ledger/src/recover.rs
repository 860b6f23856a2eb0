//! Recovery: a corrupt database is moved aside, whole and once, and a fresh
//! ledger takes its place, so that a damaged file never stops the scheduler.
//!
//! What counts as corrupt is decided in [`crate::failure`] and nowhere
//! else: SQLite's `SQLITE_CORRUPT` and `SQLITE_NOTADB`, a damaged schema,
//! an empty `baton.db`; never a busy or locked database, an I/O error, a
//! full disk, or a schema version this build does not know.
//!
//! Every connection is made under the *repair mutex*, a reader-writer file
//! mutex on `STATE_DIR/.baton.db.repair` (`baton_lease::FileMutex`): held
//! shared to open a sound file that is there (so the many processes of one
//! tick open at once), exclusive to create the file, set old side files
//! aside, or move a corrupt database aside. That one mutex serialises two
//! hazards:
//!
//! - **Two processes finding the same corruption.** Only the first moves the
//!   file. The second, once it holds the mutex, looks at the path again: a
//!   file other than the one it found corrupt is probed like any other, and
//!   used when sound. So there is one `baton.db.corrupt-*` per corrupt file,
//!   and one [`Recovered`] (one alert) between all processes.
//! - **Opening while the files are being renamed.** SQLite opens `-wal` and
//!   `-shm` by name, lazily, after the database itself. A process opening
//!   between the renames could pair the new database with the old WAL (SQLite
//!   deletes a WAL it finds beside an empty database) or with the old shared
//!   memory (which another process still maps). Under the mutex, no one opens
//!   while a move is under way, and a connection opened before a move keeps
//!   its own three descriptors, all of the old files.
//!
//! The mutex is held for a connection's set-up (a probe of a few reads, and
//! the migration of a fresh file) and a move (a few renames), never across
//! an operation. The kernel drops it when its holder dies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_lease::{FileMutex, Sharing};
use jiff::Timestamp;

use baton_store::ledger::{Recovered, Reset};

use crate::db::{self, Db};
use crate::error::Error;
use crate::failure::Failure;
use crate::file::{self, FileId, SIDE_SUFFIXES};

/// How long a process waits for the repair lease before giving up.
pub(crate) const LEASE_WAIT: Duration = Duration::from_secs(10);

/// A file a connection found corrupt while it was in use.
pub(crate) struct Suspect {
    /// The file the connection had open.
    pub(crate) id: FileId,
    /// What SQLite said, or what happened to the file.
    pub(crate) reason: String,
    /// The connection, kept open when its log was removed from under it:
    /// what that log holds is copied into the file before it is moved
    /// aside, through this connection, the last way to read it.
    pub(crate) lost_log: Option<Db>,
}

/// Connects to the database at `path` under the repair lease, moving it
/// aside first when it is corrupt.
///
/// With a `suspect`, the caller's own connection found the file corrupt: if
/// the path still names that file, it is moved aside without a second look
/// (the probe reads only the first rows and could pass a file whose
/// corruption lies deeper). If the path names another file, another process
/// has recovered already, and that file is probed like any other.
///
/// `now` stamps the name of a moved file. Returns the connection and, when
/// this call moved a file, what it moved.
pub(crate) fn connect(
    state_dir: &Path,
    path: &Path,
    suspect: Option<Suspect>,
    now: Timestamp,
) -> Result<(Db, Option<Recovered>), Error> {
    let repair = state_dir.join(file::REPAIR_NAME);
    // The common case, shared: a sound file that is there, opened by as
    // many processes at once as a tick starts.
    if suspect.is_none() {
        let shared = hold(&repair, Sharing::Shared)?;
        if file::identify(path)?.is_some() {
            match db::connect(path, false) {
                Ok(db) => return Ok((db, None)),
                Err(Failure::Error(e)) => return Err(e),
                Err(Failure::Corrupt(_) | Failure::Missing) => {}
            }
        }
        drop(shared);
    }
    // A file to create, to set aside, or to judge again: alone.
    let exclusive = hold(&repair, Sharing::Exclusive)?;
    let connected = connect_held(path, suspect, now);
    drop(exclusive);
    connected
}

/// Takes the repair mutex shared (no recovery renames the files while it
/// is held), waiting at most [`LEASE_WAIT`]: for a look that opens the
/// database without [`connect`] ([`crate::Ledger::examine`]).
pub(crate) fn hold_shared(repair: &Path) -> Result<FileMutex, Error> {
    hold(repair, Sharing::Shared)
}

/// Takes the repair mutex in `sharing` mode, waiting at most
/// [`LEASE_WAIT`].
fn hold(repair: &Path, sharing: Sharing) -> Result<FileMutex, Error> {
    match FileMutex::lock(repair, sharing, LEASE_WAIT) {
        Ok(Some(m)) => Ok(m),
        Ok(None) => Err(Error::LeaseBusy {
            path: repair.to_owned(),
            waited: LEASE_WAIT,
            holder: "another process kept it while it moved the ledger aside".into(),
        }),
        Err(source) => Err(Error::Lease {
            action: "take",
            path: repair.to_owned(),
            source: Box::new(source),
        }),
    }
}

fn connect_held(
    path: &Path,
    suspect: Option<Suspect>,
    now: Timestamp,
) -> Result<(Db, Option<Recovered>), Error> {
    let mut recovered = None;
    match file::identify(path)? {
        Some(id) if suspect.as_ref().is_some_and(|s| s.id == id) => {
            let (mut reason, lost_log) =
                suspect.map(|s| (s.reason, s.lost_log)).unwrap_or_default();
            if let Some(mut db) = lost_log {
                reason.push_str(&match db.save_log() {
                    Ok(true) => "; what it held was copied into the file moved aside".to_owned(),
                    Ok(false) => "; not all it held could be copied into the file moved aside \
                                  (a reader held it): the transactions left in it are lost"
                        .to_owned(),
                    Err(why) => format!(
                        "; what it held could not be copied into the file moved aside ({why}): \
                         the transactions since its last checkpoint are lost"
                    ),
                });
                db.abandon();
            }
            recovered = Some(move_aside(path, now, reason)?);
        }
        Some(_) => {}
        None => set_aside_orphans(path, now)?,
    }
    loop {
        match db::connect(path, true) {
            Ok(db) => return Ok((db, recovered)),
            Err(Failure::Error(e)) => return Err(e),
            // OK because a connection that may create never says missing;
            // this only names the impossible case.
            Err(Failure::Missing) => {
                return Err(Error::Invalid {
                    action: "open the ledger".to_owned(),
                    path: path.to_owned(),
                    problem: "the ledger was neither found nor created".to_owned(),
                });
            }
            Err(Failure::Corrupt(reason)) if recovered.is_none() => {
                recovered = Some(move_aside(path, now, reason)?);
            }
            // A file this call created itself is corrupt: nothing more to
            // move; the disk is failing, not the ledger.
            Err(Failure::Corrupt(reason)) => {
                return Err(Error::Corrupt {
                    action: "open the ledger".to_owned(),
                    path: path.to_owned(),
                    reason,
                });
            }
        }
    }
}

/// Sets aside the side files of a database that is gone (an operator
/// removed `baton.db` alone), as `baton.db.orphaned-STAMP-wal` and so on.
/// A fresh database must never be paired with them: SQLite would take the
/// old shared memory, still mapped by the old file's connections, for its
/// own. The recovery protocol never leaves them behind: it moves the side
/// files first and the database last.
fn set_aside_orphans(path: &Path, now: Timestamp) -> Result<(), Error> {
    let mut orphans = Vec::new();
    for suffix in SIDE_SUFFIXES {
        let side = file::with_suffix(path, suffix);
        if exists(&side)? {
            orphans.push((side, suffix));
        }
    }
    if orphans.is_empty() {
        return Ok(());
    }
    let target = free_name(path, "orphaned", now)?;
    for (side, suffix) in orphans {
        rename(
            &side,
            &file::with_suffix(&target, suffix),
            "set aside the orphaned ledger file",
        )?;
    }
    Ok(())
}

/// Renames `path` and its side files to `path.corrupt-STAMP` (with a `.N`
/// when that name is taken). The side files go first: a crash midway leaves
/// the database where it was (to be found corrupt again and moved), never a
/// stale WAL beside a fresh database.
fn move_aside(path: &Path, now: Timestamp, reason: String) -> Result<Recovered, Error> {
    let target = free_name(path, "corrupt", now)?;
    for suffix in SIDE_SUFFIXES {
        let side = file::with_suffix(path, suffix);
        if exists(&side)? {
            rename(
                &side,
                &file::with_suffix(&target, suffix),
                "move aside the corrupt ledger file",
            )?;
        }
    }
    rename(path, &target, "move aside the corrupt ledger")?;
    if let Some(dir) = path.parent() {
        // Best effort: the renames are done either way; with
        // `synchronous = NORMAL`, a power loss may undo recent changes anyway.
        let _ = std::fs::File::open(dir).and_then(|d| d.sync_all());
    }
    Ok(Recovered {
        moved_to: target,
        reason,
        how: Reset::Corrupt,
    })
}

/// `path.LABEL-STAMP`, or `path.LABEL-STAMP.N` for the first `N` such that
/// neither the name nor any of its side files exists.
fn free_name(path: &Path, label: &str, now: Timestamp) -> Result<PathBuf, Error> {
    let base = file::with_suffix(
        path,
        &format!(".{label}-{}", now.strftime("%Y%m%dT%H%M%SZ")),
    );
    let mut target = base.clone();
    let mut n = 1;
    while taken(&target)? {
        target = file::with_suffix(&base, &format!(".{n}"));
        n += 1;
    }
    Ok(target)
}

/// Whether `target` or any of its side files exists.
fn taken(target: &Path) -> Result<bool, Error> {
    if exists(target)? {
        return Ok(true);
    }
    for suffix in SIDE_SUFFIXES {
        if exists(&file::with_suffix(target, suffix))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether anything, a symbolic link included, is at `p`.
fn exists(p: &Path) -> Result<bool, Error> {
    match std::fs::symlink_metadata(p) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(Error::Io {
            action: "inspect",
            path: p.to_owned(),
            source,
        }),
    }
}

fn rename(from: &Path, to: &Path, action: &'static str) -> Result<(), Error> {
    std::fs::rename(from, to).map_err(|source| Error::Io {
        action,
        path: from.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc_and_compact() {
        let now: Timestamp = "2026-11-29T03:15:00.123456Z".parse().unwrap();
        assert_eq!(
            now.strftime("%Y%m%dT%H%M%SZ").to_string(),
            "20261129T031500Z"
        );
    }

    #[test]
    fn a_taken_name_gets_a_number() {
        let dir = tempfile::tempdir().unwrap();
        let now: Timestamp = "2026-11-29T03:15:00Z".parse().unwrap();
        let db = dir.path().join("baton.db");
        std::fs::write(&db, b"one").unwrap();
        let first = move_aside(&db, now, "r".into()).unwrap();
        std::fs::write(&db, b"two").unwrap();
        std::fs::write(file::with_suffix(&db, "-wal"), b"wal").unwrap();
        let second = move_aside(&db, now, "r".into()).unwrap();
        assert_eq!(
            first.moved_to,
            dir.path().join("baton.db.corrupt-20261129T031500Z")
        );
        assert_eq!(
            second.moved_to,
            dir.path().join("baton.db.corrupt-20261129T031500Z.1")
        );
        assert_eq!(std::fs::read(&second.moved_to).unwrap(), b"two");
        assert_eq!(
            std::fs::read(file::with_suffix(&second.moved_to, "-wal")).unwrap(),
            b"wal"
        );
        assert!(!db.exists());
    }

    /// The connection's own report is believed while the path names the file
    /// it had open; once another process has replaced that file, the report
    /// is stale and nothing more is moved.
    #[test]
    fn a_suspect_is_moved_once_and_only_while_it_is_at_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(file::DB_NAME);
        let now: Timestamp = "2026-11-29T03:15:00Z".parse().unwrap();
        let (db, recovered) = connect(dir.path(), &path, None, now).unwrap();
        assert!(recovered.is_none());
        let old = db.id();
        db.abandon();
        // A sound file, but the connection said corrupt: a probe that reads
        // only first rows must not overrule it.
        let suspect = || Suspect {
            id: old,
            reason: "database disk image is malformed".into(),
            lost_log: None,
        };
        let (db, recovered) = connect(dir.path(), &path, Some(suspect()), now).unwrap();
        let recovered = recovered.expect("moved aside");
        assert!(recovered.moved_to.exists());
        assert_ne!(db.id(), old);
        // A second process with the same report finds the file replaced.
        let (again, recovered) = connect(dir.path(), &path, Some(suspect()), now).unwrap();
        assert!(recovered.is_none());
        assert_eq!(again.id(), db.id());
        let moved = std::fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                let name = name.to_string_lossy();
                name.starts_with("baton.db.corrupt-")
                    && !name.ends_with("-wal")
                    && !name.ends_with("-shm")
            })
            .count();
        assert_eq!(moved, 1);
    }

    #[test]
    fn errors_can_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
        send_sync::<Recovered>();
    }
}
