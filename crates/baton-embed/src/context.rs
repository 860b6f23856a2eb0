//! What a run is told: its fence, occurrence, attempt and run id, and a
//! cancellation that fires when it must stop ([`RunContext::cancelled`]).
//!
//! A context only reports; it holds no lease and can neither renew nor
//! release one. The run that owns the lease (`run.rs`) fires the
//! cancellation, and drops the job's future if it does not return in time.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::Clock;
use baton_store::store::{LockRef, Vouch};
use jiff::Timestamp;
use tokio::sync::watch;

use crate::error::JobError;

/// Why a run was asked to stop.
///
/// ```
/// use baton_embed::{Cancel, Job, JobError};
///
/// # async fn export_rows(_fence: u64) -> Result<(), std::io::Error> { Ok(()) }
/// let job = Job::cron("export", "0 3 * * *").retries(1).run(|ctx| async move {
///     tokio::select! {
///         done = export_rows(ctx.fence()) => Ok(done?),
///         why = ctx.cancelled() => match why {
///             // Past its timeout, the lease still held: the retry may get through.
///             Cancel::Timeout => Err(JobError::msg("the export took too long")),
///             // The lease lost, or the service stopping: stop writing now.
///             _ => Err(JobError::msg(format!("the export was stopped: {why:?}"))),
///         },
///     }
/// });
/// # let _ = job;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Cancel {
    /// Its lease was lost, or could not be renewed in time: another
    /// replica may take it soon, and any write not checked against the
    /// fence may then land after that replica's.
    LeaseLost,
    /// The scheduler is shutting down ([`crate::Handle::shutdown`]).
    Shutdown,
    /// The attempt ran past its job's timeout ([`crate::Job::timeout`]).
    /// The lease is still held: the attempt is recorded `timeout`, and
    /// retried when the job has retries left.
    Timeout,
}

/// One attempt of one occurrence of a job, as its function sees it.
///
/// ```
/// use baton_embed::{JobError, RunContext};
///
/// # async fn write_rows(_fence: u64, _day: jiff::Timestamp, _part: u32) -> Result<(), std::io::Error> { Ok(()) }
/// async fn report(ctx: RunContext) -> Result<(), JobError> {
///     for part in 0..10 {
///         // Stop between parts once asked (lease lost, or shutdown).
///         if ctx.is_cancelled() {
///             return Err(JobError::msg("stopped between parts"));
///         }
///         // Every write carries the fence: a store that keeps the highest
///         // fence it saw refuses a replica whose lease has moved on.
///         write_rows(ctx.fence(), ctx.occurrence(), part).await?;
///     }
///     Ok(())
/// }
/// # let _ = report;
/// ```
#[derive(Debug, Clone)]
pub struct RunContext {
    pub(crate) job: String,
    pub(crate) run_id: String,
    pub(crate) fence: u64,
    pub(crate) occurrence: Timestamp,
    pub(crate) attempt: u32,
    pub(crate) cancel: watch::Receiver<Option<Cancel>>,
    pub(crate) lease: Arc<Lease>,
}

/// The lease a run holds, as its watermark's settling asks the store to
/// vouch for it: the store, the lock and the token.
pub(crate) struct Lease {
    pub(crate) store: crate::store::Opened,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) token: String,
    pub(crate) lock: String,
    pub(crate) ttl: Duration,
    pub(crate) takeover_grace: Duration,
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lease")
            .field("lock", &self.lock)
            .finish_non_exhaustive()
    }
}

impl RunContext {
    /// The job's name.
    ///
    /// ```
    /// use baton_embed::{Job, JobError, RunContext};
    ///
    /// # async fn export(_table: &str, _fence: u64) -> Result<(), std::io::Error> { Ok(()) }
    /// // One function for two jobs: each run knows which job it is.
    /// async fn export_table(ctx: RunContext) -> Result<(), JobError> {
    ///     let table = ctx.job().trim_start_matches("export-");
    ///     Ok(export(table, ctx.fence()).await?)
    /// }
    /// let users = Job::cron("export-users", "0 * * * *").run(export_table);
    /// let orders = Job::cron("export-orders", "30 * * * *").run(export_table);
    /// # let _ = (users, orders);
    /// ```
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The run's id, as the ledger and `baton history` show it.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// async fn report(ctx: RunContext) -> Result<(), JobError> {
    ///     // The service's log names the run as `baton history report` does.
    ///     eprintln!("report: run {} attempt {} started", ctx.run_id(), ctx.attempt());
    ///     Ok(())
    /// }
    /// # let _ = report;
    /// ```
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The fencing token of the lease this run holds: strictly greater than
    /// every earlier holder's of the job's lock. Pass it with every write
    /// to a system that can keep the highest fence seen and refuse lower
    /// ones: that, and only that, stops a replica that was paused past its
    /// lease from writing after the next holder.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # struct Db;
    /// # impl Db {
    /// #     async fn execute(&self, _sql: &str, _fence: u64) -> std::io::Result<u64> { Ok(1) }
    /// # }
    /// async fn publish(ctx: RunContext, db: &Db) -> Result<(), JobError> {
    ///     // The row keeps the highest fence that wrote it: a replica that
    ///     // lost the lease (a lower fence) changes nothing.
    ///     let sql = "UPDATE report SET body = 'new', fence = $1 WHERE fence <= $1";
    ///     match db.execute(sql, ctx.fence()).await? {
    ///         0 => Err(JobError::msg("a newer run wrote the report").never_retry()),
    ///         _ => Ok(()),
    ///     }
    /// }
    /// # let _ = publish;
    /// ```
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The scheduled instant this run is for.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # async fn write_report(_day: jiff::civil::Date) -> Result<(), std::io::Error> { Ok(()) }
    /// async fn daily(ctx: RunContext) -> Result<(), JobError> {
    ///     // The day the run is for, not the day it happens to run on (a
    ///     // catch-up after a night down, a retry past midnight).
    ///     let day = ctx.occurrence().in_tz("Europe/Berlin")?.date();
    ///     Ok(write_report(day).await?)
    /// }
    /// # let _ = daily;
    /// ```
    pub fn occurrence(&self) -> Timestamp {
        self.occurrence
    }

