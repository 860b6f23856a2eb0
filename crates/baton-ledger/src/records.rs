//! The ledger as the scheduler sees it: one trait, [`Records`], with two
//! implementations, [`crate::Ledger`] (SQLite in the state directory, the
//! embedded default) and the PostgreSQL ledger of `baton-pg` (several
//! hosts). The scheduler holds a `dyn Records` and never learns which it
//! talks to.
//!
//! The trait owns the contract every implementation keeps, not any SQL:
//! an occurrence is decided once across every process and host; a decision
//! never goes back behind a job's `last_decided` mark; no update is lost
//! between writers; every time comes from the caller, never a clock read
//! here. Each method's documentation on [`crate::Ledger`] is the contract's
//! text; an implementation that cannot keep it returns an error and writes
//! nothing.

use jiff::Timestamp;

use crate::{
    AlertRow, Attempt, Begun, DecisionRow, Error, Finished, JobState, JobTallies, Miss, Missed,
    MissedRow, NewAlert, NewRun, PauseRow, Queued, Recovered, RunRow, StepState, WatermarkRow,
    Withdrawn,
};

/// The scheduler's ledger: runs, decisions, missed ranges, the queue,
/// alerts, pauses, watermarks and tallies. See [`crate::Ledger`]'s methods
/// of the same names for what each one promises.
pub trait Records: Send {
    /// Where the records are, for messages: a database file's path, or the
    /// store's URL without its password.
    fn location(&self) -> String;
    /// What was moved aside as corrupt since the last call (SQLite only;
    /// other stores recover nothing and return none).
    fn take_recovered(&mut self) -> Vec<Recovered>;
    /// Tells the ledger the time now, so that a file found corrupt during a
    /// later call that carries no time of its own (a read) is named by when
    /// the corruption was found, not by an older time. SQLite only; other
    /// stores recover nothing, and ignore it.
    fn time_is(&mut self, now: Timestamp) {
        let _ = now;
    }
    /// Records that these jobs exist.
    fn see_jobs(&mut self, jobs: &[&str], now: Timestamp) -> Result<(), Error>;
    /// Makes what was written durable in the store's main file, when it has
    /// one (a no-op elsewhere).
    fn checkpoint(&mut self) -> Result<(), Error>;
    /// The store's own clock now, for a store that several hosts share:
    /// what is due is decided by it, so a host whose clock is off neither
    /// runs an occurrence early nor calls one missed. `None` for a store
    /// of this host alone (the SQLite ledger), whose clock is the host's.
    /// This is the one method that reads a clock, and it reads the store's.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached.
    fn store_clock(&mut self) -> Result<Option<Timestamp>, Error> {
        Ok(None)
    }
    /// Every job's row, by name.
    fn jobs(&mut self) -> Result<Vec<JobState>, Error>;
    /// One job's row.
    fn job(&mut self, job: &str) -> Result<Option<JobState>, Error>;
    /// Records a run's start, deciding its occurrence.
    fn begin_run(&mut self, run: &NewRun) -> Result<Begun, Error>;
    /// Records one attempt of a step.
    fn record_attempt(&mut self, a: &Attempt) -> Result<(), Error>;
    /// Records a run's end and prunes history past `history_keep` runs.
    fn finish_run(&mut self, f: &Finished, history_keep: u32) -> Result<(), Error>;
    /// Records that the lock's claim says an occurrence started already.
    fn claimed(
        &mut self,
        job: &str,
        occurrence: i64,
        detail: &str,
        now: Timestamp,
    ) -> Result<bool, Error>;
    /// The decision taken for one occurrence.
    fn decision(&mut self, job: &str, occurrence: i64) -> Result<Option<DecisionRow>, Error>;
    /// Records an alert.
    fn record_alert(&mut self, a: &NewAlert) -> Result<(), Error>;
    /// The newest alerts, of one job or all.
    fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> Result<Vec<AlertRow>, Error>;
    /// A job's newest runs, newest first.
    fn history(&mut self, job: &str, limit: u32) -> Result<Vec<RunRow>, Error>;
    /// A job's newest finished run.
    fn last_run(&mut self, job: &str) -> Result<Option<RunRow>, Error>;
    /// A job's run in progress, if any.
    fn running(&mut self, job: &str) -> Result<Option<RunRow>, Error>;
    /// A job's runs without an end, oldest first.
    fn unfinished(&mut self, job: &str) -> Result<Vec<RunRow>, Error>;
    /// What each of a job's steps last came to.
    fn steps(&mut self, job: &str) -> Result<Vec<StepState>, Error>;
    /// Decides that a range of occurrences will not run.
    fn miss(&mut self, m: &Miss<'_>, now: Timestamp) -> Result<Missed, Error>;
    /// Takes back what a clock ahead decided (see
    /// [`crate::Ledger::withdraw_ahead`]). A store that decides by its own
    /// clock, not its hosts' (one several hosts share), never holds such
    /// decisions, and withdraws nothing: `Ok(None)`, the default.
    fn withdraw_ahead(
        &mut self,
        job: &str,
        now: Timestamp,
        tolerance: i64,
    ) -> Result<Option<Withdrawn>, Error> {
        let _ = (job, now, tolerance);
        Ok(None)
    }
    /// Brings a job's first sighting that a clock ahead recorded back to
    /// `now` (see [`crate::Ledger::see_again_ahead`]). A store that decides
    /// by its own clock (one several hosts share) never holds one: `Ok(false)`,
    /// the default.
    fn see_again_ahead(
        &mut self,
        job: &str,
        now: Timestamp,
        tolerance: i64,
    ) -> Result<bool, Error> {
        let _ = (job, now, tolerance);
        Ok(false)
    }
    /// The occurrences with a decision in `(after, through]` (see
    /// [`crate::Ledger::decided_after`]); none by default, for a store that
    /// never holds decisions ahead of its mark.
    fn decided_after(
        &mut self,
        job: &str,
        after: Option<i64>,
        through: i64,
    ) -> Result<Vec<i64>, Error> {
        let _ = (job, after, through);
        Ok(Vec::new())
    }
    /// A job's newest missed ranges.
    fn missed(&mut self, job: &str, limit: u32) -> Result<Vec<MissedRow>, Error>;
    /// A job's missed occurrences counted by reason.
    fn missed_counts(&mut self, job: &str) -> Result<Vec<(String, u64, bool)>, Error>;
    /// Pauses a job.
    fn pause(
        &mut self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<PauseRow, Error>;
    /// Ends a job's pause.
    fn resume(&mut self, job: &str, now: Timestamp) -> Result<Option<PauseRow>, Error>;
    /// A job's newest pauses.
    fn pauses(&mut self, job: &str, limit: u32) -> Result<Vec<PauseRow>, Error>;
    /// Queues occurrences of a job behind its lock.
    fn enqueue(
        &mut self,
        job: &str,
        occurrences: &[i64],
        coalesce: bool,
        now: Timestamp,
    ) -> Result<Queued, Error>;
    /// The oldest queued occurrence among these jobs.
    fn next_queued(&mut self, jobs: &[&str]) -> Result<Option<(String, i64)>, Error>;
    /// The jobs with something queued.
    fn queued_jobs(&mut self) -> Result<Vec<String>, Error>;
    /// A job's queued occurrences, oldest first.
    fn queued(&mut self, job: &str) -> Result<Vec<DecisionRow>, Error>;
    /// Every job's run counts and durations.
    fn tallies(&mut self) -> Result<Vec<JobTallies>, Error>;
    /// A job's settled watermark.
    fn watermark(&mut self, job: &str) -> Result<Option<WatermarkRow>, Error>;
    /// Settles a job's watermark.
    fn settle(
        &mut self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<u64>,
        now: Timestamp,
    ) -> Result<WatermarkRow, Error>;
    /// A job's newest watermarks.
    fn watermarks(&mut self, job: &str, limit: u32) -> Result<Vec<WatermarkRow>, Error>;
}

/// Forwards every method to the inherent one of the same name.
macro_rules! forward {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(fn $name(&mut self, $($arg: $ty),*) -> $ret { crate::Ledger::$name(self, $($arg),*) })*
    };
}

impl Records for crate::Ledger {
    fn location(&self) -> String {
        self.path().display().to_string()
    }

