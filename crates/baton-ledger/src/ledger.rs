//! [`Ledger`]: one connection to `STATE_DIR/baton.db`, and the transaction
//! boundaries of every operation.
//!
//! Each public call is one transaction: writes begin with `BEGIN IMMEDIATE`
//! (the write lock is taken first, so a transaction never has to upgrade a
//! read lock and fail with `SQLITE_BUSY` midway), reads with a deferred
//! `BEGIN` (one consistent snapshot for a run and its attempts). Which rows a
//! call touches together is decided here for runs, decisions, steps and
//! alerts, and in the module of each later concept for its own calls
//! (missed ranges, the queue, pauses, watermarks), all through
//! [`Ledger::transact`]; the SQL for each table lives in the module named
//! after it.
//!
//! Before each call the ledger checks, with one `lstat`, that `baton.db` is
//! still the file its connection opened, and reconnects when another process
//! has moved it aside; inside each transaction, before anything else, it
//! reads the schema version again, and refuses the call
//! ([`Error::UnknownSchema`]) when a newer baton has migrated the file
//! since. A call that fails with corruption recovers
//! ([`crate::recover`]) and is tried once more, on the fresh ledger.

use std::path::{Path, PathBuf};

use jiff::Timestamp;
use rusqlite::{Transaction, TransactionBehavior};

use crate::db::Db;
use crate::error::{Error, Fail};
use crate::file;
use crate::recover::{self, Recovered, Suspect};
use crate::rows::{
    AlertRow, Attempt, Begun, Decision, DecisionRow, Finished, JobState, NewAlert, NewRun, RunRow,
    StepState,
};
use crate::{alerts, decisions, jobs, missed, pauses, runs, steps, tallies, watermarks};

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
/// use baton_ledger::{Begun, Finished, Ledger, NewRun};
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
/// };
/// assert_eq!(ledger.begin_run(&run)?, Begun::Started);
/// let finished = Finished {
///     run_id: run.run_id.clone(),
///     job: run.job.clone(),
///     finished: now + jiff::SignedDuration::from_secs(3),
///     verdict: "ok".into(),
///     exit_code: 0,
///     success: true,
/// };
/// ledger.finish_run(&finished, 100)?;
/// assert_eq!(ledger.last_run("nightly")?.unwrap().verdict.as_deref(), Some("ok"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Ledger {
    state_dir: PathBuf,
    path: PathBuf,
    /// `None` only after a reconnection failed; the next call tries again.
    db: Option<Db>,
    recovered: Vec<Recovered>,
    /// The newest time a caller has given: stamps a file moved aside during
    /// a call that carries no time of its own (a read).
    latest: Timestamp,
}

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ledger")
            .field("path", &self.path)
            .field("recovered", &self.recovered)
            .finish_non_exhaustive()
    }
}

/// Whether a call writes.
#[derive(Clone, Copy)]
pub(crate) enum Mode {
    Read,
    Write,
}

impl Ledger {
    /// Opens (creating when missing) `STATE_DIR/baton.db` and migrates it.
    ///
    /// When SQLite reports the file corrupt or not a database
    /// (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, or a schema that lacks a table its
    /// version promises), it is moved aside to
    /// `baton.db.corrupt-<UTC stamp like 20261129T031500Z>` (with its `-wal`
    /// and `-shm`, kept, never deleted) and a fresh ledger is created; the
    /// caller learns of it through [`Ledger::take_recovered`] and raises an
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
            recovered: Vec::new(),
            latest: now,
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

    /// Tells the ledger the time now: a file moved aside as corrupt during a
    /// later call that carries no time (a read) is stamped with it, so the
    /// name says when the corruption was found. Times only move forward here:
    /// an older time changes nothing.
    pub fn time_is(&mut self, now: Timestamp) {
        self.saw(now);
    }

    /// The corrupt databases this ledger has moved aside since it was
    /// opened (or since the last call), oldest first. Each one deserves an
    /// alert; another process that found the same file corrupt reports
    /// nothing, so there is one alert per file.
    pub fn take_recovered(&mut self) -> Vec<Recovered> {
        std::mem::take(&mut self.recovered)
    }

    /// The database's path, `STATE_DIR/baton.db`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records that these jobs exist, in one transaction: each one not yet
    /// known is first seen at `now`; known ones are left as they are.
    ///
    /// # Errors
    ///
    /// As every call: [`Error::Busy`] when another process holds the write
    /// lock for more than 10 s, [`Error::Sqlite`] for other SQLite failures,
    /// [`Error::Corrupt`] when a recovered ledger fails again at once, and
    /// the errors of [`Ledger::open`] when the ledger has to reconnect.
    pub fn see_jobs(&mut self, jobs: &[&str], now: Timestamp) -> Result<(), Error> {
        self.saw(now);
        self.transact(
            Mode::Write,
            || format!("record the jobs {jobs:?}"),
            |tx| Ok(jobs::see(tx, jobs, now)?),
        )
    }

