//! The `baton.jobs` table: one row per job, with the high-water marks the
//! scheduler reads before it decides and the counters status shows; the
//! statements of `baton_ledger`'s `jobs` module, in PostgreSQL.
//!
//! Every change is one statement that computes the new value from the row
//! as it is under the write lock (`GREATEST`, `+ 1`), never a value read
//! earlier into Rust. `GREATEST(COALESCE(a, b), COALESCE(b, a))` is the
//! larger of two values either of which may be NULL, as SQLite's
//! `MAX(COALESCE(…))` is there.

use baton_store::ledger::{Effect, Finished, JobState, NewRun};
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// Inserts the jobs that are not there yet, seen first at `now` (µs).
pub(crate) async fn see(tx: &Transaction<'_>, jobs: &[&str], now: i64) -> Result<(), Fail> {
    let stmt = tx
        .prepare(
            "INSERT INTO baton.jobs (job, first_seen) VALUES ($1::text, $2::bigint)
             ON CONFLICT (job) DO NOTHING",
        )
        .await?;
    for job in jobs {
        tx.execute(&stmt, &[job, &now]).await?;
    }
    Ok(())
}

/// Marks a run as begun: the job's newest attempt (and its run id) when it
/// is the newest, and for a scheduled run the occurrence as decided and
/// started.
pub(crate) async fn begun(tx: &Transaction<'_>, run: &NewRun) -> Result<(), Fail> {
    tx.execute(
        "INSERT INTO baton.jobs AS j
           (job, first_seen, last_decided, last_started, last_attempt, last_run_id)
         VALUES ($1::text, $2::bigint, $3::bigint, $3::bigint, $2::bigint, $4::text)
         ON CONFLICT (job) DO UPDATE SET
           last_run_id = CASE WHEN j.last_attempt IS NULL OR $2::bigint >= j.last_attempt
                              THEN $4::text ELSE j.last_run_id END,
           last_attempt = GREATEST(COALESCE(j.last_attempt, $2::bigint), $2::bigint),
           last_decided = GREATEST(COALESCE(j.last_decided, $3::bigint),
                                   COALESCE($3::bigint, j.last_decided)),
           last_started = GREATEST(COALESCE(j.last_started, $3::bigint),
                                   COALESCE($3::bigint, j.last_started))",
        &[
            &run.job,
            &rows::micros(run.started),
            &run.occurrence,
            &run.run_id,
        ],
    )
    .await?;
    Ok(())
}

/// Counts a finished run: its time as the last success or failure, and the
/// failure count reset or incremented; a run that is neither
/// (`Effect::Neutral`: `interrupted`) moves nothing.
pub(crate) async fn finished(tx: &Transaction<'_>, f: &Finished) -> Result<(), Fail> {
    let effect = Effect::of_run(f.verdict, f.success);
    tx.execute(
        "INSERT INTO baton.jobs AS j
           (job, first_seen, last_success, last_failure, consecutive_failures)
         VALUES ($1::text, $2::bigint,
                 CASE WHEN $3::boolean THEN $2::bigint END,
                 CASE WHEN $4::boolean THEN $2::bigint END,
                 CASE WHEN $4::boolean THEN 1 ELSE 0 END)
         ON CONFLICT (job) DO UPDATE SET
           last_success = CASE WHEN $3::boolean
                               THEN GREATEST(COALESCE(j.last_success, $2::bigint), $2::bigint)
                               ELSE j.last_success END,
           last_failure = CASE WHEN $4::boolean
                               THEN GREATEST(COALESCE(j.last_failure, $2::bigint), $2::bigint)
                               ELSE j.last_failure END,
           consecutive_failures = CASE WHEN $3::boolean THEN 0
                                       WHEN $4::boolean THEN j.consecutive_failures + 1
                                       ELSE j.consecutive_failures END",
        &[
            &f.job,
            &rows::micros(f.finished),
            &effect.success(),
            &effect.failure(),
        ],
    )
    .await?;
    Ok(())
}

/// Whether the job's last decided occurrence is at or after `occurrence`.
/// Read under the write lock, so the answer holds until the transaction
/// that then decides commits.
pub(crate) async fn decided_through(
    tx: &Transaction<'_>,
    job: &str,
    occurrence: i64,
) -> Result<bool, Fail> {
    let row = tx
        .query_opt(
            "SELECT last_decided >= $2::bigint FROM baton.jobs WHERE job = $1::text",
            &[&job, &occurrence],
        )
        .await?;
    match row {
        Some(r) => Ok(rows::get::<Option<bool>>(&r, 0)?.unwrap_or(false)),
        None => Ok(false),
    }
}

/// Raises the job's last decided occurrence to `occurrence`.
pub(crate) async fn decided(
    tx: &Transaction<'_>,
    job: &str,
    occurrence: i64,
    now: i64,
) -> Result<(), Fail> {
    tx.execute(
        "INSERT INTO baton.jobs AS j (job, first_seen, last_decided)
         VALUES ($1::text, $2::bigint, $3::bigint)
         ON CONFLICT (job) DO UPDATE SET
           last_decided = GREATEST(COALESCE(j.last_decided, $3::bigint), $3::bigint)",
        &[&job, &now, &occurrence],
    )
    .await?;
    Ok(())
}

const COLUMNS: &str = "job, first_seen, last_decided, last_started, last_attempt, last_success, \
                       last_failure, consecutive_failures, last_run_id";

/// Every job, by name.
pub(crate) async fn all(tx: &Transaction<'_>) -> Result<Vec<JobState>, Fail> {
    let found = tx
        .query(
            &format!("SELECT {COLUMNS} FROM baton.jobs ORDER BY job"),
            &[],
        )
        .await?;
    found.iter().map(row).collect()
}

/// One job.
pub(crate) async fn one(tx: &Transaction<'_>, job: &str) -> Result<Option<JobState>, Fail> {
    let found = tx
        .query_opt(
            &format!("SELECT {COLUMNS} FROM baton.jobs WHERE job = $1::text"),
            &[&job],
        )
        .await?;
    found.as_ref().map(row).transpose()
}

fn row(r: &Row) -> Result<JobState, Fail> {
    Ok(JobState {
        job: rows::get(r, 0)?,
        first_seen: rows::time(r, 1)?,
        last_decided: rows::get(r, 2)?,
        last_started: rows::get(r, 3)?,
        last_attempt: rows::time_opt(r, 4)?,
        last_success: rows::time_opt(r, 5)?,
        last_failure: rows::time_opt(r, 6)?,
        consecutive_failures: rows::int(r, 7)?,
        last_run_id: rows::get(r, 8)?,
    })
}
