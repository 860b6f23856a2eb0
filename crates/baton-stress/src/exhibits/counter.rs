//! Exhibit: "bounded concurrency" as it is usually built by hand, a count
//! of holders in a file (`max_concurrent = N`'s naive form).
//!
//! **Defects demonstrated: nothing serialises read → check → rewrite of the
//! count, and nothing gives back a dead holder's slot.** A run reads the
//! count, and when it is below N writes it back one higher and runs; at the
//! end it reads the count and writes it back one lower. Two runs that read
//! the same count both write the same next one: one increment is lost, and
//! from then on the file admits one holder more than N (two lost decrements
//! the other way: one fewer). A run killed while it holds never decrements:
//! its slot is gone for good, and once every slot is gone so, the lock is
//! wedged and nothing runs again.
//!
//! Transcribed as it is written in the wild: the count is a decimal number
//! and nothing else (no holder, no stamp, no expiry), and a release
//! subtracts one from whatever it reads, so the count can go below zero.
//! Reading: the count is replaced whole (written to a private temporary
//! and renamed over the file), so no reader ever sees half a number; the
//! races it shows are the unserialised read-modify-write alone.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use super::IoError;

/// The counter at one path, admitting `bound` holders.
#[derive(Debug, Clone)]
pub(crate) struct Counter {
    path: PathBuf,
    bound: u32,
}

impl Counter {
    pub(crate) fn new(path: &Path, bound: u32) -> Self {
        Self {
            path: path.to_owned(),
            bound,
        }
    }

    /// Makes the count 0: no holder.
    ///
    /// # Errors
    ///
    /// I/O failures.
    pub(crate) fn create(&self) -> Result<(), IoError> {
        self.write(0)
    }

    /// Reads the count and, below the bound, writes it back one higher.
    /// `Ok(false)`: every slot counted taken.
    ///
    /// # Errors
    ///
    /// I/O failures, and a count that is no number.
    pub(crate) fn acquire(&self) -> Result<bool, IoError> {
        let n = self.read()?;
        if n >= i64::from(self.bound) {
            return Ok(false);
        }
        self.write(n + 1)?;
        Ok(true)
    }

    /// Reads the count and writes it back one lower.
    ///
    /// # Errors
    ///
    /// I/O failures, and a count that is no number.
    pub(crate) fn release(&self) -> Result<(), IoError> {
        let n = self.read()?;
        self.write(n - 1)
    }

    /// The count as it is now.
    ///
    /// # Errors
    ///
    /// I/O failures, and a count that is no number.
    pub(crate) fn read(&self) -> Result<i64, IoError> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(IoError::new("read", &self.path, e)),
        };
        text.trim().parse().map_err(|_| {
            IoError::new(
                "parse the count in",
                &self.path,
                std::io::Error::other(format!("{text:?} is no number")),
            )
        })
    }

    fn write(&self, n: i64) -> Result<(), IoError> {
        let tmp = self
            .path
            .with_extension(format!("{}.{}.tmp", std::process::id(), unique()));
        std::fs::write(&tmp, format!("{n}\n")).map_err(|e| IoError::new("write", &tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| IoError::new("rename", &self.path, e))
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_the_bound_and_a_killed_holder_keeps_its_slot_for_good() {
        let dir = tempfile::tempdir().unwrap();
        let c = Counter::new(&dir.path().join("job.count"), 2);
        c.create().unwrap();
        assert!(c.acquire().unwrap());
        assert!(c.acquire().unwrap());
        assert!(!c.acquire().unwrap(), "two of two taken");
        c.release().unwrap();
        assert!(c.acquire().unwrap());
        // Neither holder releases (both were killed): wedged.
        assert!(!c.acquire().unwrap());
        assert_eq!(c.read().unwrap(), 2);
    }

    #[test]
    fn two_reads_of_one_count_admit_one_more_than_the_bound() {
        let dir = tempfile::tempdir().unwrap();
        let c = Counter::new(&dir.path().join("job.count"), 1);
        c.create().unwrap();
        // The interleaving the exhibit leaves open: both read 0, both write 1.
        let seen = c.read().unwrap();
        assert!(c.acquire().unwrap());
        assert!(seen < 1);
        c.write(seen + 1).unwrap();
        assert_eq!(c.read().unwrap(), 1, "two holders, counted as one");
    }
}
