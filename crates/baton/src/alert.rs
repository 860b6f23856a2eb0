//! Alerts: one line on stderr, always, and the same event as a JSON object on
//! the stdin of `--alert-command`, when one is set.
//!
//! The alert command runs through `sh -c`, with its stdout sent to baton's
//! stderr, and is bounded in time ([`ALERT_TIMEOUT`], then killed). Its
//! failure is reported on stderr and never changes baton's exit code or the
//! run: an alert must not be able to break the thing it reports on. Alerts
//! run on threads of their own so a slow one never delays a renewal.

use std::io::Write;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};
use serde::Serialize;

/// How long an alert command may run before it is killed.
pub const ALERT_TIMEOUT: Duration = Duration::from_secs(10);

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// The lock was busy; the command did not run.
    Busy,
    /// The holder is alive but has stopped renewing.
    Hung,
    /// The holder is gone but its job still runs.
    Orphaned,
    /// The lock file holds a foreign or unreadable record.
    VersionConflict,
    /// The lease was lost while the command ran; the command was stopped.
    LeaseLost,
    /// The command ran past its `--max-runtime` budget (a warning only).
    Overrunning,
    /// The command ran past `--timeout` and was stopped.
    Timeout,
    /// The command exited with a nonzero status or died of a signal.
    Failed,
}

/// The holder named in an alert.
#[derive(Debug, Clone, Default, Serialize)]
pub struct HolderInfo {
    /// Pid.
    pub pid: Option<u32>,
    /// Host.
    pub host: Option<String>,
    /// Run id.
    pub run: Option<String>,
    /// Fence.
    pub fence: Option<u64>,
    /// When the lease was taken.
    pub acquired: Option<String>,
    /// When the lease was last renewed.
    pub renewed: Option<String>,
}

impl HolderInfo {
    /// The holder of a record.
    pub fn of(h: &baton_lease::Holder) -> Self {
        Self {
            pid: h.pid(),
            host: h.host().map(str::to_owned),
            run: h.run().map(str::to_owned),
            fence: h.fence().map(|f| f.get()),
            acquired: h.acquired().map(|t| t.to_string()),
            renewed: h.renewed().map(|t| t.to_string()),
        }
    }
}

/// One alert.
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
#[derive(Debug, Default)]
pub struct Alerts {
    command: Option<String>,
    running: Vec<JoinHandle<()>>,
    pids: std::sync::Arc<std::sync::Mutex<Vec<u32>>>,
}

impl Alerts {
    /// Alerts to stderr, and to `command` when given.
    pub fn new(command: Option<String>) -> Self {
        Self {
            command,
            running: Vec::new(),
            pids: Default::default(),
        }
    }

    /// Raises an alert: the stderr line now, the command on a thread.
    pub fn raise(&mut self, alert: Alert) {
        say!("baton: {}", alert.message);
        let Some(cmd) = self.command.clone() else {
            return;
        };
        let pids = std::sync::Arc::clone(&self.pids);
        self.running
            .push(std::thread::spawn(move || run_command(&cmd, &alert, &pids)));
    }

    /// The pids of alert commands started so far: they are not the job.
    pub fn pids(&self) -> Vec<u32> {
        self.pids.lock().map(|p| p.clone()).unwrap_or_default()
    }

    /// Waits for every alert command started (each is bounded in time).
    pub fn finish(&mut self) {
        for h in self.running.drain(..) {
            let _ = h.join();
        }
    }
}

fn run_command(cmd: &str, alert: &Alert, pids: &std::sync::Mutex<Vec<u32>>) {
    let json = match serde_json::to_vec(alert) {
        Ok(j) => j,
        Err(e) => return say!("baton: failed to encode an alert: {e}"),
    };
    let mut child = match Command::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(stderr_copy())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return say!("baton: failed to start the alert command {cmd:?}: {e}"),
    };
    if let Ok(mut p) = pids.lock() {
        p.push(child.id());
    }
    if let Some(mut stdin) = child.stdin.take() {
        // OK to ignore: an alert command that does not read its input may
        // close it early; that is its business.
        let _ = stdin.write_all(&json);
    }
    let clock = SystemClock;
    let deadline = clock.boot() + ALERT_TIMEOUT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return,
            Ok(Some(status)) => {
                return say!("baton: the alert command {cmd:?} failed: {status}");
            }
            Ok(None) if clock.boot() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return say!(
                    "baton: the alert command {cmd:?} ran longer than {}s and was killed",
                    ALERT_TIMEOUT.as_secs()
                );
            }
            Ok(None) => clock.sleep(Duration::from_millis(20)),
            Err(e) => return say!("baton: failed to wait for the alert command {cmd:?}: {e}"),
        }
    }
}

/// A copy of stderr for a child's stdout, so an alert command never writes
/// into the job's output; nowhere, when stderr cannot be copied.
fn stderr_copy() -> Stdio {
    use std::os::fd::AsFd;
    std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_or_else(|_| Stdio::null(), Stdio::from)
}

/// Now, as RFC 3339.
pub fn now_text() -> String {
    SystemClock.wall().to_string()
}
