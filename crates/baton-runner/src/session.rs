//! A run under a held lease: steps, pauses between them, and the release.
//!
//! The session owns the lease from the moment its caller acquired it,
//! through [`Held`] (a lock file or a store's row alike). It
//! renews it every third of its TTL, during steps and pauses alike, each
//! renewal on a thread of its own ([`crate::renewer`]), and is the only code
//! that decides the lease is lost: when a renewal finds the token gone, or
//! no renewal has succeeded for a whole TTL (measured on the boot clock from
//! the send time of the last successful one), the running step is stopped
//! and no later step may start. A renewal that blocks, for however long,
//! never delays that stop. [`Session::finish`] releases the lease,
//! token-checked, and only ever after every step's tree is gone.
//!
//! A step whose command had already exited when the lease was found lost
//! keeps its command's own ending (its exit status earned it, under a lease
//! still its own); only a command still running then, which the session
//! stops, ends [`Ending::LeaseLost`].
//!
//! A run asked to stop for a later one ([`StopAsk`], given for each run
//! with [`Session::listen`]) is stopped by the same path: the running
//! step's tree is signalled and killed as for a lost lease, a command still
//! running then ends [`Ending::Replaced`], and no later step of that run
//! starts. The lease is kept, renewed throughout, and released only once
//! the tree is gone; the next run of the session listens to a request of
//! its own.
//!
//! Every wait is bounded by the nearest deadline (renewal, TTL, timeout,
//! kill grace, budget) and by [`crate::TICK`], and a deadline whose action
//! was taken is no longer waited for: the supervisor sleeps between events
//! and never spins.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

use crate::ask::StopAsk;
use crate::capture::{self, Output};
use crate::cgroup::Cgroup;
use crate::gate::{self, Started};
use crate::limits::{TICK, show};
use crate::renewer::{Answer, Holding, Renewer};
use crate::report::{Event, Report};
use crate::signals::{SIGCONT, SIGHUP, Signals, Wake};
use crate::status::{Ending, SpawnFailure, SpawnKind};
use crate::step::{Stdin, StepResult, StepSpec};
use crate::tree::{KILL_ROUND_PAUSE, Tree};
use baton_store::held::{Held, HeldError, Release, Renewal, Restated};

/// How long the stop of a tree may last past the kill grace before the
/// session reports the survivors as stuck.
const STUCK_AFTER: Duration = Duration::from_secs(5);

/// How often the supervisor looks for the answer of a renewal under way.
const ANSWER_POLL: Duration = Duration::from_millis(10);

/// A renewal under way that did not answer within `waited`: whether the
/// lease is still held is unknown.
#[derive(Debug, thiserror::Error)]
#[error("a renewal of the lease has not answered within {}", show(*.waited))]
struct Unanswered {
    waited: Duration,
}

/// How a session is run.
#[derive(Debug, Clone, Default)]
pub struct SessionConfig {
    /// The run's soft budget: past it, one [`Event::Overrunning`], and
    /// nothing is stopped.
    pub max_runtime: Option<Duration>,
    /// A cgroup v2 directory delegated to the runner: each step gets a
    /// cgroup of its own below it.
    pub cgroup: Option<PathBuf>,
    /// A short name for the run, used in cgroup names (the run id).
    pub label: String,
    /// What a caught SIGINT, SIGTERM or SIGHUP does to a running step:
    /// `false` passes it to the step's group and lets the step decide (what
    /// `baton exec` and `baton tick` do); `true` stops the step's whole tree
    /// as a lost lease does: the first signal to every member, then SIGKILL
    /// rounds after the kill grace (what the daemon's runs do at shutdown).
    /// With `true`, SIGHUP is caught and dropped, neither passed on nor a
    /// stop: the daemon stops its runs with SIGTERM and never sends SIGHUP,
    /// and the kernel sends it (with SIGCONT) to a run whose daemon died
    /// while the run's process was stopped (its process group orphaned),
    /// a run that must go on.
    pub stop_on_signal: bool,
}

/// What a pause between steps came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Paused {
    /// The whole pause passed.
    Elapsed,
    /// A signal asked the run to stop.
    Interrupted(i32),
    /// The lease was lost.
    LeaseLost,
    /// The run was asked to stop for a later one ([`StopAsk`]).
    Replaced,
}

/// What the release came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finish {
    /// The lease was ours and is now free.
    Released,
    /// The lease was no longer ours; nothing was changed. The reason says
    /// what happened.
    Lost(String),
    /// The lease's record could not be reached; the lease frees itself (the
    /// lock file once this process has exited, its holder then provably
    /// gone; a store's row once its TTL has passed).
    Unconfirmed(String),
}

/// Why a step's tree is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Interrupted,
    Leftovers,
    Timeout,
    Replaced,
    LeaseLost,
}

/// A run in progress. One per process at a time.
pub struct Session<'r> {
    lease: Renewer,
    cfg: SessionConfig,
    report: &'r mut dyn Report,
    signals: Signals,
    clock: SystemClock,
    ttl: Duration,
    renew_every: Duration,
    started: Duration,
    last_renewed: Duration,
    next_renewal: Duration,
    overran: bool,
    /// The soft budget is not counting ([`Session::hold_budget`]).
    budget_held: bool,
    lost: Option<String>,
    /// A lost lease not yet reported: the report may block (the caller may
    /// write to a store), so it is made only once the running step's tree
    /// has been signalled.
    unreported: Option<String>,
    interrupted: Option<i32>,
    /// Where a request that the current run stop for a later one arrives.
    ask: Option<StopAsk>,
    /// Why the run was asked to stop for a later one, once it was noticed.
    replaced: Option<String>,
    steps: u32,
    /// Whether the run was told that a step could not be contained.
    uncontained_reported: bool,
    /// More runs follow under this lease after the current one (a batch,
    /// a backfill): its end foresees no release ([`Session::more_follow`]).
    more_follow: bool,
}

