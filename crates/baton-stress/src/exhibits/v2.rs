//! Exhibit: Scheduler Lock v2, as its operations guide specifies it (seed
//! 003 §1–2, §2.7, §5, §11.2).
//!
//! **Defect demonstrated: a live run past the stale threshold is reclaimed.**
//! v2 is correct for crashes: every read-decide-write happens inside
//! `flock(LOCK_EX)` on the lock file, so N contenders judging one stale
//! lease reach one verdict, and the fencing token stops a displaced owner
//! from deleting its successor's lock. But "stale" is `2 × STEP_TIMEOUT`
//! measured from `at=`, with no renewal and no question asked of the holder:
//! a run that is alive but slower than the threshold (or stopped) has its
//! lease broken and a second run starts beside it.
//!
//! Transcribed from §2.7: `open(O_RDWR|O_CREAT|O_EXCL)`, else `open(O_RDWR)`;
//! `flock(LOCK_EX)` (blocking); the path must still name the inode locked
//! (else close and retry, at most 64 times); read the body: `state=free` →
//! claim; a version other than 2 (or none: v1) → refuse; age ≤ stale →
//! refuse; otherwise `ftruncate` + write + `fsync`
//! `version=2 pid=… at=… token=…`; unlock; close. Release: open, flock,
//! verify the inode, and unlink only when the token on disk is the handle's.
//! The age of an empty body is the file's mtime (§5.5: "respected while
//! young, broken once aged").

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use super::{IoError, stamp};
use crate::flock;

/// `REOPEN_ATTEMPTS`.
const REOPEN_ATTEMPTS: u32 = 64;

/// The v2 lock at one path.
#[derive(Debug, Clone)]
pub(crate) struct V2 {
    path: PathBuf,
    stale_after: Duration,
}

/// v2's `LockHandle`: the path and the token this acquisition wrote.
#[derive(Debug)]
pub(crate) struct Handle {
    token: String,
}

/// What v2's release did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Released {
    /// The token was ours: the file is gone.
    Removed,
    /// The token on disk was another's (or none, or no file): left alone,
    /// "a successor owns the window".
    LeftAlone,
}

impl V2 {
    /// `stale_after` is `2 × STEP_TIMEOUT`.
    pub(crate) fn new(path: &Path, stale_after: Duration) -> Self {
        Self {
            path: path.to_owned(),
            stale_after,
        }
    }

