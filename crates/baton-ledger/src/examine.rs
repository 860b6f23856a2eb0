//! A look at the ledger that changes nothing, for an operator's check
//! (`baton doctor`): its schema version against this build's, and SQLite's
//! full `PRAGMA integrity_check`, which the open's probe leaves out because
//! it reads the whole database.
//!
//! Unlike [`Ledger::open`], an examination creates no database, migrates
//! nothing and never moves a corrupt file aside: it opens `baton.db`
//! read-only (after the same checks of the file and the files SQLite keeps
//! beside it), under the repair mutex held shared so that no recovery
//! renames the files meanwhile, and reports what it found. The only files
//! it may create are the repair mutex, as every open does, and the empty
//! `-wal` and `-shm` SQLite makes beside a WAL database for any reader.

use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};

use crate::error::{BUSY_TIMEOUT, Error};
use crate::ledger::Ledger;
use crate::schema::{self, Unsound};
use crate::{failure, file, recover};

/// How many of `integrity_check`'s complaints are kept.
const MAX_PROBLEMS: usize = 20;

/// What an examination of the ledger found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Examined {
    /// `STATE_DIR/baton.db`.
    pub path: PathBuf,
    /// The schema version the file says it has (`PRAGMA user_version`;
    /// `None` when it could not be read: the file is no database).
    pub version: Option<i64>,
    /// The newest version this build reads and writes: an older one is
    /// migrated in place by the next open, a newer one refused.
    pub supported: i64,
    /// What is damaged, in SQLite's words (at most 20 lines): empty when
    /// the integrity check passed.
    pub damage: Vec<String>,
}

impl Examined {
    /// Whether the file is sound: a database whose integrity check passed
    /// and whose version promises nothing missing.
    pub fn sound(&self) -> bool {
        self.version.is_some() && self.damage.is_empty()
    }
}

impl Ledger {
    /// Examines `STATE_DIR/baton.db` without changing it: `Ok(None)` when
    /// there is no ledger yet.
    ///
    /// # Errors
    ///
    /// As [`Ledger::check`] (a file or directory that may not be trusted, a
    /// symbolic link, a special file), the repair mutex held by a recovery
    /// for longer than 10 s, a database locked for longer than 10 s
    /// ([`Error::Busy`]), and SQLite failures that are not damage (an I/O
    /// error). Damage is no error: it is in [`Examined::damage`].
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// assert!(Ledger::examine(dir.path())?.is_none());
    /// Ledger::open(dir.path(), "2026-11-29T03:15:00Z".parse()?)?;
    /// let e = Ledger::examine(dir.path())?.expect("a ledger");
    /// assert!(e.sound() && e.version == Some(e.supported));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn examine(state_dir: &Path) -> Result<Option<Examined>, Error> {
        let real = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_owned());
        file::check_dir(&real)?;
        let path = real.join(file::DB_NAME);
        if file::identify(&path)?.is_none() {
            return Ok(None);
        }
        file::check_sides(&path)?;
        let _shared = recover::hold_shared(&real.join(file::REPAIR_NAME))?;
        // Looked at again under the mutex: a recovery may have moved it.
        let Some((_, len)) = file::look(&path)? else {
            return Ok(None);
        };
        file::check_sides(&path)?;
        if len == 0 {
            // Never opened: SQLite would take it for a new database and
            // delete a `-wal` beside it.
            return Ok(Some(Examined {
                path: path.clone(),
                version: None,
                supported: schema::VERSION,
                damage: vec![crate::db::empty(&path)],
            }));
        }
        examine_file(&path).map(Some)
    }
}