impl<'r> Session<'r> {
    /// Takes over an acquired lease: catches signals and makes this process
    /// the subreaper of whatever the steps start.
    ///
    /// # Errors
    ///
    /// When `/proc` is not this pid namespace's own, or the signal handlers
    /// cannot be installed; the lease is handed back so the caller can
    /// release it.
    #[allow(clippy::type_complexity)] // The lease handed back, and why.
    pub fn start(
        lease: Box<dyn Held>,
        cfg: SessionConfig,
        report: &'r mut dyn Report,
    ) -> Result<Self, Box<(Box<dyn Held>, std::io::Error)>> {
        if !baton_lease::job::proc_is_ours() {
            // Fail closed: the job's tree could not be found to stop it.
            let e = std::io::Error::other(
                "/proc is not this pid namespace's own (it was mounted from another \
                 namespace), so the processes a job starts cannot be found to stop them: \
                 mount /proc for this namespace (e.g. `unshare --pid --fork --mount-proc`)",
            );
            return Err(Box::new((lease, e)));
        }
        let signals = match Signals::install(!cfg.stop_on_signal) {
            Ok(s) => s,
            Err(e) => {
                let e = std::io::Error::new(
                    e.kind(),
                    format!("failed to install signal handlers: {e}"),
                );
                return Err(Box::new((lease, e)));
            }
        };
        // OK to ignore: on a kernel without it (before 3.4) only the group
        // is tracked, which `DESIGN.md` states as a limit.
        let _ = baton_lease::job::become_subreaper();
        baton_lease::job::keep_descriptor_limit();
        // Before any step: a renewal must need nothing the job may take.
        let lease = match Renewer::new(lease) {
            Ok(r) => r,
            Err((lease, e)) => return Err(Box::new((lease, e))),
        };
        let clock = SystemClock;
        let now = clock.boot();
        let ttl = lease.holding().ttl();
        let renew_every = ttl / 3;
        Ok(Self {
            lease,
            cfg,
            report,
            signals,
            clock,
            ttl,
            renew_every,
            started: now,
            last_renewed: now,
            next_renewal: now + renew_every,
            overran: false,
            budget_held: false,
            lost: None,
            unreported: None,
            interrupted: None,
            ask: None,
            replaced: None,
            steps: 0,
            uncontained_reported: false,
            more_follow: false,
        })
    }

    /// The lease's facts (fence, token, host, where it is kept).
    pub fn lease(&self) -> &Holding {
        self.lease.holding()
    }

    /// Checks the self-fencing inequality ([`crate::check_self_fencing`])
    /// with this lease's TTL and renewal wait ([`Held::renew_wait`]): a
    /// caller whose steps use `kill_grace` under a lease that judges on
    /// other hosts wait `takeover_grace` checks it before the first step.
    ///
    /// # Errors
    ///
    /// As [`crate::check_self_fencing`].
    pub fn check_self_fencing(
        &self,
        kill_grace: Duration,
        takeover_grace: Duration,
        names: (&str, &str, &str),
    ) -> Result<(), crate::Unfenced> {
        crate::limits::check_self_fencing(
            self.ttl,
            self.lease.holding().renew_wait(),
            kill_grace,
            takeover_grace,
            names,
        )
    }

    /// Why the lease was lost, once it was.
    pub fn lost(&self) -> Option<&str> {
        self.lost.as_deref()
    }

    /// The signal that asked the run to stop, once one did.
    pub fn interrupted(&self) -> Option<i32> {
        self.interrupted
    }

    /// Why the run was asked to stop for a later one, once that was
    /// noticed ([`Session::listen`]).
    pub fn replaced(&self) -> Option<&str> {
        self.replaced.as_deref()
    }

    /// Where a request that the run about to start stop for a later one
    /// arrives (`None`: nothing may ask it). Forgets the request of the run
    /// before, noticed or not: called before each run of one lease.
    pub fn listen(&mut self, ask: Option<StopAsk>) {
        self.ask = ask;
        self.replaced = None;
    }

    /// Takes note of a request to stop that arrived; reports it once.
    fn notice_ask(&mut self) {
        if self.replaced.is_some() {
            return;
        }
        if let Some(why) = self.ask.as_ref().and_then(StopAsk::asked) {
            self.replaced = Some(why.clone());
            self.report.event(Event::Replaced { why });
        }
    }

    /// Runs one step to its end: until the command has exited and its whole
    /// tree is gone. Never returns while a process of the step runs.
    pub fn run(&mut self, spec: StepSpec) -> StepResult {
        match self.prepare(spec) {
            Ok(prepared) => self.run_prepared(prepared),
            Err(not_run) => *not_run,
        }
    }

    /// Spawns a step and holds it at its gate, its command not yet run,
    /// and says its process group to the lease ([`Held::foresee_group`]),
    /// so that a store may name it with the caller's next record (the
    /// run's start) in that record's round trip; [`Session::run_prepared`]
    /// then runs it. The step's result when it cannot be spawned (or the
    /// lease is lost, or a signal or a later run asked to stop). Dropping
    /// the [`Prepared`] kills the held step unrun.
    ///
    /// # Errors
    ///
    /// The step's result, when it does not run.
    pub fn prepare(&mut self, spec: StepSpec) -> Result<Prepared, Box<StepResult>> {
        let not_run = |this: &Self, ending: Ending| {
            Box::new(StepResult {
                ending,
                code: None,
                signal: None,
                started: this.clock.wall(),
                duration: Duration::ZERO,
                interrupted: this.interrupted,
            })
        };
        self.report_lost();
        if self.lost.is_some() {
            return Err(not_run(self, Ending::LeaseLost));
        }
        if let Some(sig) = self.interrupted.or_else(|| self.signals.pending()) {
            self.interrupted = Some(sig);
            return Err(not_run(self, Ending::Signaled(sig)));
        }
        self.notice_ask();
        if self.replaced.is_some() {
            return Err(not_run(self, Ending::Replaced));
        }
        self.steps += 1;
        let program = spec.program.clone();
        let cwd = spec.cwd.clone();
        let limits = spec_limits(&spec);
        let cmd = match gate::Command::new(&spec.program, &spec.args, &spec.env, spec.cwd.as_ref())
        {
            Ok(c) => c,
            Err(e) => {
                return Err(not_run(
                    self,
                    Ending::NotStarted(SpawnFailure::classify_in(&program, cwd.as_deref(), &e)),
                ));
            }
        };
        let (output, reader) = match spec.output {
            Output::Inherit => (None, None),
            Output::Capture(sink) => match capture::start(sink) {
                Ok((w, reader)) => (Some(w), Some(reader)),
                Err(e) => {
                    return Err(not_run(
                        self,
                        Ending::NotStarted(other(format!(
                            "failed to set up the step's output: {e}"
                        ))),
                    ));
                }
            },
        };
        let stdio = gate::Stdio {
            stdin_null: spec.stdin == Stdin::Null,
            output,
        };
        let gated = match gate::spawn_gated(&cmd, stdio, spec.contain) {
            Ok(g) => g,
            Err(e) => {
                finish_reader(reader, &self.clock);
                return Err(not_run(
                    self,
                    Ending::NotStarted(SpawnFailure::classify_in(&program, cwd.as_deref(), &e)),
                ));
            }
        };
        let pid = gated.pid();
        let contained = gated.method().contained();
        if spec.contain && !contained && !self.uncontained_reported {
            self.uncontained_reported = true;
            self.report.event(Event::Uncontained {
                why: crate::contain::why_uncontained(),
            });
        }
        let cgroup = self.cfg.cgroup.clone().and_then(|parent| {
            let name = format!(
                "baton-{}-{}-{}",
                self.cfg.label,
                std::process::id(),
                self.steps
            );
            match Cgroup::create(&parent, &name) {
                Ok(cg) => match cg.attach(pid) {
                    Ok(()) => Some(cg),
                    Err(e) => {
                        self.report.event(Event::NoCgroup {
                            why: format!(
                                "failed to move the step into {}: {e}",
                                cg.dir().display()
                            ),
                        });
                        cg.remove();
                        None
                    }
                },
                Err(e) => {
                    self.report.event(Event::NoCgroup {
                        why: format!("failed to create a cgroup in {}: {e}", parent.display()),
                    });
                    None
                }
            }
        });
        // Init leads a contained step's group, and the whole step dies with
        // it: a judge may take its end for the step's (`jinit=`).
        let leader = if contained {
            baton_lease::Leader::NamespaceInit
        } else {
            baton_lease::Leader::Command
        };
        // Said before the caller's next record, when no renewal is under
        // way; the renewal it may come to counts from now, before it was
        // sent.
        self.keep_lease();
        let foreseen = (self.lost.is_none() && !self.lease.busy()).then(|| {
            let at = self.clock.boot();
            self.lease.with(|l| l.foresee_group(pid, leader));
            at
        });
        Ok(Prepared {
            gated: Some(gated),
            pid,
            contained,
            leader,
            cgroup,
            reader,
            program,
            cwd,
            limits,
            foreground: spec.foreground,
            foreseen,
        })
    }

