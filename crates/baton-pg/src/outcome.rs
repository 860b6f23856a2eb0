//! What acquire, renew, restate and release can come to. Contention is an outcome: a
//! busy lease, a claimed occurrence and a lost token are values, not errors.
//!
//! These are the answers of [`crate::Leases`], one round trip each, as
//! `baton_lease`'s own are the lock file's: they carry what the server
//! said (its time, the job whose claim stands) and have no "unconfirmed",
//! since a round trip that fails is an error at this level. The session
//! sees a lease through `baton_store::held`'s `Renewal`, `Restated` and
//! `Release`, which [`crate::PgHeld`] makes of these, with the sentence a
//! lost lease is told by and an unreached server as "unconfirmed".

use baton_lease::{Fence, Token, Verdict};
use jiff::Timestamp;

use crate::switch::Switch;

/// A lease granted by the store.
///
/// Dropping it does not release it (release is a round trip; call
/// [`crate::Leases::release`]): an unreleased lease is respected until its
/// holder is judged dead or its renewal lapses past TTL plus grace. Holding
/// one does not stop a paused or partitioned holder from writing after the
/// lease moved on; only the fence, checked by whatever the job writes, does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgLease {
    pub(crate) name: String,
    pub(crate) fence: Fence,
    pub(crate) token: Token,
    pub(crate) acquired: Timestamp,
}

impl PgLease {
    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This acquisition's fence: greater than every fence the lock handed
    /// out before.
    pub fn fence(&self) -> Fence {
        self.fence
    }

    /// The token renew and release present.
    pub fn token(&self) -> Token {
        self.token
    }

    /// When the server granted it (the server's clock).
    pub fn acquired(&self) -> Timestamp {
        self.acquired
    }
}

/// The result of an acquisition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // Acquired is the common case; boxing buys nothing.
pub enum Acquire {
    /// The lease is ours (and the occurrence, when one was claimed).
    Acquired(PgLease),
    /// Someone holds it: live, hung, orphaned, or refused; nothing changed.
    Busy {
        /// The judgement.
        verdict: Verdict,
        /// The server's clock when it was made.
        at: Timestamp,
    },
    /// The store's server changed (a promoted standby, a restore) less
    /// than the asker's TTL plus takeover grace ago, and may have lost
    /// grants whose holders still run: nothing is granted until
    /// [`Switch::until`]; nothing changed but the record of the switch.
    Switched(Switch),
    /// The lease was free, but the job already claimed this occurrence (or a
    /// later one); nothing changed.
    Claimed {
        /// The job.
        job: String,
        /// The occurrence, in seconds since 1970.
        occurrence: i64,
    },
}

impl Acquire {
    /// The lease, when granted.
    pub fn acquired(self) -> Option<PgLease> {
        match self {
            Self::Acquired(l) => Some(l),
            _ => None,
        }
    }
}

/// The result of a renewal: [`crate::PgHeld`] makes it
/// `baton_store::Renewal`, without the server's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renewal {
    /// Renewed at this server time.
    Renewed(Timestamp),
    /// The row no longer carries our token: the lease moved on (or was
    /// released). The holder must stop its job.
    Lost,
}

/// The result of a release: [`crate::PgHeld`] makes it
/// `baton_store::Release`, without the server's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Released at this server time; the row keeps the fence.
    Released(Timestamp),
    /// The row no longer carries our token; nothing changed, so a displaced
    /// holder never frees its successor.
    Lost,
}

/// The result of [`crate::Leases::restate`]: [`crate::PgHeld`] makes it
/// `baton_store::Restated`, without the server's time or the job's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restated {
    /// The row is ours, names the run, holds the claim, and was renewed at
    /// this server time.
    Done(Timestamp),
    /// The job already claimed this occurrence (under this lock or any
    /// other) or, under this lock, a later one; nothing changed.
    Claimed {
        /// The job.
        job: String,
        /// The occurrence its claim holds: the latest under this lock, or
        /// the one asked for when another lock claimed it.
        occurrence: i64,
    },
    /// The row no longer carries our token; nothing changed.
    Lost,
}
