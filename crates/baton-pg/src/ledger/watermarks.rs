//! Watermarks: the `baton.watermarks` table, each value a job's runs
//! settled, in order; `baton_ledger`'s `watermarks` module in PostgreSQL.
//!
//! `(job, seq)` numbers a job's values 1, 2, …: the next number is computed
//! in SQL in the write transaction that inserts it, so two settles never
//! take the same number. The ledger does not judge who may settle (the
//! caller does, under the lease), except that a run of another job may not
//! settle this job's mark.

use baton_store::ledger::WatermarkRow;
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// How many values pruning keeps per job (the SQLite ledger's).
const KEEP: i64 = 100;

const COLUMNS: &str = "job, seq, value, run_id, fence, settled";

/// Records a job's next value, numbered one more than its newest.
pub(crate) async fn insert(
    tx: &Transaction<'_>,
    job: &str,
    value: &str,
    run_id: Option<&str>,
    fence: Option<i64>,
    now: i64,
) -> Result<WatermarkRow, Fail> {
    let r = tx
        .query_one(
            &format!(
                "INSERT INTO baton.watermarks (job, seq, value, run_id, fence, settled)
                 SELECT $1::text, COALESCE(MAX(seq), 0) + 1, $2::text, $3::text, $4::bigint,
                        $5::bigint
                 FROM baton.watermarks WHERE job = $1::text
                 RETURNING {COLUMNS}"
            ),
            &[&job, &value, &run_id, &fence, &now],
        )
        .await?;
    row(&r)
}

/// The newest `limit` values of a job, newest first.
pub(crate) async fn recent(
    tx: &Transaction<'_>,
    job: &str,
    limit: u32,
) -> Result<Vec<WatermarkRow>, Fail> {
    let found = tx
        .query(
            &format!(
                "SELECT {COLUMNS} FROM baton.watermarks WHERE job = $1::text
                 ORDER BY seq DESC LIMIT $2::bigint"
            ),
            &[&job, &i64::from(limit)],
        )
        .await?;
    found.iter().map(row).collect()
}

/// Deletes all but the job's newest [`KEEP`] values.
pub(crate) async fn prune(tx: &Transaction<'_>, job: &str) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM baton.watermarks WHERE job = $1::text AND seq NOT IN (
           SELECT seq FROM baton.watermarks WHERE job = $1::text
           ORDER BY seq DESC LIMIT $2::bigint)",
        &[&job, &KEEP],
    )
    .await?;
    Ok(())
}

fn row(r: &Row) -> Result<WatermarkRow, Fail> {
    Ok(WatermarkRow {
        job: rows::get(r, 0)?,
        seq: rows::int(r, 1)?,
        value: rows::get(r, 2)?,
        run_id: rows::get(r, 3)?,
        fence: rows::int_opt(r, 4)?,
        settled: rows::time(r, 5)?,
    })
}