    /// Runs a step [`Session::prepare`] held at its gate, to its end:
    /// names its process group on the lease (answered by the store from
    /// the record that carried it, when one did), then lets its command
    /// run. Never returns while a process of the step runs.
    pub fn run_prepared(&mut self, mut prepared: Prepared) -> StepResult {
        let started_wall = self.clock.wall();
        let t0 = self.clock.boot();
        let not_run = |this: &Self, ending: Ending| StepResult {
            ending,
            code: None,
            signal: None,
            started: started_wall,
            duration: this.clock.boot().saturating_sub(t0),
            interrupted: this.interrupted,
        };
        let Some(mut gated) = prepared.gated.take() else {
            return not_run(
                self,
                Ending::NotStarted(other("the step was run already".into())),
            );
        };
        let pid = prepared.pid;
        let contained = prepared.contained;
        let limits = prepared.limits;
        let cgroup = prepared.cgroup.take();
        let reader = prepared.reader.take();
        let program = std::mem::take(&mut prepared.program);
        let cwd = prepared.cwd.take();
        // The group goes on the record before the command may run, once
        // the renewal under way (from the pause before) has answered.
        let recorded = match self.settle() {
            Err(busy) => Ok(Renewal::Unconfirmed(busy.to_string())),
            Ok(()) if self.lost.is_some() => {
                Ok(Renewal::Lost(self.lost.clone().unwrap_or_default()))
            }
            Ok(()) => {
                let attempt = prepared.foreseen.unwrap_or_else(|| self.clock.boot());
                let r = self
                    .lease
                    .with(|l| l.set_job_group(pid, prepared.leader))
                    .unwrap_or_else(|| Ok(Renewal::Lost("the lease was released".into())));
                if r.as_ref().is_ok_and(|r| *r == Renewal::Renewed) {
                    self.renewed(attempt);
                }
                r
            }
        };
        let refused = match recorded {
            Ok(Renewal::Renewed) => None,
            Ok(Renewal::Lost(lost)) => {
                self.lose(format!("{lost}; the step did not run"));
                self.report_lost();
                Some(Ending::LeaseLost)
            }
            Ok(Renewal::Unconfirmed(busy)) => Some(Ending::NotStarted(other(format!(
                "could not record the step's process group in {} ({busy}); it did not run",
                self.lease.holding().describe()
            )))),
            Err(e) => Some(Ending::NotStarted(other(format!(
                "{e}; the step did not run"
            )))),
        };
        let refused = refused.or_else(|| {
            // A signal that arrived before the command started keeps it
            // from starting.
            self.signals.pending().map(|sig| {
                self.interrupted = Some(sig);
                Ending::Signaled(sig)
            })
        });
        if let Some(ending) = refused {
            gated.close();
            if let Some(cg) = &cgroup {
                cg.remove();
            }
            finish_reader(reader, &self.clock);
            return not_run(self, ending);
        }
        let mut foreground = if prepared.foreground {
            crate::terminal::hand_to(pid)
        } else {
            None
        };
        // Init has its deadline before the command may run.
        let fenced = self.fence_deadline(limits.kill_grace);
        gated.deadline().send(self.on_boot_clock(fenced));
        let mut child = match gated.open() {
            Started::Running(c) => c,
            Started::Failed(e) => {
                if let Some(fg) = foreground {
                    fg.restore();
                }
                if let Some(cg) = &cgroup {
                    cg.remove();
                }
                finish_reader(reader, &self.clock);
                return not_run(
                    self,
                    Ending::NotStarted(SpawnFailure::classify_in(&program, cwd.as_deref(), &e)),
                );
            }
        };
        let tree = Tree::new(pid, cgroup, contained);
        let mut reader = reader;
        let (status, stop, cut) = self.supervise(
            &mut child,
            &tree,
            &limits,
            (t0, fenced),
            reader.as_mut(),
            foreground.as_mut(),
        );
        // Killed by its init at the deadline (the runner did not run to
        // renew, nor to stop it): the lease is lost, as the runner would
        // have found had it run.
        let watchdog = status.is_some_and(|s| s.signal() == Some(libc::SIGKILL))
            && child
                .deadline()
                .passed(baton_lease::Clock::boot(&baton_lease::SystemClock));
        if watchdog {
            self.lose(format!(
                "the supervisor could not renew the lease on {} in time (it did not run: stopped, \
                 or starved); the step's init killed the job at its deadline",
                self.lease.holding().describe()
            ));
            self.report_lost();
        }
        if let Some(fg) = foreground {
            fg.restore();
        }
        tree.dispose();
        finish_reader(reader, &self.clock);
        let (code, signal) = match status {
            Some(s) => (s.code(), s.signal()),
            None => (None, None),
        };
        let ending = match (stop, code, signal) {
            // A command that had exited before the lease was lost keeps
            // its own ending.
            (Some(Stop::LeaseLost), _, _) if cut => Ending::LeaseLost,
            (Some(Stop::LeaseLost), None, None) => Ending::LeaseLost,
            _ if watchdog => Ending::LeaseLost,
            (Some(Stop::Replaced), _, _) if cut => Ending::Replaced,
            (Some(Stop::Replaced), None, None) => Ending::Replaced,
            (Some(Stop::Timeout), _, _) => Ending::TimedOut,
            (_, Some(c), _) => Ending::Exited(c),
            (_, None, Some(s)) => Ending::Signaled(s),
            (_, None, None) => Ending::NotStarted(other("the step's end could not be read".into())),
        };
        StepResult {
            ending,
            code,
            signal,
            started: started_wall,
            duration: self.clock.boot().saturating_sub(t0),
            interrupted: self.interrupted,
        }
    }

