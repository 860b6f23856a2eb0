//! What an attempt to take a job's lock came to, whichever store keeps it:
//! the lease (held, as the runner drives it), an occurrence the job already
//! claimed, or a refusal naming its holder. Contention is an outcome here,
//! never an error; an error means the store could not decide, and the run
//! does not start (fail closed).

use crate::Held;
use baton_lease::decide::Foreign;
use baton_lease::{Busy, Holder, Outcome, Verdict};

use crate::words::MissReason;

/// The result of [`super::Store::try_acquire`].
#[allow(clippy::large_enum_variant)] // Made once per acquisition; boxing buys nothing.
pub enum Taken {
    /// The lease is ours (and the occurrence, when one was claimed).
    Acquired(Box<dyn Held>),
    /// The lock was free, but the job already claimed this occurrence or a
    /// later one (`at`); nothing changed.
    Claimed {
        /// The occurrence the claim holds.
        at: i64,
    },
    /// Someone holds the lock.
    Refused(Refused),
}

/// What a job's guard said ([`super::Store::runs_elsewhere`], [`super::Store::take_guard`]).
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // Made once per run; boxing it buys nothing.
pub enum Guard {
    /// The job runs under no other lock, and had not claimed the
    /// occurrence asked about.
    Clear,
    /// The job's run under another lock is in flight: refused as that
    /// lock's holder would refuse it.
    Elsewhere(Refused),
    /// The job already claimed this occurrence or a later one (`at`), under
    /// another lock: it started, and must not start again.
    Claimed {
        /// The newest occurrence the job claimed.
        at: i64,
    },
}

/// What a take of a job's guard claimed ([`super::Store::take_guard`]): the
/// fence of the run that took it and the claim it held before and since,
/// so that a run that does not start after all takes it back
/// ([`super::Store::withdraw_guard`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardClaim {
    /// The fence of the run that took the guard.
    pub fence: u64,
    /// The occurrence the guard claimed before.
    pub before: Option<i64>,
    /// The occurrence it claims since.
    pub claim: Option<i64>,
}

/// A lock that was not free.
#[derive(Debug, Clone)]
pub struct Refused {
    /// Why the occurrence does not run: `busy` (a live holder), `hung`,
    /// `orphaned` or `version-conflict`; its alert is of the same kind
    /// ([`MissReason::alert_kind`]).
    pub reason: MissReason,
    /// Who holds it, when known.
    pub holder: Option<Holder>,
    /// What was said about it, for people.
    pub why: String,
}

impl Refused {
    /// The refusal a store's judgement of the holder came to. A verdict
    /// that would let the lock be taken is never a refusal the store makes;
    /// should one arrive it reads as busy (try again), never as taken.
    pub fn of_verdict(v: &Verdict) -> Refused {
        let (reason, holder) = match v {
            Verdict::Live { holder, .. } => (MissReason::Busy, Some(holder.clone())),
            Verdict::Hung { holder, .. } => (MissReason::Hung, Some(holder.clone())),
            Verdict::Orphaned { holder, .. } => (MissReason::Orphaned, Some(holder.clone())),
            Verdict::Refused(_) => (MissReason::VersionConflict, None),
            _ => (MissReason::Busy, None),
        };
        Refused {
            reason,
            holder,
            why: describe(v),
        }
    }
}

/// A verdict for people, in the words of the file lock's refusals.
fn describe(v: &Verdict) -> String {
    let as_outcome = match v.clone() {
        Verdict::Live { holder, skew } => Outcome::Busy(Busy::Held { holder, skew }),
        Verdict::Hung { holder, lapsed } => Outcome::Hung { holder, lapsed },
        Verdict::Orphaned {
            holder,
            pgid,
            strangers,
        } => Outcome::Orphaned {
            holder,
            pgid,
            strangers,
        },
        Verdict::Refused(Foreign::Version(v)) => {
            return format!("the lock's record is of another version ({v}); it is never taken");
        }
        Verdict::Refused(Foreign::Unreadable(why) | Foreign::NotALock(why)) => {
            return format!("the lock's record cannot be read ({why}); it is never taken");
        }
        other => return format!("the lock is {} (try again)", other.word()),
    };
    as_outcome.describe()
}

impl Refused {
    /// A refusal because `job` runs under another lock (`lock`, for
    /// people) whose holder was judged `verdict`.
    pub fn elsewhere(job: &str, lock: &str, verdict: &Verdict) -> Refused {
        let mut r = Refused::of_verdict(verdict);
        r.why = format!("{job} runs under its former lock {lock}: {}", r.why);
        r
    }

    /// A refusal of the file lock.
    pub fn of_outcome(o: &Outcome) -> Refused {
        let (reason, holder) = match o {
            Outcome::Busy(Busy::Held { holder, .. }) => (MissReason::Busy, Some(holder.clone())),
            Outcome::Hung { holder, .. } => (MissReason::Hung, Some(holder.clone())),
            Outcome::Orphaned { holder, .. } => (MissReason::Orphaned, Some(holder.clone())),
            Outcome::VersionConflict(_) => (MissReason::VersionConflict, None),
            _ => (MissReason::Busy, None),
        };
        Refused {
            reason,
            holder,
            why: o.describe(),
        }
    }
}
