//! The exhibit: one replica of the same service as `examples/replica.rs`,
//! its job scheduled with tokio-cron-scheduler instead of baton, for the
//! test that runs three of each side by side and counts what each lets
//! through.
//!
//! The job is the replica's: `* * * * * *`, a `start` line to the sink,
//! `REPLICA_HOLD_MS` of work, an `end` line. What it lacks is what
//! tokio-cron-scheduler does not have: a store shared by replicas, a lease,
//! a claim of the occurrence, a fence. Each replica keeps its own schedule
//! in memory, so every replica runs every occurrence. Its lines carry fence
//! 0, and as occurrence the second the run started in:
//! tokio-cron-scheduler tells a job no occurrence, and its ticker (every
//! 500 ms) starts a run within half a second of the second it is due.
//!
//! Configured by its environment like the replica: `REPLICA_SINK`,
//! `REPLICA_HOLD_MS` and `REPLICA_LIFE_MS` (a store and a TTL it has no use
//! for). This is evidence, not a way to use tokio-cron-scheduler: it is a
//! dev-dependency of this crate and never linked into it.

mod common;
mod sink;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use baton_embed::{Clock, SystemClock};
use common::env_ms;
use tokio_cron_scheduler::{Job, JobScheduler};

/// A run's work: the replica's, minus the fence and the cancellation
/// tokio-cron-scheduler does not give it.
async fn run(sink: &std::path::Path, hold: std::time::Duration, run_id: &str) {
    let occurrence = SystemClock.wall().as_second();
    let run = sink::Run {
        job: "tick",
        occurrence,
        fence: 0,
        run_id,
    };
    // A job of tokio-cron-scheduler returns nothing: a replica that cannot
    // write its sink ends loudly, and the test sees it exit with an error.
    sink::append(sink, "start", &run).expect("append a start to the sink");
    tokio::time::sleep(hold).await;
    sink::append(sink, "end", &run).expect("append an end to the sink");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sink: Arc<PathBuf> = Arc::new(std::env::var("REPLICA_SINK")?.into());
    let hold = env_ms("REPLICA_HOLD_MS", 300);
    let runs = Arc::new(AtomicU64::new(0));
    let job = Job::new_async("* * * * * *", move |_id, _scheduler| {
        let sink = Arc::clone(&sink);
        // Unique across replicas: this process's id and its count of runs.
        let n = runs.fetch_add(1, Ordering::Relaxed);
        let run_id = format!("tcs-{}-{n}", std::process::id());
        Box::pin(async move { run(&sink, hold, &run_id).await })
    })?;
    let mut scheduler = JobScheduler::new().await?;
    scheduler.add(job).await?;
    scheduler.start().await?;
    println!("ready {}", std::process::id());
    tokio::time::sleep(env_ms("REPLICA_LIFE_MS", 5_000)).await;
    scheduler.shutdown().await?;
    Ok(())
}
