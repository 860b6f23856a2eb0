//! What the jobs catch up: the occurrences that passed while no replica
//! of the service ran them, read against the shared ledger when the
//! scheduler starts, and several that passed at once while it ran (the
//! host slept, the clock jumped), each decided by the job's
//! [`CatchUp`] policy and `catch_up_window`, as the command line's
//! `catch_up` keys decide:
//!
//! - occurrences older than the window are missed `outside-window`;
//! - `latest`: the newest runs, the ones before it are missed `superseded`;
//! - `none`: the newest runs only when it is due now (at most a minute
//!   old); every other is missed `late`;
//! - `all`: the newest [`CATCH_UP_MAX`] wait in the ledger's queue and run
//!   oldest first, one after another under one lease; older ones are
//!   missed `catch-up-max`.
//!
//! The jobs are known to the ledger from the build on (first seen then,
//! when they never were), so that a later start knows which occurrences
//! each missed: those after its mark (its newest decided occurrence) and
//! not before it was first seen, up to now. Every replica starting at once
//! decides the same, and the ledger (its mark, its queue) and the
//! occurrence's claim keep each decision and each run to one.
//!
//! One task decides for every job at the start, on one ledger: a service
//! of a thousand jobs opens one connection at its start, not a thousand.
//! This module decides, records misses and queues; it never runs anything
//! (each job's loop starts the run or the queue's drain it is told), and a
//! ledger it cannot read catches up nothing.

use std::collections::HashMap;
use std::sync::Arc;

use baton_store::ledger::{JobState, Queued};
use baton_store::words::MissReason;
use jiff::{SignedDuration, Timestamp};
use tokio::sync::oneshot;

use crate::env::Env;
use crate::job::{CATCH_UP_MAX, CatchUp};
use crate::ledgers::Ledger;
use crate::plan::Plan;
use crate::run;

/// What a job's loop starts for the occurrences it caught up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// Nothing: none runs, or another replica decided them.
    Nothing,
    /// This occurrence, as a scheduled one.
    Run(Timestamp),
    /// What waits in the queue ([`CatchUp::All`]), oldest first.
    Queue,
}

/// Decides for each job what it catches up at `now`, recording what it
/// misses, and answers each job's loop with what to start now. A job
/// whose loop has gone (a shutdown) is not asked about.
pub(crate) async fn decide_all(
    env: Env,
    jobs: Vec<(Arc<Plan>, oneshot::Sender<Start>)>,
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
        let start = decide(&env, &mut ledger, &plan, state, now).await;
        let _ = answer.send(start);
    }
}

/// What `plan`'s job catches up at `now`, its row being `state`, with what
/// it passed over recorded.
async fn decide(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    state: &JobState,
    now: Timestamp,
) -> Start {
    // Occurrences at or after the first sighting, after the mark.
    let seen = state.first_seen - SignedDuration::from_nanos(1);
    let after = state
        .last_decided
        .and_then(|s| Timestamp::from_second(s).ok())
        .map_or(seen, |mark| mark.max(seen));
    let Some(first) = plan.schedule.next_after(after, &plan.zone) else {
        return Start::Nothing;
    };
    if first > now {
        return Start::Nothing;
    }
    let newest = plan
        .schedule
        .latest_at_or_before(now, &plan.zone)
        .map_or(first, |n| n.max(first));
    passed(
        env,
        ledger,
        plan,
        (first, newest),
        now,
        "while no replica ran the job",
    )
    .await
}

/// How old an occurrence may be and still run with [`CatchUp::None`]: the
/// command line's slack for "due now".
const NONE_GRACE: SignedDuration = SignedDuration::from_secs(60);

