//! A job's policies on a manual clock: an occurrence that meets the job's
//! previous run still going is missed `busy`, once; a failed attempt is
//! retried after its backoff, and an error marked never-retry is not.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use baton_embed::{Job, JobError, RunContext};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::{Notify, mpsc};

use crate::support::{next, on_manual_clock, recorded_attempts};

fn ledger(dir: &std::path::Path) -> Box<dyn baton_store::ledger::Records> {
    baton_ledger::Files::new(dir.to_owned())
        .records(Timestamp::UNIX_EPOCH)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_occurrence_meeting_the_previous_run_is_missed_busy() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let release = Arc::new(Notify::new());
    let held = Arc::clone(&release);
    // A TTL longer than the step, so the first run's lease stays fresh.
    let ttl = Duration::from_secs(300);
    let job = Job::cron("slow", "* * * * *")
        .lease(ttl, ttl)
        .run(move |ctx: RunContext| {
            let (tx, held) = (tx.clone(), Arc::clone(&held));
            async move {
                tx.send(ctx.occurrence()).unwrap();
                held.notified().await;
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let first = next(&mut rx).await;
    // The next occurrence comes while the first run holds the lease.
    clock.advance(Duration::from_secs(60));
    let busy = poll_missed(dir.path(), "slow").await;
    assert_eq!(busy.reason.as_str(), "busy");
    assert_eq!(busy.first, first.as_second() + 60);
    release.notify_one();
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = ledger(dir.path()).history("slow", 10).unwrap();
    assert_eq!(runs.len(), 1, "the busy occurrence did not run: {runs:?}");
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("ok"));
    assert_eq!(ledger(dir.path()).missed("slow", 10).unwrap().len(), 1);
}

/// Waits for the job's first missed range.
async fn poll_missed(dir: &std::path::Path, job: &str) -> baton_store::ledger::MissedRow {
    for _ in 0..6_000 {
        if let Some(m) = ledger(dir).missed(job, 10).unwrap().pop() {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no missed occurrence recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_attempts_are_retried_after_their_backoff_until_one_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let tries = Arc::new(AtomicU32::new(0));
    let job = Job::cron("flaky", "* * * * *")
        .retries(3)
        .backoff(Duration::from_secs(10), Duration::from_secs(15))
        .run(move |ctx: RunContext| {
            let (tx, tries) = (tx.clone(), Arc::clone(&tries));
            async move {
                tx.send(ctx.attempt()).unwrap();
                if tries.fetch_add(1, Ordering::SeqCst) < 2 {
                    return Err(JobError::msg("the server timed out"));
                }
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    assert_eq!(next(&mut rx).await, 1);
    // The first retry waits 10 s from the failure, the second 15 s (20 s
    // capped); each step of the clock waits for the failure's record.
    recorded_attempts(dir.path(), "flaky", 1).await;
    clock.advance(Duration::from_secs(9));
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "not retried before its backoff");
    clock.advance(Duration::from_secs(1));
    assert_eq!(next(&mut rx).await, 2);
    recorded_attempts(dir.path(), "flaky", 2).await;
    clock.advance(Duration::from_secs(15));
    assert_eq!(next(&mut rx).await, 3);
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = ledger(dir.path()).history("flaky", 10).unwrap();
    assert_eq!(runs.len(), 1);
    let outcomes: Vec<&str> = runs[0]
        .attempts
        .iter()
        .map(|a| a.outcome.as_str())
        .collect();
    assert_eq!(outcomes, ["failed", "failed", "ok"]);
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("ok"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_marked_never_retry_fails_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let job = Job::cron("strict", "* * * * *")
        .retries(5)
        .run(|_| async { Err(JobError::msg("malformed input").never_retry()) });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    recorded_attempts(dir.path(), "strict", 1).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = ledger(dir.path()).history("strict", 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].attempts.len(), 1, "no retry: {runs:?}");
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("failed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_attempt_fails_and_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let job = Job::cron("brittle", "* * * * *")
        .retries(1)
        .backoff(Duration::from_secs(1), Duration::from_secs(1))
        .run(|ctx: RunContext| async move {
            assert!(ctx.attempt() > 1, "the first attempt panics");
            Ok(())
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    recorded_attempts(dir.path(), "brittle", 1).await;
    clock.advance(Duration::from_secs(1));
    recorded_attempts(dir.path(), "brittle", 2).await;
    handle.shutdown(Duration::from_secs(1)).await;
    let runs = ledger(dir.path()).history("brittle", 10).unwrap();
    let outcomes: Vec<&str> = runs[0]
        .attempts
        .iter()
        .map(|a| a.outcome.as_str())
        .collect();
    assert_eq!(outcomes, ["failed", "ok"]);
    assert_eq!(runs[0].verdict.map(|v| v.as_str()), Some("ok"));
}

/// `Overlap::Queue`: the occurrence that meets the run in flight waits in
/// the ledger's queue, the next one joins it, and the holder runs it as
/// soon as its run ends, under the same lease (the same fence).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_occurrence_meeting_the_previous_run_waits_and_runs_after_it_under_the_same_lease() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let go = Arc::new(tokio::sync::Semaphore::new(0));
    let gate = Arc::clone(&go);
    let ttl = Duration::from_secs(300);
    let job = Job::cron("slow", "* * * * *")
        .lease(ttl, ttl)
        .overlap(baton_embed::Overlap::Queue)
        .run(move |ctx: RunContext| {
            let (tx, gate) = (tx.clone(), Arc::clone(&gate));
            async move {
                tx.send((ctx.occurrence(), ctx.fence())).unwrap();
                gate.acquire().await.unwrap().forget();
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    clock.advance(Duration::from_secs(30));
    let (first, fence) = next(&mut rx).await;
    // 00:02 comes while 00:01 runs: it waits; 00:03 joins it.
    clock.advance(Duration::from_secs(60));
    poll_queued(dir.path(), "slow", 0).await;
    clock.advance(Duration::from_secs(60));
    let waiting = poll_queued(dir.path(), "slow", 1).await;
    assert_eq!(waiting.occurrence, first.as_second() + 60);
    go.add_permits(1);
    let (second, same) = next(&mut rx).await;
    assert_eq!(
        second.as_second(),
        first.as_second() + 60,
        "the waiting one runs next"
    );
    assert_eq!(same, fence, "under the same lease");
    go.add_permits(1);
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let mut l = ledger(dir.path());
    let runs = l.history("slow", 10).unwrap();
    let ran: Vec<(Option<i64>, Option<&str>)> = runs
        .iter()
        .map(|r| (r.occurrence, r.verdict.map(|v| v.as_str())))
        .collect();
    assert_eq!(
        ran,
        [
            (Some(first.as_second() + 60), Some("ok")),
            (Some(first.as_second()), Some("ok"))
        ]
    );
    assert!(l.queued("slow").unwrap().is_empty(), "the queue is drained");
    assert!(
        l.missed("slow", 10).unwrap().is_empty(),
        "nothing was missed"
    );
    assert!(
        rx.try_recv().is_err(),
        "the coalesced occurrence did not run apart"
    );
}

/// Waits until the job's queue holds one occurrence that `coalesced`
/// others joined.
async fn poll_queued(
    dir: &std::path::Path,
    job: &str,
    coalesced: u64,
) -> baton_store::ledger::DecisionRow {
    for _ in 0..6_000 {
        if let Some(d) = ledger(dir).queued(job).unwrap().pop()
            && d.coalesced == coalesced
        {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no occurrence queued with {coalesced} coalesced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_occurrence_a_later_one_overtook_still_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let start: Timestamp = "2026-06-01T00:00:30Z".parse().unwrap();
    let (x, y) = (start.as_second() - 30, start.as_second());
    // A later occurrence (y) took the lock first and claimed it, while x
    // waited in the queue: as a replica whose timer fired late would.
    let at_start = Arc::new(baton_embed::ManualClock::new(
        start,
        Duration::from_secs(1_000),
    ));
    crate::support::claim_ahead(
        dir.path(),
        baton_ledger::Files::new(dir.path().to_owned()).with_clock(at_start),
        "j",
        y,
    );
    assert_eq!(
        ledger(dir.path()).enqueue("j", &[x], false, start).unwrap(),
        baton_store::ledger::Queued::Queued
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Due once a year: nothing of its schedule runs in the test.
    let job = Job::cron("j", "0 0 1 1 *")
        .overlap(baton_embed::Overlap::Queue)
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.occurrence().as_second()).unwrap();
                Ok(())
            }
        });
    let (clock, handle) = on_manual_clock(dir.path(), start, job);
    // The scheduler's look at its queue finds x.
    clock.advance(Duration::from_secs(3));
    assert_eq!(next(&mut rx).await, x, "the overtaken occurrence runs");
    handle.idle().await;
    let d = ledger(dir.path()).decision("j", x).unwrap().unwrap();
    assert_eq!(d.decision, baton_store::ledger::Decision::Started, "{d:?}");
    // Once: a later look finds nothing.
    clock.advance(Duration::from_secs(3));
    tokio::task::yield_now().await;
    handle.idle().await;
    assert!(rx.try_recv().is_err());
    handle.shutdown(Duration::from_secs(1)).await;
}
