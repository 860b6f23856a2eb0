//! The scheduler: built once from its store, clock and jobs
//! ([`Builder`]), started on the caller's tokio runtime ([`Scheduler::start`]),
//! stopped with a grace ([`Handle::shutdown`]).
//!
//! Each job has one task that waits, through the clock, for its next
//! occurrence and then starts that occurrence's run (`run.rs`) as a task
//! of its own, so a run that overruns its schedule meets the next
//! occurrence at the lock (missed `busy`) rather than delaying it. When the
//! clock is found past several occurrences at once (a suspended host, a
//! test's clock moved by hours), the newest runs and the ones before it are
//! recorded missed (`superseded`), once. Before its timer, each job
//! catches up what passed while no replica ran it (`catch_up.rs`).

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};
use jiff::Timestamp;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use crate::catch_up;
use crate::env::Env;
use crate::error::BuildError;
use crate::job::Job;
use crate::launch::{drain, start_run};
use crate::ledgers::Ledger;
use crate::plan::Plan;
use crate::run;
use crate::store::Store;
use crate::timer;

/// Builds a [`Scheduler`]: [`Scheduler::builder`].
///
/// ```
/// use std::{path::Path, sync::Arc};
/// use baton_embed::{Builder, ManualClock, Scheduler, Store};
///
/// // The service's scheduler, on a test's clock when it is given one.
/// fn scheduler(state: &Path, clock: Option<Arc<ManualClock>>) -> Builder {
///     let builder = Scheduler::builder().store(Store::sqlite(state));
///     match clock {
///         Some(clock) => builder.clock(clock),
///         None => builder,
///     }
/// }
/// # let _ = scheduler;
/// ```
#[derive(Default)]
#[must_use = "a builder does nothing until .build()"]
pub struct Builder {
    store: Option<Store>,
    clock: Option<Arc<dyn Clock>>,
    jobs: Vec<Job>,
    on_alert: Option<crate::hook::Hook>,
    runner: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("store", &self.store)
            .field("jobs", &self.jobs)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// The store the replicas share (required).
    ///
    /// ```
    /// use baton_embed::{Job, Scheduler, Store};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::sqlite(dir.path());
    /// let report = || Job::cron("report", "*/5 * * * *").run(|_| async { Ok(()) });
    /// // Two replicas (two processes, usually) on one store: each
    /// // occurrence of `report` runs once, on one of them.
    /// let a = Scheduler::builder().store(store.clone()).job(report()).build()?;
    /// let b = Scheduler::builder().store(store).job(report()).build()?;
    /// # let _ = (a, b);
    /// # Ok(())
    /// # }
    /// ```
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// The clock every timer, lease and ledger timestamp reads: the
    /// system's by default, a [`baton_lease::ManualClock`] in tests.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use baton_embed::{Clock, ManualClock, Scheduler};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // A test's clock: it moves only when the test moves it.
    /// let clock = Arc::new(ManualClock::new("2026-01-01T00:00:00Z".parse()?, Duration::ZERO));
    /// let builder = Scheduler::builder().clock(clock.clone());
    /// clock.advance(Duration::from_secs(90));
    /// assert_eq!(clock.wall(), "2026-01-01T00:01:30Z".parse()?);
    /// # let _ = builder;
    /// # Ok(())
    /// # }
    /// ```
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Adds a job.
    ///
    /// ```
    /// use baton_embed::{Job, Scheduler, Store};
    ///
    /// let mut builder = Scheduler::builder().store(Store::sqlite("/var/lib/my-service/baton"));
    /// for table in ["users", "orders", "invoices"] {
    ///     let export = Job::cron(format!("export-{table}"), "0 * * * *");
    ///     builder = builder.job(export.run(|_ctx| async { Ok(()) }));
    /// }
    /// # let _ = builder;
    /// ```
    pub fn job(mut self, job: Job) -> Self {
        self.jobs.push(job);
        self
    }