    /// Supervises a started step until its command has exited and its tree
    /// is gone. Returns the command's status, why the tree was stopped, if it
    /// was, and whether the lease was lost (or the run asked to stop for a
    /// later one) while the command still ran.
    fn supervise(
        &mut self,
        child: &mut gate::Child,
        tree: &Tree,
        limits: &Limits,
        (t0, fenced): (Duration, Duration),
        mut output: Option<&mut capture::Reader>,
        mut foreground: Option<&mut crate::terminal::Foreground>,
    ) -> (Option<ExitStatus>, Option<Stop>, bool) {
        let pid = child.id();
        let mut fenced = fenced;
        let timeout_at = limits.timeout.map(|t| t0 + t);
        let mut status: Option<ExitStatus> = None;
        let mut waited = false;
        let mut stop: Option<Stop> = None;
        let mut term_at: Option<Duration> = None;
        let mut killing = false;
        let mut stuck_reported = false;
        let mut unseen_reported = false;
        let mut cut = false;
        // The step is stopped from the terminal and the runner with it
        // ([`Session::stop_with_step`]): it is continued once the lease is
        // known to be held.
        let mut held = false;
        loop {
            if !waited {
                match child.try_wait() {
                    Ok(Some(s)) => {
                        status = Some(s);
                        waited = true;
                    }
                    Ok(None) => {}
                    // Cannot happen while we own the child; its end is then
                    // unknowable, and only the tree is left to watch.
                    Err(_) => waited = true,
                }
            }
            if let Some(signal) = child.take_stop()
                && !held
                && !waited
                && stop.is_none()
                && let Some(fg) = foreground.as_deref_mut()
                && self.stop_with_step(signal, fg)
            {
                held = true;
            }
            self.keep_lease();
            if held && (waited || stop.is_some() || self.lost.is_some()) {
                // Ended, or being stopped (which continues it to act on
                // its signal): nothing to hand back.
                held = false;
            } else if held && self.clock.boot() < self.last_renewed + self.ttl {
                // Continued, and the lease renewed within its TTL (at
                // once after a short stop; after a longer one, once a
                // renewal begun since has landed): the step may run again.
                held = false;
                if let Some(fg) = foreground.as_deref_mut() {
                    fg.give();
                }
                tree.signal(SIGCONT);
            }
            if !waited
                && let Some(fg) = foreground.as_deref_mut()
                && fg.orphaned_now(self.clock.boot())
                && tree.members().iter().any(|m| m.stopped)
            {
                // The shell whose job this was is gone while part of the
                // step is stopped (a stop the runner never saw: not its
                // command's own): as the kernel does for an orphaned group
                // with a stopped member, SIGHUP and then SIGCONT, or that
                // part waits for ever and the lease with it.
                tree.signal(SIGHUP);
                self.report.event(Event::Forwarded { signal: SIGHUP });
            }
            // Each renewal moves init's deadline on; a lost lease never
            // does (its stop is under way).
            let next = self.fence_deadline(limits.kill_grace);
            if self.lost.is_none() && next != fenced {
                fenced = next;
                child.deadline().send(self.on_boot_clock(fenced));
            }
            let now = self.clock.boot();
            let begin = |why: Stop, stop: &mut Option<Stop>, term_at: &mut Option<Duration>| {
                if *stop != Some(Stop::LeaseLost) {
                    *stop = Some(why);
                }
                if term_at.is_none() {
                    *term_at = Some(now);
                    tree.signal(limits.first_signal);
                }
            };
            if self.lost.is_some() && stop != Some(Stop::LeaseLost) {
                // Whether the command still runs as the loss is acted on:
                // asked right before the signal, so that a command that
                // exited first keeps its own ending.
                if !waited && let Ok(Some(s)) = child.try_wait() {
                    status = Some(s);
                    waited = true;
                }
                cut = !waited && !tree.only_init_left();
                begin(Stop::LeaseLost, &mut stop, &mut term_at);
            }
            // Only now that the tree is signalled: the report may block.
            self.report_lost();
            self.notice_ask();
            if self.replaced.is_some() && stop.is_none() {
                fail::fail_point!("replace-stop");
                // The same stop as a lost lease's, the lease kept: whether
                // the command still runs is asked right before the signal.
                if !waited && let Ok(Some(s)) = child.try_wait() {
                    status = Some(s);
                    waited = true;
                }
                cut = !waited && !tree.only_init_left();
                begin(Stop::Replaced, &mut stop, &mut term_at);
            }
            if let Some(at) = timeout_at
                && stop.is_none()
                && !waited
                && now >= at
            {
                self.report.event(Event::TimedOut {
                    after: at.saturating_sub(t0),
                });
                begin(Stop::Timeout, &mut stop, &mut term_at);
            }
            if waited {
                if !tree.alive(None) {
                    return (status, stop, cut);
                }
                if let Some(why) = tree.unseen() {
                    // Nothing can be counted. A contained step's namespace
                    // is stopped whole through its init, which needs no
                    // descriptor; otherwise nothing can be found to stop.
                    // Either way the lease is kept, and the tree looked at
                    // again until it can be seen or is gone.
                    let stopping = tree.contained();
                    if !unseen_reported {
                        unseen_reported = true;
                        self.report.event(Event::Unseen { why, stopping });
                    }
                    if stopping && term_at.is_none() {
                        begin(Stop::Leftovers, &mut stop, &mut term_at);
                    }
                } else if term_at.is_none() {
                    // A contained step's init outlives its command for the
                    // instant it takes to see the namespace empty.
                    let count = tree.leftovers();
                    if count > 0 {
                        self.report.event(Event::Leftovers { count });
                        begin(Stop::Leftovers, &mut stop, &mut term_at);
                    }
                }
            }
            if let Some(t) = term_at
                && !killing
                && now >= t + limits.kill_grace
            {
                killing = true;
            }
            if killing {
                let left = tree.kill_round(if waited { None } else { Some(pid) });
                if let Some(t) = term_at
                    && !stuck_reported
                    && !left.is_empty()
                    && now >= t + limits.kill_grace + STUCK_AFTER
                {
                    stuck_reported = true;
                    self.report.event(Event::Stuck {
                        pids: left.iter().map(|m| m.pid).collect(),
                        after: now.saturating_sub(t),
                    });
                }
            }
            let wait = if killing {
                KILL_ROUND_PAUSE
            } else {
                let mut next = self.session_deadline();
                if let (Some(at), None, false) = (timeout_at, stop, waited) {
                    next = next.min(at);
                }
                if let Some(t) = term_at {
                    next = next.min(t + limits.kill_grace);
                }
                // The command has ended and its tree has not: a contained
                // step's init lasts an instant longer, and its end may bring
                // no signal of its own (its SIGCHLD can merge with the
                // command's), so it is looked for again soon, not a tick
                // later.
                let most = if waited { KILL_ROUND_PAUSE } else { TICK };
                next.saturating_sub(self.clock.boot()).min(most)
            };
            let readable = output.as_ref().and_then(|o| o.fd());
            let woke = self.signals.wait(wait, readable);
            if let Some(o) = output.as_mut() {
                o.pump();
            }
            match woke {
                Wake::Signal(s) => {
                    self.interrupted = Some(s);
                    if self.cfg.stop_on_signal {
                        let now = self.clock.boot();
                        if stop.is_none() {
                            stop = Some(Stop::Interrupted);
                        }
                        if term_at.is_none() {
                            term_at = Some(now);
                            tree.signal(limits.first_signal);
                        }
                    } else {
                        let _ = baton_lease::job::signal_group(pid, s);
                        // A command stopped by job control (Ctrl-Z, a read
                        // or write at a terminal not its own) acts on the
                        // signal only once continued: it is, or the run
                        // would wait for it for ever; one the runner holds
                        // stopped until its lease is known held, then.
                        if !held {
                            tree.signal(SIGCONT);
                        }
                    }
                    self.report.event(Event::Forwarded { signal: s });
                }
                Wake::Pass(passed) => {
                    // Meant for the job (reopen a log, say how far it got):
                    // passed on as they came, and nothing stops. A command
                    // stopped by job control gets them once continued, as
                    // the kernel keeps them pending.
                    for s in passed {
                        let _ = baton_lease::job::signal_group(pid, s);
                        self.report.event(Event::Forwarded { signal: s });
                    }
                }
                // In a group no shell controls (an orphaned one: cron,
                // systemd, `setsid`) SIGTSTP is ignored, as the kernel
                // ignores it for any process there.
                Wake::Suspend if !crate::terminal::group_controlled() => {}
                Wake::Suspend => {
                    // SIGTSTP to the runner: its step stops with it (the
                    // terminal's foreground taken back if it had it), and is
                    // continued as after a stop from the terminal.
                    if !waited && stop.is_none() && self.lost.is_none() {
                        if let Some(fg) = foreground.as_deref_mut() {
                            fg.take_back();
                        }
                        tree.pause();
                        held = true;
                    }
                    crate::terminal::stop_self(libc::SIGTSTP);
                }
                Wake::Child | Wake::Timeout => {}
            }
        }
    }

