//! The runtime that drives the connections one store value shares
//! ([`crate::Postgres`]): one worker thread, which reads and writes their
//! sockets between calls, so that any caller on any thread (the lease's
//! acquisitions, the ledger's thread, a held lease's thread) may use a
//! connection another made.
//!
//! It owns nothing but the runtime, and it is shared by counting: the last
//! of its holders to go stops it, without waiting for work it cannot
//! cancel (a lookup of the store's host still under way) beyond a moment
//! for its thread to end, and without waiting at all inside another
//! runtime. It never decides which connection is used
//! by whom: that is the pool's ([`crate::pool`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Runtime;
use tokio::task::JoinHandle;

/// The shared runtime (see the module).
pub(crate) struct Driver {
    /// `None` only while dropping.
    rt: Option<Runtime>,
}

impl Driver {
    /// A runtime of one worker thread, started now.
    pub(crate) fn start() -> std::io::Result<Arc<Self>> {
        let rt = crate::runtime::workers(1, "baton-pg-store").build()?;
        Ok(Arc::new(Self { rt: Some(rt) }))
    }

    fn runtime(&self) -> &Runtime {
        // OK because it is taken only by `drop`.
        self.rt
            .as_ref()
            .expect("a driver's runtime until it is dropped")
    }

    /// Runs `task` on the runtime's worker.
    pub(crate) fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.runtime().spawn(task)
    }

    /// Runs `f` to its end on the calling thread, which must not be one of
    /// a runtime's.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> F::Output {
        self.runtime().block_on(f)
    }
}

/// How long dropping the last holder outside a runtime waits for the
/// worker thread to end.
const THREAD_END: Duration = Duration::from_millis(500);

impl Drop for Driver {
    /// Outside a runtime, waits (at most [`THREAD_END`]) for the worker
    /// thread to end, so that a process that goes on single-threaded (a
    /// `tick` about to fork its workers) is; inside one, where waiting is
    /// not allowed, lets it end in the background.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                rt.shutdown_background();
            } else {
                rt.shutdown_timeout(THREAD_END);
            }
        }
    }
}