    /// Calls `hook` with every alert this scheduler raises: a run that
    /// failed, failed a check or lost its lease, a run past its budget
    /// ([`Job::max_runtime`]), occurrences missed for a fault (a busy lock,
    /// a catch-up that passed them over; never a pause). Each alert is also
    /// recorded in the ledger, where `baton status` and the status page
    /// show it, and is raised once across replicas, by the one that
    /// recorded what it is about. The hook is called on the scheduler's
    /// task: keep it quick (send the alert to a channel, or spawn).
    ///
    /// ```
    /// let (tx, _alerts) = tokio::sync::mpsc::unbounded_channel();
    /// let builder = baton_embed::Scheduler::builder().on_alert(move |a: &baton_embed::Alert| {
    ///     let _ = tx.send(format!("{}: {}: {}", a.job, a.kind, a.message));
    /// });
    /// # let _ = builder;
    /// ```
    pub fn on_alert(mut self, hook: impl Fn(&crate::Alert) + Send + Sync + 'static) -> Self {
        self.on_alert = Some(Arc::new(hook));
        self
    }

    /// The `baton` binary that runs the command jobs ([`Job::command`]):
    /// by default the first `baton` on `PATH`, looked for at
    /// [`Builder::build`] when a job runs a command.
    ///
    /// ```
    /// let builder = baton_embed::Scheduler::builder().runner("/usr/bin/baton");
    /// # let _ = builder;
    /// ```
    pub fn runner(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.runner = Some(path.into());
        self
    }

    /// Checks every job and opens the store's ledger, declaring the jobs
    /// there: each job's schedule and settings, and who runs it, so that
    /// `baton status`, `history`, `pause` and `resume` on the same store
    /// show and control them without a `baton.toml`. Nothing runs yet.
    ///
    /// # Errors
    ///
    /// [`BuildError`]: no store, a bad name, schedule, zone or timing, two
    /// jobs of one name, a store or ledger that cannot be opened.
    ///
    /// ```
    /// use baton_embed::{BuildError, Job, Scheduler, Store};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let built = Scheduler::builder()
    ///     .store(Store::sqlite(dir.path()))
    ///     .job(Job::cron("report", "0 25 * * *").run(|_| async { Ok(()) })) // no 25 o'clock
    ///     .build();
    /// assert!(matches!(built, Err(BuildError::Cron { ref job, .. }) if job == "report"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn build(self) -> Result<Scheduler, BuildError> {
        let store = self.store.ok_or(BuildError::NoStore)?;
        let clock = self.clock.unwrap_or_else(|| Arc::new(SystemClock));
        let opened = store.open(&clock)?;
        let mut plans: Vec<Plan> = Vec::new();
        for job in self.jobs {
            if plans.iter().any(|p| p.name == job.name) {
                return Err(BuildError::DuplicateJob(job.name));
            }
            plans.push(Plan::of(job, |ttl| opened.renew_wait(ttl))?);
        }
        // Each job's mates: the jobs holding the same lock.
        let locks: Vec<(String, String)> = plans
            .iter()
            .map(|p| (p.lock.clone(), p.name.clone()))
            .collect();
        for p in &mut plans {
            p.mates = locks
                .iter()
                .filter(|(lock, _)| *lock == p.lock)
                .map(|(_, name)| name.clone())
                .collect();
        }
        let runner = match plans.iter().find(|p| !p.in_process()) {
            None => None,
            Some(first) => {
                let no_runner = |why: String| BuildError::NoRunner {
                    job: first.name.clone(),
                    why,
                };
                let exe = crate::runner::find(self.runner).map_err(|e| no_runner(e.to_string()))?;
                let cwd = std::env::current_dir()
                    .map_err(|e| no_runner(format!("the working directory cannot be read: {e}")))?;
                let (store_text, _) = store.as_configuration();
                // Read lossily, a path that is not UTF-8 would name another.
                if cwd.to_str().is_none() || store_text.contains('\u{fffd}') {
                    return Err(no_runner(
                        "the working directory or the store's directory is not UTF-8, which the \
                         runner's configuration cannot name"
                            .to_owned(),
                    ));
                }
                Some(Arc::new(crate::runner::Runner::new(
                    exe,
                    &store_text,
                    &cwd,
                    &plans,
                )))
            }
        };
        let plans: Vec<Arc<Plan>> = plans.into_iter().map(Arc::new).collect();
        let now = clock.wall();
        let by = crate::declare::by();
        let declared: Vec<_> = plans
            .iter()
            .map(|p| crate::declare::declaration(p, &by, now))
            .collect();
        opened
            .records(now)
            .and_then(|mut l| l.declare(&declared))
            .map_err(|source| BuildError::Ledger {
                location: opened.location(),
                source: Box::new(source),
            })?;
        Ok(Scheduler {
            store: opened,
            #[cfg(feature = "http")]
            spec: store,
            clock,
            plans,
            on_alert: self.on_alert,
            runner,
        })
    }
}

