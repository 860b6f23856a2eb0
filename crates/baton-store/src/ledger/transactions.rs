//! Every [`Records`] call, written once for every store: the arguments
//! checked ([`super::checks`]) before anything is written, then one
//! transaction of the store's [`Backend`] whose body is a function of its
//! [`Statements`] below. Which statements run together, on what condition,
//! and what a call returns are decided here and nowhere else.
//!
//! A body decides only from what its own statements return inside its own
//! transaction (a conditional insert's change count, a mark read under the
//! write lock), never from a value read before it. Arguments are copied
//! into the body, which a store may run on a thread of its own.

use jiff::Timestamp;

use super::checks;
use super::error::Error;
use super::records::Records;
use super::rows::{
    AlertRow, Attempt, Begun, DecisionRow, Declaration, Finished, JobAsk, JobRecord, JobState,
    JobTallies, Miss, Missed, MissedRow, NewAlert, NewRun, Overview, PauseRow, Queued, Recovered,
    Replacement, Requested, RunRow, StepState, WatermarkRow, Withdrawn,
};
use super::statements::{Backend, Fail, Mode, NewDecision, Statements};
use crate::words::{Decision, MissReason, RunVerdict, SkipReason};

/// A refusal of the arguments before any transaction: nothing was written.
fn invalid(store: &impl Backend, action: String, problem: checks::Refusal) -> Error {
    Error::Invalid {
        action,
        store: store.location(),
        problem: problem.to_string(),
    }
}

/// `run`'s fence as the ledger stores it, its start seen as the time;
/// refused when it cannot be stored.
fn start_fence(store: &mut impl Backend, run: &NewRun) -> Result<Option<i64>, Error> {
    store.saw(run.started);
    checks::fence(run.fence).map_err(|problem| {
        invalid(
            store,
            format!("record the start of run {}", run.run_id),
            problem,
        )
    })
}

impl<B: Backend> Records for B {
    fn location(&self) -> String {
        Backend::location(self)
    }

    fn take_recovered(&mut self) -> Vec<Recovered> {
        Backend::take_recovered(self)
    }

    fn follow(&mut self) -> Result<(), Error> {
        Backend::follow(self)
    }

    fn encrypted(&self) -> Option<bool> {
        Backend::encrypted(self)
    }

    fn time_is(&mut self, now: Timestamp) {
        self.saw(now);
    }

    fn bound_calls(&mut self, within: Option<std::time::Duration>) {
        Backend::bound_calls(self, within);
    }

    fn see_jobs(&mut self, jobs: &[&str], now: Timestamp) -> Result<(), Error> {
        self.saw(now);
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        self.transact(
            Mode::Write,
            &|| format!("record the jobs {jobs:?}"),
            async move |tx| {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                Ok(tx.see_jobs(&names, now).await?)
            },
        )
    }

    fn checkpoint(&mut self) -> Result<(), Error> {
        Backend::checkpoint(self)
    }

    fn store_clock(&mut self) -> Result<Option<Timestamp>, Error> {
        Backend::store_clock(self)
    }

    fn overview(&mut self) -> Result<Overview, Error> {
        self.transact(
            Mode::Read,
            &|| "read the jobs, the queue and the store's clock".into(),
            async |tx| {
                // Sent together: one round trip to a server.
                let tx = &*tx;
                let (clock, jobs, queued) =
                    futures_util::try_join!(tx.server_clock(), tx.jobs(), tx.queued_jobs())?;
                Ok(Overview {
                    clock,
                    jobs,
                    queued,
                })
            },
        )
    }

    fn job_records(&mut self, asks: &[JobAsk]) -> Result<Vec<JobRecord>, Error> {
        let asks = asks.to_vec();
        self.transact(
            Mode::Read,
            &|| "read the jobs' records".into(),
            async move |tx| {
                let tx = &*tx;
                let reads = asks.iter().map(|a| job_record(tx, a));
                Ok(futures_util::future::try_join_all(reads).await?)
            },
        )
    }

