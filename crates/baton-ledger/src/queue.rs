//! The queue: occurrences that wait for their job's lock as `queued`
//! decisions in the `occurrences` table, oldest first, and the later ones
//! that coalesced into one waiting.
//!
//! An occurrence enters the queue by [`Ledger::enqueue`], in the same
//! `BEGIN IMMEDIATE` transaction that raises `jobs.last_decided`, and only
//! while that mark is below it: so it is queued once, and never after
//! another process decided it. It leaves the queue by
//! [`Ledger::begin_run`], whose upsert only turns a row that is still
//! `queued` into `started`: of many processes draining the same queue, one
//! starts each occurrence. Queued rows are never pruned. A `coalesced` row
//! names the occurrence it joined and never runs itself; the count on the
//! row it joined rises in the transaction that records it, as an SQL
//! expression.

use jiff::Timestamp;
use rusqlite::{Connection, params};

use crate::decisions::{self, Entry};
use crate::error::{Error, Fail};
use crate::ledger::{Ledger, Mode};
use crate::rows::{Decision, DecisionRow};
use crate::{jobs, tallies};

/// What [`Ledger::enqueue`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    /// The occurrences wait as `queued`, to start in order.
    Queued,
    /// An occurrence was already waiting: the given ones are recorded
    /// `coalesced`, served by that one, whose count rose.
    Coalesced {
        /// The waiting occurrence they joined (the job's newest queued
        /// one).
        into: i64,
    },
    /// The job's last decided occurrence is at or after the first given
    /// one: another process (or an earlier call) decided them already.
    /// Nothing was written; the caller plans again from the mark.
    Moved,
}

