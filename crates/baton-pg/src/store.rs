//! The PostgreSQL store ([`Postgres`], `[store] url`): leases, occurrence
//! claims and the ledger in the `baton` schema, shared by every host. A thin
//! adapter from the scheduler's [`Store`] to this crate's leases and ledger,
//! which own every statement.
//!
//! The scheduler is synchronous and `baton-pg` is asynchronous: each call
//! here runs on a short-lived thread ([`blocking`], or [`Kept::block_on`]
//! for the calls on leases), so it works from any thread, inside the
//! daemon's runtime or not. Acquisitions, guards, inspections and vouching
//! share the connections one value keeps ([`Kept`]), across its clones and
//! the values made from them ([`WeakPostgres`]); the ledger it opens
//! ([`PgLedger`]) takes its connection from the same pool for each
//! transaction, and the lease a run holds ([`PgHeld`]) borrows an idle one,
//! making its own only when none is idle. A run opens one connection.
//!
//! Timeouts follow the lease: every call on behalf of a job answers within
//! [`deadline_for`] its TTL, and the configuration refuses a job whose
//! `kill_grace` plus that deadline does not fit in its `takeover_grace`, so
//! a holder cut off from the store has stopped its job before another host
//! may take the lease. Nothing here falls back to local files: a store that
//! cannot be reached is an error, and the run does not start.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Claim, Verdict};
use baton_store::Store;
use baton_store::ledger::{Error as LedgerError, Records};
use baton_store::store::{Error, Guard, GuardClaim, HeldBack, LockRef, Refused, Taken, Vouch};
use jiff::Timestamp;

use crate::kept::Kept;
use crate::{Acquire, HolderFacts, Leases, Options, PgHeld, PgLedger, Switch, TakeGuard, Target};

/// The longest any call waits for the store on behalf of a job with `ttl`:
/// a quarter of the TTL, between 250 ms and 6 s. It is the renewal wait of
/// the self-fencing inequality.
pub fn deadline_for(ttl: Duration) -> Duration {
    (ttl / 4).clamp(Duration::from_millis(250), Duration::from_secs(6))
}

/// The connection settings for a job with `ttl`.
fn options_for(ttl: Duration) -> Options {
    let deadline = deadline_for(ttl);
    Options {
        statement_timeout: deadline.mul_f64(0.8),
        deadline,
        connect_timeout: deadline,
        pool_size: 1,
    }
}

/// The settings of calls that judge no lease by their timing (acquiring,
/// reading, the ledger): the library's defaults.
fn general() -> Options {
    Options::default()
}

/// Runs `f` to its end on a thread of its own with a current-thread
/// runtime, and returns what it returned.
fn blocking<T: Send>(f: impl AsyncFnOnce() -> Result<T, Error> + Send) -> Result<T, Error> {
    std::thread::scope(|s| {
        s.spawn(|| {
            baton_store::held::quiet_thread();
            let rt = crate::runtime::current_thread()
                .build()
                .map_err(Error::Runtime)?;
            let out = rt.block_on(f());
            // Never wait for a lookup of the store's host still under way.
            rt.shutdown_background();
            out
        })
        .join()
        .unwrap_or(Err(Error::Thread("the store's thread failed")))
    })
}

/// What an acquisition came to, carried out of the store's thread (a
/// grant already turned into the lease the run holds).
#[allow(clippy::large_enum_variant)] // Made once per acquisition.
enum Got {
    Held(PgHeld),
    Claimed(i64),
    Busy(Verdict),
    Switched(Switch),
}

