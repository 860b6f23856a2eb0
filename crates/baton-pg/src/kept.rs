//! What one [`crate::Postgres`] keeps across its calls within a process: a
//! runtime of one worker thread, which drives its connections between
//! calls, and one [`Leases`] (one pool), opened at the first call and used
//! by every acquisition, guard, inspection and vouching after it. A run
//! then connects once for all of them rather than once per call.
//!
//! Every call still runs on a short-lived thread of its own that blocks on
//! the kept runtime ([`Kept::block_on`]), so it works from any thread,
//! inside the daemon's runtime or not, and every call keeps its deadline
//! (the pool's, per operation). A kept connection that the server or the
//! network closed is noticed by the pool and made again.
//!
//! What it must never keep: the connection of a lease a run holds
//! ([`crate::PgHeld`]) or the ledger's ([`crate::PgLedger`]). Those have
//! their own, so a renewal never waits behind an acquisition's or a
//! ledger's transaction.

use std::sync::OnceLock;

use baton_store::store::Error;
use tokio::runtime::Runtime;
use tokio::sync::OnceCell;

use crate::{Leases, Options, Target};

/// The runtime and the leases one store value keeps (see the module).
pub(crate) struct Kept {
    target: Target,
    options: Options,
    runtime: OnceLock<Runtime>,
    leases: OnceCell<Leases>,
}

impl Kept {
    /// Keeps nothing yet: the runtime is built and the store connected at
    /// the first call.
    pub(crate) fn new(target: Target, options: Options) -> Self {
        Self {
            target,
            options,
            runtime: OnceLock::new(),
            leases: OnceCell::new(),
        }
    }

    /// The kept runtime, built at the first call.
    fn runtime(&self) -> Result<&Runtime, Error> {
        if let Some(rt) = self.runtime.get() {
            return Ok(rt);
        }
        let built = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("baton-pg-store")
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        if let Err(spare) = self.runtime.set(built) {
            // Another call built one first.
            spare.shutdown_background();
        }
        // OK because it was set just above, by this call or another.
        Ok(self.runtime.get().expect("a runtime just set"))
    }

    /// The kept leases, connected (and the schema checked) at the first
    /// call; a call whose connection failed leaves nothing kept, and the
    /// next one connects again.
    async fn leases(&self) -> Result<&Leases, Error> {
        self.leases
            .get_or_try_init(async || {
                Leases::open_target(&self.target, self.options)
                    .await
                    .map_err(|e| Error::failed(None, e))
            })
            .await
    }

    /// Runs `f` with the kept leases to its end on a thread of its own that
    /// blocks on the kept runtime, and returns what it returned.
    pub(crate) fn block_on<T: Send>(
        &self,
        f: impl AsyncFnOnce(&Leases) -> Result<T, Error> + Send,
    ) -> Result<T, Error> {
        std::thread::scope(|s| {
            s.spawn(|| {
                let rt = self.runtime()?;
                rt.block_on(async {
                    let leases = self.leases().await?;
                    f(leases).await
                })
            })
            .join()
            .unwrap_or(Err(Error::Thread("the store's thread failed")))
        })
    }
}

impl Drop for Kept {
    /// Closes the kept connections and stops the runtime without waiting
    /// for work it cannot cancel (a lookup of the store's host name still
    /// under way); safe inside another runtime.
    fn drop(&mut self) {
        drop(self.leases.take());
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}
