//! The signals a session catches, turned into events on one channel.
//!
//! SIGCHLD wakes the supervisor when a child changes state (being caught, an
//! inherited `SIG_IGN` cannot make a child's status unwaitable). SIGINT,
//! SIGTERM and SIGHUP are what people and service managers send to stop a
//! run; the supervisor passes them to the running step's group. A signal the
//! process inherited as ignored (`nohup`'s SIGHUP, a background job's SIGINT)
//! stays ignored, for the runner and for the job.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

pub(crate) const SIGINT: i32 = signal_hook::consts::SIGINT;
pub(crate) const SIGTERM: i32 = signal_hook::consts::SIGTERM;
pub(crate) const SIGHUP: i32 = signal_hook::consts::SIGHUP;
pub(crate) const SIGKILL: i32 = signal_hook::consts::SIGKILL;
pub(crate) const SIGCONT: i32 = signal_hook::consts::SIGCONT;
pub(crate) const SIGSTOP: i32 = signal_hook::consts::SIGSTOP;
const SIGCHLD: i32 = signal_hook::consts::SIGCHLD;

/// What woke the supervisor.
pub(crate) enum Wake {
    /// SIGCHLD: a child changed state.
    Child,
    /// A signal to pass on.
    Signal(i32),
    /// The wait ran out.
    Timeout,
}

/// Signals caught for the session; their thread feeds the channel.
pub(crate) struct Signals {
    /// Keeps the channel open whatever the signal thread does, so a wait on
    /// it always lasts its timeout.
    _keepalive: Sender<i32>,
    rx: Receiver<i32>,
    handle: signal_hook::iterator::Handle,
}

impl Signals {
    /// Catches SIGCHLD, and SIGINT, SIGTERM and SIGHUP unless inherited as
    /// ignored, from now on.
    pub(crate) fn install() -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let ignored = baton_lease::job::inherited_ignored();
        let caught: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&s| ignored & (1u64 << (s - 1)) == 0)
            .chain([SIGCHLD])
            .collect();
        let mut signals = signal_hook::iterator::Signals::new(caught)?;
        let handle = signals.handle();
        let to_loop = tx.clone();
        std::thread::spawn(move || {
            for s in signals.forever() {
                if to_loop.send(s).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            _keepalive: tx,
            rx,
            handle,
        })
    }

    /// Waits at most `d` for a signal.
    pub(crate) fn wait(&self, d: Duration) -> Wake {
        match self.rx.recv_timeout(d) {
            Ok(SIGCHLD) => Wake::Child,
            Ok(s) => Wake::Signal(s),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => Wake::Timeout,
        }
    }

    /// A signal to pass on that arrived and has not been handled, if any.
    pub(crate) fn pending(&self) -> Option<i32> {
        self.rx.try_iter().find(|&s| s != SIGCHLD)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        self.handle.close();
    }
}
