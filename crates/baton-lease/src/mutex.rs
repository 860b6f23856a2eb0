//! A plain reader-writer file mutex, for callers that need `flock` itself
//! rather than a lease: many holders in shared mode, or one in exclusive
//! mode, for as long as the guard lives; the kernel drops it if the holder
//! dies. baton's ledger holds it shared while it opens a connection and
//! exclusive while it moves a corrupt database aside, so that opening never
//! serialises the many processes of a tick and no one opens while files are
//! being renamed.
//!
//! It is not a lease: nothing is recorded, nothing survives the process, and
//! it must never be held across a job. Like every `flock` in baton, it goes
//! through this crate's system module. The file is created when missing
//! (owner-only, never through a symbolic link) and refused when another
//! user owns it or can write it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::error::Error;
use crate::sys::file::{self, Mode};

/// Who may hold the mutex with whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Any number of shared holders at once.
    Shared,
    /// One holder, and no shared one.
    Exclusive,
}

/// A held file mutex; dropping it releases it.
#[derive(Debug)]
pub struct FileMutex {
    file: std::fs::File,
    path: PathBuf,
}

impl FileMutex {
    /// Takes the mutex of the file at `path`, waiting at most `wait` (polled
    /// with a backoff from 50 µs to 5 ms). `Ok(None)` when another process
    /// kept it in an incompatible mode that long.
    ///
    /// # Errors
    ///
    /// When the file cannot be created or opened, is untrusted, or the
    /// filesystem offers no `flock`.
    pub fn lock(path: &Path, sharing: Sharing, wait: Duration) -> Result<Option<Self>, Error> {
        let f = match file::open(path, false) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match file::create_new(path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    file::open(path, false).map_err(|e| refused(path, "open", e))?
                }
                Err(e) => return Err(refused(path, "create", e)),
            },
            Err(e) => return Err(refused(path, "open", e)),
        };
        let meta = file::meta(&f).map_err(|e| Error::io("inspect", path, e))?;
        crate::trust::check_file(path, meta.uid, meta.mode)?;
        let mode = match sharing {
            Sharing::Shared => Mode::Shared,
            Sharing::Exclusive => Mode::Exclusive,
        };
        let no_mutex = |e: std::io::Error| {
            if file::means_no_mutex(&e) {
                Error::NoMutex {
                    path: path.to_owned(),
                    source: e,
                }
            } else {
                Error::io("lock", path, e)
            }
        };
        let clock = SystemClock;
        let end = clock.boot().saturating_add(wait);
        let mut pause = Duration::from_micros(50);
        loop {
            if file::try_lock(&f, mode).map_err(no_mutex)? {
                return Ok(Some(Self {
                    file: f,
                    path: path.to_owned(),
                }));
            }
            if clock.boot() >= end {
                return Ok(None);
            }
            clock.sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }

    /// The mutex's file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for FileMutex {
    fn drop(&mut self) {
        // OK to ignore: closing the descriptor, which follows at once, drops
        // the mutex too.
        let _ = file::unlock(&self.file);
    }
}

/// The error of a mutex file that could not be opened: a symbolic link at
/// its path (never followed) is said as one, anything else is the I/O
/// error.
fn refused(path: &Path, action: &'static str, e: std::io::Error) -> Error {
    if e.raw_os_error().map(rustix::io::Errno::from_raw_os_error) == Some(rustix::io::Errno::LOOP) {
        return Error::Untrusted(crate::trust::Untrusted {
            path: path.to_owned(),
            why: "a symbolic link, which baton never follows".into(),
            remedy: "nothing was opened: remove it (baton creates the file afresh)".into(),
        });
    }
    Error::io(action, path, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_holders_coexist_and_exclude_an_exclusive_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m");
        let short = Duration::from_millis(20);
        let a = FileMutex::lock(&p, Sharing::Shared, short)
            .unwrap()
            .unwrap();
        let b = FileMutex::lock(&p, Sharing::Shared, short)
            .unwrap()
            .unwrap();
        assert!(
            FileMutex::lock(&p, Sharing::Exclusive, short)
                .unwrap()
                .is_none()
        );
        drop((a, b));
        let x = FileMutex::lock(&p, Sharing::Exclusive, short)
            .unwrap()
            .unwrap();
        assert!(
            FileMutex::lock(&p, Sharing::Shared, short)
                .unwrap()
                .is_none()
        );
        drop(x);
        assert!(
            FileMutex::lock(&p, Sharing::Shared, short)
                .unwrap()
                .is_some()
        );
    }
}
