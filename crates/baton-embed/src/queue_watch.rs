//! The scheduler's look at the ledger's queue between runs: what an
//! operator queued from outside (`baton backfill` of a job this service
//! runs), or what waits after a holder let go early, is run without
//! waiting for the job's next occurrence.
//!
//! Every [`LOOK`] on the scheduler's clock, one read of the jobs that have
//! a queue; for each of this scheduler's jobs among them whose lock no
//! drain of this task holds already, a drain as a run counted in flight
//! ([`crate::run::drain_fresh`]: the lock taken claiming nothing, a lock
//! held by another run left to its holder, who looks before and after its
//! release). It never runs anything itself, and never takes a lease but
//! through that drain.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::env::Env;
use crate::ledgers::Ledger;
use crate::run;
use crate::timer;

/// How often the queue is looked at: one read of the ledger each time (a
/// round trip to a server, or a read of the local ledger).
pub(crate) const LOOK: Duration = Duration::from_secs(2);

/// Looks at the queue every [`LOOK`] from `from` (the boot clock when the
/// scheduler started) until the scheduler shuts down, then waits for the
/// drains it started. The looks are counted from `from`, not from each
/// other, so a clock moved before this task first ran is not lost.
pub(crate) async fn watch(env: Env, from: std::time::Duration) {
    let mut shutdown = env.shutdown.clone();
    let mut ledger: Option<Ledger> = None;
    let mut drains: HashMap<String, JoinHandle<()>> = HashMap::new();
    let mut due = from;
    loop {
        due += LOOK;
        let now = env.clock.boot();
        if due < now {
            // Looks the clock passed at once are one look.
            due = now;
        }
        tokio::select! {
            () = timer::until_boot(&*env.clock, due) => {}
            _ = shutdown.wait_for(Option::is_some) => break,
        }
        drains.retain(|_, d| !d.is_finished());
        if ledger.is_none() {
            ledger = Ledger::open(&env).await;
        }
        let Some(open) = ledger.as_mut() else {
            continue;
        };
        let queued = match open.call(|l| l.queued_jobs()).await {
            Some(Ok(jobs)) => jobs,
            Some(Err(e)) => {
                tracing::debug!("the queue could not be read: {e}");
                ledger = None; // Opened afresh next time.
                continue;
            }
            None => {
                ledger = None;
                continue;
            }
        };
        for job in queued {
            let Some(plan) = env.jobs.get(&job) else {
                continue; // Another service's, or the command line's.
            };
            if drains.contains_key(&plan.lock) || env.shutdown.borrow().is_some() {
                continue;
            }
            if !plan.in_process() {
                // A command job's runner is a process: started only when
                // its queue holds what may run now (no pause holds it).
                let (name, now) = (job.clone(), env.clock.wall());
                let runnable = open
                    .call(move |l| l.next_unpaused(&[name.as_str()], now))
                    .await;
                if !matches!(runnable, Some(Ok(Some(_)))) {
                    continue;
                }
            }
            let counted = run::InFlight::count(&env.in_flight);
            let (e, p) = (env.clone(), Arc::clone(plan));
            let drain = tokio::spawn(async move {
                crate::launch::drain(&e, &p).await;
                drop(counted);
            });
            drains.insert(plan.lock.clone(), drain);
        }
    }
    for (_, drain) in drains {
        let _ = drain.await;
    }
}
