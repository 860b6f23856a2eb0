//! The schedule store both seed 000 and seed 001 describe
//! (`primitives/schedule_store.py`): one JSON record per schedule,
//! `<id>.json`, loaded whole and saved whole through a temporary file at the
//! fixed path `<id>.json.tmp`, renamed into place.
//!
//! This module is the store's file format and its `load` / `_save`, nothing
//! more; the two acquire algorithms live in [`super::seed000`] and
//! [`super::seed001`]. `_save` is transcribed with its defect intact: the
//! temporary path is fixed, so two unserialised saves write into one file
//! and the second `rename` finds it already moved.

use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::{IoError, stamp};

/// A schedule record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Record {
    /// The schedule id.
    pub(crate) id: String,
    /// The soft runtime budget the lock's expiry is derived from
    /// (`max_runtime_minutes` in the seed; milliseconds here).
    pub(crate) max_runtime_ms: u64,
    /// The run lock, or `null`.
    pub(crate) lock: Option<RunLock>,
}

/// `rec["lock"]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RunLock {
    /// The run that holds it.
    pub(crate) run_id: String,
    /// When it was taken.
    pub(crate) acquired_at: String,
    /// `acquired_at + max_runtime`: the only evidence of death either seed
    /// consults.
    pub(crate) expires_at: String,
}

impl RunLock {
    /// A lock for `run_id` taken at `now`, stamped once, never renewed.
    pub(crate) fn new(run_id: &str, now: Timestamp, ttl: Duration) -> Self {
        let expires = now
            .checked_add(jiff::SignedDuration::try_from(ttl).unwrap_or(jiff::SignedDuration::MAX))
            .unwrap_or(Timestamp::MAX);
        Self {
            run_id: run_id.to_owned(),
            acquired_at: stamp(now),
            expires_at: stamp(expires),
        }
    }

    /// `expires_at`, parsed (`None` when unparsable: the seed's `_parse`
    /// returns `None` and the lock counts as expired).
    pub(crate) fn expires(&self) -> Option<Timestamp> {
        self.expires_at.parse().ok()
    }
}

/// Why a load or save failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// An I/O failure.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The seed 000 collision: our rename found the fixed temporary file
    /// already moved by another saver (`FileNotFoundError` in `os.replace`).
    #[error("failed to rename {} into place: it was already moved by another save (the fixed temp path)", tmp.display())]
    TempPathCollision {
        /// The temporary path.
        tmp: PathBuf,
    },
    /// The record no longer parses.
    #[error("failed to parse {}: {why}", path.display())]
    Corrupt {
        /// The record.
        path: PathBuf,
        /// The parser's complaint.
        why: String,
    },
}

/// The store's files for one schedule.
#[derive(Debug, Clone)]
pub(crate) struct Store {
    path: PathBuf,
    tmp: PathBuf,
}

impl Store {
    /// The store whose record is `path` (`<id>.json`).
    pub(crate) fn new(path: &Path) -> Self {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        Self {
            path: path.to_owned(),
            tmp: PathBuf::from(tmp),
        }
    }

    /// `load` (`jload`).
    ///
    /// # Errors
    ///
    /// I/O failures and a record that does not parse.
    pub(crate) fn load(&self) -> Result<Record, StoreError> {
        let bytes = std::fs::read(&self.path).map_err(|e| IoError::new("read", &self.path, e))?;
        serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            why: e.to_string(),
        })
    }

    /// `_save`: write `<id>.json.tmp` (truncating whatever is there), then
    /// `os.replace` it into place.
    ///
    /// # Errors
    ///
    /// I/O failures, and [`StoreError::TempPathCollision`].
    pub(crate) fn save(&self, rec: &Record) -> Result<(), StoreError> {
        let text = serde_json::to_string(rec).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            why: e.to_string(),
        })?;
        let mut f =
            std::fs::File::create(&self.tmp).map_err(|e| IoError::new("open", &self.tmp, e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| IoError::new("write", &self.tmp, e))?;
        drop(f);
        match std::fs::rename(&self.tmp, &self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Err(StoreError::TempPathCollision {
                tmp: self.tmp.clone(),
            }),
            Err(e) => Err(IoError::new("rename", &self.tmp, e).into()),
        }
    }

    /// `create(...)`: a schedule with no lock.
    ///
    /// # Errors
    ///
    /// As [`Store::save`].
    pub(crate) fn create(&self, ttl: Duration) -> Result<(), StoreError> {
        self.save(&Record {
            id: "job".into(),
            max_runtime_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            lock: None,
        })
    }

    /// A schedule whose lock was taken by a run that crashed at `at` (the
    /// `stale recovery` seed).
    ///
    /// # Errors
    ///
    /// As [`Store::save`].
    pub(crate) fn forge(&self, ttl: Duration, at: Timestamp) -> Result<(), StoreError> {
        self.save(&Record {
            id: "job".into(),
            max_runtime_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
            lock: Some(RunLock::new("crashed-run", at, ttl)),
        })
    }
}

/// What `acquire` answers besides ok (the seed's reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Granted on a schedule with no lock.
    Acquired,
    /// Granted by reclaiming an expired lock (`STALE_LOCK_RECLAIMED`).
    StaleLockReclaimed,
    /// Refused: a run is in progress (`SKIPPED_OVERLAP`).
    SkippedOverlap,
}

/// What `release` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// The lock was this run's and is now `null`.
    Cleared,
    /// The lock named another run (or none): left alone.
    NotOurs,
}

/// The check-then-set both seeds share, on a loaded record: `(ok, reason)`.
pub(crate) fn check_and_set(
    rec: &mut Record,
    run_id: &str,
    now: Timestamp,
    ttl: Duration,
) -> Reason {
    if let Some(lock) = &rec.lock
        && let Some(expires) = lock.expires()
        && now < expires
    {
        return Reason::SkippedOverlap; // (A) check: a run is in progress
    }
    let reason = if rec.lock.is_some() {
        Reason::StaleLockReclaimed
    } else {
        Reason::Acquired
    };
    rec.lock = Some(RunLock::new(run_id, now, ttl)); // (B) set
    reason
}

/// The release both seeds share, on a loaded record.
pub(crate) fn clear_if_ours(rec: &mut Record, run_id: &str) -> Released {
    match &rec.lock {
        Some(l) if l.run_id == run_id => {
            rec.lock = None;
            Released::Cleared
        }
        _ => Released::NotOurs,
    }
}