/// Jobs ready to run on a store: [`Scheduler::builder`] builds one,
/// [`Scheduler::start`] runs it.
///
/// ```no_run
/// use std::time::Duration;
/// use baton_embed::{Job, Scheduler, Store};
///
/// # async fn service() -> Result<(), Box<dyn std::error::Error>> {
/// let scheduler = Scheduler::builder()
///     .store(Store::sqlite("/var/lib/my-service/baton"))
///     .job(Job::cron("report", "*/5 * * * *").run(|ctx| async move {
///         println!("occurrence {} under fence {}", ctx.occurrence(), ctx.fence());
///         Ok(())
///     }))
///     .build()?;
/// let handle = scheduler.start();
/// // … serve until asked to stop …
/// handle.shutdown(Duration::from_secs(30)).await;
/// # Ok(())
/// # }
/// ```
pub struct Scheduler {
    store: crate::store::Opened,
    /// The store as given, for the status API's view of it.
    #[cfg(feature = "http")]
    spec: crate::Store,
    clock: Arc<dyn Clock>,
    plans: Vec<Arc<Plan>>,
    on_alert: Option<crate::hook::Hook>,
    runner: Option<Arc<crate::runner::Runner>>,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let jobs: Vec<&str> = self.plans.iter().map(|p| p.name.as_str()).collect();
        f.debug_struct("Scheduler")
            .field("store", &self.store.location())
            .field("jobs", &jobs)
            .finish_non_exhaustive()
    }
}

impl Scheduler {
    /// A builder with no store, the system clock and no jobs.
    ///
    /// ```
    /// use baton_embed::{BuildError, Scheduler};
    ///
    /// // Its store must be given before it builds.
    /// assert!(matches!(Scheduler::builder().build(), Err(BuildError::NoStore)));
    /// ```
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The status API and pages of the jobs on this scheduler's store, as
    /// `baton status --json`, `baton history JOB --json`, the daemon's page
    /// and (with feature `prometheus`) its metrics show them, for the
    /// service to merge into its own router (feature `http`), each route
    /// under `prefix` (`""`, or a path such as `"/baton"`). It reads the
    /// ledger, so it shows every job declared on the store (this
    /// scheduler's, and other services'), with their runs on every replica;
    /// the times are this scheduler's clock's.
    ///
    /// | route | answers |
    /// | --- | --- |
    /// | `GET PREFIX/v1/jobs` | what `baton status --json` prints |
    /// | `GET PREFIX/v1/jobs/{job}` | what `baton status JOB --json` prints; `404` for an unknown job |
    /// | `GET PREFIX/v1/jobs/{job}/runs?limit=N` | what `baton history JOB --json --limit N` prints (20 by default) |
    /// | `GET PREFIX/` | the status page (HTML, no script, nothing loaded from elsewhere); `PREFIX` redirects there |
    /// | `GET PREFIX/jobs/{job}` | the job's page: its runs, misses and last log |
    /// | `GET PREFIX/metrics` | Prometheus's text format, or OpenMetrics when asked (feature `prometheus`) |
    ///
    /// Errors are JSON: `{"error": CODE, "message": TEXT}`. The router reads
    /// only ([`Scheduler::control_router_at`] adds run, pause and resume): it
    /// authenticates no one, so put it behind the service's own
    /// authentication. It has no fallback, so merging it
    /// leaves the service's own.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use baton_embed::{Job, Scheduler, Store};
    ///
    /// # async fn service() -> Result<(), Box<dyn std::error::Error>> {
    /// let scheduler = Scheduler::builder()
    ///     .store(Store::sqlite("/var/lib/my-service/baton"))
    ///     .job(Job::cron("report", "*/5 * * * *").run(|_ctx| async { Ok(()) }))
    ///     .build()?;
    /// let app = axum::Router::new()
    ///     .route("/hello", axum::routing::get(|| async { "hello" }))
    ///     .merge(scheduler.router_at("/baton")?);
    /// let handle = scheduler.start();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// axum::serve(listener, app).await?;
    /// handle.shutdown(Duration::from_secs(30)).await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`BuildError::Http`] for a prefix that is not a path, or when the
    /// command line cannot read the store as given (a path or URL it does
    /// not take).
    #[cfg(feature = "http")]
    pub fn router_at(&self, prefix: &str) -> Result<axum::Router, BuildError> {
        self.routes(prefix, false)
    }

