//! Decisions made by a clock that was ahead: [`baton_store::ledger::Records::withdraw_ahead`],
//! the one call that takes them back, and [`baton_store::ledger::Records::decided_after`], which
//! names the occurrences a job's mark does not cover although they have a
//! decision (they ran early, under that clock).
//!
//! A process whose clock is ahead decides occurrences that have not come by
//! any honest clock: it calls the present and the near future missed and
//! raises the job's mark past them. The first process whose clock is
//! honest (the ledger's mark is more than a tolerance ahead of it) takes
//! those decisions back in one write transaction, so the ordinary path
//! decides the present again, truthfully: the missed ranges recorded at a
//! time beyond the tolerance are deleted (their tallies lowered), queued
//! occurrences queued then are dropped, and the mark goes back to what the
//! remaining decisions reach. What ran stays: an occurrence's `started`
//! row is never withdrawn, so it never runs again, and a planner reads it
//! back with [`baton_store::ledger::Records::decided_after`] so that it is never called missed.
//! A job's first sighting stays as it was recorded, even when it is ahead
//! of the caller's clock: that clock may be the one behind (the scheduler
//! decides by the sighting it can reach instead). This module never reads a
//! clock: the caller says what now is.

use rusqlite::{Connection, OptionalExtension, params};

use baton_store::ledger::Withdrawn;

use crate::rows::{self, MISSED_COLUMNS};
use crate::statements::WITHDRAWN;

/// The body of [`baton_store::ledger::Records::withdraw_ahead`], in the
/// caller's write transaction: takes back what a clock ahead decided about
/// `job`, when the job's last decided occurrence is after `trigger` (`now`
/// plus the caller's tolerance, in seconds). Once a clock is known to have
/// been ahead, nothing decided after `now` (`now_us` in microseconds) is
/// trusted (a clock a little ahead would otherwise keep the present from
/// running until it comes):
///
/// 1. every missed range of the job recorded at a time after `now` is
///    deleted, and the job's missed tally for its reason falls by its
///    count;
/// 2. every queued occurrence queued at such a time is dropped;
/// 3. the job's last decided occurrence becomes the newest one the
///    remaining decisions reach: the last of its remaining missed
///    ranges, or an occurrence with a decision that is not after `now`,
///    whichever is later (none when nothing
///    remains). The job's first-seen time stays, even when it too is
///    ahead.
///
/// An occurrence that started keeps its decision, whenever it was made:
/// it never runs again. Returns `None` (nothing written) when the mark
/// is not ahead, or the job is unknown: another process took the
/// decisions back already.
pub(crate) fn withdraw(
    tx: &Connection,
    job: &str,
    trigger: i64,
    now: i64,
    now_us: i64,
) -> rusqlite::Result<Option<Withdrawn>> {
    let was: Option<i64> = tx
        .prepare_cached("SELECT last_decided FROM jobs WHERE job = ?1")?
        .query_row([job], |r| r.get(0))
        .optional()?
        .flatten();
    let Some(was) = was.filter(|&w| w > trigger) else {
        return Ok(None);
    };
    let ranges = tx
        .prepare_cached(&format!(
            "SELECT {MISSED_COLUMNS} FROM missed
             WHERE job = ?1 AND (decided > ?2 OR updated > ?2) ORDER BY first"
        ))?
        .query_map(params![job, now_us], rows::missed)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    // A counter never falls: what the ranges counted stays counted as
    // missed, and is counted as withdrawn too.
    let mut withdrawn = tx.prepare_cached(
        "INSERT INTO tallies (job, kind, word, count) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (job, kind, word) DO UPDATE SET count = count + excluded.count",
    )?;
    for r in &ranges {
        let count = i64::try_from(r.count).unwrap_or(i64::MAX);
        withdrawn.execute(params![job, WITHDRAWN, r.reason.as_str(), count])?;
    }
    // A streak's range that a clock ahead extended (`updated` ahead, its
    // start honest) goes whole: its end and count are the clock ahead's,
    // and the present decides its occurrences again.
    tx.prepare_cached("DELETE FROM missed WHERE job = ?1 AND (decided > ?2 OR updated > ?2)")?
        .execute(params![job, now_us])?;
    let unqueued = tx
        .prepare_cached(
            "DELETE FROM occurrences WHERE job = ?1 AND decision = 'queued' AND decided > ?2",
        )?
        .execute(params![job, now_us])?;
    let mark: Option<i64> = tx
        .prepare_cached(
            "SELECT MAX(m) FROM (
               SELECT MAX(last) AS m FROM missed WHERE job = ?1
               UNION ALL
               SELECT MAX(occurrence) AS m FROM occurrences WHERE job = ?1 AND occurrence <= ?2)",
        )?
        .query_row(params![job, now], |r| r.get(0))?;
    tx.prepare_cached("UPDATE jobs SET last_decided = ?2 WHERE job = ?1")?
        .execute(params![job, mark])?;
    Ok(Some(Withdrawn {
        was,
        now: mark,
        ranges,
        unqueued: u64::try_from(unqueued).unwrap_or(u64::MAX),
    }))
}

/// The body of [`baton_store::ledger::Records::decided_after`]: the
/// occurrences of `job` after `after` and at or before `through` that have
/// a decision (they started, are queued, or were claimed), oldest first:
/// above the job's mark, only what a clock ahead decided.
pub(crate) fn decided_between(
    conn: &Connection,
    job: &str,
    after: i64,
    through: i64,
) -> rusqlite::Result<Vec<i64>> {
    conn.prepare_cached(
        "SELECT occurrence FROM occurrences
         WHERE job = ?1 AND occurrence > ?2 AND occurrence <= ?3 ORDER BY occurrence",
    )?
    .query_map(params![job, after, through], |r| r.get(0))?
    .collect()
}
