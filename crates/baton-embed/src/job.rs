//! A job as a service declares it: its name, schedule and zone, retries,
//! lease timing and the async function that runs it. Declaring checks
//! nothing; [`crate::Builder::build`] refuses a bad schedule, zone or
//! timing before anything runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::context::RunContext;
use crate::error::JobError;

/// What a job's function returns, boxed.
pub(crate) type RunFuture = Pin<Box<dyn Future<Output = Result<(), JobError>> + Send>>;
/// A job's function.
pub(crate) type RunFn = Arc<dyn Fn(RunContext) -> RunFuture + Send + Sync>;

/// A check of a job ([`Job::check`]): its name and its function.
#[derive(Clone)]
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) run: RunFn,
}

/// A scheduled job, declared with [`Job::cron`] and given to
/// [`crate::Builder::job`].
///
/// Defaults are the command line's: zone UTC, no retries, a backoff of
/// 30 s doubling up to 15 min, an attempt's timeout of 1 h, a catch-up
/// window of 1 h, a 30 s lease
/// TTL and takeover grace, and a 10 s grace for a cancelled run to return.
///
/// ```
/// use std::time::Duration;
/// use baton_embed::{Job, RunContext};
///
/// let job = Job::cron("report", "*/5 * * * *")
///     .timezone("Europe/Berlin")
///     .retries(2)
///     .backoff(Duration::from_secs(10), Duration::from_secs(60))
///     .run(|ctx: RunContext| async move {
///         println!("report for {} under fence {}", ctx.occurrence(), ctx.fence());
///         Ok(())
///     });
/// # let _ = job;
/// ```
#[derive(Clone)]
pub struct Job {
    pub(crate) name: String,
    pub(crate) cron: String,
    pub(crate) zone: String,
    pub(crate) retries: u32,
    pub(crate) backoff: Duration,
    pub(crate) backoff_max: Duration,
    pub(crate) timeout: Duration,
    pub(crate) max_runtime: Duration,
    pub(crate) catch_up_window: Duration,
    pub(crate) catch_up: CatchUp,
    pub(crate) lock: Option<String>,
    pub(crate) overlap: Overlap,
    pub(crate) checks: Vec<Check>,
    pub(crate) ttl: Duration,
    pub(crate) takeover_grace: Duration,
    pub(crate) grace: Duration,
    pub(crate) history_keep: u32,
    pub(crate) run: Option<RunFn>,
    /// A command run as a child process instead ([`Job::command`]).
    pub(crate) command: Option<Vec<String>>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job")
            .field("name", &self.name)
            .field("cron", &self.cron)
            .field("zone", &self.zone)
            .field("retries", &self.retries)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Job {
    /// A job named `name` (its key in the ledger, and its lock's name) at
    /// the occurrences of a cron expression: five fields, six with seconds
    /// first, or a macro such as `@daily`, read as `baton.toml`'s
    /// `schedule` is.
    ///
    /// ```
    /// use baton_embed::Job;
    ///
    /// let poll = Job::cron("poll", "*/5 * * * *"); // five fields: every 5 minutes
    /// let ping = Job::cron("ping", "*/30 * * * * *"); // six, seconds first: every 30 s
    /// let vacuum = Job::cron("vacuum", "@daily"); // a macro: at midnight
    /// # let _ = (poll, ping, vacuum);
    /// ```
    pub fn cron(name: impl Into<String>, expr: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            cron: expr.into(),
            zone: "UTC".into(),
            retries: 0,
            backoff: Duration::from_secs(30),
            backoff_max: Duration::from_secs(15 * 60),
            timeout: Duration::from_secs(60 * 60),
            max_runtime: Duration::from_secs(2 * 60 * 60),
            catch_up_window: Duration::from_secs(60 * 60),
            catch_up: CatchUp::Latest,
            lock: None,
            overlap: Overlap::Skip,
            checks: Vec::new(),
            ttl: Duration::from_secs(30),
            takeover_grace: Duration::from_secs(30),
            grace: Duration::from_secs(10),
            history_keep: 100,
            run: None,
            command: None,
        }
    }

