//! What one check found: a [`Finding`], with a [`Status`] and, for a
//! problem, the fix; and the [`Report`] of all of them. Plain data,
//! serialised as `baton doctor --json` prints it.

use serde::Serialize;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing wrong.
    Ok,
    /// Something to look at; baton works (the report stays healthy).
    Warn,
    /// Something that keeps baton from working safely, or at all.
    Fail,
}

impl Status {
    /// `ok`, `WARN` or `FAIL`, as the text output shows it.
    pub fn shown(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        }
    }
}

/// What one check found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The check, one word (`config`, `state-dir`, `filesystem`, `locks`,
    /// `ledger`, `time-sync`, `zones`, `store`, `store-tls`,
    /// `store-writable`, `store-schema`, `store-clock`, `driver`, `alert-command`).
    pub check: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was found, in one line.
    pub message: String,
    /// For a problem, what to do about it.
    pub fix: Option<String>,
}

impl Finding {
    /// Nothing wrong.
    pub fn ok(check: &'static str, message: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Ok,
            message: message.into(),
            fix: None,
        }
    }

    /// Something to look at, and what to do.
    pub fn warn(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Warn,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }

    /// Something wrong, and what to do.
    pub fn fail(check: &'static str, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self {
            check,
            status: Status::Fail,
            message: message.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Every finding of one `baton doctor`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// No finding failed (warnings allowed).
    pub healthy: bool,
    /// The findings, in the order the checks ran.
    pub checks: Vec<Finding>,
}

impl Report {
    /// The report of `checks`.
    pub fn of(checks: Vec<Finding>) -> Self {
        Self {
            healthy: checks.iter().all(|f| f.status != Status::Fail),
            checks,
        }
    }

    /// How many findings have `status`.
    pub fn count(&self, status: Status) -> usize {
        self.checks.iter().filter(|f| f.status == status).count()
    }
}
