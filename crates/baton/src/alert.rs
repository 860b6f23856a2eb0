//! `baton exec`'s alerts: one line on stderr, and the same event as one line
//! of JSON on the stdin of `--alert-command`, for the kinds selected with
//! `--alert-on` (by default every kind but `busy`: a skip because a healthy
//! holder runs is what `flock -n` does silently, and cron would mail it).
//!
//! The alert command runs through `sh -c` in a process group of its own,
//! with its stdout sent to baton's stderr, bounded by [`ALERT_TIMEOUT`]
//! (then its whole group is stopped). Its failure is reported on stderr and
//! never changes baton's exit code or the run: an alert must not be able to
//! break the thing it reports on. Alert commands run on threads of their own
//! so a slow one never delays a renewal.

use std::thread::JoinHandle;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};
use baton_runner::HookCommand;
use serde::Serialize;

/// How long an alert command may run before its group is stopped.
pub const ALERT_TIMEOUT: Duration = Duration::from_secs(10);

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The lock was busy with a healthy holder; the command did not run.
    Busy,
    /// The holder is alive but has stopped renewing.
    Hung,
    /// The holder is gone but its job still runs.
    Orphaned,
    /// The lock file holds a foreign or unreadable record.
    VersionConflict,
    /// The lease was lost while the command ran; the command was stopped.
    LeaseLost,
    /// A run passed its `--max-runtime` budget (this one, or the holder that
    /// made this one skip).
    Overrunning,
    /// The command ran past `--timeout` and was stopped.
    Timeout,
    /// The command exited with a nonzero status or died of a signal.
    Failed,
    /// The kernel refused the PID namespace that makes the command's whole
    /// tree die with baton: processes it detaches may outlive a killed
    /// baton.
    Uncontained,
}

impl Kind {
    /// Every kind, in the order `--help` lists them.
    pub const ALL: [Kind; 9] = [
        Kind::Busy,
        Kind::Hung,
        Kind::Orphaned,
        Kind::VersionConflict,
        Kind::LeaseLost,
        Kind::Overrunning,
        Kind::Timeout,
        Kind::Failed,
        Kind::Uncontained,
    ];

    /// The name used in JSON and by `--alert-on`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Busy => "busy",
            Kind::Hung => "hung",
            Kind::Orphaned => "orphaned",
            Kind::VersionConflict => "version-conflict",
            Kind::LeaseLost => "lease-lost",
            Kind::Overrunning => "overrunning",
            Kind::Timeout => "timeout",
            Kind::Failed => "failed",
            Kind::Uncontained => "uncontained",
        }
    }

    /// Parses a `--alert-on` list (`all` and `none` included).
    pub fn parse_list(s: &str) -> Result<Vec<Kind>, String> {
        let mut out = Vec::new();
        for word in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match word {
                "all" => out.extend(Kind::ALL),
                "none" => {}
                w => match Kind::ALL.iter().find(|k| k.name() == w) {
                    Some(k) => out.push(*k),
                    None => {
                        let names: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
                        return Err(format!(
                            "{w:?} is not an alert kind; use a comma-separated list of {}, or \
                             all or none",
                            names.join(", ")
                        ));
                    }
                },
            }
        }
        Ok(out)
    }

    /// The kinds alerted when `--alert-on` is not given.
    pub fn defaults() -> Vec<Kind> {
        Kind::ALL.into_iter().filter(|k| *k != Kind::Busy).collect()
    }
}

pub use baton_sched::alerts::HolderInfo;

/// One alert: the JSON object `--alert-command` reads (one line, ending in
/// a newline).
#[derive(Debug, Clone, Serialize)]
pub struct Alert {
    /// What happened.
    pub kind: Kind,
    /// The lock file.
    pub lock: String,
    /// The lock's name, when it has one.
    pub name: Option<String>,
    /// The holder, when another process holds the lock.
    pub holder: Option<HolderInfo>,
    /// This run's id, when it ran.
    pub run_id: Option<String>,
    /// This run's fence, when it ran.
    pub fence: Option<u64>,
    /// When this alert was raised.
    pub time: String,
    /// The same line as on stderr.
    pub message: String,
    /// The command's exit status, for `failed`.
    pub status: Option<i32>,
}

/// Where alerts go.
#[derive(Debug)]
pub struct Alerts {
    command: Option<String>,
    on: Vec<Kind>,
    quiet: bool,
    verbose: bool,
    running: Vec<JoinHandle<()>>,
}

impl Alerts {
    /// Alerts of the kinds in `on` to stderr (unless `quiet`) and to
    /// `command`; other kinds only on stderr with `verbose`.
    pub fn new(command: Option<String>, on: Vec<Kind>, quiet: bool, verbose: bool) -> Self {
        Self {
            command,
            on,
            quiet,
            verbose,
            running: Vec::new(),
        }
    }

    /// A line of information on stderr, unless `--quiet`.
    pub fn note(&self, line: std::fmt::Arguments<'_>) {
        if !self.quiet {
            say!("baton: {line}");
        }
    }

    /// Raises an alert: the stderr line now, the command on a thread.
    pub fn raise(&mut self, alert: Alert) {
        let selected = self.on.contains(&alert.kind);
        if (selected && !self.quiet) || (!selected && self.verbose) {
            say!("baton: {}", alert.message);
        }
        if !selected {
            return;
        }
        let Some(cmd) = self.command.clone() else {
            return;
        };
        self.running
            .push(std::thread::spawn(move || run_command(&cmd, &alert)));
    }

    /// Waits for every alert command started (each is bounded in time).
    pub fn finish(&mut self) {
        for h in self.running.drain(..) {
            let _ = h.join();
        }
    }
}

fn run_command(cmd: &str, alert: &Alert) {
    let mut json = match serde_json::to_vec(alert) {
        Ok(j) => j,
        Err(e) => return say!("baton: failed to encode an alert: {e}"),
    };
    json.push(b'\n');
    let hook = HookCommand::Shell(cmd.to_owned());
    match baton_runner::hook::run(&hook, &json, &[], stderr_copy(), ALERT_TIMEOUT) {
        baton_runner::HookOutcome::Done => {}
        other => say!("baton: the alert command {hook} {other}"),
    }
}

/// A copy of stderr for a child's stdout, so an alert command never writes
/// into the job's output; nowhere, when stderr cannot be copied.
fn stderr_copy() -> std::process::Stdio {
    use std::os::fd::AsFd;
    std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_or_else(|_| std::process::Stdio::null(), std::process::Stdio::from)
}

/// Now, as RFC 3339.
pub fn now_text() -> String {
    SystemClock.wall().to_string()
}