    /// Which attempt this is: 1 for the first, then one more per retry.
    ///
    /// ```
    /// use baton_embed::{Job, JobError, RunContext};
    ///
    /// # async fn download(_url: &str) -> Result<(), std::io::Error> { Ok(()) }
    /// async fn fetch(ctx: RunContext) -> Result<(), JobError> {
    ///     // The first attempt asks the mirror, the retries the origin.
    ///     let url = match ctx.attempt() {
    ///         1 => "https://mirror.example/feed",
    ///         _ => "https://origin.example/feed",
    ///     };
    ///     Ok(download(url).await?)
    /// }
    /// let job = Job::cron("fetch", "0 * * * *").retries(2).run(fetch);
    /// # let _ = job;
    /// ```
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Why the run was asked to stop, once it was.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # async fn process(_chunk: u32, _fence: u64) -> Result<(), std::io::Error> { Ok(()) }
    /// async fn batch(ctx: RunContext) -> Result<(), JobError> {
    ///     for chunk in 0..100 {
    ///         // `None` until the run is asked to stop.
    ///         if let Some(why) = ctx.cancel_reason() {
    ///             return Err(JobError::msg(format!("stopped before chunk {chunk}: {why:?}")));
    ///         }
    ///         process(chunk, ctx.fence()).await?;
    ///     }
    ///     Ok(())
    /// }
    /// # let _ = batch;
    /// ```
    pub fn cancel_reason(&self) -> Option<Cancel> {
        *self.cancel.borrow()
    }

