//! Evidence about a holder: is its process still the one that took the
//! lease, and does its job's process group still have members?
//!
//! The [`Liveness`] trait is the judge's only window onto other processes, so
//! [`crate::decide`] stays a pure function and a database-backed store can
//! reuse it. [`OsLiveness`] answers from `/proc` and `kill(-PGID, 0)`. When the
//! kernel's answer is unclear (a permission error, an unreadable `/proc`), the
//! answer is `Unknown`, and `Unknown` is always treated as alive: evidence of
//! death must be positive. Who owns a group's members, and their names, are
//! asked only for a report to people, never for a verdict.

use crate::sys::process;

/// What is known of the holder's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessState {
    /// The pid exists, is not a zombie, and started when the record says.
    Alive,
    /// No process has that pid.
    Gone,
    /// The process has exited and awaits its parent (`Z` or `X`).
    Zombie,
    /// The pid now belongs to a process that started at another time.
    Reused,
    /// The kernel's answer could not be read; treated as alive.
    Unknown,
}

/// What is known of the job's process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    /// At least one process is in the group (possibly someone else's).
    Members,
    /// The group is empty.
    Empty,
    /// The kernel's answer could not be read; treated as having members.
    Unknown,
}

/// Where the judge learns whether processes on this machine are alive.
pub trait Liveness: Send + Sync {
    /// The state of process `pid`, which the record says started at `start`
    /// ticks after boot.
    fn process(&self, pid: u32, start: u64) -> ProcessState;
    /// The state of process group `pgid`, whose leader started at
    /// `leader_start` ticks after boot when the record knows it. A leader
    /// alive with another start time means the id now names an unrelated
    /// group: `Empty`.
    fn group(&self, pgid: u32, leader_start: Option<u64>) -> GroupState;
    /// The users whose processes run in group `pgid`, each once; `None`
    /// when they cannot all be known. Only ever reported, never judged on.
    fn group_owners(&self, pgid: u32) -> Option<Vec<u32>> {
        let _ = pgid;
        None
    }
    /// The name of user `uid`, when it has one. Only ever reported.
    fn user_name(&self, uid: u32) -> Option<String> {
        let _ = uid;
        None
    }
}

/// Answers from this machine's kernel.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsLiveness;

impl Liveness for OsLiveness {
    fn process(&self, pid: u32, start: u64) -> ProcessState {
        match process::stat(pid) {
            // /proc may hide other users' processes (hidepid): ask the kernel.
            Ok(None) => match process::exists(pid) {
                Ok(false) => ProcessState::Gone,
                Ok(true) | Err(_) => ProcessState::Unknown,
            },
            Ok(Some(s)) if s.start != start => ProcessState::Reused,
            // A zombie leader whose other threads still run is alive.
            Ok(Some(s)) if process::is_dead_state(s.state) => match process::runs(pid, s.state) {
                Ok(true) => ProcessState::Alive,
                Ok(false) => ProcessState::Zombie,
                Err(_) => ProcessState::Unknown,
            },
            Ok(Some(_)) => ProcessState::Alive,
            Err(_) => ProcessState::Unknown,
        }
    }

    fn group(&self, pgid: u32, leader_start: Option<u64>) -> GroupState {
        if let (Some(start), Ok(Some(leader))) = (leader_start, process::stat(pgid))
            && leader.start != start
        {
            return GroupState::Empty;
        }
        match process::group_has_members(pgid) {
            Ok(true) => GroupState::Members,
            Ok(false) => GroupState::Empty,
            Err(_) => GroupState::Unknown,
        }
    }

    fn group_owners(&self, pgid: u32) -> Option<Vec<u32>> {
        process::group_member_uids(pgid).ok().flatten()
    }

    fn user_name(&self, uid: u32) -> Option<String> {
        process::user_name(uid)
    }
}
