//! Cumulative tallies: the `baton.tallies` and `baton.durations` tables,
//! counts per job that pruning never touches; `baton_ledger`'s `tallies`
//! module in PostgreSQL. Every tally rises in the transaction that records
//! what it counts, as an SQL expression (`count + n`). The histogram's
//! bounds are `baton_store::ledger::BOUNDS_US`, reused as they are: a count is only
//! meaningful against the bounds it was counted with. The kind words are
//! the stored ones, the same in both ledgers.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_store::ledger::{BOUNDS_US, Finished, JobTallies, bucket};
use baton_store::words::{MissReason, RunVerdict, SkipReason};
use jiff::Timestamp;
use tokio_postgres::Transaction;

use super::fail::Fail;
use super::rows;

const VERDICT: &str = "verdict";
const MISSED: &str = "missed";
const SKIPPED: &str = "skipped";
const LEASE_LOST: &str = "lease-lost";

/// Adds `n` to the job's count of `kind` and `word`.
async fn add(tx: &Transaction<'_>, job: &str, kind: &str, word: &str, n: i64) -> Result<(), Fail> {
    if n == 0 {
        return Ok(());
    }
    tx.execute(
        "INSERT INTO baton.tallies AS t (job, kind, word, count)
         VALUES ($1::text, $2::text, $3::text, $4::bigint)
         ON CONFLICT (job, kind, word) DO UPDATE SET count = t.count + excluded.count",
        &[&job, &kind, &word, &n],
    )
    .await?;
    Ok(())
}

/// Counts missed occurrences.
pub(crate) async fn missed(
    tx: &Transaction<'_>,
    job: &str,
    reason: MissReason,
    n: i64,
) -> Result<(), Fail> {
    add(tx, job, MISSED, reason.as_str(), n).await
}

/// Counts skipped occurrences (`coalesced`, `claimed`).
pub(crate) async fn skipped(
    tx: &Transaction<'_>,
    job: &str,
    reason: SkipReason,
    n: i64,
) -> Result<(), Fail> {
    add(tx, job, SKIPPED, reason.as_str(), n).await
}

/// Counts a finished run: its verdict, a lost lease, and, when the ledger
/// has the run's start, its duration.
pub(crate) async fn finished(
    tx: &Transaction<'_>,
    f: &Finished,
    started: Option<Timestamp>,
) -> Result<(), Fail> {
    add(tx, &f.job, VERDICT, f.verdict.as_str(), 1).await?;
    if f.verdict == RunVerdict::LeaseLost {
        add(tx, &f.job, LEASE_LOST, "", 1).await?;
    }
    let Some(started) = started else {
        return Ok(());
    };
    let (us, bound) = bucket(started, f.finished);
    tx.execute(
        "INSERT INTO baton.durations AS d (job, bound, count, sum_us)
         VALUES ($1::text, $2::bigint, 1, $3::bigint)
         ON CONFLICT (job, bound) DO UPDATE SET
           count = d.count + 1,
           sum_us = d.sum_us + excluded.sum_us",
        &[&f.job, &bound, &us],
    )
    .await?;
    Ok(())
}

/// Every job's tallies, by name: each job known or counted.
pub(crate) async fn all(tx: &Transaction<'_>) -> Result<Vec<JobTallies>, Fail> {
    let mut jobs: BTreeMap<String, JobTallies> = BTreeMap::new();
    for r in tx
        .query(
            "SELECT job, last_success, last_failure FROM baton.jobs ORDER BY job",
            &[],
        )
        .await?
    {
        let t = entry(&mut jobs, rows::get(&r, 0)?);
        t.last_success = rows::time_opt(&r, 1)?;
        t.last_failure = rows::time_opt(&r, 2)?;
    }
    for r in tx
        .query("SELECT job, kind, word, count FROM baton.tallies", &[])
        .await?
    {
        let t = entry(&mut jobs, rows::get(&r, 0)?);
        let kind: String = rows::get(&r, 1)?;
        let n: u64 = rows::int(&r, 3)?;
        match kind.as_str() {
            VERDICT => *t.runs.entry(rows::word(&r, 2)?).or_default() += n,
            MISSED => *t.missed.entry(rows::word(&r, 2)?).or_default() += n,
            SKIPPED => *t.skipped.entry(rows::word(&r, 2)?).or_default() += n,
            LEASE_LOST => t.lease_losses += n,
            _ => {} // A kind a later version counts: not this build's to show.
        }
    }
    for r in tx
        .query("SELECT job, bound, count, sum_us FROM baton.durations", &[])
        .await?
    {
        let t = entry(&mut jobs, rows::get(&r, 0)?);
        let bound: i64 = rows::get(&r, 1)?;
        let i = BOUNDS_US
            .iter()
            .position(|&b| bound <= b)
            .unwrap_or(BOUNDS_US.len() - 1);
        t.durations.buckets[i] += rows::int::<u64>(&r, 2)?;
        t.durations.sum += Duration::from_micros(rows::int(&r, 3)?);
    }
    Ok(jobs.into_values().collect())
}

fn entry(jobs: &mut BTreeMap<String, JobTallies>, job: String) -> &mut JobTallies {
    jobs.entry(job.clone()).or_insert_with(|| JobTallies {
        job,
        ..JobTallies::default()
    })
}
