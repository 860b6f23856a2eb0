//! What a run's span and an attempt's span are named and carry: the
//! OpenTelemetry semantic conventions' names where they have one
//! (`host.name`, `process.exit.code`), `baton.*` otherwise. The names are
//! documented in the README ("Traces"); changing one breaks whatever
//! queries them.

use baton_store::words::{AttemptOutcome, RunVerdict, StepKind};

use super::run_trace::Attr;

/// What a run's span says of it.
#[derive(Debug, Clone)]
pub struct RunFacts<'a> {
    /// The job.
    pub job: &'a str,
    /// The run's id.
    pub run_id: &'a str,
    /// Its occurrence (RFC 3339 UTC), or `manual`.
    pub occurrence: &'a str,
    /// The lease's fence.
    pub fence: Option<u64>,
    /// The slot of the job's lock it held (`max_concurrent`; 1 without).
    pub slot: u32,
    /// The host it ran on.
    pub host: &'a str,
    /// Its verdict.
    pub verdict: RunVerdict,
    /// The exit code it is recorded with.
    pub exit_code: i32,
    /// The attempts of its steps and checks.
    pub attempts: u32,
}

/// A run's span's name: `run JOB`.
pub fn run_name(job: &str) -> String {
    format!("run {job}")
}

/// A run's span's attributes.
pub fn run(f: &RunFacts<'_>) -> Vec<(&'static str, Attr)> {
    let mut v = vec![
        ("baton.job", f.job.into()),
        ("baton.run_id", f.run_id.into()),
        ("baton.occurrence", f.occurrence.into()),
    ];
    if let Some(fence) = f.fence.and_then(|n| i64::try_from(n).ok()) {
        v.push(("baton.fence", fence.into()));
    }
    v.extend([
        ("baton.slot", i64::from(f.slot).into()),
        ("host.name", f.host.into()),
        ("baton.verdict", f.verdict.as_str().into()),
        ("baton.exit_code", i64::from(f.exit_code).into()),
        ("baton.attempts", i64::from(f.attempts).into()),
    ]);
    v
}

/// An attempt's span's name: `step NAME` or `check NAME`.
pub fn attempt_name(kind: StepKind, step: &str) -> String {
    format!("{} {step}", kind.as_str())
}

/// An attempt's span's attributes: its step's name and kind, its number
/// (1 for the first), its outcome and its command's exit code, when it
/// has one.
pub fn attempt(
    (kind, step): (StepKind, &str),
    attempt: u32,
    outcome: AttemptOutcome,
    exit_code: Option<i32>,
) -> Vec<(&'static str, Attr)> {
    let mut v = vec![
        ("baton.step", step.into()),
        ("baton.step.kind", kind.as_str().into()),
        ("baton.attempt", i64::from(attempt).into()),
        ("baton.outcome", outcome.as_str().into()),
    ];
    if let Some(code) = exit_code {
        v.push(("process.exit.code", i64::from(code).into()));
    }
    v
}