    fn job_records_and_others(
        &mut self,
        asks: &[JobAsk],
        known: &[String],
    ) -> Result<(Vec<JobRecord>, Vec<RunRow>), Error> {
        let (asks, known) = (asks.to_vec(), known.to_vec());
        self.transact(
            Mode::Read,
            &|| "read the jobs' records and the runs of other jobs".into(),
            async move |tx| {
                let tx = &*tx;
                let reads = asks.iter().map(|a| job_record(tx, a));
                let (records, others) = futures_util::future::try_join(
                    futures_util::future::try_join_all(reads),
                    tx.unfinished_of_others(&known),
                )
                .await?;
                Ok((records, others))
            },
        )
    }

    fn jobs(&mut self) -> Result<Vec<JobState>, Error> {
        self.transact(Mode::Read, &|| "read the jobs".into(), async |tx| {
            Ok(tx.jobs().await?)
        })
    }

    fn job(&mut self, job: &str) -> Result<Option<JobState>, Error> {
        let name = job.to_owned();
        self.transact(Mode::Read, &|| format!("read job {job}"), async move |tx| {
            Ok(tx.job(&name).await?)
        })
    }

    fn begin_run(&mut self, run: &NewRun) -> Result<Begun, Error> {
        let fence = start_fence(self, run)?;
        let owned = run.clone();
        self.transact(
            Mode::Write,
            &|| format!("record the start of run {} of job {}", run.run_id, run.job),
            async move |tx| begin_run(tx, &owned, fence).await,
        )
    }

    fn begin_run_then_unfinished(
        &mut self,
        run: &NewRun,
        jobs: &[&str],
    ) -> Result<(Begun, Vec<Vec<RunRow>>), Error> {
        let fence = start_fence(self, run)?;
        let owned = run.clone();
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        self.transact(
            Mode::Write,
            &|| {
                format!(
                    "record the start of run {} of job {} and read the runs of jobs {jobs:?}",
                    run.run_id, run.job
                )
            },
            async move |tx| {
                let begun = begin_run(tx, &owned, fence).await?;
                let tx = &*tx;
                let reads = names.iter().map(|job| tx.unfinished(job));
                let unfinished = futures_util::future::try_join_all(reads).await?;
                Ok((begun, unfinished))
            },
        )
    }

    fn begin_runs(&mut self, runs: &[NewRun]) -> Result<Vec<Begun>, Error> {
        let mut fenced = Vec::with_capacity(runs.len());
        for run in runs {
            fenced.push((run.clone(), start_fence(self, run)?));
        }
        self.transact(
            Mode::Write,
            &|| format!("record the start of {} runs", runs.len()),
            async move |tx| {
                let mut begun = Vec::with_capacity(fenced.len());
                for (run, fence) in &fenced {
                    begun.push(begin_run(tx, run, *fence).await?);
                }
                Ok(begun)
            },
        )
    }

    fn record_attempt(&mut self, a: &Attempt) -> Result<(), Error> {
        self.saw(a.finished);
        let owned = a.clone();
        self.transact(
            Mode::Write,
            &|| format!("record attempt {} of run {}", a.seq, a.run_id),
            async move |tx| record_attempt(tx, &owned).await,
        )
    }

    fn finish_run(&mut self, f: &Finished, history_keep: u32) -> Result<(), Error> {
        self.saw(f.finished);
        let owned = f.clone();
        self.transact(
            Mode::Write,
            &|| format!("record the end of run {} of job {}", f.run_id, f.job),
            async move |tx| finish_run(tx, &[], &owned, history_keep.max(1)).await,
        )
    }

    fn finish_run_after(
        &mut self,
        attempts: &[Attempt],
        f: &Finished,
        history_keep: u32,
    ) -> Result<(), Error> {
        if attempts.is_empty() {
            return self.finish_run(f, history_keep);
        }
        for a in attempts {
            self.saw(a.finished);
        }
        self.saw(f.finished);
        let (tried, owned) = (attempts.to_vec(), f.clone());
        self.transact(
            Mode::Write,
            &|| {
                format!(
                    "record the end of run {} of job {} with its last attempts",
                    f.run_id, f.job
                )
            },
            async move |tx| finish_run(tx, &tried, &owned, history_keep.max(1)).await,
        )
    }