    /// Copies what the write-ahead log holds into the database file, as far
    /// as no reader still needs it (a passive checkpoint: it never waits
    /// for, nor blocks, another process). Callers do it once after a batch
    /// of runs, so that `baton.db` alone (a backup's copy) is current.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn checkpoint(&mut self) -> Result<(), Error> {
        self.follow_path()?;
        let Some(db) = self.db.as_mut() else {
            return Ok(());
        };
        let r = db
            .conn()
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        r.map_err(|e| self.error("checkpoint the ledger".into(), Fail::Sql(e)))
    }

    /// Every job's row, by name.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn jobs(&mut self) -> Result<Vec<JobState>, Error> {
        self.transact(
            Mode::Read,
            || "read the jobs".into(),
            |tx| Ok(jobs::all(tx)?),
        )
    }

    /// One job's row; `None` when the ledger has never heard of it.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn job(&mut self, job: &str) -> Result<Option<JobState>, Error> {
        self.transact(
            Mode::Read,
            || format!("read job {job}"),
            |tx| Ok(jobs::one(tx, job)?),
        )
    }

    /// Starts a run, in one transaction: for a scheduled run, records the
    /// occurrence's decision as `started` by this run (a `queued` occurrence
    /// becomes `started`, keeping its count of coalesced occurrences);
    /// inserts the run's row; updates the job's last attempt, last started
    /// and last decided occurrence, and last run id.
    ///
    /// When the occurrence has any other decision (`started`, `coalesced`,
    /// `claimed`: by another process, or an earlier call), nothing is written
    /// and the existing decision is returned: the run must not start. Of any
    /// number of processes starting the same occurrence at once, queued or
    /// not, exactly one gets [`Begun::Started`]. A missed range does not stop
    /// a run: a backfill may start an occurrence that was missed.
    ///
    /// Recording the same start again (the same run id, job and occurrence,
    /// as a caller does when it could not learn whether its first call
    /// committed) writes nothing and is [`Begun::Started`]: the start is
    /// recorded, once.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`]; a run id the ledger already holds for
    /// another job or occurrence is an [`Error::Sqlite`] (a constraint), and
    /// a fence beyond `i64::MAX` is [`Error::Invalid`]. Nothing is written
    /// then.
    pub fn begin_run(&mut self, run: &NewRun) -> Result<Begun, Error> {
        self.saw(run.started);
        let fence = match crate::checks::fence(run.fence) {
            Ok(fence) => fence,
            Err(problem) => {
                return Err(
                    self.invalid(format!("record the start of run {}", run.run_id), problem)
                );
            }
        };
        self.transact(
            Mode::Write,
            || format!("record the start of run {} of job {}", run.run_id, run.job),
            |tx| {
                if let Some(occurrence) = run.occurrence
                    && !decisions::start(tx, run, occurrence)?
                {
                    let existing = decisions::one(tx, &run.job, occurrence)?;
                    // OK because the insert was refused by this very row,
                    // inside this transaction, and rows are only deleted
                    // under the write lock this transaction holds.
                    let existing = existing.ok_or_else(|| {
                        Fail::Invalid(format!(
                            "occurrence {occurrence} of job {} was decided and is gone",
                            run.job
                        ))
                    })?;
                    return Ok(existing.begun_by(run));
                }
                if runs::recorded(tx, run)? {
                    return Ok(Begun::Started); // Recorded already, with its job's row.
                }
                runs::insert(tx, run, fence)?;
                jobs::begun(tx, run)?;
                Ok(Begun::Started)
            },
        )
    }

    /// Records one finished attempt and counts it against its step: the
    /// step's last attempt; its last success or last failure; its failure
    /// count reset to 0 by a success or raised by 1 by a failure. What each
    /// outcome word counts as is told on [`Attempt`].
    ///
    /// Recording the same `(run_id, seq)` again changes nothing. When the
    /// ledger no longer has the run (it was recovered from corruption since
    /// the run began), the step is still counted and no attempt row is
    /// written: an attempt cannot exist without its run.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`]; [`Error::Invalid`] when the run belongs to
    /// another job than `a.job` (nothing is written).
    pub fn record_attempt(&mut self, a: &Attempt) -> Result<(), Error> {
        self.saw(a.finished);
        self.transact(
            Mode::Write,
            || format!("record attempt {} of run {}", a.seq, a.run_id),
            |tx| {
                let recorded = runs::job_of(tx, &a.run_id)?;
                if let Some(job) = &recorded
                    && *job != a.job
                {
                    return Err(Fail::Invalid(format!(
                        "run {} belongs to job {job}, not {}",
                        a.run_id, a.job
                    )));
                }
                if recorded.is_some() && !runs::insert_attempt(tx, a)? {
                    return Ok(()); // Recorded already: counted already.
                }
                steps::attempted(tx, a)?;
                Ok(())
            },
        )
    }

    /// Finishes a run, in one transaction: its finish time, verdict and exit
    /// code; the job's last success or last failure and its failure count;
    /// its tallies (verdict, lease lost, duration: see [`Ledger::tallies`]);
    /// then prunes the job's records:
    ///
    /// - runs: the newest `history_keep` stay (their attempts with them). A
    ///   `history_keep` of 0 keeps 1: a job's last run is what status shows.
    /// - occurrence decisions: those made before the oldest run kept go,
    ///   except the job's newest decision and its `queued` ones, which
    ///   always stay.
    /// - missed ranges: the newest 1,000 stay.
    /// - pauses: the newest 100 stay, and any that is not over at
    ///   `f.finished` (in force, or yet to begin) stays too.
    /// - watermarks: the newest 100 stay.
    ///
    /// Finishing a run that is finished already changes nothing. When the
    /// ledger no longer has the run (it was recovered since the run began),
    /// the job is still counted.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`]; [`Error::Invalid`] when the run belongs to
    /// another job than `f.job` (nothing is written).
    pub fn finish_run(&mut self, f: &Finished, history_keep: u32) -> Result<(), Error> {
        self.saw(f.finished);
        let keep = history_keep.max(1);
        self.transact(
            Mode::Write,
            || format!("record the end of run {} of job {}", f.run_id, f.job),
            |tx| {
                let recorded = runs::job_of(tx, &f.run_id)?;
                if let Some(job) = &recorded
                    && *job != f.job
                {
                    return Err(Fail::Invalid(format!(
                        "run {} belongs to job {job}, not {}",
                        f.run_id, f.job
                    )));
                }
                let started = runs::started(tx, &f.run_id)?;
                if recorded.is_some() && !runs::finish(tx, f)? {
                    return Ok(()); // Finished already: counted already.
                }
                jobs::finished(tx, f)?;
                tallies::finished(tx, f, started)?;
                runs::prune(tx, &f.job, keep)?;
                decisions::prune(tx, &f.job)?;
                missed::prune(tx, &f.job)?;
                pauses::prune(tx, &f.job, f.finished)?;
                watermarks::prune(tx, &f.job)?;
                Ok(())
            },
        )
    }

    /// Records that the lock file says this occurrence started, under a
    /// ledger that was lost since (it was recovered from corruption): the
    /// decision `claimed`, with a `detail` for a human (an empty one is
    /// stored as none), unless the occurrence has a decision. Raises the
    /// job's last decided occurrence either way, in the same transaction.
    ///
    /// Returns true when this call recorded it: the caller then says so
    /// once. A second process recording the same claim gets false, as does
    /// one that finds the occurrence started or queued. Like a run, a claim
    /// is not stopped by a missed range: the lock file says it started.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    ///
    /// A queued occurrence becomes claimed (it leaves the queue): the lock
    /// file's claim says it started, so it must never start again.
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::{Decision, Ledger};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// assert!(ledger.claimed("nightly", occ, "claimed by pid 4242", now)?);
    /// assert!(!ledger.claimed("nightly", occ, "claimed by pid 4242", now)?);
    /// let row = ledger.decision("nightly", occ)?.unwrap();
    /// assert_eq!(row.decision, Decision::Claimed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn claimed(
        &mut self,
        job: &str,
        occurrence: i64,
        detail: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        self.saw(now);
        let entry = decisions::Entry {
            job,
            occurrence,
            decision: Decision::Claimed,
            run_id: None,
            detail: Some(detail).filter(|d| !d.is_empty()),
            joined: None,
            decided: now,
        };
        self.transact(
            Mode::Write,
            || format!("record occurrence {occurrence} of job {job} as claimed"),
            |tx| {
                let recorded =
                    decisions::insert(tx, &entry)? || decisions::claim_queued(tx, &entry)?;
                if recorded {
                    tallies::skipped(tx, job, Decision::Claimed.as_str(), 1)?;
                }
                jobs::decided(tx, job, occurrence, now)?;
                Ok(recorded)
            },
        )
    }

    /// The decision recorded for one occurrence of a job, if any. An
    /// occurrence inside a missed range has none of its own: see
    /// [`Ledger::missed`].
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn decision(&mut self, job: &str, occurrence: i64) -> Result<Option<DecisionRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the decision for occurrence {occurrence} of job {job}"),
            |tx| Ok(decisions::one(tx, job, occurrence)?),
        )
    }

    /// Records an alert.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn record_alert(&mut self, a: &NewAlert) -> Result<(), Error> {
        self.saw(a.time);
        self.transact(
            Mode::Write,
            || format!("record a {} alert", a.kind),
            |tx| Ok(alerts::insert(tx, a)?),
        )
    }

    /// The newest `limit` alerts, of one job or of all, newest first.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> Result<Vec<AlertRow>, Error> {
        self.transact(
            Mode::Read,
            || "read the recent alerts".into(),
            |tx| Ok(alerts::recent(tx, job, limit)?),
        )
    }

    /// The newest `limit` runs of a job, newest first (by start time), each
    /// with its attempts in order.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn history(&mut self, job: &str, limit: u32) -> Result<Vec<RunRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the history of job {job}"),
            |tx| Ok(runs::history(tx, job, limit)?),
        )
    }

    /// The newest run of a job, finished or not.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn last_run(&mut self, job: &str) -> Result<Option<RunRow>, Error> {
        Ok(self.history(job, 1)?.pop())
    }

    /// The newest run of a job that has started and not finished. A run
    /// whose process died before finishing stays here until a later run
    /// prunes it; the lease, not the ledger, says whether it still runs.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn running(&mut self, job: &str) -> Result<Option<RunRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the running run of job {job}"),
            |tx| Ok(runs::running(tx, job)?),
        )
    }

    /// Every run of a job that has started and not finished, oldest first
    /// (without their attempts).
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn unfinished(&mut self, job: &str) -> Result<Vec<RunRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the unfinished runs of job {job}"),
            |tx| Ok(runs::unfinished(tx, job)?),
        )
    }

    /// Every step (and check) of a job, by name.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn steps(&mut self, job: &str) -> Result<Vec<StepState>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the steps of job {job}"),
            |tx| Ok(steps::of_job(tx, job)?),
        )
    }

    /// Remembers the newest time a caller has given (see `latest`). Every
    /// call that carries a time calls this first.
    pub(crate) fn saw(&mut self, t: Timestamp) {
        self.latest = self.latest.max(t);
    }

    /// The error for arguments refused before any transaction: nothing was
    /// written.
    pub(crate) fn invalid(&self, action: String, problem: String) -> Error {
        Error::Invalid {
            action,
            path: self.path.clone(),
            problem,
        }
    }

    /// Runs `op` in one transaction on the file now at the path; on
    /// corruption, recovers and runs it once more. Every public call that
    /// reads or writes the tables goes through here, exactly once:
    /// `Mode::Write` begins with `BEGIN IMMEDIATE`, so whatever `op` reads it
    /// may decide on, and no other writer changes it before the commit.
    pub(crate) fn transact<T>(
        &mut self,
        mode: Mode,
        action: impl Fn() -> String,
        op: impl Fn(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, Error> {
        self.follow_path()?;
        match self.attempt(mode, &op) {
            Ok(v) => return Ok(v),
            Err(Fail::Sql(e)) if recover::is_corrupt(&e) => {
                let suspect = self.db.take().map(|db| {
                    let id = db.id();
                    db.abandon();
                    Suspect {
                        id,
                        reason: format!("{}: {e}", action()),
                    }
                });
                self.reconnect(suspect)?;
            }
            Err(fail) => return Err(self.error(action(), fail)),
        }
        self.attempt(mode, &op).map_err(|fail| match fail {
            Fail::Sql(e) if recover::is_corrupt(&e) => Error::Corrupt {
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
        op: &impl Fn(&Transaction<'_>) -> Result<T, Fail>,
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
    /// connection.
    fn follow_path(&mut self) -> Result<(), Error> {
        let at_path = file::identify(&self.path)?;
        match &self.db {
            Some(db) if Some(db.id()) == at_path => Ok(()),
            _ => self.reconnect(None),
        }
    }

    fn reconnect(&mut self, suspect: Option<Suspect>) -> Result<(), Error> {
        if let Some(db) = self.db.take() {
            db.abandon();
        }
        let (db, recovered) = recover::connect(&self.state_dir, &self.path, suspect, self.latest)?;
        self.db = Some(db);
        self.recovered.extend(recovered);
        Ok(())
    }

    fn error(&self, action: String, fail: Fail) -> Error {
        let path = self.path.clone();
        match fail {
            Fail::Sql(e) => recover::sqlite_error(&self.path, action, e),
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
