//! Missed ranges: the `missed` table, one row per decision that a range of
//! a job's occurrences will not run, and [`Records::miss`](baton_store::ledger::Records::miss), the one call that
//! writes it.
//!
//! A decision covers `first..=last` with `count` occurrences in it (a year
//! of downtime of a per-second job is one row, not millions), and is
//! written in the same `BEGIN IMMEDIATE` transaction that raises
//! `jobs.last_decided`, only while that mark is still below the range: of
//! two processes planning the same outage, the first records it and the
//! other is told the mark moved ([`Missed::Moved`]), plans again from it and
//! finds nothing left. So a range is never recorded twice, nor overlapping
//! another decision, and nothing here is read into Rust and written back
//! outside that transaction. Rows are numbered by `AUTOINCREMENT`, so a
//! job's newest range has the largest id (the index `(job, id DESC)` finds
//! it), and a number is never reused after pruning.

use jiff::Timestamp;
use rusqlite::{Connection, Row, params};

use baton_store::ledger::{Miss, MissedRow};
use baton_store::words::MissReason;

use crate::rows;

/// How many missed ranges pruning keeps per job.
const KEEP: u32 = 1_000;

/// Extends the job's newest range by `m` when it has the same reason and
/// ends at the job's last decided occurrence. One statement, evaluated on
/// the rows as they are under the write lock. Returns whether it did.
pub(crate) fn extend(
    conn: &Connection,
    m: &Miss<'_>,
    count: i64,
    now: Timestamp,
) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE missed SET
               count = count + ?3,
               last = ?4,
               at_least = at_least OR ?5,
               updated = ?6
             WHERE id = (SELECT MAX(id) FROM missed WHERE job = ?1)
               AND reason = ?2
               AND last = (SELECT last_decided FROM jobs WHERE job = ?1)",
        )?
        .execute(params![
            m.job,
            m.reason.as_str(),
            count,
            m.last,
            m.at_least,
            rows::micros(now)
        ])?;
    Ok(changed == 1)
}

pub(crate) fn insert(
    conn: &Connection,
    m: &Miss<'_>,
    count: i64,
    detail: Option<&str>,
    now: Timestamp,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO missed (job, reason, first, last, count, at_least, decided, updated, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
    )?
    .execute(params![
        m.job,
        m.reason.as_str(),
        m.first,
        m.last,
        count,
        m.at_least,
        rows::micros(now),
        detail
    ])?;
    Ok(())
}

const COLUMNS: &str = "id, job, reason, first, last, count, at_least, decided, updated, detail";

pub(crate) fn recent(conn: &Connection, job: &str, limit: u32) -> rusqlite::Result<Vec<MissedRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM missed WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
    ))?
    .query_map(params![job, limit], row)?
    .collect()
}

pub(crate) fn counts(
    conn: &Connection,
    job: &str,
) -> rusqlite::Result<Vec<(MissReason, u64, bool)>> {
    conn.prepare_cached(
        "SELECT reason, SUM(count), MAX(at_least) FROM missed
         WHERE job = ?1 GROUP BY reason ORDER BY reason",
    )?
    .query_map([job], |r| {
        Ok((rows::word(r, 0)?, rows::unsigned(r, 1)?, r.get(2)?))
    })?
    .collect()
}

/// The job's ranges recorded after `decided_us` (microseconds), oldest
/// first.
pub(crate) fn decided_after(
    conn: &Connection,
    job: &str,
    decided_us: i64,
) -> rusqlite::Result<Vec<MissedRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM missed WHERE job = ?1 AND decided > ?2 ORDER BY first"
    ))?
    .query_map(params![job, decided_us], row)?
    .collect()
}

/// Deletes all but the job's newest [`KEEP`] ranges.
pub(crate) fn prune(conn: &Connection, job: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM missed WHERE job = ?1 AND id NOT IN (
           SELECT id FROM missed WHERE job = ?1 ORDER BY id DESC LIMIT ?2)",
    )?
    .execute(params![job, KEEP])?;
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<MissedRow> {
    Ok(MissedRow {
        id: r.get(0)?,
        job: r.get(1)?,
        reason: rows::word(r, 2)?,
        first: r.get(3)?,
        last: r.get(4)?,
        count: rows::unsigned(r, 5)?,
        at_least: r.get(6)?,
        decided: rows::time(r, 7)?,
        updated: rows::time(r, 8)?,
        detail: r.get(9)?,
    })
}
