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

use crate::sys::{descriptors, process};

/// A signal, by its number (`SIGTERM` is 15). Unknown numbers are refused.
fn signal(number: i32) -> io::Result<rustix::process::Signal> {
    rustix::process::Signal::from_named_raw(number).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no signal numbered {number}"),
        )
    })
}

/// Whether `/proc` shows this pid namespace (its `self` is this process):
/// a `/proc` mounted from another namespace names other processes by this
/// namespace's pids, so no process tree can be read from it.
#[must_use]
pub fn proc_is_ours() -> bool {
    process::proc_is_ours()
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

/// Whether group `pgid` has a member that still runs code (a zombie leader
/// with a live thread counts). An unreadable answer counts as yes.
pub fn group_alive(pgid: u32) -> bool {
    descriptors::regaining(|| process::group_has_members(pgid)).unwrap_or(true)
}

/// The start time of process `pid` in clock ticks after boot; `None` when no
/// such process exists or it cannot be read.
pub fn process_start(pid: u32) -> Option<u64> {
    process::stat(pid).ok().flatten().map(|s| s.start)
}

/// This process's group id, as this pid namespace numbers it; 0 when the
/// group's leader is outside it (no group this namespace names is ours then).
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

/// Remembers this process's open-file limit as it is now (the first call
/// only), so that a look at the job's processes refused for want of a
/// descriptor (the limit lowered under the process with `prlimit`) raises
/// it back to this and looks again, where the kernel allows: the hard limit
/// rises only with `CAP_SYS_RESOURCE`. Called when a supervisor starts.
pub fn keep_descriptor_limit() {
    descriptors::remember();
}

/// One process of a job's tree, as a scan of `/proc` saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    /// Its pid.
    pub pid: u32,
    /// Its process group.
    pub pgid: u32,
    /// Its start time in clock ticks after boot.
    pub start: u64,
    /// Whether it was stopped (`T`) when seen.
    pub stopped: bool,
}

/// Every descendant of `root` that still runs code (a zombie leader with a
/// live thread included, see [`process_runs`]), from `/proc`, excluding
/// `root` itself and the subtrees of processes in the groups `except_groups`
/// (short-lived helpers such as alert commands, which run in groups of their
/// own).
///
/// # Errors
///
/// When `/proc` cannot be listed.
pub fn descendants(root: u32, except_groups: &[u32]) -> io::Result<Vec<Member>> {
    let table = descriptors::regaining(process_table)?;
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for &(pid, s) in &table {
            if s.ppid == p && pid != root && !except_groups.contains(&s.pgrp) {
                frontier.push(pid);
                if process::runs(pid, s.state).unwrap_or(true) {
                    found.push(Member {
                        pid,
                        pgid: s.pgrp,
                        start: s.start,
                        stopped: matches!(s.state, b'T' | b't'),
                    });
                }
            }
        }
    }
    Ok(found)
}

/// Every process `/proc` lists, with what its `stat` says. A process that
/// ended meanwhile is left out; one whose `stat` could not be opened for
/// want of a descriptor fails the whole table, which would otherwise miss it.
fn process_table() -> io::Result<Vec<(u32, process::Stat)>> {
    let mut table = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        match process::stat(pid) {
            Ok(Some(s)) => table.push((pid, s)),
            Err(e) if descriptors::exhausted(&e) => return Err(e),
            Ok(None) | Err(_) => {}
        }
    }
    Ok(table)
}

/// Whether process `pid` still runs code: it exists, and it is not a zombie,
/// or it is a zombie thread-group leader whose other threads still run.
/// An unreadable answer counts as yes.
pub fn process_runs(pid: u32) -> bool {
    match process::stat(pid) {
        Ok(Some(s)) => process::runs(pid, s.state).unwrap_or(true),
        Ok(None) => false,
        Err(_) => true,
    }
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

/// The children of `parent` that have exited and await reaping: zombies
/// with no live thread left.
pub fn zombie_children(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| {
            matches!(process::stat(pid), Ok(Some(s)) if s.ppid == parent
                && process::is_dead_state(s.state)
                && !process::runs(pid, s.state).unwrap_or(true))
        })
        .collect()
}

/// This process's children, from the kernel's own lists
/// (`/proc/self/task/*/children`): exact at the moment each list is read,
/// where a scan of `/proc` by parent pid can miss a process whose parent
/// exits mid-scan. Zombies not yet reaped are included. For a subreaper this
/// is what decides whether anything below it still lives: every live
/// descendant has an ancestor (or is one) among these.
///
/// # Errors
///
/// When `/proc/self/task` cannot be read.
pub fn children() -> io::Result<Vec<u32>> {
    descriptors::regaining(read_children)
}

/// [`children`], once.
fn read_children() -> io::Result<Vec<u32>> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")? {
        let path = task?.path().join("children");
        match std::fs::read_to_string(&path) {
            Ok(text) => out.extend(
                text.split_ascii_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            ),
            // A thread that ended meanwhile has no children to list.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
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

/// Reaps every child of this process that has exited, without reading
/// `/proc` and so without a descriptor (`waitid(P_ALL, WEXITED | WNOHANG)`
/// until none is left). Every exited child is taken: only for a caller that
/// knows nothing else in the process is waiting for a child of its own.
pub fn reap_exited_children() {
    use rustix::process::{WaitId, WaitIdOptions};
    let opts = WaitIdOptions::NOHANG | WaitIdOptions::EXITED;
    while let Ok(Some(_)) = rustix::process::waitid(WaitId::All, opts) {}
}

/// Makes a write past this process's file-size limit (`RLIMIT_FSIZE`, `ulimit
/// -f`) fail with `EFBIG`, an I/O error its caller reports, instead of
/// killing the process with `SIGXFSZ`. Programs this process executes get
/// the signal's default action back. Called once, first thing, by a binary.
///
/// # Errors
///
/// When the kernel refuses the handler (it does not for this signal).
pub fn catch_file_size_signal() -> io::Result<()> {
    process::catch_file_size_signal()
}

/// Whether signal `n` is ignored (`SIG_IGN`) in this process now.
pub fn signal_ignored(n: i32) -> bool {
    process::ignored(n)
}
