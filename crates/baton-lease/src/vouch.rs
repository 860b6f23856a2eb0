//! Acting for the lease's holder from another process.
//!
//! A job's own helper commands (`baton watermark settle`) run as children of
//! the run that holds the lease and prove it with the lease's token, which
//! the runner hands to the job. [`Lock::while_held`] compares that token with
//! the record inside the lock file's critical section (a shared `flock`:
//! no acquire, renewal, release or break can happen meanwhile) and runs the
//! caller's action there, so "the run that holds the lease" and "the action"
//! are one step. It never writes the lock file and never waits for a holder,
//! only for the mutex, as every critical section does.

use crate::error::Error;
use crate::lock::{Lock, Opened};
use crate::outcome::Busy;
use crate::record::{Body, Held};
use crate::sys::file::Mode;
use crate::token::Token;

/// What [`Lock::while_held`] found.
#[derive(Debug)]
pub enum Vouched<T> {
    /// The lease is held with that token; the action ran and returned this.
    Done(T),
    /// The lease is not held with that token: free, held by another run, or
    /// another kind of record (shown); the action did not run.
    NotHolder(Body),
    /// There is no lock file: nobody holds the lease.
    Missing,
    /// The critical section could not be entered in time.
    Busy(Busy),
}

impl Lock {
    /// Runs `action` inside the lock file's critical section if the lease is
    /// held with `token`.
    ///
    /// # Errors
    ///
    /// As reading the lock ([`Lock::inspect`]): an untrusted or unreadable
    /// file, I/O failures.
    pub fn while_held<T>(
        &self,
        token: &Token,
        action: impl FnOnce(&Held) -> T,
    ) -> Result<Vouched<T>, Error> {
        let section = match self.open_locked(Mode::Shared, false)? {
            Opened::Missing => return Ok(Vouched::Missing),
            Opened::Busy(b) => return Ok(Vouched::Busy(b)),
            Opened::Section(s) => s,
        };
        match section.body() {
            Body::Held(h) if h.token == *token => Ok(Vouched::Done(action(h))),
            other => Ok(Vouched::NotHolder(other.clone())),
        }
        // The section, and with it the shared lock, ends here.
    }
}
