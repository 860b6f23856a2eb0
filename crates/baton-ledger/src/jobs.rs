//! The `jobs` table: one row per job, with the high-water marks the
//! scheduler reads before it decides (the last occurrence decided and
//! started) and the counters status shows.
//!
//! Every change is one SQL statement that computes the new value from the
//! row as it is inside the write transaction (`MAX`, `+ 1`), never a value
//! read earlier into Rust, so writers in other processes never undo each
//! other. `MAX(COALESCE(a, b), COALESCE(b, a))` is the larger of two values
//! either of which may be NULL (SQLite's `MAX` is NULL when any argument is).

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use baton_store::ledger::{Effect, Finished, JobState, NewRun};

use crate::rows;

/// Inserts the jobs that are not there yet, seen first at `now`.
pub(crate) fn see(conn: &Connection, jobs: &[&str], now: Timestamp) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO jobs (job, first_seen) VALUES (?1, ?2) ON CONFLICT (job) DO NOTHING",
    )?;
    for job in jobs {
        stmt.execute(params![job, rows::micros(now)])?;
    }
    Ok(())
}

/// Marks a run as begun: the job's newest attempt (and its run id) when it
/// is the newest, and for a scheduled run the occurrence as decided and
/// started.
pub(crate) fn begun(conn: &Connection, run: &NewRun) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO jobs (job, first_seen, last_decided, last_started, last_attempt, last_run_id)
         VALUES (?1, ?2, ?3, ?3, ?2, ?4)
         ON CONFLICT (job) DO UPDATE SET
           last_run_id = CASE WHEN last_attempt IS NULL OR ?2 >= last_attempt
                              THEN ?4 ELSE last_run_id END,
           last_attempt = MAX(COALESCE(last_attempt, ?2), ?2),
           last_decided = MAX(COALESCE(last_decided, ?3), COALESCE(?3, last_decided)),
           last_started = MAX(COALESCE(last_started, ?3), COALESCE(?3, last_started))",
    )?
    .execute(params![
        run.job,
        rows::micros(run.started),
        run.occurrence,
        run.run_id
    ])?;
    Ok(())
}

/// Counts a finished run: its time as the last success or failure, and the
/// failure count reset or incremented; a run that is neither
/// ([`Effect::Neutral`]: `interrupted`) moves nothing.
pub(crate) fn finished(conn: &Connection, f: &Finished) -> rusqlite::Result<()> {
    let effect = Effect::of_run(f.verdict, f.success);
    conn.prepare_cached(
        "INSERT INTO jobs (job, first_seen, last_success, last_failure, consecutive_failures)
         VALUES (?1, ?2, CASE WHEN ?3 THEN ?2 END, CASE WHEN ?4 THEN ?2 END,
                 CASE WHEN ?4 THEN 1 ELSE 0 END)
         ON CONFLICT (job) DO UPDATE SET
           last_success = CASE WHEN ?3 THEN MAX(COALESCE(last_success, ?2), ?2)
                               ELSE last_success END,
           last_failure = CASE WHEN ?4 THEN MAX(COALESCE(last_failure, ?2), ?2)
                               ELSE last_failure END,
           consecutive_failures = CASE WHEN ?3 THEN 0
                                       WHEN ?4 THEN consecutive_failures + 1
                                       ELSE consecutive_failures END",
    )?
    .execute(params![
        f.job,
        rows::micros(f.finished),
        effect.success(),
        effect.failure()
    ])?;
    Ok(())
}

/// Whether the job's last decided occurrence is at or after `occurrence`:
/// it was decided already, by another process or an earlier call. Read
/// inside the write transaction that then decides, so the answer holds
/// until that transaction commits.
pub(crate) fn decided_through(
    conn: &Connection,
    job: &str,
    occurrence: i64,
) -> rusqlite::Result<bool> {
    let moved = conn
        .prepare_cached("SELECT last_decided >= ?2 FROM jobs WHERE job = ?1")?
        .query_row(params![job, occurrence], |r| r.get::<_, Option<bool>>(0))
        .optional()?;
    Ok(moved.flatten().unwrap_or(false))
}

/// Raises the job's last decided occurrence to `occurrence`.
pub(crate) fn decided(
    conn: &Connection,
    job: &str,
    occurrence: i64,
    now: Timestamp,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO jobs (job, first_seen, last_decided) VALUES (?1, ?2, ?3)
         ON CONFLICT (job) DO UPDATE SET
           last_decided = MAX(COALESCE(last_decided, ?3), ?3)",
    )?
    .execute(params![job, rows::micros(now), occurrence])?;
    Ok(())
}

const COLUMNS: &str = "job, first_seen, last_decided, last_started, last_attempt, last_success, \
                       last_failure, consecutive_failures, last_run_id";

/// Every job, by name.
pub(crate) fn all(conn: &Connection) -> rusqlite::Result<Vec<JobState>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs ORDER BY job"))?;
    stmt.query_map([], row)?.collect()
}

/// One job.
pub(crate) fn one(conn: &Connection, job: &str) -> rusqlite::Result<Option<JobState>> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM jobs WHERE job = ?1"))?
        .query_row([job], row)
        .optional()
}

fn row(r: &Row<'_>) -> rusqlite::Result<JobState> {
    Ok(JobState {
        job: r.get(0)?,
        first_seen: rows::time(r, 1)?,
        last_decided: r.get(2)?,
        last_started: r.get(3)?,
        last_attempt: rows::time_opt(r, 4)?,
        last_success: rows::time_opt(r, 5)?,
        last_failure: rows::time_opt(r, 6)?,
        consecutive_failures: rows::unsigned(r, 7)?,
        last_run_id: r.get(8)?,
    })
}