    fn finish_run_then_next(
        &mut self,
        attempts: &[Attempt],
        f: &Finished,
        history_keep: u32,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<Option<(String, i64)>, Error> {
        for a in attempts {
            self.saw(a.finished);
        }
        self.saw(f.finished);
        self.saw(now);
        let (tried, owned) = (attempts.to_vec(), f.clone());
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        self.transact(
            Mode::Write,
            &|| {
                format!(
                    "record the end of run {} of job {} and read the queue of jobs {jobs:?}",
                    f.run_id, f.job
                )
            },
            async move |tx| {
                finish_run(tx, &tried, &owned, history_keep.max(1)).await?;
                next_queued(tx, &names, Some(now)).await
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
        self.saw(now);
        let (name, detail) = (job.to_owned(), detail.to_owned());
        self.transact(
            Mode::Write,
            &|| format!("record occurrence {occurrence} of job {job} as claimed"),
            async move |tx| {
                let d = NewDecision {
                    job: &name,
                    occurrence,
                    decision: Decision::Claimed,
                    detail: Some(detail.as_str()).filter(|d| !d.is_empty()),
                    joined: None,
                    decided: now,
                };
                let recorded = tx.insert_decision(&d).await? || tx.claim_queued(&d).await?;
                if recorded {
                    tx.tally_skipped(&name, SkipReason::Claimed, 1).await?;
                }
                tx.decided(&name, occurrence, now).await?;
                Ok(recorded)
            },
        )
    }

    fn decision(&mut self, job: &str, occurrence: i64) -> Result<Option<DecisionRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the decision for occurrence {occurrence} of job {job}"),
            async move |tx| Ok(tx.decision(&name, occurrence).await?),
        )
    }

    fn record_alert(&mut self, a: &NewAlert) -> Result<(), Error> {
        self.saw(a.time);
        let owned = a.clone();
        self.transact(
            Mode::Write,
            &|| format!("record the {} alert", a.kind),
            async move |tx| Ok(tx.insert_alert(&owned).await?),
        )
    }

    fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> Result<Vec<AlertRow>, Error> {
        let name = job.map(str::to_owned);
        self.transact(
            Mode::Read,
            &|| "read the recent alerts".into(),
            async move |tx| Ok(tx.recent_alerts(name.as_deref(), limit).await?),
        )
    }

    fn history(&mut self, job: &str, limit: u32) -> Result<Vec<RunRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the history of job {job}"),
            async move |tx| Ok(tx.history(&name, limit).await?),
        )
    }

    fn last_run(&mut self, job: &str) -> Result<Option<RunRow>, Error> {
        Ok(self.history(job, 1)?.pop())
    }

    fn running(&mut self, job: &str) -> Result<Option<RunRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the running run of job {job}"),
            async move |tx| Ok(tx.running(&name).await?),
        )
    }

    fn ask_replace(&mut self, r: &Replacement) -> Result<bool, Error> {
        self.saw(r.asked);
        let owned = r.clone();
        self.transact(
            Mode::Write,
            &|| {
                format!(
                    "ask run {} of job {} to stop for a later run",
                    r.run_id, r.job
                )
            },
            async move |tx| Ok(tx.insert_replacement(&owned).await?),
        )
    }

    fn withdraw_replace(&mut self, r: &Replacement) -> Result<bool, Error> {
        let owned = r.clone();
        self.transact(
            Mode::Write,
            &|| {
                format!(
                    "take back the request that run {} of job {} stop",
                    r.run_id, r.job
                )
            },
            async move |tx| Ok(tx.delete_replacement(&owned).await?),
        )
    }

    fn replacement(&mut self, run_id: &str, job: &str) -> Result<Option<Replacement>, Error> {
        let (run, name) = (run_id.to_owned(), job.to_owned());
        self.transact(
            Mode::Read,
            &|| format!("read whether run {run_id} of job {job} is asked to stop"),
            async move |tx| Ok(tx.replacement(&run, &name).await?),
        )
    }

    fn unfinished(&mut self, job: &str) -> Result<Vec<RunRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the unfinished runs of job {job}"),
            async move |tx| Ok(tx.unfinished(&name).await?),
        )
    }

    fn steps(&mut self, job: &str) -> Result<Vec<StepState>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the steps of job {job}"),
            async move |tx| Ok(tx.steps(&name).await?),
        )
    }

    fn miss(&mut self, m: &Miss<'_>, now: Timestamp) -> Result<Missed, Error> {
        self.saw(now);
        let action = || {
            format!(
                "record occurrences {}..={} of job {} as missed ({})",
                m.first, m.last, m.job, m.reason
            )
        };
        let count = checks::miss_count(m).map_err(|problem| invalid(self, action(), problem))?;
        let (job, reason) = (m.job.to_owned(), m.reason);
        let detail = m.detail.filter(|d| !d.is_empty()).map(str::to_owned);
        let (first, last, given, at_least, streak) =
            (m.first, m.last, m.count, m.at_least, m.streak);
        self.transact(Mode::Write, &action, async move |tx| {
            let m = Miss {
                job: &job,
                reason,
                first,
                last,
                count: given,
                at_least,
                detail: detail.as_deref(),
                streak,
            };
            miss(tx, &m, count, now).await
        })
    }

    fn withdraw_ahead(
        &mut self,
        job: &str,
        now: Timestamp,
        tolerance: i64,
    ) -> Result<Option<Withdrawn>, Error> {
        self.saw(now);
        Backend::withdraw_ahead(self, job, now, tolerance)
    }

    fn decided_after(
        &mut self,
        job: &str,
        after: Option<i64>,
        through: i64,
    ) -> Result<Vec<i64>, Error> {
        Backend::decided_after(self, job, after, through)
    }

    fn missed(&mut self, job: &str, limit: u32) -> Result<Vec<MissedRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the missed occurrences of job {job}"),
            async move |tx| Ok(tx.missed(&name, limit).await?),
        )
    }

    fn missed_counts(&mut self, job: &str) -> Result<Vec<(MissReason, u64, bool)>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("count the missed occurrences of job {job}"),
            async move |tx| Ok(tx.missed_counts(&name).await?),
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
        self.saw(now);
        let action = || format!("pause job {job}");
        checks::pause(until, now).map_err(|problem| invalid(self, action(), problem))?;
        let (name, reason, who) = (job.to_owned(), reason.map(str::to_owned), who.to_owned());
        self.transact(Mode::Write, &action, async move |tx| {
            tx.end_pauses(&name, now).await?;
            Ok(tx
                .insert_pause(&name, until, reason.as_deref(), &who, now)
                .await?)
        })
    }

    fn resume(&mut self, job: &str, now: Timestamp) -> Result<Option<PauseRow>, Error> {
        self.saw(now);
        let name = job.to_owned();
        self.transact(
            Mode::Write,
            &|| format!("resume job {job}"),
            async move |tx| {
                let ended = tx.end_pauses(&name, now).await?;
                Ok(ended.into_iter().max_by_key(|p| p.id))
            },
        )
    }

    fn pauses(&mut self, job: &str, limit: u32) -> Result<Vec<PauseRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the pauses of job {job}"),
            async move |tx| Ok(tx.pauses(&name, limit).await?),
        )
    }

    fn declare(&mut self, declarations: &[Declaration]) -> Result<(), Error> {
        if let Some(latest) = declarations.iter().map(|d| d.declared).max() {
            self.saw(latest);
        }
        let all = declarations.to_vec();
        self.transact(
            Mode::Write,
            &|| "record the jobs the service declares".into(),
            async move |tx| {
                for d in &all {
                    tx.see_jobs(&[d.job.as_str()], d.declared).await?;
                    tx.declare(d).await?;
                }
                Ok(())
            },
        )
    }

    fn declarations(&mut self) -> Result<Vec<Declaration>, Error> {
        self.transact(
            Mode::Read,
            &|| "read the jobs services declared".into(),
            async |tx| Ok(tx.declarations().await?),
        )
    }

    fn clock_and_declarations(&mut self) -> Result<(Option<Timestamp>, Vec<Declaration>), Error> {
        self.transact(
            Mode::Read,
            &|| "read the store's clock and the jobs services declared".into(),
            async |tx| {
                // Sent together: one round trip to a server.
                let tx = &*tx;
                Ok(futures_util::try_join!(
                    tx.server_clock(),
                    tx.declarations()
                )?)
            },
        )
    }

    fn enqueue(
        &mut self,
        job: &str,
        occurrences: &[i64],
        coalesce: bool,
        now: Timestamp,
    ) -> Result<Queued, Error> {
        self.saw(now);
        let action = || format!("queue occurrences {occurrences:?} of job {job}");
        let (first, last) =
            checks::queue(occurrences).map_err(|problem| invalid(self, action(), problem))?;
        let (name, occurrences) = (job.to_owned(), occurrences.to_vec());
        self.transact(Mode::Write, &action, async move |tx| {
            enqueue(tx, &name, &occurrences, (first, last), coalesce, now).await
        })
    }

    fn next_queued(&mut self, jobs: &[&str]) -> Result<Option<(String, i64)>, Error> {
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        self.transact(
            Mode::Read,
            &|| format!("read the queue of jobs {jobs:?}"),
            async move |tx| next_queued(tx, &names, None).await,
        )
    }

    fn next_unpaused(
        &mut self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<Option<(String, i64)>, Error> {
        let names: Vec<String> = jobs.iter().map(|&j| j.to_owned()).collect();
        self.transact(
            Mode::Read,
            &|| format!("read the queue and the pauses of jobs {jobs:?}"),
            async move |tx| next_queued(tx, &names, Some(now)).await,
        )
    }

    fn queued_jobs(&mut self) -> Result<Vec<String>, Error> {
        self.transact(
            Mode::Read,
            &|| "read which jobs have a queue".into(),
            async |tx| Ok(tx.queued_jobs().await?),
        )
    }

    fn request_backfill(
        &mut self,
        job: &str,
        occurrences: &[i64],
        by: &str,
        now: Timestamp,
    ) -> Result<Vec<Requested>, Error> {
        self.saw(now);
        let action = || format!("queue occurrences {occurrences:?} of job {job} for a backfill");
        checks::queue(occurrences).map_err(|problem| invalid(self, action(), problem))?;
        let (name, occurrences) = (job.to_owned(), occurrences.to_vec());
        let detail = format!("{}{by}", super::rows::BACKFILL_DETAIL);
        self.transact(Mode::Write, &action, async move |tx| {
            request(tx, &name, &occurrences, &detail, now).await
        })
    }

    fn request_run(
        &mut self,
        job: &str,
        at: i64,
        by: &str,
        now: Timestamp,
    ) -> Result<Requested, Error> {
        self.saw(now);
        let action = || format!("queue a run of job {job} asked for now");
        let name = job.to_owned();
        let detail = format!("{}{by}", super::rows::RUN_DETAIL);
        let mut answers = self.transact(Mode::Write, &action, async move |tx| {
            request(tx, &name, &[at], &detail, now).await
        })?;
        answers.pop().ok_or_else(|| Error::Invalid {
            action: action(),
            store: Backend::location(self),
            problem: "the ledger answered nothing".into(),
        })
    }

    fn queued(&mut self, job: &str) -> Result<Vec<DecisionRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the queue of job {job}"),
            async move |tx| Ok(tx.queued(&name).await?),
        )
    }

    fn tallies(&mut self) -> Result<Vec<JobTallies>, Error> {
        self.transact(Mode::Read, &|| "read the tallies".into(), async |tx| {
            Ok(tx.tallies().await?)
        })
    }

    fn watermark(&mut self, job: &str) -> Result<Option<WatermarkRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the watermark of job {job}"),
            async move |tx| Ok(tx.watermark(&name).await?),
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
        self.saw(now);
        let action = || format!("settle the watermark of job {job}");
        checks::watermark(value).map_err(|problem| invalid(self, action(), problem))?;
        let fence = checks::fence(fence).map_err(|problem| invalid(self, action(), problem))?;
        let (name, value, run) = (job.to_owned(), value.to_owned(), run_id.map(str::to_owned));
        self.transact(Mode::Write, &action, async move |tx| {
            settle(tx, &name, &value, run.as_deref(), fence, now).await
        })
    }

    fn watermarks(&mut self, job: &str, limit: u32) -> Result<Vec<WatermarkRow>, Error> {
        let name = job.to_owned();
        self.transact(
            Mode::Read,
            &|| format!("read the watermarks of job {job}"),
            async move |tx| Ok(tx.watermarks(&name, limit).await?),
        )
    }
}

