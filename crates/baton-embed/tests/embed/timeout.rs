//! An attempt's timeout on a manual clock: past its limit the attempt is
//! asked to stop (`Cancel::Timeout`), recorded `timeout` (124) and retried;
//! the retry starts uncancelled. A function that ignores the request is
//! dropped after the grace, its attempt recorded `timeout` all the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_embed::{Cancel, Job, JobError, RunContext};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

use crate::support::{next, on_manual_clock, recorded_attempts as attempts};

fn ledger(dir: &std::path::Path) -> Box<dyn baton_store::ledger::Records> {
    baton_ledger::Files::new(dir.to_owned())
        .records(Timestamp::UNIX_EPOCH)
        .unwrap()
}

/// The run's attempts as (outcome, exit code), and its verdict.
fn recorded(dir: &std::path::Path, job: &str) -> (Vec<(String, Option<i32>)>, Option<String>) {
    let runs = ledger(dir).history(job, 10).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r = &runs[0];
    (
        r.attempts
            .iter()
            .map(|a| (a.outcome.as_str().to_owned(), a.exit_code))
            .collect(),
        r.verdict.map(|v| v.as_str().to_owned()),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_past_its_timeout_is_cancelled_recorded_and_retried() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("export", "* * * * *")
        .timeout(Duration::from_secs(20))
        .retries(1)
        .backoff(Duration::from_secs(5), Duration::from_secs(5))
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send((ctx.attempt(), ctx.cancel_reason())).unwrap();
                if ctx.attempt() == 1 {
                    // The first attempt hangs until it is told to stop.
                    let why = ctx.cancelled().await;
                    tx.send((0, Some(why))).unwrap();
                    return Err(JobError::msg("stopped"));
                }
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    assert_eq!(next(&mut rx).await, (1, None));
    clock.advance(Duration::from_secs(19));
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "cancelled before its limit");
    clock.advance(Duration::from_secs(1));
    assert_eq!(next(&mut rx).await, (0, Some(Cancel::Timeout)));
    attempts(dir.path(), "export", 1).await;
    clock.advance(Duration::from_secs(5));
    // The retry is not born cancelled.
    assert_eq!(next(&mut rx).await, (2, None));
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let (attempts, verdict) = recorded(dir.path(), "export");
    assert_eq!(
        attempts,
        [
            ("timeout".to_owned(), Some(124)),
            ("ok".to_owned(), Some(0))
        ]
    );
    assert_eq!(verdict.as_deref(), Some("ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_that_ignores_its_timeout_is_dropped_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let dropped = Arc::new(AtomicBool::new(false));
    let seen = Arc::clone(&dropped);
    let job = Job::cron("stuck", "* * * * *")
        .timeout(Duration::from_secs(20))
        .grace(Duration::from_secs(3))
        .run(move |ctx: RunContext| {
            let (tx, dropped) = (tx.clone(), Arc::clone(&seen));
            async move {
                let _flag = SetOnDrop(dropped);
                tx.send(None).unwrap();
                // Told to stop, it says so and goes on regardless.
                tx.send(Some(ctx.cancelled().await)).unwrap();
                std::future::pending::<()>().await;
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    assert_eq!(next(&mut rx).await, None);
    clock.advance(Duration::from_secs(20));
    assert_eq!(next(&mut rx).await, Some(Cancel::Timeout));
    tokio::task::yield_now().await;
    assert!(!dropped.load(Ordering::SeqCst), "dropped before the grace");
    clock.advance(Duration::from_secs(3));
    attempts(dir.path(), "stuck", 1).await;
    assert!(dropped.load(Ordering::SeqCst), "its future was not dropped");
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let (attempts, verdict) = recorded(dir.path(), "stuck");
    assert_eq!(attempts, [("timeout".to_owned(), Some(124))]);
    assert_eq!(verdict.as_deref(), Some("failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_timeout_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("long", "0 0 * * *")
        .timeout(Duration::ZERO)
        .lease(Duration::from_secs(3 * 3600), Duration::from_secs(3 * 3600))
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.cancel_reason()).unwrap();
                let why = ctx.cancelled().await;
                tx.send(Some(why)).unwrap();
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(24 * 3600 - 30));
    assert_eq!(next(&mut rx).await, None);
    // Two hours, past the default hour: still running, not cancelled.
    for _ in 0..120 {
        clock.advance(Duration::from_secs(60));
    }
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "cancelled with no timeout");
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(next(&mut rx).await, Some(Cancel::Shutdown));
}

/// Sets its flag when dropped: the attempt's future was dropped.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
