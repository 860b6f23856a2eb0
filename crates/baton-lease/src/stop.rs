//! The operator's stop: end a same-host holder's job (and the holder) before
//! its lease is broken, for `baton lock break --kill`.
//!
//! A record is only evidence, and a forged or damaged one must not turn this
//! into a way to kill arbitrary processes. So it signals nothing it has not
//! verified, right before each signal:
//!
//! - never pid 0 or 1, group 0 or 1, this process or its own group (the
//!   system module refuses them whatever the caller asks);
//! - the holder only when its pid, its start time, its owner (the lock file's
//!   owner) and its executable (the record's `exe=`) all match;
//! - the job's group only when the record names the group's leader start time
//!   (`jstart=`) and the leader is alive with exactly that start time.
//!
//! It never signals a holder on another host or in another pid namespace,
//! and it does not break the lease; the caller does that afterwards, under
//! the mutex, on a fresh verdict.

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use crate::decide::{Observer, Strangers, Verdict};
use crate::error::Error;
use crate::liveness::{GroupState, ProcessState};
use crate::lock::Lock;
use crate::record::{Body, Held};
use crate::sys::process;

/// What [`Lock::stop_holder`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// No lease is held (no file, a free marker, or a foreign record).
    NothingHeld,
    /// The holder runs where this process cannot see it (another host or pid
    /// namespace); nothing was signalled.
    NotHere {
        /// The holder's host.
        host: String,
    },
    /// Neither the holder nor its job was running.
    AlreadyGone,
    /// Something the record names may still run, but it could not be
    /// verified as the record's; nothing was signalled.
    Unverified {
        /// What could not be verified, in words.
        why: String,
        /// Set when the job's group is likely not the job's at all: its
        /// leader is gone and every member is another user's (the lease's
        /// verdict says so too). Nothing is signalled; an operator who has
        /// checked breaks the lease without `--kill`'s stop.
        strangers: Option<Strangers>,
    },
    /// Signals were sent; `killed` says whether `SIGKILL` was needed, and
    /// `remaining` whether anything still ran when the wait ended.
    Signalled {
        /// The holder's pid, when it was signalled.
        holder: Option<u32>,
        /// The job's group, when it was signalled.
        group: Option<u32>,
        /// Whether `SIGKILL` followed `SIGTERM`.
        killed: bool,
        /// Whether a process still ran when the wait ended.
        remaining: bool,
    },
}

/// What may be signalled, as verified just now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Targets {
    holder: Option<u32>,
    group: Option<u32>,
}

impl Lock {
    /// Stops a same-host holder and its job: `SIGTERM` to both, `SIGKILL`
    /// to whatever is left after `grace`, then waits (at most `grace` again)
    /// for them to be gone.
    ///
    /// # Errors
    ///
    /// As [`Lock::inspect`]; and a kernel refusal to deliver a signal.
    pub fn stop_holder(&self, grace: Duration) -> Result<Stopped, Error> {
        let inspection = self.inspect()?;
        let Some(Body::Held(h)) = inspection.body else {
            return Ok(Stopped::NothingHeld);
        };
        let here = Observer::here();
        let same_space = h.boot.is_some()
            && h.boot == here.boot
            && h.pidns.is_some()
            && h.pidns == here.pidns
            && h.pstart.is_some();
        if !same_space {
            return Ok(Stopped::NotHere { host: h.host });
        }
        let owner = std::fs::symlink_metadata(self.path())
            .map_err(|e| Error::io("inspect", self.path(), e))?
            .uid();
        let (targets, unverified) = verify(&h, owner);
        if let Some(why) = unverified {
            let strangers = match inspection.verdict {
                Verdict::Orphaned { strangers, .. } => strangers,
                _ => None,
            };
            return Ok(Stopped::Unverified { why, strangers });
        }
        if targets == Targets::default() {
            return Ok(Stopped::AlreadyGone);
        }
        self.send(&h, owner, targets, rustix::process::Signal::TERM)?;
        let mut killed = false;
        if !self.wait_gone(&h, owner, grace) {
            let (now, _) = verify(&h, owner);
            self.send(&h, owner, now, rustix::process::Signal::KILL)?;
            killed = true;
        }
        let remaining = !self.wait_gone(&h, owner, grace);
        Ok(Stopped::Signalled {
            holder: targets.holder,
            group: targets.group,
            killed,
            remaining,
        })
    }