impl Ledger {
    /// Puts occurrences of a job in its queue, in one write transaction:
    ///
    /// 1. the job's row is created when missing (first seen at `now`);
    /// 2. when the job's last decided occurrence is at or after the first
    ///    given one, nothing more is written: [`Queued::Moved`];
    /// 3. with `coalesce` (the job's `overlap = "queue"`: at most one
    ///    occurrence waits) and an occurrence already waiting, each given
    ///    occurrence is recorded `coalesced`, joining the job's newest queued
    ///    occurrence, whose count rises by as many, as does the job's tally
    ///    of occurrences skipped as `coalesced`: [`Queued::Coalesced`];
    /// 4. otherwise each waits as `queued`: [`Queued::Queued`].
    ///
    /// In both written cases the job's last decided occurrence is raised to
    /// the last given one. An occurrence that somehow has a decision keeps
    /// it.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`]; [`Error::Invalid`] when `occurrences` is
    /// empty or not strictly ascending (nothing is written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::{Begun, Ledger, NewRun, Queued};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// // The job's run is in flight: the next occurrence waits, and the one
    /// // after joins it.
    /// assert_eq!(ledger.enqueue("nightly", &[occ], true, now)?, Queued::Queued);
    /// assert_eq!(
    ///     ledger.enqueue("nightly", &[occ + 60], true, now)?,
    ///     Queued::Coalesced { into: occ }
    /// );
    /// // The lease's holder drains the queue.
    /// assert_eq!(ledger.next_queued(&["nightly"])?, Some(("nightly".to_string(), occ)));
    /// let run = NewRun {
    ///     run_id: "9f3c1ab27de40518".into(),
    ///     job: "nightly".into(),
    ///     occurrence: Some(occ),
    ///     fence: Some(42),
    ///     host: "ci-1".into(),
    ///     pid: 4242,
    ///     started: now,
    /// };
    /// assert_eq!(ledger.begin_run(&run)?, Begun::Started);
    /// assert_eq!(ledger.next_queued(&["nightly"])?, None);
    /// assert_eq!(ledger.decision("nightly", occ)?.unwrap().coalesced, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn enqueue(
        &mut self,
        job: &str,
        occurrences: &[i64],
        coalesce: bool,
        now: Timestamp,
    ) -> Result<Queued, Error> {
        self.saw(now);
        let action = || format!("queue occurrences {occurrences:?} of job {job}");
        let (first, last) = match crate::checks::queue(occurrences) {
            Ok(ends) => ends,
            Err(problem) => return Err(self.invalid(action(), problem)),
        };
        self.transact(Mode::Write, action, |tx| {
            jobs::see(tx, &[job], now)?;
            if jobs::decided_through(tx, job, first)? {
                return Ok(Queued::Moved);
            }
            let into = if coalesce { newest(tx, job)? } else { None };
            let outcome = match into {
                Some(into) => {
                    let mut joined = 0;
                    for &occurrence in occurrences {
                        let entry = entry(job, occurrence, Decision::Coalesced, Some(into), now);
                        joined += i64::from(decisions::insert(tx, &entry)?);
                    }
                    add_coalesced(tx, job, into, joined)?;
                    tallies::skipped(tx, job, Decision::Coalesced.as_str(), joined)?;
                    Queued::Coalesced { into }
                }
                None => {
                    for &occurrence in occurrences {
                        decisions::insert(
                            tx,
                            &entry(job, occurrence, Decision::Queued, None, now),
                        )?;
                    }
                    Queued::Queued
                }
            };
            jobs::decided(tx, job, last, now)?;
            Ok(outcome)
        })
    }

    /// The oldest queued occurrence among these jobs (the jobs of one lock),
    /// with its job; of two jobs waiting at the same occurrence, the one
    /// whose name sorts first. `None` when none waits.
    ///
    /// It is a read: the caller then starts it with [`Ledger::begin_run`],
    /// which tells it when another process started it meanwhile.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn next_queued(&mut self, jobs: &[&str]) -> Result<Option<(String, i64)>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the queue of jobs {jobs:?}"),
            |tx| {
                let mut next: Option<(i64, &str)> = None;
                for &job in jobs {
                    if let Some(occurrence) = oldest(tx, job)? {
                        let candidate = (occurrence, job);
                        next = Some(next.map_or(candidate, |n| n.min(candidate)));
                    }
                }
                Ok(next.map(|(occurrence, job)| (job.to_owned(), occurrence)))
            },
        )
    }

    /// The jobs that have queued occurrences, by name (read through the
    /// partial index on queued rows: as cheap as the queue is short).
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn queued_jobs(&mut self) -> Result<Vec<String>, Error> {
        self.transact(
            Mode::Read,
            || "read which jobs have a queue".into(),
            |tx| {
                let rows = tx
                    .prepare_cached(
                        "SELECT DISTINCT job FROM occurrences WHERE decision = 'queued'
                         ORDER BY job",
                    )?
                    .query_map([], |r| r.get(0))?
                    .collect::<rusqlite::Result<_>>()?;
                Ok(rows)
            },
        )
    }

    /// A job's queued occurrences, oldest first.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn queued(&mut self, job: &str) -> Result<Vec<DecisionRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the queue of job {job}"),
            |tx| {
                let rows = tx
                    .prepare_cached(&format!(
                        "SELECT {} FROM occurrences
                         WHERE job = ?1 AND decision = 'queued' ORDER BY occurrence",
                        decisions::COLUMNS
                    ))?
                    .query_map([job], decisions::row)?
                    .collect::<rusqlite::Result<_>>()?;
                Ok(rows)
            },
        )
    }
}

fn entry(
    job: &str,
    occurrence: i64,
    decision: Decision,
    joined: Option<i64>,
    now: Timestamp,
) -> Entry<'_> {
    Entry {
        job,
        occurrence,
        decision,
        run_id: None,
        detail: None,
        joined,
        decided: now,
    }
}

/// The job's newest queued occurrence.
fn newest(conn: &Connection, job: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MAX(occurrence) FROM occurrences WHERE job = ?1 AND decision = 'queued'",
    )?
    .query_row([job], |r| r.get(0))
}

/// The job's oldest queued occurrence.
fn oldest(conn: &Connection, job: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MIN(occurrence) FROM occurrences WHERE job = ?1 AND decision = 'queued'",
    )?
    .query_row([job], |r| r.get(0))
}

/// Raises the count of occurrences coalesced into `into` by `joined`.
fn add_coalesced(conn: &Connection, job: &str, into: i64, joined: i64) -> Result<(), Fail> {
    conn.prepare_cached(
        "UPDATE occurrences SET coalesced = coalesced + ?3 WHERE job = ?1 AND occurrence = ?2",
    )?
    .execute(params![job, into, joined])?;
    Ok(())
}