fn examine_file(path: &Path) -> Result<Examined, Error> {
    let mut found = Examined {
        path: path.to_owned(),
        version: None,
        supported: schema::VERSION,
        damage: Vec::new(),
    };
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW;
    let sqlite = |what: &str, e: rusqlite::Error| failure::sqlite_error(path, what.to_owned(), e);
    let conn = match Connection::open_with_flags(path, flags) {
        Ok(c) => c,
        Err(e) if failure::is_corrupt(&e) => {
            found.damage.push(e.to_string());
            return Ok(found);
        }
        Err(e) => return Err(sqlite("open the ledger read-only", e)),
    };
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| sqlite("set the busy timeout of the ledger", e))?;
    // As every connection: nothing is checkpointed or deleted on close.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
        .map_err(|e| sqlite("configure the ledger", e))?;
    match schema::probe(&conn) {
        Ok(v) => found.version = Some(v),
        Err(Unsound::Unknown(v)) => {
            // A newer build's schema: its tables are not this build's to
            // judge, but SQLite's own check still applies.
            found.version = Some(v);
        }
        Err(Unsound::Missing { version, table }) => {
            found.version = Some(version);
            found.damage.push(format!(
                "the schema of version {version} has no table {table}"
            ));
        }
        Err(Unsound::Sqlite { what, source }) if failure::is_corrupt(&source) => {
            found.damage.push(format!("{what}: {source}"));
            return Ok(found);
        }
        Err(Unsound::Sqlite { what, source }) => return Err(sqlite(what, source)),
        // A probe migrates nothing, so it copies nothing either.
        Err(Unsound::Backup(failed)) => {
            found
                .damage
                .push(format!("the ledger's copy could not be made: {failed:?}"));
        }
    }
    match integrity(&conn) {
        Ok(lines) => found.damage.extend(lines),
        Err(e) if failure::is_corrupt(&e) => found.damage.push(e.to_string()),
        Err(e) => return Err(sqlite("check the integrity of the ledger", e)),
    }
    found.damage.truncate(MAX_PROBLEMS);
    Ok(found)
}

/// `PRAGMA integrity_check`'s complaints: none when it says `ok`.
fn integrity(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare(&format!("PRAGMA integrity_check({MAX_PROBLEMS})"))?;
    let lines = stmt
        .query_map([], |row| row.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(lines.into_iter().filter(|l| l != "ok").collect())
}

#[cfg(test)]
mod tests {
    use baton_store::ledger::Records;

    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-11-29T03:15:00Z".parse().unwrap()
    }

    #[test]
    fn garbage_is_damage_and_stays_where_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("baton.db");
        std::fs::write(&db, vec![0x5a; 8192]).unwrap();
        let e = Ledger::examine(dir.path()).unwrap().unwrap();
        assert!(!e.sound(), "{e:?}");
        assert!(!e.damage.is_empty());
        assert_eq!(std::fs::read(&db).unwrap(), vec![0x5a; 8192]);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("corrupt"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn damage_past_the_first_rows_is_found() {
        use std::os::unix::fs::FileExt;
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(dir.path(), now()).unwrap();
        let names: Vec<String> = (0..2000)
            .map(|i| format!("job-{i:05}-{}", "x".repeat(40)))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        l.see_jobs(&refs, now()).unwrap();
        l.checkpoint().unwrap();
        drop(l);
        let db = dir.path().join("baton.db");
        // Everything is in the database file now; without its log, every
        // page is read from the file.
        for side in ["baton.db-wal", "baton.db-shm"] {
            std::fs::remove_file(dir.path().join(side)).unwrap();
        }
        let len = std::fs::metadata(&db).unwrap().len();
        assert!(len > 16 * 4096, "{len}");
        // A page in the middle of the jobs table, not the first leaf nor
        // the root the probe reads.
        let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        f.write_all_at(&[0xA5; 4096], (len / 4096 / 2) * 4096)
            .unwrap();
        drop(f);
        let e = Ledger::examine(dir.path()).unwrap().unwrap();
        assert!(!e.damage.is_empty(), "{e:?}");
    }

    #[test]
    fn a_sound_ledger_passes_and_an_older_version_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let mut l = Ledger::open(dir.path(), now()).unwrap();
        l.see_jobs(&["a"], now()).unwrap();
        drop(l);
        let e = Ledger::examine(dir.path()).unwrap().unwrap();
        assert!(e.sound(), "{e:?}");
        assert_eq!(e.version, Some(schema::VERSION));
        let conn = Connection::open(dir.path().join("baton.db")).unwrap();
        conn.execute_batch(&format!("PRAGMA user_version = {}", schema::VERSION + 1))
            .unwrap();
        drop(conn);
        let e = Ledger::examine(dir.path()).unwrap().unwrap();
        assert_eq!(e.version, Some(schema::VERSION + 1));
        assert!(e.sound(), "{e:?}");
    }
}
