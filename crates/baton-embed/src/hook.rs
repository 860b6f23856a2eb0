//! What the service's alert hook ([`crate::Builder::on_alert`]) receives:
//! an [`Alert`], the public type, and the hook's own type ([`Hook`]).
//!
//! It only says what an alert is: raising one (recording it, calling the
//! hook) is [`crate::alert`]'s, and nothing here records or calls anything.

use std::sync::Arc;

use baton_store::words::AlertKind;
use jiff::Timestamp;

/// An alert, as the hook given to [`crate::Builder::on_alert`] receives it.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use baton_embed::{Alert, AlertKind, Job, JobError, ManualClock, Scheduler, Store};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let clock = Arc::new(ManualClock::new("2026-06-01T00:00:30Z".parse()?, Duration::ZERO));
/// let (tx, mut alerts) = tokio::sync::mpsc::unbounded_channel();
/// let handle = Scheduler::builder()
///     .store(Store::sqlite(dir.path()))
/// #   .clock(clock.clone())
///     .on_alert(move |a: &Alert| {
///         let _ = tx.send(a.clone());
///     })
///     .job(Job::cron("export", "* * * * *").run(|_| async { Err(JobError::msg("disk full")) }))
///     .build()?
///     .start();
/// # clock.advance(Duration::from_secs(30));
/// let alert = alerts.recv().await.expect("the run's alert");
/// assert_eq!((alert.job.as_str(), alert.kind), ("export", AlertKind::StepFailed));
/// assert_eq!(alert.occurrence, Some("2026-06-01T00:01:00Z".parse()?));
/// # handle.shutdown(Duration::from_secs(1)).await;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Alert {
    /// The job it concerns.
    pub job: String,
    /// What it is about, in the command line's words (`step-failed`,
    /// `lease-lost`, `overrunning`, `busy`, `missed`, …).
    pub kind: AlertKind,
    /// The run it concerns, if one.
    pub run_id: Option<String>,
    /// The occurrence it concerns (the first of a missed range), if one.
    pub occurrence: Option<Timestamp>,
    /// One line for people.
    pub message: String,
    /// When it was raised, by the scheduler's clock.
    pub time: Timestamp,
}

/// The service's hook.
pub(crate) type Hook = Arc<dyn Fn(&Alert) + Send + Sync>;
