//! Shared fixtures: the fence-checking sink's reader and checks, the
//! replica processes (`examples/replica.rs`), and a job that reports to
//! the test through a channel.

#![allow(clippy::disallowed_methods)] // Test fixtures wait for real.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One run as the sink saw it.
#[derive(Debug, Clone)]
pub struct SinkRun {
    pub job: String,
    pub occurrence: i64,
    pub fence: u64,
    pub run_id: String,
    pub start: i64,
    pub end: Option<i64>,
    pub pid: u32,
}

/// Reads the sink: every run that started, with its end when it wrote one.
pub fn read_sink(sink: &Path) -> Vec<SinkRun> {
    let text = std::fs::read_to_string(sink).unwrap_or_default();
    let mut runs: BTreeMap<String, SinkRun> = BTreeMap::new();
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        assert_eq!(w.len(), 7, "a sink line: {line:?}");
        let (what, run_id, t) = (w[0], w[4].to_owned(), w[5].parse().unwrap());
        if what == "start" {
            let before = runs.insert(
                run_id.clone(),
                SinkRun {
                    job: w[1].into(),
                    occurrence: w[2].parse().unwrap(),
                    fence: w[3].parse().unwrap(),
                    run_id,
                    start: t,
                    end: None,
                    pid: w[6].parse().unwrap(),
                },
            );
            assert!(before.is_none(), "a run started twice: {line}");
        } else {
            let run = runs.get_mut(&run_id).expect("an end after its start");
            run.end = Some(t);
        }
    }
    let mut runs: Vec<SinkRun> = runs.into_values().collect();
    runs.sort_by_key(|r| r.start);
    runs
}

/// Checks the guarantee on what the sink saw: each occurrence ran once,
/// no two runs overlapped, and fences only grew in the order runs started
/// (or stayed, for runs one after another under one lease).
/// A run with no end (its replica was killed) overlaps nothing that
/// started after a higher fence took over.
pub fn check_sink(runs: &[SinkRun]) {
    let mut seen = BTreeMap::new();
    for r in runs {
        if let Some(other) = seen.insert((r.job.clone(), r.occurrence), r) {
            panic!("occurrence {} ran twice: {other:?} and {r:?}", r.occurrence);
        }
    }
    let jobs: std::collections::BTreeSet<&str> = runs.iter().map(|r| r.job.as_str()).collect();
    for job in jobs {
        let mut of_job: Vec<&SinkRun> = runs.iter().filter(|r| r.job == job).collect();
        of_job.sort_by_key(|r| r.start);
        for pair in of_job.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            // One lease runs the queue's occurrences one after another
            // under one fence (`Overlap::Queue`).
            let same_tenure = b.fence == a.fence && a.pid == b.pid && a.end.is_some();
            assert!(
                b.fence > a.fence || same_tenure,
                "fences must grow in start order: {a:?} then {b:?}"
            );
            if let Some(end) = a.end {
                assert!(end <= b.start, "two runs at once: {a:?} and {b:?}");
            }
        }
    }
}

/// The replica example's binary, built beside this test once per test
/// run ([`example`]).
pub fn replica_bin() -> PathBuf {
    example("replica")
}

/// The example `name`'s path, every example built first with this test's
/// features: `cargo test --test embed` builds no example by itself, and a
/// stale one would test old code. They are built together, once per test
/// run, by the first test that needs one (the others wait for it), so that
/// no build loads the machine while another test's replicas are timed.
pub fn example(name: &str) -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let mut build = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        build.args(["build", "--quiet", "-p", "baton-embed", "--examples"]);
        if cfg!(feature = "postgres") {
            build.args(["--features", "postgres"]);
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "failed to build the examples");
    });
    let mut dir = std::env::current_exe().unwrap();
    dir.pop();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("examples").join(name)
}

/// A replica process; killed when dropped.
pub struct Replica(pub Child);

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts a replica on `store` (`sqlite:DIR` or `postgres:URL`).
pub fn replica(store: &str, sink: &Path, hold_ms: u64, life_ms: u64, ttl_ms: u64) -> Replica {
    replica_with(store, sink, hold_ms, life_ms, ttl_ms, &[])
}

/// [`replica`], with `env` set too (`REPLICA_OVERLAP`).
pub fn replica_with(
    store: &str,
    sink: &Path,
    hold_ms: u64,
    life_ms: u64,
    ttl_ms: u64,
    env: &[(&str, &str)],
) -> Replica {
    let child = Command::new(replica_bin())
        .envs(env.iter().copied())
        .env("REPLICA_STORE", store)
        .env("REPLICA_SINK", sink)
        .env("REPLICA_HOLD_MS", hold_ms.to_string())
        .env("REPLICA_LIFE_MS", life_ms.to_string())
        .env("REPLICA_TTL_MS", ttl_ms.to_string())
        .stdout(Stdio::null())
        .spawn()
        .expect("start a replica");
    Replica(child)
}

