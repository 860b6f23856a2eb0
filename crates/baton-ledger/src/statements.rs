//! The ledger's single statements in SQLite ([`Sql`]): each one is the
//! function of the module named after its table, run on the transaction
//! [`crate::Ledger`] holds open. They never wait on anything but SQLite, so
//! their futures are ready at once.

use baton_store::ledger::{
    AlertRow, Attempt, DecisionRow, Finished, JobState, JobTallies, Miss, MissedRow, NewAlert,
    NewDecision, NewRun, PauseRow, RunRow, Statements, StepState, WatermarkRow,
};
use baton_store::words::{MissReason, SkipReason};
use jiff::Timestamp;
use rusqlite::Connection;

use crate::{alerts, decisions, jobs, missed, pauses, queue, runs, steps, tallies, watermarks};

/// The statements of one SQLite transaction.
pub struct Sql<'t> {
    pub(crate) conn: &'t Connection,
}

type R<T> = rusqlite::Result<T>;

impl Statements for Sql<'_> {
    type Error = rusqlite::Error;

    async fn see_jobs(&mut self, names: &[&str], now: Timestamp) -> R<()> {
        jobs::see(self.conn, names, now)
    }
    async fn job_begun(&mut self, run: &NewRun) -> R<()> {
        jobs::begun(self.conn, run)
    }
    async fn job_finished(&mut self, f: &Finished) -> R<()> {
        jobs::finished(self.conn, f)
    }
    async fn decided_through(&mut self, job: &str, occurrence: i64) -> R<bool> {
        jobs::decided_through(self.conn, job, occurrence)
    }
    async fn decided(&mut self, job: &str, occurrence: i64, now: Timestamp) -> R<()> {
        jobs::decided(self.conn, job, occurrence, now)
    }
    async fn jobs(&mut self) -> R<Vec<JobState>> {
        jobs::all(self.conn)
    }
    async fn job(&mut self, job: &str) -> R<Option<JobState>> {
        jobs::one(self.conn, job)
    }

    async fn insert_decision(&mut self, d: &NewDecision<'_>) -> R<bool> {
        decisions::insert(self.conn, d)
    }
    async fn start_decision(&mut self, run: &NewRun, occurrence: i64) -> R<bool> {
        decisions::start(self.conn, run, occurrence)
    }
    async fn claim_queued(&mut self, d: &NewDecision<'_>) -> R<bool> {
        decisions::claim_queued(self.conn, d)
    }
    async fn decision(&mut self, job: &str, occurrence: i64) -> R<Option<DecisionRow>> {
        decisions::one(self.conn, job, occurrence)
    }
    async fn prune_decisions(&mut self, job: &str) -> R<()> {
        decisions::prune(self.conn, job)
    }

    async fn insert_run(&mut self, run: &NewRun, fence: Option<i64>) -> R<()> {
        runs::insert(self.conn, run, fence)
    }
    async fn run_recorded(&mut self, run: &NewRun) -> R<bool> {
        runs::recorded(self.conn, run)
    }
    async fn run_job(&mut self, run_id: &str) -> R<Option<String>> {
        runs::job_of(self.conn, run_id)
    }
    async fn run_started(&mut self, run_id: &str) -> R<Option<Timestamp>> {
        runs::started(self.conn, run_id)
    }
    async fn insert_attempt(&mut self, a: &Attempt) -> R<bool> {
        runs::insert_attempt(self.conn, a)
    }
    async fn finish_run(&mut self, f: &Finished) -> R<bool> {
        runs::finish(self.conn, f)
    }
    async fn prune_runs(&mut self, job: &str, keep: u32) -> R<()> {
        runs::prune(self.conn, job, keep)
    }
    async fn history(&mut self, job: &str, limit: u32) -> R<Vec<RunRow>> {
        runs::history(self.conn, job, limit)
    }
    async fn running(&mut self, job: &str) -> R<Option<RunRow>> {
        runs::running(self.conn, job)
    }
    async fn unfinished(&mut self, job: &str) -> R<Vec<RunRow>> {
        runs::unfinished(self.conn, job)
    }

    async fn step_attempted(&mut self, a: &Attempt) -> R<()> {
        steps::attempted(self.conn, a)
    }
    async fn steps(&mut self, job: &str) -> R<Vec<StepState>> {
        steps::of_job(self.conn, job)
    }

    async fn insert_alert(&mut self, a: &NewAlert) -> R<()> {
        alerts::insert(self.conn, a)
    }
    async fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> R<Vec<AlertRow>> {
        alerts::recent(self.conn, job, limit)
    }

    async fn extend_missed(&mut self, m: &Miss<'_>, count: i64, now: Timestamp) -> R<bool> {
        missed::extend(self.conn, m, count, now)
    }
    async fn insert_missed(
        &mut self,
        m: &Miss<'_>,
        count: i64,
        detail: Option<&str>,
        now: Timestamp,
    ) -> R<()> {
        missed::insert(self.conn, m, count, detail, now)
    }
    async fn missed(&mut self, job: &str, limit: u32) -> R<Vec<MissedRow>> {
        missed::recent(self.conn, job, limit)
    }
    async fn missed_counts(&mut self, job: &str) -> R<Vec<(MissReason, u64, bool)>> {
        missed::counts(self.conn, job)
    }
    async fn prune_missed(&mut self, job: &str) -> R<()> {
        missed::prune(self.conn, job)
    }

    async fn end_pauses(&mut self, job: &str, now: Timestamp) -> R<Vec<PauseRow>> {
        pauses::end_in_force(self.conn, job, now)
    }
    async fn insert_pause(
        &mut self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> R<PauseRow> {
        pauses::insert(self.conn, job, until, reason, who, now)
    }
    async fn pauses(&mut self, job: &str, limit: u32) -> R<Vec<PauseRow>> {
        pauses::recent(self.conn, job, limit)
    }
    async fn prune_pauses(&mut self, job: &str, now: Timestamp) -> R<()> {
        pauses::prune(self.conn, job, now)
    }

    async fn newest_queued(&mut self, job: &str) -> R<Option<i64>> {
        queue::newest(self.conn, job)
    }
    async fn oldest_queued(&mut self, job: &str) -> R<Option<i64>> {
        queue::oldest(self.conn, job)
    }
    async fn add_coalesced(&mut self, job: &str, into: i64, joined: i64) -> R<()> {
        queue::add_coalesced(self.conn, job, into, joined)
    }
    async fn queued_jobs(&mut self) -> R<Vec<String>> {
        queue::jobs(self.conn)
    }
    async fn queued(&mut self, job: &str) -> R<Vec<DecisionRow>> {
        queue::of_job(self.conn, job)
    }

    async fn tally_missed(&mut self, job: &str, reason: MissReason, n: i64) -> R<()> {
        tallies::missed(self.conn, job, reason, n)
    }
    async fn tally_skipped(&mut self, job: &str, reason: SkipReason, n: i64) -> R<()> {
        tallies::skipped(self.conn, job, reason, n)
    }
    async fn tally_finished(&mut self, f: &Finished, started: Option<Timestamp>) -> R<()> {
        tallies::finished(self.conn, f, started)
    }
    async fn tallies(&mut self) -> R<Vec<JobTallies>> {
        tallies::all(self.conn)
    }

    async fn watermark(&mut self, job: &str) -> R<Option<WatermarkRow>> {
        watermarks::newest(self.conn, job)
    }
    async fn insert_watermark(
        &mut self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<i64>,
        now: Timestamp,
    ) -> R<WatermarkRow> {
        watermarks::insert(self.conn, job, value, run_id, fence, now)
    }
    async fn watermarks(&mut self, job: &str, limit: u32) -> R<Vec<WatermarkRow>> {
        watermarks::recent(self.conn, job, limit)
    }
    async fn prune_watermarks(&mut self, job: &str) -> R<()> {
        watermarks::prune(self.conn, job)
    }
}
