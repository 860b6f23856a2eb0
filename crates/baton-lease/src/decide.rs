//! The judgement: given what a lock file says, who is looking, what time it is
//! and what the kernel says about the holder, may the lease be taken?
//!
//! [`decide`] is a pure function of its arguments (the [`Liveness`] it is
//! handed is its only window onto other processes), so every rule here is
//! tested without files, and a store other than a file can reuse it. It owns
//! the rules and nothing else: it never reads a file, never writes one, never
//! sleeps, never reads a clock.
//!
//! The rules, in order (see `DESIGN.md`, "Judging a holder"):
//!
//! 1. A free marker, or no file: free.
//! 2. A v3 lease from this kernel (same boot id) and this pid namespace is
//!    judged on evidence: holder alive → *live* while its renewal is fresh by
//!    the boot clock, *hung* once it has lapsed (refused either way); holder
//!    gone (no pid, a zombie, or a pid reused by a later process) → *orphaned*
//!    while its job's process group has members, else *dead*: broken at once.
//!    A group led by the init of the step's own pid namespace (`jinit=1`)
//!    whose recorded leader is gone holds nothing of the job, whoever runs
//!    in it now: dead (see `decide/group.rs`).
//! 3. A v3 lease from this host (same host name and machine id) but another
//!    boot id, last renewed before this boot began: *dead* (the machine
//!    rebooted). One renewed since was renewed by another machine with a
//!    cloned identity, and is judged as rule 4 says.
//! 4. Any other v3 lease cannot be checked from here: *live* until its
//!    renewal is older than its TTL plus the takeover grace (the judge's or the
//!    one the holder declared, whichever is longer), then *expired*. The age is
//!    read on the boot clock when the holder shares this kernel (another pid
//!    namespace), else on the wall clock; a wall stamp from the future is live
//!    (skew is reported, never a licence to break).
//! 5. A v2 lease: v2's own rule, the age of `at=` (or the file's mtime)
//!    against the v2 stale threshold.
//! 6. An empty file: a record being written (v2 writes after creating) while
//!    its mtime is within [`Policy::empty_grace`] of now; abandoned after.
//!    The judge holds the file's mutex, and a writer needs microseconds
//!    between creating a file and writing it (see `DESIGN.md`).
//! 7. Anything else (v1, another version, unreadable bytes, bytes that are
//!    no lock record): refused, at any age.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::liveness::{Liveness, ProcessState};
use crate::record::{Body, ForeignVersion, Free, Held, V2Lease};
use crate::token::Fence;

mod group;

pub use group::{Owner, Strangers};

/// The thresholds a judge applies. The defaults suit a lock on local disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// How long past its TTL a lease that cannot be checked from here is still
    /// respected. The holder must have stopped its job by its TTL plus its
    /// kill grace, which must be shorter than this.
    pub takeover_grace: Duration,
    /// When a Scheduler Lock v2 lease is stale (v2's `2 × STEP_TIMEOUT`).
    pub v2_stale_after: Duration,
    /// How long an empty lock file whose mutex is free counts as a record
    /// being written. Writers take microseconds; a file left empty longer
    /// (by `flock(1)`, or a writer that died) is abandoned.
    pub empty_grace: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        Self {
            takeover_grace: Duration::from_secs(30),
            v2_stale_after: Duration::from_secs(7200),
            empty_grace: Duration::from_secs(5),
        }
    }
}

/// Where the judge stands: the facts a record is compared against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observer {
    /// Host name.
    pub host: String,
    /// `/etc/machine-id`.
    pub machine: Option<String>,
    /// Boot id.
    pub boot: Option<String>,
    /// Pid namespace inode.
    pub pidns: Option<u64>,
}

/// Both clocks, read once for one judgement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Wall clock.
    pub wall: Timestamp,
    /// Boot clock.
    pub boot: Duration,
}

/// Who holds (or held) a lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // v3 is the common case; boxing it buys nothing.
pub enum Holder {
    /// A baton holder.
    V3(Held),
    /// A Scheduler Lock v2 holder.
    V2(V2Lease),
}

impl Holder {
    /// The holder's pid, if the record names one.
    pub fn pid(&self) -> Option<u32> {
        match self {
            Self::V3(h) => Some(h.pid),
            Self::V2(v) => v.pid,
        }
    }

    /// The holder's host, if the record names one.
    pub fn host(&self) -> Option<&str> {
        match self {
            Self::V3(h) => Some(&h.host),
            Self::V2(_) => None,
        }
    }