    /// Job control, for a step in the terminal's foreground: the step was
    /// stopped by `signal`; when that came from the terminal (Ctrl-Z, or a
    /// read or write it may not make), the runner takes the foreground back
    /// and stops its own group with the same signal, so the shell sees its
    /// job stopped, and says `true` once continued: the step is then to be
    /// continued as soon as the lease is known to be held (a stop longer
    /// than the TTL renewed nothing: a renewal must land first, or the
    /// lease is lost and the step stopped for good, as init's watchdog has
    /// done if the stop outlasted its deadline). A stop by anything else
    /// (`kill -STOP`) is left as it is, for whoever stopped the step to
    /// continue it.
    ///
    /// A runner whose group no shell controls (orphaned: nobody could
    /// continue it) ignores a Ctrl-Z, continuing the step at once, and
    /// leaves a step stopped by a read or write at the terminal as it is.
    fn stop_with_step(&mut self, signal: i32, fg: &mut crate::terminal::Foreground) -> bool {
        if ![libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&signal) || self.lost.is_some() {
            return false;
        }
        if !crate::terminal::group_controlled() {
            return signal == libc::SIGTSTP;
        }
        fg.take_back();
        crate::terminal::stop_own_group(signal);
        true
    }

    /// Waits `d` between steps, renewing the lease meanwhile. Returns early
    /// when a signal asks the run to stop or the lease is lost; returns
    /// [`Paused::Elapsed`] only on a lease renewed within its TTL (a pause
    /// the process spent stopped past it waits for a renewal to answer).
    pub fn pause(&mut self, d: Duration) -> Paused {
        let end = self.clock.boot().saturating_add(d);
        loop {
            self.keep_lease();
            self.report_lost();
            if self.lost.is_some() {
                return Paused::LeaseLost;
            }
            if let Some(s) = self.interrupted {
                return Paused::Interrupted(s);
            }
            self.notice_ask();
            if self.replaced.is_some() {
                return Paused::Replaced;
            }
            let now = self.clock.boot();
            if now >= end {
                if now >= self.last_renewed + self.ttl {
                    // The pause outlasted the TTL of the last renewal (the
                    // process was stopped, or a renewal is slow): what
                    // follows starts on a lease known held, so the renewal
                    // under way answers first. One that finds the lease
                    // lost ends the pause as lost, before the next step is
                    // begun and recorded. An unanswered one is no error
                    // here: settling checks the deadline, which then finds
                    // the lease lost, and the loop says so.
                    let _ = self.settle();
                    continue;
                }
                return Paused::Elapsed;
            }
            let mut wait = end.min(self.session_deadline()).saturating_sub(now);
            if self.ask.is_some() {
                // A request to stop is looked for as often as during a step.
                wait = wait.min(TICK);
            }
            match self.signals.wait(wait, None) {
                Wake::Signal(s) => self.interrupted = Some(s),
                Wake::Suspend => crate::terminal::stop_self(libc::SIGTSTP),
                _ => {}
            }
        }
    }

    /// Waits `d` once the lease is lost, with nothing left to run (a run's
    /// end still to be recorded): renews nothing. Returns early when a
    /// signal asks the process to stop; with the lease still held it is
    /// [`Session::pause`].
    pub fn linger(&mut self, d: Duration) -> Paused {
        if self.lost.is_none() {
            return self.pause(d);
        }
        let end = self.clock.boot().saturating_add(d);
        loop {
            self.report_lost();
            if let Some(s) = self.interrupted {
                return Paused::Interrupted(s);
            }
            let now = self.clock.boot();
            if now >= end {
                return Paused::Elapsed;
            }
            match self.signals.wait(end - now, None) {
                Wake::Signal(s) => self.interrupted = Some(s),
                Wake::Suspend => crate::terminal::stop_self(libc::SIGTSTP),
                _ => {}
            }
        }
    }

