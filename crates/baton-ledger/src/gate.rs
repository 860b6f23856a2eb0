//! One write transaction at a time per ledger file within this process.
//!
//! SQLite lets one writer in at a time and makes the others wait in its
//! busy handler, which sleeps between looks (1, 2, 5, 10 ms and more): a
//! writer that finds the lock taken for a fraction of a millisecond may
//! sleep ten. Connections of one process to one file (a service's runs,
//! due together) would pay that against each other. So, before it begins,
//! a write transaction here waits for this process's other writers to the
//! same path on a mutex, which wakes it the moment the last one commits;
//! SQLite's handler is then left to writers of other processes only.
//!
//! It never decides what is written, and it is held only for the span of
//! one write transaction (nothing waits on it while holding another).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

/// Every path's gate, made on first use.
fn gates() -> &'static Mutex<HashMap<PathBuf, Arc<Mutex<()>>>> {
    static GATES: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    GATES.get_or_init(Mutex::default)
}

/// The gate of the ledger at `path`.
pub(crate) fn of(path: &Path) -> Arc<Mutex<()>> {
    let mut all = gates().lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(all.entry(path.to_owned()).or_default())
}

/// Waits for `gate` (a writer that panicked while holding it wrote
/// nothing: its transaction rolled back, so the gate is taken as free).
pub(crate) fn enter(gate: &Mutex<()>) -> MutexGuard<'_, ()> {
    gate.lock().unwrap_or_else(PoisonError::into_inner)
}
