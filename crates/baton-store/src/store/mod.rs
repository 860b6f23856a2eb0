//! Where the scheduler keeps what it shares between processes and hosts:
//! the leases with their occurrence claims, each job's guard, and the
//! ledger.
//!
//! [`Store`] is the one trait the scheduler talks to, and what it must know
//! of a store is asked of it as methods ([`Store::shared`],
//! [`Store::renew_wait`]), never by which store it is. Two implement it:
//! `baton_ledger::Files`, the embedded default (lock files in
//! `STATE_DIR/locks/` and the SQLite ledger, nothing to install or start),
//! and `baton_pg::Postgres`, which several hosts share. A third store
//! implements this trait, [`crate::Held`] for the lease a run holds, and
//! the ledger's [`crate::ledger::Statements`] (`DESIGN.md`, "Adding a
//! store").
//!
//! Contention is an outcome ([`Taken::Refused`], [`Guard::Elsewhere`]);
//! an [`Error`] means the store could not decide, and the run does not
//! start. Nothing here falls back from one store to another.

mod error;
mod held_back;
mod taken;
mod vouch;

use std::time::Duration;

use baton_lease::{Claim, Verdict};
use jiff::Timestamp;

use crate::ledger::{Error as LedgerError, Records};

pub use error::Error;
pub use held_back::HeldBack;
pub use taken::{Guard, GuardClaim, Refused, Taken};
pub use vouch::Vouch;

/// What a store needs to know of one job's lock: the job, the lock it runs
/// under, and the lease's timing.
#[derive(Debug, Clone, Copy)]
pub struct LockRef<'a> {
    /// The job's name (its claims and its guard are kept under it).
    pub job: &'a str,
    /// The lock's name (a file `NAME.lock`, or a lease row).
    pub lock: &'a str,
    /// Which of the lock's slots (1-based; `max_concurrent`): slot 1 is
    /// the lock itself, slot K the lease `NAME@K` ([`baton_lease::slot`]).
    pub slot: u32,
    /// The lease's TTL.
    pub ttl: Duration,
    /// How long after its expiry a lease whose holder cannot be checked
    /// may be taken over.
    pub takeover_grace: Duration,
}

impl LockRef<'_> {
    /// The lease's name: the lock's for slot 1, `NAME@K` for slot K.
    pub fn name(&self) -> std::borrow::Cow<'_, str> {
        baton_lease::slot::slot_name(self.lock, self.slot)
    }
}