    /// The IANA time zone the expression is read in (UTC by default),
    /// daylight saving included (`baton_cron`'s rules: a wildcard schedule
    /// follows elapsed time, a fixed one fires once per wall-clock time).
    ///
    /// ```
    /// use baton_embed::Job;
    ///
    /// // 09:00 on weekdays in New York, in summer (13:00 UTC) as in winter (14:00 UTC).
    /// let job = Job::cron("standup", "0 9 * * 1-5")
    ///     .timezone("America/New_York")
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn timezone(mut self, zone: impl Into<String>) -> Self {
        self.zone = zone.into();
        self
    }

    /// How many times a failed attempt is tried again (0 by default).
    ///
    /// ```
    /// use baton_embed::Job;
    ///
    /// // Up to 4 attempts in all; an error marked `never_retry` ends the run at once.
    /// let job = Job::cron("sync", "*/15 * * * *")
    ///     .retries(3)
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = n;
        self
    }

    /// The delay before the first retry, doubled for each one after, at
    /// most `max`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use baton_embed::Job;
    ///
    /// // Retried after 5 s, 10 s, 20 s, then 30 s: doubled, at most 30 s.
    /// let job = Job::cron("sync", "*/15 * * * *")
    ///     .retries(4)
    ///     .backoff(Duration::from_secs(5), Duration::from_secs(30))
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn backoff(mut self, first: Duration, max: Duration) -> Self {
        self.backoff = first;
        self.backoff_max = max;
        self
    }

    /// Each attempt's limit (1 h by default; [`Duration::ZERO`] for none),
    /// on the scheduler's boot clock. An attempt past it is asked to stop
    /// ([`crate::Cancel::Timeout`]) and, if it has not returned within the
    /// grace ([`Job::grace`]), its future is dropped. Unless it returned
    /// `Ok`, the attempt is recorded `timeout` and retried like a failed
    /// one, as the command line's `timeout` key does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use baton_embed::{Job, RunContext};
    ///
    /// let job = Job::cron("export", "0 3 * * *")
    ///     .timeout(Duration::from_secs(20 * 60))
    ///     .retries(1)
    ///     .run(|ctx: RunContext| async move {
    ///         // Stops at its next await once the 20 minutes are up.
    ///         ctx.cancelled().await;
    ///         Ok(())
    ///     });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// The run's budget (2 h by default, the command line's
    /// `max_runtime`; [`Duration::ZERO`] for none): a run still going
    /// after it raises one `overrunning` alert ([`crate::Builder::on_alert`],
    /// and the ledger's alerts that `baton status` shows) and goes on:
    /// nothing is stopped ([`Job::timeout`] stops an attempt).
    ///
    /// ```
    /// use std::time::Duration;
    /// use baton_embed::Job;
    ///
    /// // Usually done in 5 minutes: an alert at 15, a stop only at 1 h.
    /// let job = Job::cron("report", "0 6 * * *")
    ///     .max_runtime(Duration::from_secs(15 * 60))
    ///     .timeout(Duration::from_secs(60 * 60))
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn max_runtime(mut self, budget: Duration) -> Self {
        self.max_runtime = budget;
        self
    }

    /// How late an occurrence that passed while no replica of the service
    /// ran may still start when the scheduler starts (1 h by default, the
    /// command line's `catch_up_window`; [`Duration::ZERO`] for none). The
    /// newest occurrence since the job's last decided one (and not before
    /// the ledger first saw the job) runs at the start if it is within the
    /// window; the ones before it are recorded missed `superseded`, or, when
    /// it is older than the window, all of them `outside-window`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use baton_embed::Job;
    ///
    /// // A service back before 08:00 still runs the night's 02:00 run;
    /// // one back later records it missed `outside-window`.
    /// let job = Job::cron("nightly", "0 2 * * *")
    ///     .catch_up_window(Duration::from_secs(6 * 3600))
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn catch_up_window(mut self, window: Duration) -> Self {
        self.catch_up_window = window;
        self
    }

    /// What an occurrence does when it comes due while a run holds the
    /// job's lock (its previous run, overrunning, or another job's on a
    /// shared lock): [`Overlap::Skip`] by default, as the command line's
    /// `overlap` key.
    ///
    /// ```
    /// use baton_embed::{Job, Overlap};
    ///
    /// // A slow run never loses the occurrence behind it: it runs next.
    /// let job = Job::cron("sync", "*/1 * * * *")
    ///     .overlap(Overlap::Queue)
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn overlap(mut self, overlap: Overlap) -> Self {
        self.overlap = overlap;
        self
    }

    /// What runs of the occurrences that passed while no replica ran the
    /// job (the service was down, its host suspended), as the command
    /// line's `catch_up` key: [`CatchUp::Latest`] by default. Only those
    /// within [`Job::catch_up_window`] are caught up; older ones are missed
    /// `outside-window`.
    ///
    /// ```
    /// use baton_embed::{CatchUp, Job};
    ///
    /// // Every hour's invoice runs, however long the service was down
    /// // (up to a day, the newest 100 at most), oldest first.
    /// let job = Job::cron("invoices", "0 * * * *")
    ///     .catch_up(CatchUp::All)
    ///     .catch_up_window(std::time::Duration::from_secs(24 * 3600))
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn catch_up(mut self, catch_up: CatchUp) -> Self {
        self.catch_up = catch_up;
        self
    }

    /// The lock the job's runs hold (its own name by default), as the
    /// command line's `lock` key: jobs that name the same lock never run at
    /// once, whichever replica or scheduler runs them, and on the same
    /// store a job of a `baton.toml` with `lock = "…"` the same shares it
    /// too. An occurrence that meets another job's run on the lock is
    /// missed `busy`, as one that meets its own job's previous run.
    ///
    /// ```
    /// use baton_embed::{Job, RunContext};
    ///
    /// // The export and the vacuum never touch the database at once.
    /// let export = Job::cron("export", "0 * * * *").lock("db").run(|_ctx: RunContext| async { Ok(()) });
    /// let vacuum = Job::cron("vacuum", "30 * * * *").lock("db").run(|_ctx: RunContext| async { Ok(()) });
    /// # let _ = (export, vacuum);
    /// ```
    #[must_use]
    pub fn lock(mut self, name: impl Into<String>) -> Self {
        self.lock = Some(name.into());
        self
    }

    /// The lease's TTL (renewed every third of it) and the takeover grace a
    /// replica that cannot check the holder waits after it expires.
    ///
    /// ```
    /// use std::time::Duration;
    /// use baton_embed::Job;
    ///
    /// // Renewed every 20 s; a replica that cannot check the holder (one on
    /// // another host) may take it over 60 s after it expired.
    /// let job = Job::cron("export", "0 * * * *")
    ///     .lease(Duration::from_secs(60), Duration::from_secs(60))
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn lease(mut self, ttl: Duration, takeover_grace: Duration) -> Self {
        self.ttl = ttl;
        self.takeover_grace = takeover_grace;
        self
    }

    /// How long a cancelled run has to return before its future is
    /// dropped. With a lost lease it must end before the lease can move:
    /// [`crate::Builder::build`] refuses a grace that, with the renewal's
    /// wait and the allowances, exceeds the takeover grace.
    ///
    /// ```
    /// use std::time::Duration;
    /// use baton_embed::{BuildError, Job, Scheduler, Store};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let ten = Duration::from_secs(10);
    /// let job = |grace| Job::cron("export", "0 * * * *").lease(ten, ten).grace(grace);
    /// let build = |job: Job| {
    ///     let job = job.run(|_| async { Ok(()) });
    ///     Scheduler::builder().store(Store::sqlite(dir.path())).job(job).build()
    /// };
    /// // 9 s, with the renewal's wait, could outlast the 10 s takeover grace.
    /// let refused = build(job(Duration::from_secs(9)));
    /// assert!(matches!(refused, Err(BuildError::Unfenced { .. })));
    /// build(job(Duration::from_secs(2)))?; // ends before the lease can move
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// How many of the job's runs the ledger keeps (100 by default).
    ///
    /// ```
    /// use baton_embed::Job;
    ///
    /// // Every 5 minutes: `baton history poll` reaches back about 3.5 days.
    /// let job = Job::cron("poll", "*/5 * * * *")
    ///     .history_keep(1000)
    ///     .run(|_ctx| async { Ok(()) });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn history_keep(mut self, n: u32) -> Self {
        self.history_keep = n;
        self
    }

    /// Adds a check, run once after the job's function is done, whatever
    /// it came to (its last attempt failed too), never retried, in the
    /// order added, under the same lease and fence, with the same timeout
    /// and cancellation: the command line's `[[jobs.NAME.checks]]`. A
    /// check that fails makes a run that succeeded `check-failed`; a run
    /// stopped (lease lost, shutdown) runs no check. Each is recorded as an
    /// attempt of kind `check`, named `name`.
    ///
    /// ```
    /// use baton_embed::{Job, JobError, RunContext};
    ///
    /// # async fn rows_written(_day: jiff::Timestamp) -> Result<u64, std::io::Error> { Ok(1) }
    /// let job = Job::cron("report", "0 6 * * *")
    ///     .run(|_ctx: RunContext| async { Ok(()) })
    ///     .check("rows", |ctx: RunContext| async move {
    ///         match rows_written(ctx.occurrence()).await? {
    ///             0 => Err(JobError::msg("the report wrote no rows")),
    ///             _ => Ok(()),
    ///         }
    ///     });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn check<F, Fut>(mut self, name: impl Into<String>, f: F) -> Self
    where
        F: Fn(RunContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.checks.push(Check {
            name: name.into(),
            run: Arc::new(move |ctx| Box::pin(f(ctx)) as RunFuture),
        });
        self
    }

    /// The function each attempt runs (in place of a
    /// [`Job::command`] given before).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use baton_embed::{Job, RunContext};
    ///
    /// let pool = Arc::new(String::from("db pool")); // what the runs share
    /// let job = Job::cron("report", "0 6 * * *").run(move |ctx: RunContext| {
    ///     // Called for every attempt: each takes its own handle.
    ///     let pool = Arc::clone(&pool);
    ///     async move {
    ///         println!("{} on {pool} under fence {}", ctx.job(), ctx.fence());
    ///         Ok(())
    ///     }
    /// });
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn run<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(RunContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.run = Some(Arc::new(move |ctx| Box::pin(f(ctx)) as RunFuture));
        self.command = None;
        self
    }

    /// Runs each occurrence as a child process under the command line's
    /// runner instead of a function (in place of a [`Job::run`] given
    /// before): `argv` is the program and its arguments, run directly (no
    /// shell), in the service's working directory.
    ///
    /// For what an `async` function cannot promise: a run that must be
    /// stopped whole when its lease is lost (the runner stops the
    /// command's whole process tree, TERM then KILL after
    /// [`Job::grace`]), code that blocks, or a run that must outlive a
    /// crash of the service (the runner holds and renews the lease itself,
    /// and records the run, if the service is killed). Each occurrence is a
    /// `baton __run` process of the `baton` binary
    /// ([`crate::Builder::runner`]), the same code the command line's
    /// `tick` and daemon run: claimed once across replicas, fenced
    /// (`BATON_FENCE` in the command's environment), retried, timed out
    /// and recorded as the command line's own jobs are.
    ///
    /// A command job has no checks ([`Job::check`] is refused at build),
    /// and its alerts are recorded in the ledger and written to standard
    /// error by its runner, not given to [`crate::Builder::on_alert`].
    ///
    /// ```
    /// use baton_embed::Job;
    ///
    /// let job = Job::cron("vacuum", "0 3 * * *")
    ///     .timezone("Europe/Berlin")
    ///     .command(["psql", "-c", "vacuum analyze"]);
    /// # let _ = job;
    /// ```
    #[must_use]
    pub fn command<I, S>(mut self, argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.command = Some(argv.into_iter().map(Into::into).collect());
        self.run = None;
        self
    }
}

