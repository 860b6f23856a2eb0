//! The embedded store ([`Files`]): lock files under `STATE_DIR/locks/` and
//! the SQLite ledger `STATE_DIR/baton.db`, nothing to install or start. It
//! adds nothing to `baton-lease` and the ledger, which own those files; it
//! says where they are and maps their outcomes to the store's. It is not
//! shared: one host's processes meet in its files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Claim, Clock, Fence, Guarded, Outcome, Token, Verdict, Vouched, mutex_wait_for};
use baton_store::Store;
use baton_store::ledger::{Error as LedgerError, Records};
use baton_store::store::{Error, Guard, GuardClaim, LockRef, Refused, Taken, Vouch};
use jiff::Timestamp;

use crate::Ledger;

/// Files in one state directory.
#[derive(Clone)]
pub struct Files {
    state_dir: PathBuf,
    /// The clock its locks are judged and stamped by: the system's unless
    /// [`Files::with_clock`] names another.
    clock: Option<Arc<dyn Clock>>,
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Files")
            .field("state_dir", &self.state_dir)
            .finish_non_exhaustive()
    }
}

impl Files {
    /// The store in `state_dir`.
    pub fn new(state_dir: PathBuf) -> Self {
        Self {
            state_dir,
            clock: None,
        }
    }

    /// The same store, its locks judged and stamped by `clock` (a test's
    /// manual clock, or a scheduler's own) instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// A lock's file, judged by this store's clock.
    fn lock(&self, lock: &LockRef<'_>) -> baton_lease::Lock {
        let file = lock_file(&self.state_dir, lock);
        match &self.clock {
            Some(c) => file.with_clock(Arc::clone(c)),
            None => file,
        }
    }
}

/// A lock's file in `state_dir`, with its TTL and grace.
pub fn lock_file(state_dir: &Path, lock: &LockRef<'_>) -> baton_lease::Lock {
    let path = state_dir
        .join("locks")
        .join(format!("{}.lock", lock.name()));
    baton_lease::Lock::new(path).with_options(baton_lease::Options {
        ttl: lock.ttl,
        mutex_wait: mutex_wait_for(lock.ttl),
        policy: baton_lease::Policy {
            takeover_grace: lock.takeover_grace,
            ..baton_lease::Policy::default()
        },
        fsync: false,
    })
}

/// A job's guard file in `state_dir`: which lock it last started a run
/// under (`baton_lease::Guarded`).
fn guard_file(state_dir: &Path, lock: &LockRef<'_>) -> PathBuf {
    state_dir.join("locks").join(format!("{}.job", lock.job))
}

/// A guard's answer as the store's.
fn guarded(lock: &LockRef<'_>, g: Result<Guarded, baton_lease::Error>) -> Result<Guard, Error> {
    Ok(match g? {
        Guarded::Clear => Guard::Clear,
        Guarded::Elsewhere { lock: at, verdict } => Guard::Elsewhere(Refused::elsewhere(
            lock.job,
            &at.display().to_string(),
            &verdict,
        )),
        Guarded::Claimed { at } => Guard::Claimed { at },
    })
}

