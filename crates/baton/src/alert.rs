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

use baton_lease::{Clock, SystemClock};
use baton_runner::HookCommand;
use baton_sched::engine::alerts::ALERT_TIMEOUT;
use baton_store::words::AlertKind;
use serde::Serialize;

/// The kinds `baton exec` raises, in the order `--help` lists them: what
/// `--alert-on` chooses from, and what its `all` means.
pub const KINDS: [AlertKind; 9] = [
    AlertKind::Busy,
    AlertKind::Hung,
    AlertKind::Orphaned,
    AlertKind::VersionConflict,
    AlertKind::LeaseLost,
    AlertKind::Overrunning,
    AlertKind::Timeout,
    AlertKind::Failed,
    AlertKind::Uncontained,
];

/// Parses a `--alert-on` list (`all` and `none` included).
pub fn parse_list(s: &str) -> Result<Vec<AlertKind>, String> {
    let mut out = Vec::new();
    for word in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word {
            "all" => out.extend(KINDS),
            "none" => {}
            w => match w.parse().ok().filter(|k| KINDS.contains(k)) {
                Some(k) => out.push(k),
                None => {
                    let names: Vec<&str> = KINDS.iter().map(|k| k.as_str()).collect();
                    return Err(format!(
                        "{w:?} is not an alert kind; use a comma-separated list of {}, or all or \
                         none",
                        names.join(", ")
                    ));
                }
            },
        }
    }
    Ok(out)
}

/// The kinds alerted when `--alert-on` is not given.
pub fn defaults() -> Vec<AlertKind> {
    KINDS
        .into_iter()
        .filter(|k| *k != AlertKind::Busy)
        .collect()
}

pub use baton_sched::engine::alerts::HolderInfo;

/// One alert: the JSON object `--alert-command` reads (one line, ending in
/// a newline).
#[derive(Debug, Clone, Serialize)]
pub struct Alert {
    /// What happened.
    pub kind: AlertKind,
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
    /// The command's exit status, for `failed`, and for a `lease-lost`
    /// found only at the release, after the command had ended on its own.
    pub status: Option<i32>,
}

/// Where alerts go.
#[derive(Debug)]
pub struct Alerts {
    command: Option<String>,
    on: Vec<AlertKind>,
    quiet: bool,
    verbose: bool,
    running: Vec<JoinHandle<()>>,
}

impl Alerts {
    /// Alerts of the kinds in `on` to stderr (unless `quiet`) and to
    /// `command`; other kinds only on stderr with `verbose`.
    pub fn new(command: Option<String>, on: Vec<AlertKind>, quiet: bool, verbose: bool) -> Self {
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
