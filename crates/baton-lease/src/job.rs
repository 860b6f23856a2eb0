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