/// The store at one resolved target. Its clones share its connections.
#[derive(Clone)]
pub struct Postgres {
    target: Target,
    kept: Arc<Kept>,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl Postgres {
    /// The store at `target`. Nothing connects until the first call.
    pub fn new(target: Target) -> Self {
        let kept = Arc::new(Kept::new(target.clone(), general()));
        Self { target, kept }
    }

    /// A ledger `opened` on this store, or why it could not be, as the
    /// scheduler's ledger error.
    fn ledger(
        &self,
        opened: Result<PgLedger, crate::Error>,
    ) -> Result<Box<dyn Records>, LedgerError> {
        match opened {
            Ok(l) => Ok(Box::new(l)),
            Err(e) => {
                let kind = if matches!(e, crate::Error::SchemaTooNew { .. }) {
                    baton_store::ledger::Kind::NewerSchema
                } else {
                    baton_store::ledger::Kind::Failed
                };
                Err(LedgerError::store(
                    kind,
                    baton_store::ledger::Unusable {
                        action: "open the ledger".into(),
                        store: self.target.describe(),
                        source: Box::new(e),
                    },
                ))
            }
        }
    }

    /// The ledger on the kept pool's connection (its schema checked now,
    /// with `check`, else with the first call's statements); on one of its
    /// own when the kept runtime could not be started.
    fn open_ledger(&self, check: bool) -> Result<PgLedger, crate::Error> {
        match self.kept.pool() {
            Ok(pool) => {
                // Whatever the command, its first read carries the names
                // of the locks' slots, for `slots_above`.
                self.kept.foresee_slots();
                let keep = Arc::clone(&self.kept);
                PgLedger::open_shared(&self.target, general(), check, pool, keep)
            }
            Err(_) if check => PgLedger::open(&self.target, general()),
            Err(_) => PgLedger::open_deferred(&self.target, general()),
        }
    }

    /// A handle that keeps nothing alive: [`WeakPostgres::upgrade`] gives
    /// back a value sharing this one's connections while any such value
    /// lives, so that the parts of one command share one connection
    /// without a process keeping it (or its runtime's thread) any longer.
    pub fn downgrade(&self) -> WeakPostgres {
        WeakPostgres {
            target: self.target.clone(),
            kept: Arc::downgrade(&self.kept),
        }
    }

    /// Where the store is (host, port, database, user; never the password)
    /// and how a connection to it is made.
    pub fn link(&self) -> (String, crate::examine::Link) {
        (self.target.describe(), self.target.link())
    }

    /// Connects once and reads the schema's version and the server's clock
    /// against `clock`, changing nothing ([`crate::examine`]).
    ///
    /// # Errors
    ///
    /// When no connection could be made or the reads failed.
    pub fn examine(
        &self,
        clock: &dyn baton_lease::Clock,
    ) -> Result<crate::examine::Examined, Error> {
        let target = self.target.clone();
        blocking(async move || {
            crate::examine::examine(&target, general(), clock)
                .await
                .map_err(|e| Error::failed(None, e))
        })
    }

    /// What of the server a connection encrypted as `[store]` says
    /// verifies (nothing is connected).
    pub fn verification(&self) -> crate::Verification {
        self.target.verification()
    }

    /// Connects once and says whether the connection was encrypted and
    /// what of the server was verified ([`crate::examine::secured`]).
    ///
    /// # Errors
    ///
    /// When no connection could be made.
    pub fn secured(&self) -> Result<crate::examine::Secured, Error> {
        let target = self.target.clone();
        blocking(async move || {
            crate::examine::secured(&target, general())
                .await
                .map_err(|e| Error::failed(None, e))
        })
    }

    /// Runs `f` with the kept leases, judging as `lock`'s policy says
    /// (acquiring and reading take the general deadline; only the holder's
    /// renewals need the TTL's).
    fn with_leases<T: Send>(
        &self,
        lock: &LockRef<'_>,
        f: impl AsyncFnOnce(Leases) -> Result<T, Error> + Send,
    ) -> Result<T, Error> {
        let policy = policy_of(lock);
        self.kept
            .block_on(async move |kept: &Leases| f(kept.clone().with_policy(policy)).await)
    }
}

/// A [`Postgres`] that keeps nothing alive ([`Postgres::downgrade`]).
#[derive(Clone)]
pub struct WeakPostgres {
    target: Target,
    kept: std::sync::Weak<Kept>,
}

impl WeakPostgres {
    /// The store, sharing the connections of the values it was made from,
    /// while any of them lives.
    pub fn upgrade(&self) -> Option<Postgres> {
        Some(Postgres {
            target: self.target.clone(),
            kept: self.kept.upgrade()?,
        })
    }
}

impl Postgres {
    /// [`Store::try_acquire`], taking `lock`'s job's guard with the grant
    /// when `guarding`.
    fn acquired(&self, lock: &LockRef<'_>, claim: &Claim, guarding: bool) -> Result<Taken, Error> {
        let name = lock.name().into_owned();
        let ttl = lock.ttl;
        let mut facts = HolderFacts::here();
        facts.run.clone_from(&claim.run);
        facts.grace = Some(lock.takeover_grace);
        let once = claim.once.clone();
        let describe = self.lock_label(lock);
        let job = lock.job.to_owned();
        let kept = Arc::clone(&self.kept);
        let got = self.with_leases(lock, async move |leases: Leases| {
            let guard = guarding.then_some(job.as_str());
            let (got, guarded) = leases
                .acquire_guarding(&name, &facts, ttl, once.as_ref(), guard)
                .await
                .map_err(|e| Error::failed(Some(describe.clone()), e))?;
            match got {
                Acquire::Acquired(lease) => {
                    if guarded {
                        kept.keep_guarded(&job, &name, lease.fence().get());
                    }
                    let held =
                        PgHeld::start_with(&leases, lease.clone(), &facts, ttl, options_for(ttl));
                    match held {
                        Ok(held) => Ok(Got::Held(held)),
                        Err(e) => {
                            let _ = leases.release(&lease).await;
                            Err(Error::failed(Some(describe), e))
                        }
                    }
                }
                Acquire::Claimed { occurrence, .. } => Ok(Got::Claimed(occurrence)),
                Acquire::Busy { verdict, .. } => Ok(Got::Busy(verdict)),
                Acquire::Switched(switch) => Ok(Got::Switched(switch)),
            }
        })?;
        Ok(match got {
            Got::Held(held) => Taken::Acquired(Box::new(held)),
            Got::Claimed(at) => Taken::Claimed { at },
            Got::Busy(verdict) => Taken::Refused(Refused::of_verdict(&verdict)),
            Got::Switched(switch) => Taken::Refused(held_back(&switch)),
        })
    }