/// What an occurrence does when it comes due while a run holds its job's
/// lock ([`Job::overlap`]).
///
/// ```
/// use baton_embed::{Job, Overlap};
///
/// // By default an occurrence that meets a run still going is missed `busy`.
/// assert_eq!(Overlap::default(), Overlap::Skip);
/// let poll = Job::cron("poll", "* * * * *").overlap(Overlap::Skip);
/// let sync = Job::cron("sync", "* * * * *").overlap(Overlap::Queue);
/// # let _ = (poll, sync);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overlap {
    /// It is recorded missed `busy`, once across every replica, and does
    /// not run (`overlap = "skip"`).
    #[default]
    Skip,
    /// It waits in the ledger's queue and runs as soon as the run in
    /// flight ends, under the same lease, by whichever replica holds it
    /// (`overlap = "queue"`). At most one occurrence waits: the ones that
    /// come due while it waits join it (recorded `coalesced`), so a run
    /// that overruns by hours is followed by one run, not a backlog.
    Queue,
}

impl Overlap {
    /// The command line's word for it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::Queue => "queue",
        }
    }
}

/// What runs of a job's occurrences that passed while no replica ran it
/// ([`Job::catch_up`]), each decided once across replicas.
///
/// ```
/// use baton_embed::{CatchUp, Job};
///
/// assert_eq!(CatchUp::default(), CatchUp::Latest);
/// // A heartbeat late is worthless: only one due now runs.
/// let heartbeat = Job::cron("heartbeat", "* * * * *").catch_up(CatchUp::None);
/// // Each hour's invoices run, oldest first.
/// let invoices = Job::cron("invoices", "0 * * * *").catch_up(CatchUp::All);
/// # let _ = (heartbeat, invoices);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CatchUp {
    /// The newest runs; the ones before it are missed `superseded`
    /// (`catch_up = "latest"`).
    #[default]
    Latest,
    /// Each runs, oldest first, one after another under one lease (they
    /// wait in the ledger's queue): the newest [`CATCH_UP_MAX`] of them,
    /// the older ones missed `catch-up-max` (`catch_up = "all"`).
    All,
    /// Only an occurrence due now runs: the newest, when it is at most a
    /// minute old; every other is missed `late` (`catch_up = "none"`).
    None,
}

/// How many passed occurrences [`CatchUp::All`] runs at most, the newest:
/// the command line's `catch_up_max` default.
///
/// ```
/// use std::time::Duration;
/// use baton_embed::{CATCH_UP_MAX, CatchUp, Job};
///
/// // Down for a week: 168 hourly occurrences passed; the newest 100 run,
/// // the 68 before them are missed `catch-up-max`.
/// let week = Duration::from_secs(7 * 24 * 3600);
/// assert_eq!(168_usize.min(CATCH_UP_MAX), 100);
/// let job = Job::cron("invoices", "0 * * * *").catch_up(CatchUp::All).catch_up_window(week);
/// # let _ = job;
/// ```
pub const CATCH_UP_MAX: usize = 100;

impl CatchUp {
    /// The command line's word for it.
    pub(crate) fn word(self) -> &'static str {
        match self {
            CatchUp::Latest => "latest",
            CatchUp::All => "all",
            CatchUp::None => "none",
        }
    }
}
