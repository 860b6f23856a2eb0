//! The ledger's single statements in PostgreSQL ([`Pg`]): each one is the
//! function of the module named after its table, run on the transaction
//! the ledger's thread holds open (`session`), with times turned into the
//! microseconds the tables keep.

use baton_store::ledger::{
    AlertRow, Attempt, DecisionRow, Finished, JobState, JobTallies, Miss, MissedRow, NewAlert,
    NewDecision, NewRun, PauseRow, RunRow, Statements, StepState, WatermarkRow,
};
use baton_store::words::{MissReason, SkipReason};
use jiff::Timestamp;
use tokio_postgres::Transaction;

use super::fail::Fail;
use super::rows::micros;
use super::{alerts, decisions, jobs, missed, pauses, queue, runs, steps, tallies, watermarks};

/// The statements of one PostgreSQL transaction.
pub struct Pg<'t> {
    pub(crate) tx: &'t Transaction<'t>,
}

type R<T> = Result<T, Fail>;

impl Statements for Pg<'_> {
    type Error = Fail;

    async fn see_jobs(&mut self, names: &[&str], now: Timestamp) -> R<()> {
        jobs::see(self.tx, names, micros(now)).await
    }
    async fn job_begun(&mut self, run: &NewRun) -> R<()> {
        jobs::begun(self.tx, run).await
    }
    async fn job_finished(&mut self, f: &Finished) -> R<()> {
        jobs::finished(self.tx, f).await
    }
    async fn decided_through(&mut self, job: &str, occurrence: i64) -> R<bool> {
        jobs::decided_through(self.tx, job, occurrence).await
    }
    async fn decided(&mut self, job: &str, occurrence: i64, now: Timestamp) -> R<()> {
        jobs::decided(self.tx, job, occurrence, micros(now)).await
    }
    async fn jobs(&mut self) -> R<Vec<JobState>> {
        jobs::all(self.tx).await
    }
    async fn job(&mut self, job: &str) -> R<Option<JobState>> {
        jobs::one(self.tx, job).await
    }

    async fn insert_decision(&mut self, d: &NewDecision<'_>) -> R<bool> {
        decisions::insert(self.tx, d).await
    }
    async fn start_decision(&mut self, run: &NewRun, occurrence: i64) -> R<bool> {
        decisions::start(self.tx, run, occurrence).await
    }
    async fn claim_queued(&mut self, d: &NewDecision<'_>) -> R<bool> {
        decisions::claim_queued(self.tx, d).await
    }
    async fn decision(&mut self, job: &str, occurrence: i64) -> R<Option<DecisionRow>> {
        decisions::one(self.tx, job, occurrence).await
    }
    async fn prune_decisions(&mut self, job: &str) -> R<()> {
        decisions::prune(self.tx, job).await
    }

    async fn insert_run(&mut self, run: &NewRun, fence: Option<i64>) -> R<()> {
        runs::insert(self.tx, run, fence).await
    }
    async fn run_recorded(&mut self, run: &NewRun) -> R<bool> {
        runs::recorded(self.tx, run).await
    }
    async fn run_job(&mut self, run_id: &str) -> R<Option<String>> {
        runs::job_of(self.tx, run_id).await
    }
    async fn run_started(&mut self, run_id: &str) -> R<Option<Timestamp>> {
        runs::started(self.tx, run_id).await
    }
    async fn insert_attempt(&mut self, a: &Attempt) -> R<bool> {
        runs::insert_attempt(self.tx, a).await
    }
    async fn finish_run(&mut self, f: &Finished) -> R<bool> {
        runs::finish(self.tx, f).await
    }
    async fn prune_runs(&mut self, job: &str, keep: u32) -> R<()> {
        runs::prune(self.tx, job, keep).await
    }
    async fn history(&mut self, job: &str, limit: u32) -> R<Vec<RunRow>> {
        runs::history(self.tx, job, limit).await
    }
    async fn running(&mut self, job: &str) -> R<Option<RunRow>> {
        runs::running(self.tx, job).await
    }
    async fn unfinished(&mut self, job: &str) -> R<Vec<RunRow>> {
        runs::unfinished(self.tx, job).await
    }

    async fn step_attempted(&mut self, a: &Attempt) -> R<()> {
        steps::attempted(self.tx, a).await
    }
    async fn steps(&mut self, job: &str) -> R<Vec<StepState>> {
        steps::of_job(self.tx, job).await
    }

    async fn insert_alert(&mut self, a: &NewAlert) -> R<()> {
        alerts::insert(self.tx, a).await
    }
    async fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> R<Vec<AlertRow>> {
        alerts::recent(self.tx, job, limit).await
    }

    async fn extend_missed(&mut self, m: &Miss<'_>, count: i64, now: Timestamp) -> R<bool> {
        missed::extend(self.tx, m, count, micros(now)).await
    }
    async fn insert_missed(
        &mut self,
        m: &Miss<'_>,
        count: i64,
        detail: Option<&str>,
        now: Timestamp,
    ) -> R<()> {
        missed::insert(self.tx, m, count, detail, micros(now)).await
    }
    async fn missed(&mut self, job: &str, limit: u32) -> R<Vec<MissedRow>> {
        missed::recent(self.tx, job, limit).await
    }
    async fn missed_counts(&mut self, job: &str) -> R<Vec<(MissReason, u64, bool)>> {
        missed::counts(self.tx, job).await
    }
    async fn prune_missed(&mut self, job: &str) -> R<()> {
        missed::prune(self.tx, job).await
    }

    async fn end_pauses(&mut self, job: &str, now: Timestamp) -> R<Vec<PauseRow>> {
        pauses::end_in_force(self.tx, job, micros(now)).await
    }
    async fn insert_pause(
        &mut self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> R<PauseRow> {
        pauses::insert(self.tx, job, until.map(micros), reason, who, micros(now)).await
    }
    async fn pauses(&mut self, job: &str, limit: u32) -> R<Vec<PauseRow>> {
        pauses::recent(self.tx, job, limit).await
    }
    async fn prune_pauses(&mut self, job: &str, now: Timestamp) -> R<()> {
        pauses::prune(self.tx, job, micros(now)).await
    }

    async fn newest_queued(&mut self, job: &str) -> R<Option<i64>> {
        queue::newest(self.tx, job).await
    }
    async fn oldest_queued(&mut self, job: &str) -> R<Option<i64>> {
        queue::oldest(self.tx, job).await
    }
    async fn add_coalesced(&mut self, job: &str, into: i64, joined: i64) -> R<()> {
        queue::add_coalesced(self.tx, job, into, joined).await
    }
    async fn queued_jobs(&mut self) -> R<Vec<String>> {
        queue::jobs_waiting(self.tx).await
    }
    async fn queued(&mut self, job: &str) -> R<Vec<DecisionRow>> {
        queue::queued(self.tx, job).await
    }

    async fn tally_missed(&mut self, job: &str, reason: MissReason, n: i64) -> R<()> {
        tallies::missed(self.tx, job, reason, n).await
    }
    async fn tally_skipped(&mut self, job: &str, reason: SkipReason, n: i64) -> R<()> {
        tallies::skipped(self.tx, job, reason, n).await
    }
    async fn tally_finished(&mut self, f: &Finished, started: Option<Timestamp>) -> R<()> {
        tallies::finished(self.tx, f, started).await
    }
    async fn tallies(&mut self) -> R<Vec<JobTallies>> {
        tallies::all(self.tx).await
    }

    async fn watermark(&mut self, job: &str) -> R<Option<WatermarkRow>> {
        Ok(watermarks::recent(self.tx, job, 1).await?.pop())
    }
    async fn insert_watermark(
        &mut self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<i64>,
        now: Timestamp,
    ) -> R<WatermarkRow> {
        watermarks::insert(self.tx, job, value, run_id, fence, micros(now)).await
    }
    async fn watermarks(&mut self, job: &str, limit: u32) -> R<Vec<WatermarkRow>> {
        watermarks::recent(self.tx, job, limit).await
    }
    async fn prune_watermarks(&mut self, job: &str) -> R<()> {
        watermarks::prune(self.tx, job).await
    }
}