    /// A guard's answer as the store's. (An occurrence claimed through
    /// another lock is refused by the claims table itself, whose key is the
    /// job and the occurrence, when the lease is granted.)
    fn elsewhere(&self, lock: &LockRef<'_>, found: Option<(String, Verdict)>) -> Guard {
        match found {
            None => Guard::Clear,
            Some((at, verdict)) => {
                // "its former lock NAME in …": the refusal says "lock".
                let label = format!("{at} in {}", self.target.describe());
                Guard::Elsewhere(Refused::elsewhere(lock.job, &label, &verdict))
            }
        }
    }
}

impl Postgres {
    /// Each of `locks` judged, and with `hold` whether grants are held back
    /// for that long after a switch of servers, read together on the kept
    /// connection ([`Leases::survey`]). When no connection could be had,
    /// nothing is known of any lock, and the hold's answer is the error.
    fn surveyed(
        &self,
        locks: &[LockRef<'_>],
        hold: Option<Duration>,
    ) -> (Vec<Option<Verdict>>, Result<Option<HeldBack>, Error>) {
        let asks: Vec<(String, baton_lease::Policy)> = locks
            .iter()
            .map(|l| (l.name().into_owned(), policy_of(l)))
            .collect();
        let n = asks.len();
        // The names of the locks' slots go with the reads, for the
        // `slots_above` that follows (`views::slots`), unless known.
        let slots = !locks.is_empty() && self.kept.slot_names().is_none();
        let sent = baton_lease::Clock::boot(&baton_lease::SystemClock);
        let got = self.kept.block_on(async move |kept: &Leases| {
            let asks: Vec<(&str, baton_lease::Policy)> =
                asks.iter().map(|(n, p)| (n.as_str(), *p)).collect();
            kept.survey_with_slots(&asks, hold, slots)
                .await
                .map_err(|e| Error::failed(None, e))
        });
        match got {
            Ok((verdicts, held, names)) => {
                if let Some(names) = names {
                    self.kept.keep_slot_names(sent, names);
                }
                (verdicts, held.map_err(|e| Error::failed(None, e)))
            }
            Err(e) => (vec![None; n], Err(e)),
        }
    }
}

/// The longest TTL plus takeover grace of `locks`: how long after a switch
/// of servers the last of them may be granted.
fn longest_hold(locks: &[LockRef<'_>]) -> Option<Duration> {
    locks.iter().map(|l| l.ttl + l.takeover_grace).max()
}

/// A grant or a guard held back after a switch of servers: refused as a
/// busy lock is (try again), saying why and until when.
fn held_back(switch: &Switch) -> Refused {
    Refused {
        reason: baton_store::words::MissReason::Busy,
        holder: None,
        why: switch.describe(),
    }
}

/// The judge's policy for `lock`: its takeover grace.
fn policy_of(lock: &LockRef<'_>) -> baton_lease::Policy {
    baton_lease::Policy {
        takeover_grace: lock.takeover_grace,
        ..baton_lease::Policy::default()
    }
}

impl Store for Postgres {
    fn kind(&self) -> &'static str {
        "postgres"
    }

    fn shared(&self) -> bool {
        true
    }

    fn renew_wait(&self, ttl: Duration) -> Duration {
        deadline_for(ttl)
    }

    fn locks_are(&self) -> &'static str {
        "lease rows"
    }

