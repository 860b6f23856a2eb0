//! Watermarks: the `watermarks` table, each value a job's runs settled, in
//! order. The newest is the job's watermark; the older ones say how it got
//! there (which run, under which fence).
//!
//! The key `(job, seq)` numbers a job's values 1, 2, …: [`Records::settle`](baton_store::ledger::Records::settle)
//! computes the next number in SQL, in the `BEGIN IMMEDIATE` transaction
//! that inserts it, so two settles never take the same number and none is
//! lost. The ledger does not judge who may settle: the caller does that
//! under the lock file's mutex (the token must still be the lease's), and
//! writes here before it lets the mutex go.

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use baton_store::ledger::WatermarkRow;

use crate::rows;

/// How many values pruning keeps per job.
const KEEP: u32 = 100;

const COLUMNS: &str = "job, seq, value, run_id, fence, settled";

/// Deletes all but the job's newest [`KEEP`] values.
pub(crate) fn prune(conn: &Connection, job: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM watermarks WHERE job = ?1 AND seq NOT IN (
           SELECT seq FROM watermarks WHERE job = ?1 ORDER BY seq DESC LIMIT ?2)",
    )?
    .execute(params![job, KEEP])?;
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<WatermarkRow> {
    Ok(WatermarkRow {
        job: r.get(0)?,
        seq: rows::unsigned(r, 1)?,
        value: r.get(2)?,
        run_id: r.get(3)?,
        fence: rows::unsigned_opt(r, 4)?,
        settled: rows::time(r, 5)?,
    })
}

/// A job's newest value.
pub(crate) fn newest(conn: &Connection, job: &str) -> rusqlite::Result<Option<WatermarkRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM watermarks WHERE job = ?1 ORDER BY seq DESC LIMIT 1"
    ))?
    .query_row([job], row)
    .optional()
}

/// Records a job's next value, numbered one more than its newest.
pub(crate) fn insert(
    conn: &Connection,
    job: &str,
    value: &str,
    run_id: Option<&str>,
    fence: Option<i64>,
    now: Timestamp,
) -> rusqlite::Result<WatermarkRow> {
    conn.prepare_cached(&format!(
        "INSERT INTO watermarks (job, seq, value, run_id, fence, settled)
         SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5
         FROM watermarks WHERE job = ?1
         RETURNING {COLUMNS}"
    ))?
    .query_row(params![job, value, run_id, fence, rows::micros(now)], row)
}

/// A job's newest `limit` values, newest first.
pub(crate) fn recent(
    conn: &Connection,
    job: &str,
    limit: u32,
) -> rusqlite::Result<Vec<WatermarkRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM watermarks WHERE job = ?1 ORDER BY seq DESC LIMIT ?2"
    ))?
    .query_map(params![job, limit], row)?
    .collect()
}
