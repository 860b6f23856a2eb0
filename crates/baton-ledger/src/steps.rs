//! The `steps` table: per step (or check) of a job, when it was last
//! attempted, last succeeded and last failed, and how many attempts in a row
//! have failed. Keyed by `(job, step)`, so it outlives the runs that history
//! pruning removes.
//!
//! As in `jobs`, counters change only through SQL expressions evaluated on
//! the row inside the write transaction.

use rusqlite::{Connection, Row, params};

use crate::rows::{self, Attempt, StepKind, StepState};

/// What an attempt's outcome word does to its step's counters: the rule
/// every ledger applies when it counts an attempt against its step.
///
/// ```
/// use baton_ledger::Effect;
/// assert_eq!(Effect::of("ok"), Effect::Success);
/// assert_eq!(Effect::of("timeout"), Effect::Failure);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `ok`: last success, failures reset.
    Success,
    /// `not-started`: the step was never run; no counter moves.
    None,
    /// Any other word: last failure, failures + 1.
    Failure,
}

impl Effect {
    /// The effect of an outcome word.
    pub fn of(outcome: &str) -> Self {
        match outcome {
            "ok" => Self::Success,
            "not-started" => Self::None,
            _ => Self::Failure,
        }
    }
}

/// Counts an attempt against its step.
pub(crate) fn attempted(conn: &Connection, a: &Attempt) -> rusqlite::Result<()> {
    let effect = Effect::of(&a.outcome);
    let counted = effect != Effect::None;
    let success = effect == Effect::Success;
    conn.prepare_cached(
        "INSERT INTO steps
           (job, step, kind, last_attempt, last_success, last_failure, consecutive_failures)
         VALUES (?1, ?2, ?3,
                 CASE WHEN ?4 THEN ?5 END,
                 CASE WHEN ?4 AND ?6 THEN ?7 END,
                 CASE WHEN ?4 AND NOT ?6 THEN ?7 END,
                 CASE WHEN ?4 AND NOT ?6 THEN 1 ELSE 0 END)
         ON CONFLICT (job, step) DO UPDATE SET
           kind = excluded.kind,
           last_attempt = CASE WHEN ?4 THEN MAX(COALESCE(last_attempt, ?5), ?5)
                               ELSE last_attempt END,
           last_success = CASE WHEN ?4 AND ?6 THEN MAX(COALESCE(last_success, ?7), ?7)
                               ELSE last_success END,
           last_failure = CASE WHEN ?4 AND NOT ?6 THEN MAX(COALESCE(last_failure, ?7), ?7)
                               ELSE last_failure END,
           consecutive_failures = CASE WHEN NOT ?4 THEN consecutive_failures
                                       WHEN ?6 THEN 0
                                       ELSE consecutive_failures + 1 END",
    )?
    .execute(params![
        a.job,
        a.step,
        a.kind.as_str(),
        counted,
        rows::micros(a.started),
        success,
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
    fn outcome_words_have_effects() {
        assert_eq!(Effect::of("ok"), Effect::Success);
        assert_eq!(Effect::of("not-started"), Effect::None);
        for word in ["failed", "timeout", "lease-lost", "interrupted", "OK", ""] {
            assert_eq!(Effect::of(word), Effect::Failure, "{word}");
        }
    }
}
