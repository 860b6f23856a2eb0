//! baton's scheduler as a library: cron jobs inside a tokio service, each
//! occurrence run **once** across every replica that shares a store, never
//! two runs of a job at once, every run fenced and recorded in the ledger
//! the `baton` command line reads.
//!
//! The package is `baton-embed`; a service names it `baton` and writes
//! `baton::Scheduler`:
//!
//! ```toml
//! [dependencies]
//! baton = { package = "baton-embed", version = "0.1" }
//! # With the PostgreSQL store, for replicas on several hosts:
//! # baton = { package = "baton-embed", version = "0.1", features = ["postgres"] }
//! ```
//!
//! Features, none on by default: `postgres` (the PostgreSQL store),
//! `http` (`Scheduler::router_at`: the status API and page as an axum
//! router), `prometheus` (`GET /metrics` on that router; implies `http`).
//!
//! ```no_run
//! use std::time::Duration;
//! # use baton_embed as baton;
//!
//! # async fn service() -> Result<(), Box<dyn std::error::Error>> {
//! let scheduler = baton::Scheduler::builder()
//!     .store(baton::Store::sqlite("/var/lib/my-service/baton"))
//!     .job(
//!         baton::Job::cron("report", "*/5 * * * *")
//!             .timezone("Europe/Berlin")
//!             .retries(2)
//!             .run(|ctx: baton::RunContext| async move {
//!                 // Pass ctx.fence() with every write (see "The fence").
//!                 println!("report {} under fence {}", ctx.occurrence(), ctx.fence());
//!                 Ok(())
//!             }),
//!     )
//!     .build()?; // A bad expression, zone or store is refused here.
//! let handle = scheduler.start(); // On the caller's tokio runtime.
//! // … serve …
//! handle.shutdown(Duration::from_secs(30)).await;
//! # Ok(())
//! # }
//! ```
//!
//! # The guarantee
//!
//! Each occurrence of a job is run by at most one replica, and only while
//! that replica holds the job's lease. The order is the command line's:
//!
//! 1. the job's lease is taken with the occurrence **claimed in the same
//!    critical section** (a `flock`ed lock file in the SQLite store, a row
//!    in PostgreSQL). A replica that finds the occurrence claimed ends
//!    quietly; one that finds the lock held by a run of another occurrence
//!    (the job's previous run, still going) records the occurrence missed
//!    `busy`, once, whichever replicas try;
//! 2. `started` is recorded in the ledger under the lease, before the job's
//!    function is called: a start that cannot be recorded does not run;
//! 3. the function runs while the lease is renewed every third of its TTL;
//!    each attempt and the verdict are recorded, then the lease is released.
//!
//! A replica killed mid-run (`kill -9`, a crash, a lost host) never wedges
//! the schedule: on the same host its lease is free once its process is
//! gone; in PostgreSQL once its TTL and takeover grace have passed. The
//! next run under the lock records the dead run `abandoned`, as the
//! command line does. A run whose end the store does not take at once (a
//! PostgreSQL server restarting) writes it again, with its attempts, for
//! at least 30 s (or its TTL) while its lease is held, so it is recorded
//! as it ended rather than found unfinished. An occurrence that comes due
//! while the store does not answer (or whose start, pauses or guard it
//! cannot read or record) is not run; once the store answers again, the
//! replica records it missed (`ledger-unavailable`) before its next run,
//! unless another replica decided it.
//!
//! # Replicas that disagree
//!
//! A rolling deploy runs old and new replicas side by side. A job's
//! [`Job::lock`] changed on some replicas only is safe: the job's guard
//! (the command line's, in the same store) keeps it from running under
//! two locks at once, its occurrences meanwhile missed `busy` (or queued)
//! naming the other lock, and a run under the other lock is never recorded
//! `abandoned`. A job's schedule is each replica's own: replicas that
//! disagree run the occurrences of every schedule they hold (each once),
//! and `baton status` shows the schedule declared last. Roll a schedule
//! change out to every replica, or pause the job (`baton pause`) for the
//! roll.
//!
//! # The fence
//!
//! [`RunContext::fence`] is the lease's fencing token: it strictly grows
//! with every acquisition of the job's lock. A replica that was paused
//! (SIGSTOP, a stalled VM, a long GC) can wake after its lease moved to
//! another replica and still be running its job: no lock can stop that.
//! What stops its writes is the fence, checked by whatever the job writes
//! to: keep the highest fence seen and refuse a write with a lower one
//! (`UPDATE … WHERE fence <= $1`, a conditional put).
//!
//! # Self-fencing, and what it cannot stop
//!
//! When a renewal finds the lease gone, or no renewal has succeeded for a
//! whole TTL (plus the store's renewal wait for one under way), the run's
//! [`RunContext::cancelled`] fires at once. Each attempt runs as a tokio
//! task of its own; one that has not returned within the job's
//! [`Job::grace`] is **aborted** (its future dropped at its next `.await`,
//! and awaited until it is gone) and the run is recorded `lease-lost`
//! (`interrupted` for a shutdown). A function that returns within the grace keeps its own word
//! when it says `Ok` (it finished; what it wrote after the loss is the
//! fence's to judge), and an error it returns then is recorded as the
//! cancellation; no retry follows either way. [`Builder::build`]
//! refuses a grace that, with the renewal's wait and the allowances, could
//! outlast the takeover grace, so the function is gone before another
//! replica may take the lease (the runner's rule: `grace + renew_wait +
//! 100 ms + 1 s ≤ takeover_grace`).
//!
//! Dropping a future stops it only at an `.await`. It cannot stop:
//!
//! - a blocking section inside the future (a synchronous loop, a blocking
//!   call on the async thread): it runs on until it yields;
//! - work handed to `tokio::task::spawn_blocking` or `std::thread::spawn`,
//!   or spawned as a separate task: dropping the run does not stop them;
//! - anything already sent (a request in flight, a message queued).
//!
//! An aborted attempt that has not stopped within another grace is in a
//! blocking section: the scheduler says so (a `tracing` error naming the
//! run) and waits for it before it records the run.
//!
//! Those are what the fence is for. Keep blocking work short, or check
//! [`RunContext::is_cancelled`] between its pieces, or run the job as a
//! child process instead.
//!
//! # A job as a child process
//!
//! [`Job::command`] runs each occurrence as a `baton __run` process of the
//! `baton` binary ([`Builder::runner`]; by default the first on `PATH`),
//! the code the command line's `tick` and daemon run: the runner takes the
//! lease and the claim, records the run in the same ledger, runs the
//! command (directly, no shell, in the service's working directory, with
//! `BATON_FENCE`, `BATON_OCCURRENCE` and `BATON_RUN_ID` in its
//! environment) and stops its **whole process tree**, TERM then KILL after
//! [`Job::grace`], when the lease is lost. That stops what a dropped future
//! cannot: blocking code, threads, grandchildren. The runner holds and
//! renews the lease itself, so a run outlives a service killed with
//! `kill -9`, still fenced, and is recorded when it ends;
//! [`Handle::shutdown`] asks each running one to stop (SIGTERM: its run
//! recorded `interrupted`) and waits for its runner, which stops the
//! command's tree within [`Job::grace`] whatever the shutdown's grace. An
//! occurrence whose runner cannot be started, or refuses to run it (exit
//! 2), raises a `missed` alert to the hook and the ledger. The runner's environment holds none of the service's
//! `BATON_*` variables: the store is the scheduler's, named in the
//! configuration it is given. With the PostgreSQL store, the runs' logs
//! are written to the command line's default state directory. A command
//! job has no checks, and its alerts go to the ledger and the runner's
//! standard error, not to [`Builder::on_alert`]. It runs on the system
//! clock, whatever [`Builder::clock`] says.
//!
//! A function that panics fails its attempt (and is retried like any
//! failure) when the service unwinds on panic; built with `panic =
//! "abort"`, the process ends, and its lease is left to be judged as a
//! crashed holder's.
//!
//! # Testing with the manual clock
//!
//! Every timer, lease stamp and ledger time of the scheduler reads its
//! [`Clock`]. Give it a [`ManualClock`] and move that clock: the scheduler
//! runs what became due, at once, without real waiting, so a test steps
//! through a night, a daylight saving change or a slow run in
//! milliseconds. [`Handle::idle`] waits until the runs started are over.
//! One thing still moves a manual clock by itself: a lock file's mutex
//! that another thread holds (a renewal meeting the next occurrence's
//! attempt on the same lock) is waited for through the clock's `sleep`,
//! which advances it by the microseconds waited.
//!
//! The clock moves the leases too. While a run is in flight, move it in
//! steps shorter than the lease's renewal period (a third of the TTL, 10 s
//! by default) and let the runtime run between them (`tokio::task::yield_now`
//! or a short real sleep): one step past the TTL is a renewal that could
//! not be made in time, and the run self-fences (its [`RunContext`] is
//! cancelled with [`Cancel::LeaseLost`]; one that has not returned within
//! its grace is dropped and recorded `lease-lost`), as it would on a host
//! whose process stood still that long. Between runs, any step will do.
//!
//! ```
//! use std::{sync::Arc, time::Duration};
//! use baton_embed::{Job, ManualClock, Scheduler, Store};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let clock = Arc::new(ManualClock::new("2026-03-28T12:00:00Z".parse()?, Duration::ZERO));
//! let (tx, mut ran) = tokio::sync::mpsc::unbounded_channel();
//! let handle = Scheduler::builder()
//!     .store(Store::sqlite(dir.path()))
//!     .clock(clock.clone())
//!     .job(Job::cron("nightly", "30 2 * * *").timezone("Europe/Berlin").run(move |ctx| {
//!         let tx = tx.clone();
//!         async move { tx.send(ctx.occurrence()).map_err(baton_embed::JobError::from) }
//!     }))
//!     .build()?
//!     .start();
//! // 2026-03-29 has no 02:30 in Berlin: the run comes when the clocks
//! // jump, 03:00 CEST (01:00 UTC).
//! clock.advance(Duration::from_secs(13 * 3600));
//! assert_eq!(ran.recv().await, Some("2026-03-29T01:00:00Z".parse()?));
//! handle.shutdown(Duration::from_secs(1)).await;
//! # Ok(())
//! # }
//! ```
//!
//! # Seeing it from the command line
//!
//! The ledger is the command line's own (the same tables, the same
//! `STATE_DIR/baton.db` or schema), and [`Builder::build`] **declares**
//! each job there: its schedule, zone and settings in the command line's
//! words, and who runs it (`program on host (pid N)`). So `baton` on the
//! same store shows and controls the service's jobs with no `baton.toml`
//! of its own: give the store (`--state-dir DIR`, `BATON_STATE_DIR`, or
//! `BATON_STORE_URL` for PostgreSQL) where no `./baton.toml` is found:
//!
//! ```text
//! $ baton status --state-dir /var/lib/my-service/baton
//! report  OK  */5 * * * * (Europe/Berlin), lock report
//!   run by        my-service on host-a (pid 4121) (declared in the ledger)
//!   last run      …
//! $ baton history report --state-dir /var/lib/my-service/baton
//! $ baton pause report --for 2h --reason "migration" --state-dir /var/lib/my-service/baton
//! $ baton resume report --state-dir /var/lib/my-service/baton
//! ```
//!
//! - `baton status` (and `--json`, where such a job has `declared_by`)
//!   lists the service's jobs beside any of a `baton.toml`, with their next
//!   run, last run, steps, missed occurrences, holder and state, judged as
//!   the command line's own jobs are;
//! - `baton history JOB` lists the service's runs with their fences and
//!   attempts;
//! - `baton pause JOB` (and `baton resume JOB`) pause the service's job:
//!   the pause is a row of the shared ledger, and every replica reads it
//!   under the job's lease before an occurrence starts, recording each
//!   occurrence it covers missed `paused` (no run, no alert). Pauses that
//!   cannot be read keep the occurrence from running;
//! - `baton backfill JOB --from T --to T` asks the service to run the past
//!   occurrences the plan would run (a pause's misses, say): they are
//!   queued in the ledger, marked as a backfill's, and the first replica
//!   whose scheduler looks at the queue (every 2 s, and before each
//!   release) runs them oldest first under the job's lock, each once
//!   whichever replicas look. The command waits for their runs and
//!   reports them as for a file's job (`--dry-run`, `--json`, `--force`
//!   as there); interrupted, it leaves them queued. If no replica takes
//!   one for 60 s, it says so and exits 1, the occurrences still queued;
//! - `baton run JOB` and `baton tick JOB` refuse a job a service declared
//!   (exit 2), saying which service runs it: the command line has no
//!   function to run, and never runs it in the service's place. `baton
//!   tick` and the daemon never see such a job.
//!
//! A job both a `baton.toml` and a service name is the file's to the
//! command line. A declaration stays until its job is declared again: a
//! job a service no longer runs is still listed, with the last run it
//! made.
//!
//! # The status API and page in the service's router
//!
//! With the `http` feature, `Scheduler::router_at` returns an axum
//! router to merge into the service's own: `GET /v1/jobs` is what `baton
//! status --json` prints, `GET /v1/jobs/{job}/runs` what `baton history
//! --json` prints, `GET /` the daemon's status page and `GET /jobs/{job}`
//! a job's page; with `prometheus`, `GET /metrics` its metrics. It reads
//! the ledger, so every replica's runs are there, whichever replica
//! answers. `Scheduler::control_router_at` adds the daemon's `POST
//! /v1/jobs/{job}/run`, `/pause` and `/resume`, for a service that puts
//! them behind its own authentication. A run asked for is queued in the
//! ledger as an occurrence at that second (`202`, with `occurrence`; `409`
//! `decided` when that second is decided already), and the first replica
//! whose scheduler looks at its queue (every 2 s) runs it once, under the
//! job's lock; a paused job's waits for the resume.
//!
//! # Not yet
//!
//! This version runs cron jobs with overlap skipped or queued
//! ([`Overlap`]), catch-up of what passed while no replica ran ([`CatchUp`]:
//! latest, all or none, within a window), retries, timeouts, checks,
//! pauses, watermarks ([`RunContext::settle_watermark`]), alerts
//! ([`Builder::on_alert`], with a run budget: [`Job::max_runtime`]), locks
//! shared between jobs, self-fencing, and jobs run as child processes
//! ([`Job::command`]). It does not yet have, and refuses nothing silently
//! in their place:
//!
//! - `overlap = "replace"`;
//! - the command line's alert command and webhook: alerts go to the
//!   service's hook ([`Builder::on_alert`]) and the ledger;
//! - `max_concurrent` slots (a job's runs hold one lock: its name, or the
//!   one it shares with other jobs, [`Job::lock`]).

#![deny(missing_docs)]

mod alert;
mod catch_up;
mod child;
mod context;
mod declare;
mod env;
mod error;
mod hook;
#[cfg(feature = "http")]
mod http;
mod idle_ledgers;
mod job;
mod keeper;
mod launch;
mod ledgers;
mod plan;
mod queue_watch;
mod quote;
mod retry;
mod run;
mod runner;
mod scheduler;
mod starts;
mod store;
mod timer;

pub use baton_lease::{Clock, ManualClock, SystemClock};
pub use baton_store::words::AlertKind;
pub use context::{Cancel, RunContext};
pub use error::{BuildError, JobError};
pub use hook::Alert;
pub use job::{CATCH_UP_MAX, CatchUp, Job, Overlap};
pub use scheduler::{Builder, Handle, Scheduler};
pub use store::Store;
