//! The controlling terminal, for an interactive step: when the runner was
//! started in the terminal's foreground (`baton exec -- sh -c 'read a'` typed
//! at a prompt), the step's process group gets the foreground while it runs,
//! and the runner takes it back after, as a shell does for its jobs. Without
//! this, the step runs in a background group and the kernel stops it with
//! SIGTTIN the moment it reads the terminal, while its lease stays "live".
//!
//! Nothing happens when standard input is not a terminal, or when the runner
//! itself is not in the foreground (then the terminal is not its to give).

#![allow(unsafe_code)] // Blocking SIGTTOU around taking the terminal back.

use std::os::fd::AsFd;

/// A terminal foreground handed to a step; [`Foreground::restore`] takes it
/// back.
#[derive(Debug)]
pub(crate) struct Foreground {
    owner: rustix::process::Pid,
}

/// Hands the terminal on standard input to group `pgid`, if the runner holds
/// its foreground.
pub(crate) fn hand_to(pgid: u32) -> Option<Foreground> {
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    if !rustix::termios::isatty(fd) {
        return None;
    }
    // A group whose leader is outside this pid namespace reads as 0: then
    // the terminal's foreground is not ours to hand on.
    let own = i32::try_from(baton_lease::job::own_group())
        .ok()
        .and_then(rustix::process::Pid::from_raw)?;
    if rustix::termios::tcgetpgrp(fd).ok()? != own {
        return None;
    }
    let target = rustix::process::Pid::from_raw(i32::try_from(pgid).ok()?)?;
    rustix::termios::tcsetpgrp(fd, target).ok()?;
    Some(Foreground { owner: own })
}

impl Foreground {
    /// Gives the foreground back to the runner's group. The runner is in the
    /// background when it asks, so SIGTTOU is blocked for the call (the
    /// kernel would otherwise stop the runner instead).
    pub(crate) fn restore(self) {
        let stdin = std::io::stdin();
        // Safety: `set` is a properly initialised signal set on this stack
        // frame; pthread_sigmask changes only this thread's mask, and the
        // previous mask is restored right after the one call in between.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTTOU);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            // OK to ignore: a terminal that went away has no foreground to
            // restore.
            let _ = rustix::termios::tcsetpgrp(stdin.as_fd(), self.owner);
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        }
    }
}
