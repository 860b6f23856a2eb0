//! What a scheduler catches up when it starts: the newest occurrence that
//! passed while no replica ran the job runs at once if it is within the
//! catch-up window, the ones before it are recorded `superseded`; older
//! than the window, all are recorded `outside-window`; and a job the
//! ledger never saw catches up nothing.

use std::time::Duration;

use baton_embed::{Job, RunContext};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

use crate::support::{next, on_manual_clock};

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// An hourly job, caught up within three hours.
fn hourly(tx: mpsc::UnboundedSender<Timestamp>) -> Job {
    Job::cron("hourly", "0 * * * *")
        .catch_up_window(Duration::from_secs(3 * 3600))
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.occurrence()).unwrap();
                Ok(())
            }
        })
}

fn ledger(dir: &std::path::Path) -> Box<dyn baton_store::ledger::Records> {
    baton_ledger::Files::new(dir.to_owned())
        .records(at("2026-06-01T00:00:00Z"))
        .unwrap()
}

/// The hourly job's missed ranges, oldest first: (reason, first, last,
/// count).
fn missed(dir: &std::path::Path) -> Vec<(String, i64, i64, u64)> {
    ranges(dir, "hourly")
        .into_iter()
        .map(|(reason, first, last, count, _)| (reason, first, last, count))
        .collect()
}

/// The range an every-second job seen on 2026-06-01 passes over when it
/// starts on 2026-06-03 with a window of an hour: counted to 100,000.
fn two_days_outside_the_window() -> (String, i64, i64, u64, bool) {
    (
        "outside-window".to_owned(),
        at("2026-06-01T00:00:00Z").as_second(),
        at("2026-06-02T23:00:00Z").as_second(),
        100_000,
        true,
    )
}