/// Records the start of `run`. The looks at its occurrence's decision and
/// at the run go first (with the transaction's `BEGIN`), and decide; the
/// writes follow, held back to go with the `COMMIT`'s round trip.
async fn begin_run<S: Statements>(
    tx: &mut S,
    run: &NewRun,
    fence: Option<i64>,
) -> Result<Begun, Fail<S::Error>> {
    let tx = &*tx;
    let decided = async {
        match run.occurrence {
            Some(occurrence) => tx.decision(&run.job, occurrence).await,
            None => Ok(None),
        }
    };
    // A range recorded missed holds the occurrence: only a backfill runs it.
    let missed = async {
        match run.occurrence {
            Some(occurrence) if !run.backfill => tx.missed_at(&run.job, occurrence).await,
            _ => Ok(None),
        }
    };
    let (decided, recorded, missed) =
        futures_util::try_join!(decided, tx.run_recorded(run), missed)?;
    if let Some(occurrence) = run.occurrence {
        match decided {
            // Decided otherwise, or started already (by this very run when
            // its first call's answer was lost).
            Some(existing) if existing.decision != Decision::Queued => {
                return Ok(existing.begun_by(run));
            }
            // Missed, decided before this start was recorded (a tick that
            // found the lock still held by the run before): the record
            // stands, and the occurrence does not also run.
            None if !recorded && let Some(m) = missed => return Ok(Begun::Missed(m)),
            _ => tx.start_decision(run, occurrence).await?,
        }
    }
    if recorded {
        return Ok(Begun::Started); // Recorded already, with its job's row.
    }
    tx.insert_run(run, fence).await?;
    tx.job_begun(run).await?;
    Ok(Begun::Started)
}

