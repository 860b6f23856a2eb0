//! `baton_ledger::Records` for [`PgLedger`]: each method is one transaction
//! on the ledger's thread, writing what `baton_ledger::Ledger`'s method of
//! the same name writes, in the same order, with the same checks of the
//! caller's arguments (`baton_ledger::checks`) and the same action words in
//! its errors. The contract is told on `baton_ledger::Ledger`'s methods;
//! what this file owns is which rows each call touches together.
//!
//! Arguments are copied into the call (it runs on another thread); times
//! become microseconds here, before anything is sent.

use baton_ledger::{
    AlertRow, Attempt, Begun, Decision, DecisionRow, Error, Finished, JobState, JobTallies, Miss,
    Missed, MissedRow, NewAlert, NewRun, PauseRow, Queued, Records, Recovered, RunRow, StepState,
    WatermarkRow, checks,
};
use jiff::Timestamp;
use tokio_postgres::Transaction;

use super::decisions::{self, Entry};
use super::fail::Fail;
use super::pg_ledger::PgLedger;
use super::rows::micros;
use super::session::Mode::{Read, Write};
use super::{alerts, jobs, missed, pauses, queue, runs, steps, tallies, watermarks};

impl Records for PgLedger {
    fn location(&self) -> String {
        self.store().to_owned()
    }

    /// Nothing is ever moved aside here: always empty.
    fn take_recovered(&mut self) -> Vec<Recovered> {
        Vec::new()
    }

    fn see_jobs(&mut self, jobs: &[&str], now: Timestamp) -> Result<(), Error> {
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        let now = micros(now);
        self.call(
            Write,
            format!("record the jobs {jobs:?}"),
            async move |tx: &Transaction<'_>| jobs::see(tx, &names, now).await,
        )
    }

    /// The server makes every commit durable: nothing to do.
    fn checkpoint(&mut self) -> Result<(), Error> {
        Ok(())
    }