/// `job`'s missed ranges, oldest first: (reason, first, last, count,
/// whether the count is a lower bound).
fn ranges(dir: &std::path::Path, job: &str) -> Vec<(String, i64, i64, u64, bool)> {
    let mut m: Vec<_> = ledger(dir)
        .missed(job, 10)
        .unwrap()
        .into_iter()
        .map(|m| {
            (
                m.reason.as_str().to_owned(),
                m.first,
                m.last,
                m.count,
                m.at_least,
            )
        })
        .collect();
    m.reverse();
    m
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_passed_occurrence_within_the_window_runs_at_the_start() {
    let dir = tempfile::tempdir().unwrap();
    // The service knew the job since midnight, and was down until 02:10.
    ledger(dir.path())
        .see_jobs(&["hourly"], at("2026-06-01T00:00:00Z"))
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (_clock, handle) = on_manual_clock(dir.path(), at("2026-06-01T02:10:00Z"), hourly(tx));
    assert_eq!(next(&mut rx).await, at("2026-06-01T02:00:00Z"));
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(rx.try_recv().is_err(), "only the newest ran");
    assert_eq!(
        missed(dir.path()),
        [(
            "superseded".to_owned(),
            at("2026-06-01T00:00:00Z").as_second(),
            at("2026-06-01T01:00:00Z").as_second(),
            2
        )]
    );
    let runs = ledger(dir.path()).history("hourly", 10).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].started, at("2026-06-01T02:10:00Z"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn occurrences_older_than_the_window_are_recorded_missed_and_none_runs() {
    let dir = tempfile::tempdir().unwrap();
    // Seen the day before: the first start runs 00:00 (the mark then),
    // and the service is down from then until 02:40.
    ledger(dir.path())
        .see_jobs(&["hourly"], at("2026-05-31T00:00:00Z"))
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (clock, handle) =
        on_manual_clock(dir.path(), at("2026-06-01T00:00:30Z"), hourly(tx.clone()));
    // Caught up at the start: 2026-06-01T00:00, newest within the hour.
    assert_eq!(next(&mut rx).await, at("2026-06-01T00:00:00Z"));
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    drop(clock);
    let before = missed(dir.path());
    let job = hourly(tx).catch_up_window(Duration::from_secs(30 * 60));
    let (_clock, handle) = on_manual_clock(dir.path(), at("2026-06-01T02:40:00Z"), job);
    handle.idle().await;
    // The timer waits for 03:00; what the start decided is recorded.
    let want = (
        "outside-window".to_owned(),
        at("2026-06-01T01:00:00Z").as_second(),
        at("2026-06-01T02:00:00Z").as_second(),
        2,
    );
    let mut after = Vec::new();
    for _ in 0..6_000 {
        after = missed(dir.path());
        if after.last() == Some(&want) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(after.last(), Some(&want), "{after:?}");
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(rx.try_recv().is_err(), "nothing older than the window ran");
    assert_eq!(ledger(dir.path()).history("hourly", 10).unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_the_ledger_never_saw_catches_up_nothing_and_is_seen_from_now() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let start = at("2026-06-01T02:10:00Z");
    let (clock, handle) = on_manual_clock(dir.path(), start, hourly(tx));
    let mut seen = None;
    for _ in 0..6_000 {
        seen = ledger(dir.path()).job("hourly").unwrap();
        if seen.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(seen.expect("the job seen at the start").first_seen, start);
    clock.advance(Duration::from_secs(50 * 60));
    // 03:00 is the first to run.
    assert_eq!(next(&mut rx).await, at("2026-06-01T03:00:00Z"));
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(missed(dir.path()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_downtime_is_one_range_whose_count_is_a_lower_bound() {
    let dir = tempfile::tempdir().unwrap();
    // Every second, seen two days before the start: 172,800 passed.
    let start = at("2026-06-03T00:00:00.5Z");
    ledger(dir.path())
        .see_jobs(&["each-second"], at("2026-06-01T00:00:00Z"))
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("each-second", "* * * * * *").run(move |ctx: RunContext| {
        let tx = tx.clone();
        async move {
            tx.send(ctx.occurrence()).unwrap();
            Ok(())
        }
    });
    let (_clock, handle) = on_manual_clock(dir.path(), start, job);
    assert_eq!(next(&mut rx).await, at("2026-06-03T00:00:00Z"));
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    // Older than the hour's window: one range, counted to 100,000; the
    // hour before the start gives way to its newest second.
    assert_eq!(
        ranges(dir.path(), "each-second"),
        [
            two_days_outside_the_window(),
            (
                "superseded".to_owned(),
                at("2026-06-02T23:00:01Z").as_second(),
                at("2026-06-02T23:59:59Z").as_second(),
                3_599,
                false
            )
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_starting_together_catch_up_one_occurrence_once() {
    let dir = tempfile::tempdir().unwrap();
    ledger(dir.path())
        .see_jobs(&["hourly"], at("2026-06-01T00:00:00Z"))
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    // Three replicas of the service start at the same instant on one store,
    // each on a clock of its own.
    let start = at("2026-06-01T02:10:00Z");
    let replicas: Vec<_> = (0..3)
        .map(|_| on_manual_clock(dir.path(), start, hourly(tx.clone())))
        .collect();
    drop(tx);
    assert_eq!(next(&mut rx).await, at("2026-06-01T02:00:00Z"));
    for (_clock, handle) in replicas {
        handle.idle().await;
        handle.shutdown(Duration::from_secs(1)).await;
    }
    // Every replica is down: its job's sender is gone, and no second run
    // of the occurrence may be waiting.
    let more = tokio::time::timeout(baton_testkit::PATIENCE, rx.recv())
        .await
        .expect("the replicas' jobs outlived their shutdown");
    assert_eq!(
        more, None,
        "the caught-up occurrence ran on more than one replica"
    );
    assert_eq!(
        missed(dir.path()),
        [(
            "superseded".to_owned(),
            at("2026-06-01T00:00:00Z").as_second(),
            at("2026-06-01T01:00:00Z").as_second(),
            2
        )],
        "the range passed over recorded once"
    );
    assert_eq!(ledger(dir.path()).history("hourly", 10).unwrap().len(), 1);
}

/// A job of `policy` sending each run's occurrence and fence.
fn sending(
    name: &str,
    cron: &str,
    policy: baton_embed::CatchUp,
    tx: mpsc::UnboundedSender<(Timestamp, u64)>,
) -> Job {
    Job::cron(name, cron)
        .catch_up(policy)
        .catch_up_window(Duration::from_secs(3 * 3600))
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send((ctx.occurrence(), ctx.fence())).unwrap();
                Ok(())
            }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_all_runs_every_passed_occurrence_oldest_first_under_one_lease() {
    let dir = tempfile::tempdir().unwrap();
    ledger(dir.path())
        .see_jobs(&["hourly"], at("2026-06-01T00:00:00Z"))
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = sending("hourly", "0 * * * *", baton_embed::CatchUp::All, tx);
    let (_clock, handle) = on_manual_clock(dir.path(), at("2026-06-01T02:10:00Z"), job);
    let mut ran = Vec::new();
    for _ in 0..3 {
        ran.push(next(&mut rx).await);
    }
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    let occurrences: Vec<Timestamp> = ran.iter().map(|r| r.0).collect();
    assert_eq!(
        occurrences,
        [
            at("2026-06-01T00:00:00Z"),
            at("2026-06-01T01:00:00Z"),
            at("2026-06-01T02:00:00Z")
        ]
    );
    assert!(ran.iter().all(|r| r.1 == ran[0].1), "one lease: {ran:?}");
    assert!(rx.try_recv().is_err());
    assert!(missed(dir.path()).is_empty());
    let mut l = ledger(dir.path());
    assert_eq!(l.history("hourly", 10).unwrap().len(), 3);
    assert!(l.queued("hourly").unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_all_runs_the_newest_hundred_and_misses_the_rest_once() {
    let dir = tempfile::tempdir().unwrap();
    ledger(dir.path())
        .see_jobs(&["each-second"], at("2026-06-01T00:00:00Z"))
        .unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = sending("each-second", "* * * * * *", baton_embed::CatchUp::All, tx)
        .catch_up_window(Duration::from_secs(3600));
    let (_clock, handle) = on_manual_clock(dir.path(), at("2026-06-03T00:00:00.5Z"), job);
    let first = next(&mut rx).await.0;
    assert_eq!(
        first,
        at("2026-06-02T23:58:21Z"),
        "the oldest of the newest 100"
    );
    for _ in 1..baton_embed::CATCH_UP_MAX {
        next(&mut rx).await;
    }
    handle.idle().await;
    handle.shutdown(Duration::from_secs(1)).await;
    assert_eq!(
        ranges(dir.path(), "each-second"),
        [
            two_days_outside_the_window(),
            (
                "catch-up-max".to_owned(),
                at("2026-06-02T23:00:01Z").as_second(),
                at("2026-06-02T23:58:20Z").as_second(),
                3_500,
                false
            )
        ]
    );
    assert_eq!(
        ledger(dir.path())
            .history("each-second", 1000)
            .unwrap()
            .len(),
        100
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catch_up_none_runs_only_what_is_due_now() {
    for (start, runs, late_through) in [
        // 02:00 is 30 s old: it runs; the ones before are late.
        ("2026-06-01T02:00:30Z", true, "2026-06-01T01:00:00Z"),
        // 02:00 is ten minutes old: late too, and nothing runs.
        ("2026-06-01T02:10:00Z", false, "2026-06-01T02:00:00Z"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        ledger(dir.path())
            .see_jobs(&["hourly"], at("2026-06-01T00:00:00Z"))
            .unwrap();
        let (tx, mut rx) = mpsc::unbounded_channel();
        let job = sending("hourly", "0 * * * *", baton_embed::CatchUp::None, tx);
        let (_clock, handle) = on_manual_clock(dir.path(), at(start), job);
        if runs {
            assert_eq!(next(&mut rx).await.0, at("2026-06-01T02:00:00Z"));
        }
        handle.idle().await;
        // The catch-up is decided before any run: with nothing to run,
        // the misses are there once the ledger says so.
        let want = (
            "late".to_owned(),
            at("2026-06-01T00:00:00Z").as_second(),
            at(late_through).as_second(),
            if runs { 2 } else { 3 },
        );
        for _ in 0..6_000 {
            if missed(dir.path()) == [want.clone()] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        handle.shutdown(Duration::from_secs(1)).await;
        assert_eq!(missed(dir.path()), [want], "{start}");
        assert!(rx.try_recv().is_err(), "{start}: nothing else ran");
    }
}
