//! `baton watermark get` and `baton watermark settle`: a job's watermark,
//! the point up to which an incremental job has delivered (seed 001).
//!
//! Only the run that holds the job's lease may settle it: the value is
//! written to the ledger inside the lock file's critical section, after the
//! record's token was compared with the caller's `BATON_TOKEN`
//! ([`baton_lease::Lock::while_held`]), so a displaced run, a run whose
//! lease was broken, or a command run outside any run is refused and writes
//! nothing. A run that crashes before settling leaves the old value: its
//! retry reads the same window again. This module never changes the lock
//! file.

use std::sync::Arc;

use baton_lease::{Clock, Token};

use crate::config::Config;
use crate::outcome::Outcome;
use crate::store::Vouch;

/// The watermark of `job`, as `get` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Shown {
    /// The job.
    pub job: String,
    /// The value; `None` before the first settle.
    pub value: Option<String>,
    /// When it was settled (RFC 3339).
    pub settled: Option<String>,
    /// The run that settled it.
    pub run_id: Option<String>,
    /// The fence of that run's lease.
    pub fence: Option<u64>,
}

/// Reads `job`'s watermark without creating anything.
///
/// # Errors
///
/// The ledger's, when it cannot be read ([`crate::engine::run::ledger_failed`] is
/// its outcome).
pub fn get(
    config: &Config,
    job: &str,
    clock: &dyn Clock,
) -> Result<Shown, baton_store::ledger::Error> {
    let mut shown = Shown {
        job: job.to_owned(),
        value: None,
        settled: None,
        run_id: None,
        fence: None,
    };
    let Some(ledger) = crate::store::existing_records(config, clock.wall()) else {
        return Ok(shown);
    };
    let mut ledger = ledger?;
    if let Some(w) = ledger.watermark(job)? {
        shown.value = Some(w.value);
        shown.settled = Some(w.settled.to_string());
        shown.run_id = w.run_id;
        shown.fence = w.fence;
    }
    Ok(shown)
}

/// `baton watermark settle JOB VALUE` with `token` (from `BATON_TOKEN`);
/// returns the outcome, saying why on stderr when refused.
pub fn settle(
    config: &Config,
    job: &str,
    value: &str,
    token: Option<&str>,
    clock: Arc<dyn Clock>,
) -> Outcome {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        crate::say::line(format_args!(
            "watermark settle: refused: BATON_TOKEN is not set; only a run of {job} that holds \
             its lease may settle its watermark (run this from one of the job's steps)"
        ));
        return Outcome::Failed;
    };
    let token: Token = match token.parse() {
        Ok(t) => t,
        Err(e) => {
            crate::say::line(format_args!(
                "watermark settle: refused: BATON_TOKEN {token:?} is not a lease token ({e})"
            ));
            return Outcome::Failed;
        }
    };
    let Some(j) = config.jobs.get(job) else {
        return Outcome::Unable;
    };
    let mut ledger = match crate::store::records(config, clock.wall()) {
        Ok(l) => l,
        Err(e) => {
            crate::say::line(format_args!("watermark settle: {e}"));
            return crate::engine::run::ledger_failed(config, &e);
        }
    };
    let store = match crate::store::open(config) {
        Ok(s) => s,
        Err(e) => {
            crate::say::line(format_args!("watermark settle: {e}"));
            return Outcome::Unable;
        }
    };
    let mut settled = None;
    // The slot the run holds (`max_concurrent`) is the one whose lease
    // vouches for its token; with one slot, the job's lock.
    let mut vouched = None;
    for lock in j.slot_refs() {
        let v = store.while_held(&lock, &token.to_string(), &mut |fence, run| {
            fail::fail_point!("watermark");
            settled = Some(ledger.settle(job, value, run, Some(fence), clock.wall()));
        });
        let holder = matches!(v, Ok(Vouch::Holder { .. }));
        if holder || vouched.is_none() {
            vouched = Some(v);
        }
        if holder {
            break;
        }
    }
    let Some(vouched) = vouched else {
        return Outcome::Unable;
    };
    match (vouched, settled) {
        (Ok(Vouch::Holder { .. }), Some(Ok(_))) => Outcome::Done,
        (Ok(Vouch::Holder { .. }), Some(Err(e))) => {
            crate::say::line(format_args!("watermark settle: {e}"));
            Outcome::Failed
        }
        (Ok(Vouch::Holder { .. }), None) => Outcome::Failed,
        (Ok(Vouch::NotHolder(now)), _) => {
            crate::say::line(format_args!(
                "watermark settle: refused: this run no longer holds {job}'s lease ({now}); a \
                 displaced run cannot settle, and the watermark stays as it was"
            ));
            Outcome::Failed
        }
        (Ok(Vouch::Missing(at)), _) => {
            crate::say::line(format_args!(
                "watermark settle: refused: {at} does not exist, so no run holds {job}'s lease"
            ));
            Outcome::Failed
        }
        (Err(e), _) => {
            crate::say::line(format_args!("watermark settle: {e}"));
            Outcome::Failed
        }
    }
}
