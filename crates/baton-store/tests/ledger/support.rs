//! The scenario kit: a ledger of either kind on a fresh store, fixed times,
//! runs and attempts built in one line, and the log each scenario keeps of
//! what the ledger returned, so that both kinds can be compared.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use baton_ledger::Ledger;
use baton_pg::{Options, PgLedger, Target};
use baton_store::ledger::{Attempt, Error, Finished, Miss, NewRun, Records, StepKind};
use baton_store::words::{AttemptOutcome, MissReason, RunVerdict};
use baton_testkit::pg::PgServer;
use baton_testkit::pgbouncer::PgBouncer;
use jiff::{SignedDuration, Timestamp};

/// Which implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Pg,
    /// PostgreSQL through a PgBouncer in transaction pooling mode: each
    /// transaction may run on another server connection.
    PgBouncer,
}

/// A fixed instant the scenarios count from (the ledger never reads the
/// clock).
pub fn t0() -> Timestamp {
    "2026-11-29T03:15:00Z".parse().unwrap()
}

/// `t0` plus `secs` seconds.
pub fn at(secs: i64) -> Timestamp {
    t0() + SignedDuration::from_secs(secs)
}

/// The occurrence `secs` after `t0`, in Unix seconds.
pub fn occ(secs: i64) -> i64 {
    at(secs).as_second()
}

/// A scheduled run of `job` for the occurrence `secs` after `t0`, starting
/// at it.
pub fn scheduled(job: &str, run_id: &str, secs: i64) -> NewRun {
    NewRun {
        run_id: run_id.into(),
        job: job.into(),
        occurrence: Some(occ(secs)),
        fence: Some(1_000 + secs.unsigned_abs()),
        host: "ci-1".into(),
        pid: 4242,
        started: at(secs),
        backfill: false,
    }
}

/// A range of `job`'s occurrences from `first` to `last` seconds after
/// `t0`, one a minute, no streak.
pub fn range(job: &str, reason: MissReason, first: i64, last: i64) -> Miss<'_> {
    Miss {
        job,
        reason,
        first: occ(first),
        last: occ(last),
        count: u64::try_from((last - first) / 60 + 1).unwrap(),
        at_least: false,
        detail: None,
        streak: false,
    }
}

/// One attempt of `step`, ten seconds long from `start`.
pub fn attempt(
    run: &NewRun,
    seq: u32,
    step: &str,
    outcome: AttemptOutcome,
    start: Timestamp,
) -> Attempt {
    Attempt {
        run_id: run.run_id.clone(),
        job: run.job.clone(),
        seq,
        step: step.into(),
        kind: StepKind::Step,
        attempt: 1,
        started: start,
        finished: start + SignedDuration::from_secs(10),
        exit_code: Some(if outcome == AttemptOutcome::Ok { 0 } else { 1 }),
        signal: None,
        outcome,
    }
}

/// The end of `run`, `secs` after it started.
pub fn finished(run: &NewRun, secs: i64, success: bool) -> Finished {
    Finished {
        run_id: run.run_id.clone(),
        job: run.job.clone(),
        finished: run.started + SignedDuration::from_secs(secs),
        verdict: if success {
            RunVerdict::Ok
        } else {
            RunVerdict::Failed
        },
        exit_code: if success { 0 } else { 1 },
        success,
    }
}

/// The problem of an argument refused before anything was written: both
/// ledgers say it in the same words.
pub fn refused(e: Error) -> String {
    match e {
        Error::Invalid { problem, .. } => problem,
        other => panic!("expected a refused argument, got {other:?}"),
    }
}

/// What a scenario saw, in order, for comparing both kinds.
#[derive(Debug, Default)]
pub struct Log(Vec<String>);

impl Log {
    /// Notes a value the ledger returned.
    pub fn note<T: Debug>(&mut self, what: &str, value: &T) {
        self.0.push(format!("{what}: {value:?}"));
    }
}

/// A scenario: calls on one ledger, with assertions, noting what it saw.
pub type Scenario = fn(&mut Store, &mut Log);

/// Runs `scenario` on a fresh store of `kind`.
pub fn run(kind: Kind, scenario: Scenario) -> Log {
    let mut store = Store::new(kind);
    let mut log = Log::default();
    scenario(&mut store, &mut log);
    log
}

/// Runs `scenario` on PostgreSQL, then on SQLite, and compares what both
/// saw.
pub fn run_compared(scenario: Scenario) {
    run_compared_on(Kind::Pg, scenario);
}

