//! The ledger's single statements in PostgreSQL ([`Pg`]), table by table,
//! as `baton_ledger`'s are in SQLite, run on the transaction the ledger's
//! thread holds open (`session`), with times turned into the microseconds
//! the tables keep; what a row reads into is `rows`'. They never decide: the
//! transactions in `baton-store` do, from what these return.

use std::collections::BTreeMap;
use std::time::Duration;

use baton_store::ledger::{
    AlertRow, Attempt, AttemptRow, BOUNDS_US, DecisionRow, Declaration, Effect, Finished, JobState,
    JobTallies, Miss, MissedRow, NewAlert, NewDecision, NewRun, PauseRow, Replacement, RunRow,
    Statements, StepState, WatermarkRow, bucket,
};
use baton_store::words::{MissReason, RunVerdict, SkipReason};
use jiff::Timestamp;
use tokio_postgres::Row;

use super::fail::Fail;
use super::rows::{
    self, ALERT_COLUMNS, DECISION_COLUMNS, JOB_COLUMNS, MISSED_COLUMNS, PAUSE_COLUMNS, RUN_COLUMNS,
    WATERMARK_COLUMNS, micros,
};
use super::tx::Tx;
use crate::typed::{Param, typed};

/// How many missed ranges pruning keeps per job (the SQLite ledger's).
const MISSED_KEEP: i64 = 1_000;
/// How many pauses pruning keeps per job, besides any not over (the SQLite
/// ledger's).
const PAUSE_KEEP: i64 = 100;
/// How many values pruning keeps per job (the SQLite ledger's).
const WATERMARK_KEEP: i64 = 100;

/// Whether the pause of the row is in force at `$2`.
const IN_FORCE: &str = "since <= $2::bigint AND (until IS NULL OR $2::bigint < until) \
                        AND (ended IS NULL OR $2::bigint < ended)";

/// The kinds of counts in the `baton.tallies` table.
const VERDICT: &str = "verdict";
const MISSED: &str = "missed";
/// Missed occurrences taken back (`missed-withdrawn`); only a store that
/// decides by its hosts' clocks counts them, but every store reads them.
const WITHDRAWN: &str = "withdrawn";
const SKIPPED: &str = "skipped";
const LEASE_LOST: &str = "lease-lost";

/// The statements of one PostgreSQL transaction.
pub struct Pg<'t> {
    pub(crate) tx: &'t Tx<'t>,
}

type R<T> = Result<T, Fail>;

/// A statement's parameters, in the order of its `$n`.
type Params<'a> = [&'a dyn Param];

impl Pg<'_> {
    /// Runs a statement that returns no rows and whose count nobody
    /// reads: held back, and sent with the transaction's next statement or
    /// its commit ([`Tx`]), which fail when it failed.
    #[allow(clippy::unused_async)] // One signature for every statement.
    async fn run(&self, sql: &str, params: &Params<'_>) -> R<()> {
        self.tx.hold(sql, params);
        Ok(())
    }

    /// Runs a statement that returns no rows; returns whether it changed
    /// one.
    async fn changed(&self, sql: &str, params: &Params<'_>) -> R<bool> {
        let params = typed(params);
        let client = self.tx.client();
        Ok(self.tx.answer(client.execute_typed(sql, &params)).await? == 1)
    }

    /// Runs a query and reads each row it returns with `map`.
    async fn rows<T>(
        &self,
        sql: &str,
        params: &Params<'_>,
        map: impl Fn(&Row) -> R<T>,
    ) -> R<Vec<T>> {
        let params = typed(params);
        let client = self.tx.client();
        self.tx
            .ask(sql, client.query_typed(sql, &params))
            .await?
            .iter()
            .map(map)
            .collect()
    }

    /// Runs a query of at most one row and reads it with `map`.
    async fn opt<T>(
        &self,
        sql: &str,
        params: &Params<'_>,
        map: impl Fn(&Row) -> R<T>,
    ) -> R<Option<T>> {
        let params = typed(params);
        let client = self.tx.client();
        self.tx
            .ask(sql, client.query_typed_opt(sql, &params))
            .await?
            .as_ref()
            .map(map)
            .transpose()
    }

    /// Runs a query of exactly one row and reads it with `map`.
    async fn one<T>(&self, sql: &str, params: &Params<'_>, map: impl Fn(&Row) -> R<T>) -> R<T> {
        let params = typed(params);
        let client = self.tx.client();
        map(&self
            .tx
            .ask(sql, client.query_typed_one(sql, &params))
            .await?)
    }

    /// The attempts of the runs `runs` selects (a query of `run_id`s, with
    /// `params`), in order, each with its run's id. Sent with the query of
    /// the runs themselves, it reads what that query reads: one snapshot in
    /// a read, the write lock's rows in a write.
    async fn attempts_of(&self, runs: &str, params: &Params<'_>) -> R<Vec<(String, AttemptRow)>> {
        self.rows(
            &format!(
                "SELECT seq, step, kind, attempt, started, finished, exit_code, signal, outcome,
                        run_id
                 FROM baton.attempts WHERE run_id IN ({runs}) ORDER BY run_id, seq"
            ),
            params,
            |r| {
                let attempt = AttemptRow {
                    seq: rows::int(r, 0)?,
                    step: rows::get(r, 1)?,
                    kind: rows::word(r, 2)?,
                    attempt: rows::int(r, 3)?,
                    started: rows::time(r, 4)?,
                    finished: rows::time(r, 5)?,
                    exit_code: rows::int_opt(r, 6)?,
                    signal: rows::int_opt(r, 7)?,
                    outcome: rows::word(r, 8)?,
                };
                Ok((rows::get(r, 9)?, attempt))
            },
        )
        .await
    }

    /// The runs `select` reads (with `params`; `select` names its columns
    /// `{RUN_COLUMNS}`), each with its attempts: the runs, and the
    /// attempts of the runs the same query selects, sent together, in one
    /// round trip.
    async fn runs_with_attempts(&self, select: &str, params: &Params<'_>) -> R<Vec<RunRow>> {
        let runs = select.replace("{RUN_COLUMNS}", RUN_COLUMNS);
        let ids = select.replace("{RUN_COLUMNS}", "run_id");
        let (mut runs, attempts) = tokio::try_join!(
            self.rows(&runs, params, rows::run),
            self.attempts_of(&ids, params)
        )?;
        for (run_id, attempt) in attempts {
            if let Some(run) = runs.iter_mut().find(|r| r.run_id == run_id) {
                run.attempts.push(attempt);
            }
        }
        Ok(runs)
    }

    /// Adds `n` to the job's count of `kind` and `word`.
    async fn add(&self, job: &str, kind: &str, word: &str, n: i64) -> R<()> {
        if n == 0 {
            return Ok(());
        }
        self.run(
            "INSERT INTO baton.tallies AS t (job, kind, word, count)
             VALUES ($1::text, $2::text, $3::text, $4::bigint)
             ON CONFLICT (job, kind, word) DO UPDATE SET count = t.count + excluded.count",
            &[&job, &kind, &word, &n],
        )
        .await
    }
}