/// Decides the occurrences `first..=newest` of `plan`, all passed at `now`
/// (`when`: how they passed, for the records), by the job's catch-up
/// policy and window: records what is missed, queues what
/// [`CatchUp::All`] runs, and says what to start.
pub(crate) async fn passed(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    (first, newest): (Timestamp, Timestamp),
    now: Timestamp,
    when: &str,
) -> Start {
    let window = SignedDuration::try_from(plan.catch_up_window).unwrap_or(SignedDuration::MAX);
    let all_outside = plan.catch_up_window.is_zero() || now.duration_since(newest) > window;
    // The oldest within the window; the ones before it are outside (all of
    // them, the newest included, when even the newest is).
    let in_window = match now.checked_sub(window) {
        _ if all_outside => newest + SignedDuration::from_secs(1),
        Ok(edge) if edge > first => plan
            .schedule
            .next_after(edge - SignedDuration::from_nanos(1), &plan.zone)
            .map_or(newest, |t| t.min(newest)),
        _ => first,
    };
    if in_window > first {
        let detail = format!(
            "passed {when}, more than its catch-up window ({:?}) ago",
            plan.catch_up_window
        );
        passed_over_in(
            env,
            ledger,
            plan,
            (first, in_window),
            MissReason::OutsideWindow,
            detail,
        )
        .await;
    }
    if all_outside {
        return Start::Nothing;
    }
    match plan.catch_up {
        CatchUp::Latest => {
            if newest > in_window {
                let detail =
                    format!("passed {when}; a later occurrence ({newest}) runs in their place");
                passed_over_in(
                    env,
                    ledger,
                    plan,
                    (in_window, newest),
                    MissReason::Superseded,
                    detail,
                )
                .await;
            }
            Start::Run(newest)
        }
        CatchUp::None => {
            // The ones before the newest are late; the newest runs when it
            // is due now (at most a minute ago), as the command line's.
            let late = format!("passed {when}, not run late (catch_up = \"none\")");
            let due_now = now.duration_since(newest) <= NONE_GRACE;
            let until = if due_now {
                newest
            } else {
                newest + SignedDuration::from_secs(1)
            };
            if until > in_window {
                passed_over_in(
                    env,
                    ledger,
                    plan,
                    (in_window, until),
                    MissReason::Late,
                    late,
                )
                .await;
            }
            if due_now {
                Start::Run(newest)
            } else {
                Start::Nothing
            }
        }
        CatchUp::All => queue_all(env, ledger, plan, (in_window, newest), now, when).await,
    }
}

/// [`CatchUp::All`]: the newest [`CATCH_UP_MAX`] of `first..=newest` wait
/// in the queue, to run oldest first; the ones before them are missed
/// `catch-up-max`.
async fn queue_all(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    (first, newest): (Timestamp, Timestamp),
    now: Timestamp,
    when: &str,
) -> Start {
    let mut kept = vec![newest];
    while kept.len() < CATCH_UP_MAX {
        let Some(&oldest) = kept.last() else { break };
        match plan
            .schedule
            .latest_at_or_before(oldest - SignedDuration::from_nanos(1), &plan.zone)
        {
            Some(t) if t >= first => kept.push(t),
            _ => break,
        }
    }
    kept.reverse();
    let oldest = kept[0];
    if oldest > first {
        let detail = format!(
            "passed {when}, before the newest {CATCH_UP_MAX} that run (catch_up = \"all\")"
        );
        passed_over_in(
            env,
            ledger,
            plan,
            (first, oldest),
            MissReason::CatchUpMax,
            detail,
        )
        .await;
    }
    let name = plan.name.clone();
    let occurrences: Vec<i64> = kept.iter().map(|t| t.as_second()).collect();
    match ledger
        .call(move |l| l.enqueue(&name, &occurrences, false, now))
        .await
    {
        Some(Ok(Queued::Queued | Queued::Coalesced { .. })) => {
            tracing::info!(
                "{}: {} occurrences that passed {when} wait in the queue, from {oldest}",
                plan.name,
                kept.len()
            );
            Start::Queue
        }
        // Another replica decided them.
        Some(Ok(Queued::Moved)) => Start::Nothing,
        Some(Err(e)) => {
            tracing::warn!(
                "{}: nothing caught up: the queue could not be written: {e}",
                plan.name
            );
            Start::Nothing
        }
        None => Start::Nothing,
    }
}

/// The occurrences from `first` up to (not including) `before`: recorded
/// missed for `reason` on `ledger`, once across replicas.
async fn passed_over_in(
    env: &Env,
    ledger: &mut Ledger,
    plan: &Plan,
    (first, before): (Timestamp, Timestamp),
    reason: MissReason,
    detail: String,
) {
    const COUNT_AT_MOST: u64 = 100_000;
    let (mut count, mut at_least) = (1, false);
    for t in plan.schedule.iter_after(first, &plan.zone) {
        if t >= before {
            break;
        }
        if count >= COUNT_AT_MOST {
            // The count stops here; the range goes on, to its last
            // occurrence found without walking a year of seconds.
            at_least = true;
            break;
        }
        count += 1;
    }
    let last = plan
        .schedule
        .latest_at_or_before(before - jiff::SignedDuration::from_nanos(1), &plan.zone)
        .map_or(first, |l| l.max(first));
    run::missed_range(
        env,
        ledger,
        &plan.name,
        (first.as_second(), last.as_second(), count, at_least),
        reason,
        detail,
    )
    .await;
}
