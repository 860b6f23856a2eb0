//! A lock of N slots, for any implementation: its lock at N names
//! ([`super::lock_path`]: `job`, `job@2`, …, as the scheduler names a lock's
//! slots), tried once each, slot 1 first, and the first taken is the run's,
//! as `crates/baton-sched/src/engine/slots.rs` takes a job's slots. An
//! answer that is neither "taken" nor "held" (a failure) ends the search
//! and is passed on as it is: a run whose store cannot decide for a slot
//! must not start. This module only tries in order; it never judges.

use super::{Algorithm, Failure, Holding};
use crate::exhibits::seed000::AfterLoad;

/// N locks, tried in order.
pub(crate) struct FirstFree {
    slots: Vec<Box<dyn Algorithm>>,
}

impl FirstFree {
    pub(crate) fn new(slots: Vec<Box<dyn Algorithm>>) -> Self {
        Self { slots }
    }
}

impl Algorithm for FirstFree {
    fn try_acquire(&self, hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        for slot in &self.slots {
            if let Some(h) = slot.try_acquire(hook)? {
                return Ok(Some(h));
            }
        }
        Ok(None)
    }
}
