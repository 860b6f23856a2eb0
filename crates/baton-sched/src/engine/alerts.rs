//! The scheduler's alerts, and the surfaces each one reaches: standard
//! error, the envelope log, `alerts.log`, the ledger, `alert_command` (one
//! JSON object on its standard input, ending in a newline; bounded in
//! time, in a process group of its own; its failure is logged, never
//! fatal), and `alert_webhook` (the same object and a `text`, posted:
//! [`super::webhook`]; bounded and never fatal alike).
//!
//! The JSON object has `baton exec`'s fields (`kind`, `lock`, `name`,
//! `holder`, `run_id`, `fence`, `time`, `message`, `status`) plus `job`,
//! `occurrence` (RFC 3339 UTC, or `manual`) and `step`; a `missed` alert
//! adds `reason` and `missed` (`count`, `at_least`, `first`, `last`,
//! `by_reason`), and the lock's refusals add `reason`. The `message` names
//! instants in RFC 3339 UTC, on every surface that keeps it; stderr shows
//! them on the job's wall clock ([`crate::times::human_in`]).

use std::time::Duration;

use baton_store::words::{AlertKind, MissReason};
use serde::Serialize;

use crate::config::Command;

/// How long an alert command may run before its group is stopped (the
/// scheduler's and `baton exec`'s alike), and the longest one webhook
/// delivery may take, its retries included.
pub const ALERT_TIMEOUT: Duration = Duration::from_secs(10);

/// The holder named in an alert.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
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
    /// The slot of the lock it holds (1-based; `max_concurrent`), when
    /// known: left out when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
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
            slot: None,
        }
    }

    /// The holder of a record in `slot` of its lock.
    pub fn in_slot(h: &baton_lease::Holder, slot: Option<u32>) -> Self {
        Self {
            slot,
            ..Self::of(h)
        }
    }
}

/// One alert.
#[derive(Debug, Clone, Serialize)]
pub struct Alert {
    /// What happened.
    pub kind: AlertKind,
    /// The job.
    pub job: String,
    /// The occurrence: RFC 3339 UTC, or `manual`.
    pub occurrence: Option<String>,
    /// The run, when one started.
    pub run_id: Option<String>,
    /// The lock file.
    pub lock: String,
    /// The lock's name.
    pub name: String,
    /// The holder, for a skip.
    pub holder: Option<HolderInfo>,
    /// The run's fence, when it held the lease.
    pub fence: Option<u64>,
    /// When it was raised (RFC 3339).
    pub time: String,
    /// The step or check, when one is concerned.
    pub step: Option<String>,
    /// What happened, in one line, naming instants in RFC 3339 UTC.
    pub message: String,
    /// The exit status, for a failed step or check.
    pub status: Option<i32>,
    /// Why occurrences did not run (`missed`, and the lock's refusals:
    /// `busy`, `hung`, `orphaned`, `version-conflict`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Which occurrences, for `missed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed: Option<MissedInfo>,
}

impl Alert {
    /// An alert about the scheduler itself, not one job's run (a corrupt
    /// ledger, a refused reload).
    pub fn scheduler(kind: AlertKind, time: String, message: String) -> Self {
        Self {
            kind,
            job: String::new(),
            occurrence: None,
            run_id: None,
            lock: String::new(),
            name: String::new(),
            holder: None,
            fence: None,
            time,
            step: None,
            message,
            status: None,
            reason: None,
            missed: None,
        }
    }
}

/// The occurrences one decision missed.
#[derive(Debug, Clone, Serialize)]
pub struct MissedInfo {
    /// How many.
    pub count: u64,
    /// Whether `count` is a lower bound.
    pub at_least: bool,
    /// The first (RFC 3339 UTC).
    pub first: String,
    /// The last.
    pub last: String,
    /// How many for each reason.
    pub by_reason: std::collections::BTreeMap<MissReason, u64>,
}

impl MissedInfo {
    /// One occurrence (RFC 3339 UTC) missed for `reason`.
    pub fn one(occurrence: &str, reason: MissReason) -> Self {
        Self {
            count: 1,
            at_least: false,
            first: occurrence.to_owned(),
            last: occurrence.to_owned(),
            by_reason: [(reason, 1)].into(),
        }
    }
}

/// The variable set in the environment of an alert command that is only
/// being tried (`baton doctor`), so that it can tell a test from an alert.
pub const TEST_VARIABLE: &str = "BATON_ALERT_TEST";

/// Runs `command` once with `alert` (an [`AlertKind::Test`] one) on its stdin and
/// `BATON_ALERT_TEST=1` in its environment, as an alert would be delivered
/// (bounded by [`ALERT_TIMEOUT`], in a process group of its own, its stdout
/// on stderr), and waits for it.
pub fn try_command(command: &Command, alert: &Alert) -> baton_runner::HookOutcome {
    let hook = match command {
        Command::Shell(s) => baton_runner::HookCommand::Shell(s.clone()),
        Command::Argv(a) => baton_runner::HookCommand::Argv(a.clone()),
    };
    // OK because an alert is strings and numbers, which always encode.
    let mut json = serde_json::to_vec(alert).expect("an alert encodes as JSON");
    json.push(b'\n');
    let env = [(TEST_VARIABLE.to_owned(), "1".to_owned())];
    // On a thread of its own, as every alert command: the runner blocks
    // signals in the thread that waits for a hook.
    std::thread::scope(|s| {
        s.spawn(|| baton_runner::hook::run(&hook, &json, &env, stderr_copy(), ALERT_TIMEOUT))
            .join()
            .unwrap_or_else(|_| baton_runner::HookOutcome::NotStarted("its thread failed".into()))
    })
}

/// A copy of stderr for an alert command's stdout.
pub(super) fn stderr_copy() -> std::process::Stdio {
    use std::os::fd::AsFd;
    std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .map_or_else(|_| std::process::Stdio::null(), std::process::Stdio::from)
}
