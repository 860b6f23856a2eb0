//! The signals a session catches, read from a `signalfd` by the supervising
//! thread itself: no signal thread, no self-pipe.
//!
//! SIGCHLD wakes the supervisor when a child changes state. SIGINT, SIGTERM
//! and SIGHUP are what people and service managers send to stop a run; the
//! supervisor passes them to the running step's group. A daemon's run
//! drops SIGHUP instead (`SessionConfig::stop_on_signal`): the kernel sends
//! it to a run whose daemon died while the run was stopped. SIGUSR1,
//! SIGUSR2 and SIGALRM ([`PASSED`]) mean something only to the job (reopen
//! a log, print progress): they are passed to the running step's group as
//! they come, stop nothing, and are dropped between steps, where there is
//! nobody to pass them to; before, their default action ended the
//! supervisor and left its run to be recorded as abandoned. SIGTSTP (Ctrl-Z
//! at a terminal whose foreground is the runner's, `kill -TSTP`) stops the
//! running step with the runner, which its default action would not do:
//! the step ran on unsupervised. All eight are blocked
//! in the supervising thread while the session lasts (threads the session
//! starts inherit the mask; helper threads block them themselves, see
//! [`block_in_this_thread`]), so they are never delivered the usual way and
//! can only be read here. A signal the process inherited as ignored
//! (`nohup`'s SIGHUP, a background job's SIGINT) stays ignored, for the
//! runner and for the job. SIGCHLD inherited as ignored is reset to its
//! default, or the kernel would reap the job behind the runner's back.
//!
//! Children never inherit the blocked mask: the gate and `std`'s spawn both
//! clear it between fork and exec.

#![allow(unsafe_code)] // sigprocmask, signalfd, poll.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

pub(crate) const SIGINT: i32 = libc::SIGINT;
pub(crate) const SIGTERM: i32 = libc::SIGTERM;
pub(crate) const SIGHUP: i32 = libc::SIGHUP;
pub(crate) const SIGKILL: i32 = libc::SIGKILL;
pub(crate) const SIGCONT: i32 = libc::SIGCONT;
pub(crate) const SIGSTOP: i32 = libc::SIGSTOP;
pub(crate) const SIGTSTP: i32 = libc::SIGTSTP;
const SIGCHLD: i32 = libc::SIGCHLD;

/// The signals passed on to a running step as they are, neither a stop
/// nor remembered ([`baton_store::held::PASSED_ON`], which every quiet
/// thread blocks too).
pub const PASSED: [i32; 3] = baton_store::held::PASSED_ON;

/// What woke the supervisor.
pub(crate) enum Wake {
    /// SIGCHLD: a child changed state.
    Child,
    /// A signal to pass on, which stops the run.
    Signal(i32),
    /// Signals of [`PASSED`] to pass on to the running step, in the order
    /// they were read; nothing stops.
    Pass(Vec<i32>),
    /// SIGTSTP: the step and the runner are to stop, as at a terminal.
    Suspend,
    /// The wait ran out.
    Timeout,
}

/// The signals a session reads, as a set.
fn set(signals: &[i32]) -> libc::sigset_t {
    // Safety: sigemptyset/sigaddset initialise and fill a set on our stack.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for &s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// The signals to catch: SIGCHLD, and SIGINT, SIGTERM, SIGHUP, SIGTSTP and
/// those of [`PASSED`] unless the process inherited them as ignored.
fn caught() -> Vec<i32> {
    [SIGINT, SIGTERM, SIGHUP, SIGTSTP]
        .into_iter()
        .chain(PASSED)
        .filter(|&s| !baton_lease::job::signal_ignored(s))
        .chain([SIGCHLD])
        .collect()
}

/// A wait in poll's milliseconds, a sub-millisecond one rounded up so a near
/// deadline never spins.
fn millis(d: Duration) -> i32 {
    let ms = i32::try_from(d.as_millis()).unwrap_or(i32::MAX);
    if ms == 0 && !d.is_zero() { 1 } else { ms }
}

/// Waits at most `d` for `fd` to become readable.
pub(crate) fn poll_one(fd: RawFd, d: Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // Safety: one valid pollfd on our stack.
    unsafe {
        libc::poll(&mut p, 1, millis(d));
    }
}

/// Takes every signal of [`PASSED`] pending for this thread or process, so
/// that unblocking them, once there is no step left to pass them to, does
/// not end the process by their default action.
pub(crate) fn drop_pending_passed() {
    let passed = set(&PASSED);
    let zero = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // Safety: sigtimedwait with a valid set of blocked signals, a zeroed
    // siginfo on our stack and a zero timeout takes one pending signal of
    // the set or fails at once.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        while libc::sigtimedwait(&passed, &mut info, &zero) > 0 {}
    }
}