    /// Stops the soft budget ([`SessionConfig::max_runtime`]) counting
    /// until [`Session::start_budget`]: nothing of the run runs yet (its
    /// start waits for its record), so nothing can overrun.
    pub fn hold_budget(&mut self) {
        self.budget_held = true;
    }

    /// Starts the soft budget over from now: a run whose start waited (for
    /// its record) is judged from when it started, not from when the
    /// session began.
    pub fn start_budget(&mut self) {
        self.started = self.clock.boot();
        self.overran = false;
        self.budget_held = false;
    }

    /// Between runs of one session (a scheduler running one occurrence after
    /// another under one lease): restates the run id, occurrence and claim
    /// on the lease ([`Held::restate`]) and starts the soft budget over for
    /// the next run. A lost lease is remembered as when a renewal finds it.
    ///
    /// # Errors
    ///
    /// Failures to reach the lease's record; nothing is known to have
    /// changed.
    pub fn restate(
        &mut self,
        run: Option<String>,
        occ: Option<String>,
        once: Option<&baton_lease::Once>,
    ) -> Result<Restated, HeldError> {
        if let Err(busy) = self.settle() {
            return Ok(Restated::Unconfirmed(busy.to_string()));
        }
        if let Some(why) = &self.lost {
            return Ok(Restated::Lost(why.clone()));
        }
        let sent = self.clock.boot();
        let r = self
            .lease
            .with(|l| l.restate(run, occ, once))
            .unwrap_or_else(|| Ok(Restated::Lost("the lease was released".into())))?;
        match &r {
            Restated::Done => {
                self.renewed(sent);
                self.started = self.clock.boot();
                self.overran = false;
                self.budget_held = false;
            }
            Restated::Lost(lost) => {
                self.lose(lost.clone());
                self.report_lost();
            }
            Restated::Claimed { .. } | Restated::Unconfirmed(_) => {}
        }
        Ok(r)
    }

    /// Takes back the lease's latest claim ([`Held::withdraw`]) for an
    /// occurrence that did not start after all. Returns whether it was
    /// taken back; a lost lease is remembered as when a renewal finds it.
    ///
    /// # Errors
    ///
    /// Failures to reach the lease's record; nothing is known to have
    /// changed.
    pub fn withdraw(&mut self, once: &baton_lease::Once) -> Result<bool, HeldError> {
        if self.settle().is_err() || self.lost.is_some() {
            // A renewal still under way, or the lease lost: the claim
            // stays, and later ticks leave its occurrence out as claimed.
            return Ok(false);
        }
        let sent = self.clock.boot();
        let r = self.lease.with(|l| l.withdraw(once)).transpose()?.flatten();
        match r {
            Some(Renewal::Renewed) => {
                self.renewed(sent);
                Ok(true)
            }
            Some(Renewal::Lost(lost)) => {
                self.lose(lost);
                self.report_lost();
                Ok(false)
            }
            Some(Renewal::Unconfirmed(_)) | None => Ok(false),
        }
    }

    /// Says whether more runs follow the current one under this lease (the
    /// rest of a catch-up batch or of a backfill, which no queue in a
    /// ledger shows): then its end foresees no release
    /// ([`Session::foresee_release`]), which would free the lease under
    /// them.
    pub fn more_follow(&mut self, more: bool) {
        self.more_follow = more;
    }

    /// Says that the run `run` records its end next, after which the lease
    /// is released unless one of `jobs` has an occurrence queued: a store
    /// may then release it in the round trip of that record
    /// ([`Held::foresee_release`]), and [`Session::finish_peeking`] answers
    /// from it. Nothing when the lease is lost, a renewal is under way, or
    /// more runs follow ([`Session::more_follow`]).
    pub fn foresee_release(&mut self, run: &str, jobs: &[String]) {
        self.keep_lease();
        if self.lost.is_some() || self.lease.busy() || self.more_follow {
            return;
        }
        self.lease.with(|l| l.foresee_release(run, jobs));
    }

    /// Releases the lease (only if it is still ours). Every step's tree is
    /// gone by now: [`Session::run`] never returns before.
    pub fn finish(self) -> Finish {
        self.finish_peeking(&[]).0
    }

    /// As [`Session::finish`], and whether any of `jobs` has an occurrence
    /// waiting in the queue once the lease is free, when the store says so
    /// in the release's call ([`Held::release_peeking`]): `Some(false)` only
    /// for a lease released with none waiting.
    pub fn finish_peeking(mut self, jobs: &[String]) -> (Finish, Option<bool>) {
        let settled = self.settle();
        self.report_lost();
        if let Some(why) = self.lost.take() {
            // The lease is someone else's now (or nobody's): a release would
            // change nothing, and the token check guarantees it. A renewal
            // still under way keeps it; it lapses by itself.
            if settled.is_ok()
                && let Some(lease) = self.lease.take()
            {
                let _ = lease.release();
            }
            return (Finish::Lost(why), None);
        }
        let path = self.lease.holding().describe();
        if let Err(busy) = settled {
            return (
                Finish::Unconfirmed(format!(
                    "could not release {path} ({busy}); it frees itself once this process has \
                     exited"
                )),
                None,
            );
        }
        let Some(lease) = self.lease.take() else {
            return (Finish::Lost("the lease was already released".into()), None);
        };
        fail::fail_point!("release");
        match lease.release_peeking(jobs) {
            Ok((Release::Released, queued)) => (Finish::Released, queued),
            Ok((Release::Lost(lost), _)) => (
                Finish::Lost(format!("{lost}; this run's release changed nothing")),
                None,
            ),
            Ok((Release::Unconfirmed(b), _)) => (
                Finish::Unconfirmed(format!(
                    "could not release {path} ({b}); it frees itself once this process has \
                     exited"
                )),
                None,
            ),
            Err(e) => (
                Finish::Unconfirmed(format!(
                    "{e}; the lease frees itself once this process has exited"
                )),
                None,
            ),
        }
    }

    /// Renews when due, self-fences when no renewal got through for a TTL,
    /// and raises the budget's one warning.
    fn keep_lease(&mut self) {
        if let Some(answer) = self.lease.collect() {
            self.answered(answer);
            // The next renewal is a period after this one answered, as
            // when renewals were made on this thread: a store that failed
            // a whole call is given the period to come back.
            self.next_renewal = self.clock.boot() + self.renew_every;
        }
        let now = self.clock.boot();
        if self.lost.is_none()
            && !self.lease.busy()
            && now >= self.next_renewal
            && let Err(e) = self.lease.start()
        {
            self.answered((now, Err(e)));
            self.next_renewal = now + self.renew_every;
        }
        self.check_deadline();
        let now = self.clock.boot();
        if let (Some(m), false, false) = (self.cfg.max_runtime, self.overran, self.budget_held)
            && baton_lease::overran(now.saturating_sub(self.started), m)
        {
            self.overran = true;
            self.report.event(Event::Overrunning { budget: m });
        }
    }

