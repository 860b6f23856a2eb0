//! [`Ledger`]: one connection to `STATE_DIR/baton.db`, and the transaction
//! boundaries of every operation.
//!
//! [`Ledger`] is the SQLite store's [`Backend`]: every
//! [`baton_store::ledger::Records`] call is one transaction it runs, whose
//! body (written once, in `baton-store`) is made of the statements in
//! `statements.rs`, each the SQL of the module named after its table.
//! Writes begin with `BEGIN IMMEDIATE` (the write lock is taken first, so a
//! transaction never has to upgrade a read lock and fail with
//! `SQLITE_BUSY` midway), reads with a deferred `BEGIN` (one consistent
//! snapshot for a run and its attempts).
//!
//! Before each call the ledger checks, with one `lstat`, that `baton.db` is
//! still the file its connection opened, and reconnects when another process
//! has moved it aside; with a second, that `baton.db-wal` is still the log
//! the connection writes to, and moves the file aside when it is not (the
//! crate's documentation, "Recovery"); inside each transaction, before anything else, it
//! reads the schema version again, and refuses the call
//! ([`Error::UnknownSchema`]) when a newer baton has migrated the file
//! since. A call that fails with corruption recovers
//! ([`crate::recover`]) and is tried once more, on the fresh ledger.

use std::path::{Path, PathBuf};
use std::time::Duration;

use baton_store::ledger::{Backend, Mode, Recovered, Reset, Withdrawn};
use jiff::Timestamp;
use rusqlite::TransactionBehavior;

use crate::ahead;
use crate::db::Db;
use crate::error::{BUSY_TIMEOUT, Error, Fail};
use crate::failure;
use crate::file;
use crate::recover::{self, Suspect};
use crate::rows;
use crate::statements::Sql;

/// The scheduler's ledger: one connection to `STATE_DIR/baton.db`.
///
/// Open one per process (or per thread: it is `Send`, not `Sync`). Every
/// method is one short transaction; nothing is held between calls but the
/// connection. Dropping it closes the connection (without a checkpoint:
/// SQLite's automatic one keeps the WAL short).
///
/// It does not serialise runs: that is the lease's work. It records what
/// runs did, and decides each occurrence once.
///
/// # Example
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use baton_ledger::Ledger;
/// use baton_store::ledger::{Begun, Finished, NewRun, Records};
/// use baton_store::words::RunVerdict;
/// use jiff::Timestamp;
///
/// let now: Timestamp = "2026-11-29T03:15:00Z".parse()?;
/// let mut ledger = Ledger::open(dir.path(), now)?;
/// let run = NewRun {
///     run_id: "9f3c1ab27de40518".into(),
///     job: "nightly".into(),
///     occurrence: Some(now.as_second()),
///     fence: Some(42),
///     host: "ci-1".into(),
///     pid: 4242,
///     started: now,
///     backfill: false,
/// };
/// assert_eq!(ledger.begin_run(&run)?, Begun::Started);
/// let finished = Finished {
///     run_id: run.run_id.clone(),
///     job: run.job.clone(),
///     finished: now + jiff::SignedDuration::from_secs(3),
///     verdict: RunVerdict::Ok,
///     exit_code: 0,
///     success: true,
/// };
/// ledger.finish_run(&finished, 100)?;
/// assert_eq!(ledger.last_run("nightly")?.unwrap().verdict, Some(RunVerdict::Ok));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Ledger {
    state_dir: PathBuf,
    path: PathBuf,
    /// `None` only after a reconnection failed; the next call tries again.
    db: Option<Db>,
    /// The file a connection left for another at the path, until a
    /// reconnection succeeds and says so ([`Ledger::follow_path`]): a
    /// reconnection that fails does not forget it.
    left: Option<file::FileId>,
    recovered: Vec<Recovered>,
    /// The newest time a caller has given: stamps a file moved aside during
    /// a call that carries no time of its own (a read).
    latest: Timestamp,
    /// How long a call waits for another process's lock on the file
    /// ([`Backend::bound_calls`]).
    busy: Duration,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("path", &self.path)
            .field("recovered", &self.recovered)
            .finish_non_exhaustive()
    }
}

