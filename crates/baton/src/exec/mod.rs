//! `baton exec`: take the lease, run the command in its own process group,
//! renew while it runs, stop it if the lease is lost, release on every path.
//!
//! This module owns one run from acquisition to release. It never runs the
//! command without a lease, never lets the command start before its group is
//! on the record ([`child`]), and never releases while a member of the group
//! may still run ([`supervise`]). A refusal (busy, hung, orphaned, foreign
//! record) runs nothing and exits with the busy code.

pub mod child;
pub mod config;
mod supervise;

use std::time::Duration;

use baton_lease::{Clock, Lease, Outcome, Renewal, SystemClock};

use crate::alert::{Alert, Alerts, HolderInfo, Kind};
use crate::duration::show;
use crate::exit::Exit;
use config::ExecConfig;

/// Runs `cfg` to its end and says how to exit.
pub fn run(cfg: &ExecConfig) -> Exit {
    let mut alerts = Alerts::new(cfg.alert_command.clone());
    let exit = run_with(cfg, &mut alerts);
    alerts.finish();
    exit
}

fn run_with(cfg: &ExecConfig, alerts: &mut Alerts) -> Exit {
    let lock = cfg.lock();
    let claim = baton_lease::Claim {
        run: Some(cfg.run_id.clone()),
        occ: None,
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
            return Exit::Failure;
        }
    };
    if let baton_lease::Verdict::Dead { holder, evidence } = lease.replaced() {
        say!("baton: took over the lease of a dead holder ({holder}): {evidence}");
    } else if let baton_lease::Verdict::Expired { holder, .. } = lease.replaced() {
        say!("baton: took over an expired lease ({holder})");
    }
    start(cfg, lease, alerts)
}

fn start(cfg: &ExecConfig, mut lease: Lease, alerts: &mut Alerts) -> Exit {
    let mut cmd = std::process::Command::new(&cfg.command[0]);
    cmd.args(&cfg.command[1..])
        .env("BATON_LOCK", &cfg.lock)
        .env("BATON_TOKEN", lease.token().to_string())
        .env("BATON_FENCE", lease.fence().to_string())
        .env("BATON_RUN_ID", &cfg.run_id);
    // The job's detached processes (setsid, a double fork) stay baton's
    // descendants, so they are stopped and waited for with the job.
    if let Err(e) = baton_lease::job::become_subreaper() {
        say!("baton: cannot adopt the job's detached processes ({e}); only its group is tracked");
    }
    // Signals are caught before the child exists, so none is lost between.
    let signals = match supervise::Signals::install() {
        Ok(s) => s,
        Err(e) => {
            say!("baton: failed to install signal handlers: {e}");
            return release(cfg, lease, Exit::Failure, alerts);
        }
    };
    let gated = match child::spawn_gated(cmd) {
        Ok(g) => g,
        Err(e) => {
            say!("baton: failed to start {:?}: {e}", cfg.command[0]);
            return release(cfg, lease, spawn_exit(&e), alerts);
        }
    };
    let renewed = SystemClock.boot();
    match lease.set_job_group(gated.pid()) {
        Ok(Renewal::Renewed) => {}
        Ok(Renewal::Lost(lost)) => {
            gated.close();
            alerts.raise(run_alert(
                cfg,
                &lease,
                Kind::LeaseLost,
                format!("{lost}; the command did not run"),
            ));
            return Exit::LeaseLost;
        }
        Ok(Renewal::Unconfirmed(busy)) => {
            gated.close();
            say!(
                "baton: could not record the command's process group in {} ({busy}); the command did not run",
                cfg.lock.display()
            );
            return release(cfg, lease, Exit::Failure, alerts);
        }
        Err(e) => {
            gated.close();
            say!("baton: {e}; the command did not run");
            return release(cfg, lease, Exit::Failure, alerts);
        }
    }
    // A signal that arrived before the command started stops it from starting.
    if let Some(sig) = signals.pending() {
        gated.close();
        say!("baton: received signal {sig} before the command started; it did not run");
        let code = u8::try_from(128 + sig).unwrap_or(255);
        return release(cfg, lease, Exit::Child(code), alerts);
    }
    let child = match gated.open() {
        child::Started::Running(c) => c,
        child::Started::Failed(e) => {
            say!("baton: failed to run {:?}: {e}", cfg.command[0]);
            return release(cfg, lease, spawn_exit(&e), alerts);
        }
    };
    supervise::Supervisor::new(cfg, lease, renewed, child, signals, alerts).run()
}

