//! `baton backfill JOB --from TIME --to TIME [--dry-run]`: runs the job's
//! past occurrences in a range, oldest first, one at a time, under its
//! lock, holding one lease for the whole range.
//!
//! An occurrence that already ran (`started` or `claimed` in the ledger) is
//! not run again; a missed one is. Backfill claims nothing in the lock file
//! (claims only move forward, and these occurrences are behind them): the
//! ledger, read and written under the lease, is the record. A busy lock
//! refuses the backfill when the job's overlap rule is `skip` and waits for
//! it when it is `queue`. Occurrences after now are left to the schedule.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use baton_lease::Clock;
use jiff::Timestamp;

use crate::alerts::Kind;
use crate::config::{Config, Job, Overlap};
use crate::run::{CANNOT, Context, FAILED, First, OK, Request, Start, occurrence_text};
use crate::store::Taken;
use crate::surfaces::Surfaces;

/// The most occurrences one backfill runs.
pub const MAX_OCCURRENCES: usize = 10_000;

/// How long a backfill with `overlap = "queue"` waits for a busy lock.
pub const QUEUE_WAIT: Duration = Duration::from_secs(24 * 3600);

/// One occurrence of the range, and what the ledger says of it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Planned {
    /// The occurrence (RFC 3339 UTC).
    pub occurrence: String,
    /// `run` (would run), or what the ledger says: `started`, `claimed`,
    /// `queued`, `coalesced`.
    pub action: String,
    /// The run that started it, when one did.
    pub run_id: Option<String>,
}

/// The occurrences of `job` in `[from, to]`, at most now.
///
/// # Errors
///
/// A message when the range is empty or backwards, or holds more than
/// [`MAX_OCCURRENCES`].
pub fn occurrences(
    job: &Job,
    from: Timestamp,
    to: Timestamp,
    now: Timestamp,
) -> Result<Vec<i64>, String> {
    if from > to {
        return Err(format!("--from {from} is after --to {to}"));
    }
    let end = to.min(now);
    let schedule = &job.when.value.schedule;
    let tz = &job.timezone.value.tz;
    let start = from
        .checked_sub(jiff::SignedDuration::from_secs(1))
        .unwrap_or(from);
    let mut out = Vec::new();
    for t in schedule.iter_after(start, tz).take_while(|&t| t <= end) {
        if out.len() == MAX_OCCURRENCES {
            return Err(format!(
                "the range holds more than {MAX_OCCURRENCES} occurrences of {}: narrow it",
                job.name
            ));
        }
        out.push(t.as_second());
    }
    Ok(out)
}

/// What a backfill of `occ` would do, from the ledger (read only).
pub fn dry_run(config: &Config, job: &Job, occ: &[i64], now: Timestamp) -> Vec<Planned> {
    let mut ledger = crate::store::existing_records(config, now).and_then(Result::ok);
    occ.iter()
        .map(|&at| {
            let d = ledger
                .as_mut()
                .and_then(|l| l.decision(&job.name, at).ok().flatten());
            Planned {
                occurrence: occurrence_text(Some(at)),
                action: d
                    .as_ref()
                    .map_or_else(|| "run".to_owned(), |d| d.decision.as_str().to_owned()),
                run_id: d.and_then(|d| d.run_id),
            }
        })
        .collect()
}

/// Runs the backfill; returns the worst exit code.
pub fn run(config: &Config, job: &Job, occ: &[i64], clock: Arc<dyn Clock>) -> u8 {
    if occ.is_empty() {
        return OK;
    }
    if let Err(e) = crate::state_dir::locks_dir(&config.settings.state_dir.value) {
        crate::say::line(format_args!("backfill: {e}"));
        return CANNOT;
    }
    let surfaces = Rc::new(RefCell::new(Surfaces::open(config, clock)));
    let code = run_with(config, job, occ, &surfaces);
    let _ = surfaces.borrow_mut().ledger(|l| l.checkpoint());
    surfaces.borrow_mut().finish();
    code
}

fn run_with(config: &Config, job: &Job, occ: &[i64], surfaces: &Rc<RefCell<Surfaces>>) -> u8 {
    let store = match crate::store::open(config) {
        Ok(s) => s,
        Err(e) => {
            crate::say::line(format_args!("backfill: {}: {e}", job.name));
            return CANNOT;
        }
    };
    let lock = store.lock_label(job);
    let mut firsts = Vec::new();
    for (i, &at) in occ.iter().enumerate() {
        let Ok(token) = baton_lease::Token::fresh() else {
            crate::say::line(format_args!(
                "backfill: failed to read random bytes for a run id"
            ));
            return CANNOT;
        };
        firsts.push(First {
            ctx: Context {
                job: job.name.clone(),
                occurrence: occurrence_text(Some(at)),
                run_id: token.to_string(),
                lock: lock.clone(),
                name: job.lock.value.clone(),
                fence: None,
            },
            start: Start::Scheduled(at),
            restate: i > 0,
        });
    }
    let claim = baton_lease::Claim {
        run: Some(firsts[0].ctx.run_id.clone()),
        occ: Some(firsts[0].ctx.occurrence.clone()),
        budget: job.policy.max_runtime.value,
        once: None,
        mates: crate::run::owned_mates(config, job),
    };
    let clock = surfaces.borrow().clock();
    let deadline = clock.boot().saturating_add(QUEUE_WAIT);
    let mut said = false;
    let outcome = loop {
        let o = store.try_acquire(job, &claim);
        let waits = job.policy.overlap.value == Overlap::Queue
            && matches!(&o, Ok(Taken::Refused(r)) if r.kind == Kind::Busy && r.holder.is_some())
            && clock.boot() < deadline;
        if !waits {
            break o;
        }
        if !said {
            said = true;
            if let Ok(Taken::Refused(refused)) = &o {
                crate::say::line(format_args!(
                    "backfill: {}: {}; waiting for it to end (overlap = \"queue\")",
                    job.name, refused.why
                ));
            }
        }
        drop(o);
        clock.sleep(Duration::from_millis(200));
    };
    let lease = match outcome {
        Ok(Taken::Acquired(lease)) => lease,
        Ok(Taken::Refused(refused)) => {
            crate::say::line(format_args!(
                "backfill: {} not run: {} (overlap = \"{}\"); nothing was run",
                job.name,
                refused.why,
                job.policy.overlap.value.as_str()
            ));
            return FAILED;
        }
        Ok(Taken::Claimed { at }) => {
            crate::say::line(format_args!(
                "backfill: {} not run: the lock's claim says {} started already; nothing was run",
                job.name,
                occurrence_text(Some(at))
            ));
            return FAILED;
        }
        Err(e) => {
            crate::say::line(format_args!("backfill: {}: {e}", job.name));
            return CANNOT;
        }
    };
    let req = Request {
        config,
        job,
        start: Start::Manual,
        tee: true,
        teller: None,
        stop_on_signal: false,
    };
    crate::run::hold(&req, lease, firsts, surfaces)
}