impl Ledger {
    /// Opens (creating when missing) `STATE_DIR/baton.db` and migrates it.
    ///
    /// When SQLite reports the file corrupt or not a database
    /// (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, or a schema that lacks a table its
    /// version promises), it is moved aside to
    /// `baton.db.corrupt-<UTC stamp like 20261129T031500Z>` (with its `-wal`
    /// and `-shm`, kept, never deleted) and a fresh ledger is created; the
    /// caller learns of it through [`Records::take_recovered`](baton_store::ledger::Records::take_recovered) and raises an
    /// alert. `now` stamps that name; a file moved aside during a later call
    /// is stamped with the newest time the caller has given this ledger.
    ///
    /// The state directory must exist.
    ///
    /// # Errors
    ///
    /// A missing state directory; a symbolic link or anything but a regular
    /// file at `baton.db` or beside it at `-wal`, `-shm` or `-journal`
    /// ([`Error::Symlink`], [`Error::NotAFile`]: nothing followed, nothing
    /// created); one of them, or the state directory, owned by another user
    /// or writable by others ([`Error::Untrusted`]); a schema version this build does not know
    /// ([`Error::UnknownSchema`]: left untouched); the repair mutex held by
    /// another process for longer than 10 s; a database locked for longer
    /// than 10 s ([`Error::Busy`]); I/O failures.
    pub fn open(state_dir: &Path, now: Timestamp) -> Result<Ledger, Error> {
        // SQLite refuses a path with a symbolic link in it (`NOFOLLOW`): a
        // state directory reached through a link (`/var/lib/baton` on
        // another disk) is opened by its real path. `baton.db` itself is
        // still refused when it is a link.
        let real = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_owned());
        let state_dir = real.as_path();
        file::check_dir(state_dir)?;
        let path = state_dir.join(file::DB_NAME);
        // Refuse a symbolic link before anything, the repair mutex included,
        // is touched.
        file::identify(&path)?;
        let mut ledger = Ledger {
            state_dir: state_dir.to_owned(),
            path,
            db: None,
            left: None,
            recovered: Vec::new(),
            latest: now,
            busy: BUSY_TIMEOUT,
        };
        ledger.reconnect(None)?;
        Ok(ledger)
    }

    /// Checks, opening and creating nothing, that the ledger's files in
    /// `state_dir` may be used: the directory, and `baton.db` with the files
    /// SQLite keeps beside it when they exist, as [`Ledger::open`] checks
    /// them. A caller that must not run on a ledger it cannot use (the
    /// scheduler) asks first.
    ///
    /// # Errors
    ///
    /// [`Error::Untrusted`] for a file or directory another user owns or
    /// others may write; [`Error::Symlink`], [`Error::NotAFile`]; a missing
    /// state directory, or a failed `lstat`.
    pub fn check(state_dir: &Path) -> Result<(), Error> {
        let real = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_owned());
        file::check_dir(&real)?;
        let path = real.join(file::DB_NAME);
        file::identify(&path)?;
        file::check_sides(&path)
    }

    /// The database's path, `STATE_DIR/baton.db`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Remembers the newest time a caller has given (see `latest`). Every
    /// call that carries a time calls this first.
    pub(crate) fn saw(&mut self, t: Timestamp) {
        self.latest = self.latest.max(t);
    }

    /// Runs `op` in one transaction on the file now at the path; on
    /// corruption, recovers and runs it once more. Every call that reads or
    /// writes the tables goes through here, exactly once: `Mode::Write`
    /// begins with `BEGIN IMMEDIATE`, so whatever `op` reads it may decide
    /// on, and no other writer changes it before the commit.
    pub(crate) fn transact<T>(
        &mut self,
        mode: Mode,
        action: impl Fn() -> String,
        op: impl Fn(&rusqlite::Connection) -> Result<T, Fail>,
    ) -> Result<T, Error> {
        self.follow_path()?;
        match self.attempt(mode, &op) {
            Ok(v) => return Ok(v),
            Err(Fail::Sql(e)) if failure::is_corrupt(&e) => {
                let suspect = self.db.take().map(|db| {
                    let id = db.id();
                    db.abandon();
                    Suspect {
                        id,
                        reason: format!("{}: {e}", action()),
                        lost_log: None,
                    }
                });
                self.reconnect(suspect)?;
            }
            Err(fail) => return Err(self.error(action(), fail)),
        }
        self.attempt(mode, &op).map_err(|fail| match fail {
            Fail::Sql(e) if failure::is_corrupt(&e) => Error::Corrupt {
                action: action(),
                path: self.path.clone(),
                reason: e.to_string(),
            },
            fail => self.error(action(), fail),
        })
    }

    fn attempt<T>(
        &mut self,
        mode: Mode,
        op: &impl Fn(&rusqlite::Connection) -> Result<T, Fail>,
    ) -> Result<T, Fail> {
        let Some(db) = self.db.as_mut() else {
            // OK because `follow_path` and `reconnect` leave a connection or
            // return an error; this only names the impossible case.
            return Err(Fail::Invalid("the ledger has no connection".into()));
        };
        let behavior = match mode {
            Mode::Read => TransactionBehavior::Deferred,
            Mode::Write => TransactionBehavior::Immediate,
        };
        // This process's other writers to the file go first, each woken
        // as the one before commits (`gate.rs`).
        let gate = (mode == Mode::Write).then(|| crate::gate::of(&self.path));
        let _turn = gate.as_deref().map(crate::gate::enter);
        db.conn().busy_timeout(self.busy)?;
        let tx = db.conn().transaction_with_behavior(behavior)?;
        // A newer baton may have migrated the file since this connection
        // opened it (a long-lived process outliving an upgrade): its rows
        // are not this build's to read or write.
        let version = crate::schema::user_version(&tx)?;
        if version > crate::schema::VERSION {
            return Err(Fail::Newer(version));
        }
        let value = op(&tx)?;
        tx.commit()?;
        Ok(value)
    }

    /// Reconnects when `baton.db` is no longer the file this connection
    /// opened (another process moved it aside), or when there is no
    /// connection; moves the file aside first when its `-wal` is no longer
    /// the log this connection writes to (removed or replaced under it).
    ///
    /// The file this connection left is told to the caller
    /// ([`Records::take_recovered`](baton_store::ledger::Records::take_recovered)):
    /// moved aside by this call because its log was lost
    /// ([`Reset::Corrupt`]), moved aside as corrupt by another process
    /// ([`Reset::Followed`]), or removed or replaced by someone else
    /// ([`Reset::Lost`]). Either way a run begun before it is not in the
    /// fresh file.
    fn follow_path(&mut self) -> Result<(), Error> {
        let at_path = file::identify(&self.path)?;
        let mut suspect = None;
        match self.db.take() {
            Some(db) if Some(db.id()) == at_path => {
                match db.log_in_place() {
                    Ok(true) => {
                        self.db = Some(db);
                        return Ok(());
                    }
                    Ok(false) => {}
                    Err(e) => {
                        self.db = Some(db);
                        return Err(e);
                    }
                }
                // Its log was removed alone (or replaced): this connection's
                // commits go where no newcomer reads them, and a newcomer
                // would pair the file with another log. The file is moved
                // aside as corrupt, once, by the first connection to see it.
                self.left = Some(db.id());
                suspect = Some(Suspect {
                    id: db.id(),
                    reason: format!(
                        "its log {} was removed or replaced while this process had it open",
                        file::with_suffix(&self.path, "-wal").display()
                    ),
                    lost_log: Some(db),
                });
            }
            Some(db) => {
                self.left = Some(db.id());
                db.abandon();
            }
            None => {}
        }
        if self.reconnect(suspect)? {
            // This call moved the file it left aside, and said so.
            self.left = None;
        }
        if let Some(left) = self.left.take() {
            let (how, reason) = if file::moved_aside_as_corrupt(&self.path, left) {
                (
                    Reset::Followed,
                    "another process found it corrupt and moved it aside".to_owned(),
                )
            } else {
                (
                    Reset::Lost,
                    format!(
                        "{} was removed or replaced by another file while this process had it \
                         open",
                        self.path.display()
                    ),
                )
            };
            self.recovered.push(Recovered {
                moved_to: self.path.clone(),
                reason,
                how,
            });
        }
        Ok(())
    }

    /// Connects again, first recovering from `suspect`; says whether this
    /// call moved a file aside.
    fn reconnect(&mut self, suspect: Option<Suspect>) -> Result<bool, Error> {
        if let Some(db) = self.db.take() {
            db.abandon();
        }
        let (db, recovered) = recover::connect(&self.state_dir, &self.path, suspect, self.latest)?;
        self.db = Some(db);
        let moved = recovered.is_some();
        self.recovered.extend(recovered);
        Ok(moved)
    }

    fn error(&self, action: String, fail: Fail) -> Error {
        let path = self.path.clone();
        match fail {
            Fail::Sql(e) => match failure::sqlite_error(&self.path, action, e) {
                Error::Busy {
                    action,
                    path,
                    source,
                    ..
                } => Error::Busy {
                    waited_ms: crate::error::millis(self.busy),
                    action,
                    path,
                    source,
                },
                e => e,
            },
            Fail::Invalid(problem) => Error::Invalid {
                action,
                path,
                problem,
            },
            Fail::Newer(found) => Error::UnknownSchema {
                path,
                found,
                supported: crate::schema::VERSION,
            },
        }
    }
}

