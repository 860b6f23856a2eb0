//! Two jobs that name one lock never run at once: an occurrence of one
//! that meets the other's run is missed `busy`, and runs again once the
//! lock is free.

use std::sync::Arc;
use std::time::Duration;

use baton_embed::{Job, ManualClock, RunContext, Scheduler, Store};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::{Notify, mpsc};

use crate::support::next;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn ledger(dir: &std::path::Path) -> Box<dyn baton_store::ledger::Records> {
    baton_ledger::Files::new(dir.to_owned())
        .records(at("2026-06-01T00:00:00Z"))
        .unwrap()
}

/// A job on lock `db` that reports its occurrences and holds each run
/// until `release` is notified.
fn on_db(
    name: &'static str,
    cron: &str,
    tx: mpsc::UnboundedSender<(&'static str, Timestamp)>,
    release: Arc<Notify>,
) -> Job {
    let ttl = Duration::from_secs(600);
    Job::cron(name, cron)
        .lock("db")
        .lease(ttl, ttl)
        .run(move |ctx: RunContext| {
            let (tx, release) = (tx.clone(), Arc::clone(&release));
            async move {
                tx.send((name, ctx.occurrence())).unwrap();
                release.notified().await;
                Ok(())
            }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_occurrence_meeting_another_jobs_run_on_its_lock_is_missed_busy() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let clock = Arc::new(ManualClock::new(
        at("2026-06-01T00:00:40Z"),
        Duration::from_secs(1_000),
    ));
    let handle = Scheduler::builder()
        .store(Store::sqlite(dir.path()))
        .clock(clock.clone())
        .job(on_db(
            "export",
            "0 * * * * *",
            tx.clone(),
            Arc::clone(&release),
        ))
        .job(on_db("vacuum", "30 * * * * *", tx, Arc::clone(&release)))
        .build()
        .unwrap()
        .start();
    clock.advance(Duration::from_secs(20));
    assert_eq!(next(&mut rx).await, ("export", at("2026-06-01T00:01:00Z")));
    // The vacuum's occurrence comes while the export holds the lock.
    clock.advance(Duration::from_secs(30));
    let mut busy = None;
    for _ in 0..6_000 {
        busy = ledger(dir.path()).missed("vacuum", 10).unwrap().pop();
        if busy.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let busy = busy.expect("the vacuum's occurrence recorded missed");
    assert_eq!(busy.reason.as_str(), "busy");
    assert_eq!(busy.first, at("2026-06-01T00:01:30Z").as_second());
    assert!(rx.try_recv().is_err(), "the vacuum ran beside the export");
    release.notify_one();
    handle.idle().await;
    // Free again: the vacuum's next occurrence runs.
    clock.advance(Duration::from_secs(30));
    assert_eq!(next(&mut rx).await, ("export", at("2026-06-01T00:02:00Z")));
    release.notify_one();
    handle.idle().await;
    clock.advance(Duration::from_secs(30));
    assert_eq!(next(&mut rx).await, ("vacuum", at("2026-06-01T00:02:30Z")));
    release.notify_one();
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = |job| ledger(dir.path()).history(job, 10).unwrap().len();
    assert_eq!((runs("export"), runs("vacuum")), (2, 1));
}