    /// [`Scheduler::router_at`] with the daemon's control routes too:
    /// `POST PREFIX/v1/jobs/{job}/pause` (empty, or a JSON object with
    /// `until`, `for` and `reason`, each optional) and `POST
    /// PREFIX/v1/jobs/{job}/resume`, which pause and resume a job on the
    /// store as `baton pause` and `baton resume` do (recorded as by
    /// `http`): `200` with `{"ok": true, "message": …}`, `400` for a body
    /// that cannot be read, `404` for an unknown job, `422` for a pause
    /// refused (one that would end at once). Every replica reads the pause
    /// before an occurrence starts. And `POST PREFIX/v1/jobs/{job}/run`
    /// (empty body): a run of the job now, queued in the ledger as an
    /// occurrence at this second for the job's scheduler on any replica
    /// (each looks at its queue every 2 s), run once under the job's lock,
    /// a paused job's once resumed: `202` with `{"job", "occurrence",
    /// "queued": true}`, `409` `decided` when that second of the job is
    /// decided already. Mount it only behind the service's authentication:
    /// whoever reaches it can run and stop the jobs.
    ///
    /// ```no_run
    /// use axum::middleware::{self, Next};
    /// use axum::{extract::Request, http::StatusCode, response::Response};
    /// # use std::time::Duration;
    /// # use baton_embed::{Job, Scheduler, Store};
    ///
    /// // The service's own authentication, here a fixed token.
    /// async fn operators(req: Request, next: Next) -> Result<Response, StatusCode> {
    ///     match req.headers().get("authorization") {
    ///         Some(token) if token == "Bearer s3cret" => Ok(next.run(req).await),
    ///         _ => Err(StatusCode::UNAUTHORIZED),
    ///     }
    /// }
    /// # async fn service() -> Result<(), Box<dyn std::error::Error>> {
    /// # let scheduler = Scheduler::builder()
    /// #     .store(Store::sqlite("/var/lib/my-service/baton"))
    /// #     .job(Job::cron("report", "*/5 * * * *").run(|_ctx| async { Ok(()) }))
    /// #     .build()?;
    /// let app = scheduler.control_router_at("/baton")?.layer(middleware::from_fn(operators));
    /// let handle = scheduler.start();
    /// # let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// axum::serve(listener, app).await?;
    /// # handle.shutdown(Duration::from_secs(30)).await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Scheduler::router_at`].
    #[cfg(feature = "http")]
    pub fn control_router_at(&self, prefix: &str) -> Result<axum::Router, BuildError> {
        self.routes(prefix, true)
    }

    #[cfg(feature = "http")]
    fn routes(&self, prefix: &str, control: bool) -> Result<axum::Router, BuildError> {
        crate::http::check_prefix(prefix)?;
        let config = crate::http::config_of(&self.spec)?;
        Ok(crate::http::router(
            config,
            Arc::clone(&self.clock),
            prefix,
            control,
        ))
    }

