//! What a run is told: its fence, occurrence, attempt and run id, and a
//! cancellation that fires when it must stop ([`RunContext::cancelled`]).
//!
//! A context only reports; it holds no lease and can neither renew nor
//! release one. The run that owns the lease (`run.rs`) fires the
//! cancellation, and drops the job's future if it does not return in time.

use jiff::Timestamp;
use tokio::sync::watch;

/// Why a run was asked to stop.
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
}

impl RunContext {
    /// The job's name.
    pub fn job(&self) -> &str {
        &self.job
    }

    /// The run's id, as the ledger and `baton history` show it.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The fencing token of the lease this run holds: strictly greater than
    /// every earlier holder's of the job's lock. Pass it with every write
    /// to a system that can keep the highest fence seen and refuse lower
    /// ones: that, and only that, stops a replica that was paused past its
    /// lease from writing after the next holder.
    pub fn fence(&self) -> u64 {
        self.fence
    }

    /// The scheduled instant this run is for.
    pub fn occurrence(&self) -> Timestamp {
        self.occurrence
    }

    /// Which attempt this is: 1 for the first, then one more per retry.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Why the run was asked to stop, once it was.
    pub fn cancel_reason(&self) -> Option<Cancel> {
        *self.cancel.borrow()
    }

    /// Whether the run was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancel_reason().is_some()
    }

    /// Completes once the run is asked to stop (its lease is lost, or the
    /// scheduler shuts down), with the reason. A run that has not returned
    /// within its grace after that is dropped at its next `.await`.
    pub async fn cancelled(&self) -> Cancel {
        let mut rx = self.cancel.clone();
        let why = match rx.wait_for(Option::is_some).await {
            Ok(why) => *why,
            // The run that owns the sender is gone: nothing holds the lease.
            Err(_) => Some(Cancel::LeaseLost),
        };
        why.unwrap_or(Cancel::LeaseLost)
    }
}
