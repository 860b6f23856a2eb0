//! The ShedLock-style exhibit: a TTL row with no renewal.
//!
//! Transcribed from ShedLock's JDBC provider in its server-time form
//! (`usingDbTime()`, PostgreSQL statements): one row per lock name with a
//! `lock_until` column; the lock is taken by inserting the row the first
//! time this process sees the name, and afterwards by
//!
//! ```sql
//! UPDATE … SET lock_until = now() + lockAtMostFor, locked_at = now(), locked_by = $host
//!   WHERE name = $1 AND lock_until <= now()
//! ```
//!
//! and let go by `UPDATE … SET lock_until = now() WHERE name = $1` (with
//! `lockAtLeastFor` zero).
//!
//! **The defect**: nothing ever renews `lock_until`. `lockAtMostFor` is a
//! guess at the longest run; a run that takes longer is still running when
//! `lock_until` passes, the next caller's conditional `UPDATE` succeeds, and
//! the job runs twice at once. The unlock, as in the source, matches the
//! name alone, so the overrun holder then also frees its successor's lock.
//! The slow live holder scenario opens this window on every trial; the kill
//! -9 churn shows the one thing a TTL row does well (a dead holder's lock
//! lapses on its own).
//!
//! The source's statements stamp the server's `CURRENT_TIMESTAMP`; `now()`
//! is the same function. The time scale is the campaign's (milliseconds).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

/// The exhibit's table, beside baton's schema and never inside it.
pub(crate) const TABLE: &str = "baton_stress_shedlock";

/// Creates the exhibit's table if it is not there (ShedLock leaves this to
/// the application's migrations).
///
/// # Errors
///
/// The server's.
pub(crate) async fn create_table(client: &Client) -> Result<(), tokio_postgres::Error> {
    client
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {TABLE} (
                 name text PRIMARY KEY,
                 lock_until timestamptz NOT NULL,
                 locked_at timestamptz NOT NULL,
                 locked_by text NOT NULL
             )"
        ))
        .await
}

/// One process's view of one lock name.
#[derive(Debug)]
pub(crate) struct ShedLock {
    name: String,
    at_most_for: Duration,
    by: String,
    /// ShedLock's registry of names this process has seen a row for: the
    /// insert is tried once, the conditional update every time after.
    known: AtomicBool,
}

impl ShedLock {
    /// The lock `name`, held for at most `at_most_for`, by `by` (a host name).
    pub(crate) fn new(name: &str, at_most_for: Duration, by: &str) -> Self {
        Self {
            name: name.to_owned(),
            at_most_for,
            by: by.to_owned(),
            known: AtomicBool::new(false),
        }
    }

    /// Tries once. `true`: this caller holds the lock until `lock_until`.
    ///
    /// # Errors
    ///
    /// The server's.
    pub(crate) async fn lock(&self, client: &Client) -> Result<bool, tokio_postgres::Error> {
        let secs = self.at_most_for.as_secs_f64();
        if !self.known.swap(true, Ordering::SeqCst) {
            let inserted = client
                .execute(
                    &format!(
                        "INSERT INTO {TABLE} (name, lock_until, locked_at, locked_by)
                         VALUES ($1, now() + make_interval(secs => $2), now(), $3)"
                    ),
                    &[&self.name, &secs, &self.by],
                )
                .await;
            match inserted {
                Ok(_) => return Ok(true),
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
                Err(e) => return Err(e),
            }
        }
        let n = client
            .execute(
                &format!(
                    "UPDATE {TABLE}
                     SET lock_until = now() + make_interval(secs => $2), locked_at = now(),
                         locked_by = $3
                     WHERE name = $1 AND lock_until <= now()"
                ),
                &[&self.name, &secs, &self.by],
            )
            .await?;
        Ok(n == 1)
    }

    /// Lets go: by name, whoever holds it now (as the source does).
    ///
    /// # Errors
    ///
    /// The server's.
    pub(crate) async fn unlock(&self, client: &Client) -> Result<(), tokio_postgres::Error> {
        client
            .execute(
                &format!("UPDATE {TABLE} SET lock_until = now() WHERE name = $1"),
                &[&self.name],
            )
            .await
            .map(drop)
    }
}
