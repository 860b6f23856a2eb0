//! The controlling terminal, for an interactive step: when the runner was
//! started in the terminal's foreground (`baton exec -- sh -c 'read a'` typed
//! at a prompt), the step's process group gets the foreground while it runs,
//! and the runner takes it back after, as a shell does for its jobs. Without
//! this, the step runs in a background group and the kernel stops it with
//! SIGTTIN the moment it reads the terminal, while its lease stays "live".
//!
//! Job control goes through the runner as through a shell: a step stopped
//! from the terminal (Ctrl-Z) has the foreground taken back, and the
//! runner's own group is stopped with the same signal ([`stop_own_group`]),
//! so the shell that started it sees its job stopped and gets its prompt
//! back; continued (`fg`), the runner hands the foreground on again
//! ([`Foreground::give`]) before it continues the step. A SIGTSTP sent to
//! the runner itself (Ctrl-Z when the step has no terminal, `kill -TSTP`)
//! stops the step with it, and the runner alone ([`stop_self`]).
//!
//! Nothing is handed when standard input is not a terminal, or when the
//! runner itself is not in the foreground (then the terminal is not its to
//! give; a step of a runner started in the background that reads the
//! terminal stops the runner's job as it would any job, and `fg` hands the
//! step the foreground then). It never takes the terminal from anyone but
//! its own step: a runner continued in the background (`bg`) leaves the
//! foreground where it is. A runner whose group no shell controls (an
//! orphaned one) cannot be stopped: Ctrl-Z is then ignored, as the kernel
//! ignores it for such a group.

#![allow(unsafe_code)] // Blocking SIGTTOU around taking the terminal back; killpg.

use std::os::fd::AsFd;

/// The terminal of an interactive step: its foreground handed to the step
/// when the runner held it, and the step's job control passed through the
/// runner either way; [`Foreground::restore`] takes the foreground back.
#[derive(Debug)]
pub(crate) struct Foreground {
    owner: rustix::process::Pid,
    step: rustix::process::Pid,
    /// Whether the step holds the foreground from the runner's hand now.
    given: bool,
    /// Whether the runner's group was a shell's job when last looked at
    /// ([`Foreground::orphaned_now`]), and when that was.
    controlled: bool,
    looked: std::time::Duration,
}

/// Hands the terminal on standard input (the runner's controlling
/// terminal) to group `pgid`, if the runner holds its foreground; `None`
/// when standard input is no terminal of the runner's.
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
    let now = rustix::termios::tcgetpgrp(fd).ok()?;
    let target = rustix::process::Pid::from_raw(i32::try_from(pgid).ok()?)?;
    let given = now == own && rustix::termios::tcsetpgrp(fd, target).is_ok();
    Some(Foreground {
        owner: own,
        step: target,
        given,
        controlled: group_controlled(),
        looked: std::time::Duration::ZERO,
    })
}

/// Whether the runner's process group is a shell's job: some ancestor of
/// the runner in its session is in another group. The kernel never stops
/// an *orphaned* group (one without) for job control, and nobody could
/// continue it.
pub(crate) fn group_controlled() -> bool {
    /// A process's parent, group and session, from `/proc/PID/stat`.
    fn stat(pid: u32) -> Option<(u32, u32, u32)> {
        let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let mut f = s.rsplit_once(')')?.1.split_whitespace().skip(1);
        let mut next = || f.next()?.parse::<u32>().ok();
        Some((next()?, next()?, next()?))
    }
    let Some((mut parent, group, session)) = stat(std::process::id()) else {
        return false;
    };
    // The chain of parents is short; a bound keeps a pathological one from
    // costing more than a glance.
    for _ in 0..64 {
        match stat(parent) {
            Some((_, g, s)) if s == session && g != group => return true,
            Some((pp, g, s)) if s == session && g == group && pp != 0 => parent = pp,
            _ => return false,
        }
    }
    false
}

/// Stops the runner's own process group with `signal` (a stop signal), as
/// the terminal would have had the step been in it: the runner, and
/// whatever shares its group (a pipeline's other commands, a script that
/// ran it), stop together, and the shell sees its job stopped. Returns once
/// continued; at once when the kernel discards the stop (a group no shell
/// controls, an orphaned one).
pub(crate) fn stop_own_group(signal: i32) {
    // Safety: killpg with our own group (0) and a signal number.
    stopping(signal, || unsafe {
        libc::killpg(0, signal);
    });
}

/// Stops the runner alone with `signal` (a stop signal it caught and took
/// from its `signalfd`), as the signal's default action would have; returns
/// once continued, or at once when the kernel discards the stop.
pub(crate) fn stop_self(signal: i32) {
    // Safety: raise sends a signal number to the calling thread.
    stopping(signal, || unsafe {
        libc::raise(signal);
    });
}

/// Runs `send` with `signal` unblocked in this thread, so the stop it sends
/// this process is delivered here, by its default action, before `send`
/// returns (a session blocks SIGTSTP in every thread, to read it).
fn stopping(signal: i32, send: impl FnOnce()) {
    // Safety: a signal set on this stack; pthread_sigmask changes only this
    // thread's mask, restored right after.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, &mut old);
        send();
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// The foreground group of the terminal on standard input.
fn foreground_now() -> Option<rustix::process::Pid> {
    rustix::termios::tcgetpgrp(std::io::stdin().as_fd()).ok()
}

impl Foreground {
    /// Whether the runner's group has just become orphaned (the shell
    /// whose job it was is gone: killed, its terminal closed), looked at
    /// most once a tick (`now`, the boot clock). The kernel sends such a
    /// group SIGHUP and SIGCONT when it has a stopped member; the step's
    /// group, the rest of that job, must be sent them by the runner.
    pub(crate) fn orphaned_now(&mut self, now: std::time::Duration) -> bool {
        if !self.controlled || now < self.looked + crate::limits::TICK {
            return false;
        }
        self.looked = now;
        self.controlled = group_controlled();
        !self.controlled
    }

    /// Takes the foreground back from the step that holds it (stopped from
    /// the terminal), for the shell to take once the runner is stopped.
    pub(crate) fn take_back(&mut self) {
        if self.given && foreground_now() == Some(self.step) {
            set_foreground(self.owner);
        }
        self.given = false;
    }

    /// Hands the foreground on to the step again, when the runner holds it
    /// (continued with `fg`); a runner continued in the background leaves
    /// it to whoever holds it.
    pub(crate) fn give(&mut self) {
        if !self.given && foreground_now() == Some(self.owner) {
            self.given = rustix::termios::tcsetpgrp(std::io::stdin().as_fd(), self.step).is_ok();
        }
    }

    /// Gives the foreground back to the runner's group, when the step still
    /// holds it from the runner's hand.
    pub(crate) fn restore(self) {
        if self.given {
            set_foreground(self.owner);
        }
    }
}

/// Makes `group` the terminal's foreground. The runner is in the background
/// when it asks, so SIGTTOU is blocked for the call (the kernel would
/// otherwise stop the runner instead).
fn set_foreground(group: rustix::process::Pid) {
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
        let _ = rustix::termios::tcsetpgrp(stdin.as_fd(), group);
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}