    /// The server's `clock_timestamp()`.
    fn store_clock(&mut self) -> Result<Option<Timestamp>, Error> {
        self.call(
            Read,
            "read the server's clock".into(),
            async |tx: &Transaction<'_>| {
                let row = tx
                    .query_one(
                        "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
                        &[],
                    )
                    .await?;
                super::rows::time(&row, 0).map(Some)
            },
        )
    }

    fn jobs(&mut self) -> Result<Vec<JobState>, Error> {
        self.call(
            Read,
            "read the jobs".into(),
            async |tx: &Transaction<'_>| jobs::all(tx).await,
        )
    }

    fn job(&mut self, job: &str) -> Result<Option<JobState>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read job {job}"),
            async move |tx: &Transaction<'_>| jobs::one(tx, &name).await,
        )
    }

    fn begin_run(&mut self, run: &NewRun) -> Result<Begun, Error> {
        let fence = match checks::fence(run.fence) {
            Ok(fence) => fence,
            Err(problem) => {
                return Err(
                    self.invalid(format!("record the start of run {}", run.run_id), problem)
                );
            }
        };
        let run = run.clone();
        self.call(
            Write,
            format!("record the start of run {} of job {}", run.run_id, run.job),
            async move |tx: &Transaction<'_>| -> Result<Begun, Fail> {
                if let Some(occurrence) = run.occurrence
                    && !decisions::start(tx, &run, occurrence).await?
                {
                    let existing = decisions::one(tx, &run.job, occurrence).await?;
                    // OK because the insert was refused by this very row,
                    // under the write lock this transaction holds, and rows
                    // are only deleted under that lock.
                    let existing = existing.ok_or_else(|| {
                        Fail::Invalid(format!(
                            "occurrence {occurrence} of job {} was decided and is gone",
                            run.job
                        ))
                    })?;
                    return Ok(existing.begun_by(&run));
                }
                if runs::recorded(tx, &run).await? {
                    return Ok(Begun::Started); // Recorded already, with its job's row.
                }
                runs::insert(tx, &run, fence).await?;
                jobs::begun(tx, &run).await?;
                Ok(Begun::Started)
            },
        )
    }

    fn record_attempt(&mut self, a: &Attempt) -> Result<(), Error> {
        let a = a.clone();
        self.call(
            Write,
            format!("record attempt {} of run {}", a.seq, a.run_id),
            async move |tx: &Transaction<'_>| -> Result<(), Fail> {
                let recorded = runs::job_of(tx, &a.run_id).await?;
                if let Some(job) = &recorded
                    && *job != a.job
                {
                    return Err(Fail::Invalid(format!(
                        "run {} belongs to job {job}, not {}",
                        a.run_id, a.job
                    )));
                }
                if recorded.is_some() && !runs::insert_attempt(tx, &a).await? {
                    return Ok(()); // Recorded already: counted already.
                }
                steps::attempted(tx, &a).await
            },
        )
    }

    fn finish_run(&mut self, f: &Finished, history_keep: u32) -> Result<(), Error> {
        let keep = history_keep.max(1);
        let f = f.clone();
        self.call(
            Write,
            format!("record the end of run {} of job {}", f.run_id, f.job),
            async move |tx: &Transaction<'_>| -> Result<(), Fail> {
                let recorded = runs::job_of(tx, &f.run_id).await?;
                if let Some(job) = &recorded
                    && *job != f.job
                {
                    return Err(Fail::Invalid(format!(
                        "run {} belongs to job {job}, not {}",
                        f.run_id, f.job
                    )));
                }
                let started = runs::started(tx, &f.run_id).await?;
                if recorded.is_some() && !runs::finish(tx, &f).await? {
                    return Ok(()); // Finished already: counted already.
                }
                jobs::finished(tx, &f).await?;
                tallies::finished(tx, &f, started).await?;
                runs::prune(tx, &f.job, keep).await?;
                decisions::prune(tx, &f.job).await?;
                missed::prune(tx, &f.job).await?;
                pauses::prune(tx, &f.job, micros(f.finished)).await?;
                watermarks::prune(tx, &f.job).await
            },
        )
    }

    fn claimed(
        &mut self,
        job: &str,
        occurrence: i64,
        detail: &str,
        now: Timestamp,
    ) -> Result<bool, Error> {
        let name = job.to_owned();
        let detail = Some(detail.to_owned()).filter(|d| !d.is_empty());
        let now = micros(now);
        self.call(
            Write,
            format!("record occurrence {occurrence} of job {job} as claimed"),
            async move |tx: &Transaction<'_>| -> Result<bool, Fail> {
                let entry = Entry {
                    job: &name,
                    occurrence,
                    decision: Decision::Claimed,
                    detail: detail.as_deref(),
                    joined: None,
                    decided: now,
                };
                let recorded = decisions::insert(tx, &entry).await?
                    || decisions::claim_queued(tx, &entry).await?;
                if recorded {
                    tallies::skipped(tx, &name, Decision::Claimed.as_str(), 1).await?;
                }
                jobs::decided(tx, &name, occurrence, now).await?;
                Ok(recorded)
            },
        )
    }

    fn decision(&mut self, job: &str, occurrence: i64) -> Result<Option<DecisionRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the decision for occurrence {occurrence} of job {job}"),
            async move |tx: &Transaction<'_>| decisions::one(tx, &name, occurrence).await,
        )
    }

    fn record_alert(&mut self, a: &NewAlert) -> Result<(), Error> {
        let a = a.clone();
        self.call(
            Write,
            format!("record a {} alert", a.kind),
            async move |tx: &Transaction<'_>| alerts::insert(tx, &a).await,
        )
    }

    fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> Result<Vec<AlertRow>, Error> {
        let name = job.map(str::to_owned);
        self.call(
            Read,
            "read the recent alerts".into(),
            async move |tx: &Transaction<'_>| alerts::recent(tx, name.as_deref(), limit).await,
        )
    }

    fn history(&mut self, job: &str, limit: u32) -> Result<Vec<RunRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the history of job {job}"),
            async move |tx: &Transaction<'_>| runs::history(tx, &name, limit).await,
        )
    }

    fn last_run(&mut self, job: &str) -> Result<Option<RunRow>, Error> {
        Ok(self.history(job, 1)?.pop())
    }

    fn running(&mut self, job: &str) -> Result<Option<RunRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the running run of job {job}"),
            async move |tx: &Transaction<'_>| runs::running(tx, &name).await,
        )
    }

    fn unfinished(&mut self, job: &str) -> Result<Vec<RunRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the unfinished runs of job {job}"),
            async move |tx: &Transaction<'_>| runs::unfinished(tx, &name).await,
        )
    }

    fn steps(&mut self, job: &str) -> Result<Vec<StepState>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the steps of job {job}"),
            async move |tx: &Transaction<'_>| steps::of_job(tx, &name).await,
        )
    }

    fn miss(&mut self, m: &Miss<'_>, now: Timestamp) -> Result<Missed, Error> {
        let action = format!(
            "record occurrences {}..={} of job {} as missed ({})",
            m.first, m.last, m.job, m.reason
        );
        let count = match checks::miss_count(m) {
            Ok(count) => count,
            Err(problem) => return Err(self.invalid(action, problem)),
        };
        let owned = missed::Miss {
            job: m.job.to_owned(),
            reason: m.reason.to_owned(),
            first: m.first,
            last: m.last,
            count,
            at_least: m.at_least,
            detail: m.detail.filter(|d| !d.is_empty()).map(str::to_owned),
            streak: m.streak,
        };
        let now = micros(now);
        self.call(Write, action, async move |tx: &Transaction<'_>| {
            missed::miss(tx, &owned, now).await
        })
    }

    fn missed(&mut self, job: &str, limit: u32) -> Result<Vec<MissedRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the missed occurrences of job {job}"),
            async move |tx: &Transaction<'_>| missed::recent(tx, &name, limit).await,
        )
    }

    fn missed_counts(&mut self, job: &str) -> Result<Vec<(String, u64, bool)>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("count the missed occurrences of job {job}"),
            async move |tx: &Transaction<'_>| missed::counts(tx, &name).await,
        )
    }

    fn pause(
        &mut self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<PauseRow, Error> {
        let action = format!("pause job {job}");
        if let Err(problem) = checks::pause(until, now) {
            return Err(self.invalid(action, problem));
        }
        let (name, reason, who) = (job.to_owned(), reason.map(str::to_owned), who.to_owned());
        let (until, now) = (until.map(micros), micros(now));
        self.call(Write, action, async move |tx: &Transaction<'_>| {
            pauses::pause(tx, &name, until, reason.as_deref(), &who, now).await
        })
    }

    fn resume(&mut self, job: &str, now: Timestamp) -> Result<Option<PauseRow>, Error> {
        let name = job.to_owned();
        let now = micros(now);
        self.call(
            Write,
            format!("resume job {job}"),
            async move |tx: &Transaction<'_>| pauses::resume(tx, &name, now).await,
        )
    }

    fn pauses(&mut self, job: &str, limit: u32) -> Result<Vec<PauseRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the pauses of job {job}"),
            async move |tx: &Transaction<'_>| pauses::recent(tx, &name, limit).await,
        )
    }

    fn enqueue(
        &mut self,
        job: &str,
        occurrences: &[i64],
        coalesce: bool,
        now: Timestamp,
    ) -> Result<Queued, Error> {
        let action = format!("queue occurrences {occurrences:?} of job {job}");
        let (first, last) = match checks::queue(occurrences) {
            Ok(ends) => ends,
            Err(problem) => return Err(self.invalid(action, problem)),
        };
        let batch = queue::Batch {
            occurrences: occurrences.to_vec(),
            first,
            last,
        };
        let (name, now) = (job.to_owned(), micros(now));
        self.call(Write, action, async move |tx: &Transaction<'_>| {
            queue::enqueue(tx, &name, &batch, coalesce, now).await
        })
    }

    fn next_queued(&mut self, jobs: &[&str]) -> Result<Option<(String, i64)>, Error> {
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        self.call(
            Read,
            format!("read the queue of jobs {jobs:?}"),
            async move |tx: &Transaction<'_>| queue::next(tx, &names).await,
        )
    }

    fn queued_jobs(&mut self) -> Result<Vec<String>, Error> {
        self.call(
            Read,
            "read which jobs have a queue".into(),
            async |tx: &Transaction<'_>| queue::jobs_waiting(tx).await,
        )
    }

    fn queued(&mut self, job: &str) -> Result<Vec<DecisionRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the queue of job {job}"),
            async move |tx: &Transaction<'_>| queue::queued(tx, &name).await,
        )
    }

    fn tallies(&mut self) -> Result<Vec<JobTallies>, Error> {
        self.call(
            Read,
            "read the tallies".into(),
            async |tx: &Transaction<'_>| tallies::all(tx).await,
        )
    }

    fn watermark(&mut self, job: &str) -> Result<Option<WatermarkRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the watermark of job {job}"),
            async move |tx: &Transaction<'_>| Ok(watermarks::recent(tx, &name, 1).await?.pop()),
        )
    }

    fn settle(
        &mut self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<u64>,
        now: Timestamp,
    ) -> Result<WatermarkRow, Error> {
        let action = format!("settle the watermark of job {job}");
        if let Err(problem) = checks::watermark(value) {
            return Err(self.invalid(action, problem));
        }
        let fence = match checks::fence(fence) {
            Ok(fence) => fence,
            Err(problem) => return Err(self.invalid(action, problem)),
        };
        let (name, value, run_id) = (job.to_owned(), value.to_owned(), run_id.map(str::to_owned));
        let now = micros(now);
        self.call(Write, action, async move |tx: &Transaction<'_>| {
            watermarks::settle(tx, &name, &value, run_id.as_deref(), fence, now).await
        })
    }

    fn watermarks(&mut self, job: &str, limit: u32) -> Result<Vec<WatermarkRow>, Error> {
        let name = job.to_owned();
        self.call(
            Read,
            format!("read the watermarks of job {job}"),
            async move |tx: &Transaction<'_>| watermarks::recent(tx, &name, limit).await,
        )
    }
}
