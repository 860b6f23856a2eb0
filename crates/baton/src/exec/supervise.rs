//! The running job: one loop that renews the lease, forwards signals, keeps
//! time limits and stops the job's process group when it must.
//!
//! Events arrive on one channel from the signal thread: SIGCHLD (the command
//! may have exited; the loop asks with `try_wait`, and also on every tick)
//! and the signals sent to baton; timers are the loop's own, on the boot
//! clock. The rules it keeps:
//!
//! - renew every `ttl / 3`; a renewal that finds the lease gone or replaced,
//!   or no successful renewal for a whole TTL, stops the group and ends the
//!   run with the lease-lost code, before the lease could be anyone else's;
//! - `--timeout` stops the group and ends with 124; `--max-runtime` only
//!   alerts, once;
//! - SIGINT, SIGTERM and SIGHUP go to the group;
//! - when the command exits, the rest of its group is stopped too, and the
//!   lease is released only once the group is empty. If the group cannot be
//!   emptied, the lease is left held: a later run finds it orphaned.
//!
//! "Stopping" is SIGTERM (with SIGCONT, so a stopped job can act on it), then
//! SIGKILL after the kill grace.

use std::process::{Child, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use baton_lease::{Clock, Lease, Renewal, SystemClock, job};

use super::config::{ExecConfig, TICK};
use crate::alert::{Alert, Alerts, Kind};
use crate::duration::show;
use crate::exit::Exit;

const SIGINT: i32 = signal_hook::consts::SIGINT;
const SIGTERM: i32 = signal_hook::consts::SIGTERM;
const SIGHUP: i32 = signal_hook::consts::SIGHUP;
const SIGKILL: i32 = signal_hook::consts::SIGKILL;
const SIGCONT: i32 = signal_hook::consts::SIGCONT;
const SIGCHLD: i32 = signal_hook::consts::SIGCHLD;

enum Event {
    /// SIGCHLD: a child changed state; the command may have exited.
    ChildChanged,
    Signal(i32),
}

/// Signals caught for the run; their thread feeds the supervisor's channel.
pub struct Signals {
    /// Keeps the channel open whatever the signal thread does, so a wait on
    /// it always lasts its timeout.
    _keepalive: Sender<Event>,
    rx: Receiver<Event>,
    handle: signal_hook::iterator::Handle,
}

impl Signals {
    /// Catches SIGINT, SIGTERM and SIGHUP from now on.
    pub fn install() -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        // SIGCHLD wakes the loop when the command exits (and, being caught,
        // an inherited SIG_IGN cannot make its exit status unwaitable).
        // A signal baton inherited as ignored (nohup's SIGHUP, a background
        // job's SIGINT) stays ignored, for baton and for the job.
        let ignored = job::inherited_ignored();
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
                let event = if s == SIGCHLD {
                    Event::ChildChanged
                } else {
                    Event::Signal(s)
                };
                if to_loop.send(event).is_err() {
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
}

impl Signals {
    /// A signal that arrived and has not been handled yet, if any.
    pub fn pending(&self) -> Option<i32> {
        loop {
            match self.rx.try_recv() {
                Ok(Event::Signal(s)) => return Some(s),
                Ok(Event::ChildChanged) => {}
                Err(_) => return None,
            }
        }
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        self.handle.close();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Timeout,
    LeaseLost,
}

/// Watches one running command.
pub struct Supervisor<'a> {
    cfg: &'a ExecConfig,
    lease: Lease,
    pgid: u32,
    child: Child,
    signals: Signals,
    alerts: &'a mut Alerts,
    clock: SystemClock,
    started: Duration,
    last_renewed: Duration,
    next_renewal: Duration,
    stop: Option<Stop>,
    term_sent: Option<Duration>,
    kill_sent: bool,
    overran: bool,
    lost: bool,
}

impl<'a> Supervisor<'a> {
    /// Takes over a started command.
    /// `renewed` is the boot-clock time at which the last successful
    /// renewal (the one that recorded the job's group) began.
    pub fn new(
        cfg: &'a ExecConfig,
        lease: Lease,
        renewed: Duration,
        child: Child,
        signals: Signals,
        alerts: &'a mut Alerts,
    ) -> Self {
        let pgid = child.id();
        let clock = SystemClock;
        let now = clock.boot();
        Self {
            cfg,
            lease,
            pgid,
            child,
            signals,
            alerts,
            clock,
            started: now,
            last_renewed: renewed,
            next_renewal: renewed + cfg.renew_every,
            stop: None,
            term_sent: None,
            kill_sent: false,
            overran: false,
            lost: false,
        }
    }

    /// Runs until the command and its group are gone; releases; returns the
    /// exit code.
    pub fn run(mut self) -> Exit {
        let status = loop {
            let wait = self
                .next_deadline()
                .saturating_sub(self.clock.boot())
                .min(TICK);
            match self.signals.rx.recv_timeout(wait) {
                Ok(Event::Signal(s)) => self.forward(s),
                // A SIGCHLD, or a tick: either way, ask (a tick also covers
                // a SIGCHLD coalesced with another).
                Ok(Event::ChildChanged) | Err(RecvTimeoutError::Timeout) => {}
                // Cannot happen while `_keepalive` lives; wait a tick anyway.
                Err(RecvTimeoutError::Disconnected) => self.clock.sleep(TICK),
            }
            match self.child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) => {}
                Err(e) => break Err(e),
            }
            self.on_time();
        };
        // The command (the group's leader) is gone; its group may not be.
        let group_empty = self.empty_group();
        self.finish(status, group_empty)
    }

    fn next_deadline(&self) -> Duration {
        let mut next = self.next_renewal;
        if let Some(t) = self.cfg.timeout {
            next = next.min(self.started + t);
        }
        if let (Some(m), false) = (self.cfg.max_runtime, self.overran) {
            next = next.min(self.started + m);
        }
        if let (Some(t), false) = (self.term_sent, self.kill_sent) {
            next = next.min(t + self.cfg.kill_grace);
        }
        next
    }

    fn on_time(&mut self) {
        let now = self.clock.boot();
        if now >= self.next_renewal && !self.lost {
            self.renew(now);
            self.next_renewal = now + self.cfg.renew_every;
        }
        if !self.lost && self.clock.boot().saturating_sub(self.last_renewed) >= self.cfg.ttl {
            let since = show(self.clock.boot().saturating_sub(self.last_renewed));
            self.lose(format!(
                "could not renew the lease for {since} (its TTL is {})",
                show(self.cfg.ttl)
            ));
        }
        if let (Some(t), None) = (self.cfg.timeout, self.stop)
            && now >= self.started + t
        {
            self.alert(
                Kind::Timeout,
                format!(
                    "{}: timed out after {}; stopping the command",
                    self.label(),
                    show(t)
                ),
            );
            self.begin_stop(Stop::Timeout);
        }
        if let (Some(m), false) = (self.cfg.max_runtime, self.overran)
            && now >= self.started + m
        {
            self.overran = true;
            self.alert(
                Kind::Overrunning,
                format!(
                    "{}: still running after its budget of {}; it keeps its lease",
                    self.label(),
                    show(m)
                ),
            );
        }
        if let (Some(t), false) = (self.term_sent, self.kill_sent)
            && now >= t + self.cfg.kill_grace
        {
            self.kill_sent = true;
            self.signal_job(SIGKILL);
        }
    }

    fn renew(&mut self, attempt: Duration) {
        match self.lease.renew() {
            Ok(Renewal::Renewed) => self.last_renewed = attempt,
            Ok(Renewal::Lost(lost)) => self.lose(lost.to_string()),
            Ok(Renewal::Unconfirmed(busy)) => say!(
                "baton: could not renew the lease on {} ({busy}); the job is stopped if this lasts {}",
                self.cfg.lock.display(),
                show(self.cfg.ttl)
            ),
            Err(e) => say!(
                "baton: could not renew the lease: {e}; the job is stopped if this lasts {}",
                show(self.cfg.ttl)
            ),
        }
    }

    fn lose(&mut self, why: String) {
        self.lost = true;
        self.alert(
            Kind::LeaseLost,
            format!("{}: {why}; stopping the command", self.label()),
        );
        self.begin_stop(Stop::LeaseLost);
    }

    fn begin_stop(&mut self, why: Stop) {
        if self.stop.is_none() || why == Stop::LeaseLost {
            self.stop = Some(why);
        }
        if self.term_sent.is_none() {
            self.term_sent = Some(self.clock.boot());
            self.signal_job(SIGTERM);
            self.signal_job(SIGCONT);
        }
    }

    /// The job's processes outside its group: every descendant of baton (its
    /// subreaper) but the alert commands.
    fn strays(&self) -> Vec<u32> {
        job::descendants(std::process::id(), &self.alerts.pids()).unwrap_or_default()
    }

    /// Signals the job's group and every stray descendant.
    fn signal_job(&self, signal: i32) {
        let _ = job::signal_group(self.pgid, signal);
        for pid in self.strays() {
            let _ = job::signal_process(pid, signal);
        }
    }

    /// Whether any process of the job still runs; reaps the orphans that
    /// were handed to baton meanwhile.
    fn job_alive(&self) -> bool {
        if !job::has_children() {
            // No child, so no descendant: only the group can remain.
            return job::group_alive(self.pgid);
        }
        let alerts = self.alerts.pids();
        for z in job::zombie_children(std::process::id()) {
            if !alerts.contains(&z) {
                let _ = job::reap(z);
            }
        }
        job::group_alive(self.pgid) || !self.strays().is_empty()
    }

    fn forward(&mut self, signal: i32) {
        let _ = job::signal_group(self.pgid, signal);
    }

    /// Stops what is left of the group after the command exited; keeps
    /// renewing meanwhile. Whether the group is empty at the end.
    fn empty_group(&mut self) -> bool {
        if !self.job_alive() {
            return true;
        }
        say!(
            "baton: the command left processes running (group {} or detached); stopping them",
            self.pgid
        );
        if self.term_sent.is_none() {
            self.term_sent = Some(self.clock.boot());
            self.signal_job(SIGTERM);
            self.signal_job(SIGCONT);
        }
        let give_up = self.clock.boot() + self.cfg.kill_grace * 2 + Duration::from_secs(1);
        while self.job_alive() {
            let now = self.clock.boot();
            if now >= give_up {
                return false;
            }
            if let Some(s) = self.signals.pending() {
                self.forward(s);
            }
            self.on_time();
            self.clock.sleep(Duration::from_millis(20));
        }
        true
    }

    fn finish(self, status: std::io::Result<ExitStatus>, group_empty: bool) -> Exit {
        let exit = match (&status, self.stop) {
            (_, Some(Stop::LeaseLost)) => Exit::LeaseLost,
            (_, Some(Stop::Timeout)) => Exit::Timeout,
            (Ok(s), None) => child_exit(*s),
            (Err(e), None) => {
                say!("baton: failed to wait for the command: {e}");
                Exit::Failure
            }
        };
        if let (Ok(s), None) = (&status, self.stop)
            && !s.success()
        {
            let mut a = self.run_alert(
                Kind::Failed,
                format!("{}: the command {}", self.label(), describe(*s)),
            );
            a.status = Some(i32::from(exit.code()));
            self.alerts.raise(a);
        }
        if !group_empty {
            say!(
                "baton: processes in group {} would not stop; the lease on {} stays held (orphaned) \
                 until the group is empty",
                self.pgid,
                self.cfg.lock.display()
            );
            std::mem::forget(self.lease);
            return if exit == Exit::Timeout || exit == Exit::LeaseLost {
                exit
            } else {
                Exit::Failure
            };
        }
        if self.lost {
            // The lease is someone else's now; a release would change nothing.
            return Exit::LeaseLost;
        }
        let cfg = self.cfg;
        super::release(cfg, self.lease, exit, self.alerts)
    }

    fn label(&self) -> String {
        self.cfg
            .name
            .clone()
            .unwrap_or_else(|| self.cfg.lock.display().to_string())
    }

    fn run_alert(&self, kind: Kind, message: String) -> Alert {
        super::run_alert(self.cfg, &self.lease, kind, message)
    }

    fn alert(&mut self, kind: Kind, message: String) {
        let a = self.run_alert(kind, message);
        self.alerts.raise(a);
    }
}

fn child_exit(s: ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => Exit::Child(u8::try_from(c).unwrap_or(1)),
        (None, Some(sig)) => Exit::Child(u8::try_from(128 + sig).unwrap_or(255)),
        (None, None) => Exit::Failure,
    }
}

fn describe(s: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("died of signal {sig}"),
        (None, None) => "ended in an unknown way".into(),
    }
}