    /// Self-fences: the lease is lost once no renewal sent in the last TTL
    /// has succeeded. A renewal under way then is given the longest a
    /// renewal may block ([`Held::renew_wait`], the `w` of the self-fencing
    /// rule) to land; one that blocks longer does not delay the stop.
    fn check_deadline(&mut self) {
        let now = self.clock.boot();
        if self.lost.is_none() && now >= self.deadline() {
            let since = show(now.saturating_sub(self.last_renewed));
            self.lose(format!(
                "could not renew the lease on {} for {since} (its TTL is {})",
                self.lease.holding().describe(),
                show(self.ttl)
            ));
        }
    }

    /// When the lease is lost unless a renewal succeeds first: a TTL after
    /// the last successful send; while a renewal is under way, the longest
    /// a renewal may block after that, or after the renewal started when it
    /// started later (a supervisor that was paused past its deadline, and
    /// renews first thing on waking, as it always did).
    fn deadline(&self) -> Duration {
        let at = self.last_renewed + self.ttl;
        match self.lease.started() {
            Some(started) => at.max(started) + self.lease.holding().renew_wait(),
            None => at,
        }
    }

    /// By when (this session's clock) a step stopped for a lease lost now
    /// would be gone at the latest: the self-fencing deadline, a renewal's
    /// wait and the step's `kill_grace` after the last renewal. A step's
    /// init kills its tree then, should the runner not have
    /// (`crate::contain`'s watchdog).
    fn fence_deadline(&self, kill_grace: Duration) -> Duration {
        self.last_renewed + self.ttl + self.lease.holding().renew_wait() + kill_grace
    }

    /// `at` on this session's clock, as the boot clock init reads: the
    /// same instant from now.
    fn on_boot_clock(&self, at: Duration) -> Duration {
        let left = at.saturating_sub(self.clock.boot());
        baton_lease::Clock::boot(&baton_lease::SystemClock).saturating_add(left)
    }

    /// Takes a renewal's answer into account.
    fn answered(&mut self, (sent, answer): Answer) {
        match answer {
            Ok(Renewal::Renewed) => self.renewed(sent),
            Ok(Renewal::Lost(lost)) => self.lose(lost),
            Ok(Renewal::Unconfirmed(busy)) => self.report.event(Event::RenewTrouble {
                why: format!(
                    "could not renew the lease on {} ({busy}); the job is stopped if this \
                     lasts {}",
                    self.lease.holding().describe(),
                    show(self.ttl)
                ),
            }),
            Err(e) => self.report.event(Event::RenewTrouble {
                why: format!(
                    "could not renew the lease: {e}; the job is stopped if this lasts {}",
                    show(self.ttl)
                ),
            }),
        }
    }

    /// A renewal sent at `sent` (boot clock) succeeded. A lease already
    /// found lost stays lost.
    fn renewed(&mut self, sent: Duration) {
        if self.lost.is_none() {
            self.last_renewed = self.last_renewed.max(sent);
            self.next_renewal = sent + self.renew_every;
        }
    }

    /// Waits, a bounded time, for the renewal under way to answer, and
    /// takes the answer (and the deadline) into account. `Err` says the
    /// renewal is still under way.
    fn settle(&mut self) -> Result<(), Unanswered> {
        let limit = self.lease.holding().renew_wait() + TICK;
        let settled = self.lease.settle(limit).map(|answer| {
            if let Some(answer) = answer {
                self.answered(answer);
            }
        });
        self.check_deadline();
        settled.map_err(|()| Unanswered { waited: limit })
    }

    /// Remembers that the lease is lost; [`Session::report_lost`] says so
    /// once whatever runs has been told to stop.
    fn lose(&mut self, why: String) {
        if self.lost.is_none() {
            self.unreported = Some(why.clone());
            self.lost = Some(why);
        }
    }

    /// Reports a lost lease not yet reported.
    fn report_lost(&mut self) {
        if let Some(why) = self.unreported.take() {
            self.report.event(Event::LeaseLost { why });
        }
    }

    /// The nearest deadline of the lease and the budget not yet acted on.
    fn session_deadline(&self) -> Duration {
        let mut next = Duration::MAX;
        if self.lost.is_none() {
            next = next.min(self.deadline());
            next = if self.lease.busy() {
                // Its answer is looked for often, so that a renewal that
                // lands close to the deadline counts.
                next.min(self.clock.boot() + ANSWER_POLL)
            } else {
                next.min(self.next_renewal)
            };
        }
        if let (Some(m), false, false) = (self.cfg.max_runtime, self.overran, self.budget_held) {
            next = next.min(self.started + m);
        }
        next
    }
}

/// The limits of one step, kept apart from its spec (whose output the step
/// consumes).
#[derive(Clone, Copy)]
struct Limits {
    timeout: Option<Duration>,
    kill_grace: Duration,
    first_signal: i32,
}

/// A step spawned and held at its gate ([`Session::prepare`]), for
/// [`Session::run_prepared`]. Dropped unrun, it kills the held step (which
/// never ran its command), removes its cgroup and ends its output.
pub struct Prepared {
    gated: Option<gate::Gated>,
    pid: u32,
    contained: bool,
    leader: baton_lease::Leader,
    cgroup: Option<Cgroup>,
    reader: Option<capture::Reader>,
    program: std::ffi::OsString,
    /// The step's working directory, to name when the start fails.
    cwd: Option<std::path::PathBuf>,
    limits: Limits,
    foreground: bool,
    /// When its group was said to the lease (boot clock), if it was.
    foreseen: Option<Duration>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("pid", &self.pid)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if let Some(gated) = self.gated.take() {
            gated.close();
            if let Some(cg) = &self.cgroup {
                cg.remove();
            }
            finish_reader(self.reader.take(), &SystemClock);
        }
    }
}

/// Lets a step's output reader drain what is left, within a bound.
fn finish_reader(reader: Option<capture::Reader>, clock: &SystemClock) {
    if let Some(r) = reader {
        r.finish(Duration::from_secs(2), clock);
    }
}

fn spec_limits(spec: &StepSpec) -> Limits {
    Limits {
        timeout: spec.timeout,
        kill_grace: spec.kill_grace,
        first_signal: spec.first_signal,
    }
}

