//! What can go wrong, typed: a scheduler that cannot be built
//! ([`BuildError`]), and a job's own failure ([`JobError`]), which says
//! whether a retry could help. A busy lock, an occurrence another replica
//! ran, a lost lease are outcomes recorded in the ledger, never errors.

use std::time::Duration;

/// Why [`crate::Builder::build`] refused: nothing was started.
///
/// ```
/// use baton_embed::{BuildError, Job, Scheduler, Store};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// let refused = Scheduler::builder()
///     .store(Store::sqlite(dir.path()))
///     .job(Job::cron("report", "0 6 * * *").timezone("Europe/Berln").run(|_| async { Ok(()) }))
///     .build()
///     .unwrap_err();
/// assert!(matches!(&refused, BuildError::TimeZone { job, .. } if job == "report"));
/// // The message names the job and what is wrong with it.
/// assert!(refused.to_string().starts_with(r#"job "report": unknown time zone "Europe/Berln""#));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// No store was given ([`crate::Builder::store`]).
    #[error("no store: call .store(baton::Store::sqlite(dir)) before .build()")]
    NoStore,
    /// Two jobs have one name.
    #[error("two jobs are named {0:?}: a job's name is its key in the ledger and its lock")]
    DuplicateJob(String),
    /// A job's name cannot name a lock and a ledger key.
    #[error("job name {name:?} is refused: {why}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A job's lock name ([`crate::Job::lock`]) cannot name a lock.
    #[error("job {job:?}: lock name {lock:?} is refused: {why}")]
    BadLock {
        /// The job.
        job: String,
        /// The lock's name.
        lock: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A check's name ([`crate::Job::check`]) is empty, or the job's own.
    #[error("job {job:?}: check {check:?} is refused: {why}")]
    BadCheck {
        /// The job.
        job: String,
        /// The check's name.
        check: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A job was given no function to run ([`crate::Job::run`]) and no
    /// command ([`crate::Job::command`]).
    #[error(
        "job {0:?} has nothing to run: call .run(|ctx| async move {{ … }}) or .command([\"program\", …])"
    )]
    NothingToRun(String),
    /// A job's command ([`crate::Job::command`]) cannot be run.
    #[error("job {job:?}: bad command: {why}")]
    BadCommand {
        /// The job.
        job: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A command job ([`crate::Job::command`]) needs the `baton` binary,
    /// and it was not found.
    #[error(
        "job {job:?} runs a command, which needs the `baton` binary: {why}; install baton, or \
         name it with .runner(path)"
    )]
    NoRunner {
        /// The first command job.
        job: String,
        /// Why it was not found.
        why: String,
    },
    /// A job's cron expression was refused.
    #[error("job {job:?}: bad cron expression {expr:?}: {source}")]
    Cron {
        /// The job.
        job: String,
        /// The expression.
        expr: String,
        /// Why it was refused.
        source: Box<baton_cron::ParseError>,
    },
    /// A job's time zone is not one the time zone database knows.
    #[error("job {job:?}: unknown time zone {zone:?}: {source}")]
    TimeZone {
        /// The job.
        job: String,
        /// The zone asked for.
        zone: String,
        /// Why it was refused.
        source: jiff::Error,
    },
    /// A job's timing cannot keep the self-fencing rule: its run might
    /// still be going when another replica may take its lease.
    #[error("job {job:?}: {source}")]
    Unfenced {
        /// The job.
        job: String,
        /// The rule it breaks, with the values.
        source: Box<baton_runner::Unfenced>,
    },
    /// The status API's view of the store cannot be made
    /// ([`crate::Scheduler::router`]).
    #[cfg(feature = "http")]
    #[error("failed to serve the status API of the store: {why}")]
    Http {
        /// Why.
        why: String,
    },
    /// The store's location cannot be used.
    #[error("failed to use the store {location}: {why}")]
    Store {
        /// The store, its password masked.
        location: String,
        /// What is wrong with it.
        why: String,
    },
    /// The store's ledger cannot be opened: nothing could be recorded, so
    /// nothing may run.
    #[error("failed to open the ledger of {location}: {source}")]
    Ledger {
        /// The store.
        location: String,
        /// The ledger's error.
        source: Box<baton_store::ledger::Error>,
    },
    /// A setting of a job is beyond what the command line takes for the
    /// same key (a duration over ten years, more retries than 1,000, more
    /// runs kept than 1,000,000): a typo, which would also overflow the
    /// sums of times the runner makes and write into the ledger a job
    /// `baton status` cannot show.
    #[error("job {job:?}: {setting} = {value} is too large: {most}")]
    TooLarge {
        /// The job.
        job: String,
        /// The setting, as the job's method names it (`timeout`).
        setting: &'static str,
        /// Its value, as given.
        value: String,
        /// The most the setting takes (`1000 at most`).
        most: String,
    },
    /// The backoff of a job is longer than its cap.
    #[error("job {job:?}: backoff {backoff:?} is longer than backoff_max {max:?}")]
    Backoff {
        /// The job.
        job: String,
        /// Its backoff.
        backoff: Duration,
        /// Its cap.
        max: Duration,
    },
}