    fn send(
        &self,
        h: &Held,
        owner: u32,
        planned: Targets,
        signal: rustix::process::Signal,
    ) -> Result<(), Error> {
        let fail = |e| Error::io("signal the holder of", self.path(), e);
        // Verified again right before each signal: a pid or group id freed
        // meanwhile may already name someone else.
        let (now, _) = verify(h, owner);
        if let Some(g) = planned.group.filter(|&g| now.group == Some(g)) {
            process::signal_group(g, signal).map_err(fail)?;
        }
        if let Some(pid) = planned.holder.filter(|&p| now.holder == Some(p)) {
            process::signal_process(pid, signal).map_err(fail)?;
            if signal == rustix::process::Signal::TERM {
                // A stopped holder must run to act on SIGTERM.
                let _ = process::signal_process(pid, rustix::process::Signal::CONT);
            }
        }
        Ok(())
    }

    fn wait_gone(&self, h: &Held, owner: u32, limit: Duration) -> bool {
        let clock = self.clock();
        let end = clock.boot().saturating_add(limit);
        loop {
            if verify(h, owner).0 == Targets::default() {
                return true;
            }
            if clock.boot() >= end {
                return false;
            }
            clock.sleep(Duration::from_millis(20));
        }
    }
}

/// The holder and job group that are verifiably the record's now, and, when
/// something the record names may run but cannot be verified, why.
fn verify(h: &Held, owner: u32) -> (Targets, Option<String>) {
    let live = crate::liveness::OsLiveness;
    let mut t = Targets::default();
    let mut unverified = Vec::new();
    let own_group = process::current_group();
    let holder_alive = h
        .pstart
        .is_some_and(|s| crate::Liveness::process(&live, h.pid, s) == ProcessState::Alive);
    if holder_alive {
        let exe = process::exe(h.pid).ok().flatten();
        let uid = process::uid(h.pid).ok().flatten();
        let exe_matches = match (&h.exe, &exe) {
            (Some(want), Some(have)) => same_exe(want, have),
            _ => false,
        };
        if h.pid <= 1 || h.pid == std::process::id() {
            unverified.push(format!(
                "the record names pid {}, which is never signalled",
                h.pid
            ));
        } else if uid != Some(owner) {
            unverified.push(format!(
                "holder pid {} does not belong to the lock file's owner (uid {owner})",
                h.pid
            ));
        } else if !exe_matches {
            unverified.push(format!(
                "holder pid {} runs {}, not the executable the record names ({})",
                h.pid,
                exe.as_deref().unwrap_or("an unreadable executable"),
                h.exe.as_deref().unwrap_or("none")
            ));
        } else {
            t.holder = Some(h.pid);
        }
    }
    if let Some(g) = h.pgid {
        let members = crate::Liveness::group(&live, g, h.jstart) == GroupState::Members;
        if members {
            let leader = process::stat(g).ok().flatten();
            let leader_verified = match (h.jstart, leader) {
                (Some(js), Some(l)) => l.start == js && process::runs(g, l.state).unwrap_or(false),
                _ => false,
            };
            if g <= 1 || g == own_group {
                unverified.push(format!(
                    "the record names process group {g}, which is never signalled"
                ));
            } else if !leader_verified {
                unverified.push(format!(
                    "job group {g} still has members, but its leader is gone or is not the one the \
                     record names (jstart=), so the group cannot be verified as this lock's job; \
                     stop its processes by hand (`ps -o pid,args -g {g}`)"
                ));
            } else {
                t.group = Some(g);
            }
        }
    }
    let why = (!unverified.is_empty()).then(|| unverified.join("; "));
    (t, why)
}

/// Whether the executable `/proc/PID/exe` shows is the one a record names;
/// a binary replaced on disk since it started shows as `PATH (deleted)`.
fn same_exe(recorded: &str, current: &str) -> bool {
    let current = current.strip_suffix("_(deleted)").unwrap_or(current);
    recorded == current
}