fn other(message: String) -> SpawnFailure {
    SpawnFailure {
        kind: SpawnKind::Other,
        message,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, mpsc};

    use super::*;

    /// One session per process at a time: the signal handlers and the
    /// subreaper attribute are the process's.
    static ONE: Mutex<()> = Mutex::new(());

    /// What the fake store does with a renewal.
    #[derive(Debug)]
    enum Then {
        /// Blocks until the test lets go (or 30 s pass), then says so.
        Stall(mpsc::Receiver<()>, Arc<AtomicBool>),
        /// Answers that the record is someone else's.
        Lost,
    }

    /// A lease in a store that the test drives; every other call succeeds.
    #[derive(Debug)]
    struct Fake {
        ttl: Duration,
        then: Then,
    }

    impl Held for Fake {
        fn ttl(&self) -> Duration {
            self.ttl
        }
        fn renew_wait(&self) -> Duration {
            Duration::from_millis(10)
        }
        fn fence(&self) -> u64 {
            1
        }
        fn token(&self) -> String {
            "token".into()
        }
        fn host(&self) -> &str {
            "here"
        }
        fn describe(&self) -> String {
            "the fake store".into()
        }
        fn set_job_group(
            &mut self,
            _pgid: u32,
            _: baton_lease::Leader,
        ) -> Result<Renewal, HeldError> {
            Ok(Renewal::Renewed)
        }
        fn renew(&mut self) -> Result<Renewal, HeldError> {
            match &self.then {
                Then::Stall(rx, over) => {
                    let _ = rx.recv_timeout(Duration::from_secs(30));
                    over.store(true, Ordering::SeqCst);
                    Ok(Renewal::Unconfirmed("the store did not answer".into()))
                }
                Then::Lost => Ok(Renewal::Lost("the record names another holder".into())),
            }
        }
        fn restate(
            &mut self,
            _run: Option<String>,
            _occ: Option<String>,
            _once: Option<&baton_lease::Once>,
        ) -> Result<Restated, HeldError> {
            Ok(Restated::Done)
        }
        fn withdraw(&mut self, _once: &baton_lease::Once) -> Result<Option<Renewal>, HeldError> {
            Ok(Some(Renewal::Renewed))
        }
        fn release(self: Box<Self>) -> Result<Release, HeldError> {
            Ok(Release::Released)
        }
    }

    fn step(script: &str) -> StepSpec {
        let mut spec = StepSpec::new("sh", vec!["-c".into(), script.into()]);
        spec.stdin = Stdin::Null;
        spec.kill_grace = Duration::from_millis(500);
        spec
    }

    fn session_of(fake: Fake, report: &mut dyn Report) -> Session<'_> {
        Session::start(Box::new(fake), SessionConfig::default(), report)
            .unwrap_or_else(|_| panic!("the session did not start"))
    }

    #[test]
    fn a_renewal_that_never_answers_does_not_delay_the_stop_of_the_job() {
        let _one = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let (let_go, rx) = mpsc::channel();
        let over = Arc::new(AtomicBool::new(false));
        let fake = Fake {
            ttl: Duration::from_millis(600),
            then: Then::Stall(rx, Arc::clone(&over)),
        };
        let mut events = Vec::new();
        let mut report = |e: Event| events.push(e);
        let mut s = session_of(fake, &mut report);
        let r = s.run(step("exec sleep 60"));
        // The job was stopped while the renewal was still stalled: the
        // supervisor's deadline did not wait for it.
        let stalled = !over.load(Ordering::SeqCst);
        drop(let_go);
        assert_eq!(r.ending, Ending::LeaseLost);
        assert!(
            stalled,
            "the job was stopped only once the renewal answered"
        );
        assert!(s.lost().is_some_and(|w| w.contains("could not renew")));
        assert!(matches!(s.finish(), Finish::Lost(_)));
    }

    #[test]
    fn a_command_that_exited_before_its_lease_was_lost_keeps_its_own_ending() {
        let _one = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let fake = || Fake {
            ttl: Duration::from_millis(300),
            then: Then::Lost,
        };
        let mut report = |_: Event| {};
        // The command exits 0 at once and leaves a process that ignores
        // SIGTERM: the step lasts the kill grace, and the first renewal,
        // 100 ms in, finds the lease lost. The grace is long, so that the
        // renewal lands inside it however loaded the machine; and the
        // command exits only once the process ignores SIGTERM (it says so
        // through the pipe), so a loaded machine cannot end the step first.
        let mut s = session_of(fake(), &mut report);
        let mut lingering =
            step("{ (trap '' TERM; echo up; exec sleep 10 >/dev/null) & } | read up; exit 0");
        lingering.kill_grace = Duration::from_secs(2);
        let r = s.run(lingering);
        assert!(s.lost().is_some());
        assert_eq!(r.ending, Ending::Exited(0));
        assert_eq!(r.code, Some(0));
        // A later step does not run.
        assert_eq!(s.run(step("exit 0")).ending, Ending::LeaseLost);
        let _ = s.finish();
        // A command still running when the lease is found lost is stopped.
        let mut s = session_of(fake(), &mut report);
        let r = s.run(step("exec sleep 60"));
        assert_eq!(r.ending, Ending::LeaseLost);
        assert_eq!(r.code, None);
        let _ = s.finish();
    }

    #[test]
    fn a_prepared_step_runs_its_command_only_when_run_and_never_once_dropped() {
        let _one = ONE
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A TTL long enough that no renewal comes during the test.
        let (_keep, rx) = mpsc::channel();
        let fake = Fake {
            ttl: Duration::from_secs(600),
            then: Then::Stall(rx, Arc::new(AtomicBool::new(false))),
        };
        let mut report = |_: Event| {};
        let mut s = session_of(fake, &mut report);
        let dir = tempfile::tempdir().unwrap();
        let ran = dir.path().join("ran");
        let script = format!("touch {}", ran.display());
        let prepared = s
            .prepare(step(&script))
            .unwrap_or_else(|e| panic!("not prepared: {:?}", e.ending));
        let pid = prepared.pid;
        assert!(
            std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the step is not held at its gate"
        );
        drop(prepared);
        // Dropped: its process left at the gate and was reaped, and the
        // command never ran.
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "the held step outlived its drop"
        );
        assert!(!ran.exists(), "a dropped step ran its command");
        let prepared = s
            .prepare(step(&script))
            .unwrap_or_else(|e| panic!("not prepared: {:?}", e.ending));
        let r = s.run_prepared(prepared);
        assert_eq!(r.ending, Ending::Exited(0));
        assert!(ran.exists(), "a prepared step run did not run its command");
        let _ = s.finish();
    }
}
