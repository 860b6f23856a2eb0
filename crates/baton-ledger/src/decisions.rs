//! The `occurrences` table: at most one decision per occurrence of a job
//! that runs or waits (`started`, `queued`, `coalesced`, `claimed`).
//!
//! Its primary key `(job, occurrence)` is what makes "an occurrence is
//! decided once" hold across processes: a decision is an
//! `INSERT … ON CONFLICT DO NOTHING`, and the one insert that changed a row
//! is the one that decided. Every other writer learns that it lost from the
//! change count, inside the same transaction, without a read before the
//! write that another process could invalidate. The one decision that may
//! change is `queued`, into `started`, by an upsert whose update only
//! matches a queued row: of many processes starting it, one changes it.
//!
//! Occurrences that will not run are not here: they are ranges in the
//! `missed` table ([`crate::missed`]). The queue's reads and inserts live in
//! [`crate::queue`].

use rusqlite::{Connection, OptionalExtension, Row, params};

use baton_store::ledger::{DecisionRow, NewDecision, NewRun};

use crate::rows;

/// Records a decision unless the occurrence has one. Returns whether this
/// call recorded it.
pub(crate) fn insert(conn: &Connection, e: &NewDecision<'_>) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO occurrences (job, occurrence, decision, run_id, decided, detail, joined)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (job, occurrence) DO NOTHING",
        )?
        .execute(params![
            e.job,
            e.occurrence,
            e.decision.as_str(),
            None::<&str>,
            rows::micros(e.decided),
            e.detail,
            e.joined
        ])?;
    Ok(changed == 1)
}

/// Records the occurrence of a scheduled run as `started` by it: a new row
/// when the occurrence has none, or its `queued` row turned into `started`
/// (keeping its count of coalesced occurrences). Any other decision is left
/// as it is. Returns whether this call started it.
///
/// One statement: the update's `WHERE` is evaluated on the row as it is
/// under this transaction's write lock, so of many processes starting the
/// same queued occurrence, the first changes it and the others find it
/// `started` and change nothing.
pub(crate) fn start(conn: &Connection, run: &NewRun, occurrence: i64) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO occurrences (job, occurrence, decision, run_id, decided)
             VALUES (?1, ?2, 'started', ?3, ?4)
             ON CONFLICT (job, occurrence) DO UPDATE SET
               decision = 'started',
               run_id = excluded.run_id,
               decided = excluded.decided
             WHERE occurrences.decision = 'queued'",
        )?
        .execute(params![
            run.job,
            occurrence,
            run.run_id,
            rows::micros(run.started)
        ])?;
    Ok(changed == 1)
}

/// The columns [`row`] reads, in its order.
pub(crate) const COLUMNS: &str =
    "job, occurrence, decision, reason, run_id, decided, detail, coalesced, joined";

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

/// Deletes the job's decisions made before its oldest remaining run
/// started, except its newest decision, which always stays (it is the
/// latest word on the job's schedule), and its `queued` ones, which are
/// work still to do however long they have waited.
pub(crate) fn prune(conn: &Connection, job: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM occurrences
         WHERE job = ?1
           AND decision <> 'queued'
           AND decided < (SELECT MIN(started) FROM runs WHERE job = ?1)
           AND occurrence < (SELECT MAX(occurrence) FROM occurrences WHERE job = ?1)",
    )?
    .execute([job])?;
    Ok(())
}

/// Reads a row selected with [`COLUMNS`].
pub(crate) fn row(r: &Row<'_>) -> rusqlite::Result<DecisionRow> {
    Ok(DecisionRow {
        job: r.get(0)?,
        occurrence: r.get(1)?,
        decision: rows::word(r, 2)?,
        reason: r.get(3)?,
        run_id: r.get(4)?,
        decided: rows::time(r, 5)?,
        detail: r.get(6)?,
        coalesced: rows::unsigned(r, 7)?,
        joined: r.get(8)?,
    })
}

/// Turns a queued occurrence into `claimed`. Returns whether it was queued.
pub(crate) fn claim_queued(conn: &Connection, e: &NewDecision<'_>) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE occurrences SET decision = ?3, detail = ?4, decided = ?5
             WHERE job = ?1 AND occurrence = ?2 AND decision = 'queued'",
        )?
        .execute(params![
            e.job,
            e.occurrence,
            e.decision.as_str(),
            e.detail,
            rows::micros(e.decided)
        ])?;
    Ok(changed == 1)
}
