//! One run's cost in process, against the floor of its store work done
//! bare, measured in the same run.
//!
//! **baton**: a scheduler with one job (`* * * * * *`) whose function
//! returns `Ok(())` at once, on a [`ManualClock`]: each step of the clock by
//! a second makes one occurrence due; the step is timed until the job's
//! function has been called and the run is over (recorded and released,
//! [`baton_embed::Handle::idle`]). That is the timer's wake-up, the lease
//! taken with its claim, the job's guard, the ledger opened, `started`, the
//! look for dead runs, the attempt, the verdict and the release, each store
//! call on a blocking thread, with the renewal task started and stopped.
//!
//! **floor**: the same store calls, through the same `baton_store` traits
//! on the same kind of store, made one after the other on one thread, with
//! no runtime: `try_acquire` with the claim, `take_guard`, `records`,
//! `begin_run`, `unfinished`, `record_attempt`, `finish_run`, `release`. The ledger's
//! durability settings are therefore the ledger's own in both.
//!
//! Criterion reports each; then an interleaved comparison (blocks of runs of
//! each, alternating, so both see the same machine) prints the median
//! ratio. PostgreSQL is measured when the bench is built with `--features
//! postgres`: on `BATON_BENCH_PG_URL` when it is set, else on the test kit's
//! throwaway server (this machine, `fsync=off`).

#![allow(clippy::unwrap_used)] // A benchmark states its setup with unwrap.
#![allow(missing_docs)] // criterion's macros generate undocumented items.

mod common;

use std::sync::Arc;
use std::time::Duration;

use baton_embed::{Clock, Handle, Job, ManualClock, Scheduler, SystemClock};
use baton_lease::{Claim, Once};
use baton_store::ledger::{Attempt, Begun, Finished, NewRun};
use baton_store::store::{LockRef, Taken};
use baton_store::words::{AttemptOutcome, RunVerdict, StepKind};
use criterion::Criterion;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use common::runtime;

/// The lease's timing and history of the job, the builder's defaults.
const TTL: Duration = Duration::from_secs(30);
const HISTORY_KEEP: u32 = 100;
const SECOND: Duration = Duration::from_secs(1);

/// Jobs are named afresh for each run of the bench (`bench-…`, `floor-…`):
/// a server given in `BATON_BENCH_PG_URL` may hold an earlier run's claims.
///
/// A store under measurement: a scheduler running one job on it, and the
/// same store opened bare for the floor, each with a clock of its own.
struct Bench {
    label: &'static str,
    rt: Runtime,
    baton: Baton,
    floor: Floor,
}

struct Baton {
    clock: Arc<ManualClock>,
    handle: Handle,
    ran: mpsc::UnboundedReceiver<()>,
}

struct Floor {
    clock: Arc<ManualClock>,
    store: Box<dyn baton_store::Store>,
    job: String,
}

/// Half a second past a whole second: no occurrence is due at the start
/// (none to catch up), and each step of a second makes one due.
fn manual_clock() -> Arc<ManualClock> {
    let now = SystemClock.wall();
    let start = jiff::Timestamp::from_second(now.as_second()).unwrap()
        + jiff::SignedDuration::from_millis(500);
    Arc::new(ManualClock::new(start, Duration::from_secs(1_000)))
}

fn start(rt: &Runtime, store: baton_embed::Store) -> Baton {
    let clock = manual_clock();
    let (tx, ran) = mpsc::unbounded_channel();
    let name = format!("bench-{}", baton_lease::Token::fresh().unwrap());
    let job = Job::cron(name, "* * * * * *").run(move |_| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(());
            Ok(())
        }
    });
    let handle = rt.block_on(async {
        Scheduler::builder()
            .store(store)
            .clock(clock.clone())
            .job(job)
            .build()
            .unwrap()
            .start()
    });
    Baton { clock, handle, ran }
}

impl Baton {
    /// One occurrence, from the clock's step to the run recorded and
    /// released.
    async fn run(&mut self) {
        self.clock.advance(SECOND);
        self.ran.recv().await.unwrap();
        self.handle.idle().await;
    }
}

