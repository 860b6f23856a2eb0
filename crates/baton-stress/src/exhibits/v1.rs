//! Exhibit: Scheduler Lock v1, the lock file before v2 (seed 003 §1.3,
//! §11.1).
//!
//! **Defect demonstrated: breaking a stale lock is a read-modify-write with
//! no mutual exclusion.** `stat` → judge → `unlink` → `open(O_EXCL)` are four
//! system calls; two runs judging the same stale lock in the same instant
//! both unlink and both create: two owners, one window. And `release`
//! unlinks unconditionally, so a displaced owner deletes its successor's
//! lock (there is no token to check).
//!
//! Transcribed as specified: the record is `pid=… at=…` and nothing else
//! (no `version=`, no token), written after the `O_EXCL` create and never
//! synced; the age is `now − at`, or the file's mtime when `at=` is missing;
//! the stale threshold is v1's (the same `2 × STEP_TIMEOUT` v2 kept), here in
//! milliseconds. The `free lock` scenario must stay clean for v1 too:
//! `O_EXCL` was never the defect.

use std::fs::OpenOptions;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::{IoError, stamp};

/// The v1 lock at one path.
#[derive(Debug, Clone)]
pub(crate) struct V1 {
    path: PathBuf,
    stale_after: Duration,
}

/// What v1's `acquire` returned: the lock path (v1 returned a `Path`).
#[derive(Debug)]
pub(crate) struct Handle {
    path: PathBuf,
}

impl V1 {
    pub(crate) fn new(path: &Path, stale_after: Duration) -> Self {
        Self {
            path: path.to_owned(),
            stale_after,
        }
    }

    /// v1's acquire. `Ok(None)`: held by someone else.
    ///
    /// # Errors
    ///
    /// I/O failures other than the ones v1 treated as answers.
    pub(crate) fn acquire(&self, now: Timestamp) -> Result<Option<Handle>, IoError> {
        // open(O_CREAT|O_EXCL): a free lock is ours.
        match self.create() {
            Ok(Some(h)) => return self.stamp(h, now).map(Some),
            Ok(None) => {}
            Err(e) => return Err(e),
        }
        // stat → judge.
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            // Reading: released in between; this tick skips, the next one gets it.
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(IoError::new("stat", &self.path, e)),
        };
        let body = match std::fs::read_to_string(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(IoError::new("read", &self.path, e)),
        };
        let at = field(&body, "at=")
            .and_then(|v| v.parse::<Timestamp>().ok())
            .or_else(|| Timestamp::new(meta.mtime(), meta.mtime_nsec() as i32).ok());
        let age = at.map_or(SignedDuration::ZERO, |a| now.duration_since(a));
        if age <= SignedDuration::try_from(self.stale_after).unwrap_or(SignedDuration::MAX) {
            return Ok(None);
        }
        // → unlink → open(O_EXCL): the break, with nothing between the judge
        // and the unlink to stop a second breaker.
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(IoError::new("unlink", &self.path, e)),
        }
        match self.create()? {
            Some(h) => self.stamp(h, now).map(Some),
            None => Ok(None),
        }
    }

    /// v1's release: unlinks, unconditionally.
    ///
    /// # Errors
    ///
    /// I/O failures other than "already gone".
    pub(crate) fn release(&self, h: Handle) -> Result<(), IoError> {
        match std::fs::remove_file(&h.path) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(IoError::new("unlink", &h.path, e)),
            _ => Ok(()),
        }
    }

    /// Writes a v1 lease of `pid`, taken at `at`, as a crashed v1 run leaves
    /// it (the `stale recovery` seed: a lease stamped 24 h ago).
    ///
    /// # Errors
    ///
    /// I/O failures.
    pub(crate) fn forge(&self, pid: u32, at: Timestamp) -> Result<(), IoError> {
        std::fs::write(&self.path, format!("pid={pid} at={}\n", stamp(at)))
            .map_err(|e| IoError::new("write", &self.path, e))
    }

    fn create(&self) -> Result<Option<std::fs::File>, IoError> {
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&self.path)
        {
            Ok(f) => Ok(Some(f)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
            Err(e) => Err(IoError::new("create", &self.path, e)),
        }
    }

    fn stamp(&self, mut f: std::fs::File, now: Timestamp) -> Result<Handle, IoError> {
        // Written through a buffer and never synced, as v1 did.
        let line = format!("pid={} at={}\n", std::process::id(), stamp(now));
        f.write_all(line.as_bytes())
            .map_err(|e| IoError::new("write", &self.path, e))?;
        Ok(Handle {
            path: self.path.clone(),
        })
    }
}

/// A field found by prefix, never by position.
fn field<'a>(body: &'a str, prefix: &str) -> Option<&'a str> {
    body.split_whitespace().find_map(|t| t.strip_prefix(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_is_refused_stale_is_broken_release_is_unconditional() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        let v1 = V1::new(&p, Duration::from_millis(200));
        let t0 = Timestamp::from_second(1_000_000).unwrap();
        let a = v1.acquire(t0).unwrap().expect("free");
        assert!(
            v1.acquire(t0 + SignedDuration::from_millis(100))
                .unwrap()
                .is_none()
        );
        let b = v1
            .acquire(t0 + SignedDuration::from_millis(300))
            .unwrap()
            .expect("stale");
        v1.release(a).unwrap(); // the displaced owner deletes its successor's lock
        assert!(!p.exists());
        v1.release(b).unwrap();
    }
}