    /// Whether the run was asked to stop.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # fn compact_segment(_segment: u32) {}
    /// async fn compact(ctx: RunContext) -> Result<(), JobError> {
    ///     // Blocking work goes on when the run's future is dropped: it asks.
    ///     let work = tokio::task::spawn_blocking(move || {
    ///         for segment in 0..64 {
    ///             if ctx.is_cancelled() {
    ///                 return Err(JobError::msg(format!("stopped before segment {segment}")));
    ///             }
    ///             compact_segment(segment); // synchronous, a few milliseconds
    ///         }
    ///         Ok(())
    ///     });
    ///     work.await?
    /// }
    /// # let _ = compact;
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.cancel_reason().is_some()
    }

    /// Completes once the run is asked to stop (its lease is lost, or the
    /// scheduler shuts down), with the reason. A run that has not returned
    /// within its grace after that is dropped at its next `.await`.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # async fn start_build(_fence: u64) -> Result<u64, std::io::Error> { Ok(7) }
    /// # async fn build_done(_id: u64) -> Result<(), std::io::Error> { Ok(()) }
    /// # async fn stop_build(_id: u64) -> Result<(), std::io::Error> { Ok(()) }
    /// async fn remote_build(ctx: RunContext) -> Result<(), JobError> {
    ///     let id = start_build(ctx.fence()).await?;
    ///     tokio::select! {
    ///         done = build_done(id) => Ok(done?),
    ///         why = ctx.cancelled() => {
    ///             // Dropping the run cannot stop what was sent: stop it,
    ///             // within the job's grace.
    ///             stop_build(id).await?;
    ///             Err(JobError::msg(format!("build {id} stopped: {why:?}")))
    ///         }
    ///     }
    /// }
    /// # let _ = remote_build;
    /// ```
    pub async fn cancelled(&self) -> Cancel {
        let mut rx = self.cancel.clone();
        let why = match rx.wait_for(Option::is_some).await {
            Ok(why) => *why,
            // The run that owns the sender is gone: nothing holds the lease.
            Err(_) => Some(Cancel::LeaseLost),
        };
        why.unwrap_or(Cancel::LeaseLost)
    }

    /// The job's watermark: the newest value a run of it settled
    /// ([`RunContext::settle_watermark`], or `baton watermark settle` from
    /// a step of the command line's job of the name); `None` before the
    /// first. What an incremental job reads to know where to start.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # async fn copy_rows_since(_from: &str, _fence: u64) -> std::io::Result<String> {
    /// #     Ok("2026-12-01".into())
    /// # }
    /// async fn sync(ctx: RunContext) -> Result<(), JobError> {
    ///     // `None` on the job's first run: start from the beginning.
    ///     let from = ctx.watermark().await?.unwrap_or_else(|| "1970-01-01".to_owned());
    ///     let reached = copy_rows_since(&from, ctx.fence()).await?;
    ///     ctx.settle_watermark(reached).await
    /// }
    /// # let _ = sync;
    /// ```
    ///
    /// # Errors
    ///
    /// When the ledger cannot be read.
    pub async fn watermark(&self) -> Result<Option<String>, JobError> {
        let (lease, job) = (Arc::clone(&self.lease), self.job.clone());
        let read = tokio::task::spawn_blocking(move || {
            let mut ledger = lease.store.records(lease.clock.wall())?;
            ledger.watermark(&job)
        })
        .await
        .map_err(|e| JobError::msg(format!("the watermark could not be read: {e}")))?;
        match read {
            Ok(w) => Ok(w.map(|w| w.value)),
            Err(e) => Err(JobError::msg(format!(
                "the watermark could not be read: {e}"
            ))),
        }
    }

    /// Settles the job's watermark at `value` (at most 4096 bytes, no
    /// NUL), recorded with this run and its fence, as `baton watermark
    /// settle` does: only while this run holds the job's lease, checked by
    /// the store under the lock (the lock file's critical section, or the
    /// lease row read holding this run's token), so a replica whose lease
    /// moved on can never move the watermark. A run that fails before it
    /// settles leaves the old value: its retry, or the next run, reads the
    /// same window again.
    ///
    /// ```
    /// use baton_embed::{JobError, RunContext};
    ///
    /// # async fn export_since(_from: Option<&str>, _fence: u64) -> Result<String, std::io::Error> { Ok("2026-12-01".into()) }
    /// async fn incremental(ctx: RunContext) -> Result<(), JobError> {
    ///     let from = ctx.watermark().await?;
    ///     let reached = export_since(from.as_deref(), ctx.fence()).await?;
    ///     ctx.settle_watermark(reached).await
    /// }
    /// # let _ = incremental;
    /// ```
    ///
    /// # Errors
    ///
    /// A refusal, never retried: the run no longer holds the lease (it was
    /// lost, or broken), or the value is too long or holds a NUL. A store
    /// or ledger that cannot be reached fails the attempt like any error.
    pub async fn settle_watermark(&self, value: impl Into<String>) -> Result<(), JobError> {
        let (lease, job, value) = (Arc::clone(&self.lease), self.job.clone(), value.into());
        let done = tokio::task::spawn_blocking(move || {
            let mut ledger = lease
                .store
                .records(lease.clock.wall())
                .map_err(|e| JobError::msg(format!("the watermark was not settled: {e}")))?;
            let lock = LockRef {
                job: &job,
                lock: &lease.lock,
                slot: 1,
                ttl: lease.ttl,
                takeover_grace: lease.takeover_grace,
            };
            let mut settled = None;
            let vouched = lease
                .store
                .while_held(&lock, &lease.token, &mut |fence, run| {
                    settled =
                        Some(ledger.settle(&job, &value, run, Some(fence), lease.clock.wall()));
                });
            match (vouched, settled) {
                (Ok(Vouch::Holder { .. }), Some(Ok(_))) => Ok(()),
                (
                    Ok(Vouch::Holder { .. }),
                    Some(Err(e @ baton_store::ledger::Error::Invalid { .. })),
                ) => {
                    Err(JobError::msg(format!("the watermark was not settled: {e}")).never_retry())
                }
                (Ok(Vouch::Holder { .. }), Some(Err(e))) => {
                    Err(JobError::msg(format!("the watermark was not settled: {e}")))
                }
                (Ok(Vouch::Holder { .. }), None) => {
                    Err(JobError::msg("the watermark was not settled"))
                }
                (Ok(Vouch::NotHolder(now) | Vouch::Missing(now)), _) => {
                    Err(JobError::msg(format!(
                        "the watermark was not settled: this run no longer holds {job}'s lease \
                         ({now}); it stays as it was"
                    ))
                    .never_retry())
                }
                (Err(e), _) => Err(JobError::msg(format!(
                    "the watermark was not settled: the lease could not be checked: {e}"
                ))),
            }
        })
        .await;
        done.map_err(|e| JobError::msg(format!("the watermark was not settled: {e}")))?
    }
}
