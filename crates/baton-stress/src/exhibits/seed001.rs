//! Exhibit: the seed 001 lock, `schedule_store.acquire` with its mutex.
//!
//! **Defect demonstrated: reclaim on TTL expiry with no renewal and no
//! liveness.** The check-then-set is serialised (the seed calls the mutex
//! "sound"), but the lock's `expires_at` is stamped once, at acquire, from a
//! soft runtime budget, never renewed, and the reclaim decision is the TTL
//! alone: no pid, no thread, no question asked of the holder. A run that is
//! alive but slower than its budget is reclaimed
//! (`STALE_LOCK_RECLAIMED`) and a second run starts beside it.
//!
//! The seed's mutex is a `threading.Lock`, one per process; the instrument's
//! contenders are processes, so this transcription takes the cross-process
//! form the seed 000 report recommends, `flock` on a sibling file
//! (`<id>.json.lock`), so that what it shows is the TTL defect and not the
//! missing cross-process mutex. Reading: release runs under the same mutex
//! and clears the lock only when it names this run.

use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;

use super::IoError;
use super::schedule::{self, Reason, Released, Store, StoreError};
use crate::flock;

/// The seed 001 lock for one schedule.
#[derive(Debug, Clone)]
pub(crate) struct Seed001 {
    store: Store,
    mutex: PathBuf,
    ttl: Duration,
}

impl Seed001 {
    pub(crate) fn new(path: &Path, ttl: Duration) -> Self {
        let mut mutex = path.as_os_str().to_owned();
        mutex.push(".lock");
        Self {
            store: Store::new(path),
            mutex: PathBuf::from(mutex),
            ttl,
        }
    }

    /// The store's files.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// `acquire`: under the mutex, load → check (`now < expires_at`) → set →
    /// save.
    ///
    /// # Errors
    ///
    /// The store's failures and the mutex's.
    pub(crate) fn acquire(&self, run_id: &str, now: Timestamp) -> Result<Reason, StoreError> {
        let _held = self.enter()?;
        let mut rec = self.store.load()?;
        let reason = schedule::check_and_set(&mut rec, run_id, now, self.ttl);
        if reason != Reason::SkippedOverlap {
            self.store.save(&rec)?;
        }
        Ok(reason)
    }

    /// `release(run_id)`, under the mutex.
    ///
    /// # Errors
    ///
    /// As [`Seed001::acquire`].
    pub(crate) fn release(&self, run_id: &str) -> Result<Released, StoreError> {
        let _held = self.enter()?;
        let mut rec = self.store.load()?;
        let r = schedule::clear_if_ours(&mut rec, run_id);
        if r == Released::Cleared {
            self.store.save(&rec)?;
        }
        Ok(r)
    }

    fn enter(&self) -> Result<Mutex, StoreError> {
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&self.mutex)
            .map_err(|e| IoError::new("open", &self.mutex, e))?;
        flock::lock_exclusive(&f).map_err(|e| IoError::new("lock", &self.mutex, e))?;
        Ok(Mutex(f))
    }
}

/// The held mutex; dropping it unlocks.
struct Mutex(std::fs::File);

impl Drop for Mutex {
    fn drop(&mut self) {
        let _ = flock::unlock(&self.0); // OK to ignore: close drops it too.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::SignedDuration;

    #[test]
    fn the_seeds_reproduction_a_slow_live_run_is_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Seed001::new(&dir.path().join("job.json"), Duration::from_secs(60));
        s.store().create(Duration::from_secs(60)).unwrap();
        let t0 = Timestamp::from_second(2_000_000_000).unwrap();
        assert_eq!(s.acquire("run1", t0).unwrap(), Reason::Acquired);
        assert_eq!(
            s.acquire("run2", t0 + SignedDuration::from_secs(30))
                .unwrap(),
            Reason::SkippedOverlap
        );
        // run1 is still executing and never released; 90 s later:
        assert_eq!(
            s.acquire("run2", t0 + SignedDuration::from_secs(90))
                .unwrap(),
            Reason::StaleLockReclaimed
        );
        assert_eq!(s.release("run1").unwrap(), Released::NotOurs);
        assert_eq!(s.release("run2").unwrap(), Released::Cleared);
    }
}
