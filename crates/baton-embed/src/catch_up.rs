//! What a job catches up when its scheduler starts: the occurrences that
//! passed while no replica of the service ran it, read against the shared
//! ledger, as the command line's `catch_up = "latest"` with its
//! `catch_up_window`.
//!
//! The job is first made known to the ledger (first seen now, when it never
//! was), so that a later start knows which occurrences it missed. Of the
//! occurrences after the job's mark (its newest decided occurrence) and not
//! before it was first seen, up to now: the newest runs, when it is within
//! the window, and the ones before it are recorded missed `superseded`;
//! when even the newest is older than the window, all of them are recorded
//! missed `outside-window` and none runs. Every replica starting at once
//! decides the same, and the ledger and the occurrence's claim keep each
//! decision and each run to one.
//!
//! This module decides and records misses; it never runs anything (the
//! scheduler starts the run it returns), and a ledger it cannot read
//! catches up nothing.

use baton_store::words::MissReason;
use jiff::{SignedDuration, Timestamp};

use crate::plan::Plan;
use crate::run::{Env, Ledger};
use crate::scheduler::passed_over;

/// Records what passed before `now` for `plan`'s job, and returns the
/// occurrence to run now, if any.
pub(crate) async fn decide(env: &Env, plan: &Plan, now: Timestamp) -> Option<Timestamp> {
    let mut ledger = Ledger::open(env).await?;
    let name = plan.name.clone();
    let state = ledger
        .call(move |l| {
            l.see_jobs(&[&name], now)?;
            l.job(&name)
        })
        .await?;
    let state = match state {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => {
            tracing::warn!("{}: nothing caught up: the ledger failed: {e}", plan.name);
            return None;
        }
    };
    // Occurrences at or after the first sighting, after the mark.
    let seen = state.first_seen - SignedDuration::from_nanos(1);
    let after = state
        .last_decided
        .and_then(|s| Timestamp::from_second(s).ok())
        .map_or(seen, |mark| mark.max(seen));
    let first = plan.schedule.next_after(after, &plan.zone)?;
    if first > now {
        return None;
    }
    let newest = plan
        .schedule
        .latest_at_or_before(now, &plan.zone)
        .map_or(first, |n| n.max(first));
    let window = SignedDuration::try_from(plan.catch_up_window).unwrap_or(SignedDuration::MAX);
    if now.duration_since(newest) > window || plan.catch_up_window.is_zero() {
        passed_over(
            env,
            plan,
            (first, newest + SignedDuration::from_secs(1)),
            MissReason::OutsideWindow,
            format!(
                "passed while no replica ran the job, more than its catch-up window ({:?}) ago",
                plan.catch_up_window
            ),
        )
        .await;
        return None;
    }
    if newest > first {
        passed_over(
            env,
            plan,
            (first, newest),
            MissReason::Superseded,
            format!("passed while no replica ran the job; a later occurrence ({newest}) runs in their place"),
        )
        .await;
    }
    Some(newest)
}
