//! Cumulative tallies: the `tallies` and `durations` tables, counts per job
//! that pruning never touches, for the metrics; and [`Records::tallies`](baton_store::ledger::Records::tallies),
//! which reads them all.
//!
//! Every tally rises in the transaction that records the event it counts,
//! as an SQL expression (`count + n`), never a value read into Rust and
//! written back, so two writers never undo each other and a tally never
//! counts an event the ledger did not record, nor misses one it did:
//!
//! - `verdict`, by verdict word: a run finished ([`Records::finish_run`](baton_store::ledger::Records::finish_run)),
//!   once per run (finishing it again counts nothing);
//! - `lease-lost`: a run finished with the verdict `lease-lost` (its lease
//!   was lost while it ran, and it was stopped);
//! - `missed`, by reason: the occurrences of a range recorded or extended
//!   by [`Records::miss`](baton_store::ledger::Records::miss) (its `count`, a floor when `at_least`), less those
//!   of a range withdrawn because a clock ahead recorded it
//!   ([`Records::withdraw_ahead`](baton_store::ledger::Records::withdraw_ahead): the one way a tally falls);
//! - `skipped`, by reason: occurrences that had a decision other than a
//!   missed range and still never ran themselves: `coalesced` (they joined
//!   an occurrence already waiting in the queue, which runs for them, in
//!   [`Records::enqueue`](baton_store::ledger::Records::enqueue)) and `claimed` (the lock file says they started,
//!   under a ledger lost since, in [`Records::claimed`](baton_store::ledger::Records::claimed)). A skipped
//!   occurrence was served or had run; a missed one was not, and did not;
//! - the run-duration histogram: a finished run's time from its start to
//!   its end, in the bucket of the first of [`BOUNDS`] it does not exceed
//!   (or `+Inf`). A run whose row the ledger lost (it was recovered since
//!   the run began) counts its verdict and no duration.
//!
//! The last success and failure are the job's row's (`jobs.last_success`,
//! `jobs.last_failure`), which pruning never touched either.
//!
//! This module never decides anything and never reads the clock: it
//! counts what the other modules record, inside their transactions.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use rusqlite::{Connection, params};

use baton_store::ledger::{BOUNDS_US, Finished, JobTallies, bucket};
use baton_store::words::{MissReason, RunVerdict, SkipReason};

use crate::rows;

/// The kinds of counts in the `tallies` table.
const VERDICT: &str = "verdict";
const MISSED: &str = "missed";
const SKIPPED: &str = "skipped";
const LEASE_LOST: &str = "lease-lost";

/// Adds `n` to the job's count of `kind` and `word`.
fn add(conn: &Connection, job: &str, kind: &str, word: &str, n: i64) -> rusqlite::Result<()> {
    if n == 0 {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO tallies (job, kind, word, count) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (job, kind, word) DO UPDATE SET count = count + excluded.count",
    )?
    .execute(params![job, kind, word, n])?;
    Ok(())
}

/// Counts missed occurrences.
pub(crate) fn missed(
    conn: &Connection,
    job: &str,
    reason: MissReason,
    n: i64,
) -> rusqlite::Result<()> {
    add(conn, job, MISSED, reason.as_str(), n)
}

/// Takes back `n` missed occurrences whose range was withdrawn (a clock
/// ahead decided them, [`Records::withdraw_ahead`](baton_store::ledger::Records::withdraw_ahead)); never below zero.
pub(crate) fn unmissed(
    conn: &Connection,
    job: &str,
    reason: MissReason,
    n: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE tallies SET count = MAX(0, count - ?4) WHERE job = ?1 AND kind = ?2 AND word = ?3",
    )?
    .execute(params![job, MISSED, reason.as_str(), n])?;
    Ok(())
}

/// Counts skipped occurrences (`coalesced`, `claimed`).
pub(crate) fn skipped(
    conn: &Connection,
    job: &str,
    reason: SkipReason,
    n: i64,
) -> rusqlite::Result<()> {
    add(conn, job, SKIPPED, reason.as_str(), n)
}

/// Counts a finished run: its verdict, a lost lease, and, when the ledger
/// has the run's start (`started`), its duration. Called once per run, in
/// the transaction that finishes it.
///
/// (The bucket is [`bucket`]'s, shared with every ledger.)
pub(crate) fn finished(
    conn: &Connection,
    f: &Finished,
    started: Option<Timestamp>,
) -> rusqlite::Result<()> {
    add(conn, &f.job, VERDICT, f.verdict.as_str(), 1)?;
    if f.verdict == RunVerdict::LeaseLost {
        add(conn, &f.job, LEASE_LOST, "", 1)?;
    }
    let Some(started) = started else {
        return Ok(());
    };
    let (us, bound) = bucket(started, f.finished);
    conn.prepare_cached(
        "INSERT INTO durations (job, bound, count, sum_us) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT (job, bound) DO UPDATE SET
           count = count + 1,
           sum_us = sum_us + excluded.sum_us",
    )?
    .execute(params![f.job, bound, us])?;
    Ok(())
}

pub(crate) fn all(conn: &Connection) -> rusqlite::Result<Vec<JobTallies>> {
    let mut jobs: BTreeMap<String, JobTallies> = BTreeMap::new();
    let mut stmt =
        conn.prepare_cached("SELECT job, last_success, last_failure FROM jobs ORDER BY job")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let t = entry(&mut jobs, r.get(0)?);
        t.last_success = rows::time_opt(r, 1)?;
        t.last_failure = rows::time_opt(r, 2)?;
    }
    drop(found);
    let mut stmt = conn.prepare_cached("SELECT job, kind, word, count FROM tallies")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let t = entry(&mut jobs, r.get(0)?);
        let kind: String = r.get(1)?;
        let n = rows::unsigned(r, 3)?;
        match kind.as_str() {
            VERDICT => *t.runs.entry(rows::word(r, 2)?).or_default() += n,
            MISSED => *t.missed.entry(rows::word(r, 2)?).or_default() += n,
            SKIPPED => *t.skipped.entry(rows::word(r, 2)?).or_default() += n,
            LEASE_LOST => t.lease_losses += n,
            _ => {} // A kind a later version counts: not this build's to show.
        }
    }
    drop(found);
    let mut stmt = conn.prepare_cached("SELECT job, bound, count, sum_us FROM durations")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let t = entry(&mut jobs, r.get(0)?);
        let bound: i64 = r.get(1)?;
        let i = BOUNDS_US
            .iter()
            .position(|&b| bound <= b)
            .unwrap_or(BOUNDS_US.len() - 1);
        t.durations.buckets[i] += rows::unsigned(r, 2)?;
        t.durations.sum += Duration::from_micros(rows::unsigned(r, 3)?);
    }
    drop(found);
    Ok(jobs.into_values().collect())
}

fn entry(jobs: &mut BTreeMap<String, JobTallies>, job: String) -> &mut JobTallies {
    jobs.entry(job.clone()).or_insert_with(|| JobTallies {
        job,
        ..JobTallies::default()
    })
}
