//! Pauses: the `pauses` table, one row per pause of a job, kept after it
//! ends, so that an occurrence that fell inside a pause is still judged
//! `paused` by a tick that plans it later.
//!
//! A pause is in force from `since` until the earlier of `until` (it lapses
//! on its own) and `ended` (it was resumed, or replaced by a newer pause);
//! [`PauseRow::covers`] is that rule, and the SQL below states the same one.
//! At most one pause of a job is in force: [`Ledger::pause`] ends the one in
//! force and records the new one in one `BEGIN IMMEDIATE` transaction, and
//! [`Ledger::resume`] ends it by an update that only matches a pause in
//! force. Rows are numbered by `AUTOINCREMENT` (a job's newest pause has
//! the largest id; the index `(job, id DESC)` finds it). Pruning never
//! removes a pause that is not over.

use jiff::Timestamp;
use rusqlite::{Connection, Row, params};

use crate::error::Error;
use crate::ledger::{Ledger, Mode};
use crate::rows;

/// How many pauses pruning keeps per job, besides any not over.
const KEEP: u32 = 100;

/// Whether the pause of the row is in force at `?2`: [`PauseRow::covers`]
/// in SQL.
const IN_FORCE: &str =
    "since <= ?2 AND (until IS NULL OR ?2 < until) AND (ended IS NULL OR ?2 < ended)";

/// A pause of a job, as read back.
///
/// The ledger only records it: what a pause does to the job's occurrences
/// (they are missed, as `paused`) is decided by the scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseRow {
    /// Its number; a job's later pauses have larger numbers.
    pub id: i64,
    /// The job.
    pub job: String,
    /// When it began.
    pub since: Timestamp,
    /// When it lapses on its own; `None` for a pause until resumed.
    pub until: Option<Timestamp>,
    /// Why, as given.
    pub reason: Option<String>,
    /// Who paused the job (a user name, as given).
    pub who: String,
    /// When it was resumed or replaced by a newer pause; `None` while
    /// neither happened.
    pub ended: Option<Timestamp>,
}

impl PauseRow {
    /// Whether the pause covered instant `t`: `since <= t < min(until,
    /// ended)`, a missing bound being open.
    pub fn covers(&self, t: Timestamp) -> bool {
        self.since <= t && self.until.is_none_or(|u| t < u) && self.ended.is_none_or(|e| t < e)
    }

    /// Whether it is in force at `now` ([`PauseRow::covers`] `now`).
    pub fn active(&self, now: Timestamp) -> bool {
        self.covers(now)
    }
}

impl Ledger {
    /// Pauses a job from `now`, in one write transaction: the job's pause in
    /// force at `now`, if any, ends at `now`, and the new one is recorded,
    /// lasting until `until` (or until resumed, when `None`). Returns the new
    /// pause.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`]; [`Error::Invalid`] when `until` is not after
    /// `now` (nothing is written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use jiff::{SignedDuration, Timestamp};
    /// let now: Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let hour = SignedDuration::from_hours(1);
    /// let pause = ledger.pause("nightly", Some(now + hour), Some("migration"), "alice", now)?;
    /// assert!(pause.active(now));
    /// assert!(!pause.active(now + hour), "it lapses on its own");
    /// let ended = ledger.resume("nightly", now + hour / 2)?.unwrap();
    /// assert!(ended.covers(now) && !ended.active(now + hour / 2));
    /// assert_eq!(ledger.resume("nightly", now + hour / 2)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pause(
        &mut self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<PauseRow, Error> {
        self.saw(now);
        let action = || format!("pause job {job}");
        if let Err(problem) = crate::checks::pause(until, now) {
            return Err(self.invalid(action(), problem));
        }
        self.transact(Mode::Write, action, |tx| {
            end_in_force(tx, job, now)?;
            let row = tx
                .prepare_cached(&format!(
                    "INSERT INTO pauses (job, since, until, reason, who)
                     VALUES (?1, ?2, ?3, ?4, ?5) RETURNING {COLUMNS}"
                ))?
                .query_row(
                    params![job, rows::micros(now), until.map(rows::micros), reason, who],
                    row,
                )?;
            Ok(row)
        })
    }

    /// Resumes a job: its pause in force at `now` ends at `now`. Returns
    /// that pause as ended; `None` when no pause was in force (never paused,
    /// resumed already, or lapsed), and then nothing is written.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn resume(&mut self, job: &str, now: Timestamp) -> Result<Option<PauseRow>, Error> {
        self.saw(now);
        self.transact(
            Mode::Write,
            || format!("resume job {job}"),
            |tx| {
                let ended = end_in_force(tx, job, now)?;
                Ok(ended.into_iter().max_by_key(|p| p.id))
            },
        )
    }

    /// The newest `limit` pauses of a job, newest first, ended ones
    /// included.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn pauses(&mut self, job: &str, limit: u32) -> Result<Vec<PauseRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the pauses of job {job}"),
            |tx| {
                let rows = tx
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM pauses WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
                    ))?
                    .query_map(params![job, limit], row)?
                    .collect::<rusqlite::Result<_>>()?;
                Ok(rows)
            },
        )
    }
}

const COLUMNS: &str = "id, job, since, until, reason, who, ended";

/// Ends, at `now`, the job's pauses in force at `now` (at most one, as the
/// ledger writes them). Returns them as ended.
fn end_in_force(conn: &Connection, job: &str, now: Timestamp) -> rusqlite::Result<Vec<PauseRow>> {
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
