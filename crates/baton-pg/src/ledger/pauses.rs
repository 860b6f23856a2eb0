//! Pauses: the `baton.pauses` table, one row per pause of a job, kept after
//! it ends; `baton_ledger`'s `pauses` module in PostgreSQL.
//!
//! A pause is in force from `since` until the earlier of `until` and
//! `ended` (`baton_store::ledger::PauseRow::covers`; [`IN_FORCE`] states the same
//! rule in SQL). At most one pause of a job is in force: a pause ends the
//! one in force and records the new one in one write transaction. Pruning
//! never removes a pause that is not over.

use baton_store::ledger::PauseRow;
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// How many pauses pruning keeps per job, besides any not over (the SQLite
/// ledger's).
const KEEP: i64 = 100;

/// Whether the pause of the row is in force at `$2`.
const IN_FORCE: &str = "since <= $2::bigint AND (until IS NULL OR $2::bigint < until) \
                        AND (ended IS NULL OR $2::bigint < ended)";

const COLUMNS: &str = "id, job, since, until, reason, who, ended";

/// Records a pause of `job` from `now`, returning it.
pub(crate) async fn insert(
    tx: &Transaction<'_>,
    job: &str,
    until: Option<i64>,
    reason: Option<&str>,
    who: &str,
    now: i64,
) -> Result<PauseRow, Fail> {
    let r = tx
        .query_one(
            &format!(
                "INSERT INTO baton.pauses (job, since, until, reason, who)
                 VALUES ($1::text, $2::bigint, $3::bigint, $4::text, $5::text)
                 RETURNING {COLUMNS}"
            ),
            &[&job, &now, &until, &reason, &who],
        )
        .await?;
    row(&r)
}

/// The newest `limit` pauses of a job, newest first.
pub(crate) async fn recent(
    tx: &Transaction<'_>,
    job: &str,
    limit: u32,
) -> Result<Vec<PauseRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM baton.pauses WHERE job = $1::text
                 ORDER BY id DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
        )
        .await?;
    found.iter().map(row).collect()
}

/// Ends, at `now`, the job's pauses in force at `now`. Returns them ended.
pub(crate) async fn end_in_force(
    tx: &Transaction<'_>,
    job: &str,
    now: i64,
) -> Result<Vec<PauseRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "UPDATE baton.pauses SET ended = $2::bigint
                 WHERE job = $1::text AND {IN_FORCE} RETURNING {COLUMNS}"
            ),
            &[&job, &now],
        )
        .await?;
    found.iter().map(row).collect()
}

/// Deletes the job's pauses that are over at `now`, except its newest
/// [`KEEP`].
pub(crate) async fn prune(tx: &Transaction<'_>, job: &str, now: i64) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM baton.pauses
         WHERE job = $1::text
           AND ((ended IS NOT NULL AND ended <= $2::bigint)
                OR (until IS NOT NULL AND until <= $2::bigint))
           AND id NOT IN (SELECT id FROM baton.pauses WHERE job = $1::text
                          ORDER BY id DESC LIMIT $3::bigint)",
        &[&job, &now, &KEEP],
    )
    .await?;
    Ok(())
}

fn row(r: &Row) -> Result<PauseRow, Fail> {
    Ok(PauseRow {
        id: rows::get(r, 0)?,
        job: rows::get(r, 1)?,
        since: rows::time(r, 2)?,
        until: rows::time_opt(r, 3)?,
        reason: rows::get(r, 4)?,
        who: rows::get(r, 5)?,
        ended: rows::time_opt(r, 6)?,
    })
}