    fn location(&self) -> String {
        self.target.describe()
    }

    fn records(&self, _now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
        self.ledger(self.open_ledger(true))
    }

    /// The schema is checked with the first call's statements.
    fn records_pipelined(&self, _now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
        self.ledger(self.open_ledger(false))
    }

    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>> {
        Some(self.records(now))
    }

    fn lock_label(&self, lock: &LockRef<'_>) -> String {
        format!("lock {} in {}", lock.name(), self.target.describe())
    }

    fn try_acquire(&self, lock: &LockRef<'_>, claim: &Claim) -> Result<Taken, Error> {
        self.acquired(lock, claim, false)
    }

    /// The job's guard is taken behind the first conditional grant, in its
    /// round trip; [`Store::take_guard`] of that lock and fence then
    /// answers without one.
    fn try_acquire_guarding(&self, lock: &LockRef<'_>, claim: &Claim) -> Result<Taken, Error> {
        self.acquired(lock, claim, true)
    }

    /// Read from the names of every lock's slots above its first, which
    /// the ledger's first read of a command carries behind it
    /// (`Kept::foresee_slots`), else in a round trip of their own; kept
    /// for a second.
    fn slots_above(&self, lock: &LockRef<'_>, n: u32) -> Result<Vec<u32>, Error> {
        let names = match self.kept.slot_names() {
            Some(names) => names,
            None => {
                let sent = baton_lease::Clock::boot(&baton_lease::SystemClock);
                let names = self.with_leases(lock, async |leases: Leases| {
                    leases
                        .slot_names()
                        .await
                        .map_err(|e| Error::failed(None, e))
                })?;
                self.kept.keep_slot_names(sent, names.clone());
                names
            }
        };
        let mut above: Vec<u32> = names
            .iter()
            .map(|name| baton_lease::slot::slot_of(name))
            .filter(|&(base, k)| base == lock.lock && k > n && k <= baton_lease::slot::MOST)
            .map(|(_, k)| k)
            .collect();
        above.sort_unstable();
        above.dedup();
        Ok(above)
    }

    /// The guard is read behind the ledger's next read, in its round trip.
    fn foresee_guard(&self, lock: &LockRef<'_>) {
        self.kept.foresee_guard(lock.job);
    }

