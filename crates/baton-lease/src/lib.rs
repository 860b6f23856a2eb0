//! baton-lease: the run lock.
//!
//! A lease record in a file, every read-decide-write under `flock(LOCK_EX)` on
//! that file, a fencing token and fence number per acquisition, renewal by the
//! holder, and "dead" decided by positive evidence (the holder's process is
//! gone and its job's process group empty, or its machine rebooted), never by
//! a timer alone when evidence can be had. It is the v3 of Scheduler Lock:
//! everything v2 guarantees, plus renewal and evidence of death. The protocol
//! and its reasoning are in `DESIGN.md` at the repository's root.
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! use baton_lease::{Lock, Outcome};
//!
//! let lock = Lock::new(dir.path().join("nightly.lock"));
//! match lock.try_acquire()? {
//!     Outcome::Acquired(mut lease) => {
//!         println!("running as fence {}", lease.fence());
//!         let _ = lease.renew()?; // every third of the TTL, while the job runs
//!         lease.release()?;
//!     }
//!     other => eprintln!("skipped: {}", other.describe()),
//! }
//! # Ok::<(), baton_lease::Error>(())
//! ```
//!
//! Map of the crate: [`record`] is the on-disk format; [`decide`] the pure
//! judgement; [`liveness`] the evidence; [`Lock`] the critical section,
//! `acquire` the taking of a lease in it, and [`Lease`] the guard;
//! [`clock`] the only reader of time; `sys` the only caller of the
//! operating system. [`filesystem`] and [`timesync`] answer two questions
//! asked before a lock is relied on: whether `flock` on a path's
//! filesystem excludes every process that shares it, and whether the
//! kernel's clock is kept synchronised.

mod acl;
mod acquire;
mod budget;
mod claims;
pub mod clock;
pub mod decide;
mod error;
mod facts;
pub mod filesystem;
mod guard;
pub mod job;
mod lease;
pub mod liveness;
mod lock;
pub mod mutex;
mod outcome;
mod presence;
pub mod record;
pub mod secret;
pub mod slot;
mod stop;
mod sys;
pub mod timesync;
mod token;
pub mod trust;
mod value;
mod vouch;

pub use acquire::Outcome;
pub use budget::overran;
pub use claims::{Claims, FUTURE_TOLERANCE as FUTURE_CLAIM_TOLERANCE, MAX_KEY_BYTES, Once};
pub use clock::{
    Clock, ManualClock, MovedSince, Moves, ShiftedClock, SystemClock, WallOutOfRange,
    check_system_wall,
};
pub use decide::{Death, Foreign, Holder, Now, Observer, Policy, Verdict};
pub use error::Error;
pub use guard::{GuardTaken, Guarded};
pub use lease::Lease;
pub use liveness::{GroupState, Liveness, OsLiveness, ProcessState};
pub use lock::{BreakMode, Claim, Lock, Options, REOPEN_ATTEMPTS, mutex_wait_for};
pub use mutex::{FileMutex, Sharing};
pub use outcome::{
    Broken, Busy, Conflict, Inspection, Lost, Release, Renewal, Restated, human, human_signed,
};
pub use record::Leader;
pub use stop::Stopped;
pub use token::{BadToken, Fence, Token};
pub use vouch::Vouched;