/// The run a step's attempt or a run's end names, when the ledger has it:
/// an error when it belongs to another job than `job`.
async fn run_of<S: Statements>(tx: &S, run_id: &str, job: &str) -> Result<bool, Fail<S::Error>> {
    owned_by(tx.run_job(run_id).await?.as_deref(), run_id, job)
}

/// Whether run `run_id`, of job `owner` when recorded, is recorded: an
/// error when it belongs to another job than `job`.
fn owned_by<E>(owner: Option<&str>, run_id: &str, job: &str) -> Result<bool, Fail<E>> {
    match owner {
        Some(owner) if owner != job => Err(Fail::Invalid(format!(
            "run {run_id} belongs to job {owner}, not {job}"
        ))),
        recorded => Ok(recorded.is_some()),
    }
}

/// What the ledger holds of one job ([`Records::job_records`]): every read
/// sent at once.
async fn job_record<S: Statements>(tx: &S, a: &JobAsk) -> Result<JobRecord, S::Error> {
    let job = a.job.as_str();
    let decision = async {
        match a.occurrence {
            Some(at) => tx.decision(job, at).await,
            None => Ok(None),
        }
    };
    let (
        state,
        last,
        running,
        steps,
        missed_counts,
        missed,
        pauses,
        queued,
        watermark,
        alerts,
        decision,
    ) = futures_util::try_join!(
        tx.job(job),
        tx.history(job, 1),
        tx.running(job),
        tx.steps(job),
        tx.missed_counts(job),
        tx.missed(job, a.missed),
        tx.pauses(job, 1),
        tx.queued(job),
        tx.watermark(job),
        tx.recent_alerts(Some(job), a.alerts),
        decision,
    )?;
    Ok(JobRecord {
        state,
        last: last.into_iter().next(),
        running,
        steps,
        missed_counts,
        missed,
        pause: pauses.into_iter().next(),
        queued,
        watermark,
        alerts,
        decision,
    })
}

