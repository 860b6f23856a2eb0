//! `overlap`'s words: what an occurrence does when it finds its job's run
//! in flight.
//!
//! This module owns the words and their spelling in `baton.toml`. It must
//! never take, wait for or stop a run: the engine does, by them.

/// What an occurrence does when it finds the job's run in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// It is missed (reason `busy`), with an alert.
    Skip,
    /// It waits, and starts when the run ends; at most one waits.
    Queue,
    /// It waits as with `Queue`, and asks the run in flight, when that is a
    /// run of the same job, to stop: the run's tree is stopped as a lost
    /// lease stops it (recorded `replaced`), and the waiting occurrence
    /// starts under the same lease once nothing of it runs. A run of
    /// another job sharing the lock is never stopped.
    Replace,
}

impl Overlap {
    /// Whether an occurrence that finds the job's run in flight waits for
    /// the lock (`queue`, and `replace`, which also asks the run to stop).
    pub fn waits(self) -> bool {
        matches!(self, Overlap::Queue | Overlap::Replace)
    }

    /// The word in `baton.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::Queue => "queue",
            Overlap::Replace => "replace",
        }
    }
}
