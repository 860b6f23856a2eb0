//! The ledger a run (or the scheduler's other tasks) reads and writes,
//! each call on a blocking thread; and the ledgers idle between runs.
//!
//! Opening the local ledger (a SQLite connection: the file opened, its
//! schema checked) costs milliseconds, and a run due now would pay it
//! before its function is called. So a ledger of the local store is kept
//! when its user is done with it, and the next one takes it, while it is
//! younger than [`KEEP`] (a ledger follows its file when it is moved
//! aside, at each call; the bound only keeps idle connections from piling
//! up). A shared store's (PostgreSQL) connections are never kept:
//! one that the server dropped meanwhile would fail the next run's first
//! write, and a run whose start cannot be recorded does not run.
//!
//! It never decides what a call means: it only hands ledgers out and
//! takes them back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_store::ledger::Records;

use crate::run::{Env, blocking};

/// How long a ledger is kept for the next user after it was opened.
pub(crate) const KEEP: Duration = Duration::from_secs(10);

/// How many idle ledgers are kept at most.
const MOST: usize = 16;

/// A ledger opened, and when (boot clock).
type Kept = (Box<dyn Records>, Duration);

/// The ledgers idle between users.
#[derive(Default)]
pub(crate) struct Idle {
    kept: Mutex<Vec<Kept>>,
}

impl Idle {
    /// A ledger younger than [`KEEP`] at `now` (boot clock), if one waits.
    fn take(&self, now: Duration) -> Option<Kept> {
        let mut kept = self.kept.lock().ok()?;
        kept.retain(|(_, opened)| now.saturating_sub(*opened) < KEEP);
        kept.pop()
    }

    /// Keeps `ledger` for the next user, when it is young enough.
    fn give(&self, ledger: Kept, now: Duration) {
        if now.saturating_sub(ledger.1) >= KEEP {
            return;
        }
        if let Ok(mut kept) = self.kept.lock()
            && kept.len() < MOST
        {
            kept.push(ledger);
        }
    }
}

/// The ledger, opened once for a run, each call on a blocking thread.
pub(crate) struct Ledger {
    records: Option<Box<dyn Records>>,
    /// When it was opened (boot clock).
    opened: Duration,
    /// Where it goes back to when dropped (the local store only), and the
    /// clock to tell its age by.
    idle: Option<(Arc<Idle>, Arc<dyn baton_lease::Clock>)>,
}

impl Ledger {
    /// The store's ledger: one idle since the last user, or opened.
    pub(crate) async fn open(env: &Env) -> Option<Self> {
        let boot = env.clock.boot();
        let keep =
            (!env.store.shared()).then(|| (Arc::clone(&env.ledgers), Arc::clone(&env.clock)));
        if let Some((records, opened)) = keep.as_ref().and_then(|(idle, _)| idle.take(boot)) {
            return Some(Self {
                records: Some(records),
                opened,
                idle: keep,
            });
        }
        let now = env.clock.wall();
        match blocking(env, move |s| s.records(now)).await {
            Some(Ok(records)) => Some(Self {
                records: Some(records),
                opened: boot,
                idle: keep,
            }),
            Some(Err(e)) => {
                tracing::warn!("failed to open the ledger: {e}");
                None
            }
            None => None,
        }
    }

    /// Runs `f` on the ledger on a blocking thread; `None` when that thread
    /// failed (the ledger is gone with it).
    pub(crate) async fn call<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut dyn Records) -> T + Send + 'static,
    ) -> Option<T> {
        let mut records = self.records.take()?;
        let (records, out) = tokio::task::spawn_blocking(move || {
            let out = f(&mut *records);
            (records, out)
        })
        .await
        .ok()?;
        self.records = Some(records);
        Some(out)
    }
}

impl Drop for Ledger {
    fn drop(&mut self) {
        if let (Some(records), Some((idle, clock))) = (self.records.take(), self.idle.as_ref()) {
            idle.give((records, self.opened), clock.boot());
        }
    }
}
