//! Alerts: a failed run, a run past its budget and an occurrence missed
//! `busy` each raise one alert, handed to the service's hook and recorded
//! in the ledger `baton status` reads; a pause raises none.

use std::sync::Arc;
use std::time::Duration;

use baton_embed::{
    Alert, AlertKind, Clock, Job, JobError, ManualClock, RunContext, Scheduler, Store,
};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

use crate::support::next;

/// A scheduler of `job` on a SQLite store in `dir`, its alerts sent to
/// the returned receiver, started at 00:00:30 on a manual clock.
fn alerting(
    dir: &std::path::Path,
    job: Job,
) -> (
    Arc<ManualClock>,
    baton_embed::Handle,
    mpsc::UnboundedReceiver<Alert>,
) {
    let clock = Arc::new(ManualClock::new(
        "2026-06-01T00:00:30Z".parse().unwrap(),
        Duration::from_secs(1_000),
    ));
    let (tx, alerts) = mpsc::unbounded_channel();
    let handle = Scheduler::builder()
        .store(Store::sqlite(dir))
        .clock(clock.clone())
        .on_alert(move |a: &Alert| {
            let _ = tx.send(a.clone());
        })
        .job(job)
        .build()
        .unwrap()
        .start();
    (clock, handle, alerts)
}

fn recorded(dir: &std::path::Path, job: &str) -> Vec<(String, Option<String>)> {
    baton_ledger::Files::new(dir.to_owned())
        .records(Timestamp::UNIX_EPOCH)
        .unwrap()
        .recent_alerts(Some(job), 10)
        .unwrap()
        .into_iter()
        .map(|a| (a.kind.as_str().to_owned(), a.run_id))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_run_raises_one_alert_to_the_hook_and_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let job = Job::cron("export", "* * * * *")
        .run(|_| async { Err(JobError::msg("the disk is full").never_retry()) });
    let (clock, handle, mut alerts) = alerting(dir.path(), job);
    clock.advance(Duration::from_secs(30));
    let a = next(&mut alerts).await;
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!((a.job.as_str(), a.kind), ("export", AlertKind::StepFailed));
    assert_eq!(a.occurrence, Some("2026-06-01T00:01:00Z".parse().unwrap()));
    assert!(a.message.contains("failed"), "{a:?}");
    assert_eq!(
        recorded(dir.path(), "export"),
        [("step-failed".to_owned(), a.run_id.clone())]
    );
    assert!(alerts.try_recv().is_err(), "one alert");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_budget_raises_overrunning_once_and_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut ran) = mpsc::unbounded_channel();
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = Arc::clone(&go);
    let ttl = Duration::from_secs(600);
    let job = Job::cron("slow", "0 * * * *")
        .lease(ttl, ttl)
        .max_runtime(Duration::from_secs(300))
        .run(move |ctx: RunContext| {
            let (tx, gate) = (tx.clone(), Arc::clone(&gate));
            async move {
                tx.send(ctx.run_id().to_owned()).unwrap();
                gate.acquire().await.unwrap().forget();
                Ok(())
            }
        });
    let (clock, handle, mut alerts) = alerting(dir.path(), job);
    clock.advance(Duration::from_secs(59 * 60 + 30)); // 01:00
    let run_id = next(&mut ran).await;
    clock.advance(Duration::from_secs(299));
    tokio::task::yield_now().await;
    assert!(alerts.try_recv().is_err(), "not before its budget");
    clock.advance(Duration::from_secs(2));
    let a = next(&mut alerts).await;
    assert_eq!(a.kind, AlertKind::Overrunning);
    assert_eq!(a.run_id.as_deref(), Some(run_id.as_str()));
    clock.advance(Duration::from_secs(120));
    go.add_permits(1);
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(
        alerts.try_recv().is_err(),
        "one alert, and the run ended ok"
    );
    let runs = baton_ledger::Files::new(dir.path().to_owned())
        .records(Timestamp::UNIX_EPOCH)
        .unwrap()
        .history("slow", 10)
        .unwrap();
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_occurrence_alerts_and_a_paused_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = Arc::clone(&go);
    let (tx, mut ran) = mpsc::unbounded_channel();
    let ttl = Duration::from_secs(300);
    let job = Job::cron("slow", "* * * * *")
        .lease(ttl, ttl)
        .run(move |_ctx: RunContext| {
            let (tx, gate) = (tx.clone(), Arc::clone(&gate));
            async move {
                tx.send(()).unwrap();
                gate.acquire().await.unwrap().forget();
                Ok(())
            }
        });
    let (clock, handle, mut alerts) = alerting(dir.path(), job);
    clock.advance(Duration::from_secs(30));
    next(&mut ran).await;
    clock.advance(Duration::from_secs(60));
    let a = next(&mut alerts).await;
    assert_eq!(a.kind, AlertKind::Busy);
    assert_eq!(a.occurrence, Some("2026-06-01T00:02:00Z".parse().unwrap()));
    go.add_permits(1);
    handle.idle().await;
    // Paused: the next occurrences are missed quietly.
    baton_ledger::Files::new(dir.path().to_owned())
        .records(Timestamp::UNIX_EPOCH)
        .unwrap()
        .pause("slow", None, Some("quiet"), "alice", clock.wall())
        .unwrap();
    clock.advance(Duration::from_secs(60));
    handle.idle().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(alerts.try_recv().is_err(), "a pause raises no alert");
    assert_eq!(recorded(dir.path(), "slow"), [("busy".to_owned(), None)]);
}
