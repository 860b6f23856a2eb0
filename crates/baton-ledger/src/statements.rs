//! The ledger's single statements in SQLite ([`Sql`]), table by table, run
//! on the transaction [`crate::Ledger`] holds open; what a row reads into is
//! `rows`'. They never wait on anything but SQLite, so their futures are
//! ready at once, and they never decide: the transactions in `baton-store`
//! do, from what these return.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_store::ledger::{
    AlertRow, Attempt, AttemptRow, BOUNDS_US, DecisionRow, Declaration, Effect, Finished, JobState,
    JobTallies, Miss, MissedRow, NewAlert, NewDecision, NewRun, PauseRow, Replacement, RunRow,
    Statements, StepState, WatermarkRow, bucket,
};
use baton_store::words::{MissReason, RunVerdict, SkipReason};
use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Params, Row, params};

use crate::rows::{
    self, ALERT_COLUMNS, DECISION_COLUMNS, JOB_COLUMNS, MISSED_COLUMNS, PAUSE_COLUMNS, RUN_COLUMNS,
    WATERMARK_COLUMNS,
};

/// How many missed ranges pruning keeps per job.
const MISSED_KEEP: u32 = 1_000;
/// How many pauses pruning keeps per job, besides any not over.
const PAUSE_KEEP: u32 = 100;
/// How many values pruning keeps per job.
const WATERMARK_KEEP: u32 = 100;

/// Whether the pause of the row is in force at `?2`: [`PauseRow::covers`]
/// in SQL.
const IN_FORCE: &str =
    "since <= ?2 AND (until IS NULL OR ?2 < until) AND (ended IS NULL OR ?2 < ended)";

/// The kinds of counts in the `tallies` table.
const VERDICT: &str = "verdict";
pub(crate) const MISSED: &str = "missed";
/// The tally of missed occurrences taken back (`missed-withdrawn`).
pub(crate) const WITHDRAWN: &str = "withdrawn";
const SKIPPED: &str = "skipped";
const LEASE_LOST: &str = "lease-lost";

/// The statements of one SQLite transaction.
pub struct Sql<'t> {
    pub(crate) conn: &'t Connection,
}

type R<T> = rusqlite::Result<T>;