/// The exit code for a command that could not be started.
fn spawn_exit(e: &std::io::Error) -> Exit {
    match e.kind() {
        std::io::ErrorKind::NotFound => Exit::NotFound,
        std::io::ErrorKind::PermissionDenied => Exit::NotExecutable,
        _ if e.raw_os_error() == Some(rustix::io::Errno::NOEXEC.raw_os_error()) => {
            Exit::NotExecutable
        }
        _ if e.raw_os_error() == Some(rustix::io::Errno::ISDIR.raw_os_error()) => {
            Exit::NotExecutable
        }
        _ => Exit::Failure,
    }
}

/// Releases (token-checked) and settles the exit code.
fn release(cfg: &ExecConfig, lease: Lease, exit: Exit, alerts: &mut Alerts) -> Exit {
    let fence = lease.fence();
    match lease.release() {
        Ok(baton_lease::Release::Released) => exit,
        Ok(baton_lease::Release::Lost(lost)) => {
            alerts.raise(Alert {
                kind: Kind::LeaseLost,
                lock: cfg.lock.display().to_string(),
                name: cfg.name.clone(),
                holder: None,
                run_id: Some(cfg.run_id.clone()),
                fence: Some(fence.get()),
                time: crate::alert::now_text(),
                message: format!("{lost}; this run's release changed nothing"),
                status: None,
            });
            Exit::LeaseLost
        }
        Ok(baton_lease::Release::Unconfirmed(b)) => {
            say!(
                "baton: could not release {} ({b}); it frees itself once this process has exited",
                cfg.lock.display()
            );
            exit
        }
        Err(e) => {
            say!("baton: {e}; the lease frees itself once this process has exited");
            exit
        }
    }
}

fn refusal_alert(cfg: &ExecConfig, refused: &Outcome) -> Alert {
    let (kind, holder) = match refused {
        Outcome::Busy(baton_lease::Busy::Held { holder, .. }) => (Kind::Busy, Some(holder)),
        Outcome::Busy(_) | Outcome::Acquired(_) => (Kind::Busy, None),
        Outcome::Hung { holder, .. } => (Kind::Hung, Some(holder)),
        Outcome::Orphaned { holder, .. } => (Kind::Orphaned, Some(holder)),
        Outcome::VersionConflict(_) => (Kind::VersionConflict, None),
    };
    let label = cfg
        .name
        .clone()
        .unwrap_or_else(|| cfg.lock.display().to_string());
    let mut message = format!("{label}: not run, {}", refused.describe());
    if let Some(h) = holder {
        let now = SystemClock.wall();
        let age = |t: Option<jiff::Timestamp>| {
            t.and_then(|t| Duration::try_from(now.duration_since(t)).ok())
                .map(show)
        };
        if let (Some(held), Some(renewed)) = (age(h.acquired()), age(h.renewed())) {
            message.push_str(&format!(" (held for {held}, last renewed {renewed} ago)"));
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

fn run_alert(cfg: &ExecConfig, lease: &Lease, kind: Kind, message: String) -> Alert {
    Alert {
        kind,
        lock: cfg.lock.display().to_string(),
        name: cfg.name.clone(),
        holder: None,
        run_id: Some(cfg.run_id.clone()),
        fence: Some(lease.fence().get()),
        time: crate::alert::now_text(),
        message,
        status: None,
    }
}
