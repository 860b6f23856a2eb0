//! Helper commands: short programs the runner's caller starts to tell people
//! something (an alert command), with a JSON document on their standard
//! input.
//!
//! A hook runs in a process group of its own, bounded in time: past its
//! limit the whole group gets SIGTERM, then SIGKILL a second later, so a
//! hook that started `sleep 100` does not leave it running. Its failure is
//! reported to the caller and never raised further: a hook must not be able
//! to break the run it reports on. While a hook runs, its group is known to
//! the `crate::tree` scans, which never count it as part of a job.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

/// The groups (and pids: each hook leads its group) of hooks now running.
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// How a hook is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookCommand {
    /// A command line, run by `/bin/sh -c`.
    Shell(String),
    /// A program and its arguments, run directly.
    Argv(Vec<String>),
}

impl std::fmt::Display for HookCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Shell(s) => write!(f, "{s:?}"),
            Self::Argv(a) => write!(f, "{a:?}"),
        }
    }
}

/// What became of a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// It exited 0.
    Done,
    /// It exited otherwise; the text says how.
    Failed(String),
    /// It ran past its limit; its group was stopped.
    TimedOut(Duration),
    /// It could not be started.
    NotStarted(String),
}

impl std::fmt::Display for HookOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Done => f.write_str("done"),
            Self::Failed(how) => write!(f, "failed: {how}"),
            Self::TimedOut(d) => write!(
                f,
                "ran longer than {} and was stopped (its whole process group)",
                crate::limits::show(*d)
            ),
            Self::NotStarted(e) => write!(f, "could not be started: {e}"),
        }
    }
}

/// The process groups of hooks now running.
pub(crate) fn groups() -> Vec<u32> {
    RUNNING.lock().map(|r| r.clone()).unwrap_or_default()
}

/// The pids of hooks now running (each leads its own group).
pub(crate) fn pids() -> Vec<u32> {
    groups()
}

/// Runs `f` while no hook runs, none able to start meanwhile (the registry
/// is held across it); `None`, without running it, while one runs.
pub(crate) fn while_none_runs<T>(f: impl FnOnce() -> T) -> Option<T> {
    let running = RUNNING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    running.is_empty().then(f)
}

/// Runs `cmd` with `input` on its standard input and `env` added to its
/// environment; its standard output goes to `stdout`. Waits for it, at most
/// `limit`.
pub fn run(
    cmd: &HookCommand,
    input: &[u8],
    env: &[(String, String)],
    stdout: Stdio,
    limit: Duration,
) -> HookOutcome {
    use std::os::unix::process::CommandExt;
    // This thread never takes a signal meant for a session of this process.
    crate::signals::block_in_this_thread();
    let mut c = match cmd {
        HookCommand::Shell(s) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(s);
            c
        }
        HookCommand::Argv(argv) => {
            let Some((prog, args)) = argv.split_first() else {
                return HookOutcome::NotStarted("the command is empty".into());
            };
            let mut c = Command::new(prog);
            c.args(args);
            c
        }
    };
    c.envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(stdout)
        .process_group(0);
    // Registered before it exists, so no scan can see it unregistered: the
    // registry lock is held across the spawn.
    let mut child = {
        let mut running = RUNNING
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match c.spawn() {
            Ok(child) => {
                running.push(child.id());
                child
            }
            Err(e) => return HookOutcome::NotStarted(e.to_string()),
        }
    };
    let pid = child.id();
    let outcome = supervise(&mut child, input, limit);
    if let Ok(mut r) = RUNNING.lock() {
        r.retain(|&p| p != pid);
    }
    outcome
}

fn supervise(child: &mut std::process::Child, input: &[u8], limit: Duration) -> HookOutcome {
    if let Some(mut stdin) = child.stdin.take() {
        // OK to ignore: a hook that does not read its input may close it
        // early; that is its business.
        let _ = stdin.write_all(input);
    }
    let pid = child.id();
    let clock = SystemClock;
    let deadline = clock.boot() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return HookOutcome::Done,
            Ok(Some(status)) => return HookOutcome::Failed(status.to_string()),
            Ok(None) if clock.boot() >= deadline => {
                let _ = baton_lease::job::signal_group(pid, crate::signals::SIGTERM);
                let _ = baton_lease::job::signal_group(pid, crate::signals::SIGCONT);
                let grace_end = clock.boot() + Duration::from_secs(1);
                while clock.boot() < grace_end && baton_lease::job::group_alive(pid) {
                    let _ = child.try_wait();
                    clock.sleep(Duration::from_millis(20));
                }
                let _ = baton_lease::job::signal_group(pid, crate::signals::SIGKILL);
                let _ = child.wait();
                return HookOutcome::TimedOut(limit);
            }
            Ok(None) => {
                clock.sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return HookOutcome::Failed(format!("failed to wait for it: {e}")),
        }
    }
}
