//! The `baton.runs` and `baton.attempts` tables: a job's history, one row
//! per run and one per attempt of a step or check within it; the
//! statements of `baton_ledger`'s `runs` module, in PostgreSQL.
//!
//! An attempt belongs to its run (`REFERENCES … ON DELETE CASCADE`), so
//! pruning a run takes its attempts along; `(run_id, seq)` keeps a retried
//! write from recording one attempt twice.

use baton_store::ledger::{Attempt, AttemptRow, Finished, NewRun, RunRow};
use jiff::Timestamp;
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// Inserts a run's row. `fence` is the caller's, already checked to fit.
pub(crate) async fn insert(
    tx: &Transaction<'_>,
    run: &NewRun,
    fence: Option<i64>,
) -> Result<(), Fail> {
    tx.execute(
        "INSERT INTO baton.runs (run_id, job, occurrence, manual, fence, host, pid, started)
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
    .await?;
    Ok(())
}

/// Whether `run` is recorded already: its id, for its job and occurrence
/// (its start, recorded by an earlier call whose answer was lost).
pub(crate) async fn recorded(tx: &Transaction<'_>, run: &NewRun) -> Result<bool, Fail> {
    let found = tx
        .query_opt(
            "SELECT 1 FROM baton.runs WHERE run_id = $1::text AND job = $2::text
               AND occurrence IS NOT DISTINCT FROM $3::bigint",
            &[&run.run_id, &run.job, &run.occurrence],
        )
        .await?;
    Ok(found.is_some())
}

/// The job a run belongs to; `None` when the ledger has no such run.
pub(crate) async fn job_of(tx: &Transaction<'_>, run_id: &str) -> Result<Option<String>, Fail> {
    let found = tx
        .query_opt(
            "SELECT job FROM baton.runs WHERE run_id = $1::text",
            &[&run_id],
        )
        .await?;
    found.as_ref().map(|r| rows::get(r, 0)).transpose()
}

/// When a run started; `None` when the ledger has no such run.
pub(crate) async fn started(tx: &Transaction<'_>, run_id: &str) -> Result<Option<Timestamp>, Fail> {
    let found = tx
        .query_opt(
            "SELECT started FROM baton.runs WHERE run_id = $1::text",
            &[&run_id],
        )
        .await?;
    found.as_ref().map(|r| rows::time(r, 0)).transpose()
}

/// Inserts an attempt unless its `(run_id, seq)` is recorded already.
/// Returns whether this call recorded it.
pub(crate) async fn insert_attempt(tx: &Transaction<'_>, a: &Attempt) -> Result<bool, Fail> {
    let changed = tx
        .execute(
            "INSERT INTO baton.attempts
               (run_id, seq, step, kind, attempt, started, finished, exit_code, signal, outcome)
             VALUES ($1::text, $2::bigint, $3::text, $4::text, $5::bigint, $6::bigint,
                     $7::bigint, $8::bigint, $9::bigint, $10::text)
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
            ],
        )
        .await?;
    Ok(changed == 1)
}

/// Marks a run finished unless it is already. Returns whether this call
/// finished it.
pub(crate) async fn finish(tx: &Transaction<'_>, f: &Finished) -> Result<bool, Fail> {
    let changed = tx
        .execute(
            "UPDATE baton.runs SET finished = $2::bigint, verdict = $3::text,
                                   exit_code = $4::bigint
             WHERE run_id = $1::text AND finished IS NULL",
            &[
                &f.run_id,
                &rows::micros(f.finished),
                &f.verdict.as_str(),
                &i64::from(f.exit_code),
            ],
        )
        .await?;
    Ok(changed == 1)
}

/// Deletes all but the job's newest `keep` runs (their attempts cascade).
pub(crate) async fn prune(tx: &Transaction<'_>, job: &str, keep: u32) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM baton.runs WHERE job = $1::text AND run_id NOT IN (
           SELECT run_id FROM baton.runs WHERE job = $1::text
           ORDER BY started DESC, run_id DESC LIMIT $2::bigint)",
        &[&job, &i64::from(keep)],
    )
    .await?;
    Ok(())
}

const COLUMNS: &str =
    "run_id, job, occurrence, manual, fence, host, pid, started, finished, verdict, exit_code";

/// The job's newest `limit` runs, newest first, each with its attempts.
pub(crate) async fn history(
    tx: &Transaction<'_>,
    job: &str,
    limit: u32,
) -> Result<Vec<RunRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM baton.runs WHERE job = $1::text
                 ORDER BY started DESC, run_id DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
        )
        .await?;
    let mut runs = found.iter().map(row).collect::<Result<Vec<_>, _>>()?;
    for run in &mut runs {
        run.attempts = attempts(tx, &run.run_id).await?;
    }
    Ok(runs)
}

/// The job's newest run that has not finished, with its attempts.
pub(crate) async fn running(tx: &Transaction<'_>, job: &str) -> Result<Option<RunRow>, Fail> {
    let found = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM baton.runs WHERE job = $1::text AND finished IS NULL
                 ORDER BY started DESC, run_id DESC LIMIT 1"
            ),
            &[&job],
        )
        .await?;
    match found.as_ref().map(row).transpose()? {
        Some(mut run) => {
            run.attempts = attempts(tx, &run.run_id).await?;
            Ok(Some(run))
        }
        None => Ok(None),
    }
}

/// Every unfinished run of `job`, oldest first, without attempts.
pub(crate) async fn unfinished(tx: &Transaction<'_>, job: &str) -> Result<Vec<RunRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM baton.runs WHERE job = $1::text AND finished IS NULL
                 ORDER BY started, run_id"
            ),
            &[&job],
        )
        .await?;
    found.iter().map(row).collect()
}

async fn attempts(tx: &Transaction<'_>, run_id: &str) -> Result<Vec<AttemptRow>, Fail> {
    let found = tx
        .query(
            "SELECT seq, step, kind, attempt, started, finished, exit_code, signal, outcome
             FROM baton.attempts WHERE run_id = $1::text ORDER BY seq",
            &[&run_id],
        )
        .await?;
    found
        .iter()
        .map(|r| {
            Ok(AttemptRow {
                seq: rows::int(r, 0)?,
                step: rows::get(r, 1)?,
                kind: rows::word(r, 2)?,
                attempt: rows::int(r, 3)?,
                started: rows::time(r, 4)?,
                finished: rows::time(r, 5)?,
                exit_code: rows::int_opt(r, 6)?,
                signal: rows::int_opt(r, 7)?,
                outcome: rows::word(r, 8)?,
            })
        })
        .collect()
}

fn row(r: &Row) -> Result<RunRow, Fail> {
    Ok(RunRow {
        run_id: rows::get(r, 0)?,
        job: rows::get(r, 1)?,
        occurrence: rows::get(r, 2)?,
        manual: rows::get(r, 3)?,
        fence: rows::int_opt(r, 4)?,
        host: rows::get(r, 5)?,
        pid: rows::int_opt(r, 6)?,
        started: rows::time(r, 7)?,
        finished: rows::time_opt(r, 8)?,
        verdict: rows::word_opt(r, 9)?,
        exit_code: rows::int_opt(r, 10)?,
        attempts: Vec::new(),
    })
}
