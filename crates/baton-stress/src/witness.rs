//! The overlap witness: how the instrument sees two holders at once.
//!
//! A process that believes it holds the lock *claims* the witness, a file
//! next to the lock, and drops the claim before it releases. A claim is
//! `link(2)` of a private file (which already holds the claimant's pid and
//! start time) to the witness name, so the name appears whole or not at all
//! and a second claim fails with the kernel's `EEXIST` *at the instant the
//! overlap happens*: it is observed, not reconciled afterwards (seed 003
//! §8.2).
//!
//! Killed holders. A holder killed with `kill -9` while it held the witness
//! leaves the name behind, and its lease is dead: the next winner is
//! legitimate and must not be counted as an overlap. So on `EEXIST` the
//! claimant reads the owner from the file: an owner still alive (running or
//! stopped) is a concurrent holder, counted at once; an owner that is gone,
//! a zombie, or whose pid now belongs to a later process is no holder, and
//! the claimant waits for the name to go. Only two parties ever remove the
//! name: its live owner, and the campaign's parent, which removes a dead
//! owner's name after it killed and reaped that owner. Each name has one
//! owner, so there is never a second remover and no claim is ever removed
//! from under a live holder (which would hide an overlap). Claimants never
//! remove a name they do not own.
//!
//! Threads in one process share a pid; any `EEXIST` among them names a live
//! owner and is an overlap, which is what the threads scenario wants.
//!
//! A lock with N slots admits N holders at once; its witness is N names
//! ([`slots`]), and the overlap is the claim that finds all N held by live
//! owners at one instant. With one slot, the witness is the one name above,
//! exactly.

mod slots;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

use crate::proc::Owner;

/// How long a claimant waits for the parent to remove a dead owner's name.
/// Generous: it bounds a broken run, it measures nothing.
const DEAD_OWNER_PATIENCE: Duration = Duration::from_secs(20);

/// The witness of one trial, as seen by one process.
#[derive(Debug)]
pub(crate) struct Witness {
    path: PathBuf,
    private: PathBuf,
    me: Owner,
    slots: u32,
    /// The name this process's current claim holds.
    held: Mutex<Option<PathBuf>>,
}

/// What a claim found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// A name is ours; drop it before releasing the lock. `holders`: how
    /// many held the witness at one instant right after the claim, this one
    /// included (1 with one slot, by construction).
    Ours {
        /// Holders at that instant.
        holders: u32,
    },
    /// Live processes held every name: one holder more than the lock admits.
    Overlap(Owner),
}

/// The failures of the witness itself: the instrument, never the lock.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WitnessError {
    /// A system call on the witness failed.
    #[error("failed to {what} {}: {source}", path.display())]
    Io {
        /// What was being done.
        what: &'static str,
        /// To which path.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
    /// A dead owner's name stayed longer than the parent should need.
    #[error("the witness {} of dead owner pid {} was never removed", path.display(), owner.pid)]
    DeadOwnerStayed {
        /// The witness.
        path: PathBuf,
        /// The owner.
        owner: Owner,
    },
}

impl Witness {
    /// The witness at `path` for this process, for a lock of `slots` slots.
    /// Writes this process's private file (`path.PID.own`) once; with one
    /// slot it is linked at every claim.
    ///
    /// # Errors
    ///
    /// When the private file cannot be written or `/proc/self` read.
    pub(crate) fn new(path: &Path, slots: u32) -> Result<Self, WitnessError> {
        let me = Owner::me().map_err(|source| WitnessError::Io {
            what: "read own identity for",
            path: path.to_owned(),
            source,
        })?;
        let private = path.with_extension(format!("{}.own", me.pid));
        if !private.exists() {
            // Threads of one process may race here; the content is the same.
            let tmp = path.with_extension(format!("{}.{}.tmp", me.pid, unique()));
            std::fs::write(&tmp, me.render()).map_err(|source| WitnessError::Io {
                what: "write",
                path: tmp.clone(),
                source,
            })?;
            std::fs::rename(&tmp, &private).map_err(|source| WitnessError::Io {
                what: "rename into place",
                path: private.clone(),
                source,
            })?;
        }
        Ok(Self {
            path: path.to_owned(),
            private,
            me,
            slots: slots.max(1),
            held: Mutex::new(None),
        })
    }

