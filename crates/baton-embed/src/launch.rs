//! Starting a job's work the way the job runs: in process
//! ([`crate::run`]) or by its runner, as a `baton __run` process
//! ([`crate::child`]). An occurrence's run ([`start_run`]) and the drain
//! of what waits in the job's queue ([`drain`]) are started here alike,
//! for the job's loop and the look at the queue.
//!
//! It only chooses between the two: it never decides whether something
//! runs, and never takes a lease or writes a record itself.

use std::sync::Arc;

use jiff::Timestamp;
use tokio::task::JoinSet;

use crate::env::Env;
use crate::plan::Plan;
use crate::run;

/// Starts the run of occurrence `at` as a task of `runs`, counted in flight
/// until it is recorded and released.
pub(crate) fn start_run(env: &Env, plan: &Arc<Plan>, at: Timestamp, runs: &mut JoinSet<()>) {
    let counted = run::InFlight::count(&env.in_flight);
    let (env, plan) = (env.clone(), Arc::clone(plan));
    let at = at.as_second();
    if plan.in_process() {
        runs.spawn(async move {
            run::occurrence(env, plan, at).await;
            drop(counted);
        });
    } else {
        runs.spawn(async move {
            crate::child::run(&env, &plan, crate::child::Start::At(at)).await;
            drop(counted);
        });
    }
}

/// Runs what waits in `plan`'s queue: in process, or by its runner for a
/// command job.
pub(crate) async fn drain(env: &Env, plan: &Arc<Plan>) {
    if plan.in_process() {
        run::drain_fresh(env, plan).await;
    } else {
        crate::child::run(env, plan, crate::child::Start::Queue).await;
    }
}
