//! Memory per 1,000 registered jobs, against tokio-cron-scheduler's: the
//! resident set (from `/proc/self/statm`) of a process whose scheduler
//! holds 1,000 and 10,000 jobs, built and started, none of them due, minus
//! the resident set of the same process with a scheduler of no jobs, per
//! 1,000 jobs.
//!
//! Each figure is taken in a process of its own (this bench runs itself
//! again with `BATON_BENCH_MEMORY=WHO:N`), so that no figure carries what
//! the allocator kept of another. baton's scheduler is on the SQLite store
//! in a temporary directory; tokio-cron-scheduler's on its default store,
//! in memory. The jobs are due once a year (`0 0 1 1 *`; tokio-cron-
//! scheduler's six fields, `0 0 0 1 1 *`): each waits in its timer. Not
//! criterion: a table.

#![allow(clippy::unwrap_used)] // A benchmark states its setup with unwrap.

mod common;

use std::time::Duration;

use baton_embed::{Job, Scheduler, Store};
use tokio::runtime::Runtime;

/// The resident set, in bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * rustix::param::page_size() as u64
}

/// The resident set with a scheduler of `n` jobs built and started on
/// `store`, once its timers have settled.
fn with_jobs(rt: &Runtime, store: &std::path::Path, n: usize) -> u64 {
    let mut builder = Scheduler::builder().store(Store::sqlite(store));
    for i in 0..n {
        builder =
            builder.job(Job::cron(format!("job-{i:05}"), "0 0 1 1 *").run(|_| async { Ok(()) }));
    }
    rt.block_on(async {
        let handle = builder.build().unwrap().start();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss = rss();
        handle.shutdown(Duration::from_secs(1)).await;
        rss
    })
}

/// The resident set with tokio-cron-scheduler holding `n` jobs, started,
/// once its timers have settled.
fn with_tcs_jobs(rt: &Runtime, n: usize) -> u64 {
    use tokio_cron_scheduler::{Job as TcsJob, JobScheduler};
    rt.block_on(async {
        let scheduler = JobScheduler::new().await.unwrap();
        for _ in 0..n {
            let job = TcsJob::new_async("0 0 0 1 1 *", |_, _| Box::pin(async {})).unwrap();
            scheduler.add(job).await.unwrap();
        }
        scheduler.start().await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        rss()
    })
}

fn mib(b: u64) -> f64 {
    b as f64 / (1024.0 * 1024.0)
}

/// The schedulers measured, as the table names them and as
/// `BATON_BENCH_MEMORY` names them.
const WHO: [(&str, &str); 2] = [("baton", "baton"), ("tcs", "tokio-cron-scheduler")];

/// The resident set of a process of its own measuring `who` with `n` jobs.
fn measured(who: &str, n: usize) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .env("BATON_BENCH_MEMORY", format!("{who}:{n}"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{who}:{n}: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// In the process of one figure: measures and prints it.
fn child(spec: &str) {
    let (who, n) = spec.split_once(':').unwrap();
    let n: usize = n.parse().unwrap();
    let rt = common::runtime();
    let rss = match who {
        "baton" => {
            let dir = tempfile::tempdir().unwrap();
            with_jobs(&rt, dir.path(), n)
        }
        "tcs" => with_tcs_jobs(&rt, n),
        other => panic!("no scheduler {other}"),
    };
    println!("{rss}");
}

fn main() {
    if let Ok(spec) = std::env::var("BATON_BENCH_MEMORY") {
        child(&spec);
        return;
    }
    println!("| scheduler | jobs | RSS | RSS − no jobs | per 1,000 jobs |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut per_1000 = Vec::new();
    for (who, name) in WHO {
        let base = measured(who, 0);
        println!("| {name} | 0 | {:.2} MiB | | |", mib(base));
        for n in [1_000, 10_000] {
            let rss = measured(who, n);
            let more = rss.saturating_sub(base);
            let per = mib(more) * 1_000.0 / n as f64;
            println!(
                "| {name} | {n} | {:.2} MiB | {:.2} MiB | {per:.2} MiB |",
                mib(rss),
                mib(more),
            );
            per_1000.push((who, n, per));
        }
    }
    for n in [1_000, 10_000] {
        let of = |w: &str| {
            per_1000
                .iter()
                .find(|(who, m, _)| *who == w && *m == n)
                .map(|p| p.2)
                .unwrap()
        };
        println!(
            "\nwith {n} jobs: baton / tokio-cron-scheduler = {:.2}x per 1,000 jobs",
            of("baton") / of("tcs")
        );
    }
}