impl Store for Files {
    fn kind(&self) -> &'static str {
        "files"
    }

    fn shared(&self) -> bool {
        false
    }

    fn renew_wait(&self, ttl: Duration) -> Duration {
        mutex_wait_for(ttl)
    }

    fn locks_are(&self) -> &'static str {
        "lock files"
    }

    fn location(&self) -> String {
        self.state_dir.join("baton.db").display().to_string()
    }

    fn records(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
        Ok(Box::new(Ledger::open(&self.state_dir, now)?))
    }

    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>> {
        // Only "nothing there" is no ledger: a state directory that is a
        // file, one that cannot be searched, or a link at the ledger's path
        // is the open's error to say, never "no runs yet".
        match std::fs::symlink_metadata(self.state_dir.join("baton.db")) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            _ => Some(self.records(now)),
        }
    }

    fn lock_label(&self, lock: &LockRef<'_>) -> String {
        self.lock(lock).path().display().to_string()
    }

    fn try_acquire(&self, lock: &LockRef<'_>, claim: &Claim) -> Result<Taken, Error> {
        Ok(match self.lock(lock).try_acquire_as(claim)? {
            Outcome::Acquired(lease) => Taken::Acquired(Box::new(lease)),
            Outcome::Claimed { at, .. } => Taken::Claimed { at },
            refused => Taken::Refused(Refused::of_outcome(&refused)),
        })
    }

    fn runs_elsewhere(&self, lock: &LockRef<'_>, occurrence: Option<i64>) -> Result<Guard, Error> {
        let file = self.lock(lock);
        guarded(
            lock,
            file.guard_of(&guard_file(&self.state_dir, lock), occurrence),
        )
    }

    fn take_guard(
        &self,
        lock: &LockRef<'_>,
        fence: u64,
        occurrence: Option<i64>,
    ) -> Result<(Guard, Option<GuardClaim>), Error> {
        let file = self.lock(lock);
        let guard = guard_file(&self.state_dir, lock);
        let (found, taken) = file.take_guard_undoably(&guard, Fence::new(fence), occurrence)?;
        let claim = taken.map(|t| GuardClaim {
            fence: t.fence.get(),
            before: t.before,
            claim: t.claim,
        });
        Ok((guarded(lock, Ok(found))?, claim))
    }

    fn withdraw_guard(&self, lock: &LockRef<'_>, claim: &GuardClaim) -> Result<bool, Error> {
        let taken = baton_lease::GuardTaken {
            fence: Fence::new(claim.fence),
            before: claim.before,
            claim: claim.claim,
        };
        Ok(self
            .lock(lock)
            .withdraw_guard(&guard_file(&self.state_dir, lock), &taken)?)
    }

    /// The lock files `NAME@K.lock` in `locks/` with K above `n`, looked
    /// for one after another until one is missing: slot K's file is made
    /// only by a run that found slots 1 to K - 1 held, so they exist from 1
    /// up (one `stat` when there is none, the common case, rather than a
    /// listing of every lock file on each run).
    fn slots_above(&self, lock: &LockRef<'_>, n: u32) -> Result<Vec<u32>, Error> {
        let locks = self.state_dir.join("locks");
        Ok((n.saturating_add(1)..=baton_lease::slot::MOST)
            .take_while(|&k| {
                let name = baton_lease::slot::slot_name(lock.lock, k);
                std::fs::symlink_metadata(locks.join(format!("{name}.lock"))).is_ok()
            })
            .collect())
    }

    fn inspect(&self, lock: &LockRef<'_>) -> Result<Option<Verdict>, Error> {
        Ok(Some(self.lock(lock).inspect()?.verdict))
    }

    fn while_held(
        &self,
        lock: &LockRef<'_>,
        token: &str,
        action: &mut dyn FnMut(u64, Option<&str>),
    ) -> Result<Vouch, Error> {
        let lock = self.lock(lock);
        let token: Token = token
            .parse()
            .map_err(|_| Error::NotAToken(token.to_owned()))?;
        let vouched = lock.while_held(&token, |held| {
            action(held.fence.get(), held.run.as_deref());
            (held.fence.get(), held.run.clone())
        });
        match vouched {
            Ok(Vouched::Done((fence, run))) => Ok(Vouch::Holder { fence, run }),
            Ok(Vouched::NotHolder(body)) => Ok(Vouch::NotHolder(match &body {
                baton_lease::record::Body::Held(h) => format!(
                    "it is held by run {} (fence {})",
                    h.run.as_deref().unwrap_or("?"),
                    h.fence
                ),
                baton_lease::record::Body::Free(_) => "it is free".into(),
                _ => "it holds no baton lease".into(),
            })),
            Ok(Vouched::Missing) => Ok(Vouch::Missing(lock.path().display().to_string())),
            Ok(Vouched::Busy(b)) => Err(Error::Busy(b.to_string())),
            Err(e) => Err(e.into()),
        }
    }
}
