//! The queue: occurrences that wait for their job's lock, as `queued`
//! decisions in `baton.occurrences`, and the later ones that coalesced into
//! one waiting; `baton_ledger`'s `queue` module in PostgreSQL.
//!
//! An occurrence enters the queue in the write transaction that raises
//! `jobs.last_decided`, and only while that mark is below it, so it is
//! queued once; it leaves by `begin_run`, whose upsert only turns a row
//! still `queued` into `started`. Queued rows are never pruned.

use baton_store::ledger::DecisionRow;
use tokio_postgres::Transaction;

use super::decisions;
use super::fail::Fail;
use super::rows;

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

/// The job's newest queued occurrence.
pub(crate) async fn newest(tx: &Transaction<'_>, job: &str) -> Result<Option<i64>, Fail> {
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
pub(crate) async fn oldest(tx: &Transaction<'_>, job: &str) -> Result<Option<i64>, Fail> {
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
pub(crate) async fn add_coalesced(
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
