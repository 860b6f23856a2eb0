//! The queue: occurrences that wait for their job's lock as `queued`
//! decisions in the `occurrences` table, oldest first, and the later ones
//! that coalesced into one waiting.
//!
//! An occurrence enters the queue by [`Records::enqueue`](baton_store::ledger::Records::enqueue), in the same
//! `BEGIN IMMEDIATE` transaction that raises `jobs.last_decided`, and only
//! while that mark is below it: so it is queued once, and never after
//! another process decided it. It leaves the queue by
//! [`Records::begin_run`](baton_store::ledger::Records::begin_run), whose upsert only turns a row that is still
//! `queued` into `started`: of many processes draining the same queue, one
//! starts each occurrence. Queued rows are never pruned. A `coalesced` row
//! names the occurrence it joined and never runs itself; the count on the
//! row it joined rises in the transaction that records it, as an SQL
//! expression.

use rusqlite::{Connection, params};

use baton_store::ledger::DecisionRow;

use crate::decisions;

/// The job's newest queued occurrence.
pub(crate) fn newest(conn: &Connection, job: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MAX(occurrence) FROM occurrences WHERE job = ?1 AND decision = 'queued'",
    )?
    .query_row([job], |r| r.get(0))
}

/// The job's oldest queued occurrence.
pub(crate) fn oldest(conn: &Connection, job: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached(
        "SELECT MIN(occurrence) FROM occurrences WHERE job = ?1 AND decision = 'queued'",
    )?
    .query_row([job], |r| r.get(0))
}

/// Raises the count of occurrences coalesced into `into` by `joined`.
pub(crate) fn add_coalesced(
    conn: &Connection,
    job: &str,
    into: i64,
    joined: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE occurrences SET coalesced = coalesced + ?3 WHERE job = ?1 AND occurrence = ?2",
    )?
    .execute(params![job, into, joined])?;
    Ok(())
}

/// The jobs with a queued occurrence, by name.
pub(crate) fn jobs(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    conn.prepare_cached(
        "SELECT DISTINCT job FROM occurrences WHERE decision = 'queued' ORDER BY job",
    )?
    .query_map([], |r| r.get(0))?
    .collect()
}

/// A job's queued occurrences, oldest first.
pub(crate) fn of_job(conn: &Connection, job: &str) -> rusqlite::Result<Vec<DecisionRow>> {
    conn.prepare_cached(&format!(
        "SELECT {} FROM occurrences
         WHERE job = ?1 AND decision = 'queued' ORDER BY occurrence",
        decisions::COLUMNS
    ))?
    .query_map([job], decisions::row)?
    .collect()
}