    /// [`Scheduler::router_at`] at the root: `GET /` is the status page,
    /// `GET /v1/jobs` the status, and so on.
    ///
    /// ```no_run
    /// # use std::time::Duration;
    /// # use baton_embed::{Job, Scheduler, Store};
    /// # async fn service() -> Result<(), Box<dyn std::error::Error>> {
    /// # let scheduler = Scheduler::builder()
    /// #     .store(Store::sqlite("/var/lib/my-service/baton"))
    /// #     .job(Job::cron("report", "*/5 * * * *").run(|_ctx| async { Ok(()) }))
    /// #     .build()?;
    /// // The status page alone, on a port of its own: `GET /` is the page.
    /// let status = scheduler.router()?;
    /// let handle = scheduler.start();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:9090").await?;
    /// tokio::spawn(async move { axum::serve(listener, status).await });
    /// # handle.shutdown(Duration::from_secs(30)).await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Scheduler::router_at`].
    #[cfg(feature = "http")]
    pub fn router(&self) -> Result<axum::Router, BuildError> {
        self.router_at("")
    }

    /// Starts every job's timer on the current tokio runtime: occurrences
    /// after this instant run. Runs are tasks of that runtime; the store's
    /// calls run on its blocking threads.
    ///
    /// ```
    /// use std::time::Duration;
    /// # use std::sync::Arc;
    /// use baton_embed::{Job, Scheduler, Store};
    /// # use baton_embed::ManualClock;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let clock = Arc::new(ManualClock::new("2026-06-01T00:00:00Z".parse()?, Duration::ZERO));
    /// let scheduler = Scheduler::builder()
    ///     .store(Store::sqlite(dir.path()))
    /// #   .clock(clock)
    ///     .job(Job::cron("report", "0 6 * * *").run(|_| async { Ok(()) }))
    ///     .build()?;
    /// // Inside the service's runtime: the timers are its tasks from here on.
    /// let handle = scheduler.start();
    /// assert_eq!(handle.in_flight(), 0); // nothing is due before 06:00
    /// handle.shutdown(Duration::from_secs(30)).await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn start(self) -> Handle {
        let (tx, rx) = watch::channel(None);
        let (in_flight, in_flight_rx) = watch::channel(0);
        let jobs = self
            .plans
            .iter()
            .map(|p| (p.name.clone(), Arc::clone(p)))
            .collect();
        let starts = (!self.store.shared()).then(|| {
            crate::starts::Starts::spawn(Arc::clone(&self.store), Arc::clone(&self.clock))
        });
        let env = Env {
            starts,
            ledgers: Arc::default(),
            store: self.store,
            clock: self.clock,
            shutdown: rx,
            in_flight: Arc::new(in_flight),
            jobs: Arc::new(jobs),
            on_alert: self.on_alert,
            runner: self.runner,
        };
        let mut tasks = JoinSet::new();
        let from = env.clock.wall();
        // What each job catches up is decided by one task on one ledger
        // (not a connection per job); each job's loop waits for its answer.
        let mut answers = Vec::new();
        for plan in self.plans {
            let (answer, wait) = oneshot::channel();
            answers.push((Arc::clone(&plan), answer));
            tasks.spawn(job_loop(env.clone(), plan, from, wait));
        }
        tasks.spawn(catch_up::decide_all(env.clone(), answers, from));
        tasks.spawn(crate::queue_watch::watch(env.clone(), env.clock.boot()));
        Handle {
            shutdown: tx,
            tasks,
            in_flight: in_flight_rx,
        }
    }
}

/// A started scheduler. Dropping it leaves the scheduler running on the
/// runtime until the runtime stops; [`Handle::shutdown`] stops it.
///
/// ```
/// use std::time::Duration;
/// use baton_embed::Handle;
///
/// // The service keeps the handle for its life, and stops with it.
/// struct Service {
///     scheduler: Handle,
/// }
/// impl Service {
///     async fn stop(self) {
///         self.scheduler.shutdown(Duration::from_secs(30)).await;
///     }
/// }
/// # let _ = Service::stop;
/// ```
#[derive(Debug)]
pub struct Handle {
    shutdown: watch::Sender<Option<Duration>>,
    tasks: JoinSet<()>,
    in_flight: watch::Receiver<usize>,
}