/// Waits for every replica to exit on its own, each successfully.
pub fn wait_all(replicas: &mut [Replica]) {
    for r in replicas {
        let status = baton_testkit::wait_for_exit(&mut r.0, "a replica");
        assert!(status.success(), "a replica failed: {status}");
    }
}

/// Polls `f` every 10 ms until it returns something, for at most the
/// testkit's patience.
pub fn poll<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + baton_testkit::PATIENCE;
    loop {
        if let Some(t) = f() {
            return t;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The runs the ledger holds of `job`, by run id: (occurrence, verdict).
pub fn ledger_runs(
    records: &mut dyn baton_store::ledger::Records,
    job: &str,
) -> BTreeMap<String, (Option<i64>, Option<String>)> {
    records
        .history(job, 10_000)
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.run_id.clone(),
                (r.occurrence, r.verdict.map(|v| v.to_string())),
            )
        })
        .collect()
}

/// A scheduler of one job on a SQLite store in `dir`, driven by a manual
/// clock that starts at `start` (the boot clock at 1,000 s), started.
pub fn on_manual_clock(
    dir: &Path,
    start: jiff::Timestamp,
    job: baton_embed::Job,
) -> (
    std::sync::Arc<baton_embed::ManualClock>,
    baton_embed::Handle,
) {
    let clock = std::sync::Arc::new(baton_embed::ManualClock::new(
        start,
        Duration::from_secs(1_000),
    ));
    let handle = baton_embed::Scheduler::builder()
        .store(baton_embed::Store::sqlite(dir))
        .clock(clock.clone())
        .job(job)
        .build()
        .unwrap()
        .start();
    (clock, handle)
}

/// The next word a job sent, waiting at most the testkit's patience.
pub async fn next<T>(rx: &mut tokio::sync::mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(baton_testkit::PATIENCE, rx.recv())
        .await
        .expect("word from the job within the patience")
        .expect("the job's sender is alive")
}

/// What the job tells the test.
#[derive(Debug, PartialEq)]
pub enum Said {
    /// The run started, under this fence.
    Started(u64),
    /// The run was asked to stop.
    Cancelled(baton_embed::Cancel),
    /// The run's future was dropped.
    Dropped,
}

/// Says `Dropped` when its future is dropped.
pub struct OnDrop(pub tokio::sync::mpsc::UnboundedSender<Said>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(Said::Dropped);
    }
}

/// `job` running a function that reports its start and its cancellation
/// on `tx`, and ignores the cancellation: only dropping it stops it.
pub fn stubborn(
    job: baton_embed::Job,
    tx: tokio::sync::mpsc::UnboundedSender<Said>,
) -> baton_embed::Job {
    job.run(move |ctx: baton_embed::RunContext| {
        let tx = tx.clone();
        async move {
            let _guard = OnDrop(tx.clone());
            tx.send(Said::Started(ctx.fence())).unwrap();
            let why = ctx.cancelled().await;
            tx.send(Said::Cancelled(why)).unwrap();
            std::future::pending::<()>().await;
            Ok(())
        }
    })
}

/// Waits until the SQLite ledger in `dir` has `n` attempts of `job`'s
/// newest run.
pub async fn recorded_attempts(dir: &Path, job: &str, n: usize) {
    use baton_store::Store as _;
    for _ in 0..6_000 {
        let runs = baton_ledger::Files::new(dir.to_owned())
            .records(jiff::Timestamp::UNIX_EPOCH)
            .unwrap()
            .history(job, 1)
            .unwrap();
        if runs.first().is_some_and(|r| r.attempts.len() >= n) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{job}'s attempt {n} was never recorded");
}

/// The `baton` binary, built once per test run.
pub fn baton_bin() -> PathBuf {
    static BUILT: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--quiet", "-p", "baton", "--bin", "baton"])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "failed to build baton");
    });
    let mut dir = std::env::current_exe().unwrap();
    dir.pop();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("baton")
}

/// Takes and releases the lock of `job` (named after it) on the file store
/// `files` in `state`, claiming occurrence `at`: as a run of `at` leaves the
/// lock.
pub fn claim_ahead(state: &Path, files: baton_ledger::Files, job: &str, at: i64) {
    use baton_store::Store as _;
    std::fs::create_dir_all(state.join("locks")).unwrap();
    let ttl = Duration::from_secs(30);
    let lock = baton_store::store::LockRef {
        job,
        lock: job,
        slot: 1,
        ttl,
        takeover_grace: ttl,
    };
    let claim = baton_lease::Claim {
        once: Some(baton_lease::Once {
            key: job.into(),
            at,
        }),
        mates: vec![job.into()],
        ..baton_lease::Claim::default()
    };
    match files.try_acquire(&lock, &claim).unwrap() {
        baton_store::store::Taken::Acquired(held) => drop(held.release()),
        _ => panic!("the lock of {job} is free"),
    }
}
