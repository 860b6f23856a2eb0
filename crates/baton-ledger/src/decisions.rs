//! The `occurrences` table: at most one decision per occurrence of a job.
//!
//! Its primary key `(job, occurrence)` is what makes "an occurrence is
//! decided once" hold across processes: a decision is an
//! `INSERT … ON CONFLICT DO NOTHING`, and the one insert that changed a row
//! is the one that decided. Every other writer learns that it lost from the
//! change count, inside the same transaction, without a read before the
//! write that another process could invalidate.

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::rows::{self, Decision, DecisionRow, NewRun};

/// A decision to record.
pub(crate) struct Entry<'a> {
    pub(crate) job: &'a str,
    pub(crate) occurrence: i64,
    pub(crate) decision: Decision,
    pub(crate) reason: Option<&'a str>,
    pub(crate) run_id: Option<&'a str>,
    pub(crate) detail: Option<&'a str>,
    pub(crate) decided: Timestamp,
}

/// Records a decision unless the occurrence has one. Returns whether this
/// call recorded it.
pub(crate) fn insert(conn: &Connection, e: &Entry<'_>) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO occurrences (job, occurrence, decision, reason, run_id, decided, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (job, occurrence) DO NOTHING",
        )?
        .execute(params![
            e.job,
            e.occurrence,
            e.decision.as_str(),
            e.reason,
            e.run_id,
            rows::micros(e.decided),
            e.detail
        ])?;
    Ok(changed == 1)
}

/// Records the occurrence of a scheduled run as `started` by it, unless the
/// occurrence has a decision. Returns whether this call recorded it.
pub(crate) fn start(conn: &Connection, run: &NewRun, occurrence: i64) -> rusqlite::Result<bool> {
    insert(
        conn,
        &Entry {
            job: &run.job,
            occurrence,
            decision: Decision::Started,
            reason: None,
            run_id: Some(&run.run_id),
            detail: None,
            decided: run.started,
        },
    )
}

const COLUMNS: &str = "job, occurrence, decision, reason, run_id, decided, detail";

/// The decision for one occurrence.
pub(crate) fn one(
    conn: &Connection,
    job: &str,
    occurrence: i64,
) -> rusqlite::Result<Option<DecisionRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM occurrences WHERE job = ?1 AND occurrence = ?2"
    ))?
    .query_row(params![job, occurrence], row)
    .optional()
}

/// The occurrences of a job that did not run, newest first.
pub(crate) fn skipped(
    conn: &Connection,
    job: &str,
    limit: u32,
) -> rusqlite::Result<Vec<DecisionRow>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM occurrences
         WHERE job = ?1 AND decision IN ('skipped', 'missed')
         ORDER BY occurrence DESC LIMIT ?2"
    ))?;
    stmt.query_map(params![job, limit], row)?.collect()
}

/// How many occurrences of a job did not run, per decision and reason.
pub(crate) fn skip_counts(
    conn: &Connection,
    job: &str,
) -> rusqlite::Result<Vec<(String, String, u64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT decision, COALESCE(reason, ''), COUNT(*) FROM occurrences
         WHERE job = ?1 AND decision IN ('skipped', 'missed')
         GROUP BY decision, reason ORDER BY decision, reason",
    )?;
    stmt.query_map([job], |r| Ok((r.get(0)?, r.get(1)?, rows::unsigned(r, 2)?)))?
        .collect()
}

/// Deletes the job's decisions made before its oldest remaining run
/// started, except its newest decision, which always stays: it is the
/// latest word on the job's schedule.
pub(crate) fn prune(conn: &Connection, job: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM occurrences
         WHERE job = ?1
           AND decided < (SELECT MIN(started) FROM runs WHERE job = ?1)
           AND occurrence < (SELECT MAX(occurrence) FROM occurrences WHERE job = ?1)",
    )?
    .execute([job])?;
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<DecisionRow> {
    Ok(DecisionRow {
        job: r.get(0)?,
        occurrence: r.get(1)?,
        decision: rows::word(r, 2)?,
        reason: r.get(3)?,
        run_id: r.get(4)?,
        decided: rows::time(r, 5)?,
        detail: r.get(6)?,
    })
}
