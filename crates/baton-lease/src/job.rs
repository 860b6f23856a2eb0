//! A job's process group, for the program that runs the job and for the
//! operator who stops it: send a signal to the whole group, ask whether any
//! live member remains, read a process's start time.
//!
//! This is the binary's door to process-group signals, so that every `kill`
//! the project sends goes through `baton_lease`'s system module. It sends only
//! what it is asked to, to the group it is given; verifying that a group or a
//! pid is the one a record names is the caller's duty ([`crate::Lock::stop_holder`]
//! does it for operators).

use std::io;

use crate::sys::process;

/// A signal, by its number (`SIGTERM` is 15). Unknown numbers are refused.
fn signal(number: i32) -> io::Result<rustix::process::Signal> {
    rustix::process::Signal::from_named_raw(number).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no signal numbered {number}"),
        )
    })
}

/// Sends signal `number` to every process in group `pgid`. `Ok(false)` when
/// the group is empty.
///
/// # Errors
///
/// An unknown signal number, or a refusal by the kernel (`EPERM`).
pub fn signal_group(pgid: u32, number: i32) -> io::Result<bool> {
    process::signal_group(pgid, signal(number)?)
}

/// Whether group `pgid` has a member that is not a zombie. An unreadable
/// answer counts as yes.
pub fn group_alive(pgid: u32) -> bool {
    process::group_has_members(pgid).unwrap_or(true)
}

/// The start time of process `pid` in clock ticks after boot; `None` when no
/// such process exists or it cannot be read.
pub fn process_start(pid: u32) -> Option<u64> {
    process::stat(pid).ok().flatten().map(|s| s.start)
}

/// This process's group id.
pub fn own_group() -> u32 {
    process::current_group()
}

/// Makes this process the reaper of its orphaned descendants
/// (`PR_SET_CHILD_SUBREAPER`): a process the job detaches (`setsid`, a
/// double fork) stays this process's descendant, where [`descendants`] finds
/// it, instead of becoming init's.
///
/// # Errors
///
/// When the kernel refuses (it does not on Linux 3.4 and later).
pub fn become_subreaper() -> io::Result<()> {
    Ok(rustix::process::set_child_subreaper(Some(
        rustix::process::getpid(),
    ))?)
}

/// Every live (not zombie) descendant of `root`, from `/proc`, excluding
/// `root` itself and the subtrees of `except`.
///
/// # Errors
///
/// When `/proc` cannot be listed.
pub fn descendants(root: u32, except: &[u32]) -> io::Result<Vec<u32>> {
    let mut parent_of = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(Some(s)) = process::stat(pid) {
            parent_of.push((pid, s.ppid, matches!(s.state, b'Z' | b'X' | b'x')));
        }
    }
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, ppid, zombie) in &parent_of {
            if ppid == p && !except.contains(&pid) && pid != root {
                frontier.push(pid);
                if !zombie {
                    found.push(pid);
                }
            }
        }
    }
    Ok(found)
}

/// Sends signal `number` to process `pid`. `Ok(false)` when it is gone.
///
/// # Errors
///
/// An unknown signal number, or a refusal by the kernel (`EPERM`).
pub fn signal_process(pid: u32, number: i32) -> io::Result<bool> {
    process::signal_process(pid, signal(number)?)
}

/// Reaps `pid` if it is this process's child and has exited, without
/// waiting. `Ok(true)` when it was reaped.
///
/// # Errors
///
/// As `waitpid(2)`; `ECHILD` (not our child) is `Ok(false)`.
pub fn reap(pid: u32) -> io::Result<bool> {
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(false);
    };
    match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::NOHANG) {
        Ok(r) => Ok(r.is_some()),
        Err(rustix::io::Errno::CHILD) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// The zombies among `pid`'s children.
pub fn zombie_children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            matches!(process::stat(pid), Ok(Some(s)) if s.ppid == parent && matches!(s.state, b'Z' | b'X' | b'x'))
        })
        .collect()
}

/// Whether this process has any child at all, running or exited, without
/// reaping one (`waitid(P_ALL, WNOHANG | WNOWAIT | WEXITED)`). When it has
/// none, it has no descendants, and no `/proc` scan is needed to know it.
pub fn has_children() -> bool {
    use rustix::process::{WaitId, WaitIdOptions};
    let opts = WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT | WaitIdOptions::EXITED;
    !matches!(
        rustix::process::waitid(WaitId::All, opts),
        Err(rustix::io::Errno::CHILD)
    )
}

/// The signals this process inherited as ignored (`SigIgn:` in
/// `/proc/self/status`), as `nohup` leaves SIGHUP and a shell leaves SIGINT
/// for a background job: bit `n - 1` is signal `n`. A process that forwards
/// signals should leave those alone, so its child inherits them ignored too.
pub fn inherited_ignored() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .unwrap_or(0)
}
