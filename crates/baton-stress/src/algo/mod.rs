//! One face for every implementation: try once, renew, release. The
//! contenders, the threads scenario and the latency table drive locks only
//! through [`Algorithm`] and [`Holding`], so every implementation goes
//! through the identical experiment.
//!
//! The adapters translate, they never judge: an exhibit's answer is passed
//! on as it is. Failures are split in two, because the report must never
//! mix them: a [`Failure::Defect`] is an exhibit failing the way its seed
//! says it fails (the finding); a [`Failure::Instrument`] is the harness
//! unable to do what it meant to (the instrument broken, not the lock).

mod baton;
mod exhibit;
mod pg;
mod slots;

use std::path::{Path, PathBuf};

use jiff::Timestamp;

use crate::config::{Impl, Timing};
use crate::event::DefectKind;
use crate::exhibits::seed000::AfterLoad;

/// A lock implementation at one path, as one process or thread sees it.
pub(crate) trait Algorithm: Send + Sync {
    /// Tries once, without waiting for a holder. `Ok(None)`: not acquired.
    /// `hook` is the seed 000 reproduction's barrier after `load`; every
    /// other implementation ignores it.
    ///
    /// # Errors
    ///
    /// See [`Failure`].
    fn try_acquire(&self, hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure>;
}

/// A lock this caller believes it holds.
pub(crate) trait Holding: Send {
    /// Keeps the lock fresh, where the implementation can.
    ///
    /// # Errors
    ///
    /// See [`Failure`].
    fn renew(&mut self) -> Result<Kept, Failure>;

    /// Lets go.
    ///
    /// # Errors
    ///
    /// See [`Failure`].
    fn release(self: Box<Self>) -> Result<Let, Failure>;
}

/// The answer to a renewal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Renewed.
    Renewed,
    /// The implementation has no renewal (every exhibit).
    NoRenewal,
    /// The lease had passed to someone else.
    Lost,
    /// The record could not be reached this time.
    Unconfirmed,
}

/// The answer to a release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Let {
    /// Released.
    Released,
    /// The lease had passed to someone else while it was held.
    Displaced,
}

/// Why an operation failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The exhibit failed the way its seed describes. `terminal`: nothing
    /// can succeed on this lock any more (a corrupt record).
    Defect {
        /// Which defect.
        kind: DefectKind,
        /// What was seen.
        detail: String,
        /// Whether the lock is wedged for good.
        terminal: bool,
    },
    /// The instrument failed.
    Instrument(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Defect { kind, detail, .. } => write!(f, "{}: {detail}", kind.describe()),
            Self::Instrument(s) => f.write_str(s),
        }
    }
}

/// The lock file (or record) of slot `slot` (1-based) of `imp`'s lock in a
/// trial directory, named as the scheduler names a lock's slots: `job.lock`
/// for slot 1, `job@K.lock` for slot K.
pub(crate) fn lock_path(imp: Impl, dir: &Path, slot: u32) -> PathBuf {
    let name = baton_lease::slot::slot_name("job", slot);
    match imp {
        Impl::Seed000 | Impl::Seed001 => dir.join(format!("{name}.json")),
        Impl::Counter => dir.join("job.count"),
        _ => dir.join(format!("{name}.lock")),
    }
}

/// `imp` at its path in `dir`, admitting `slots` holders: with more than
/// one, N locks tried in order (see [`slots`]), or the counter's own bound.
pub(crate) fn build(imp: Impl, dir: &Path, timing: &Timing, slots: u32) -> Box<dyn Algorithm> {
    let one = |slot: u32| -> Box<dyn Algorithm> {
        let path = lock_path(imp, dir, slot);
        match imp {
            Impl::Baton => Box::new(baton::Baton::new(&path, timing)),
            Impl::Counter => exhibit::counter(&path, slots),
            other => exhibit::build(other, &path, timing),
        }
    };
    if slots <= 1 || imp == Impl::Counter {
        return one(1);
    }
    Box::new(slots::FirstFree::new((1..=slots).map(one).collect()))
}

/// The lock of a trial in the store: named after its trial directory, which
/// is unique to the campaign and the trial.
pub(crate) fn lock_name(dir: &Path) -> String {
    dir.display().to_string()
}

/// `imp` contending through the store at `url` for the lock of the trial in
/// `dir`, on a connection of its own, standing on `host`.
///
/// # Errors
///
/// When the server cannot be reached, as text for the report; and for the
/// file locks, which do not contend in a store.
pub(crate) fn connect(
    imp: Impl,
    url: &str,
    dir: &Path,
    host: &crate::store::Host,
    timing: &Timing,
) -> Result<Box<dyn Algorithm>, String> {
    let store = crate::store::Store::new(url).map_err(|e| e.to_string())?;
    pg::connect(imp, store, &lock_name(dir), host, timing)
}

/// Makes the lock free before a trial: nothing for the file locks, a
/// schedule record with no lock for the seed stores (the seeds'
/// `create(...)`).
///
/// # Errors
///
/// I/O failures, as text for the report.
pub(crate) fn prepare_free(
    imp: Impl,
    dir: &Path,
    timing: &Timing,
    slots: u32,
) -> Result<(), String> {
    for slot in 1..=slots.max(1) {
        exhibit::prepare_free(imp, &lock_path(imp, dir, slot), timing)?;
    }
    Ok(())
}

/// Writes the lease a holder that crashed 24 hours ago left behind (seed
/// 003 §9.6), for an exhibit. baton's dead holder is a real process killed
/// with `kill -9` instead (see the `crash` contender role), because baton
/// judges death on evidence and the evidence must be real.
///
/// # Errors
///
/// I/O failures, as text; and for baton, which is never forged.
pub(crate) fn forge_stale(
    imp: Impl,
    dir: &Path,
    timing: &Timing,
    dead_pid: u32,
    now: Timestamp,
) -> Result<(), String> {
    exhibit::forge_stale(imp, &lock_path(imp, dir, 1), timing, dead_pid, now)
}
