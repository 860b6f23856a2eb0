//! `baton exec`: take the lease, run the command as one step of a
//! [`baton_runner::Session`], release; or skip it when the lock is not free.
//!
//! This module owns the command-line view of one run: which refusals alert
//! and which are quiet, what each runner event means for the operator, and
//! the exit code. The supervision itself (renewal, self-fencing, the
//! whole-tree stop, signals) is the runner's, shared with the scheduler. A
//! refusal (busy, hung, orphaned, foreign record) runs nothing and exits with
//! the busy code.

pub mod config;
mod trace;

use std::time::Duration;

use baton_lease::{Clock, Lease, Outcome, SystemClock};
use baton_runner::{Event, Finish, Session, SessionConfig, Stdin, StepSpec};
use baton_store::words::AlertKind;

use crate::alert::{Alert, Alerts, HolderInfo};
use crate::exit::Exit;
use baton_sched::units::show_duration as show;
use config::ExecConfig;

/// Runs `cfg` to its end and says how to exit.
pub fn run(cfg: &ExecConfig) -> Exit {
    let mut alerts = Alerts::new(
        cfg.alert_command.clone(),
        cfg.alert_on.clone(),
        cfg.quiet,
        cfg.verbose,
    );
    let exit = run_with(cfg, &mut alerts);
    alerts.finish();
    exit
}

fn run_with(cfg: &ExecConfig, alerts: &mut Alerts) -> Exit {
    let lock = cfg.lock();
    let claim = baton_lease::Claim {
        run: Some(cfg.run_id.clone()),
        budget: cfg.max_runtime,
        ..baton_lease::Claim::default()
    };
    let outcome = match cfg.wait {
        Some(w) => lock.acquire_wait(&claim, w),
        None => lock.try_acquire_as(&claim),
    };
    let lease = match outcome {
        Ok(Outcome::Acquired(lease)) => lease,
        Ok(refused) => {
            alerts.raise(refusal_alert(cfg, &refused));
            return Exit::Busy(cfg.busy_exit);
        }
        Err(e) => {
            say!("baton: {e}");
            return Exit::of_error(&e);
        }
    };
    match lease.replaced() {
        baton_lease::Verdict::Dead { holder, evidence } => alerts.note(format_args!(
            "took over the lease of a dead holder ({holder}): {evidence}"
        )),
        baton_lease::Verdict::Expired { holder, .. } => {
            alerts.note(format_args!("took over an expired lease ({holder})"))
        }
        baton_lease::Verdict::Abandoned { age } => alerts.note(format_args!(
            "took over an empty lock file left {} ago (by flock(1), or a writer that died)",
            show(Duration::try_from(*age).unwrap_or_default())
        )),
        _ => {}
    }
    start(cfg, lease, alerts)
}

/// The runner's events, as `baton exec` reports them.
struct Events<'a> {
    cfg: &'a ExecConfig,
    alerts: &'a mut Alerts,
    fence: u64,
}

impl baton_runner::Report for Events<'_> {
    fn event(&mut self, e: Event) {
        let label = self.cfg.label();
        let (kind, message) = match e {
            Event::Overrunning { budget } => (
                AlertKind::Overrunning,
                format!(
                    "{label}: still running after its budget of {}; it keeps its lease",
                    show(budget)
                ),
            ),
            Event::TimedOut { after } => (
                AlertKind::Timeout,
                format!(
                    "{label}: timed out after {}; stopping the command",
                    show(after)
                ),
            ),
            Event::LeaseLost { why } => (
                AlertKind::LeaseLost,
                format!("{label}: {why}; stopping the command"),
            ),
            Event::RenewTrouble { why } => return self.alerts.note(format_args!("{why}")),
            // `baton exec` listens to no request to stop ([`baton_runner::StopAsk`]).
            Event::Replaced { why } => return self.alerts.note(format_args!("{why}")),
            Event::Leftovers { count } => {
                return self.alerts.note(format_args!(
                    "the command exited and left {count} process{} running (in its group or \
                     detached); stopping them before the lease is released",
                    if count == 1 { "" } else { "es" }
                ));
            }
            Event::Stuck { pids, after } => {
                // Not an alert kind of its own: the lease stays held, and a
                // later run reports it as orphaned or busy.
                say!(
                    "baton: {label}: processes {pids:?} still run {} after they were sent \
                     SIGKILL; baton keeps the lease and keeps trying",
                    show(after)
                );
                return;
            }
            Event::Forwarded { .. } => return,
            Event::NoCgroup { why } => return self.alerts.note(format_args!("{why}")),
            Event::Unseen { why, stopping } => {
                // Not an alert kind of its own, as `Stuck`: the lease stays
                // held, and a later run reports it as busy.
                say!(
                    "baton: {label}: the command exited, and whether processes it started still \
                     run cannot be seen ({why}); {}; baton keeps the lease until they are gone \
                     (raise its open-file limit: prlimit --pid {} --nofile=…)",
                    if stopping {
                        "stopping its whole PID namespace"
                    } else {
                        "nothing can be found to stop"
                    },
                    std::process::id()
                );
                return;
            }
            Event::Uncontained { why } => (
                AlertKind::Uncontained,
                format!(
                    "{label}: runs without a PID namespace ({why}); if baton is killed, processes \
                     the command detached from its group may outlive it (--no-contain asks for \
                     this and does not alert)"
                ),
            ),
        };
        let a = run_alert(self.cfg, self.fence, kind, message);
        self.alerts.raise(a);
    }
}