impl Handle {
    /// How many runs are in flight now: started, and not yet recorded and
    /// released. A look at a job's queue that may start the runs waiting
    /// there (a backfill from the command line) counts as one while it
    /// lasts.
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use baton_embed::{Job, ManualClock, Scheduler, Store};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let clock = Arc::new(ManualClock::new("2026-06-01T00:00:30Z".parse()?, Duration::ZERO));
    /// let (started, mut running) = tokio::sync::mpsc::unbounded_channel();
    /// let release = Arc::new(tokio::sync::Notify::new());
    /// let gate = Arc::clone(&release);
    /// let job = Job::cron("hourly", "0 * * * *").run(move |_| {
    ///     let (started, gate) = (started.clone(), Arc::clone(&gate));
    ///     async move { started.send(()).ok(); gate.notified().await; Ok(()) }
    /// });
    /// # let handle = Scheduler::builder().store(Store::sqlite(dir.path())).clock(clock.clone())
    /// #     .job(job).build()?.start();
    /// clock.advance(Duration::from_secs(3600)); // 01:00:30: the 01:00 run starts
    /// running.recv().await;
    /// assert_eq!(handle.in_flight(), 1); // started, not yet recorded
    /// release.notify_one();
    /// handle.idle().await;
    /// assert_eq!(handle.in_flight(), 0);
    /// # handle.shutdown(Duration::from_secs(1)).await;
    /// # Ok(())
    /// # }
    /// ```
    pub fn in_flight(&self) -> usize {
        *self.in_flight.borrow()
    }

    /// Completes once no run is in flight: each one started has recorded
    /// its verdict and released its lease. A test that steps a manual
    /// clock waits for this before the next step, so that a run's end and
    /// the next occurrence never race.
    ///
    /// ```
    /// # use std::{sync::Arc, time::Duration};
    /// # use baton_embed::{Job, ManualClock, Scheduler, Store};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// let clock = Arc::new(ManualClock::new("2026-06-01T00:00:00Z".parse()?, Duration::ZERO));
    /// let handle = Scheduler::builder()
    ///     .store(Store::sqlite(dir.path()))
    ///     .clock(clock.clone())
    ///     .job(Job::cron("hourly", "0 * * * *").run(|_| async { Ok(()) }))
    ///     .build()?
    ///     .start();
    /// clock.advance(Duration::from_secs(3600)); // 01:00: the run starts…
    /// tokio::task::yield_now().await;
    /// handle.idle().await; // …and is over, recorded and released.
    /// handle.shutdown(Duration::from_secs(1)).await;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn idle(&self) {
        let mut rx = self.in_flight.clone();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Stops taking occurrences, fires every running run's cancellation
    /// ([`crate::Cancel::Shutdown`]) and waits for the runs to return: one
    /// that has not returned within `grace` (on the scheduler's clock) is
    /// dropped. Each run is recorded (`interrupted` when it was stopped)
    /// and its lease released before this returns.
    ///
    /// ```
    /// use std::{sync::Arc, time::Duration};
    /// use baton_embed::{Cancel, Job, ManualClock, Scheduler, Store};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # let dir = tempfile::tempdir()?;
    /// # let clock = Arc::new(ManualClock::new("2026-06-01T00:00:30Z".parse()?, Duration::ZERO));
    /// let (tx, mut told) = tokio::sync::mpsc::unbounded_channel();
    /// let job = Job::cron("long", "0 * * * *").run(move |ctx| {
    ///     let tx = tx.clone();
    ///     async move {
    ///         tx.send(ctx.cancel_reason()).ok(); // None: going, not asked to stop
    ///         tx.send(Some(ctx.cancelled().await)).ok();
    ///         Ok(())
    ///     }
    /// });
    /// # let handle = Scheduler::builder().store(Store::sqlite(dir.path())).clock(clock.clone())
    /// #     .job(job).build()?.start();
    /// # clock.advance(Duration::from_secs(3600));
    /// assert_eq!(told.recv().await, Some(None)); // the run is going
    /// handle.shutdown(Duration::from_secs(30)).await; // it returns well within 30 s
    /// assert_eq!(told.recv().await, Some(Some(Cancel::Shutdown)));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn shutdown(mut self, grace: Duration) {
        let _ = self.shutdown.send(Some(grace));
        while self.tasks.join_next().await.is_some() {}
    }
}