    /// The lease's fence (v3 only).
    pub fn fence(&self) -> Option<Fence> {
        match self {
            Self::V3(h) => Some(h.fence),
            Self::V2(_) => None,
        }
    }

    /// When the lease was taken.
    pub fn acquired(&self) -> Option<Timestamp> {
        match self {
            Self::V3(h) => Some(h.acquired),
            Self::V2(v) => v.at,
        }
    }

    /// When the lease was last renewed (v2 leases are never renewed).
    pub fn renewed(&self) -> Option<Timestamp> {
        match self {
            Self::V3(h) => Some(h.renewed),
            Self::V2(v) => v.at,
        }
    }

    /// The occurrence `key` last claimed under this lease (v3 only).
    pub fn claim(&self, key: &str) -> Option<i64> {
        match self {
            Self::V3(h) => h.claims.get(key),
            Self::V2(_) => None,
        }
    }

    /// The run id the holder gave, if any.
    pub fn run(&self) -> Option<&str> {
        match self {
            Self::V3(h) => h.run.as_deref(),
            Self::V2(_) => None,
        }
    }
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::V3(h) => {
                write!(f, "pid {} on {}", h.pid, h.host)?;
                if let Some(r) = &h.run {
                    write!(f, ", run {r}")?;
                }
                write!(
                    f,
                    ", fence {}, since {}, renewed {}",
                    h.fence, h.acquired, h.renewed
                )
            }
            Self::V2(v) => {
                f.write_str("a Scheduler Lock v2 holder")?;
                if let Some(p) = v.pid {
                    write!(f, ", pid {p}")?;
                }
                if let Some(a) = v.at {
                    write!(f, ", since {a}")?;
                }
                Ok(())
            }
        }
    }
}

/// Why a holder is known to be dead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// No process has the holder's pid, and nothing of its job runs: its
    /// group is empty, or the step's init that led it is gone.
    ProcessGone,
    /// The holder exited and awaits its parent.
    Zombie,
    /// The pid belongs to a later process.
    PidReused,
    /// The holder's machine has rebooted since it renewed.
    Rebooted,
}

impl std::fmt::Display for Death {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::ProcessGone => "its process is gone and nothing of its job runs",
            Self::Zombie => "its process has exited (a zombie)",
            Self::PidReused => "its pid now belongs to a later process",
            Self::Rebooted => "its machine has rebooted since",
        })
    }
}

/// Why a lease is refused however old it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Foreign {
    /// A version this build does not judge.
    Version(ForeignVersion),
    /// A lock record that cannot be read.
    Unreadable(String),
    /// Bytes that are no lock record at all.
    NotALock(String),
}

/// The judgement on one lock file at one moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No lock file.
    Absent,
    /// A free marker.
    Free(Free),
    /// A holder whose lease is respected: alive and renewing, or not
    /// checkable from here and within its TTL plus grace. `skew` is set when
    /// the holder's stamp lies in the judge's future.
    Live {
        /// The holder.
        holder: Holder,
        /// How far in the future the holder's stamp is, when it is.
        skew: Option<SignedDuration>,
    },
    /// The holder process is alive but has not renewed within its TTL.
    /// Refused and reported; never broken automatically.
    Hung {
        /// The holder.
        holder: Holder,
        /// Time since its last renewal, by the boot clock.
        lapsed: Duration,
    },
    /// The holder process is gone, but its job's process group has members
    /// that may still be writing. Refused and reported.
    Orphaned {
        /// The holder.
        holder: Holder,
        /// The group that still has members.
        pgid: u32,
        /// Set when the group's leader is gone and every member is another
        /// user's: likely not the job. Reported; still refused.
        strangers: Option<Strangers>,
    },
    /// The holder is provably dead: broken at once.
    Dead {
        /// The holder.
        holder: Holder,
        /// The evidence.
        evidence: Death,
    },
    /// A holder that cannot be checked from here, past its TTL plus the
    /// takeover grace (or a v2 lease past v2's stale threshold): broken.
    Expired {
        /// The holder.
        holder: Holder,
        /// How long ago it renewed (or, for v2, took the lease).
        age: SignedDuration,
    },
    /// An empty file younger than the empty grace: a record being written.
    Writing {
        /// Age by the file's mtime.
        age: SignedDuration,
    },
    /// An empty file older than the empty grace: its writer is gone (or it
    /// was `flock(1)`'s).
    Abandoned {
        /// Age by the file's mtime.
        age: SignedDuration,
    },
    /// A record this build will not judge. Left byte for byte untouched.
    Refused(Foreign),
}