/// The oldest queued occurrence among `jobs`, with its job (of two at the
/// same occurrence, the name that sorts first); with `unpaused_at`, among
/// the jobs no pause holds then. Every job's reads are sent together.
async fn next_queued<S: Statements>(
    tx: &mut S,
    jobs: &[String],
    unpaused_at: Option<Timestamp>,
) -> Result<Option<(String, i64)>, Fail<S::Error>> {
    let tx = &*tx;
    let looks = jobs.iter().map(|job| async move {
        let (pauses, oldest) = match unpaused_at {
            Some(_) => futures_util::try_join!(tx.pauses(job, 1), tx.oldest_queued(job))?,
            None => (Vec::new(), tx.oldest_queued(job).await?),
        };
        let paused = unpaused_at.is_some_and(|now| pauses.iter().any(|p| p.active(now)));
        Ok::<_, S::Error>(oldest.filter(|_| !paused).map(|o| (o, job.as_str())))
    });
    let found = futures_util::future::try_join_all(looks).await?;
    Ok(found
        .into_iter()
        .flatten()
        .min()
        .map(|(occurrence, job)| (job.to_owned(), occurrence)))
}

/// Records attempt `a`: the looks at its run and at the attempts it has go
/// first (with the transaction's `BEGIN`), and decide; the writes follow,
/// held back to go with the `COMMIT`'s round trip. A run of another job
/// fails the body; an attempt recorded already is not counted again.
async fn record_attempt<S: Statements>(tx: &mut S, a: &Attempt) -> Result<(), Fail<S::Error>> {
    let tx = &*tx;
    let (recorded, seqs) = futures_util::try_join!(run_of(tx, &a.run_id, &a.job), async {
        Ok(tx.attempt_seqs(&a.run_id).await?)
    })?;
    tx.insert_attempt(a).await?;
    if !recorded || !seqs.contains(&a.seq) {
        tx.step_attempted(a).await?;
    }
    Ok(())
}