    /// v2's `acquire`. `Ok(None)`: "lock held", a version conflict, or the
    /// file replaced under every attempt.
    ///
    /// # Errors
    ///
    /// I/O failures.
    pub(crate) fn acquire(&self, now: Timestamp) -> Result<Option<Handle>, IoError> {
        for _ in 0..REOPEN_ATTEMPTS {
            let (file, created) = match OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&self.path)
            {
                Ok(f) => (f, true),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                    match OpenOptions::new().read(true).write(true).open(&self.path) {
                        Ok(f) => (f, false),
                        Err(e) if e.kind() == ErrorKind::NotFound => continue,
                        Err(e) => return Err(IoError::new("open", &self.path, e)),
                    }
                }
                Err(e) => return Err(IoError::new("create", &self.path, e)),
            };
            flock::lock_exclusive(&file).map_err(|e| IoError::new("lock", &self.path, e))?;
            if !self.same_file(&file)? {
                continue; // close (drop), retry
            }
            let body = read_body(&file, &self.path)?;
            let claim = if body.trim().is_empty() {
                // Reading: an empty body is the creator's own file, mid-write:
                // its creator claims it; anyone else judges it by its mtime.
                created || self.stale(self.mtime(&file)?, now)
            } else if field(&body, "state=") == Some("free") {
                true
            } else if field(&body, "version=") != Some("2") {
                false // v1 or an unknown version: refused, left untouched
            } else {
                let at = field(&body, "at=").and_then(|v| v.parse::<Timestamp>().ok());
                let at = match at {
                    Some(a) => a,
                    None => self.mtime(&file)?,
                };
                self.stale(at, now)
            };
            if !claim {
                let _ = flock::unlock(&file); // OK to ignore: close drops it too.
                return Ok(None);
            }
            let token = crate::rng::hex_token(8)
                .map_err(|e| IoError::new("read random bytes for", &self.path, e))?;
            let line = format!(
                "version=2 pid={} at={} token={token}\n",
                std::process::id(),
                stamp(now)
            );
            file.set_len(0)
                .map_err(|e| IoError::new("truncate", &self.path, e))?;
            file.write_all_at(line.as_bytes(), 0)
                .map_err(|e| IoError::new("write", &self.path, e))?;
            file.sync_all()
                .map_err(|e| IoError::new("fsync", &self.path, e))?;
            let _ = flock::unlock(&file); // OK to ignore: close drops it too.
            return Ok(Some(Handle { token }));
        }
        Ok(None)
    }

    /// v2's `release`: removes the file only if its token is the handle's.
    ///
    /// # Errors
    ///
    /// I/O failures.
    pub(crate) fn release(&self, h: Handle) -> Result<Released, IoError> {
        for _ in 0..REOPEN_ATTEMPTS {
            let file = match OpenOptions::new().read(true).write(true).open(&self.path) {
                Ok(f) => f,
                Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Released::LeftAlone),
                Err(e) => return Err(IoError::new("open", &self.path, e)),
            };
            flock::lock_exclusive(&file).map_err(|e| IoError::new("lock", &self.path, e))?;
            if !self.same_file(&file)? {
                continue;
            }
            let body = read_body(&file, &self.path)?;
            if field(&body, "token=") != Some(h.token.as_str()) {
                return Ok(Released::LeftAlone);
            }
            std::fs::remove_file(&self.path).map_err(|e| IoError::new("unlink", &self.path, e))?;
            let _ = flock::unlock(&file); // OK to ignore: close drops it too.
            return Ok(Released::Removed);
        }
        Ok(Released::LeftAlone)
    }

    /// Writes the lease a crashed v2 run leaves (the `stale recovery` seed).
    ///
    /// # Errors
    ///
    /// I/O failures.
    pub(crate) fn forge(&self, pid: u32, at: Timestamp) -> Result<(), IoError> {
        let line = format!(
            "version=2 pid={pid} at={} token=deadbeefdeadbeef\n",
            stamp(at)
        );
        std::fs::write(&self.path, line).map_err(|e| IoError::new("write", &self.path, e))
    }

    fn stale(&self, at: Timestamp, now: Timestamp) -> bool {
        now.duration_since(at)
            > SignedDuration::try_from(self.stale_after).unwrap_or(SignedDuration::MAX)
    }

    fn same_file(&self, file: &File) -> Result<bool, IoError> {
        let mine = file
            .metadata()
            .map_err(|e| IoError::new("fstat", &self.path, e))?;
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(m.dev() == mine.dev() && m.ino() == mine.ino()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(IoError::new("stat", &self.path, e)),
        }
    }

    fn mtime(&self, file: &File) -> Result<Timestamp, IoError> {
        let m = file
            .metadata()
            .map_err(|e| IoError::new("fstat", &self.path, e))?;
        Ok(Timestamp::new(m.mtime(), m.mtime_nsec() as i32).unwrap_or(Timestamp::UNIX_EPOCH))
    }
}

fn read_body(file: &File, path: &Path) -> Result<String, IoError> {
    let mut buf = vec![0u8; 4096];
    let n = file
        .read_at(&mut buf, 0)
        .map_err(|e| IoError::new("read", path, e))?;
    buf.truncate(n);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// A field found by prefix, never by position.
fn field<'a>(body: &'a str, prefix: &str) -> Option<&'a str> {
    body.split_whitespace().find_map(|t| t.strip_prefix(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guides_manual_execution() {
        // Seed 003 §7.2, at the millisecond scale.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("scheduler.lock");
        let v2 = V2::new(&p, Duration::from_millis(200));
        let now = Timestamp::from_second(2_000_000_000).unwrap();
        let held = v2.acquire(now).unwrap().expect("acquired");
        assert!(
            v2.acquire(now + SignedDuration::from_millis(100))
                .unwrap()
                .is_none()
        );
        let broke = v2
            .acquire(now + SignedDuration::from_millis(300))
            .unwrap()
            .expect("stale: broken");
        assert_eq!(v2.release(held).unwrap(), Released::LeftAlone);
        assert!(p.exists());
        assert_eq!(v2.release(broke).unwrap(), Released::Removed);
        assert!(!p.exists());
    }

    #[test]
    fn a_v1_lease_is_refused_at_any_age() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("l");
        std::fs::write(&p, "pid=1 at=2000-01-01T00:00:00Z\n").unwrap();
        let v2 = V2::new(&p, Duration::from_millis(200));
        assert!(
            v2.acquire(Timestamp::from_second(2_000_000_000).unwrap())
                .unwrap()
                .is_none()
        );
    }
}
