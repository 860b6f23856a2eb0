//! The lease a session holds, shared between its supervising thread and the
//! thread each renewal runs on.
//!
//! A renewal is a call into the lease's store, and a store can block: a
//! lock file's mutex on a hung filesystem, a PostgreSQL connection whose
//! bytes are dropped, a thread stalled by the kernel. The supervisor must
//! stop its job on time whatever a renewal does (`DESIGN.md`,
//! "Self-fencing"), so a renewal never runs on the supervising thread: it
//! runs on the session's renewal thread, started once with the session
//! (before any step), and its answer is collected without waiting. At most
//! one renewal is under way at a time. A renewal needs no thread, nor any
//! other resource, made while the job runs: a job that takes every task
//! its user or cgroup may have (`RLIMIT_NPROC`, `pids.max`) cannot make
//! its own lease look lost.
//!
//! Each answer carries the renewal's send time: the boot clock read on the
//! renewal's thread right before the store is called, so the record's
//! `renewed` is never earlier. The session measures its deadline from it.
//!
//! The other calls (naming the job's group, restating, releasing) are made
//! by the supervising thread between steps, once no renewal is under way;
//! they wait a bounded time for one that is, and say the lease is busy when
//! it does not answer. Nothing here decides that the lease is lost or stops
//! anything: that is the session's.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

use baton_store::held::{Held, HeldError, Renewal};

/// What the session shows of its lease while it holds it: the facts that
/// never change for one acquisition, read once.
#[derive(Debug, Clone)]
pub struct Holding {
    fence: u64,
    token: String,
    host: String,
    describe: String,
    ttl: Duration,
    renew_wait: Duration,
}

impl Holding {
    /// This acquisition's fence.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// This acquisition's token, as shown to the job (`BATON_TOKEN`).
    pub fn token(&self) -> String {
        self.token.clone()
    }

    /// The host the lease record names as its holder's.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Where the lease is kept, for messages.
    pub fn describe(&self) -> String {
        self.describe.clone()
    }

    /// The lease's TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The longest one call into the store may block ([`Held::renew_wait`]).
    pub fn renew_wait(&self) -> Duration {
        self.renew_wait
    }
}

/// A renewal's answer: when it was sent, and what the store said.
pub(crate) type Answer = (Duration, Result<Renewal, HeldError>);

/// The lease, the renewal thread, and the renewal under way, if any.
pub(crate) struct Renewer {
    lease: Arc<Mutex<Option<Box<dyn Held>>>>,
    holding: Holding,
    /// Asks the renewal thread for one renewal. Dropped with the session,
    /// which ends the thread once it is idle.
    asks: SyncSender<()>,
    /// The renewal thread's answers, one per ask.
    answers: Receiver<Answer>,
    /// When the renewal under way was asked for, if one is.
    under_way: Option<Duration>,
    clock: SystemClock,
}

