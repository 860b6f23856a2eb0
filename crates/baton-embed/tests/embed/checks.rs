//! A job's checks: each runs once after the job's function, whatever it
//! came to, never retried, under the same fence; a failed check makes a
//! run that succeeded `check-failed`, and a step's failure is kept over a
//! check's.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use baton_embed::{BuildError, Job, JobError, RunContext, Scheduler, Store};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

use crate::support::{next, on_manual_clock, recorded_attempts};

fn ledger(dir: &std::path::Path) -> Box<dyn baton_store::ledger::Records> {
    baton_ledger::Files::new(dir.to_owned())
        .records(Timestamp::UNIX_EPOCH)
        .unwrap()
}

/// The one run of `job`: its attempts as (step, kind, attempt, outcome),
/// and its verdict.
fn the_run(dir: &std::path::Path, job: &str) -> (Vec<(String, String, u32, String)>, String) {
    let runs = ledger(dir).history(job, 10).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    let attempts = r
        .attempts
        .iter()
        .map(|a| {
            (
                a.step.clone(),
                a.kind.as_str().to_owned(),
                a.attempt,
                a.outcome.as_str().to_owned(),
            )
        })
        .collect();
    (
        attempts,
        r.verdict.map(|v| v.as_str().to_owned()).unwrap_or_default(),
    )
}

fn row(step: &str, kind: &str, attempt: u32, outcome: &str) -> (String, String, u32, String) {
    (step.into(), kind.into(), attempt, outcome.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_check_makes_a_run_that_succeeded_check_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let step_tx = tx.clone();
    let job = Job::cron("report", "* * * * *")
        .run(move |ctx: RunContext| {
            let tx = step_tx.clone();
            async move {
                tx.send(("step", ctx.fence())).unwrap();
                Ok(())
            }
        })
        .check("rows", move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send(("rows", ctx.fence())).unwrap();
                Err(JobError::msg("the report wrote no rows"))
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), "2026-06-01T00:00:30Z".parse().unwrap(), job);
    clock.advance(Duration::from_secs(30));
    let (_, fence) = next(&mut rx).await;
    assert_eq!(
        next(&mut rx).await,
        ("rows", fence),
        "the check runs under the run's fence"
    );
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let (attempts, verdict) = the_run(dir.path(), "report");
    assert_eq!(
        attempts,
        [
            row("report", "step", 1, "ok"),
            row("rows", "check", 1, "failed")
        ]
    );
    assert_eq!(verdict, "check-failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_run_once_after_the_last_failed_attempt_and_the_failure_stands() {
    let dir = tempfile::tempdir().unwrap();
    let checked = Arc::new(AtomicU32::new(0));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (c1, c2) = (Arc::clone(&checked), Arc::clone(&checked));
    let job = Job::cron("sync", "* * * * *")
        .retries(1)
        .backoff(Duration::from_secs(5), Duration::from_secs(5))
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.attempt()).unwrap();
                Err(JobError::msg("the upstream refused"))
            }
        })
        .check("disk", move |_ctx: RunContext| {
            let c = Arc::clone(&c1);
            async move {
                c.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .check("queue", move |_ctx: RunContext| {
            let c = Arc::clone(&c2);
            async move {
                c.fetch_add(10, Ordering::SeqCst);
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), "2026-06-01T00:00:30Z".parse().unwrap(), job);
    clock.advance(Duration::from_secs(30));
    assert_eq!(next(&mut rx).await, 1);
    recorded_attempts(dir.path(), "sync", 1).await;
    assert_eq!(
        checked.load(Ordering::SeqCst),
        0,
        "no check between attempts"
    );
    clock.advance(Duration::from_secs(5));
    assert_eq!(next(&mut rx).await, 2);
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(checked.load(Ordering::SeqCst), 11, "each check once");
    let (attempts, verdict) = the_run(dir.path(), "sync");
    assert_eq!(
        attempts,
        [
            row("sync", "step", 1, "failed"),
            row("sync", "step", 2, "failed"),
            row("disk", "check", 1, "ok"),
            row("queue", "check", 1, "ok"),
        ]
    );
    assert_eq!(verdict, "failed");
}

#[test]
fn a_check_without_a_name_named_as_its_job_or_named_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["", "report"] {
        let e = Scheduler::builder()
            .store(Store::sqlite(dir.path()))
            .job(
                Job::cron("report", "* * * * *")
                    .run(|_| async { Ok(()) })
                    .check(name, |_| async { Ok(()) }),
            )
            .build()
            .expect_err("refused");
        assert!(
            matches!(&e, BuildError::BadCheck { job, check, .. } if job == "report" && check == name),
            "{e}"
        );
    }
    // Two checks of one name: history could not tell them apart.
    let e = Scheduler::builder()
        .store(Store::sqlite(dir.path()))
        .job(
            Job::cron("report", "* * * * *")
                .run(|_| async { Ok(()) })
                .check("disk", |_| async { Ok(()) })
                .check("disk", |_| async { Ok(()) }),
        )
        .build()
        .expect_err("refused");
    assert!(
        matches!(&e, BuildError::BadCheck { check, .. } if check == "disk"),
        "{e}"
    );
}