    /// How many holders the lock admits.
    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    /// Claims the name (see the module doc).
    ///
    /// # Errors
    ///
    /// I/O failures other than `EEXIST`, and a dead owner's name that stays.
    pub(crate) fn claim(&self) -> Result<Claim, WitnessError> {
        if self.slots > 1 {
            let (claim, name) = slots::claim(&self.path, &self.me, self.slots)?;
            if let Some(n) = name {
                *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some(n);
            }
            return Ok(claim);
        }
        let deadline = SystemClock.boot() + DEAD_OWNER_PATIENCE;
        loop {
            match std::fs::hard_link(&self.private, &self.path) {
                Ok(()) => return Ok(Claim::Ours { holders: 1 }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(WitnessError::Io {
                        what: "link the witness",
                        path: self.path.clone(),
                        source,
                    });
                }
            }
            let Some(owner) = read_owner(&self.path)? else {
                continue; // Removed meanwhile: try again.
            };
            if owner.is_alive() {
                return Ok(Claim::Overlap(owner));
            }
            if SystemClock.boot() > deadline {
                return Err(WitnessError::DeadOwnerStayed {
                    path: self.path.clone(),
                    owner,
                });
            }
            SystemClock.sleep(Duration::from_micros(200));
        }
    }

    /// Drops this process's claim. Call only after [`Claim::Ours`].
    ///
    /// # Errors
    ///
    /// When the name cannot be removed.
    pub(crate) fn drop_claim(&self) -> Result<(), WitnessError> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner()).take();
        let path = held.unwrap_or_else(|| self.path.clone());
        std::fs::remove_file(&path).map_err(|source| WitnessError::Io {
            what: "remove",
            path,
            source,
        })
    }
}

/// The parent's half: after killing and reaping `pid`, removes the witness
/// name `pid` owned, of the `slots` names at `path`. Returns whether there
/// was one.
///
/// # Errors
///
/// I/O failures other than "not there".
pub(crate) fn remove_dead_owners(path: &Path, slots: u32, pid: u32) -> Result<bool, WitnessError> {
    if slots > 1 {
        return slots::remove_dead_owner(path, slots, pid);
    }
    remove_dead_owner_at(path, pid)
}

fn remove_dead_owner_at(path: &Path, pid: u32) -> Result<bool, WitnessError> {
    match read_owner(path)? {
        Some(o) if o.pid == pid => match std::fs::remove_file(path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(WitnessError::Io {
                what: "remove a dead owner's",
                path: path.to_owned(),
                source,
            }),
        },
        _ => Ok(false),
    }
}

fn read_owner(path: &Path) -> Result<Option<Owner>, WitnessError> {
    // A name is always whole (it is a link to a finished file); anything
    // unparsable is treated as a live owner, towards reporting.
    Ok(read_text(path)?.map(|t| Owner::parse(&t).unwrap_or(Owner { pid: 0, start: 0 })))
}

fn read_text(path: &Path) -> Result<Option<String>, WitnessError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(WitnessError::Io {
            what: "read",
            path: path.to_owned(),
            source,
        }),
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
    fn a_second_claim_by_a_live_owner_is_an_overlap() {
        let dir = tempfile::tempdir().unwrap();
        let w = Witness::new(&dir.path().join("witness"), 1).unwrap();
        let ours = Claim::Ours { holders: 1 };
        assert_eq!(w.claim().unwrap(), ours);
        assert_eq!(w.claim().unwrap(), Claim::Overlap(Owner::me().unwrap()));
        w.drop_claim().unwrap();
        assert_eq!(w.claim().unwrap(), ours);
    }

    #[test]
    fn a_dead_owners_name_is_no_overlap_and_only_the_parent_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("witness");
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        std::fs::write(&path, format!("{dead} 1\n")).unwrap();
        assert!(!remove_dead_owners(&path, 1, dead + 1).unwrap());
        let w = Witness::new(&path, 1).unwrap();
        std::thread::scope(|s| {
            let h = s.spawn(|| w.claim().unwrap());
            SystemClock.sleep(Duration::from_millis(20));
            assert!(remove_dead_owners(&path, 1, dead).unwrap());
            assert_eq!(h.join().unwrap(), Claim::Ours { holders: 1 });
        });
    }
}
