//! The `runs` and `attempts` tables: a job's history, one row per run and
//! one per attempt of a step or check within it.
//!
//! `runs.run_id` is the key callers hold; the index on `(job, started DESC)`
//! serves every per-job read (history, the last run, the running one) and
//! the pruning. An attempt belongs to its run (`REFERENCES runs ON DELETE
//! CASCADE`), so pruning a run takes its attempts along and an attempt can
//! never outlive its run. `(run_id, seq)` keeps a retried write from
//! recording one attempt twice.

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use baton_store::ledger::{Attempt, AttemptRow, Finished, NewRun, RunRow};

use crate::rows;

/// Inserts a run's row. `fence` is the caller's fence, already checked to
/// fit SQLite's integers.
pub(crate) fn insert(conn: &Connection, run: &NewRun, fence: Option<i64>) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "INSERT INTO runs (run_id, job, occurrence, manual, fence, host, pid, started)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        run.run_id,
        run.job,
        run.occurrence,
        run.occurrence.is_none(),
        fence,
        run.host,
        run.pid,
        rows::micros(run.started)
    ])?;
    Ok(())
}

/// Whether `run` is recorded already: its id, for its job and occurrence
/// (its start, recorded by an earlier call whose answer was lost).
pub(crate) fn recorded(conn: &Connection, run: &NewRun) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM runs WHERE run_id = ?1 AND job = ?2 AND occurrence IS ?3")?
        .query_row(params![run.run_id, run.job, run.occurrence], |_| Ok(()))
        .optional()
        .map(|found| found.is_some())
}

/// The job a run belongs to; `None` when the ledger has no such run.
pub(crate) fn job_of(conn: &Connection, run_id: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT job FROM runs WHERE run_id = ?1")?
        .query_row([run_id], |r| r.get(0))
        .optional()
}

/// When a run started; `None` when the ledger has no such run.
pub(crate) fn started(conn: &Connection, run_id: &str) -> rusqlite::Result<Option<Timestamp>> {
    conn.prepare_cached("SELECT started FROM runs WHERE run_id = ?1")?
        .query_row([run_id], |r| rows::time(r, 0))
        .optional()
}

/// Inserts an attempt unless its `(run_id, seq)` is recorded already.
/// Returns whether this call recorded it.
pub(crate) fn insert_attempt(conn: &Connection, a: &Attempt) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO attempts
               (run_id, seq, step, kind, attempt, started, finished, exit_code, signal, outcome)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
             ON CONFLICT (run_id, seq) DO NOTHING",
        )?
        .execute(params![
            a.run_id,
            a.seq,
            a.step,
            a.kind.as_str(),
            a.attempt,
            rows::micros(a.started),
            rows::micros(a.finished),
            a.exit_code,
            a.signal,
            a.outcome.as_str()
        ])?;
    Ok(changed == 1)
}

/// Marks a run finished unless it is already. Returns whether this call
/// finished it.
pub(crate) fn finish(conn: &Connection, f: &Finished) -> rusqlite::Result<bool> {
    let changed = conn
        .prepare_cached(
            "UPDATE runs SET finished = ?2, verdict = ?3, exit_code = ?4
             WHERE run_id = ?1 AND finished IS NULL",
        )?
        .execute(params![
            f.run_id,
            rows::micros(f.finished),
            f.verdict.as_str(),
            f.exit_code
        ])?;
    Ok(changed == 1)
}

/// Deletes all but the job's newest `keep` runs (their attempts cascade).
pub(crate) fn prune(conn: &Connection, job: &str, keep: u32) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM runs WHERE job = ?1 AND run_id NOT IN (
           SELECT run_id FROM runs WHERE job = ?1
           ORDER BY started DESC, run_id DESC LIMIT ?2)",
    )?
    .execute(params![job, keep])?;
    Ok(())
}

const COLUMNS: &str =
    "run_id, job, occurrence, manual, fence, host, pid, started, finished, verdict, exit_code";

/// The job's newest `limit` runs, newest first, each with its attempts.
pub(crate) fn history(conn: &Connection, job: &str, limit: u32) -> rusqlite::Result<Vec<RunRow>> {
    let mut runs: Vec<RunRow> = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM runs WHERE job = ?1
             ORDER BY started DESC, run_id DESC LIMIT ?2"
        ))?
        .query_map(params![job, limit], row)?
        .collect::<rusqlite::Result<_>>()?;
    for run in &mut runs {
        run.attempts = attempts(conn, &run.run_id)?;
    }
    Ok(runs)
}

/// The job's newest run that has not finished.
pub(crate) fn running(conn: &Connection, job: &str) -> rusqlite::Result<Option<RunRow>> {
    let run = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM runs WHERE job = ?1 AND finished IS NULL
             ORDER BY started DESC, run_id DESC LIMIT 1"
        ))?
        .query_row([job], row)
        .optional()?;
    run.map(|mut run| {
        run.attempts = attempts(conn, &run.run_id)?;
        Ok(run)
    })
    .transpose()
}

/// Every unfinished run of `job`, oldest first, without attempts.
pub(crate) fn unfinished(conn: &Connection, job: &str) -> rusqlite::Result<Vec<RunRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM runs WHERE job = ?1 AND finished IS NULL
         ORDER BY started, run_id"
    ))?
    .query_map([job], row)?
    .collect()
}

fn attempts(conn: &Connection, run_id: &str) -> rusqlite::Result<Vec<AttemptRow>> {
    conn.prepare_cached(
        "SELECT seq, step, kind, attempt, started, finished, exit_code, signal, outcome
         FROM attempts WHERE run_id = ?1 ORDER BY seq",
    )?
    .query_map([run_id], |r| {
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
    })?
    .collect()
}

fn row(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: r.get(0)?,
        job: r.get(1)?,
        occurrence: r.get(2)?,
        manual: r.get(3)?,
        fence: rows::unsigned_opt(r, 4)?,
        host: r.get(5)?,
        pid: r.get(6)?,
        started: rows::time(r, 7)?,
        finished: rows::time_opt(r, 8)?,
        verdict: rows::word_opt(r, 9)?,
        exit_code: r.get(10)?,
        attempts: Vec::new(),
    })
}