/// Blocks the stop signals in the calling thread, so a helper thread (an
/// alert command's) never takes a signal meant for the session. The set is
/// the one every thread a session's lease starts blocks too
/// ([`baton_store::held::quiet_thread`]).
pub fn block_in_this_thread() {
    baton_store::held::quiet_thread();
}

/// Signals caught for the session, readable from one descriptor.
pub(crate) struct Signals {
    fd: OwnedFd,
    old_mask: libc::sigset_t,
    /// Whether a SIGHUP read is one to pass on; else it is dropped (still
    /// caught, so it never ends the process).
    hangup: bool,
    /// A SIGTSTP read and not yet acted on.
    suspend: std::cell::Cell<bool>,
}

impl Signals {
    /// Blocks the caught signals in this thread and opens the `signalfd`;
    /// a SIGHUP read is passed on only with `hangup`.
    pub(crate) fn install(hangup: bool) -> std::io::Result<Self> {
        // Safety: reading and, when ignored, resetting SIGCHLD's disposition;
        // blocking in this thread; creating a signalfd for a valid set.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            libc::sigaction(SIGCHLD, std::ptr::null(), &mut act);
            if act.sa_sigaction == libc::SIG_IGN {
                libc::signal(SIGCHLD, libc::SIG_DFL);
            }
            let mask = set(&caught());
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &mask, &mut old);
            let fd = libc::signalfd(-1, &mask, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
                return Err(e);
            }
            Ok(Self {
                fd: OwnedFd::from_raw_fd(fd),
                old_mask: old,
                hangup,
                suspend: std::cell::Cell::new(false),
            })
        }
    }

    /// The next signal already pending, without waiting.
    fn read(&self) -> Option<i32> {
        // Safety: reading one signalfd_siginfo into a zeroed struct of
        // exactly its size from our own non-blocking descriptor.
        unsafe {
            let mut info: libc::signalfd_siginfo = std::mem::zeroed();
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            let n = libc::read(
                self.fd.as_raw_fd(),
                (&raw mut info).cast::<libc::c_void>(),
                size,
            );
            (usize::try_from(n).ok() == Some(size))
                .then(|| i32::try_from(info.ssi_signo).unwrap_or(0))
        }
    }

    /// Waits at most `d` for a signal, or for `also` (a step's output) to
    /// become readable. A signal to pass on wins over SIGCHLD when both are
    /// pending.
    pub(crate) fn wait(&self, d: Duration, also: Option<RawFd>) -> Wake {
        if let Some(w) = self.drain() {
            return w;
        }
        let mut fds = [
            libc::pollfd {
                fd: self.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: also.unwrap_or(-1),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Safety: two valid pollfds on our stack (a negative fd is ignored).
        unsafe {
            libc::poll(fds.as_mut_ptr(), 2, millis(d));
        }
        self.drain().unwrap_or(Wake::Timeout)
    }

    /// Everything pending, folded: the last signal that stops the run, else
    /// the signals of [`PASSED`] read, else a SIGTSTP, else SIGCHLD. (A
    /// SIGCHLD folded away loses nothing: every wake looks at the step
    /// again; a SIGTSTP waits for the next wake that has nothing before it.)
    fn drain(&self) -> Option<Wake> {
        let mut wake = None;
        let mut passed = Vec::new();
        while let Some(s) = self.read() {
            if s == SIGHUP && !self.hangup {
                continue;
            }
            if s == SIGTSTP {
                self.suspend.set(true);
                continue;
            }
            if PASSED.contains(&s) {
                passed.push(s);
                continue;
            }
            wake = match (s, wake) {
                (SIGCHLD, Some(Wake::Signal(k))) => Some(Wake::Signal(k)),
                (SIGCHLD, _) => Some(Wake::Child),
                (s, _) => Some(Wake::Signal(s)),
            };
        }
        match wake {
            Some(Wake::Signal(s)) => Some(Wake::Signal(s)),
            _ if !passed.is_empty() => Some(Wake::Pass(passed)),
            _ if self.suspend.replace(false) => Some(Wake::Suspend),
            other => other,
        }
    }

    /// A signal to pass on that arrived and has not been handled, if any.
    pub(crate) fn pending(&self) -> Option<i32> {
        match self.drain() {
            Some(Wake::Signal(s)) => Some(s),
            // Not this call's to act on: kept for the next wait.
            Some(Wake::Suspend) => {
                self.suspend.set(true);
                None
            }
            _ => None,
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // Those that stop a run are left pending, as they came.
        drop_pending_passed();
        // Safety: restores the mask saved in `install`.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}
