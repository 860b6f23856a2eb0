//! Self-fencing: when the lease is lost (broken as `baton lock break
//! --force` breaks it) the run's cancellation fires at the next renewal,
//! a run that ignores it is dropped after its grace, and the ledger says
//! `lease-lost`. The manual clock makes each step exact.

use std::time::Duration;

use baton_embed::{Cancel, Job, RunContext};

use crate::support::{Said, next, on_manual_clock, stubborn};
use baton_lease::BreakMode;
use baton_store::Store as _;
use baton_store::store::LockRef;
use jiff::Timestamp;
use tokio::sync::mpsc;

/// The lock of the embedded job `job`: named after it.
fn lock_of(job: &str, ttl: Duration) -> LockRef<'_> {
    LockRef {
        job,
        lock: job,
        slot: 1,
        ttl,
        takeover_grace: ttl,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_lease_cancels_the_run_and_drops_it_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (ttl, grace) = (Duration::from_secs(3), Duration::from_millis(500));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("fenced", "* * * * *")
        .lease(ttl, ttl)
        .grace(grace);
    let job = stubborn(job, tx);
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let Said::Started(fence) = next(&mut rx).await else {
        panic!("the run starts first")
    };
    // An operator breaks the lock under the running job.
    let broken = baton_ledger::lock_file(dir.path(), &lock_of("fenced", ttl))
        .break_lease(BreakMode::Force)
        .unwrap();
    assert!(
        matches!(broken, baton_lease::Broken::Freed { .. }),
        "{broken:?}"
    );
    // Nothing is known until the next renewal, a third of the TTL on.
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err());
    clock.advance(ttl / 3);
    assert_eq!(next(&mut rx).await, Said::Cancelled(Cancel::LeaseLost));
    // It ignores the cancellation; within the grace it is still running.
    clock.advance(grace / 2);
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "not dropped before its grace");
    clock.advance(grace / 2);
    assert_eq!(next(&mut rx).await, Said::Dropped);
    handle.shutdown(Duration::from_secs(1)).await;
    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap();
    let runs = ledger.history("fenced", 10).unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = &runs[0];
    assert_eq!(run.fence, Some(fence));
    assert_eq!(run.verdict.map(|v| v.as_str()), Some("lease-lost"));
    assert_eq!(run.exit_code, Some(76));
    assert_eq!(run.attempts.len(), 1);
    assert_eq!(run.attempts[0].outcome.as_str(), "lease-lost");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cancels_a_run_and_records_it_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("stopping", "* * * * *").run(move |ctx: RunContext| {
        let tx = tx.clone();
        async move {
            tx.send(Said::Started(ctx.fence())).unwrap();
            let why = ctx.cancelled().await;
            tx.send(Said::Cancelled(why)).unwrap();
            Err(baton_embed::JobError::msg(
                "stopped before its work was done",
            ))
        }
    });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    assert!(matches!(next(&mut rx).await, Said::Started(_)));
    handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(next(&mut rx).await, Said::Cancelled(Cancel::Shutdown));
    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap();
    let runs = ledger.history("stopping", 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("interrupted"));
    // Released: the lock is free again.
    let verdict = baton_ledger::Files::new(dir.path().to_owned())
        .inspect(&lock_of("stopping", Duration::from_secs(30)))
        .unwrap();
    assert!(
        matches!(verdict, Some(baton_lease::Verdict::Free(_))),
        "{verdict:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn a_run_blocked_in_a_blocking_section_is_waited_for_before_it_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (ttl, grace) = (Duration::from_secs(3), Duration::from_millis(500));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (unblock, blocked) = std::sync::mpsc::channel::<()>();
    let blocked = std::sync::Arc::new(std::sync::Mutex::new(blocked));
    let job = Job::cron("blocking", "* * * * *")
        .lease(ttl, ttl)
        .grace(grace)
        .run(move |ctx: RunContext| {
            let (tx, blocked) = (tx.clone(), std::sync::Arc::clone(&blocked));
            async move {
                tx.send(ctx.fence()).unwrap();
                // A blocking call on the async thread: no abort reaches it.
                let _ = blocked.lock().unwrap().recv();
                tx.send(u64::from(ctx.is_cancelled())).unwrap();
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let fence = next(&mut rx).await;
    baton_ledger::lock_file(dir.path(), &lock_of("blocking", ttl))
        .break_lease(BreakMode::Force)
        .unwrap();
    // The loss, the grace and the second grace pass while it is blocked.
    for step in [ttl / 3, grace, grace, grace] {
        clock.advance(step);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let unfinished = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap()
        .history("blocking", 10)
        .unwrap();
    assert_eq!(unfinished.len(), 1);
    assert_eq!(
        unfinished[0].verdict, None,
        "nothing is recorded while it runs"
    );
    unblock.send(()).unwrap();
    assert_eq!(next(&mut rx).await, 1, "it was cancelled meanwhile");
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = baton_ledger::Files::new(dir.path().to_owned())
        .records(start)
        .unwrap()
        .history("blocking", 10)
        .unwrap();
    assert_eq!(runs[0].fence, Some(fence));
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("lease-lost"));
}
