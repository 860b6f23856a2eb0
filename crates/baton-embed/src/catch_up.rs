//! What the jobs catch up when their scheduler starts: the occurrences that
//! passed while no replica of the service ran them, read against the
//! shared ledger, as the command line's `catch_up = "latest"` with its
//! `catch_up_window`.
//!
//! The jobs are known to the ledger from the build on (first seen then,
//! when they never were), so that a later start knows which occurrences
//! each missed. Of a job's occurrences after its mark (its newest decided
//! occurrence) and not before it was first seen, up to now: the newest
//! runs, when it is within the window, and the ones before it are recorded
//! missed `superseded`; when even the newest is older than the window, all
//! of them are recorded missed `outside-window` and none runs. Every
//! replica starting at once decides the same, and the ledger and the
//! occurrence's claim keep each decision and each run to one.
//!
//! One task decides for every job, on one ledger: a service of a thousand
//! jobs opens one connection at its start, not a thousand. This module
//! decides and records misses; it never runs anything (each job's loop
//! starts the run it is told), and a ledger it cannot read catches up
//! nothing.

use std::collections::HashMap;
use std::sync::Arc;

use baton_store::ledger::JobState;
use baton_store::words::MissReason;
use jiff::{SignedDuration, Timestamp};
use tokio::sync::oneshot;

use crate::plan::Plan;
use crate::run::{Env, Ledger};
use crate::scheduler::passed_over_in;

/// Decides for each job what it catches up at `now`, recording what it
/// misses, and answers each job's loop with the occurrence to run now, if
/// any. A job whose loop has gone (a shutdown) is not asked about.
pub(crate) async fn decide_all(
    env: Env,
    jobs: Vec<(Arc<Plan>, oneshot::Sender<Option<Timestamp>>)>,
    now: Timestamp,
) {
    let Some(mut ledger) = Ledger::open(&env).await else {
        return; // Each loop's answer is dropped: nothing caught up.
    };
    let states = match ledger.call(|l| l.jobs()).await {
        Some(Ok(states)) => states,
        Some(Err(e)) => {
            tracing::warn!("nothing caught up: the ledger failed: {e}");
            return;
        }
        None => return,
    };
    let states: HashMap<String, JobState> =
        states.into_iter().map(|s| (s.job.clone(), s)).collect();
    for (plan, answer) in jobs {
        if answer.is_closed() || env.shutdown.borrow().is_some() {
            continue;
        }
        let Some(state) = states.get(&plan.name) else {
            continue; // Never seen: nothing passed for it.
        };
        let at = decide(&env, &mut ledger, &plan, state, now).await;
        let _ = answer.send(at);
    }
}

/// What `plan`'s job catches up at `now`, its row being `state`: the
/// occurrence to run now, if any, with what it passed over recorded.
async fn decide(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    state: &JobState,
    now: Timestamp,
) -> Option<Timestamp> {
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
        passed_over_in(
            env,
            ledger,
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
        passed_over_in(
            env,
            ledger,
            plan,
            (first, newest),
            MissReason::Superseded,
            format!(
                "passed while no replica ran the job; a later occurrence ({newest}) runs in their place"
            ),
        )
        .await;
    }
    Some(newest)
}