impl Verdict {
    /// Whether an acquirer may take the lease now.
    pub fn claimable(&self) -> bool {
        matches!(
            self,
            Self::Absent
                | Self::Free(_)
                | Self::Dead { .. }
                | Self::Expired { .. }
                | Self::Abandoned { .. }
        )
    }

    /// The holder it names, whatever its state (live, hung, orphaned, dead
    /// or expired).
    pub fn holder(&self) -> Option<&Holder> {
        match self {
            Self::Live { holder, .. }
            | Self::Hung { holder, .. }
            | Self::Orphaned { holder, .. }
            | Self::Dead { holder, .. }
            | Self::Expired { holder, .. } => Some(holder),
            _ => None,
        }
    }

    /// The word `lock show` prints for it.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Absent => "absent",
            Self::Free(_) => "free",
            Self::Live { .. } => "live",
            Self::Hung { .. } => "hung",
            Self::Orphaned { .. } => "orphaned",
            Self::Dead { .. } => "dead",
            Self::Expired { .. } => "expired",
            Self::Writing { .. } => "writing",
            Self::Abandoned { .. } => "abandoned",
            Self::Refused(Foreign::Version(_)) => "foreign-version",
            Self::Refused(Foreign::Unreadable(_)) => "unreadable",
            Self::Refused(Foreign::NotALock(_)) => "not-a-lock",
        }
    }
}

/// The claims a record carries, kept by every acquisition and release.
pub(crate) fn prior_claims(body: Option<&Body>) -> crate::Claims {
    match body {
        Some(Body::Held(h)) => h.claims.clone(),
        Some(Body::Free(f)) => f.claims.clone(),
        _ => crate::Claims::default(),
    }
}

/// The fence a new acquisition must exceed, from the record it replaces.
pub(crate) fn prior_fence(body: Option<&Body>) -> Option<Fence> {
    match body? {
        Body::Held(h) => Some(h.fence),
        Body::Free(f) => f.fence,
        _ => None,
    }
}

/// Judges a lock file. `body` is `None` when there is no file; `mtime` is the
/// file's modification time (used for empty files and v2 leases without a
/// readable stamp).
pub fn decide(
    body: Option<&Body>,
    mtime: Option<Timestamp>,
    here: &Observer,
    now: Now,
    policy: &Policy,
    live: &dyn Liveness,
) -> Verdict {
    let Some(body) = body else {
        return Verdict::Absent;
    };
    match body {
        Body::Free(f) => Verdict::Free(f.clone()),
        Body::Held(h) => judge_held(h, here, now, policy, live),
        Body::V2(v) => judge_v2(v, mtime, now, policy),
        Body::Empty => judge_empty(mtime, now, policy),
        Body::Foreign(v) => Verdict::Refused(Foreign::Version(v.clone())),
        Body::Unreadable(why) => Verdict::Refused(Foreign::Unreadable(why.clone())),
        Body::NotALock(why) => Verdict::Refused(Foreign::NotALock(why.clone())),
    }
}

fn judge_held(
    h: &Held,
    here: &Observer,
    now: Now,
    policy: &Policy,
    live: &dyn Liveness,
) -> Verdict {
    let holder = || Holder::V3(h.clone());
    let same_kernel = matches!((&h.boot, &here.boot), (Some(a), Some(b)) if a == b);
    if !same_kernel {
        let same_machine = h.host == here.host
            && matches!((&h.machine, &here.machine), (Some(a), Some(b)) if a == b);
        if same_machine && h.boot.is_some() && here.boot.is_some() && renewed_before_boot(h, now) {
            return Verdict::Dead {
                holder: holder(),
                evidence: Death::Rebooted,
            };
        }
        return by_wall(h, now, policy);
    }
    let checkable = matches!((h.pidns, here.pidns), (Some(a), Some(b)) if a == b);
    let (true, Some(pstart)) = (checkable, h.pstart) else {
        // Same kernel, another pid namespace: the process cannot be seen, but
        // the boot clock is shared, so freshness needs no wall clock.
        return by_boot_clock(h, now, policy);
    };
    let evidence = match live.process(h.pid, pstart) {
        ProcessState::Alive | ProcessState::Unknown => {
            let lapsed = match h.renewed_boot {
                Some(bt) => now.boot.saturating_sub(bt),
                None => now
                    .wall
                    .duration_since(h.renewed)
                    .try_into()
                    .unwrap_or(Duration::ZERO),
            };
            return if lapsed <= h.ttl {
                Verdict::Live {
                    holder: holder(),
                    skew: None,
                }
            } else {
                Verdict::Hung {
                    holder: holder(),
                    lapsed,
                }
            };
        }
        ProcessState::Gone => Death::ProcessGone,
        ProcessState::Zombie => Death::Zombie,
        ProcessState::Reused => Death::PidReused,
    };
    if let Some(pgid) = h.pgid
        && let group::Group::Runs { strangers } = group::judge(h, pgid, live)
    {
        return Verdict::Orphaned {
            holder: holder(),
            pgid,
            strangers,
        };
    }
    Verdict::Dead {
        holder: holder(),
        evidence,
    }
}