/// Records the end of a run, after `tried`, its attempts not recorded yet.
///
/// The looks at the run and at the attempts it has go first (with the
/// transaction's `BEGIN`) and decide; then every write, held back to go
/// together: each writes only under a run of its own job, and a run of
/// another job fails the body. What is counted of an attempt or the end
/// recorded already is not counted again. Attempts of another run are
/// recorded first, one by one, as [`record_attempt`] does.
async fn finish_run<S: Statements>(
    tx: &mut S,
    tried: &[Attempt],
    f: &Finished,
    keep: u32,
) -> Result<(), Fail<S::Error>> {
    let ours = tried.iter().all(|a| a.run_id == f.run_id && a.job == f.job);
    let (alone, tried) = if ours {
        (&[][..], tried)
    } else {
        (tried, &[][..])
    };
    for a in alone {
        record_attempt(tx, a).await?;
    }
    let tx = &*tx;
    let seqs = async {
        match tried {
            [] => Ok(Vec::new()),
            _ => tx.attempt_seqs(&f.run_id).await,
        }
    };
    let (run, seqs) = futures_util::try_join!(tx.run_end(&f.run_id), seqs)?;
    let owner = run.as_ref().map(|(job, _, _)| job.as_str());
    let recorded = owned_by(owner, &f.run_id, &f.job)?;
    let (started, over) = match run {
        Some((_, started, over)) => (Some(started), over),
        None => (None, false),
    };
    let mut have: std::collections::BTreeSet<u32> = seqs.into_iter().collect();
    for a in tried {
        let new = have.insert(a.seq);
        tx.insert_attempt(a).await?;
        if new || !recorded {
            tx.step_attempted(a).await?;
        }
    }
    if recorded && over {
        return Ok(()); // Finished already: counted already.
    }
    tx.finish_run(f).await?;
    tx.job_finished(f).await?;
    // An abandoned run's end is when the next run found it so: its
    // duration is unknown, and no histogram counts it.
    let started = started.filter(|_| f.verdict != RunVerdict::Abandoned);
    tx.tally_finished(f, started).await?;
    tx.prune_runs(&f.job, keep).await?;
    tx.prune_decisions(&f.job).await?;
    tx.prune_missed(&f.job).await?;
    tx.prune_pauses(&f.job, f.finished).await?;
    tx.prune_watermarks(&f.job).await?;
    let day = jiff::SignedDuration::from_hours(24);
    let before = f.finished.checked_sub(day).unwrap_or(f.finished);
    tx.prune_replacements(&f.run_id, &f.job, before).await?;
    Ok(())
}

