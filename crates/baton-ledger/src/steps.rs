//! The `steps` table: per step (or check) of a job, when it was last
//! attempted, last succeeded and last failed, and how many attempts in a row
//! have failed. Keyed by `(job, step)`, so it outlives the runs that history
//! pruning removes.
//!
//! As in `jobs`, counters change only through SQL expressions evaluated on
//! the row inside the write transaction.

use rusqlite::{Connection, Row, params};

use baton_store::ledger::{Attempt, Effect, StepKind, StepState};

use crate::rows;

/// Counts an attempt against its step.
pub(crate) fn attempted(conn: &Connection, a: &Attempt) -> rusqlite::Result<()> {
    let effect = Effect::of(a.outcome);
    conn.prepare_cached(
        "INSERT INTO steps
           (job, step, kind, last_attempt, last_success, last_failure, consecutive_failures)
         VALUES (?1, ?2, ?3, ?4,
                 CASE WHEN ?5 THEN ?7 END,
                 CASE WHEN ?6 THEN ?7 END,
                 CASE WHEN ?6 THEN 1 ELSE 0 END)
         ON CONFLICT (job, step) DO UPDATE SET
           kind = excluded.kind,
           last_attempt = MAX(COALESCE(last_attempt, ?4), ?4),
           last_success = CASE WHEN ?5 THEN MAX(COALESCE(last_success, ?7), ?7)
                               ELSE last_success END,
           last_failure = CASE WHEN ?6 THEN MAX(COALESCE(last_failure, ?7), ?7)
                               ELSE last_failure END,
           consecutive_failures = CASE WHEN ?5 THEN 0
                                       WHEN ?6 THEN consecutive_failures + 1
                                       ELSE consecutive_failures END",
    )?
    .execute(params![
        a.job,
        a.step,
        a.kind.as_str(),
        rows::micros(a.started),
        effect.success(),
        effect.failure(),
        rows::micros(a.finished)
    ])?;
    Ok(())
}

/// Every step of a job, by name.
pub(crate) fn of_job(conn: &Connection, job: &str) -> rusqlite::Result<Vec<StepState>> {
    let mut stmt = conn.prepare_cached(
        "SELECT job, step, kind, last_attempt, last_success, last_failure, consecutive_failures
         FROM steps WHERE job = ?1 ORDER BY step",
    )?;
    stmt.query_map([job], row)?.collect()
}

fn row(r: &Row<'_>) -> rusqlite::Result<StepState> {
    Ok(StepState {
        job: r.get(0)?,
        step: r.get(1)?,
        kind: rows::word::<StepKind>(r, 2)?,
        last_attempt: rows::time_opt(r, 3)?,
        last_success: rows::time_opt(r, 4)?,
        last_failure: rows::time_opt(r, 5)?,
        consecutive_failures: rows::unsigned(r, 6)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_have_effects() {
        use baton_store::words::{AttemptOutcome as O, RunVerdict as V};
        assert_eq!(Effect::of(O::Ok), Effect::Success);
        assert_eq!(Effect::of(O::Interrupted), Effect::Neutral);
        for &o in O::ALL {
            if !matches!(o, O::Ok | O::Interrupted) {
                assert_eq!(Effect::of(o), Effect::Failure, "{o}");
            }
        }
        assert_eq!(Effect::of_run(V::Ok, true), Effect::Success);
        assert_eq!(Effect::of_run(V::Interrupted, false), Effect::Neutral);
        assert_eq!(Effect::of_run(V::Ok, false), Effect::Failure);
        assert_eq!(Effect::of_run(V::Abandoned, false), Effect::Failure);
    }
}
