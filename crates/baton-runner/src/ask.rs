//! [`StopAsk`]: a request from outside a session that its run stop, for a
//! later run of the same job to take its place (`overlap = "replace"`).
//!
//! The caller learns of the request however it can (the scheduler polls
//! its ledger on a thread of its own) and sets it here; the session reads
//! it without blocking each time its supervisor wakes (at least every
//! [`crate::TICK`]), and stops the running step's tree exactly as a lost
//! lease does: the first signal to every member, then `SIGKILL` rounds
//! after the kill grace, until nothing is left. Unlike a lost lease, the
//! lease is kept: the run that replaces this one starts under it once the
//! tree is gone. Setting it never signals anything by itself, and nothing
//! but the session may act on it.

use std::sync::{Arc, Mutex, PoisonError};

/// A request that one run of a session stop, shared between the session
/// and whoever learns of it. Cloning shares the same request; each run
/// listens to one of its own ([`crate::Session::listen`]), so a request
/// set late for a run that ended reaches no other.
#[derive(Debug, Clone, Default)]
pub struct StopAsk {
    why: Arc<Mutex<Option<String>>>,
}

impl StopAsk {
    /// A request not yet made.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop, `why` saying it for people; the first request
    /// is kept.
    pub fn ask(&self, why: String) {
        let mut w = self.why.lock().unwrap_or_else(PoisonError::into_inner);
        if w.is_none() {
            *w = Some(why);
        }
    }

    /// Why the run was asked to stop, once it was.
    pub fn asked(&self) -> Option<String> {
        self.why
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}