impl Backend for Ledger {
    type Error = rusqlite::Error;
    type Statements<'t> = Sql<'t>;

    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn transact<T: Send + 'static>(
        &mut self,
        mode: Mode,
        action: &dyn Fn() -> String,
        body: impl for<'t> AsyncFn(
            &mut Sql<'t>,
        ) -> Result<T, baton_store::ledger::Fail<rusqlite::Error>>
        + Send
        + 'static,
    ) -> Result<T, baton_store::ledger::Error> {
        Ledger::transact(self, mode, action, |conn| {
            let mut sql = Sql { conn };
            match ready(body(&mut sql)) {
                Some(Ok(value)) => Ok(value),
                Some(Err(baton_store::ledger::Fail::Store(e))) => Err(Fail::Sql(e)),
                Some(Err(baton_store::ledger::Fail::Invalid(problem))) => {
                    Err(Fail::Invalid(problem))
                }
                // OK because no SQLite statement awaits anything: a body of
                // them is ready at its first poll. This only names the
                // impossible case, without writing anything.
                None => Err(Fail::Invalid("a transaction's body did not finish".into())),
            }
        })
        .map_err(Into::into)
    }

    /// A run's supervisor renews its lease only between calls: while it
    /// bounds them, a call waits for another process's lock on the file
    /// that long at most (never longer than the usual 10 s), and is tried
    /// again by the run after a renewal.
    fn bound_calls(&mut self, within: Option<Duration>) {
        self.busy = within.map_or(BUSY_TIMEOUT, |w| w.min(BUSY_TIMEOUT));
    }

    fn saw(&mut self, now: Timestamp) {
        Ledger::saw(self, now);
    }

    fn take_recovered(&mut self) -> Vec<Recovered> {
        std::mem::take(&mut self.recovered)
    }

    fn follow(&mut self) -> Result<(), baton_store::ledger::Error> {
        Ok(self.follow_path()?)
    }

    fn checkpoint(&mut self) -> Result<(), baton_store::ledger::Error> {
        self.follow_path()?;
        let Some(db) = self.db.as_mut() else {
            return Ok(());
        };
        let r = db
            .conn()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        r.map_err(|e| {
            self.error("checkpoint the ledger".into(), Fail::Sql(e))
                .into()
        })
    }

    fn withdraw_ahead(
        &mut self,
        job: &str,
        now: Timestamp,
        tolerance: i64,
    ) -> Result<Option<Withdrawn>, baton_store::ledger::Error> {
        // One write transaction; what it takes back is `ahead::withdraw`'s.
        Ledger::saw(self, now);
        let trigger = now.as_second().saturating_add(tolerance);
        Ok(Ledger::transact(
            self,
            Mode::Write,
            || format!("withdraw the decisions a clock ahead made for job {job}"),
            |tx| {
                Ok(ahead::withdraw(
                    tx,
                    job,
                    trigger,
                    now.as_second(),
                    rows::micros(now),
                )?)
            },
        )?)
    }

    fn decided_after(
        &mut self,
        job: &str,
        after: Option<i64>,
        through: i64,
    ) -> Result<Vec<i64>, baton_store::ledger::Error> {
        Ok(Ledger::transact(
            self,
            Mode::Read,
            || format!("read the decided occurrences of job {job}"),
            |tx| {
                Ok(ahead::decided_between(
                    tx,
                    job,
                    after.unwrap_or(i64::MIN),
                    through,
                )?)
            },
        )?)
    }
}

/// The value of a future that is ready at its first poll, without an
/// executor; `None` when it is not.
fn ready<F: std::future::Future>(future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(value) => Some(value),
        std::task::Poll::Pending => None,
    }
}