/// A job's failure, as its function returns it.
///
/// Any error converts into it with `?`; [`JobError::never_retry`] marks one
/// that a retry cannot fix (bad input, a refused request), so the run
/// fails at once whatever retries are left.
///
/// Like `anyhow::Error`, it is not itself a [`std::error::Error`]: that
/// would make its conversion from every error overlap the conversion of
/// a type into itself. Its cause is [`JobError::source_error`]; an
/// `anyhow::Error` or a `Box<dyn Error + Send + Sync>` comes in through
/// [`JobError::boxed`] (`JobError::boxed(e.into())`), and a `JobError`
/// goes out to a caller that wants a `Box<dyn Error>` through its text
/// (`e.to_string().into()`).
///
/// ```
/// use baton_embed::JobError;
///
/// fn parse(input: &str) -> Result<u32, JobError> {
///     // A malformed input fails the same way every time: no retry.
///     input.parse::<u32>().map_err(|e| JobError::from(e).never_retry())
/// }
/// assert!(parse("x").unwrap_err().is_never_retry());
/// assert!(!JobError::msg("the server timed out").is_never_retry());
/// ```
pub struct JobError {
    source: Box<dyn std::error::Error + Send + Sync + 'static>,
    never_retry: bool,
}

impl JobError {
    /// An error with only a message.
    ///
    /// ```
    /// use baton_embed::JobError;
    ///
    /// let rejected = 3;
    /// let e = JobError::msg(format!("{rejected} rows were rejected"));
    /// assert_eq!(e.to_string(), "3 rows were rejected");
    /// assert!(!e.is_never_retry()); // retried like any failure
    /// ```
    pub fn msg(message: impl Into<String>) -> Self {
        Self {
            source: message.into().into(),
            never_retry: false,
        }
    }

    /// An error already boxed (which `?` cannot convert: a box is not an
    /// error itself).
    ///
    /// ```
    /// use baton_embed::JobError;
    ///
    /// fn legacy_call() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    ///     Err("the upstream said no".into())
    /// }
    /// fn attempt() -> Result<(), JobError> {
    ///     legacy_call().map_err(JobError::boxed)
    /// }
    /// assert_eq!(attempt().unwrap_err().to_string(), "the upstream said no");
    /// ```
    pub fn boxed(source: Box<dyn std::error::Error + Send + Sync + 'static>) -> Self {
        Self {
            source,
            never_retry: false,
        }
    }

    /// The same error, marked as one no retry can fix: the run fails now.
    ///
    /// ```
    /// use baton_embed::{Job, JobError};
    ///
    /// # async fn post(_fence: u64) -> Result<u16, std::io::Error> { Ok(200) }
    /// let job = Job::cron("push", "*/10 * * * *").retries(3).run(|ctx| async move {
    ///     match post(ctx.fence()).await? {
    ///         // Refused: the same request would be refused again.
    ///         code @ 400..=499 => Err(JobError::msg(format!("refused: {code}")).never_retry()),
    ///         // The server's fault: retried, 3 times at most.
    ///         code @ 500.. => Err(JobError::msg(format!("server error {code}"))),
    ///         _ => Ok(()),
    ///     }
    /// });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn never_retry(mut self) -> Self {
        self.never_retry = true;
        self
    }

    /// Whether it was marked [`JobError::never_retry`].
    ///
    /// ```
    /// use baton_embed::JobError;
    ///
    /// // Tries once more at once, unless no retry can help.
    /// fn twice(f: impl Fn() -> Result<u32, JobError>) -> Result<u32, JobError> {
    ///     match f() {
    ///         Err(e) if !e.is_never_retry() => f(),
    ///         done => done,
    ///     }
    /// }
    /// let calls = std::cell::Cell::new(0);
    /// let refused = twice(|| {
    ///     calls.set(calls.get() + 1);
    ///     Err(JobError::msg("no such customer").never_retry())
    /// });
    /// assert!(refused.is_err());
    /// assert_eq!(calls.get(), 1);
    /// ```
    pub fn is_never_retry(&self) -> bool {
        self.never_retry
    }

    /// The error the job returned.
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use baton_embed::JobError;
    ///
    /// let e = JobError::from(Error::new(ErrorKind::TimedOut, "the upstream timed out"));
    /// let io = e.source_error().downcast_ref::<Error>();
    /// assert_eq!(io.map(Error::kind), Some(ErrorKind::TimedOut));
    /// ```
    pub fn source_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.source
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for JobError {
    fn from(e: E) -> Self {
        Self {
            source: Box::new(e),
            never_retry: false,
        }
    }
}

impl std::fmt::Debug for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobError")
            .field("source", &self.source)
            .field("never_retry", &self.never_retry)
            .finish()
    }
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}
