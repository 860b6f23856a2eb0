//! Pauses: the `pauses` table, one row per pause of a job, kept after it
//! ends, so that an occurrence that fell inside a pause is still judged
//! `paused` by a tick that plans it later.
//!
//! A pause is in force from `since` until the earlier of `until` (it lapses
//! on its own) and `ended` (it was resumed, or replaced by a newer pause);
//! [`PauseRow::covers`] is that rule, and the SQL below states the same one.
//! At most one pause of a job is in force: [`Records::pause`](baton_store::ledger::Records::pause) ends the one in
//! force and records the new one in one `BEGIN IMMEDIATE` transaction, and
//! [`Records::resume`](baton_store::ledger::Records::resume) ends it by an update that only matches a pause in
//! force. Rows are numbered by `AUTOINCREMENT` (a job's newest pause has
//! the largest id; the index `(job, id DESC)` finds it). Pruning never
//! removes a pause that is not over.

use jiff::Timestamp;
use rusqlite::{Connection, Row, params};

use baton_store::ledger::PauseRow;

use crate::rows;

/// How many pauses pruning keeps per job, besides any not over.
const KEEP: u32 = 100;

/// Whether the pause of the row is in force at `?2`: [`PauseRow::covers`]
/// in SQL.
const IN_FORCE: &str =
    "since <= ?2 AND (until IS NULL OR ?2 < until) AND (ended IS NULL OR ?2 < ended)";

const COLUMNS: &str = "id, job, since, until, reason, who, ended";

/// Ends, at `now`, the job's pauses in force at `now` (at most one, as the
/// ledger writes them). Returns them as ended.
pub(crate) fn end_in_force(
    conn: &Connection,
    job: &str,
    now: Timestamp,
) -> rusqlite::Result<Vec<PauseRow>> {
    conn.prepare_cached(&format!(
        "UPDATE pauses SET ended = ?2 WHERE job = ?1 AND {IN_FORCE} RETURNING {COLUMNS}"
    ))?
    .query_map(params![job, rows::micros(now)], row)?
    .collect()
}

/// Deletes the job's pauses that are over at `now` (ended, or lapsed),
/// except its newest [`KEEP`]. A pause in force, or one yet to begin, stays
/// however old.
pub(crate) fn prune(conn: &Connection, job: &str, now: Timestamp) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM pauses
         WHERE job = ?1
           AND ((ended IS NOT NULL AND ended <= ?2) OR (until IS NOT NULL AND until <= ?2))
           AND id NOT IN (SELECT id FROM pauses WHERE job = ?1 ORDER BY id DESC LIMIT ?3)",
    )?
    .execute(params![job, rows::micros(now), KEEP])?;
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<PauseRow> {
    Ok(PauseRow {
        id: r.get(0)?,
        job: r.get(1)?,
        since: rows::time(r, 2)?,
        until: rows::time_opt(r, 3)?,
        reason: r.get(4)?,
        who: r.get(5)?,
        ended: rows::time_opt(r, 6)?,
    })
}

/// Records a pause of `job` from `now`, returning it.
pub(crate) fn insert(
    conn: &Connection,
    job: &str,
    until: Option<Timestamp>,
    reason: Option<&str>,
    who: &str,
    now: Timestamp,
) -> rusqlite::Result<PauseRow> {
    conn.prepare_cached(&format!(
        "INSERT INTO pauses (job, since, until, reason, who)
         VALUES (?1, ?2, ?3, ?4, ?5) RETURNING {COLUMNS}"
    ))?
    .query_row(
        params![job, rows::micros(now), until.map(rows::micros), reason, who],
        row,
    )
}

/// The newest `limit` pauses of a job, newest first.
pub(crate) fn recent(conn: &Connection, job: &str, limit: u32) -> rusqlite::Result<Vec<PauseRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM pauses WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
    ))?
    .query_map(params![job, limit], row)?
    .collect()
}
