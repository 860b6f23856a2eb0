//! Missed ranges: the `baton.missed` table, one row per decision that a
//! range of a job's occurrences will not run, in PostgreSQL.
//!
//! A range is written in the write transaction that raises
//! `jobs.last_decided`, and only while that mark is still below it: under
//! the ledger's write lock, of two hosts planning the same outage the first
//! records it and the other is told the mark moved. Rows are numbered by an
//! identity, so a job's newest range has the largest id.

use baton_store::ledger::{Miss, MissedRow};
use baton_store::words::MissReason;
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// How many missed ranges pruning keeps per job (the SQLite ledger's).
const KEEP: i64 = 1_000;

/// Extends the job's newest range by `m` when it has the same reason and
/// ends at the job's last decided occurrence. Returns whether it did.
pub(crate) async fn extend(
    tx: &Transaction<'_>,
    m: &Miss<'_>,
    count: i64,
    now: i64,
) -> Result<bool, Fail> {
    let changed = tx
        .execute(
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
        .await?;
    Ok(changed == 1)
}

pub(crate) async fn insert(
    tx: &Transaction<'_>,
    m: &Miss<'_>,
    count: i64,
    detail: Option<&str>,
    now: i64,
) -> Result<(), Fail> {
    tx.execute(
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
    .await?;
    Ok(())
}

const COLUMNS: &str = "id, job, reason, first, last, count, at_least, decided, updated, detail";

/// The job's newest `limit` ranges, newest first.
pub(crate) async fn recent(
    tx: &Transaction<'_>,
    job: &str,
    limit: u32,
) -> Result<Vec<MissedRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM baton.missed WHERE job = $1::text
                 ORDER BY id DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
        )
        .await?;
    found.iter().map(row).collect()
}

/// `(reason, occurrences, any lower bound)` per reason, by reason.
pub(crate) async fn counts(
    tx: &Transaction<'_>,
    job: &str,
) -> Result<Vec<(MissReason, u64, bool)>, Fail> {
    let found = tx
        .query(
            "SELECT reason, SUM(count)::bigint, bool_or(at_least) FROM baton.missed
             WHERE job = $1::text GROUP BY reason ORDER BY reason",
            &[&job],
        )
        .await?;
    found
        .iter()
        .map(|r| Ok((rows::word(r, 0)?, rows::int(r, 1)?, rows::get(r, 2)?)))
        .collect()
}

/// Deletes all but the job's newest [`KEEP`] ranges.
pub(crate) async fn prune(tx: &Transaction<'_>, job: &str) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM baton.missed WHERE job = $1::text AND id NOT IN (
           SELECT id FROM baton.missed WHERE job = $1::text ORDER BY id DESC LIMIT $2::bigint)",
        &[&job, &KEEP],
    )
    .await?;
    Ok(())
}

fn row(r: &Row) -> Result<MissedRow, Fail> {
    Ok(MissedRow {
        id: rows::get(r, 0)?,
        job: rows::get(r, 1)?,
        reason: rows::word(r, 2)?,
        first: rows::get(r, 3)?,
        last: rows::get(r, 4)?,
        count: rows::int(r, 5)?,
        at_least: rows::get(r, 6)?,
        decided: rows::time(r, 7)?,
        updated: rows::time(r, 8)?,
        detail: rows::get(r, 9)?,
    })
}
