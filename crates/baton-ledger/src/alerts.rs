//! The `alerts` table: every alert raised, as delivered, numbered in the
//! order recorded (`AUTOINCREMENT`, so a number is never reused even after
//! rows are deleted). The index on `(job, id DESC)` serves a job's newest
//! alerts; the global newest come from the key itself.

use rusqlite::{Connection, Row, params};

use baton_store::ledger::{AlertRow, NewAlert};

use crate::rows;

/// Records an alert.
pub(crate) fn insert(conn: &Connection, a: &NewAlert) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO alerts (time, job, kind, run_id, occurrence, message, json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        rows::micros(a.time),
        a.job,
        a.kind.as_str(),
        a.run_id,
        a.occurrence,
        a.message,
        a.json
    ])?;
    Ok(())
}

const COLUMNS: &str = "id, time, job, kind, run_id, occurrence, message, json";

/// The newest `limit` alerts, of one job or of all, newest first.
pub(crate) fn recent(
    conn: &Connection,
    job: Option<&str>,
    limit: u32,
) -> rusqlite::Result<Vec<AlertRow>> {
    match job {
        Some(job) => conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM alerts WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
            ))?
            .query_map(params![job, limit], row)?
            .collect(),
        None => conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM alerts ORDER BY id DESC LIMIT ?1"
            ))?
            .query_map([limit], row)?
            .collect(),
    }
}

fn row(r: &Row<'_>) -> rusqlite::Result<AlertRow> {
    Ok(AlertRow {
        id: r.get(0)?,
        time: rows::time(r, 1)?,
        job: r.get(2)?,
        kind: rows::word(r, 3)?,
        run_id: r.get(4)?,
        occurrence: r.get(5)?,
        message: r.get(6)?,
        json: r.get(7)?,
    })
}