    fn time_is(&mut self, now: Timestamp) {
        crate::Ledger::time_is(self, now);
    }

    forward! {
        take_recovered() -> Vec<Recovered>;
        see_jobs(jobs: &[&str], now: Timestamp) -> Result<(), Error>;
        checkpoint() -> Result<(), Error>;
        jobs() -> Result<Vec<JobState>, Error>;
        job(job: &str) -> Result<Option<JobState>, Error>;
        begin_run(run: &NewRun) -> Result<Begun, Error>;
        record_attempt(a: &Attempt) -> Result<(), Error>;
        finish_run(f: &Finished, history_keep: u32) -> Result<(), Error>;
        claimed(job: &str, occurrence: i64, detail: &str, now: Timestamp) -> Result<bool, Error>;
        decision(job: &str, occurrence: i64) -> Result<Option<DecisionRow>, Error>;
        record_alert(a: &NewAlert) -> Result<(), Error>;
        recent_alerts(job: Option<&str>, limit: u32) -> Result<Vec<AlertRow>, Error>;
        history(job: &str, limit: u32) -> Result<Vec<RunRow>, Error>;
        last_run(job: &str) -> Result<Option<RunRow>, Error>;
        running(job: &str) -> Result<Option<RunRow>, Error>;
        unfinished(job: &str) -> Result<Vec<RunRow>, Error>;
        steps(job: &str) -> Result<Vec<StepState>, Error>;
        miss(m: &Miss<'_>, now: Timestamp) -> Result<Missed, Error>;
        withdraw_ahead(job: &str, now: Timestamp, tolerance: i64) -> Result<Option<Withdrawn>, Error>;
        see_again_ahead(job: &str, now: Timestamp, tolerance: i64) -> Result<bool, Error>;
        decided_after(job: &str, after: Option<i64>, through: i64) -> Result<Vec<i64>, Error>;
        missed(job: &str, limit: u32) -> Result<Vec<MissedRow>, Error>;
        missed_counts(job: &str) -> Result<Vec<(String, u64, bool)>, Error>;
        pause(job: &str, until: Option<Timestamp>, reason: Option<&str>, who: &str, now: Timestamp) -> Result<PauseRow, Error>;
        resume(job: &str, now: Timestamp) -> Result<Option<PauseRow>, Error>;
        pauses(job: &str, limit: u32) -> Result<Vec<PauseRow>, Error>;
        enqueue(job: &str, occurrences: &[i64], coalesce: bool, now: Timestamp) -> Result<Queued, Error>;
        next_queued(jobs: &[&str]) -> Result<Option<(String, i64)>, Error>;
        queued_jobs() -> Result<Vec<String>, Error>;
        queued(job: &str) -> Result<Vec<DecisionRow>, Error>;
        tallies() -> Result<Vec<JobTallies>, Error>;
        watermark(job: &str) -> Result<Option<WatermarkRow>, Error>;
        settle(job: &str, value: &str, run_id: Option<&str>, fence: Option<u64>, now: Timestamp) -> Result<WatermarkRow, Error>;
        watermarks(job: &str, limit: u32) -> Result<Vec<WatermarkRow>, Error>;
    }
}