impl Drop for Handle {
    /// Leaves the scheduler running on its runtime, as the type's doc says:
    /// its tasks are detached (a `JoinSet` dropped would abort them), and
    /// the shutdown channel is kept open for as long as they run (closed,
    /// it would read as a shutdown). After [`Handle::shutdown`] the tasks
    /// have ended and nothing is left to keep.
    fn drop(&mut self) {
        if self.tasks.is_empty() {
            return;
        }
        self.tasks.detach_all();
        // The sender lives on in the runtime: a task that holds it until
        // every receiver (the scheduler's tasks) is gone.
        let shutdown = self.shutdown.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move { shutdown.closed().await });
            }
            // Dropped outside any runtime: kept for the process's life.
            Err(_) => std::mem::forget(shutdown),
        }
    }
}

/// One job's timer: the occurrence it catches up (`caught_up`'s answer,
/// when there is one), then each occurrence after `from` starts a run.
async fn job_loop(
    env: Env,
    plan: Arc<Plan>,
    from: Timestamp,
    caught_up: oneshot::Receiver<catch_up::Start>,
) {
    let mut runs = JoinSet::new();
    let mut shutdown = env.shutdown.clone();
    tokio::select! {
        answer = caught_up => {
            if let Ok(start) = answer {
                start_caught_up(&env, &plan, start, &mut runs);
            }
        }
        _ = shutdown.wait_for(Option::is_some) => return,
    }
    let mut after = from;
    while let Some(next) = plan.schedule.next_after(after, &plan.zone) {
        tokio::select! {
            () = timer::until_wall(&*env.clock, next) => {}
            _ = shutdown.wait_for(Option::is_some) => break,
        }
        let now = env.clock.wall();
        let newest = plan
            .schedule
            .latest_at_or_before(now, &plan.zone)
            .map_or(next, |n| n.max(next));
        after = newest;
        if newest > next {
            // Several passed at once (the host slept, the clock jumped):
            // decided by the job's catch-up policy, what is missed
            // recorded before anything starts (once an occurrence after
            // them is decided, the ledger takes no miss before it).
            // Boxed: every job's loop is a task that waits, and this rare
            // path's state would otherwise make each of them larger.
            let start = Box::pin(async {
                match Ledger::open(&env).await {
                    Some(mut ledger) => {
                        catch_up::passed(&env, &mut ledger, &plan, (next, newest), now, "at once")
                            .await
                    }
                    None => catch_up::Start::Nothing,
                }
            })
            .await;
            start_caught_up(&env, &plan, start, &mut runs);
        } else {
            start_run(&env, &plan, newest, &mut runs);
        }
        while runs.try_join_next().is_some() {}
    }
    while runs.join_next().await.is_some() {}
}

/// Starts what catching up decided, as a task of `runs`: a run, or the
/// drain of the queue the passed occurrences wait in.
fn start_caught_up(env: &Env, plan: &Arc<Plan>, start: catch_up::Start, runs: &mut JoinSet<()>) {
    match start {
        catch_up::Start::Nothing => {}
        catch_up::Start::Run(at) => start_run(env, plan, at, runs),
        catch_up::Start::Queue => {
            let counted = run::InFlight::count(&env.in_flight);
            let (env, plan) = (env.clone(), Arc::clone(plan));
            runs.spawn(async move {
                drain(&env, &plan).await;
                drop(counted);
            });
        }
    }
}
