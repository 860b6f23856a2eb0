//! What one [`crate::Postgres`] keeps across its calls within a process: the
//! runtime that drives its connections ([`Driver`]), the one pool they are
//! kept in, and the [`Leases`] on that pool, made at the first call and
//! used by every acquisition, guard, inspection and vouching after it. The
//! ledger it opens takes its connection from the same pool for each
//! transaction, and a lease a run holds borrows an idle one from it: a run
//! then connects once for all of them rather than once per caller.
//!
//! Every call still runs on a short-lived thread of its own that blocks on
//! the kept runtime ([`Kept::block_on`]), so it works from any thread,
//! inside the daemon's runtime or not, and every call keeps its deadline
//! (the pool's, per operation). A kept connection that the server or the
//! network closed is noticed by the pool and made again.
//!
//! What it must never do: make a held lease's renewal wait for a
//! connection. A held lease borrows only a connection that is idle at that
//! instant, and otherwise uses one of its own (`crate::pool`).

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

use baton_store::store::Error;

use crate::driver::Driver;
use crate::pool::Pool;
use crate::statements::SLOT_NAMES;
use crate::{Leases, Options, Target};

/// The runtime, pool and leases one store value keeps (see the module).
pub(crate) struct Kept {
    target: Target,
    options: Options,
    driver: OnceLock<Arc<Driver>>,
    leases: OnceLock<Leases>,
    /// The job, lock and fence of the last guard taken behind its lease's
    /// grant ([`Leases::acquire_guarding`]), for the take that follows it.
    guarded: Mutex<Option<(String, String, u64)>>,
    /// A job's guard, read behind the ledger's next read transaction
    /// ([`Kept::foresee_guard`]), for the store's first look at it.
    foreseen: Mutex<Option<(String, Answer)>>,
    /// The names of the locks' slots above their first
    /// ([`Kept::foresee_slots`]).
    slots: Mutex<Slots>,
}

/// What is known of the names of the locks' slots above their first.
enum Slots {
    Unknown,
    /// A read of them rides behind the ledger's next read, seated at
    /// `since` (boot clock).
    Riding {
        since: Duration,
        answer: Answer,
    },
    /// Read at `at` (boot clock, or when the read that found them was
    /// seated).
    Read {
        at: Duration,
        names: Vec<String>,
    },
}

/// How long the names of the slots, once read, answer for: a command's
/// whole run, and no longer than a second in a process that lives on (the
/// daemon), whose views and runs then read them again. A slot above a
/// lowered `max_concurrent` is made only by a process still configured
/// with the higher one; one made within this second is missed as it
/// would be by a read made just before it.
const SLOTS_FRESH: Duration = Duration::from_secs(1);

/// Where the answer of a read riding behind a ledger transaction arrives
/// (`crate::pool::Rider`).
type Answer =
    tokio::sync::oneshot::Receiver<Result<Option<tokio_postgres::Row>, tokio_postgres::Error>>;

impl Kept {
    /// Keeps nothing yet: the runtime is started at the first call, and
    /// the store connected by the first statement.
    pub(crate) fn new(target: Target, options: Options) -> Self {
        Self {
            target,
            options,
            driver: OnceLock::new(),
            leases: OnceLock::new(),
            guarded: Mutex::new(None),
            foreseen: Mutex::new(None),
            slots: Mutex::new(Slots::Unknown),
        }
    }

    /// Keeps that `job`'s guard names `lock` and `fence`, taken with the
    /// lease's grant, for [`Kept::take_guarded`].
    pub(crate) fn keep_guarded(&self, job: &str, lock: &str, fence: u64) {
        let mut g = self.guarded.lock().unwrap_or_else(PoisonError::into_inner);
        *g = Some((job.to_owned(), lock.to_owned(), fence));
    }

    /// Whether `job`'s guard was taken for `lock` and `fence` with the
    /// lease's grant; forgotten either way, so it answers one take.
    pub(crate) fn take_guarded(&self, job: &str, lock: &str, fence: u64) -> bool {
        let mut g = self.guarded.lock().unwrap_or_else(PoisonError::into_inner);
        g.take()
            .is_some_and(|(j, l, f)| j == job && l == lock && f == fence)
    }

