//! The ledger a run (or the scheduler's other tasks) reads and writes,
//! each call on a blocking thread.
//!
//! A ledger of the local store is taken from the ledgers idle since their
//! last user, and given back to them when dropped
//! ([`crate::idle_ledgers`]). A shared store's (PostgreSQL) connections are
//! never kept: one that the server dropped meanwhile would fail the next
//! run's first write, and a run whose start cannot be recorded does not
//! run.
//!
//! It never decides what a call means: it only hands ledgers out and
//! takes them back.

use std::sync::Arc;
use std::time::Duration;

use baton_store::ledger::Records;

use crate::env::{Env, blocking};
use crate::idle_ledgers::Idle;

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
