//! The `baton.steps` table: per step (or check) of a job, when it was last
//! attempted, succeeded and failed, and how many attempts in a row failed;
//! `baton_ledger`'s `steps` module in PostgreSQL. What an outcome word does
//! to the counters is `baton_store::ledger::Effect`'s rule, reused as is.

use baton_store::ledger::{Attempt, Effect, StepKind, StepState};
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// Counts an attempt against its step.
pub(crate) async fn attempted(tx: &Transaction<'_>, a: &Attempt) -> Result<(), Fail> {
    let effect = Effect::of(a.outcome);
    tx.execute(
        "INSERT INTO baton.steps AS s
           (job, step, kind, last_attempt, last_success, last_failure, consecutive_failures)
         VALUES ($1::text, $2::text, $3::text, $4::bigint,
                 CASE WHEN $5::boolean THEN $7::bigint END,
                 CASE WHEN $6::boolean THEN $7::bigint END,
                 CASE WHEN $6::boolean THEN 1 ELSE 0 END)
         ON CONFLICT (job, step) DO UPDATE SET
           kind = excluded.kind,
           last_attempt = GREATEST(COALESCE(s.last_attempt, $4::bigint), $4::bigint),
           last_success = CASE WHEN $5::boolean
                               THEN GREATEST(COALESCE(s.last_success, $7::bigint), $7::bigint)
                               ELSE s.last_success END,
           last_failure = CASE WHEN $6::boolean
                               THEN GREATEST(COALESCE(s.last_failure, $7::bigint), $7::bigint)
                               ELSE s.last_failure END,
           consecutive_failures = CASE WHEN $5::boolean THEN 0
                                       WHEN $6::boolean THEN s.consecutive_failures + 1
                                       ELSE s.consecutive_failures END",
        &[
            &a.job,
            &a.step,
            &a.kind.as_str(),
            &rows::micros(a.started),
            &effect.success(),
            &effect.failure(),
            &rows::micros(a.finished),
        ],
    )
    .await?;
    Ok(())
}

/// Every step of a job, by name.
pub(crate) async fn of_job(tx: &Transaction<'_>, job: &str) -> Result<Vec<StepState>, Fail> {
    let found = tx
        .query(
            "SELECT job, step, kind, last_attempt, last_success, last_failure,
                    consecutive_failures
             FROM baton.steps WHERE job = $1::text ORDER BY step",
            &[&job],
        )
        .await?;
    found.iter().map(row).collect()
}

fn row(r: &Row) -> Result<StepState, Fail> {
    Ok(StepState {
        job: rows::get(r, 0)?,
        step: rows::get(r, 1)?,
        kind: rows::word::<StepKind>(r, 2)?,
        last_attempt: rows::time_opt(r, 3)?,
        last_success: rows::time_opt(r, 4)?,
        last_failure: rows::time_opt(r, 5)?,
        consecutive_failures: rows::int(r, 6)?,
    })
}
