//! The `baton.alerts` table: every alert raised, as delivered, numbered in
//! the order recorded by an identity that is never reused;
//! `baton_ledger`'s `alerts` module in PostgreSQL.

use baton_store::ledger::{AlertRow, NewAlert};
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// Records an alert.
pub(crate) async fn insert(tx: &Transaction<'_>, a: &NewAlert) -> Result<(), Fail> {
    tx.execute(
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
    .await?;
    Ok(())
}

const COLUMNS: &str = "id, time, job, kind, run_id, occurrence, message, json";

/// The newest `limit` alerts, of one job or of all, newest first.
pub(crate) async fn recent(
    tx: &Transaction<'_>,
    job: Option<&str>,
    limit: u32,
) -> Result<Vec<AlertRow>, Fail> {
    let limit = i64::from(limit);
    let found = match job {
        Some(job) => {
            tx.query(
                &format!(
                    "SELECT {COLUMNS} FROM baton.alerts WHERE job = $1::text
                     ORDER BY id DESC LIMIT $2::bigint"
                ),
                &[&job, &limit],
            )
            .await?
        }
        None => {
            tx.query(
                &format!("SELECT {COLUMNS} FROM baton.alerts ORDER BY id DESC LIMIT $1::bigint"),
                &[&limit],
            )
            .await?
        }
    };
    found.iter().map(row).collect()
}

fn row(r: &Row) -> Result<AlertRow, Fail> {
    Ok(AlertRow {
        id: rows::get(r, 0)?,
        time: rows::time(r, 1)?,
        job: rows::get(r, 2)?,
        kind: rows::word(r, 3)?,
        run_id: rows::get(r, 4)?,
        occurrence: rows::get(r, 5)?,
        message: rows::get(r, 6)?,
        json: rows::get(r, 7)?,
    })
}
