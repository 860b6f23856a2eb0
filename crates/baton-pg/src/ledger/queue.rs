//! The queue: occurrences that wait for their job's lock, as `queued`
//! decisions in `baton.occurrences`, and the later ones that coalesced into
//! one waiting; `baton_ledger`'s `queue` module in PostgreSQL.
//!
//! An occurrence enters the queue in the write transaction that raises
//! `jobs.last_decided`, and only while that mark is below it, so it is
//! queued once; it leaves by `begin_run`, whose upsert only turns a row
//! still `queued` into `started`. Queued rows are never pruned.

use baton_ledger::{Decision, DecisionRow, Queued};
use tokio_postgres::Transaction;

use super::decisions::{self, Entry};
use super::fail::Fail;
use super::rows;
use super::{jobs, tallies};

/// The occurrences to queue, once `baton_ledger::checks::queue` has found
/// them given and strictly ascending, with the first and last it returned.
pub(crate) struct Batch {
    pub(crate) occurrences: Vec<i64>,
    pub(crate) first: i64,
    pub(crate) last: i64,
}

/// The body of `enqueue`: see `baton_ledger::Ledger::enqueue`.
pub(crate) async fn enqueue(
    tx: &Transaction<'_>,
    job: &str,
    batch: &Batch,
    coalesce: bool,
    now: i64,
) -> Result<Queued, Fail> {
    let Batch {
        occurrences,
        first,
        last,
    } = batch;
    let (first, last) = (*first, *last);
    jobs::see(tx, &[job.to_owned()], now).await?;
    if jobs::decided_through(tx, job, first).await? {
        return Ok(Queued::Moved);
    }
    let into = if coalesce {
        newest(tx, job).await?
    } else {
        None
    };
    let outcome = match into {
        Some(into) => {
            let mut joined = 0;
            for &occurrence in occurrences {
                let e = entry(job, occurrence, Decision::Coalesced, Some(into), now);
                joined += i64::from(decisions::insert(tx, &e).await?);
            }
            add_coalesced(tx, job, into, joined).await?;
            tallies::skipped(tx, job, Decision::Coalesced.as_str(), joined).await?;
            Queued::Coalesced { into }
        }
        None => {
            for &occurrence in occurrences {
                let e = entry(job, occurrence, Decision::Queued, None, now);
                decisions::insert(tx, &e).await?;
            }
            Queued::Queued
        }
    };
    jobs::decided(tx, job, last, now).await?;
    Ok(outcome)
}

/// The oldest queued occurrence among `jobs`, with its job; of two jobs
/// waiting at the same occurrence, the one whose name sorts first.
pub(crate) async fn next(
    tx: &Transaction<'_>,
    jobs: &[String],
) -> Result<Option<(String, i64)>, Fail> {
    let mut next: Option<(i64, &str)> = None;
    for job in jobs {
        if let Some(occurrence) = oldest(tx, job).await? {
            let candidate = (occurrence, job.as_str());
            next = Some(next.map_or(candidate, |n| n.min(candidate)));
        }
    }
    Ok(next.map(|(occurrence, job)| (job.to_owned(), occurrence)))
}

/// The jobs that have queued occurrences, by name.
pub(crate) async fn jobs_waiting(tx: &Transaction<'_>) -> Result<Vec<String>, Fail> {
    let found = tx
        .query(
            "SELECT DISTINCT job FROM baton.occurrences WHERE decision = 'queued' ORDER BY job",
            &[],
        )
        .await?;
    found.iter().map(|r| rows::get(r, 0)).collect()
}

/// A job's queued occurrences, oldest first.
pub(crate) async fn queued(tx: &Transaction<'_>, job: &str) -> Result<Vec<DecisionRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "SELECT {} FROM baton.occurrences
                 WHERE job = $1::text AND decision = 'queued' ORDER BY occurrence",
                decisions::COLUMNS
            ),
            &[&job],
        )
        .await?;
    found.iter().map(decisions::row).collect()
}

fn entry(
    job: &str,
    occurrence: i64,
    decision: Decision,
    joined: Option<i64>,
    now: i64,
) -> Entry<'_> {
    Entry {
        job,
        occurrence,
        decision,
        detail: None,
        joined,
        decided: now,
    }
}

/// The job's newest queued occurrence.
async fn newest(tx: &Transaction<'_>, job: &str) -> Result<Option<i64>, Fail> {
    let r = tx
        .query_one(
            "SELECT MAX(occurrence) FROM baton.occurrences
             WHERE job = $1::text AND decision = 'queued'",
            &[&job],
        )
        .await?;
    rows::get(&r, 0)
}

/// The job's oldest queued occurrence.
async fn oldest(tx: &Transaction<'_>, job: &str) -> Result<Option<i64>, Fail> {
    let r = tx
        .query_one(
            "SELECT MIN(occurrence) FROM baton.occurrences
             WHERE job = $1::text AND decision = 'queued'",
            &[&job],
        )
        .await?;
    rows::get(&r, 0)
}

/// Raises the count of occurrences coalesced into `into` by `joined`.
async fn add_coalesced(
    tx: &Transaction<'_>,
    job: &str,
    into: i64,
    joined: i64,
) -> Result<(), Fail> {
    tx.execute(
        "UPDATE baton.occurrences SET coalesced = coalesced + $3::bigint
         WHERE job = $1::text AND occurrence = $2::bigint",
        &[&job, &into, &joined],
    )
    .await?;
    Ok(())
}
