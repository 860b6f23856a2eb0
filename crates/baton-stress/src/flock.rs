//! The crate's one door to `flock(2)`: the exhibits' own chokepoint.
//!
//! baton-lease keeps its mutex behind `baton_lease::sys::file`, which is
//! private to it. The exhibits (Scheduler Lock v2 and the seed 001 store)
//! and the latency floor need a file mutex of their own, and clippy's
//! `disallowed-methods` forbids the `flock` family everywhere else in this
//! crate, so a second path to a mutex cannot slip in unnoticed. Nothing here
//! decides anything; it takes and drops the mutex and retries `EINTR`.

#![allow(clippy::disallowed_methods)] // This module is the exhibits' flock chokepoint.

use std::fs::File;
use std::io;

/// Takes `flock(LOCK_EX)` on `file`, blocking until it is granted (v2's
/// `flock(fd, LOCK_EX) ← BLOCKS`).
pub(crate) fn lock_exclusive(file: &File) -> io::Result<()> {
    loop {
        match file.lock() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Drops the mutex (`flock(LOCK_UN)`). Closing the descriptor would too.
pub(crate) fn unlock(file: &File) -> io::Result<()> {
    file.unlock()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_descriptors_contend() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m");
        let a = File::create(&p).unwrap();
        let b = File::open(&p).unwrap();
        lock_exclusive(&a).unwrap();
        #[allow(clippy::disallowed_methods)] // Checking the mutex from outside, in a test.
        let busy = matches!(b.try_lock(), Err(std::fs::TryLockError::WouldBlock));
        assert!(busy);
        unlock(&a).unwrap();
        lock_exclusive(&b).unwrap();
    }
}