impl Statements for Pg<'_> {
    type Error = Fail;

    // The `baton.jobs` table: one row per job, with the high-water marks the
    // scheduler reads before it decides and the counters status shows.
    //
    // Every change is one statement that computes the new value from the row
    // as it is under the write lock (`GREATEST`, `+ 1`), never a value read
    // earlier into Rust. `GREATEST(COALESCE(a, b), COALESCE(b, a))` is the
    // larger of two values either of which may be NULL, as SQLite's
    // `MAX(COALESCE(…))` is there.

    async fn see_jobs(&self, jobs: &[&str], now: Timestamp) -> R<()> {
        let now = micros(now);
        // One statement for every job, one round trip.
        self.run(
            "INSERT INTO baton.jobs (job, first_seen)
             SELECT j, $2::bigint FROM unnest($1::text[]) AS j
             ON CONFLICT (job) DO NOTHING",
            &[&jobs, &now],
        )
        .await
    }
    /// Marks a run as begun: the job's newest attempt (and its run id) when it
    /// is the newest, and for a scheduled run the occurrence as decided and
    /// started.
    async fn job_begun(&self, run: &NewRun) -> R<()> {
        self.run(
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
        .await
    }
    /// Counts a finished run: its time as the last success or failure, and the
    /// failure count reset or incremented; a run that is neither
    /// (`Effect::Neutral`: `interrupted`) moves nothing.
    async fn job_finished(&self, f: &Finished) -> R<()> {
        let effect = Effect::of_run(f.verdict, f.success);
        self.run(
            "INSERT INTO baton.jobs AS j
               (job, first_seen, last_success, last_failure, consecutive_failures)
             VALUES ($1::text, $2::bigint,
                     CASE WHEN $3::boolean THEN $2::bigint END,
                     CASE WHEN $4::boolean THEN $2::bigint END,
                     CASE WHEN $4::boolean THEN 1 ELSE 0 END)
             ON CONFLICT (job) DO UPDATE SET
               last_success = CASE WHEN $3::boolean
                                   THEN GREATEST(COALESCE(j.last_success, $2::bigint),
                                                 $2::bigint)
                                   ELSE j.last_success END,
               last_failure = CASE WHEN $4::boolean
                                   THEN GREATEST(COALESCE(j.last_failure, $2::bigint),
                                                 $2::bigint)
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
        .await
    }
    /// Whether the job's last decided occurrence is at or after `occurrence`.
    /// Read under the write lock, so the answer holds until the transaction
    /// that then decides commits.
    async fn decided_through(&self, job: &str, occurrence: i64) -> R<bool> {
        let moved = self
            .opt(
                "SELECT last_decided >= $2::bigint FROM baton.jobs WHERE job = $1::text",
                &[&job, &occurrence],
                |r| rows::get::<Option<bool>>(r, 0),
            )
            .await?;
        Ok(moved.flatten().unwrap_or(false))
    }
    async fn decided(&self, job: &str, occurrence: i64, now: Timestamp) -> R<()> {
        let now = micros(now);
        self.run(
            "INSERT INTO baton.jobs AS j (job, first_seen, last_decided)
             VALUES ($1::text, $2::bigint, $3::bigint)
             ON CONFLICT (job) DO UPDATE SET
               last_decided = GREATEST(COALESCE(j.last_decided, $3::bigint), $3::bigint)",
            &[&job, &now, &occurrence],
        )
        .await
    }
    /// The server's `clock_timestamp()`.
    async fn server_clock(&self) -> R<Option<Timestamp>> {
        self.one(
            "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
            &[],
            |r| rows::time(r, 0).map(Some),
        )
        .await
    }
    async fn jobs(&self) -> R<Vec<JobState>> {
        self.rows(
            &format!("SELECT {JOB_COLUMNS} FROM baton.jobs ORDER BY job"),
            &[],
            rows::job,
        )
        .await
    }
    async fn job(&self, job: &str) -> R<Option<JobState>> {
        self.opt(
            &format!("SELECT {JOB_COLUMNS} FROM baton.jobs WHERE job = $1::text"),
            &[&job],
            rows::job,
        )
        .await
    }

    // The `baton.occurrences` table: at most one decision per occurrence of a
    // job that runs or waits (`started`, `queued`, `coalesced`, `claimed`).
    //
    // The key `(job, occurrence)` is what makes "an occurrence is decided
    // once" hold: a decision is an `INSERT … ON CONFLICT DO NOTHING`, and the
    // one insert that changed a row decided. The one decision that may change
    // is `queued`, into `started`, by an upsert whose update only matches a
    // queued row. (Writers also hold the ledger's write lock, so the key is
    // never raced; it stays the rule the statements state.)

    /// Records a decision unless the occurrence has one. Returns whether this
    /// call recorded it.
    async fn insert_decision(&self, e: &NewDecision<'_>) -> R<bool> {
        self.changed(
            "INSERT INTO baton.occurrences
               (job, occurrence, decision, run_id, decided, detail, joined)
             VALUES ($1::text, $2::bigint, $3::text, NULL, $4::bigint, $5::text, $6::bigint)
             ON CONFLICT (job, occurrence) DO NOTHING",
            &[
                &e.job,
                &e.occurrence,
                &e.decision.as_str(),
                &rows::micros(e.decided),
                &e.detail,
                &e.joined,
            ],
        )
        .await
    }
    /// Records the occurrence of a scheduled run as `started` by it: a new row
    /// when the occurrence has none, or its `queued` row turned into `started`
    /// (keeping its count of coalesced occurrences). Any other decision is left
    /// as it is (the transaction reads which first).
    async fn start_decision(&self, run: &NewRun, occurrence: i64) -> R<()> {
        self.run(
            "INSERT INTO baton.occurrences AS o (job, occurrence, decision, run_id, decided)
             VALUES ($1::text, $2::bigint, 'started', $3::text, $4::bigint)
             ON CONFLICT (job, occurrence) DO UPDATE SET
               decision = 'started',
               run_id = excluded.run_id,
               decided = excluded.decided
             WHERE o.decision = 'queued'",
            &[
                &run.job,
                &occurrence,
                &run.run_id,
                &rows::micros(run.started),
            ],
        )
        .await
    }
    /// Turns a queued occurrence into `e.decision` (`claimed`). Returns whether
    /// it was queued.
    async fn claim_queued(&self, e: &NewDecision<'_>) -> R<bool> {
        self.changed(
            "UPDATE baton.occurrences SET decision = $3::text, detail = $4::text,
                                          decided = $5::bigint
             WHERE job = $1::text AND occurrence = $2::bigint AND decision = 'queued'",
            &[
                &e.job,
                &e.occurrence,
                &e.decision.as_str(),
                &e.detail,
                &rows::micros(e.decided),
            ],
        )
        .await
    }
    async fn decision(&self, job: &str, occurrence: i64) -> R<Option<DecisionRow>> {
        self.opt(
            &format!(
                "SELECT {DECISION_COLUMNS} FROM baton.occurrences
                 WHERE job = $1::text AND occurrence = $2::bigint"
            ),
            &[&job, &occurrence],
            rows::decision,
        )
        .await
    }
    /// Deletes the job's decisions made before its oldest remaining run
    /// started, except its newest decision and its `queued` ones.
    async fn prune_decisions(&self, job: &str) -> R<()> {
        self.run(
            "DELETE FROM baton.occurrences
             WHERE job = $1::text
               AND decision <> 'queued'
               AND decided < (SELECT MIN(started) FROM baton.runs WHERE job = $1::text)
               AND occurrence < (SELECT MAX(occurrence) FROM baton.occurrences
                                 WHERE job = $1::text)",
            &[&job],
        )
        .await
    }

    // The `baton.runs` and `baton.attempts` tables: a job's history, one row
    // per run and one per attempt of a step or check within it.
    //
    // An attempt belongs to its run (`REFERENCES … ON DELETE CASCADE`), so
    // pruning a run takes its attempts along; `(run_id, seq)` keeps a retried
    // write from recording one attempt twice.

    async fn insert_run(&self, run: &NewRun, fence: Option<i64>) -> R<()> {
        self.run(
            "INSERT INTO baton.runs
               (run_id, job, occurrence, manual, fence, host, pid, started)
             VALUES ($1::text, $2::text, $3::bigint, $4::boolean, $5::bigint, $6::text,
                     $7::bigint, $8::bigint)",
            &[
                &run.run_id,
                &run.job,
                &run.occurrence,
                &run.occurrence.is_none(),
                &fence,
                &run.host,
                &i64::from(run.pid),
                &rows::micros(run.started),
            ],
        )
        .await
    }
    /// Whether `run` is recorded already: its id, for its job and occurrence
    /// (its start, recorded by an earlier call whose answer was lost).
    async fn run_recorded(&self, run: &NewRun) -> R<bool> {
        let found = self
            .opt(
                "SELECT 1 FROM baton.runs WHERE run_id = $1::text AND job = $2::text
                   AND occurrence IS NOT DISTINCT FROM $3::bigint",
                &[&run.run_id, &run.job, &run.occurrence],
                |_| Ok(()),
            )
            .await?;
        Ok(found.is_some())
    }
    async fn run_job(&self, run_id: &str) -> R<Option<String>> {
        self.opt(
            "SELECT job FROM baton.runs WHERE run_id = $1::text",
            &[&run_id],
            |r| rows::get(r, 0),
        )
        .await
    }
    async fn run_end(&self, run_id: &str) -> R<Option<(String, Timestamp, bool)>> {
        self.opt(
            "SELECT job, started, finished IS NOT NULL FROM baton.runs WHERE run_id = $1::text",
            &[&run_id],
            |r| Ok((rows::get(r, 0)?, rows::time(r, 1)?, rows::get(r, 2)?)),
        )
        .await
    }
    async fn attempt_seqs(&self, run_id: &str) -> R<Vec<u32>> {
        self.rows(
            "SELECT seq FROM baton.attempts WHERE run_id = $1::text ORDER BY seq",
            &[&run_id],
            |r| rows::int(r, 0),
        )
        .await
    }
    /// Inserts an attempt unless its `(run_id, seq)` is recorded already,
    /// or its run is not a run of its job.
    async fn insert_attempt(&self, a: &Attempt) -> R<()> {
        self.run(
            "INSERT INTO baton.attempts
               (run_id, seq, step, kind, attempt, started, finished, exit_code, signal, outcome)
             SELECT $1::text, $2::bigint, $3::text, $4::text, $5::bigint, $6::bigint,
                    $7::bigint, $8::bigint, $9::bigint, $10::text
             WHERE EXISTS (SELECT 1 FROM baton.runs WHERE run_id = $1::text AND job = $11::text)
             ON CONFLICT (run_id, seq) DO NOTHING",
            &[
                &a.run_id,
                &i64::from(a.seq),
                &a.step,
                &a.kind.as_str(),
                &i64::from(a.attempt),
                &rows::micros(a.started),
                &rows::micros(a.finished),
                &a.exit_code.map(i64::from),
                &a.signal.map(i64::from),
                &a.outcome.as_str(),
                &a.job,
            ],
        )
        .await
    }
    /// Marks a run of its job finished unless it is already.
    async fn finish_run(&self, f: &Finished) -> R<()> {
        self.run(
            "UPDATE baton.runs SET finished = $2::bigint, verdict = $3::text,
                                   exit_code = $4::bigint
             WHERE run_id = $1::text AND job = $5::text AND finished IS NULL",
            &[
                &f.run_id,
                &rows::micros(f.finished),
                &f.verdict.as_str(),
                &i64::from(f.exit_code),
                &f.job,
            ],
        )
        .await
    }
    async fn prune_runs(&self, job: &str, keep: u32) -> R<()> {
        self.run(
            "DELETE FROM baton.runs WHERE job = $1::text AND finished IS NOT NULL
               AND run_id NOT IN (
               SELECT run_id FROM baton.runs WHERE job = $1::text AND finished IS NOT NULL
               ORDER BY finished DESC, run_id DESC LIMIT $2::bigint)",
            &[&job, &i64::from(keep)],
        )
        .await
    }
    async fn history(&self, job: &str, limit: u32) -> R<Vec<RunRow>> {
        self.runs_with_attempts(
            "SELECT {RUN_COLUMNS} FROM baton.runs WHERE job = $1::text
             ORDER BY started DESC, run_id DESC LIMIT $2::bigint",
            &[&job, &i64::from(limit)],
        )
        .await
    }
    async fn running(&self, job: &str) -> R<Option<RunRow>> {
        Ok(self
            .runs_with_attempts(
                "SELECT {RUN_COLUMNS} FROM baton.runs WHERE job = $1::text AND finished IS NULL
                 ORDER BY started DESC, run_id DESC LIMIT 1",
                &[&job],
            )
            .await?
            .pop())
    }
    async fn unfinished(&self, job: &str) -> R<Vec<RunRow>> {
        self.rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM baton.runs WHERE job = $1::text AND finished IS NULL
                 ORDER BY started, run_id"
            ),
            &[&job],
            rows::run,
        )
        .await
    }

    async fn unfinished_of_others(&self, known: &[String]) -> R<Vec<RunRow>> {
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        let known: &[&str] = &known;
        self.rows(
            &format!(
                "SELECT {RUN_COLUMNS} FROM baton.runs
                 WHERE finished IS NULL AND job <> ALL($1::text[])
                 ORDER BY started, run_id"
            ),
            &[&known],
            rows::run,
        )
        .await
    }

    // The `baton.replacements` table: requests that a run in flight stop
    // for a later run of its job, keyed by `(run_id, job)` as SQLite's.
    async fn insert_replacement(&self, r: &Replacement) -> R<bool> {
        self.changed(
            "INSERT INTO baton.replacements (run_id, job, by_occurrence, asked)
             VALUES ($1::text, $2::text, $3::bigint, $4::bigint)
             ON CONFLICT (run_id, job) DO NOTHING",
            &[&r.run_id, &r.job, &r.by, &rows::micros(r.asked)],
        )
        .await
    }
    async fn replacement(&self, run_id: &str, job: &str) -> R<Option<Replacement>> {
        self.opt(
            "SELECT run_id, job, by_occurrence, asked FROM baton.replacements
             WHERE run_id = $1::text AND job = $2::text",
            &[&run_id, &job],
            |r| {
                Ok(Replacement {
                    run_id: rows::get(r, 0)?,
                    job: rows::get(r, 1)?,
                    by: rows::get(r, 2)?,
                    asked: rows::time(r, 3)?,
                })
            },
        )
        .await
    }
    async fn delete_replacement(&self, r: &Replacement) -> R<bool> {
        self.changed(
            "DELETE FROM baton.replacements
             WHERE run_id = $1::text AND job = $2::text AND asked = $3::bigint",
            &[&r.run_id, &r.job, &rows::micros(r.asked)],
        )
        .await
    }
    async fn prune_replacements(&self, run_id: &str, job: &str, before: Timestamp) -> R<()> {
        self.run(
            "DELETE FROM baton.replacements
             WHERE run_id = $1::text OR (job = $2::text AND asked < $3::bigint)",
            &[&run_id, &job, &rows::micros(before)],
        )
        .await
    }

    // The `baton.steps` table: per step (or check) of a job, when it was last
    // attempted, succeeded and failed, and how many attempts in a row failed.
    // What an outcome word does
    // to the counters is `baton_store::ledger::Effect`'s rule, reused as is.

    async fn step_attempted(&self, a: &Attempt) -> R<()> {
        let effect = Effect::of(a.outcome);
        self.run(
            "INSERT INTO baton.steps AS s
               (job, step, kind, last_attempt, last_success, last_failure,
                consecutive_failures)
             VALUES ($1::text, $2::text, $3::text, $4::bigint,
                     CASE WHEN $5::boolean THEN $7::bigint END,
                     CASE WHEN $6::boolean THEN $7::bigint END,
                     CASE WHEN $6::boolean THEN 1 ELSE 0 END)
             ON CONFLICT (job, step) DO UPDATE SET
               kind = excluded.kind,
               last_attempt = GREATEST(COALESCE(s.last_attempt, $4::bigint), $4::bigint),
               last_success = CASE WHEN $5::boolean
                                   THEN GREATEST(COALESCE(s.last_success, $7::bigint),
                                                 $7::bigint)
                                   ELSE s.last_success END,
               last_failure = CASE WHEN $6::boolean
                                   THEN GREATEST(COALESCE(s.last_failure, $7::bigint),
                                                 $7::bigint)
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
        .await
    }
    async fn steps(&self, job: &str) -> R<Vec<StepState>> {
        self.rows(
            "SELECT job, step, kind, last_attempt, last_success, last_failure,
                    consecutive_failures
             FROM baton.steps WHERE job = $1::text ORDER BY step",
            &[&job],
            rows::step,
        )
        .await
    }

    // The `baton.alerts` table: every alert raised, as delivered, numbered in
    // the order recorded by an identity that is never reused.

    async fn insert_alert(&self, a: &NewAlert) -> R<()> {
        self.run(
            "INSERT INTO baton.alerts (time, job, kind, run_id, occurrence, message, json)
             VALUES ($1::bigint, $2::text, $3::text, $4::text, $5::bigint, $6::text, $7::text)",
            &[
                &rows::micros(a.time),
                &a.job,
                &a.kind.as_str(),
                &a.run_id,
                &a.occurrence,
                &a.message,
                &a.json,
            ],
        )
        .await
    }
    async fn recent_alerts(&self, job: Option<&str>, limit: u32) -> R<Vec<AlertRow>> {
        let limit = i64::from(limit);
        match job {
            Some(job) => {
                self.rows(
                    &format!(
                        "SELECT {ALERT_COLUMNS} FROM baton.alerts WHERE job = $1::text
                         ORDER BY id DESC LIMIT $2::bigint"
                    ),
                    &[&job, &limit],
                    rows::alert,
                )
                .await
            }
            None => {
                self.rows(
                    &format!(
                        "SELECT {ALERT_COLUMNS} FROM baton.alerts ORDER BY id DESC LIMIT $1::bigint"
                    ),
                    &[&limit],
                    rows::alert,
                )
                .await
            }
        }
    }

    // Missed ranges: the `baton.missed` table, one row per decision that a
    // range of a job's occurrences will not run, in PostgreSQL.
    //
    // A range is written in the write transaction that raises
    // `jobs.last_decided`, and only while that mark is still below it: under
    // the ledger's write lock, of two hosts planning the same outage the first
    // records it and the other is told the mark moved. Rows are numbered by an
    // identity, so a job's newest range has the largest id.

    /// Extends the job's newest range by `m` when it has the same reason and
    /// ends at the job's last decided occurrence. Returns whether it did.
    async fn extend_missed(&self, m: &Miss<'_>, count: i64, now: Timestamp) -> R<bool> {
        let now = micros(now);
        self.changed(
            "UPDATE baton.missed SET
               count = count + $3::bigint,
               last = $4::bigint,
               at_least = at_least OR $5::boolean,
               updated = $6::bigint
             WHERE id = (SELECT MAX(id) FROM baton.missed WHERE job = $1::text)
               AND reason = $2::text
               AND last = (SELECT last_decided FROM baton.jobs WHERE job = $1::text)",
            &[
                &m.job,
                &m.reason.as_str(),
                &count,
                &m.last,
                &m.at_least,
                &now,
            ],
        )
        .await
    }
    async fn insert_missed(
        &self,
        m: &Miss<'_>,
        count: i64,
        detail: Option<&str>,
        now: Timestamp,
    ) -> R<()> {
        let now = micros(now);
        self.run(
            "INSERT INTO baton.missed
               (job, reason, first, last, count, at_least, decided, updated, detail)
             VALUES ($1::text, $2::text, $3::bigint, $4::bigint, $5::bigint, $6::boolean,
                     $7::bigint, $7::bigint, $8::text)",
            &[
                &m.job,
                &m.reason.as_str(),
                &m.first,
                &m.last,
                &count,
                &m.at_least,
                &now,
                &detail,
            ],
        )
        .await
    }
    async fn missed(&self, job: &str, limit: u32) -> R<Vec<MissedRow>> {
        self.rows(
            &format!(
                "SELECT {MISSED_COLUMNS} FROM baton.missed WHERE job = $1::text
                 ORDER BY id DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
            rows::missed,
        )
        .await
    }
    async fn missed_at(&self, job: &str, occurrence: i64) -> R<Option<MissedRow>> {
        self.opt(
            &format!(
                "SELECT {MISSED_COLUMNS} FROM baton.missed
                 WHERE job = $1::text AND first <= $2::bigint AND last >= $2::bigint
                 ORDER BY id DESC LIMIT 1"
            ),
            &[&job, &occurrence],
            rows::missed,
        )
        .await
    }
    async fn missed_counts(&self, job: &str) -> R<Vec<(MissReason, u64, bool)>> {
        self.rows(
            "SELECT reason, SUM(count)::bigint, bool_or(at_least) FROM baton.missed
             WHERE job = $1::text GROUP BY reason ORDER BY reason",
            &[&job],
            |r| Ok((rows::word(r, 0)?, rows::int(r, 1)?, rows::get(r, 2)?)),
        )
        .await
    }
    async fn prune_missed(&self, job: &str) -> R<()> {
        self.run(
            "DELETE FROM baton.missed WHERE job = $1::text AND id NOT IN (
               SELECT id FROM baton.missed WHERE job = $1::text
               ORDER BY id DESC LIMIT $2::bigint)",
            &[&job, &MISSED_KEEP],
        )
        .await
    }

    // Pauses: the `baton.pauses` table, one row per pause of a job, kept after
    // it ends.
    //
    // A pause is in force from `since` until the earlier of `until` and
    // `ended` (`baton_store::ledger::PauseRow::covers`; `IN_FORCE` states the same
    // rule in SQL). At most one pause of a job is in force: a pause ends the
    // one in force and records the new one in one write transaction. Pruning
    // never removes a pause that is not over.

    async fn end_pauses(&self, job: &str, now: Timestamp) -> R<Vec<PauseRow>> {
        let now = micros(now);
        self.rows(
            &format!(
                "UPDATE baton.pauses SET ended = $2::bigint
                 WHERE job = $1::text AND {IN_FORCE} RETURNING {PAUSE_COLUMNS}"
            ),
            &[&job, &now],
            rows::pause,
        )
        .await
    }
    async fn insert_pause(
        &self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> R<PauseRow> {
        let until = until.map(micros);
        let now = micros(now);
        self.one(
            &format!(
                "INSERT INTO baton.pauses (job, since, until, reason, who)
                 VALUES ($1::text, $2::bigint, $3::bigint, $4::text, $5::text)
                 RETURNING {PAUSE_COLUMNS}"
            ),
            &[&job, &now, &until, &reason, &who],
            rows::pause,
        )
        .await
    }
    async fn pauses(&self, job: &str, limit: u32) -> R<Vec<PauseRow>> {
        self.rows(
            &format!(
                "SELECT {PAUSE_COLUMNS} FROM baton.pauses WHERE job = $1::text
                 ORDER BY id DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
            rows::pause,
        )
        .await
    }
    async fn declare(&self, d: &Declaration) -> R<()> {
        self.run(
            "INSERT INTO baton.declarations (job, config, by, declared)
             VALUES ($1::text, $2::text, $3::text, $4::bigint)
             ON CONFLICT (job) DO UPDATE SET
               config = excluded.config, by = excluded.by, declared = excluded.declared",
            &[&d.job, &d.config, &d.by, &rows::micros(d.declared)],
        )
        .await
    }
    async fn declarations(&self) -> R<Vec<Declaration>> {
        self.rows(
            "SELECT job, config, by, declared FROM baton.declarations ORDER BY job",
            &[],
            |r| {
                Ok(Declaration {
                    job: rows::get(r, 0)?,
                    config: rows::get(r, 1)?,
                    by: rows::get(r, 2)?,
                    declared: rows::time(r, 3)?,
                })
            },
        )
        .await
    }
    /// Deletes the job's pauses that are over at `now`, except its newest
    /// `PAUSE_KEEP`.
    async fn prune_pauses(&self, job: &str, now: Timestamp) -> R<()> {
        let now = micros(now);
        self.run(
            "DELETE FROM baton.pauses
             WHERE job = $1::text
               AND ((ended IS NOT NULL AND ended <= $2::bigint)
                    OR (until IS NOT NULL AND until <= $2::bigint))
               AND id NOT IN (SELECT id FROM baton.pauses WHERE job = $1::text
                              ORDER BY id DESC LIMIT $3::bigint)",
            &[&job, &now, &PAUSE_KEEP],
        )
        .await
    }

    // The queue: occurrences that wait for their job's lock, as `queued`
    // decisions in `baton.occurrences`, and the later ones that coalesced into
    // one waiting.
    //
    // An occurrence enters the queue in the write transaction that raises
    // `jobs.last_decided`, and only while that mark is below it, so it is
    // queued once; it leaves by `begin_run`, whose upsert only turns a row
    // still `queued` into `started`. Queued rows are never pruned.

    async fn newest_queued(&self, job: &str) -> R<Option<i64>> {
        self.one(
            "SELECT MAX(occurrence) FROM baton.occurrences
             WHERE job = $1::text AND decision = 'queued'",
            &[&job],
            |r| rows::get(r, 0),
        )
        .await
    }
    async fn oldest_queued(&self, job: &str) -> R<Option<i64>> {
        self.one(
            "SELECT MIN(occurrence) FROM baton.occurrences
             WHERE job = $1::text AND decision = 'queued'",
            &[&job],
            |r| rows::get(r, 0),
        )
        .await
    }
    async fn add_coalesced(&self, job: &str, into: i64, joined: i64) -> R<()> {
        self.run(
            "UPDATE baton.occurrences SET coalesced = coalesced + $3::bigint
             WHERE job = $1::text AND occurrence = $2::bigint",
            &[&job, &into, &joined],
        )
        .await
    }
    async fn queued_jobs(&self) -> R<Vec<String>> {
        self.rows(
            "SELECT DISTINCT job FROM baton.occurrences WHERE decision = 'queued' ORDER BY job",
            &[],
            |r| rows::get(r, 0),
        )
        .await
    }
    async fn queued(&self, job: &str) -> R<Vec<DecisionRow>> {
        self.rows(
            &format!(
                "SELECT {} FROM baton.occurrences
                 WHERE job = $1::text AND decision = 'queued' ORDER BY occurrence",
                DECISION_COLUMNS
            ),
            &[&job],
            rows::decision,
        )
        .await
    }

    // Cumulative tallies: the `baton.tallies` and `baton.durations` tables,
    // counts per job that pruning never touches. Every tally rises in the transaction that records
    // what it counts, as an SQL expression (`count + n`). The histogram's
    // bounds are `baton_store::ledger::BOUNDS_US`, reused as they are: a count is only
    // meaningful against the bounds it was counted with. The kind words are
    // the stored ones, the same in both ledgers.

    async fn tally_missed(&self, job: &str, reason: MissReason, n: i64) -> R<()> {
        self.add(job, MISSED, reason.as_str(), n).await
    }
    async fn tally_skipped(&self, job: &str, reason: SkipReason, n: i64) -> R<()> {
        self.add(job, SKIPPED, reason.as_str(), n).await
    }
    /// Counts a finished run: its verdict, a lost lease, and, when the ledger
    /// has the run's start, its duration.
    async fn tally_finished(&self, f: &Finished, started: Option<Timestamp>) -> R<()> {
        self.add(&f.job, VERDICT, f.verdict.as_str(), 1).await?;
        if f.verdict == RunVerdict::LeaseLost {
            self.add(&f.job, LEASE_LOST, "", 1).await?;
        }
        let Some(started) = started else {
            return Ok(());
        };
        let (us, bound) = bucket(started, f.finished);
        self.run(
            "INSERT INTO baton.durations AS d (job, bound, count, sum_us)
             VALUES ($1::text, $2::bigint, 1, $3::bigint)
             ON CONFLICT (job, bound) DO UPDATE SET
               count = d.count + 1,
               sum_us = d.sum_us + excluded.sum_us",
            &[&f.job, &bound, &us],
        )
        .await
    }
    async fn tallies(&self) -> R<Vec<JobTallies>> {
        let mut jobs: BTreeMap<String, JobTallies> = BTreeMap::new();
        let client = self.tx.client();
        for r in self
            .tx
            .answer(client.query_typed(
                "SELECT job, last_success, last_failure FROM baton.jobs ORDER BY job",
                &[],
            ))
            .await?
        {
            let t = entry(&mut jobs, rows::get(&r, 0)?);
            t.last_success = rows::time_opt(&r, 1)?;
            t.last_failure = rows::time_opt(&r, 2)?;
        }
        for r in self
            .tx
            .answer(client.query_typed("SELECT job, kind, word, count FROM baton.tallies", &[]))
            .await?
        {
            let t = entry(&mut jobs, rows::get(&r, 0)?);
            let kind: String = rows::get(&r, 1)?;
            let n: u64 = rows::int(&r, 3)?;
            match kind.as_str() {
                VERDICT => *t.runs.entry(rows::word(&r, 2)?).or_default() += n,
                MISSED => *t.missed.entry(rows::word(&r, 2)?).or_default() += n,
                WITHDRAWN => *t.withdrawn.entry(rows::word(&r, 2)?).or_default() += n,
                SKIPPED => *t.skipped.entry(rows::word(&r, 2)?).or_default() += n,
                LEASE_LOST => t.lease_losses += n,
                _ => {} // A kind a later version counts: not this build's to show.
            }
        }
        for r in self
            .tx
            .answer(
                client.query_typed("SELECT job, bound, count, sum_us FROM baton.durations", &[]),
            )
            .await?
        {
            let t = entry(&mut jobs, rows::get(&r, 0)?);
            let bound: i64 = rows::get(&r, 1)?;
            let i = BOUNDS_US
                .iter()
                .position(|&b| bound <= b)
                .unwrap_or(BOUNDS_US.len() - 1);
            t.durations.buckets[i] += rows::int::<u64>(&r, 2)?;
            t.durations.sum += Duration::from_micros(rows::int(&r, 3)?);
        }
        Ok(jobs.into_values().collect())
    }

    // Watermarks: the `baton.watermarks` table, each value a job's runs
    // settled, in order.
    //
    // `(job, seq)` numbers a job's values 1, 2, …: the next number is computed
    // in SQL in the write transaction that inserts it, so two settles never
    // take the same number. The ledger does not judge who may settle (the
    // caller does, under the lease), except that a run of another job may not
    // settle this job's mark.

    async fn watermark(&self, job: &str) -> R<Option<WatermarkRow>> {
        Ok(self.watermarks(job, 1).await?.pop())
    }
    async fn insert_watermark(
        &self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<i64>,
        now: Timestamp,
    ) -> R<WatermarkRow> {
        let now = micros(now);
        self.one(
            &format!(
                "INSERT INTO baton.watermarks (job, seq, value, run_id, fence, settled)
                 SELECT $1::text, COALESCE(MAX(seq), 0) + 1, $2::text, $3::text, $4::bigint,
                        $5::bigint
                 FROM baton.watermarks WHERE job = $1::text
                 RETURNING {WATERMARK_COLUMNS}"
            ),
            &[&job, &value, &run_id, &fence, &now],
            rows::watermark,
        )
        .await
    }
    async fn watermarks(&self, job: &str, limit: u32) -> R<Vec<WatermarkRow>> {
        self.rows(
            &format!(
                "SELECT {WATERMARK_COLUMNS} FROM baton.watermarks WHERE job = $1::text
                 ORDER BY seq DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
            rows::watermark,
        )
        .await
    }
    async fn prune_watermarks(&self, job: &str) -> R<()> {
        self.run(
            "DELETE FROM baton.watermarks WHERE job = $1::text AND seq NOT IN (
               SELECT seq FROM baton.watermarks WHERE job = $1::text
               ORDER BY seq DESC LIMIT $2::bigint)",
            &[&job, &WATERMARK_KEEP],
        )
        .await
    }
}

fn entry(jobs: &mut BTreeMap<String, JobTallies>, job: String) -> &mut JobTallies {
    jobs.entry(job.clone()).or_insert_with(|| JobTallies {
        job,
        ..JobTallies::default()
    })
}
