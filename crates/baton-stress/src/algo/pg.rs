//! The store's implementations behind [`super::Algorithm`]: baton's lease in
//! PostgreSQL (`baton_pg::Leases`) and the ShedLock-style exhibit, each on a
//! connection of the contender's own, standing on the contender's host (see
//! [`crate::store`]).
//!
//! baton's adapter judges with the campaign's takeover grace, so a holder on
//! another host is taken over only once its renewal is older than TTL plus
//! grace by the server's clock, and a holder on this host only on evidence
//! of its death. Busy is "not acquired"; a claimed occurrence (no scenario
//! claims one) and every error are instrument failures.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::Policy;
use baton_pg::{Acquire, HolderFacts, Leases, PgLease, Release, Renewal};
use tokio_postgres::Client;

use super::{Algorithm, Failure, Holding, Kept, Let};
use crate::config::{Impl, Timing};
use crate::exhibits::seed000::AfterLoad;
use crate::exhibits::shedlock::ShedLock;
use crate::store::{Host, Store};

/// `imp` on the lock `name` of the store, standing on `host`.
pub(super) fn connect(
    imp: Impl,
    store: Store,
    name: &str,
    host: &Host,
    timing: &Timing,
) -> Result<Box<dyn Algorithm>, String> {
    match imp {
        Impl::Baton => {
            let leases = store
                .leases()
                .map_err(|e| e.to_string())?
                .with_observer(host.observer.clone())
                .with_policy(Policy {
                    takeover_grace: timing.takeover_grace,
                    ..Policy::default()
                });
            Ok(Box::new(PgBaton(Arc::new(Shared {
                store,
                leases,
                name: name.to_owned(),
                facts: host.facts.clone(),
                ttl: timing.baton_ttl,
            }))))
        }
        Impl::Shedlock => {
            let client = store.connect().map_err(|e| e.to_string())?;
            Ok(Box::new(Shed(Arc::new(ShedShared {
                lock: ShedLock::new(name, timing.baton_ttl, &host.facts.host),
                store,
                client,
            }))))
        }
        other => Err(format!(
            "{} is a file lock; it does not contend in a store",
            other.name()
        )),
    }
}

fn instrument(e: impl std::fmt::Display) -> Failure {
    Failure::Instrument(e.to_string())
}

struct Shared {
    store: Store,
    leases: Leases,
    name: String,
    facts: HolderFacts,
    ttl: Duration,
}

struct PgBaton(Arc<Shared>);

impl Algorithm for PgBaton {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        let s = &*self.0;
        match s
            .store
            .block_on(s.leases.acquire(&s.name, &s.facts, s.ttl, None))
            .map_err(instrument)?
        {
            Acquire::Acquired(lease) => Ok(Some(Box::new(PgHeld {
                shared: Arc::clone(&self.0),
                lease,
            }))),
            Acquire::Busy { .. } | Acquire::Switched(_) => Ok(None),
            Acquire::Claimed { .. } => Err(instrument(
                "an occurrence was claimed though no scenario claims one",
            )),
        }
    }
}

struct PgHeld {
    shared: Arc<Shared>,
    lease: PgLease,
}

impl Holding for PgHeld {
    fn renew(&mut self) -> Result<Kept, Failure> {
        let s = &*self.shared;
        match s
            .store
            .block_on(s.leases.renew(&self.lease))
            .map_err(instrument)?
        {
            Renewal::Renewed(_) => Ok(Kept::Renewed),
            Renewal::Lost => Ok(Kept::Lost),
        }
    }

    fn release(self: Box<Self>) -> Result<Let, Failure> {
        let s = &*self.shared;
        match s
            .store
            .block_on(s.leases.release(&self.lease))
            .map_err(instrument)?
        {
            Release::Released(_) => Ok(Let::Released),
            Release::Lost => Ok(Let::Displaced),
        }
    }
}

struct ShedShared {
    lock: ShedLock,
    store: Store,
    client: Client,
}

struct Shed(Arc<ShedShared>);

impl Algorithm for Shed {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        let s = &*self.0;
        if s.store
            .block_on(s.lock.lock(&s.client))
            .map_err(instrument)?
        {
            Ok(Some(Box::new(ShedHeld(Arc::clone(&self.0)))))
        } else {
            Ok(None)
        }
    }
}

struct ShedHeld(Arc<ShedShared>);

impl Holding for ShedHeld {
    fn renew(&mut self) -> Result<Kept, Failure> {
        Ok(Kept::NoRenewal) // lockAtMostFor is stamped once, at lock
    }

    fn release(self: Box<Self>) -> Result<Let, Failure> {
        // Like v1, it cannot tell whether it was displaced: it unlocks by name.
        let s = &*self.0;
        s.store
            .block_on(s.lock.unlock(&s.client))
            .map(|()| Let::Released)
            .map_err(instrument)
    }
}