/// The scheduler's shared state: leases, claims, guards and the ledger.
pub trait Store {
    /// `files` or `postgres`, for messages and `status`.
    fn kind(&self) -> &'static str;
    /// Whether several hosts share this store. A shared store decides by
    /// its own clock, starts no run whose start it did not record, and
    /// fails a command it cannot serve as one whose configuration cannot be
    /// honoured; its leases free themselves when their holder stops
    /// renewing, so no one breaks them by hand.
    fn shared(&self) -> bool;
    /// The longest one renewal of a lease with `ttl` may wait for this
    /// store: the `renew_wait` of the self-fencing inequality.
    fn renew_wait(&self, ttl: Duration) -> Duration;
    /// What its locks are, for people: `lock files` or `lease rows`.
    fn locks_are(&self) -> &'static str;
    /// Where it is, for messages and to tell two stores apart: the ledger's
    /// path, or the server without the password.
    fn location(&self) -> String;
    /// Opens the ledger for writing (creating it when it does not exist).
    ///
    /// # Errors
    ///
    /// When the ledger cannot be opened: the caller says so and goes on
    /// unrecorded (a run, whose lease still guards it) or fails (a command
    /// that only reads or edits the ledger).
    fn records(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError>;
    /// As [`Store::records`], but a store that checks its ledger when it
    /// connects (a server's schema version, whether it takes writes) may
    /// instead check it in the first call's first round trip, sent with
    /// that call: the first call then fails as opening would have. For
    /// callers that treat any call's failure as they treat the open's.
    ///
    /// # Errors
    ///
    /// As [`Store::records`].
    fn records_pipelined(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
        self.records(now)
    }
    /// Opens the ledger to read it: `None` when there is none yet (a reader
    /// never creates one).
    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>>;
    /// Where a lock is, for messages and alerts: the lock file's path, or
    /// `lock NAME in HOST:PORT (database …)`.
    fn lock_label(&self, lock: &LockRef<'_>) -> String;
    /// Tries once to take a lock for `claim`, claiming its occurrence in
    /// the same critical section.
    ///
    /// # Errors
    ///
    /// When the store cannot decide (unreachable, unreadable, refused): the
    /// run must not start.
    fn try_acquire(&self, lock: &LockRef<'_>, claim: &Claim) -> Result<Taken, Error>;
    /// As [`Store::try_acquire`], for a caller that, once it holds the
    /// lease, takes its job's guard next ([`Store::take_guard`] of the same
    /// lock and the lease's fence): a store may take the guard in the
    /// acquisition's own round trip, exactly as that call would, and then
    /// answer that call without one. Only for such a caller: the guard says
    /// the job's run is under way here.
    ///
    /// # Errors
    ///
    /// As [`Store::try_acquire`].
    fn try_acquire_guarding(&self, lock: &LockRef<'_>, claim: &Claim) -> Result<Taken, Error> {
        self.try_acquire(lock, claim)
    }
    /// The slots of `lock`'s lock above `n` (1-based, ascending) that have
    /// a lease record: left by runs from when the job's `max_concurrent`
    /// was higher, which may still be in flight. A store that cannot say
    /// answers none (the default).
    ///
    /// # Errors
    ///
    /// When the store cannot be read: which slots are left is then
    /// unknown, and no run may start beside them.
    fn slots_above(&self, _lock: &LockRef<'_>, _n: u32) -> Result<Vec<u32>, Error> {
        Ok(Vec::new())
    }
    /// Judges a lock without changing it: `None` when it was never taken.
    ///
    /// # Errors
    ///
    /// When the store cannot be read.
    fn inspect(&self, lock: &LockRef<'_>) -> Result<Option<Verdict>, Error>;
    /// What the job's guard says: whether the job runs now under a lock
    /// other than its own (its lock was changed while it ran), or already
    /// claimed `occurrence` (or a later one) under another lock. Changes
    /// nothing; asked before a lease is taken, so that the common case
    /// claims nothing it will not run.
    ///
    /// # Errors
    ///
    /// When the store or the job's guard cannot be read: the run must not
    /// start.
    fn runs_elsewhere(&self, lock: &LockRef<'_>, occurrence: Option<i64>) -> Result<Guard, Error>;
    /// Says that [`Store::runs_elsewhere`] of `lock` will be asked after
    /// the ledger's next read: a store that can read the job's guard in
    /// that read's round trip does, and the question is then answered from
    /// what it found when that settles it. Only a hint: nothing is decided
    /// from it that the question itself would not decide, and a store may
    /// ignore it (the default).
    fn foresee_guard(&self, _lock: &LockRef<'_>) {}
    /// Takes the job's guard for the lease held on its lock under `fence`,
    /// claiming `occurrence`: [`Guard::Elsewhere`] when the job's run under
    /// another lock is in flight, [`Guard::Claimed`] when it claimed that
    /// occurrence or a later one there (either way nothing changed: the
    /// lease must be let go unused), else [`Guard::Clear`], and the guard
    /// names this lock and fence from now on, with what it claimed when it
    /// keeps claims of its own ([`GuardClaim`]). A job never runs under two
    /// locks at once, whatever its lock is renamed to (`DESIGN.md`, "A
    /// job's guard").
    ///
    /// # Errors
    ///
    /// As [`Store::runs_elsewhere`].
    fn take_guard(
        &self,
        lock: &LockRef<'_>,
        fence: u64,
        occurrence: Option<i64>,
    ) -> Result<(Guard, Option<GuardClaim>), Error>;
    /// Takes back what a take of the job's guard claimed, for a run that
    /// took it and then did not start (its start could be recorded
    /// nowhere, and its lease's claim was taken back too): a later run may
    /// then start the occurrence or record it missed. Only while the guard
    /// is still that run's; `true` when the claim was taken back.
    ///
    /// # Errors
    ///
    /// When the guard cannot be read or written.
    fn withdraw_guard(&self, lock: &LockRef<'_>, claim: &GuardClaim) -> Result<bool, Error>;
    /// The occurrence the job last claimed under its lock (its claim: every
    /// scheduled occurrence at or before it may have started), read without
    /// changing anything: `None` when the job never claimed one there.
    ///
    /// # Errors
    ///
    /// When the store cannot be read, or the lock's record cannot be read
    /// (so its claims are unknown).
    fn claim_of(&self, lock: &LockRef<'_>) -> Result<Option<i64>, Error> {
        match claim_in(self.inspect(lock)?.as_ref(), lock.job) {
            Claims::Known(at) => Ok(at),
            Claims::Unknown(why) => Err(Error::Claims {
                lock: self.lock_label(lock),
                why,
            }),
        }
    }
    /// [`Store::inspect`] of each of `locks`, in order; a lock that cannot
    /// be read is `None`. One connection for all of them in PostgreSQL.
    fn inspect_all(&self, locks: &[LockRef<'_>]) -> Vec<Option<Verdict>> {
        locks
            .iter()
            .map(|l| self.inspect(l).ok().flatten())
            .collect()
    }
    /// Whether the store grants nothing now because its server changed
    /// (a failover, a restore), and until when for the longest TTL plus
    /// takeover grace of `locks` ([`HeldBack`]); `None` when it grants as
    /// usual. A store whose server never changes never holds back (the
    /// default). Reading it may start the hold when this is the first
    /// look at a new server, as a grant would: a hold counted from later
    /// than the switch is never too short.
    ///
    /// # Errors
    ///
    /// When the store cannot be read: whether it holds back is unknown.
    fn held_back(&self, locks: &[LockRef<'_>]) -> Result<Option<HeldBack>, Error> {
        let _ = locks;
        Ok(None)
    }
    /// [`Store::inspect_all`] of `locks` and [`Store::held_back`] for them,
    /// together: one round trip for both in PostgreSQL (what `status`
    /// reads).
    fn survey(
        &self,
        locks: &[LockRef<'_>],
    ) -> (Vec<Option<Verdict>>, Result<Option<HeldBack>, Error>) {
        (self.inspect_all(locks), self.held_back(locks))
    }
    /// Runs `action` (with the lease's fence and run id) if `token` holds
    /// the lease now. With files it runs inside the lock file's critical
    /// section, so the lease cannot move meanwhile; in PostgreSQL it runs
    /// right after the row was read holding that token.
    ///
    /// # Errors
    ///
    /// When the store cannot be read; `action` did not run.
    fn while_held(
        &self,
        lock: &LockRef<'_>,
        token: &str,
        action: &mut dyn FnMut(u64, Option<&str>),
    ) -> Result<Vouch, Error>;
}

/// What a judgement of a lock says of a job's claim.
enum Claims {
    /// The claim (`None`: the job claimed nothing there).
    Known(Option<i64>),
    /// The record cannot be read, so its claims are unknown: why.
    Unknown(String),
}

/// `job`'s claim in what a judgement of its lock saw: the free marker's or
/// the holder's (live or not). No record, an empty one or a v2 lease hold
/// none; a record this build cannot read may hold one, so it is unknown.
fn claim_in(verdict: Option<&Verdict>, job: &str) -> Claims {
    use baton_lease::Holder;
    use baton_lease::decide::Foreign;
    let claims = match verdict {
        None | Some(Verdict::Absent | Verdict::Writing { .. } | Verdict::Abandoned { .. }) => {
            return Claims::Known(None);
        }
        Some(Verdict::Free(f)) => &f.claims,
        Some(
            Verdict::Live { holder, .. }
            | Verdict::Hung { holder, .. }
            | Verdict::Orphaned { holder, .. }
            | Verdict::Dead { holder, .. }
            | Verdict::Expired { holder, .. },
        ) => match holder {
            Holder::V3(h) => &h.claims,
            Holder::V2(_) => return Claims::Known(None),
        },
        Some(Verdict::Refused(Foreign::Version(v))) => {
            return Claims::Unknown(format!("it holds a record of {v}"));
        }
        Some(Verdict::Refused(Foreign::Unreadable(why) | Foreign::NotALock(why))) => {
            return Claims::Unknown(why.clone());
        }
    };
    Claims::Known(claims.get(job))
}