    /// Has `job`'s guard read behind the ledger's next read transaction
    /// on the kept pool, in its round trip, for [`Kept::foreseen_guard`].
    /// Nothing when the pool cannot be made (the read is then made when
    /// asked for).
    pub(crate) fn foresee_guard(&self, job: &str) {
        let Ok(pool) = self.pool() else {
            return;
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        pool.ride(crate::pool::Rider {
            sql: crate::guard_statements::SELECT,
            params: vec![job.to_owned()],
            reply,
        });
        let mut f = self.foreseen.lock().unwrap_or_else(PoisonError::into_inner);
        *f = Some((job.to_owned(), answer));
    }

    /// What the foreseen read of `job`'s guard found: `Some(None)` when the
    /// job has no guard, `Some(Some((lock, fence)))` when it names one;
    /// `None` when it was not foreseen, has not been read, or failed (the
    /// caller reads it itself). Forgotten either way, so it answers once.
    pub(crate) fn foreseen_guard(&self, job: &str) -> Option<Option<(String, i64)>> {
        let mut f = self.foreseen.lock().unwrap_or_else(PoisonError::into_inner);
        let (j, mut answer) = f.take()?;
        if j != job {
            return None;
        }
        match answer.try_recv() {
            Ok(Ok(None)) => Some(None),
            Ok(Ok(Some(row))) => match (row.try_get(0), row.try_get(1)) {
                (Ok(lock), Ok(fence)) => Some(Some((lock, fence))),
                _ => None,
            },
            Ok(Err(_)) | Err(_) => None,
        }
    }

    /// Has the names of the locks' slots above their first read behind
    /// the ledger's next read transaction on the kept pool, in its round
    /// trip, for [`Kept::slot_names`]; nothing when they were read less
    /// than [`SLOTS_FRESH`] ago or such a read is seated already.
    pub(crate) fn foresee_slots(&self) {
        let now = SystemClock.boot();
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        match &*slots {
            Slots::Read { at, .. } if now.saturating_sub(*at) < SLOTS_FRESH => return,
            Slots::Riding { since, .. } if now.saturating_sub(*since) < SLOTS_FRESH => return,
            _ => {}
        }
        let Ok(pool) = self.pool() else {
            return;
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        pool.ride(crate::pool::Rider {
            sql: SLOT_NAMES,
            params: Vec::new(),
            reply,
        });
        *slots = Slots::Riding { since: now, answer };
    }

    /// The names of the locks' slots above their first, when read less
    /// than [`SLOTS_FRESH`] ago (by a read riding behind the ledger's, or
    /// one kept with [`Kept::keep_slot_names`]); `None` when the caller
    /// must read them.
    pub(crate) fn slot_names(&self) -> Option<Vec<String>> {
        let now = SystemClock.boot();
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        if let Slots::Riding { since, answer } = &mut *slots {
            match answer.try_recv() {
                Ok(Ok(Some(row))) => match row.try_get::<_, Vec<String>>(0) {
                    Ok(names) => {
                        *slots = Slots::Read { at: *since, names };
                    }
                    Err(_) => *slots = Slots::Unknown,
                },
                // Not ridden yet: it may still, and answer a later call.
                Err(tokio::sync::oneshot::error::TryRecvError::Empty) => return None,
                Ok(_) | Err(_) => *slots = Slots::Unknown,
            }
        }
        match &*slots {
            Slots::Read { at, names } if now.saturating_sub(*at) < SLOTS_FRESH => {
                Some(names.clone())
            }
            _ => None,
        }
    }

    /// Keeps the names of the locks' slots the caller read, sent at
    /// `sent` (boot clock), for [`Kept::slot_names`].
    pub(crate) fn keep_slot_names(&self, sent: Duration, names: Vec<String>) {
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        *slots = Slots::Read { at: sent, names };
    }

    /// The kept runtime, started at the first call.
    fn driver(&self) -> Result<&Arc<Driver>, Error> {
        if let Some(d) = self.driver.get() {
            return Ok(d);
        }
        let started = Driver::start().map_err(Error::Runtime)?;
        // Another call may have started one first; the spare stops when
        // dropped.
        let _ = self.driver.set(started);
        // OK because it was set just above, by this call or another.
        Ok(self.driver.get().expect("a driver just set"))
    }

    /// The kept leases, on the kept pool; nothing is connected until their
    /// first statement.
    fn leases(&self) -> Result<&Leases, Error> {
        if let Some(l) = self.leases.get() {
            return Ok(l);
        }
        let pool = Pool::new(&self.target, self.options).driven_by(Arc::clone(self.driver()?));
        let _ = self
            .leases
            .set(Leases::on_pool(Arc::new(pool), &self.target));
        // OK because it was set just above, by this call or another.
        Ok(self.leases.get().expect("leases just set"))
    }

    /// The kept pool, for the ledger this store value opens.
    pub(crate) fn pool(&self) -> Result<Arc<Pool>, Error> {
        Ok(Arc::clone(&self.leases()?.pool))
    }

    /// Runs `f` with the kept leases to its end on a thread of its own that
    /// blocks on the kept runtime, and returns what it returned.
    pub(crate) fn block_on<T: Send>(
        &self,
        f: impl AsyncFnOnce(&Leases) -> Result<T, Error> + Send,
    ) -> Result<T, Error> {
        std::thread::scope(|s| {
            s.spawn(|| {
                let leases = self.leases()?;
                let driver = self.driver()?;
                driver.block_on(f(leases))
            })
            .join()
            .unwrap_or(Err(Error::Thread("the store's thread failed")))
        })
    }
}