async fn miss<S: Statements>(
    tx: &mut S,
    m: &Miss<'_>,
    count: i64,
    now: Timestamp,
) -> Result<Missed, Fail<S::Error>> {
    tx.see_jobs(&[m.job], now).await?;
    if tx.decided_through(m.job, m.first).await? {
        return Ok(Missed::Moved);
    }
    let outcome = if m.streak && tx.extend_missed(m, count, now).await? {
        Missed::Extended
    } else {
        tx.insert_missed(m, count, m.detail, now).await?;
        Missed::Recorded
    };
    tx.tally_missed(m.job, m.reason, count).await?;
    tx.decided(m.job, m.last, now).await?;
    Ok(outcome)
}

async fn enqueue<S: Statements>(
    tx: &mut S,
    job: &str,
    occurrences: &[i64],
    (first, last): (i64, i64),
    coalesce: bool,
    now: Timestamp,
) -> Result<Queued, Fail<S::Error>> {
    tx.see_jobs(&[job], now).await?;
    if tx.decided_through(job, first).await? {
        return Ok(Queued::Moved);
    }
    let into = if coalesce {
        tx.newest_queued(job).await?
    } else {
        None
    };
    // An occurrence someone asked for (a backfill's, a run asked for now)
    // serves no scheduled one: joined to it, a due occurrence would run as
    // a past one, and its own period's work would be lost.
    let into = match into {
        Some(at) if tx.decision(job, at).await?.is_some_and(|d| d.requested()) => None,
        other => other,
    };
    let entry = |occurrence, decision, joined| NewDecision {
        job,
        occurrence,
        decision,
        detail: None,
        joined,
        decided: now,
    };
    let outcome = match into {
        Some(into) => {
            let mut joined = 0;
            for &occurrence in occurrences {
                let d = entry(occurrence, Decision::Coalesced, Some(into));
                joined += i64::from(tx.insert_decision(&d).await?);
            }
            tx.add_coalesced(job, into, joined).await?;
            tx.tally_skipped(job, SkipReason::Coalesced, joined).await?;
            Queued::Coalesced { into }
        }
        None => {
            for &occurrence in occurrences {
                tx.insert_decision(&entry(occurrence, Decision::Queued, None))
                    .await?;
            }
            Queued::Queued
        }
    };
    tx.decided(job, last, now).await?;
    Ok(outcome)
}

/// Each of `occurrences` of `job` the ledger has no decision of, recorded
/// `queued` with `detail`; the others answered with their decision.
async fn request<S: Statements>(
    tx: &mut S,
    job: &str,
    occurrences: &[i64],
    detail: &str,
    now: Timestamp,
) -> Result<Vec<Requested>, Fail<S::Error>> {
    tx.see_jobs(&[job], now).await?;
    let mut answers = Vec::with_capacity(occurrences.len());
    for &occurrence in occurrences {
        let d = NewDecision {
            job,
            occurrence,
            decision: Decision::Queued,
            detail: Some(detail),
            joined: None,
            decided: now,
        };
        if tx.insert_decision(&d).await? {
            answers.push(Requested::Queued);
            continue;
        }
        // OK because the insert was refused by this very row, in this
        // transaction, and rows are only deleted under the write lock it
        // holds.
        let existing = tx.decision(job, occurrence).await?.ok_or_else(|| {
            Fail::Invalid(format!(
                "occurrence {occurrence} of job {job} was decided and is gone"
            ))
        })?;
        answers.push(Requested::Decided(existing));
    }
    Ok(answers)
}

async fn settle<S: Statements>(
    tx: &mut S,
    job: &str,
    value: &str,
    run_id: Option<&str>,
    fence: Option<i64>,
    now: Timestamp,
) -> Result<WatermarkRow, Fail<S::Error>> {
    // A run of another job (one sharing the lock) holds the lease but is
    // not a run of this job: it may not settle its mark.
    if let Some(run) = run_id
        && let Some(owner) = tx.run_job(run).await?
        && owner != job
    {
        return Err(Fail::Invalid(format!(
            "run {run} is a run of job {owner}, not of {job}: only a run of {job} may settle its \
             watermark"
        )));
    }
    Ok(tx.insert_watermark(job, value, run_id, fence, now).await?)
}
