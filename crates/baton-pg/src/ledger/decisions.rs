//! The `baton.occurrences` table: at most one decision per occurrence of a
//! job that runs or waits (`started`, `queued`, `coalesced`, `claimed`); the
//! statements of `baton_ledger`'s `decisions` module, in PostgreSQL.
//!
//! The key `(job, occurrence)` is what makes "an occurrence is decided
//! once" hold: a decision is an `INSERT … ON CONFLICT DO NOTHING`, and the
//! one insert that changed a row decided. The one decision that may change
//! is `queued`, into `started`, by an upsert whose update only matches a
//! queued row. (Writers also hold the ledger's write lock, so the key is
//! never raced; it stays the rule the statements state.)

use baton_store::ledger::{DecisionRow, NewDecision, NewRun};
use tokio_postgres::{Row, Transaction};

use super::fail::Fail;
use super::rows;

/// Records a decision unless the occurrence has one. Returns whether this
/// call recorded it.
pub(crate) async fn insert(tx: &Transaction<'_>, e: &NewDecision<'_>) -> Result<bool, Fail> {
    let changed = tx
        .execute(
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
        .await?;
    Ok(changed == 1)
}

/// Records the occurrence of a scheduled run as `started` by it: a new row
/// when the occurrence has none, or its `queued` row turned into `started`
/// (keeping its count of coalesced occurrences). Any other decision is left
/// as it is. Returns whether this call started it.
pub(crate) async fn start(
    tx: &Transaction<'_>,
    run: &NewRun,
    occurrence: i64,
) -> Result<bool, Fail> {
    let changed = tx
        .execute(
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
        .await?;
    Ok(changed == 1)
}

/// The columns [`row`] reads, in its order.
pub(crate) const COLUMNS: &str =
    "job, occurrence, decision, reason, run_id, decided, detail, coalesced, joined";

/// The decision for one occurrence.
pub(crate) async fn one(
    tx: &Transaction<'_>,
    job: &str,
    occurrence: i64,
) -> Result<Option<DecisionRow>, Fail> {
    let found = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM baton.occurrences
                 WHERE job = $1::text AND occurrence = $2::bigint"
            ),
            &[&job, &occurrence],
        )
        .await?;
    found.as_ref().map(row).transpose()
}

/// Deletes the job's decisions made before its oldest remaining run
/// started, except its newest decision and its `queued` ones.
pub(crate) async fn prune(tx: &Transaction<'_>, job: &str) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM baton.occurrences
         WHERE job = $1::text
           AND decision <> 'queued'
           AND decided < (SELECT MIN(started) FROM baton.runs WHERE job = $1::text)
           AND occurrence < (SELECT MAX(occurrence) FROM baton.occurrences
                             WHERE job = $1::text)",
        &[&job],
    )
    .await?;
    Ok(())
}

/// Reads a row selected with [`COLUMNS`].
pub(crate) fn row(r: &Row) -> Result<DecisionRow, Fail> {
    Ok(DecisionRow {
        job: rows::get(r, 0)?,
        occurrence: rows::get(r, 1)?,
        decision: rows::word(r, 2)?,
        reason: rows::get(r, 3)?,
        run_id: rows::get(r, 4)?,
        decided: rows::time(r, 5)?,
        detail: rows::get(r, 6)?,
        coalesced: rows::int(r, 7)?,
        joined: rows::get(r, 8)?,
    })
}

/// Turns a queued occurrence into `e.decision` (`claimed`). Returns whether
/// it was queued.
pub(crate) async fn claim_queued(tx: &Transaction<'_>, e: &NewDecision<'_>) -> Result<bool, Fail> {
    let changed = tx
        .execute(
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
        .await?;
    Ok(changed == 1)
}
