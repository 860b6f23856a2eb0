//! A command job's occurrence ([`crate::Job::command`]): a `baton __run`
//! process of the `baton` binary, the code the command line's `tick` and
//! daemon run, given the job as a configuration on its standard input.
//! That process takes the job's lease and claims the occurrence, records
//! the run in the ledger, runs the command under the runner (its whole
//! process tree stopped when the lease is lost) and releases the lease;
//! this module starts it, counts it in flight, and asks it to stop at the
//! scheduler's shutdown.
//!
//! It never takes a lease, writes a record or starts the command itself:
//! what the runner does for the command line's jobs it does here too,
//! whether or not the service lives on. The runner's environment holds
//! none of the service's `BATON_*` variables (a `BATON_STATE_DIR` there
//! would point the run at another store's locks): the store is named in
//! the configuration alone.

use std::process::Stdio;

use tokio::io::AsyncWriteExt;

use crate::env::Env;
use crate::plan::Plan;

/// What a run is for, as `baton __run` takes it.
pub(crate) enum Start {
    /// A scheduled occurrence (Unix seconds).
    At(i64),
    /// Only what waits in the job's queue.
    Queue,
}

/// Runs `start` of the command job `plan` as a `baton __run` process, and
/// waits for it to end; at the scheduler's shutdown, asks it to stop
/// (SIGTERM: its command's tree is stopped, the run recorded
/// `interrupted`, the lease released) and waits for that.
pub(crate) async fn run(env: &Env, plan: &Plan, start: Start) {
    let Some(runner) = env.runner.as_ref() else {
        return; // Checked at build: a command job has a runner.
    };
    let Some(snapshot) = runner.snapshots.get(&plan.name) else {
        return;
    };
    if env.shutdown.borrow().is_some() {
        return;
    }
    let mut cmd = tokio::process::Command::new(&runner.exe);
    cmd.arg("__run").arg("--job").arg(&plan.name);
    match start {
        Start::At(at) => cmd.arg("--at").arg(at.to_string()),
        Start::Queue => cmd.arg("--queue"),
    };
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("BATON_") || k == "TRACEPARENT" {
            cmd.env_remove(k);
        }
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(false);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let message = format!(
                "{}: not run: failed to start {} __run: {e}",
                describe(&start),
                runner.exe.display()
            );
            not_run(env, plan, &start, message).await;
            return;
        }
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A runner that died before reading says so by its exit.
        let _ = stdin.write_all(snapshot.as_bytes()).await;
        let _ = stdin.shutdown().await;
    }
    let mut shutdown = env.shutdown.clone();
    let ended = tokio::select! {
        s = child.wait() => Some(s),
        _ = shutdown.wait_for(Option::is_some) => None,
    };
    let status = match ended {
        Some(s) => s,
        None => {
            let pid = child
                .id()
                .and_then(|p| rustix::process::Pid::from_raw(p.cast_signed()));
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            child.wait().await
        }
    };
    match status {
        Ok(s) if s.success() => {}
        // It could not run at all (exit 2: its configuration refused, the
        // store unusable): nothing of it may be in the ledger.
        Ok(s) if s.code() == Some(2) => {
            let message = format!(
                "{}: its runner ended {s} without running it; its standard error says why",
                describe(&start)
            );
            not_run(env, plan, &start, message).await;
        }
        // The run's own failures are recorded and alerted by the runner.
        Ok(s) => tracing::info!("{}: its runner ended {s}", plan.name),
        Err(e) => tracing::warn!("{}: its runner could not be waited for: {e}", plan.name),
    }
}

/// What `start` is, for people.
fn describe(start: &Start) -> String {
    match start {
        Start::At(at) => format!("occurrence {}", occurrence(*at)),
        Start::Queue => "its queue".to_owned(),
    }
}

fn occurrence(at: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(at).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

/// Raises a `missed` alert for `start` of `plan`, which its runner could
/// not run: to the service's hook and the ledger, as every alert.
async fn not_run(env: &Env, plan: &Plan, start: &Start, message: String) {
    let alert = crate::Alert {
        job: plan.name.clone(),
        kind: baton_store::words::AlertKind::Missed,
        run_id: None,
        occurrence: match start {
            Start::At(at) => Some(occurrence(*at)),
            Start::Queue => None,
        },
        message,
        time: env.clock.wall(),
    };
    match crate::ledgers::Ledger::open(env).await {
        Some(mut ledger) => crate::alert::raise(env, &mut ledger, alert).await,
        None => tracing::warn!("{}: {}", alert.job, alert.message),
    }
}