impl Floor {
    /// The same store calls as one run, bare.
    fn run(&self) {
        self.clock.advance(SECOND);
        let at = self.clock.wall().as_second();
        let run_id = baton_lease::Token::fresh().unwrap().to_string();
        let lock = LockRef {
            job: &self.job,
            lock: &self.job,
            slot: 1,
            ttl: TTL,
            takeover_grace: TTL,
        };
        let claim = Claim {
            run: Some(run_id.clone()),
            occ: Some(self.clock.wall().to_string()),
            budget: None,
            once: Some(Once {
                key: self.job.clone(),
                at,
            }),
            mates: vec![self.job.clone()],
        };
        let Taken::Acquired(held) = self.store.try_acquire(&lock, &claim).unwrap() else {
            panic!("the floor's lock is not free")
        };
        let (guard, _) = self
            .store
            .take_guard(&lock, held.fence(), Some(at))
            .unwrap();
        assert!(matches!(guard, baton_store::store::Guard::Clear));
        let mut ledger = self.store.records(self.clock.wall()).unwrap();
        let begun = ledger
            .begin_run(&NewRun {
                run_id: run_id.clone(),
                job: self.job.clone(),
                occurrence: Some(at),
                fence: Some(held.fence()),
                host: held.host().to_owned(),
                pid: std::process::id(),
                started: self.clock.wall(),
                backfill: false,
            })
            .unwrap();
        assert!(matches!(begun, Begun::Started));
        let _ = ledger.unfinished(&self.job).unwrap();
        let started = self.clock.wall();
        ledger
            .record_attempt(&Attempt {
                run_id: run_id.clone(),
                job: self.job.clone(),
                seq: 1,
                step: self.job.clone(),
                kind: StepKind::Step,
                attempt: 1,
                started,
                finished: self.clock.wall(),
                exit_code: Some(0),
                signal: None,
                outcome: AttemptOutcome::Ok,
            })
            .unwrap();
        let finished = Finished {
            run_id,
            job: self.job.clone(),
            finished: self.clock.wall(),
            verdict: RunVerdict::Ok,
            exit_code: 0,
            success: true,
        };
        ledger.finish_run(&finished, HISTORY_KEEP).unwrap();
        held.release().unwrap();
    }
}

fn sqlite(dir: &std::path::Path) -> Bench {
    use std::os::unix::fs::DirBuilderExt;
    let rt = runtime();
    let baton = start(&rt, baton_embed::Store::sqlite(dir.join("baton")));
    let floor_dir = dir.join("floor");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(floor_dir.join("locks"))
        .unwrap();
    let clock = manual_clock();
    let store = baton_ledger::Files::new(floor_dir).with_clock(clock.clone());
    Bench {
        label: "sqlite",
        rt,
        baton,
        floor: Floor {
            clock,
            store: Box::new(store),
            job: format!("floor-{}", baton_lease::Token::fresh().unwrap()),
        },
    }
}

#[cfg(feature = "postgres")]
fn postgres(url: &str) -> Bench {
    let rt = runtime();
    let baton = start(&rt, baton_embed::Store::postgres(url).migrate());
    let env = |_: &str| None;
    let target = baton_pg::Target::resolve(url, None, &env).unwrap();
    Bench {
        label: "postgres",
        rt,
        baton,
        floor: Floor {
            clock: manual_clock(),
            store: Box::new(baton_pg::Postgres::new(target)),
            job: format!("floor-{}", baton_lease::Token::fresh().unwrap()),
        },
    }
}

fn criterion_benches(c: &mut Criterion, b: &mut Bench) {
    let mut g = c.benchmark_group(format!("one run ({})", b.label));
    let Bench {
        rt, baton, floor, ..
    } = b;
    g.bench_function("baton", |x| x.iter(|| rt.block_on(baton.run())));
    g.bench_function("floor", |x| x.iter(|| floor.run()));
    g.finish();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn interleaved(b: &mut Bench, blocks: usize, runs: u32) {
    let clock = SystemClock;
    let per_run = |from: Duration| (clock.boot() - from).as_secs_f64() * 1e6 / f64::from(runs);
    let (mut baton, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..blocks {
        let t = clock.boot();
        b.rt.block_on(async {
            for _ in 0..runs {
                b.baton.run().await;
            }
        });
        baton.push(per_run(t));
        let t = clock.boot();
        for _ in 0..runs {
            b.floor.run();
        }
        floor.push(per_run(t));
    }
    let (x, f) = (median(baton), median(floor));
    println!(
        "\n{}: interleaved, {blocks} blocks of {runs} runs each (median µs per run):",
        b.label
    );
    println!("  baton  {x:9.1}");
    println!("  floor  {f:9.1}   baton / floor = {:.2}x", x / f);
}

fn measure(c: &mut Criterion, mut b: Bench, blocks: usize, runs: u32) {
    criterion_benches(c, &mut b);
    interleaved(&mut b, blocks, runs);
    let Bench { rt, baton, .. } = b;
    rt.block_on(baton.handle.shutdown(Duration::from_secs(1)));
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let dir = tempfile::tempdir().unwrap();
    measure(&mut c, sqlite(dir.path()), 20, 50);
    postgres_if_asked(&mut c);
    c.final_summary();
}

#[cfg(feature = "postgres")]
fn postgres_if_asked(c: &mut Criterion) {
    match std::env::var("BATON_BENCH_PG_URL") {
        Ok(url) => measure(c, postgres(&url), 20, 20),
        Err(_) => {
            let server = baton_testkit::pg::PgServer::start();
            measure(c, postgres(&server.url()), 20, 20);
        }
    }
}

#[cfg(not(feature = "postgres"))]
fn postgres_if_asked(_: &mut Criterion) {
    println!(
        "\npostgres: skipped (built without the `postgres` feature: \
         cargo bench -p baton-embed --features postgres --bench run)"
    );
}
