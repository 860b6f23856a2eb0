//! What a scheduler operation came to: done, failed, or unable to act at
//! all. Every command the scheduler carries out (`tick`, `run`, a backfill,
//! a pause, a watermark's settle) ends with one [`Outcome`]; several runs
//! in a row end with the worst of theirs.
//!
//! This module never picks a process's exit code: the binary maps an
//! outcome to its own, in one place. The one number it gives an outcome is
//! a worker's exit status, private to a tick and the processes it forks.

/// What a scheduler operation came to, from best to worst: the derived
/// order makes the worst of several runs their [`Ord::max`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// It succeeded, or there was nothing to do (nothing due, the kill
    /// switch off, an occurrence another process runs or decided).
    #[default]
    Done,
    /// A run failed, or an occurrence was missed or refused: an alert was
    /// raised, or the refusal was said.
    Failed,
    /// The configuration or the arguments cannot be honoured: the lock, the
    /// ledger or the state directory cannot be used, or the job is unknown.
    /// Nothing ran.
    Unable,
}

impl Outcome {
    /// The status a tick's worker process exits with to hand `self` back to
    /// the tick that forked it ([`Outcome::of_worker_status`] reads it).
    pub(crate) fn worker_status(self) -> u8 {
        match self {
            Self::Done => 0,
            Self::Failed => 1,
            Self::Unable => 2,
        }
    }

    /// The outcome a worker's exit `status` hands back; a status no worker
    /// gives counts as [`Outcome::Unable`].
    pub(crate) fn of_worker_status(status: u8) -> Self {
        match status {
            0 => Self::Done,
            1 => Self::Failed,
            _ => Self::Unable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    #[test]
    fn the_worst_is_the_max() {
        use Outcome::{Done, Failed, Unable};
        assert_eq!(Done.max(Failed), Failed);
        assert_eq!(Unable.max(Failed), Unable);
        assert_eq!([Done, Done].into_iter().max(), Some(Done));
        assert_eq!(Outcome::default(), Done);
    }

    #[test]
    fn a_worker_status_hands_the_outcome_back() {
        for o in [Outcome::Done, Outcome::Failed, Outcome::Unable] {
            assert_eq!(Outcome::of_worker_status(o.worker_status()), o);
        }
        assert_eq!(Outcome::of_worker_status(101), Outcome::Unable);
    }
}