    fn runs_elsewhere(&self, lock: &LockRef<'_>, _occurrence: Option<i64>) -> Result<Guard, Error> {
        match self.kept.foreseen_guard(lock.job) {
            // No guard, or one naming this lock, whose own lease excludes
            // the job's other runs: as `Leases::guard_of` decides, with
            // nothing more to read.
            Some(None) => return Ok(Guard::Clear),
            Some(Some((named, _))) if baton_lease::slot::same_lock(&named, &lock.name()) => {
                return Ok(Guard::Clear);
            }
            // Another lock: judged from a read of its own, as always.
            Some(Some(_)) | None => {}
        }
        let (name, at) = (lock.job.to_owned(), lock.name().into_owned());
        let found = self.with_leases(lock, async move |leases: Leases| {
            leases
                .guard_of(&name, &at)
                .await
                .map_err(|e| Error::failed(None, e))
        })?;
        Ok(self.elsewhere(lock, found))
    }

    fn take_guard(
        &self,
        lock: &LockRef<'_>,
        fence: u64,
        _occurrence: Option<i64>,
    ) -> Result<(Guard, Option<GuardClaim>), Error> {
        let (name, at) = (lock.job.to_owned(), lock.name().into_owned());
        if self.kept.take_guarded(&name, &at, fence) {
            // Taken with the grant of this very lease.
            return Ok((Guard::Clear, None));
        }
        let found = self.with_leases(lock, async move |leases: Leases| {
            leases
                .take_guard(&name, &at, fence)
                .await
                .map_err(|e| Error::failed(None, e))
        })?;
        // The guard names the lock and fence only: a claim is a row of the
        // claims table, keyed by the job and the occurrence.
        let guard = match found {
            TakeGuard::Taken => Guard::Clear,
            TakeGuard::Elsewhere { lock: at, verdict } => self.elsewhere(lock, Some((at, verdict))),
            TakeGuard::Switched(switch) => Guard::Elsewhere(held_back(&switch)),
        };
        Ok((guard, None))
    }

    fn withdraw_guard(&self, _lock: &LockRef<'_>, _claim: &GuardClaim) -> Result<bool, Error> {
        // Nothing to take back: the guard claims nothing here. The lease's
        // claim, in its row and in `baton.claims`, is the occurrence's
        // record, and the lease takes it back (`Leases::withdraw`).
        Ok(false)
    }

    fn inspect(&self, lock: &LockRef<'_>) -> Result<Option<Verdict>, Error> {
        let name = lock.name().into_owned();
        self.with_leases(lock, async move |leases: Leases| {
            leases
                .inspect(&name)
                .await
                .map_err(|e| Error::failed(None, e))
        })
    }

    fn inspect_all(&self, locks: &[LockRef<'_>]) -> Vec<Option<Verdict>> {
        self.surveyed(locks, None).0
    }

    /// Read on the kept connection, for the longest TTL plus takeover
    /// grace of `locks` (a grant's hold is its own lock's).
    fn held_back(&self, locks: &[LockRef<'_>]) -> Result<Option<HeldBack>, Error> {
        match longest_hold(locks) {
            Some(hold) => self.surveyed(&[], Some(hold)).1,
            None => Ok(None),
        }
    }

    /// The locks' reads and the hold's sent together: one round trip.
    fn survey(
        &self,
        locks: &[LockRef<'_>],
    ) -> (Vec<Option<Verdict>>, Result<Option<HeldBack>, Error>) {
        self.surveyed(locks, longest_hold(locks))
    }

    fn while_held(
        &self,
        lock: &LockRef<'_>,
        token: &str,
        action: &mut dyn FnMut(u64, Option<&str>),
    ) -> Result<Vouch, Error> {
        let name = lock.name().into_owned();
        let token = token.to_owned();
        let held = self.with_leases(lock, async move |leases: Leases| {
            leases
                .vouch(&name, &token)
                .await
                .map_err(|e| Error::failed(None, e))
        })?;
        Ok(match held {
            Some((fence, run)) => {
                action(fence, run.as_deref());
                Vouch::Holder { fence, run }
            }
            None => {
                Vouch::NotHolder("it is free or held by another run, not with this token".into())
            }
        })
    }
}
