//! A service that embeds baton: an axum server with two jobs on a
//! PostgreSQL store, each run writing to a fenced table.
//!
//! Each run writes a `start` and an `end` row through one statement that
//! first raises the job's fence in `sink_fences` (only to a fence at least
//! as high as the one there) and records whether it could: a replica that
//! was paused past its lease, and writes after another replica took over,
//! finds its write refused. The job ignores its cancellation on purpose,
//! as careless code does, so only the fence stands between a stale
//! replica and the table.
//!
//! Configured by its environment: `SERVICE_URL` (the PostgreSQL store,
//! which also holds the sink's tables: `sink_fences (job text primary
//! key, fence bigint)` and `sink_writes (name, job, occurrence, fence,
//! run_id, what, at_us, accepted)`), `SERVICE_NAME` (this replica's name in
//! the sink), `SERVICE_HOLD_MS` (how long a run takes), `SERVICE_TTL_MS`
//! (the lease's TTL and takeover grace) and `SERVICE_LIFE_MS` (how long it
//! serves). It prints `listening PORT` once its server is up. With the
//! `http` feature it serves the jobs' status API and page under `/baton`.
//!
//! Run it with `cargo run --example service --features postgres,prometheus`.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use baton_embed::{Clock, Job, JobError, RunContext, Scheduler, Store, SystemClock};
use common::env_ms;
use tokio_postgres::{Client, NoTls};

/// Writes one fenced row: accepted only if the job's fence in the table
/// is not higher than this run's.
async fn write(db: &Client, name: &str, ctx: &RunContext, what: &str) -> Result<bool, JobError> {
    let fence = i64::try_from(ctx.fence()).map_err(|e| JobError::from(e).never_retry())?;
    let at = SystemClock.wall().as_microsecond();
    let row = db
        .query_one(
            "WITH f AS (
                 INSERT INTO sink_fences (job, fence) VALUES ($2, $4)
                 ON CONFLICT (job) DO UPDATE SET fence = EXCLUDED.fence
                 WHERE sink_fences.fence <= EXCLUDED.fence
                 RETURNING 1
             )
             INSERT INTO sink_writes (name, job, occurrence, fence, run_id, what, at_us, accepted)
             VALUES ($1, $2, $3, $4, $5, $6, $7, EXISTS (SELECT 1 FROM f))
             RETURNING accepted",
            &[
                &name,
                &ctx.job(),
                &ctx.occurrence().as_second(),
                &fence,
                &ctx.run_id(),
                &what,
                &at,
            ],
        )
        .await?;
    Ok(row.get(0))
}

/// A job that writes its start, works for `hold`, and writes its end,
/// whatever it is told meanwhile.
fn job(name: &str, db: &Arc<Client>, who: &Arc<String>, hold: Duration, ttl: Duration) -> Job {
    let (db, who) = (Arc::clone(db), Arc::clone(who));
    Job::cron(name, "* * * * * *")
        .lease(ttl, ttl)
        .grace(Duration::from_millis(300))
        .run(move |ctx: RunContext| {
            let (db, who) = (Arc::clone(&db), Arc::clone(&who));
            async move {
                write(&db, &who, &ctx, "start").await?;
                tokio::time::sleep(hold).await;
                write(&db, &who, &ctx, "end").await?;
                Ok(())
            }
        })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("SERVICE_URL")?;
    let who = Arc::new(std::env::var("SERVICE_NAME").unwrap_or_else(|_| "service".into()));
    let hold = env_ms("SERVICE_HOLD_MS", 500);
    let ttl = env_ms("SERVICE_TTL_MS", 2_000);
    let (client, connection) = tokio_postgres::connect(&url, NoTls).await?;
    tokio::spawn(connection);
    let db = Arc::new(client);
    let scheduler = Scheduler::builder()
        .store(Store::postgres(&url).migrate())
        .job(job("report", &db, &who, hold, ttl))
        .job(job("cleanup", &db, &who, hold, ttl))
        .build()?;
    let app = Router::new().route("/health", get(|| async { "ok" }));
    // The jobs' status, history and page beside the service's own routes:
    // GET /baton/v1/jobs, /baton/v1/jobs/report/runs, /baton/ (and
    // /baton/metrics with the `prometheus` feature).
    #[cfg(feature = "http")]
    let app = app.merge(scheduler.router_at("/baton")?);
    let handle = scheduler.start();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("listening {}", listener.local_addr()?.port());
    axum::serve(listener, app)
        .with_graceful_shutdown(tokio::time::sleep(env_ms("SERVICE_LIFE_MS", 60_000)))
        .await?;
    handle.shutdown(Duration::from_secs(2)).await;
    Ok(())
}
