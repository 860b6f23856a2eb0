//! The `steps` table: per step (or check) of a job, when it was last
//! attempted, last succeeded and last failed, and how many attempts in a row
//! have failed. Keyed by `(job, step)`, so it outlives the runs that history
//! pruning removes.
//!
//! As in `jobs`, counters change only through SQL expressions evaluated on
//! the row inside the write transaction.

use rusqlite::{Connection, Row, params};

use crate::rows::{self, Attempt, StepKind, StepState};

/// What an outcome word does to its step's counters (and a run's verdict
/// to its job's): the rule every ledger applies when it counts an attempt
/// against its step or a run against its job.
///
/// ```
/// use baton_ledger::Effect;
/// assert_eq!(Effect::of("ok"), Effect::Success);
/// assert_eq!(Effect::of("timeout"), Effect::Failure);
/// assert_eq!(Effect::of("not-started"), Effect::Failure);
/// assert_eq!(Effect::of("interrupted"), Effect::Neutral);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `ok`: last success, failures reset.
    Success,
    /// `interrupted`: stopped by a graceful shutdown (SIGTERM or SIGINT to
    /// the daemon or to the tick or run supervising it). It is an attempt
    /// (a step's last attempt moves) but neither a success nor a failure:
    /// no other counter moves.
    Neutral,
    /// Any other word, `not-started` (the command could not be started)
    /// included: last failure, failures + 1.
    Failure,
}

impl Effect {
    /// The effect of an outcome word.
    pub fn of(outcome: &str) -> Self {
        match outcome {
            "ok" => Self::Success,
            "interrupted" => Self::Neutral,
            _ => Self::Failure,
        }
    }

    /// The effect of a run's end: a success when the run says so, else its
    /// verdict's ([`Effect::of`]), never a success.
    pub fn of_run(verdict: &str, success: bool) -> Self {
        match (success, Self::of(verdict)) {
            (true, _) => Self::Success,
            (false, Self::Neutral) => Self::Neutral,
            (false, _) => Self::Failure,
        }
    }

    /// Whether it resets the failures and sets the last success.
    pub fn success(self) -> bool {
        self == Self::Success
    }

    /// Whether it adds a failure and sets the last failure.
    pub fn failure(self) -> bool {
        self == Self::Failure
    }
}

/// Counts an attempt against its step.
pub(crate) fn attempted(conn: &Connection, a: &Attempt) -> rusqlite::Result<()> {
    let effect = Effect::of(&a.outcome);
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
    fn outcome_words_have_effects() {
        assert_eq!(Effect::of("ok"), Effect::Success);
        assert_eq!(Effect::of("interrupted"), Effect::Neutral);
        for word in ["failed", "timeout", "lease-lost", "not-started", "OK", ""] {
            assert_eq!(Effect::of(word), Effect::Failure, "{word}");
        }
        assert_eq!(Effect::of_run("ok", true), Effect::Success);
        assert_eq!(Effect::of_run("interrupted", false), Effect::Neutral);
        assert_eq!(Effect::of_run("ok", false), Effect::Failure);
        assert_eq!(Effect::of_run("abandoned", false), Effect::Failure);
    }
}