fn start(cfg: &ExecConfig, lease: Lease, alerts: &mut Alerts) -> Exit {
    let fence = lease.fence().get();
    let mut spec = StepSpec::new(cfg.command[0].clone(), cfg.command[1..].to_vec());
    spec.env = vec![
        ("BATON_LOCK".into(), cfg.lock.clone().into_os_string()),
        ("BATON_TOKEN".into(), lease.token().to_string().into()),
        ("BATON_FENCE".into(), fence.to_string().into()),
        ("BATON_RUN_ID".into(), cfg.run_id.clone().into()),
    ];
    let trace = trace::ExecTrace::start(cfg);
    spec.env
        .extend(trace.as_ref().map(trace::ExecTrace::variable));
    spec.timeout = cfg.timeout;
    spec.kill_grace = cfg.kill_grace;
    spec.first_signal = cfg.signal;
    spec.contain = cfg.contain;
    spec.stdin = Stdin::Inherit;
    spec.foreground = true;
    let session_cfg = SessionConfig {
        max_runtime: cfg.max_runtime,
        cgroup: cfg.cgroup.clone(),
        label: cfg.run_id.clone(),
        stop_on_signal: false,
    };
    let mut events = Events { cfg, alerts, fence };
    let mut session = match Session::start(Box::new(lease), session_cfg, &mut events) {
        Ok(s) => s,
        Err(failed) => {
            let (lease, e) = *failed;
            say!("baton: cannot supervise the run: {e}");
            let _ = lease.release();
            return Exit::Failure;
        }
    };
    let result = session.run(spec);
    let host = session.lease().host().to_owned();
    let finish = session.finish();
    let mut exit = Exit::of(&result.ending);
    match &result.ending {
        baton_runner::Ending::NotStarted(f) => say!("baton: {}", f.message),
        baton_runner::Ending::Exited(_) | baton_runner::Ending::Signaled(_)
            if !result.ending.success() && result.interrupted.is_none() =>
        {
            let mut a = run_alert(
                cfg,
                fence,
                AlertKind::Failed,
                format!("{}: the command {}", cfg.label(), result.ending.describe()),
            );
            a.status = Some(i32::from(exit.code()));
            alerts.raise(a);
        }
        _ => {}
    }
    match finish {
        Finish::Released => {}
        Finish::Lost(why) => {
            if exit != Exit::LeaseLost {
                // Found only at the release: the command had ended on its
                // own, and the alert says how, since 76 hides its status.
                let mut a = run_alert(
                    cfg,
                    fence,
                    AlertKind::LeaseLost,
                    format!(
                        "{}: {why}, found when the lease was released; the command had \
                         already ended on its own ({}) and was not stopped",
                        cfg.label(),
                        result.ending.describe()
                    ),
                );
                a.status = Some(i32::from(exit.code()));
                alerts.raise(a);
            }
            exit = Exit::LeaseLost;
        }
        Finish::Unconfirmed(why) => say!("baton: {why}"),
    }
    if let Some(t) = trace {
        t.send(cfg, (fence, &host), &result, exit);
    }
    exit
}

fn refusal_alert(cfg: &ExecConfig, refused: &Outcome) -> Alert {
    let now = SystemClock.wall();
    let (kind, holder) = match refused {
        Outcome::Busy(baton_lease::Busy::Held { holder, .. }) => {
            let over = holder_over_budget(holder, now);
            (
                if over {
                    AlertKind::Overrunning
                } else {
                    AlertKind::Busy
                },
                Some(holder),
            )
        }
        Outcome::Busy(_) | Outcome::Acquired(_) | Outcome::Claimed { .. } => {
            (AlertKind::Busy, None)
        }
        Outcome::Hung { holder, .. } => (AlertKind::Hung, Some(holder)),
        Outcome::Orphaned { holder, .. } => (AlertKind::Orphaned, Some(holder)),
        Outcome::VersionConflict(_) => (AlertKind::VersionConflict, None),
    };
    let mut message = format!("{}: not run, {}", cfg.label(), refused.describe());
    if let Some(h) = holder {
        let age = |t: Option<jiff::Timestamp>| {
            t.and_then(|t| Duration::try_from(now.duration_since(t)).ok())
                .map(show)
        };
        if let (Some(held), Some(renewed)) = (age(h.acquired()), age(h.renewed())) {
            message.push_str(&format!(" (held for {held}, last renewed {renewed} ago)"));
        }
        if kind == AlertKind::Overrunning {
            message.push_str("; the holder is past its --max-runtime budget");
        }
    }
    Alert {
        kind,
        lock: cfg.lock.display().to_string(),
        name: cfg.name.clone(),
        holder: holder.map(HolderInfo::of),
        run_id: None,
        fence: None,
        time: crate::alert::now_text(),
        message,
        status: None,
    }
}

/// Whether a live holder has held its lease past the budget it declared
/// ([`baton_lease::overran`]): `baton exec` runs one command per lease, so
/// the lease's age is its run's.
fn holder_over_budget(holder: &baton_lease::Holder, now: jiff::Timestamp) -> bool {
    holder
        .acquired()
        .is_some_and(|acquired| holder.overrunning(acquired, now))
}

fn run_alert(cfg: &ExecConfig, fence: u64, kind: AlertKind, message: String) -> Alert {
    Alert {
        kind,
        lock: cfg.lock.display().to_string(),
        name: cfg.name.clone(),
        holder: None,
        run_id: Some(cfg.run_id.clone()),
        fence: Some(fence),
        time: crate::alert::now_text(),
        message,
        status: None,
    }
}
