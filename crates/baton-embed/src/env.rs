//! What every run and every task of a started scheduler shares ([`Env`]):
//! the store, the clock, the shutdown, the count of runs in flight, the
//! jobs, the alert hook, the runner of command jobs, the committer of
//! starts and the idle ledgers; and a call into the store on a blocking
//! thread ([`blocking`]).
//!
//! It only holds them: it never decides, runs or records anything.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::Clock;
use tokio::sync::watch;

use crate::plan::Plan;
use crate::store::Opened;

/// What a run shares with its scheduler.
#[derive(Clone)]
pub(crate) struct Env {
    pub(crate) store: Opened,
    pub(crate) clock: Arc<dyn Clock>,
    /// The shutdown's grace, once the scheduler is shutting down.
    pub(crate) shutdown: watch::Receiver<Option<Duration>>,
    /// How many runs are in flight.
    pub(crate) in_flight: Arc<watch::Sender<usize>>,
    /// The scheduler's jobs, by name: what a holder runs from the queue.
    pub(crate) jobs: Arc<std::collections::HashMap<String, Arc<Plan>>>,
    /// The service's hook for alerts ([`crate::Builder::on_alert`]).
    pub(crate) on_alert: Option<crate::hook::Hook>,
    /// What runs the command jobs' occurrences, when there are any.
    pub(crate) runner: Option<Arc<crate::runner::Runner>>,
    /// Where runs record their starts, committed together
    /// (`starts.rs`).
    pub(crate) starts: Option<crate::starts::Starts>,
    /// The ledgers opened and idle, for the next run (`idle_ledgers.rs`).
    pub(crate) ledgers: Arc<crate::idle_ledgers::Idle>,
}

/// Runs `f` with the store on a blocking thread.
pub(crate) async fn blocking<T: Send + 'static>(
    env: &Env,
    f: impl FnOnce(&dyn baton_store::Store) -> T + Send + 'static,
) -> Option<T> {
    let store = Arc::clone(&env.store);
    tokio::task::spawn_blocking(move || f(&*store)).await.ok()
}