/// How long before this boot began a lease's last renewal must lie for a
/// lease of this host name and machine id, but another boot id, to be one
/// of an earlier boot of this machine: clocks between machines, and this
/// machine's clock between its boot and now, are trusted to agree within it.
pub const BOOT_TOLERANCE: Duration = Duration::from_secs(1);

/// Whether `h` was last renewed before this boot began (by more than
/// [`BOOT_TOLERANCE`]): the wall clock now, less the time since boot (the
/// boot clock counts a suspend too, as the wall clock does). A lease renewed
/// since then was renewed by another machine that shares this one's host name
/// and machine id (a cloned image), never by an earlier boot of this one.
/// When the sum cannot be made, the answer is no (the lease is then judged
/// like any other host's, the safe direction).
fn renewed_before_boot(h: &Held, now: Now) -> bool {
    let Ok(up) = SignedDuration::try_from(now.boot.saturating_add(BOOT_TOLERANCE)) else {
        return false;
    };
    now.wall
        .checked_sub(up)
        .is_ok_and(|began| h.renewed < began)
}

/// TTL plus the takeover grace: the longer of the judge's and the one the
/// holder declared its self-fencing needs.
fn patience(h: &Held, policy: &Policy) -> Duration {
    let grace = h
        .grace
        .map_or(policy.takeover_grace, |g| g.max(policy.takeover_grace));
    h.ttl.saturating_add(grace)
}

fn by_boot_clock(h: &Held, now: Now, policy: &Policy) -> Verdict {
    let Some(bt) = h.renewed_boot else {
        return by_wall(h, now, policy);
    };
    let holder = Holder::V3(h.clone());
    let lapsed = now.boot.saturating_sub(bt);
    if lapsed <= patience(h, policy) {
        Verdict::Live { holder, skew: None }
    } else {
        Verdict::Expired {
            holder,
            age: signed(lapsed),
        }
    }
}

/// An empty file, judged by a judge that holds its mutex. v2 creates its lock
/// file with `O_EXCL` and writes the record after taking the mutex, so an
/// empty file is a record being written for the microseconds between the two;
/// `flock(1)` leaves an empty file behind for good. So an empty file is
/// respected while its mtime is within the empty grace of now (in either
/// direction: a stepped clock must not make it look young forever), and
/// abandoned after.
fn judge_empty(mtime: Option<Timestamp>, now: Now, policy: &Policy) -> Verdict {
    let Some(m) = mtime else {
        return Verdict::Abandoned {
            age: SignedDuration::MAX,
        };
    };
    let age = now.wall.duration_since(m);
    if age.unsigned_abs() <= policy.empty_grace {
        Verdict::Writing { age }
    } else {
        Verdict::Abandoned { age }
    }
}

fn by_wall(h: &Held, now: Now, policy: &Policy) -> Verdict {
    let age = now.wall.duration_since(h.renewed);
    if age.is_negative() {
        return Verdict::Live {
            holder: Holder::V3(h.clone()),
            skew: Some(-age),
        };
    }
    if age <= signed(patience(h, policy)) {
        Verdict::Live {
            holder: Holder::V3(h.clone()),
            skew: None,
        }
    } else {
        Verdict::Expired {
            holder: Holder::V3(h.clone()),
            age,
        }
    }
}

fn judge_v2(v: &V2Lease, mtime: Option<Timestamp>, now: Now, policy: &Policy) -> Verdict {
    let holder = Holder::V2(v.clone());
    let Some(at) = v.at.or(mtime) else {
        return Verdict::Live { holder, skew: None };
    };
    let age = now.wall.duration_since(at);
    if age.is_negative() {
        Verdict::Live {
            holder,
            skew: Some(-age),
        }
    } else if age <= signed(policy.v2_stale_after) {
        Verdict::Live { holder, skew: None }
    } else {
        Verdict::Expired { holder, age }
    }
}

fn signed(d: Duration) -> SignedDuration {
    SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX)
}

#[cfg(test)]
mod tests;
