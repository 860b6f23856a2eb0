//! Exhibit: the seed 000 store, `schedule_store.acquire` before any mutex.
//!
//! **Defect demonstrated: an unlocked check-then-set.** `acquire` loads the
//! record, checks the lock, sets it and saves, and nothing serialises the
//! check (A) and the set (B): two ticks that both load while the lock is
//! `null` both pass the check and both return ok. A second symptom of the
//! same design: `_save` writes through the fixed `<id>.json.tmp`, so two
//! concurrent saves collide and the loser's rename fails (the seed's
//! `FileNotFoundError`: the tick dies); unserialised writes into that one
//! file can also leave a record that no longer parses.
//!
//! The seed's reproduction wraps `load` in a `threading.Barrier(2)` so both
//! ticks read before either saves; [`AfterLoad`] is that wrapper's hook (the
//! threads scenario passes a barrier; everything else passes nothing).
//! Release, which the seed does not show, is the store's `release(run_id)`:
//! load, clear the lock if it names this run, save, with no mutex either.

use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;

use super::schedule::{self, Reason, Released, Store, StoreError};

/// Called after every `load` (success or not), as the seed's patched
/// `load` did.
pub(crate) trait AfterLoad: Sync {
    /// The hook.
    fn after_load(&self);
}

/// No hook.
pub(crate) struct NoHook;

impl AfterLoad for NoHook {
    fn after_load(&self) {}
}

/// The seed 000 store for one schedule.
#[derive(Debug, Clone)]
pub(crate) struct Seed000 {
    store: Store,
    ttl: Duration,
}

impl Seed000 {
    pub(crate) fn new(path: &Path, ttl: Duration) -> Self {
        Self {
            store: Store::new(path),
            ttl,
        }
    }

    /// The store's files.
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// `acquire(ws, schedule_id, run_id=…)`: load → check → set → save, with
    /// nothing around it.
    ///
    /// # Errors
    ///
    /// The store's failures, the seed's collision among them.
    pub(crate) fn acquire(
        &self,
        run_id: &str,
        now: Timestamp,
        hook: &dyn AfterLoad,
    ) -> Result<Reason, StoreError> {
        let loaded = self.store.load(); // jload
        hook.after_load();
        let mut rec = loaded?;
        let reason = schedule::check_and_set(&mut rec, run_id, now, self.ttl);
        if reason != Reason::SkippedOverlap {
            self.store.save(&rec)?; // jsave
        }
        Ok(reason)
    }

    /// `release(ws, schedule_id, run_id=…)`: load → clear if ours → save.
    ///
    /// # Errors
    ///
    /// As [`Seed000::acquire`].
    pub(crate) fn release(&self, run_id: &str) -> Result<Released, StoreError> {
        let mut rec = self.store.load()?;
        let r = schedule::clear_if_ours(&mut rec, run_id);
        if r == Released::Cleared {
            self.store.save(&rec)?;
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;

    struct Both(Barrier);
    impl AfterLoad for Both {
        fn after_load(&self) {
            self.0.wait();
        }
    }

    #[test]
    fn sequential_then_concurrent_as_the_seed_reproduces_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = Seed000::new(&dir.path().join("job.json"), Duration::from_secs(60));
        s.store().create(Duration::from_secs(60)).unwrap();
        let now = Timestamp::from_second(2_000_000_000).unwrap();
        assert_eq!(s.acquire("r1", now, &NoHook).unwrap(), Reason::Acquired);
        assert_eq!(
            s.acquire("r2", now, &NoHook).unwrap(),
            Reason::SkippedOverlap
        );
        assert_eq!(s.release("r1").unwrap(), Released::Cleared);
        // Both load before either saves. Whether the saves then collide is
        // the scheduler's choice; every answer is a defect but one.
        let hook = Both(Barrier::new(2));
        let r: Vec<_> = std::thread::scope(|sc| {
            let a = sc.spawn(|| s.acquire("a", now, &hook));
            let b = sc.spawn(|| s.acquire("b", now, &hook));
            vec![a.join().unwrap(), b.join().unwrap()]
        });
        let oks = r
            .iter()
            .filter(|x| matches!(x, Ok(Reason::Acquired)))
            .count();
        let collided = r
            .iter()
            .filter(|x| matches!(x, Err(StoreError::TempPathCollision { .. })))
            .count();
        assert_eq!(oks + collided, 2, "{r:?}");
        assert!(oks >= 1);
    }
}
