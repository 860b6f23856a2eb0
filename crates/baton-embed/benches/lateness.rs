//! Timer lateness on the system clock: how late after its occurrence a
//! job's function is called, measured in process, with and without a
//! CPU-loading background, against the floor of a bare
//! `tokio::time::sleep_until` loop in the same run.
//!
//! **baton**: a scheduler on the SQLite store (a temporary directory) with
//! N jobs due every second (`* * * * * *`); each function reads the wall
//! clock first and records `now − occurrence`. That lateness is the whole
//! way to the function: the timer's wake-up, the lease taken with its
//! claim, the ledger opened and `started` recorded (a run that cannot be
//! recorded does not start), the look for dead runs. With N jobs due at the
//! same instant, the N runs share one ledger.
//!
//! **floor**: N tasks on the same kind of runtime, each sleeping with
//! `tokio::time::sleep_until` to the next whole second of the wall clock and
//! recording how late it woke: the timer alone, no store.
//!
//! **load**: as many threads as the machine has cores, spinning.
//!
//! Not criterion: a table. `BATON_BENCH_SECS` (default 20) is each cell's
//! length, `BATON_BENCH_JOBS` (default `1,10,100`) the job counts.

#![allow(clippy::unwrap_used)] // A benchmark states its setup with unwrap.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_embed::{Clock, Job, Scheduler, Store, SystemClock};
use jiff::Timestamp;
use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use common::runtime;

/// Milliseconds from `due` to now.
fn late_ms(due: Timestamp) -> f64 {
    let late = SystemClock.wall().duration_since(due);
    late.as_secs_f64() * 1e3
}

/// `n` jobs due every second for `secs`: the lateness of every call.
fn baton(rt: &Runtime, n: usize, secs: u64) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut builder = Scheduler::builder().store(Store::sqlite(dir.path()));
    for i in 0..n {
        let tx = tx.clone();
        builder = builder.job(
            Job::cron(format!("job-{i:05}"), "* * * * * *").run(move |ctx| {
                let late = late_ms(ctx.occurrence());
                let _ = tx.send(late);
                async { Ok(()) }
            }),
        );
    }
    drop(tx);
    let scheduler = builder.build().unwrap();
    rt.block_on(async {
        let handle = scheduler.start();
        tokio::time::sleep(Duration::from_secs(secs)).await;
        handle.shutdown(Duration::from_secs(5)).await;
    });
    let mut late = Vec::new();
    while let Ok(x) = rx.try_recv() {
        late.push(x);
    }
    late
}

/// `n` tasks sleeping to each whole second for `secs`: the lateness of
/// every wake-up.
fn floor(rt: &Runtime, n: usize, secs: u64) -> Vec<f64> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let end = SystemClock.boot() + Duration::from_secs(secs);
    rt.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..n {
            let tx = tx.clone();
            tasks.spawn(async move {
                while SystemClock.boot() < end {
                    let now = SystemClock.wall();
                    let due = Timestamp::from_second(now.as_second() + 1).unwrap();
                    let wait = Duration::try_from(due.duration_since(now)).unwrap();
                    tokio::time::sleep_until(tokio::time::Instant::now() + wait).await;
                    let _ = tx.send(late_ms(due));
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    });
    drop(tx);
    let mut late = Vec::new();
    while let Ok(x) = rx.try_recv() {
        late.push(x);
    }
    late
}

/// Spinning threads, one per core, until dropped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, usize::from);
        let threads = (0..cores)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn row(what: &str, load: &str, n: usize, mut late: Vec<f64>) {
    late.sort_by(f64::total_cmp);
    let at = |q: f64| late[((late.len() as f64 * q).ceil() as usize).clamp(1, late.len()) - 1];
    let p99 = at(0.99);
    println!(
        "| {what} | {load} | {n} | {} | {:.2} | {p99:.2} | {:.2} | {} |",
        late.len(),
        at(0.50),
        late[late.len() - 1],
        if what == "floor" {
            "".to_owned()
        } else if p99 <= 5.0 {
            "met".to_owned()
        } else {
            "not met".to_owned()
        }
    );
}

fn main() {
    let secs = std::env::var("BATON_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let jobs: Vec<usize> = std::env::var("BATON_BENCH_JOBS")
        .unwrap_or_else(|_| "1,10,100".into())
        .split(',')
        .map(|s| s.trim().parse().unwrap())
        .collect();
    let most = jobs.iter().copied().max().unwrap_or(1);
    let rt = runtime();
    println!("start lateness, {secs} s a cell (ms from the occurrence to the function's call)\n");
    println!("| what | load | jobs | samples | p50 | p99 | max | p99 ≤ 5 ms |");
    println!("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |");
    for loaded in [false, true] {
        let _load = loaded.then(Load::start);
        let load = if loaded { "busy cores" } else { "none" };
        row("floor", load, most, floor(&rt, most, secs));
        for &n in &jobs {
            row("baton", load, n, baton(&rt, n, secs));
        }
    }
}
