//! What a store implements for the ledger: [`Statements`], the single
//! statements the transactions are made of, and [`Backend`], how it runs
//! one transaction.
//!
//! A statement does exactly one thing to one table and decides nothing:
//! the transactions (`transactions.rs`) decide, from what the statements
//! return, inside the one transaction the backend holds open. Every
//! statement that changes a counter does so with an expression the store
//! evaluates on the row (`count + n`, `MAX(…)`), never with a value read
//! back and written again; every statement that decides (an insert that
//! does nothing on conflict, an update that only matches a queued row)
//! returns whether it changed a row, and that answer is the decision.
//!
//! The statements are `async` so that a store whose driver is (PostgreSQL's)
//! awaits its server; a store whose driver is synchronous (SQLite's) returns
//! futures that are ready at once, and its backend polls the transaction's
//! body to its end without an executor.

use std::future::Future;

use jiff::Timestamp;

use super::error::Error;
use super::rows::{
    AlertRow, Attempt, DecisionRow, Declaration, Finished, JobState, JobTallies, Miss, MissedRow,
    NewAlert, NewRun, PauseRow, Recovered, Replacement, RunRow, StepState, WatermarkRow, Withdrawn,
};
use crate::words::{Decision, MissReason, SkipReason};

/// Whether a transaction writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reads only, from one consistent snapshot.
    Read,
    /// Writes: the store's write lock is taken before the first statement,
    /// so whatever the body reads it may decide on, and no other writer
    /// changes it before the commit.
    Write,
}

/// How a transaction's body fails: a store's statement failed (`E`, the
/// store's own error), or the arguments contradict what the ledger holds
/// (nothing is written: the transaction rolls back).
#[derive(Debug)]
pub enum Fail<E> {
    /// A statement failed.
    Store(E),
    /// The arguments contradict the ledger (a run named with another job
    /// than its own); the words say how.
    Invalid(String),
}

impl<E> From<E> for Fail<E> {
    fn from(e: E) -> Self {
        Self::Store(e)
    }
}

/// A decision to record for one occurrence ([`Statements::insert_decision`],
/// [`Statements::claim_queued`]).
#[derive(Debug, Clone, Copy)]
pub struct NewDecision<'a> {
    /// The job.
    pub job: &'a str,
    /// The occurrence, in Unix seconds.
    pub occurrence: i64,
    /// What was decided.
    pub decision: Decision,
    /// More words for a human.
    pub detail: Option<&'a str>,
    /// For `coalesced`: the queued occurrence that serves it.
    pub joined: Option<i64>,
    /// When.
    pub decided: Timestamp,
}

/// The single statements of the ledger, as one store runs them inside the
/// transaction its [`Backend`] holds open. What each table holds is told
/// in `baton-ledger`'s crate documentation; each method's words here say
/// what it does to its rows.
#[allow(missing_docs)] // Each statement is named after what it does; see above.
pub trait Statements {
    /// The store's own error.
    type Error;