impl Sql<'_> {
    /// Runs a statement that returns no rows.
    fn run(&self, sql: &str, params: impl Params) -> R<()> {
        self.conn.prepare_cached(sql)?.execute(params)?;
        Ok(())
    }

    /// Runs a statement that returns no rows; returns whether it changed
    /// one.
    fn changed(&self, sql: &str, params: impl Params) -> R<bool> {
        Ok(self.conn.prepare_cached(sql)?.execute(params)? == 1)
    }

    /// Runs a query and reads each row it returns with `map`.
    fn rows<T>(
        &self,
        sql: &str,
        params: impl Params,
        map: impl FnMut(&Row<'_>) -> R<T>,
    ) -> R<Vec<T>> {
        self.conn
            .prepare_cached(sql)?
            .query_map(params, map)?
            .collect()
    }

    /// Runs a query of at most one row and reads it with `map`.
    fn opt<T>(
        &self,
        sql: &str,
        params: impl Params,
        map: impl FnOnce(&Row<'_>) -> R<T>,
    ) -> R<Option<T>> {
        self.conn
            .prepare_cached(sql)?
            .query_row(params, map)
            .optional()
    }

    /// Runs a query of exactly one row and reads it with `map`.
    fn one<T>(&self, sql: &str, params: impl Params, map: impl FnOnce(&Row<'_>) -> R<T>) -> R<T> {
        self.conn.prepare_cached(sql)?.query_row(params, map)
    }

    /// A run's attempts, in order.
    fn attempts(&self, run_id: &str) -> R<Vec<AttemptRow>> {
        self.rows(
            "SELECT seq, step, kind, attempt, started, finished, exit_code, signal, outcome
             FROM attempts WHERE run_id = ?1 ORDER BY seq",
            [run_id],
            |r| {
                Ok(AttemptRow {
                    seq: r.get(0)?,
                    step: r.get(1)?,
                    kind: rows::word(r, 2)?,
                    attempt: r.get(3)?,
                    started: rows::time(r, 4)?,
                    finished: rows::time(r, 5)?,
                    exit_code: r.get(6)?,
                    signal: r.get(7)?,
                    outcome: rows::word(r, 8)?,
                })
            },
        )
    }

    /// Adds `n` to the job's count of `kind` and `word`.
    fn add(&self, job: &str, kind: &str, word: &str, n: i64) -> R<()> {
        if n == 0 {
            return Ok(());
        }
        self.run(
            "INSERT INTO tallies (job, kind, word, count) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (job, kind, word) DO UPDATE SET count = count + excluded.count",
            params![job, kind, word, n],
        )
    }
}

impl Statements for Sql<'_> {
    type Error = rusqlite::Error;

    // The `jobs` table: one row per job, with the high-water marks the
    // scheduler reads before it decides (the last occurrence decided and
    // started) and the counters status shows.
    //
    // Every change is one SQL statement that computes the new value from the
    // row as it is inside the write transaction (`MAX`, `+ 1`), never a value
    // read earlier into Rust, so writers in other processes never undo each
    // other. `MAX(COALESCE(a, b), COALESCE(b, a))` is the larger of two values
    // either of which may be NULL (SQLite's `MAX` is NULL when any argument is).

    async fn see_jobs(&self, jobs: &[&str], now: Timestamp) -> R<()> {
        let mut stmt = self.conn.prepare_cached(
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
    async fn job_begun(&self, run: &NewRun) -> R<()> {
        self.run(
            "INSERT INTO jobs
               (job, first_seen, last_decided, last_started, last_attempt, last_run_id)
             VALUES (?1, ?2, ?3, ?3, ?2, ?4)
             ON CONFLICT (job) DO UPDATE SET
               last_run_id = CASE WHEN last_attempt IS NULL OR ?2 >= last_attempt
                                  THEN ?4 ELSE last_run_id END,
               last_attempt = MAX(COALESCE(last_attempt, ?2), ?2),
               last_decided = MAX(COALESCE(last_decided, ?3), COALESCE(?3, last_decided)),
               last_started = MAX(COALESCE(last_started, ?3), COALESCE(?3, last_started))",
            params![
                run.job,
                rows::micros(run.started),
                run.occurrence,
                run.run_id
            ],
        )
    }
    /// Counts a finished run: its time as the last success or failure, and the
    /// failure count reset or incremented; a run that is neither
    /// ([`Effect::Neutral`]: `interrupted`) moves nothing.
    async fn job_finished(&self, f: &Finished) -> R<()> {
        let effect = Effect::of_run(f.verdict, f.success);
        self.run(
            "INSERT INTO jobs
               (job, first_seen, last_success, last_failure, consecutive_failures)
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
            params![
                f.job,
                rows::micros(f.finished),
                effect.success(),
                effect.failure()
            ],
        )
    }
    /// Whether the job's last decided occurrence is at or after `occurrence`:
    /// it was decided already, by another process or an earlier call. Read
    /// inside the write transaction that then decides, so the answer holds
    /// until that transaction commits.
    async fn decided_through(&self, job: &str, occurrence: i64) -> R<bool> {
        let moved = self.opt(
            "SELECT last_decided >= ?2 FROM jobs WHERE job = ?1",
            params![job, occurrence],
            |r| r.get::<_, Option<bool>>(0),
        )?;
        Ok(moved.flatten().unwrap_or(false))
    }
    async fn decided(&self, job: &str, occurrence: i64, now: Timestamp) -> R<()> {
        self.run(
            "INSERT INTO jobs (job, first_seen, last_decided) VALUES (?1, ?2, ?3)
             ON CONFLICT (job) DO UPDATE SET
               last_decided = MAX(COALESCE(last_decided, ?3), ?3)",
            params![job, rows::micros(now), occurrence],
        )
    }
    /// This host's own store: its clock is the host's.
    async fn server_clock(&self) -> R<Option<Timestamp>> {
        Ok(None)
    }
    async fn jobs(&self) -> R<Vec<JobState>> {
        self.rows(
            &format!("SELECT {JOB_COLUMNS} FROM jobs ORDER BY job"),
            [],
            rows::job,
        )
    }
    async fn job(&self, job: &str) -> R<Option<JobState>> {
        self.opt(
            &format!("SELECT {JOB_COLUMNS} FROM jobs WHERE job = ?1"),
            [job],
            rows::job,
        )
    }

    // The `occurrences` table: at most one decision per occurrence of a job
    // that runs or waits (`started`, `queued`, `coalesced`, `claimed`).
    //
    // Its primary key `(job, occurrence)` is what makes "an occurrence is
    // decided once" hold across processes: a decision is an
    // `INSERT … ON CONFLICT DO NOTHING`, and the one insert that changed a row
    // is the one that decided. Every other writer learns that it lost from the
    // change count, inside the same transaction, without a read before the
    // write that another process could invalidate. The one decision that may
    // change is `queued`, into `started`, by an upsert whose update only
    // matches a queued row: of many processes starting it, one changes it.
    //
    // Occurrences that will not run are not here: they are ranges in the
    // `missed` table. The queue's statements have their own section below.

    /// Records a decision unless the occurrence has one. Returns whether this
    /// call recorded it.
    async fn insert_decision(&self, e: &NewDecision<'_>) -> R<bool> {
        self.changed(
            "INSERT INTO occurrences
               (job, occurrence, decision, run_id, decided, detail, joined)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (job, occurrence) DO NOTHING",
            params![
                e.job,
                e.occurrence,
                e.decision.as_str(),
                None::<&str>,
                rows::micros(e.decided),
                e.detail,
                e.joined
            ],
        )
    }
    /// Records the occurrence of a scheduled run as `started` by it: a new row
    /// when the occurrence has none, or its `queued` row turned into `started`
    /// (keeping its count of coalesced occurrences). Any other decision is left
    /// as it is (the transaction reads which first).
    ///
    /// One statement: the update's `WHERE` is evaluated on the row as it is
    /// under this transaction's write lock, so of many processes starting the
    /// same queued occurrence, the first changes it and the others find it
    /// `started` and change nothing.
    async fn start_decision(&self, run: &NewRun, occurrence: i64) -> R<()> {
        self.run(
            "INSERT INTO occurrences (job, occurrence, decision, run_id, decided)
             VALUES (?1, ?2, 'started', ?3, ?4)
             ON CONFLICT (job, occurrence) DO UPDATE SET
               decision = 'started',
               run_id = excluded.run_id,
               decided = excluded.decided
             WHERE occurrences.decision = 'queued'",
            params![run.job, occurrence, run.run_id, rows::micros(run.started)],
        )
    }
    async fn claim_queued(&self, e: &NewDecision<'_>) -> R<bool> {
        self.changed(
            "UPDATE occurrences SET decision = ?3, detail = ?4, decided = ?5
             WHERE job = ?1 AND occurrence = ?2 AND decision = 'queued'",
            params![
                e.job,
                e.occurrence,
                e.decision.as_str(),
                e.detail,
                rows::micros(e.decided)
            ],
        )
    }
    async fn decision(&self, job: &str, occurrence: i64) -> R<Option<DecisionRow>> {
        self.opt(
            &format!(
                "SELECT {DECISION_COLUMNS} FROM occurrences WHERE job = ?1 AND occurrence = ?2"
            ),
            params![job, occurrence],
            rows::decision,
        )
    }
    /// Deletes the job's decisions made before its oldest remaining run
    /// started, except its newest decision, which always stays (it is the
    /// latest word on the job's schedule), and its `queued` ones, which are
    /// work still to do however long they have waited.
    async fn prune_decisions(&self, job: &str) -> R<()> {
        self.run(
            "DELETE FROM occurrences
             WHERE job = ?1
               AND decision <> 'queued'
               AND decided < (SELECT MIN(started) FROM runs WHERE job = ?1)
               AND occurrence < (SELECT MAX(occurrence) FROM occurrences WHERE job = ?1)",
            [job],
        )
    }

    // The `runs` and `attempts` tables: a job's history, one row per run and
    // one per attempt of a step or check within it.
    //
    // `runs.run_id` is the key callers hold; the index on `(job, started DESC)`
    // serves every per-job read (history, the last run, the running one) and
    // the pruning. An attempt belongs to its run (`REFERENCES runs ON DELETE
    // CASCADE`), so pruning a run takes its attempts along and an attempt can
    // never outlive its run. `(run_id, seq)` keeps a retried write from
    // recording one attempt twice.

    /// Inserts a run's row. `fence` is the caller's fence, already checked to
    /// fit SQLite's integers.
    async fn insert_run(&self, run: &NewRun, fence: Option<i64>) -> R<()> {
        self.run(
            "INSERT INTO runs (run_id, job, occurrence, manual, fence, host, pid, started)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run.run_id,
                run.job,
                run.occurrence,
                run.occurrence.is_none(),
                fence,
                run.host,
                run.pid,
                rows::micros(run.started)
            ],
        )
    }
    /// Whether `run` is recorded already: its id, for its job and occurrence
    /// (its start, recorded by an earlier call whose answer was lost).
    async fn run_recorded(&self, run: &NewRun) -> R<bool> {
        self.opt(
            "SELECT 1 FROM runs WHERE run_id = ?1 AND job = ?2 AND occurrence IS ?3",
            params![run.run_id, run.job, run.occurrence],
            |_| Ok(()),
        )
        .map(|found| found.is_some())
    }
    async fn run_job(&self, run_id: &str) -> R<Option<String>> {
        self.opt("SELECT job FROM runs WHERE run_id = ?1", [run_id], |r| {
            r.get(0)
        })
    }
    async fn run_end(&self, run_id: &str) -> R<Option<(String, Timestamp, bool)>> {
        self.opt(
            "SELECT job, started, finished IS NOT NULL FROM runs WHERE run_id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, rows::time(r, 1)?, r.get(2)?)),
        )
    }
    async fn attempt_seqs(&self, run_id: &str) -> R<Vec<u32>> {
        self.rows(
            "SELECT seq FROM attempts WHERE run_id = ?1 ORDER BY seq",
            [run_id],
            |r| r.get(0),
        )
    }
    /// Inserts an attempt unless its `(run_id, seq)` is recorded already,
    /// or its run is not a run of its job.
    async fn insert_attempt(&self, a: &Attempt) -> R<()> {
        self.run(
            "INSERT INTO attempts
               (run_id, seq, step, kind, attempt, started, finished, exit_code, signal, outcome)
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10
             WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ?1 AND job = ?11)
             ON CONFLICT (run_id, seq) DO NOTHING",
            params![
                a.run_id,
                a.seq,
                a.step,
                a.kind.as_str(),
                a.attempt,
                rows::micros(a.started),
                rows::micros(a.finished),
                a.exit_code,
                a.signal,
                a.outcome.as_str(),
                a.job
            ],
        )
    }
    /// Marks a run of its job finished unless it is already.
    async fn finish_run(&self, f: &Finished) -> R<()> {
        self.run(
            "UPDATE runs SET finished = ?2, verdict = ?3, exit_code = ?4
             WHERE run_id = ?1 AND job = ?5 AND finished IS NULL",
            params![
                f.run_id,
                rows::micros(f.finished),
                f.verdict.as_str(),
                f.exit_code,
                f.job
            ],
        )
    }
    async fn prune_runs(&self, job: &str, keep: u32) -> R<()> {
        self.run(
            "DELETE FROM runs WHERE job = ?1 AND finished IS NOT NULL AND run_id NOT IN (
               SELECT run_id FROM runs WHERE job = ?1 AND finished IS NOT NULL
               ORDER BY finished DESC, run_id DESC LIMIT ?2)",
            params![job, keep],
        )
    }
    async fn history(&self, job: &str, limit: u32) -> R<Vec<RunRow>> {
        let mut runs: Vec<RunRow> = self.rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE job = ?1
                 ORDER BY started DESC, run_id DESC LIMIT ?2"
            ),
            params![job, limit],
            rows::run,
        )?;
        for run in &mut runs {
            run.attempts = self.attempts(&run.run_id)?;
        }
        Ok(runs)
    }
    async fn running(&self, job: &str) -> R<Option<RunRow>> {
        let run = self.opt(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE job = ?1 AND finished IS NULL
                 ORDER BY started DESC, run_id DESC LIMIT 1"
            ),
            [job],
            rows::run,
        )?;
        run.map(|mut run| {
            run.attempts = self.attempts(&run.run_id)?;
            Ok(run)
        })
        .transpose()
    }
    async fn unfinished(&self, job: &str) -> R<Vec<RunRow>> {
        self.rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE job = ?1 AND finished IS NULL
                 ORDER BY started, run_id"
            ),
            [job],
            rows::run,
        )
    }

    async fn unfinished_of_others(&self, known: &[String]) -> R<Vec<RunRow>> {
        let marks = vec!["?"; known.len()].join(", ");
        self.rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM runs WHERE finished IS NULL AND job NOT IN ({marks})
                 ORDER BY started, run_id"
            ),
            rusqlite::params_from_iter(known),
            rows::run,
        )
    }

    // The `replacements` table: requests that a run in flight stop for a
    // later run of its job (`overlap = "replace"`), keyed by `(run_id,
    // job)`, so that a request meant for one job never names another's run.
    async fn insert_replacement(&self, r: &Replacement) -> R<bool> {
        self.changed(
            "INSERT INTO replacements (run_id, job, by_occurrence, asked)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (run_id, job) DO NOTHING",
            params![r.run_id, r.job, r.by, rows::micros(r.asked)],
        )
    }
    async fn replacement(&self, run_id: &str, job: &str) -> R<Option<Replacement>> {
        self.opt(
            "SELECT run_id, job, by_occurrence, asked FROM replacements
             WHERE run_id = ?1 AND job = ?2",
            [run_id, job],
            |r| {
                Ok(Replacement {
                    run_id: r.get(0)?,
                    job: r.get(1)?,
                    by: r.get(2)?,
                    asked: rows::time(r, 3)?,
                })
            },
        )
    }
    async fn delete_replacement(&self, r: &Replacement) -> R<bool> {
        self.changed(
            "DELETE FROM replacements WHERE run_id = ?1 AND job = ?2 AND asked = ?3",
            params![r.run_id, r.job, rows::micros(r.asked)],
        )
    }
    async fn prune_replacements(&self, run_id: &str, job: &str, before: Timestamp) -> R<()> {
        self.run(
            "DELETE FROM replacements WHERE run_id = ?1 OR (job = ?2 AND asked < ?3)",
            params![run_id, job, rows::micros(before)],
        )
    }

    // The `steps` table: per step (or check) of a job, when it was last
    // attempted, last succeeded and last failed, and how many attempts in a row
    // have failed. Keyed by `(job, step)`, so it outlives the runs that history
    // pruning removes.
    //
    // As in `jobs`, counters change only through SQL expressions evaluated on
    // the row inside the write transaction.

    async fn step_attempted(&self, a: &Attempt) -> R<()> {
        let effect = Effect::of(a.outcome);
        self.run(
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
            params![
                a.job,
                a.step,
                a.kind.as_str(),
                rows::micros(a.started),
                effect.success(),
                effect.failure(),
                rows::micros(a.finished)
            ],
        )
    }
    async fn steps(&self, job: &str) -> R<Vec<StepState>> {
        self.rows(
            "SELECT job, step, kind, last_attempt, last_success, last_failure, consecutive_failures
             FROM steps WHERE job = ?1 ORDER BY step",
            [job],
            rows::step,
        )
    }

    // The `alerts` table: every alert raised, as delivered, numbered in the
    // order recorded (`AUTOINCREMENT`, so a number is never reused even after
    // rows are deleted). The index on `(job, id DESC)` serves a job's newest
    // alerts; the global newest come from the key itself.

    async fn insert_alert(&self, a: &NewAlert) -> R<()> {
        self.run(
            "INSERT INTO alerts (time, job, kind, run_id, occurrence, message, json)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                rows::micros(a.time),
                a.job,
                a.kind.as_str(),
                a.run_id,
                a.occurrence,
                a.message,
                a.json
            ],
        )
    }
    async fn recent_alerts(&self, job: Option<&str>, limit: u32) -> R<Vec<AlertRow>> {
        match job {
            Some(job) => self.rows(
                &format!(
                    "SELECT {ALERT_COLUMNS} FROM alerts WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
                ),
                params![job, limit],
                rows::alert,
            ),
            None => self.rows(
                &format!("SELECT {ALERT_COLUMNS} FROM alerts ORDER BY id DESC LIMIT ?1"),
                [limit],
                rows::alert,
            ),
        }
    }

    // Missed ranges: the `missed` table, one row per decision that a range of
    // a job's occurrences will not run, and `Records::miss`, the one call that
    // writes it.
    //
    // A decision covers `first..=last` with `count` occurrences in it (a year
    // of downtime of a per-second job is one row, not millions), and is
    // written in the same `BEGIN IMMEDIATE` transaction that raises
    // `jobs.last_decided`, only while that mark is still below the range: of
    // two processes planning the same outage, the first records it and the
    // other is told the mark moved (`Missed::Moved`), plans again from it and
    // finds nothing left. So a range is never recorded twice, nor overlapping
    // another decision, and nothing here is read into Rust and written back
    // outside that transaction. Rows are numbered by `AUTOINCREMENT`, so a
    // job's newest range has the largest id (the index `(job, id DESC)` finds
    // it), and a number is never reused after pruning.

    /// Extends the job's newest range by `m` when it has the same reason and
    /// ends at the job's last decided occurrence. One statement, evaluated on
    /// the rows as they are under the write lock. Returns whether it did.
    async fn extend_missed(&self, m: &Miss<'_>, count: i64, now: Timestamp) -> R<bool> {
        self.changed(
            "UPDATE missed SET
               count = count + ?3,
               last = ?4,
               at_least = at_least OR ?5,
               updated = ?6
             WHERE id = (SELECT MAX(id) FROM missed WHERE job = ?1)
               AND reason = ?2
               AND last = (SELECT last_decided FROM jobs WHERE job = ?1)",
            params![
                m.job,
                m.reason.as_str(),
                count,
                m.last,
                m.at_least,
                rows::micros(now)
            ],
        )
    }
    async fn insert_missed(
        &self,
        m: &Miss<'_>,
        count: i64,
        detail: Option<&str>,
        now: Timestamp,
    ) -> R<()> {
        self.run(
            "INSERT INTO missed
               (job, reason, first, last, count, at_least, decided, updated, detail)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
            params![
                m.job,
                m.reason.as_str(),
                m.first,
                m.last,
                count,
                m.at_least,
                rows::micros(now),
                detail
            ],
        )
    }
    async fn missed(&self, job: &str, limit: u32) -> R<Vec<MissedRow>> {
        self.rows(
            &format!(
                "SELECT {MISSED_COLUMNS} FROM missed WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
            ),
            params![job, limit],
            rows::missed,
        )
    }
    async fn missed_at(&self, job: &str, occurrence: i64) -> R<Option<MissedRow>> {
        self.opt(
            &format!(
                "SELECT {MISSED_COLUMNS} FROM missed
                 WHERE job = ?1 AND first <= ?2 AND last >= ?2 ORDER BY id DESC LIMIT 1"
            ),
            params![job, occurrence],
            rows::missed,
        )
    }
    async fn missed_counts(&self, job: &str) -> R<Vec<(MissReason, u64, bool)>> {
        self.rows(
            "SELECT reason, SUM(count), MAX(at_least) FROM missed
             WHERE job = ?1 GROUP BY reason ORDER BY reason",
            [job],
            |r| Ok((rows::word(r, 0)?, rows::unsigned(r, 1)?, r.get(2)?)),
        )
    }
    async fn prune_missed(&self, job: &str) -> R<()> {
        self.run(
            "DELETE FROM missed WHERE job = ?1 AND id NOT IN (
               SELECT id FROM missed WHERE job = ?1 ORDER BY id DESC LIMIT ?2)",
            params![job, MISSED_KEEP],
        )
    }

    // Pauses: the `pauses` table, one row per pause of a job, kept after it
    // ends, so that an occurrence that fell inside a pause is still judged
    // `paused` by a tick that plans it later.
    //
    // A pause is in force from `since` until the earlier of `until` (it lapses
    // on its own) and `ended` (it was resumed, or replaced by a newer pause);
    // `PauseRow::covers` is that rule, and the SQL below states the same one.
    // At most one pause of a job is in force: `Records::pause` ends the one in
    // force and records the new one in one `BEGIN IMMEDIATE` transaction, and
    // `Records::resume` ends it by an update that only matches a pause in
    // force. Rows are numbered by `AUTOINCREMENT` (a job's newest pause has
    // the largest id; the index `(job, id DESC)` finds it). Pruning never
    // removes a pause that is not over.

    /// Ends, at `now`, the job's pauses in force at `now` (at most one, as the
    /// ledger writes them). Returns them as ended.
    async fn end_pauses(&self, job: &str, now: Timestamp) -> R<Vec<PauseRow>> {
        self.rows(
            &format!(
                "UPDATE pauses SET ended = ?2
                 WHERE job = ?1 AND {IN_FORCE} RETURNING {PAUSE_COLUMNS}"
            ),
            params![job, rows::micros(now)],
            rows::pause,
        )
    }
    async fn insert_pause(
        &self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> R<PauseRow> {
        self.one(
            &format!(
                "INSERT INTO pauses (job, since, until, reason, who)
                 VALUES (?1, ?2, ?3, ?4, ?5) RETURNING {PAUSE_COLUMNS}"
            ),
            params![job, rows::micros(now), until.map(rows::micros), reason, who],
            rows::pause,
        )
    }
    async fn pauses(&self, job: &str, limit: u32) -> R<Vec<PauseRow>> {
        self.rows(
            &format!("SELECT {PAUSE_COLUMNS} FROM pauses WHERE job = ?1 ORDER BY id DESC LIMIT ?2"),
            params![job, limit],
            rows::pause,
        )
    }
    async fn declare(&self, d: &Declaration) -> R<()> {
        self.run(
            "INSERT INTO declarations (job, config, by, declared) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (job) DO UPDATE SET
               config = excluded.config, by = excluded.by, declared = excluded.declared",
            params![d.job, d.config, d.by, rows::micros(d.declared)],
        )
    }
    async fn declarations(&self) -> R<Vec<Declaration>> {
        self.rows(
            "SELECT job, config, by, declared FROM declarations ORDER BY job",
            params![],
            rows::declaration,
        )
    }
    /// Deletes the job's pauses that are over at `now` (ended, or lapsed),
    /// except its newest `PAUSE_KEEP`. A pause in force, or one yet to begin, stays
    /// however old.
    async fn prune_pauses(&self, job: &str, now: Timestamp) -> R<()> {
        self.run(
            "DELETE FROM pauses
             WHERE job = ?1
               AND ((ended IS NOT NULL AND ended <= ?2) OR (until IS NOT NULL AND until <= ?2))
               AND id NOT IN (SELECT id FROM pauses WHERE job = ?1 ORDER BY id DESC LIMIT ?3)",
            params![job, rows::micros(now), PAUSE_KEEP],
        )
    }

    // The queue: occurrences that wait for their job's lock as `queued`
    // decisions in the `occurrences` table, oldest first, and the later ones
    // that coalesced into one waiting.
    //
    // An occurrence enters the queue by `Records::enqueue`, in the same
    // `BEGIN IMMEDIATE` transaction that raises `jobs.last_decided`, and only
    // while that mark is below it: so it is queued once, and never after
    // another process decided it. It leaves the queue by
    // `Records::begin_run`, whose upsert only turns a row that is still
    // `queued` into `started`: of many processes draining the same queue, one
    // starts each occurrence. Queued rows are never pruned. A `coalesced` row
    // names the occurrence it joined and never runs itself; the count on the
    // row it joined rises in the transaction that records it, as an SQL
    // expression.

    async fn newest_queued(&self, job: &str) -> R<Option<i64>> {
        self.one(
            "SELECT MAX(occurrence) FROM occurrences WHERE job = ?1 AND decision = 'queued'",
            [job],
            |r| r.get(0),
        )
    }
    async fn oldest_queued(&self, job: &str) -> R<Option<i64>> {
        self.one(
            "SELECT MIN(occurrence) FROM occurrences WHERE job = ?1 AND decision = 'queued'",
            [job],
            |r| r.get(0),
        )
    }
    async fn add_coalesced(&self, job: &str, into: i64, joined: i64) -> R<()> {
        self.run(
            "UPDATE occurrences SET coalesced = coalesced + ?3
             WHERE job = ?1 AND occurrence = ?2",
            params![job, into, joined],
        )
    }
    async fn queued_jobs(&self) -> R<Vec<String>> {
        self.rows(
            "SELECT DISTINCT job FROM occurrences WHERE decision = 'queued' ORDER BY job",
            [],
            |r| r.get(0),
        )
    }
    async fn queued(&self, job: &str) -> R<Vec<DecisionRow>> {
        self.rows(
            &format!(
                "SELECT {} FROM occurrences
                 WHERE job = ?1 AND decision = 'queued' ORDER BY occurrence",
                DECISION_COLUMNS
            ),
            [job],
            rows::decision,
        )
    }

    // Cumulative tallies: the `tallies` and `durations` tables, counts per job
    // that pruning never touches, for the metrics; and `Records::tallies`,
    // which reads them all.
    //
    // Every tally rises in the transaction that records the event it counts,
    // as an SQL expression (`count + n`), never a value read into Rust and
    // written back, so two writers never undo each other and a tally never
    // counts an event the ledger did not record, nor misses one it did:
    //
    // - `verdict`, by verdict word: a run finished (`Records::finish_run`),
    //   once per run (finishing it again counts nothing);
    // - `lease-lost`: a run finished with the verdict `lease-lost` (its lease
    //   was lost while it ran, and it was stopped);
    // - `missed`, by reason: the occurrences of a range recorded or extended
    //   by `Records::miss` (its `count`, a floor when `at_least`), less those
    //   of a range withdrawn because a clock ahead recorded it
    //   (`Records::withdraw_ahead`: the one way a tally falls);
    // - `skipped`, by reason: occurrences that had a decision other than a
    //   missed range and still never ran themselves: `coalesced` (they joined
    //   an occurrence already waiting in the queue, which runs for them, in
    //   `Records::enqueue`) and `claimed` (the lock file says they started,
    //   under a ledger lost since, in `Records::claimed`). A skipped
    //   occurrence was served or had run; a missed one was not, and did not;
    // - the run-duration histogram: a finished run's time from its start to
    //   its end, in the bucket of the first of `BOUNDS` it does not exceed
    //   (or `+Inf`). A run whose row the ledger lost (it was recovered since
    //   the run began) counts its verdict and no duration.
    //
    // The last success and failure are the job's row's (`jobs.last_success`,
    // `jobs.last_failure`), which pruning never touched either.

    async fn tally_missed(&self, job: &str, reason: MissReason, n: i64) -> R<()> {
        self.add(job, MISSED, reason.as_str(), n)
    }
    async fn tally_skipped(&self, job: &str, reason: SkipReason, n: i64) -> R<()> {
        self.add(job, SKIPPED, reason.as_str(), n)
    }
    /// Counts a finished run: its verdict, a lost lease, and, when the ledger
    /// has the run's start (`started`), its duration. Called once per run, in
    /// the transaction that finishes it.
    ///
    /// (The bucket is [`bucket`]'s, shared with every ledger.)
    async fn tally_finished(&self, f: &Finished, started: Option<Timestamp>) -> R<()> {
        self.add(&f.job, VERDICT, f.verdict.as_str(), 1)?;
        if f.verdict == RunVerdict::LeaseLost {
            self.add(&f.job, LEASE_LOST, "", 1)?;
        }
        let Some(started) = started else {
            return Ok(());
        };
        let (us, bound) = bucket(started, f.finished);
        self.run(
            "INSERT INTO durations (job, bound, count, sum_us) VALUES (?1, ?2, 1, ?3)
             ON CONFLICT (job, bound) DO UPDATE SET
               count = count + 1,
               sum_us = sum_us + excluded.sum_us",
            params![f.job, bound, us],
        )
    }
    async fn tallies(&self) -> R<Vec<JobTallies>> {
        let mut jobs: BTreeMap<String, JobTallies> = BTreeMap::new();
        self.rows(
            "SELECT job, last_success, last_failure FROM jobs ORDER BY job",
            [],
            |r| {
                let t = entry(&mut jobs, r.get(0)?);
                t.last_success = rows::time_opt(r, 1)?;
                t.last_failure = rows::time_opt(r, 2)?;
                Ok(())
            },
        )?;
        self.rows("SELECT job, kind, word, count FROM tallies", [], |r| {
            let t = entry(&mut jobs, r.get(0)?);
            let kind: String = r.get(1)?;
            let n = rows::unsigned(r, 3)?;
            match kind.as_str() {
                VERDICT => *t.runs.entry(rows::word(r, 2)?).or_default() += n,
                MISSED => *t.missed.entry(rows::word(r, 2)?).or_default() += n,
                WITHDRAWN => *t.withdrawn.entry(rows::word(r, 2)?).or_default() += n,
                SKIPPED => *t.skipped.entry(rows::word(r, 2)?).or_default() += n,
                LEASE_LOST => t.lease_losses += n,
                _ => {} // A kind a later version counts: not this build's to show.
            }
            Ok(())
        })?;
        self.rows("SELECT job, bound, count, sum_us FROM durations", [], |r| {
            let t = entry(&mut jobs, r.get(0)?);
            let bound: i64 = r.get(1)?;
            let i = BOUNDS_US
                .iter()
                .position(|&b| bound <= b)
                .unwrap_or(BOUNDS_US.len() - 1);
            t.durations.buckets[i] += rows::unsigned(r, 2)?;
            t.durations.sum += Duration::from_micros(rows::unsigned(r, 3)?);
            Ok(())
        })?;
        Ok(jobs.into_values().collect())
    }

    // Watermarks: the `watermarks` table, each value a job's runs settled, in
    // order. The newest is the job's watermark; the older ones say how it got
    // there (which run, under which fence).
    //
    // The key `(job, seq)` numbers a job's values 1, 2, …: `Records::settle`
    // computes the next number in SQL, in the `BEGIN IMMEDIATE` transaction
    // that inserts it, so two settles never take the same number and none is
    // lost. The ledger does not judge who may settle: the caller does that
    // under the lock file's mutex (the token must still be the lease's), and
    // writes here before it lets the mutex go.

    async fn watermark(&self, job: &str) -> R<Option<WatermarkRow>> {
        self.opt(
            &format!(
                "SELECT {WATERMARK_COLUMNS} FROM watermarks
                 WHERE job = ?1 ORDER BY seq DESC LIMIT 1"
            ),
            [job],
            rows::watermark,
        )
    }
    async fn insert_watermark(
        &self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<i64>,
        now: Timestamp,
    ) -> R<WatermarkRow> {
        self.one(
            &format!(
                "INSERT INTO watermarks (job, seq, value, run_id, fence, settled)
                 SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5
                 FROM watermarks WHERE job = ?1
                 RETURNING {WATERMARK_COLUMNS}"
            ),
            params![job, value, run_id, fence, rows::micros(now)],
            rows::watermark,
        )
    }
    async fn watermarks(&self, job: &str, limit: u32) -> R<Vec<WatermarkRow>> {
        self.rows(
            &format!(
                "SELECT {WATERMARK_COLUMNS} FROM watermarks
                 WHERE job = ?1 ORDER BY seq DESC LIMIT ?2"
            ),
            params![job, limit],
            rows::watermark,
        )
    }
    async fn prune_watermarks(&self, job: &str) -> R<()> {
        self.run(
            "DELETE FROM watermarks WHERE job = ?1 AND seq NOT IN (
               SELECT seq FROM watermarks WHERE job = ?1 ORDER BY seq DESC LIMIT ?2)",
            params![job, WATERMARK_KEEP],
        )
    }
}

fn entry(jobs: &mut BTreeMap<String, JobTallies>, job: String) -> &mut JobTallies {
    jobs.entry(job.clone()).or_insert_with(|| JobTallies {
        job,
        ..JobTallies::default()
    })
}
