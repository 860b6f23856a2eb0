//! The operator's stop: end a same-host holder's job (and the holder) before
//! its lease is broken, for `baton lock break --kill`.
//!
//! It signals nothing it has not verified: the holder's pid only while its
//! start time matches the record, the job's group only while it has live
//! members and its leader (if still there) started when the record says. It
//! never signals a holder on another host or in another pid namespace. It
//! does not break the lease; the caller does that afterwards, under the mutex,
//! on a fresh verdict.

use std::time::Duration;

use crate::decide::Observer;
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
        let (holder, group) = self.targets(&h);
        if holder.is_none() && group.is_none() {
            return Ok(Stopped::AlreadyGone);
        }
        let term = rustix::process::Signal::TERM;
        self.send(&h, holder, group, term)?;
        let mut killed = false;
        if !self.wait_gone(&h, grace) {
            let (holder, group) = self.targets(&h);
            self.send(&h, holder, group, rustix::process::Signal::KILL)?;
            killed = true;
        }
        let remaining = !self.wait_gone(&h, grace);
        Ok(Stopped::Signalled {
            holder,
            group,
            killed,
            remaining,
        })
    }

    /// The holder pid and job group that are verifiably still the record's.
    fn targets(&self, h: &Held) -> (Option<u32>, Option<u32>) {
        let live = crate::liveness::OsLiveness;
        let holder = h
            .pstart
            .filter(|&start| crate::Liveness::process(&live, h.pid, start) == ProcessState::Alive)
            .map(|_| h.pid);
        let group = h
            .pgid
            .filter(|&g| crate::Liveness::group(&live, g, h.jstart) == GroupState::Members);
        (holder, group)
    }

    fn send(
        &self,
        h: &Held,
        holder: Option<u32>,
        group: Option<u32>,
        signal: rustix::process::Signal,
    ) -> Result<(), Error> {
        let fail = |e| Error::io("signal the holder of", self.path(), e);
        if let Some(g) = group {
            process::signal_group(g, signal).map_err(fail)?;
        }
        // Re-verify the pid right before signalling it.
        if let Some(pid) = holder
            && self.targets(h).0 == Some(pid)
        {
            process::signal_process(pid, signal).map_err(fail)?;
            if signal == rustix::process::Signal::TERM {
                // A stopped holder must run to act on SIGTERM.
                let _ = process::signal_process(pid, rustix::process::Signal::CONT);
            }
        }
        Ok(())
    }

    fn wait_gone(&self, h: &Held, limit: Duration) -> bool {
        let clock = self.clock();
        let end = clock.boot().saturating_add(limit);
        loop {
            if self.targets(h) == (None, None) {
                return true;
            }
            if clock.boot() >= end {
                return false;
            }
            clock.sleep(Duration::from_millis(20));
        }
    }
}