    // jobs
    /// Inserts each job not yet known, first seen at `now`.
    fn see_jobs(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// Raises the job's marks for a run that starts: last attempt, last
    /// started and last decided occurrence, last run id (creating the row).
    fn job_begun(&self, run: &NewRun) -> impl Future<Output = Result<(), Self::Error>>;
    /// Counts a finished run against its job: last success or failure,
    /// consecutive failures (creating the row).
    fn job_finished(&self, f: &Finished) -> impl Future<Output = Result<(), Self::Error>>;
    /// Whether the job's last decided occurrence is at or after `occurrence`.
    fn decided_through(
        &self,
        job: &str,
        occurrence: i64,
    ) -> impl Future<Output = Result<bool, Self::Error>>;
    /// Raises the job's last decided occurrence to `occurrence` (never lowers it).
    fn decided(
        &self,
        job: &str,
        occurrence: i64,
        now: Timestamp,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    fn jobs(&self) -> impl Future<Output = Result<Vec<JobState>, Self::Error>>;
    /// The store's own clock now, for a store several hosts share; `None`
    /// for a store of this host alone (see [`super::Records::store_clock`]).
    fn server_clock(&self) -> impl Future<Output = Result<Option<Timestamp>, Self::Error>>;
    fn job(&self, job: &str) -> impl Future<Output = Result<Option<JobState>, Self::Error>>;

    // occurrences
    /// Records a decision unless the occurrence has one; whether it did.
    fn insert_decision(
        &self,
        d: &NewDecision<'_>,
    ) -> impl Future<Output = Result<bool, Self::Error>>;
    /// Records the occurrence `started` by `run`: a new row, or its
    /// `queued` row turned `started`; any other row is left as it is
    /// (whether it will be is read first, [`Statements::decision`]).
    fn start_decision(
        &self,
        run: &NewRun,
        occurrence: i64,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// Turns a `queued` occurrence into `d`; whether it did.
    fn claim_queued(&self, d: &NewDecision<'_>) -> impl Future<Output = Result<bool, Self::Error>>;
    fn decision(
        &self,
        job: &str,
        occurrence: i64,
    ) -> impl Future<Output = Result<Option<DecisionRow>, Self::Error>>;
    /// Removes the decisions made before the job's oldest run kept, but its
    /// newest and its queued ones.
    fn prune_decisions(&self, job: &str) -> impl Future<Output = Result<(), Self::Error>>;

    // runs and attempts
    fn insert_run(
        &self,
        run: &NewRun,
        fence: Option<i64>,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// Whether this very start (run id, job, occurrence) is recorded.
    fn run_recorded(&self, run: &NewRun) -> impl Future<Output = Result<bool, Self::Error>>;
    /// The job a run belongs to.
    fn run_job(&self, run_id: &str) -> impl Future<Output = Result<Option<String>, Self::Error>>;
    /// A run's job, when it started, and whether its end is recorded.
    fn run_end(
        &self,
        run_id: &str,
    ) -> impl Future<Output = Result<Option<(String, Timestamp, bool)>, Self::Error>>;
    /// The positions (`seq`) of a run's attempts recorded so far.
    fn attempt_seqs(&self, run_id: &str) -> impl Future<Output = Result<Vec<u32>, Self::Error>>;
    /// Records an attempt unless its `(run_id, seq)` is, or its run is not
    /// recorded as a run of its job (whether it will is read first, from
    /// [`Statements::run_job`] and [`Statements::attempt_seqs`]).
    fn insert_attempt(&self, a: &Attempt) -> impl Future<Output = Result<(), Self::Error>>;
    /// Records a run's end unless it has one, or is not recorded as a run
    /// of its job (whether it will is read first, [`Statements::run_end`]).
    fn finish_run(&self, f: &Finished) -> impl Future<Output = Result<(), Self::Error>>;
    /// Keeps the job's `keep` runs that ended last (their attempts with
    /// them), and every run that has not ended, however old: a run in
    /// flight keeps its row until its end is recorded, and a run's own end
    /// never prunes it.
    fn prune_runs(&self, job: &str, keep: u32) -> impl Future<Output = Result<(), Self::Error>>;
    fn history(
        &self,
        job: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<RunRow>, Self::Error>>;
    fn running(&self, job: &str) -> impl Future<Output = Result<Option<RunRow>, Self::Error>>;
    fn unfinished(&self, job: &str) -> impl Future<Output = Result<Vec<RunRow>, Self::Error>>;
    /// The unfinished runs of every job not named in `known` (a job renamed
    /// or removed from the configuration while it ran), oldest first.
    fn unfinished_of_others(
        &self,
        known: &[String],
    ) -> impl Future<Output = Result<Vec<RunRow>, Self::Error>>;

    // replacements
    /// Records a request that a run stop for a later one, unless one for
    /// the same run and job is recorded; whether it did.
    fn insert_replacement(
        &self,
        r: &Replacement,
    ) -> impl Future<Output = Result<bool, Self::Error>>;
    /// The request for this run and job, if one was made.
    fn replacement(
        &self,
        run_id: &str,
        job: &str,
    ) -> impl Future<Output = Result<Option<Replacement>, Self::Error>>;
    /// Forgets the request `r`, if it is still the one recorded for its
    /// run and job (the same `asked`: a request another asker recorded
    /// first is theirs); whether it was.
    fn delete_replacement(
        &self,
        r: &Replacement,
    ) -> impl Future<Output = Result<bool, Self::Error>>;
    /// Forgets the requests for this run, and the job's requests asked
    /// before `before` (for runs that had ended, or of another job).
    fn prune_replacements(
        &self,
        run_id: &str,
        job: &str,
        before: Timestamp,
    ) -> impl Future<Output = Result<(), Self::Error>>;

    // steps
    /// Counts an attempt against its step.
    fn step_attempted(&self, a: &Attempt) -> impl Future<Output = Result<(), Self::Error>>;
    fn steps(&self, job: &str) -> impl Future<Output = Result<Vec<StepState>, Self::Error>>;

    // alerts
    fn insert_alert(&self, a: &NewAlert) -> impl Future<Output = Result<(), Self::Error>>;
    fn recent_alerts(
        &self,
        job: Option<&str>,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<AlertRow>, Self::Error>>;

    // missed ranges
    /// Extends the job's newest range by `m` when it has the same reason and
    /// ends at the job's last decided occurrence; whether it did.
    fn extend_missed(
        &self,
        m: &Miss<'_>,
        count: i64,
        now: Timestamp,
    ) -> impl Future<Output = Result<bool, Self::Error>>;
    fn insert_missed(
        &self,
        m: &Miss<'_>,
        count: i64,
        detail: Option<&str>,
        now: Timestamp,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    fn missed(
        &self,
        job: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<MissedRow>, Self::Error>>;
    /// The job's newest missed range that holds `occurrence`, if any.
    fn missed_at(
        &self,
        job: &str,
        occurrence: i64,
    ) -> impl Future<Output = Result<Option<MissedRow>, Self::Error>>;
    fn missed_counts(
        &self,
        job: &str,
    ) -> impl Future<Output = Result<Vec<(MissReason, u64, bool)>, Self::Error>>;
    /// Keeps the job's newest 1,000 ranges.
    fn prune_missed(&self, job: &str) -> impl Future<Output = Result<(), Self::Error>>;

    // pauses
    /// Ends the job's pauses in force at `now`, returning them as ended.
    fn end_pauses(
        &self,
        job: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<Vec<PauseRow>, Self::Error>>;
    fn insert_pause(
        &self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<PauseRow, Self::Error>>;
    fn pauses(
        &self,
        job: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<PauseRow>, Self::Error>>;
    /// Keeps the job's newest 100 pauses, and every one not over at `now`.
    fn prune_pauses(
        &self,
        job: &str,
        now: Timestamp,
    ) -> impl Future<Output = Result<(), Self::Error>>;

    // declarations
    /// Writes the declaration, replacing the job's earlier one.
    fn declare(&self, d: &Declaration) -> impl Future<Output = Result<(), Self::Error>>;
    /// Every declaration, by job.
    fn declarations(&self) -> impl Future<Output = Result<Vec<Declaration>, Self::Error>>;

    // the queue
    fn newest_queued(&self, job: &str) -> impl Future<Output = Result<Option<i64>, Self::Error>>;
    fn oldest_queued(&self, job: &str) -> impl Future<Output = Result<Option<i64>, Self::Error>>;
    /// Adds `joined` to the count of occurrences coalesced into `into`.
    fn add_coalesced(
        &self,
        job: &str,
        into: i64,
        joined: i64,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    fn queued_jobs(&self) -> impl Future<Output = Result<Vec<String>, Self::Error>>;
    fn queued(&self, job: &str) -> impl Future<Output = Result<Vec<DecisionRow>, Self::Error>>;

    // tallies
    fn tally_missed(
        &self,
        job: &str,
        reason: MissReason,
        n: i64,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    fn tally_skipped(
        &self,
        job: &str,
        reason: SkipReason,
        n: i64,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    /// Counts a finished run: its verdict, a lost lease, its duration when
    /// its start is known.
    fn tally_finished(
        &self,
        f: &Finished,
        started: Option<Timestamp>,
    ) -> impl Future<Output = Result<(), Self::Error>>;
    fn tallies(&self) -> impl Future<Output = Result<Vec<JobTallies>, Self::Error>>;

    // watermarks
    fn watermark(
        &self,
        job: &str,
    ) -> impl Future<Output = Result<Option<WatermarkRow>, Self::Error>>;
    /// Records the job's next value, numbered one more than its newest.
    fn insert_watermark(
        &self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<i64>,
        now: Timestamp,
    ) -> impl Future<Output = Result<WatermarkRow, Self::Error>>;
    fn watermarks(
        &self,
        job: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<WatermarkRow>, Self::Error>>;
    /// Keeps the job's newest 100 values.
    fn prune_watermarks(&self, job: &str) -> impl Future<Output = Result<(), Self::Error>>;
}

/// How one store runs the ledger's transactions, and what only a store
/// knows about itself. Every type that implements it is a [`super::Records`].
pub trait Backend: Send {
    /// The store's own error, as its statements fail.
    type Error;
    /// The statements of one transaction.
    type Statements<'t>: Statements<Error = Self::Error>;

    /// Where the records are, for messages: a database file's path, or the
    /// store's URL without its password.
    fn location(&self) -> String;

    /// Runs `body` in one transaction of `mode` and commits it; on a
    /// failure, nothing the body wrote stays. `action` says what was being
    /// done, for the error (called only when there is one). The backend may
    /// run `body` again on a fresh connection when the first could not
    /// have written anything (a connection the server closed, a database
    /// recovered from corruption).
    ///
    /// # Errors
    ///
    /// What the body or the store failed with, as an [`Error`] that names
    /// the action and the store.
    fn transact<T: Send + 'static>(
        &mut self,
        mode: Mode,
        action: &dyn Fn() -> String,
        body: impl for<'t> AsyncFn(&mut Self::Statements<'t>) -> Result<T, Fail<Self::Error>>
        + Send
        + 'static,
    ) -> Result<T, Error>;

    /// See [`super::Records::encrypted`].
    fn encrypted(&self) -> Option<bool> {
        None
    }

    /// See [`super::Records::bound_calls`]. A store whose calls answer at
    /// once, or that bounds them itself, ignores it.
    fn bound_calls(&mut self, within: Option<std::time::Duration>) {
        let _ = within;
    }

    /// Notes a time a caller gave (see [`super::Records::time_is`]).
    fn saw(&mut self, now: Timestamp) {
        let _ = now;
    }

    /// See [`super::Records::take_recovered`].
    fn take_recovered(&mut self) -> Vec<Recovered> {
        Vec::new()
    }

    /// See [`super::Records::follow`].
    ///
    /// # Errors
    ///
    /// When the store fails.
    fn follow(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// See [`super::Records::checkpoint`].
    ///
    /// # Errors
    ///
    /// When the store fails.
    fn checkpoint(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// See [`super::Records::store_clock`].
    ///
    /// # Errors
    ///
    /// When the store cannot be reached.
    fn store_clock(&mut self) -> Result<Option<Timestamp>, Error> {
        Ok(None)
    }

    /// See [`super::Records::withdraw_ahead`]: only a store that decides by
    /// its hosts' clocks holds what a clock ahead decided.
    ///
    /// # Errors
    ///
    /// When the store fails.
    fn withdraw_ahead(
        &mut self,
        job: &str,
        now: Timestamp,
        tolerance: i64,
    ) -> Result<Option<Withdrawn>, Error> {
        let _ = (job, now, tolerance);
        Ok(None)
    }

    /// See [`super::Records::decided_after`].
    ///
    /// # Errors
    ///
    /// When the store fails.
    fn decided_after(
        &mut self,
        job: &str,
        after: Option<i64>,
        through: i64,
    ) -> Result<Vec<i64>, Error> {
        let _ = (job, after, through);
        Ok(Vec::new())
    }
}