/// Runs `scenario` on PostgreSQL reached as `kind` says, then on SQLite,
/// and compares what both saw.
pub fn run_compared_on(kind: Kind, scenario: Scenario) {
    let pg = run(kind, scenario);
    let sqlite = run(Kind::Sqlite, scenario);
    for (i, (p, s)) in pg.0.iter().zip(&sqlite.0).enumerate() {
        assert_eq!(
            p, s,
            "value {i} differs between PostgreSQL (left) and SQLite"
        );
    }
    assert_eq!(pg.0.len(), sqlite.0.len(), "both saw as many values");
}

/// A ledger on a store of its own, and what keeps the store alive.
pub struct Store {
    /// Declared first: dropped before the store it talks to.
    pub ledger: Box<dyn Records>,
    place: Place,
}

enum Place {
    Dir(tempfile::TempDir),
    Db {
        target: Box<Target>,
        url: String,
        /// Shared with the other tests; kept up while this store uses it.
        server: Arc<PgServer>,
        /// The pooler the ledger goes through, when it goes through one
        /// (dropped before the server).
        bouncer: Option<PgBouncer>,
    },
}

impl Store {
    pub fn new(kind: Kind) -> Store {
        let place = match kind {
            Kind::Sqlite => Place::Dir(tempfile::tempdir().unwrap()),
            Kind::Pg | Kind::PgBouncer => {
                let server = server();
                let (target, url) = database(&server);
                let bouncer = (kind == Kind::PgBouncer).then(|| PgBouncer::start(&server));
                Place::Db {
                    target: Box::new(target),
                    url,
                    server,
                    bouncer,
                }
            }
        };
        let ledger = open(&place);
        Store { ledger, place }
    }

    /// Another ledger on the same store, as another process or host opens
    /// it.
    pub fn another(&self) -> Box<dyn Records> {
        open(&self.place)
    }

    /// The PostgreSQL database, for scenarios that look at it directly.
    pub fn target(&self) -> Option<&Target> {
        match &self.place {
            Place::Db { target, .. } => Some(target),
            Place::Dir(_) => None,
        }
    }

    /// The server's port, for scenarios that put a proxy before it.
    pub fn port(&self) -> Option<u16> {
        match &self.place {
            Place::Db { server, .. } => Some(server.port()),
            Place::Dir(_) => None,
        }
    }

    /// The database's URL, for scenarios that look at it directly.
    pub fn url(&self) -> Option<&str> {
        match &self.place {
            Place::Db { url, .. } => Some(url),
            Place::Dir(_) => None,
        }
    }
}

impl std::ops::Deref for Store {
    type Target = dyn Records;

    fn deref(&self) -> &Self::Target {
        &*self.ledger
    }
}

impl std::ops::DerefMut for Store {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut *self.ledger
    }
}

fn open(place: &Place) -> Box<dyn Records> {
    match place {
        Place::Dir(dir) => Box::new(Ledger::open(dir.path(), t0()).unwrap()),
        Place::Db {
            target,
            bouncer: None,
            ..
        } => Box::new(PgLedger::open(target, Options::default()).unwrap()),
        Place::Db {
            url,
            bouncer: Some(bouncer),
            ..
        } => {
            // The same database, through the pooler's port.
            let db = url.rsplit_once('/').map_or("", |(_, db)| db);
            let through = bouncer.url().replace("/postgres", &format!("/{db}"));
            let target = Target::resolve(&through, None, &|_| None).unwrap();
            Box::new(PgLedger::open(&target, Options::default()).unwrap())
        }
    }
}

/// The server the tests running now share.
pub fn server() -> Arc<PgServer> {
    PgServer::shared()
}

/// A fresh database on `server`, migrated, and its URL.
pub fn database(server: &PgServer) -> (Target, String) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!("ledger{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let url = server.url().replace("/postgres", &format!("/{name}"));
    block_on(async {
        let (client, conn) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .unwrap();
        baton_pg::migrate(&url, Options::default()).await.unwrap();
    });
    (Target::resolve(&url, None, &|_| None).unwrap(), url)
}

/// Runs `sql` on the database at `url` and returns the first column of the
/// first row.
pub fn scalar(url: &str, sql: &str) -> i64 {
    block_on(async {
        let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        client.query_one(sql, &[]).await.unwrap().get(0)
    })
}

/// Runs `f` on a runtime of its own (the tests are synchronous, as the
/// scheduler is).
pub fn block_on<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}
