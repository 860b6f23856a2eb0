//! One replica of a service that embeds baton: a job every second whose
//! runs write to a fence-checking sink, for the tests that start several
//! of these as processes on one store and kill some of them.
//!
//! Configured by its environment: `REPLICA_STORE` (`sqlite:DIR`, or
//! `postgres:URL` with the `postgres` feature), `REPLICA_SINK` (the file
//! each run appends `start` and `end` lines to, under an flock),
//! `REPLICA_HOLD_MS` (how long a run takes), `REPLICA_LIFE_MS` (how long
//! the replica serves before it shuts down), `REPLICA_TTL_MS` (the
//! lease's TTL and takeover grace), `REPLICA_OVERLAP` (`queue`, or
//! skip by default) and `REPLICA_LOCK` (the job's lock, else its name).
//! With `REPLICA_COMMAND` (a shell line) and
//! `REPLICA_RUNNER` (the `baton` binary), the job runs that command as a
//! child process instead (`Job::command`), and the sink is not written.

mod common;
mod sink;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use baton_embed::{Job, JobError, Overlap, RunContext, Scheduler, Store};
use common::env_ms;

fn store() -> Store {
    let spec = std::env::var("REPLICA_STORE").unwrap_or_default();
    #[cfg(feature = "postgres")]
    if let Some(url) = spec.strip_prefix("postgres:") {
        return Store::postgres(url).migrate();
    }
    Store::sqlite(spec.strip_prefix("sqlite:").unwrap_or(&spec))
}

/// Appends `what` of the run `ctx` to the sink.
fn append(sink: &Path, what: &str, ctx: &RunContext) -> std::io::Result<()> {
    let run = sink::Run {
        job: ctx.job(),
        occurrence: ctx.occurrence().as_second(),
        fence: ctx.fence(),
        run_id: ctx.run_id(),
    };
    sink::append(sink, what, &run)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sink: Arc<PathBuf> = Arc::new(std::env::var("REPLICA_SINK")?.into());
    let hold = env_ms("REPLICA_HOLD_MS", 300);
    let ttl = env_ms("REPLICA_TTL_MS", 2_000);
    let overlap = match std::env::var("REPLICA_OVERLAP").as_deref() {
        Ok("queue") => Overlap::Queue,
        _ => Overlap::Skip,
    };
    let job = Job::cron("tick", "* * * * * *");
    let job = match std::env::var("REPLICA_LOCK") {
        Ok(lock) => job.lock(lock),
        Err(_) => job,
    };
    let job = job
        .lease(ttl, ttl)
        .overlap(overlap)
        .grace(Duration::from_millis(300))
        .run(move |ctx: RunContext| {
            let sink = Arc::clone(&sink);
            async move {
                append(&sink, "start", &ctx)?;
                tokio::select! {
                    () = tokio::time::sleep(hold) => {}
                    _ = ctx.cancelled() => return Err(JobError::msg("cancelled")),
                }
                append(&sink, "end", &ctx)?;
                Ok(())
            }
        });
    let mut builder = Scheduler::builder().store(store());
    let job = match (
        std::env::var("REPLICA_COMMAND"),
        std::env::var("REPLICA_RUNNER"),
    ) {
        (Ok(line), Ok(runner)) => {
            builder = builder.runner(runner);
            job.command(["sh", "-c", line.as_str()])
        }
        _ => job,
    };
    let scheduler = builder.job(job).build()?;
    let handle = scheduler.start();
    println!("ready {}", std::process::id());
    tokio::time::sleep(env_ms("REPLICA_LIFE_MS", 5_000)).await;
    handle.shutdown(Duration::from_secs(2)).await;
    Ok(())
}