impl Renewer {
    /// The lease, with its renewal thread started.
    ///
    /// # Errors
    ///
    /// When the thread cannot be started (the process or its user is out of
    /// tasks or memory): the lease, given back, and why.
    pub(crate) fn new(lease: Box<dyn Held>) -> Result<Self, (Box<dyn Held>, std::io::Error)> {
        let holding = Holding {
            fence: lease.fence(),
            token: lease.token(),
            host: lease.host().to_owned(),
            describe: lease.describe(),
            ttl: lease.ttl(),
            renew_wait: lease.renew_wait(),
        };
        let lease = Arc::new(Mutex::new(Some(lease)));
        let (asks, asked) = mpsc::sync_channel::<()>(1);
        let (answer, answers) = mpsc::sync_channel(1);
        let clock = SystemClock;
        let spawned = std::thread::Builder::new()
            .name("baton-renewal".into())
            .spawn({
                let lease = Arc::clone(&lease);
                move || {
                    // Until the session drops its end: one renewal per ask.
                    while asked.recv().is_ok() {
                        if answer.send(renew(&lease, clock)).is_err() {
                            return;
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            let lease = lock(&lease).take().expect("the lease was just put in");
            return Err((
                lease,
                std::io::Error::new(
                    e.kind(),
                    format!("failed to start the thread that renews the lease: {e}"),
                ),
            ));
        }
        Ok(Self {
            lease,
            holding,
            asks,
            answers,
            under_way: None,
            clock,
        })
    }

    pub(crate) fn holding(&self) -> &Holding {
        &self.holding
    }

    /// Whether a renewal has been started and not yet collected.
    pub(crate) fn busy(&self) -> bool {
        self.under_way.is_some()
    }

    /// When the renewal under way was started (boot clock), if one is.
    pub(crate) fn started(&self) -> Option<Duration> {
        self.under_way
    }

    /// Starts a renewal on the renewal thread, unless one is under way.
    ///
    /// # Errors
    ///
    /// When the renewal thread is gone (it cannot be: it ends only with the
    /// session); nothing was sent.
    pub(crate) fn start(&mut self) -> Result<(), HeldError> {
        if self.under_way.is_some() {
            return Ok(());
        }
        let started = self.clock.boot();
        self.asks.try_send(()).map_err(|_| vanished())?;
        self.under_way = Some(started);
        Ok(())
    }

    /// The answer of the renewal under way, if it has come; never waits.
    pub(crate) fn collect(&mut self) -> Option<Answer> {
        self.under_way?;
        let answer = match self.answers.try_recv() {
            Ok(a) => a,
            Err(TryRecvError::Empty) => return None,
            Err(TryRecvError::Disconnected) => (self.clock.boot(), Err(vanished())),
        };
        self.under_way = None;
        Some(answer)
    }

    /// Waits at most `limit` for the renewal under way to answer. `Ok` with
    /// its answer (`None` when none was under way); `Err(())` when it is
    /// still under way.
    pub(crate) fn settle(&mut self, limit: Duration) -> Result<Option<Answer>, ()> {
        if self.under_way.is_none() {
            return Ok(None);
        }
        let answer = match self.answers.recv_timeout(limit) {
            Ok(a) => a,
            Err(RecvTimeoutError::Timeout) => return Err(()),
            Err(RecvTimeoutError::Disconnected) => (self.clock.boot(), Err(vanished())),
        };
        self.under_way = None;
        Ok(Some(answer))
    }

    /// Calls `f` with the lease; only once no renewal is under way (see
    /// [`Renewer::settle`]). `None` when the lease was already released.
    pub(crate) fn with<R>(&mut self, f: impl FnOnce(&mut dyn Held) -> R) -> Option<R> {
        debug_assert!(self.under_way.is_none(), "a renewal is under way");
        let mut guard = lock(&self.lease);
        guard.as_mut().map(|l| f(&mut **l))
    }

    /// Takes the lease out, for its release; only once no renewal is under
    /// way. `None` when it was already taken.
    pub(crate) fn take(&mut self) -> Option<Box<dyn Held>> {
        debug_assert!(self.under_way.is_none(), "a renewal is under way");
        lock(&self.lease).take()
    }
}

/// One renewal, on the renewal thread: when it was sent (read right before
/// the store is called), and what the store said.
fn renew(lease: &Mutex<Option<Box<dyn Held>>>, clock: SystemClock) -> Answer {
    // The fault campaign's renewal stall stalls this thread, as a store
    // that does not answer would.
    fail::fail_point!("renewal");
    let mut guard = lock(lease);
    let sent = clock.boot();
    let answer = match guard.as_mut() {
        Some(l) => l.renew(),
        None => Ok(Renewal::Unconfirmed(
            "the lease was already released".into(),
        )),
    };
    (sent, answer)
}

fn lock(m: &Mutex<Option<Box<dyn Held>>>) -> MutexGuard<'_, Option<Box<dyn Held>>> {
    // OK because a panic aborts the process: a poisoned lock is never seen
    // by anyone who could go on.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The renewal's thread ended without an answer.
fn vanished() -> HeldError {
    HeldError::new(std::io::Error::other(
        "the renewal's thread ended without an answer",
    ))
}
