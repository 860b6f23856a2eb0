//! A manual clock drives the scheduler: each step of the clock to an
//! occurrence runs it, deterministically and at once, across a daylight
//! saving change in Europe/Berlin; a jump over several occurrences runs the
//! newest and records the others missed.

use std::time::Duration;

use baton_embed::{Job, ManualClock, RunContext};

use crate::support::{next, on_manual_clock};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// A job that reports each occurrence it runs.
fn reporting(name: &str, cron: &str, tx: mpsc::UnboundedSender<Timestamp>) -> Job {
    Job::cron(name, cron)
        .timezone("Europe/Berlin")
        .run(move |ctx: RunContext| {
            let tx = tx.clone();
            async move {
                tx.send(ctx.occurrence()).unwrap();
                Ok(())
            }
        })
}

/// Polls the ledger in `state` until `f` finds what it waits for, off the
/// scheduler's threads.
async fn poll_ledger(
    state: &std::path::Path,
    what: &'static str,
    mut f: impl FnMut(&mut dyn baton_store::ledger::Records) -> Option<()> + Send + 'static,
) {
    let files = baton_ledger::Files::new(state.to_owned());
    tokio::task::spawn_blocking(move || {
        crate::support::poll(what, || {
            f(&mut *files.records(Timestamp::UNIX_EPOCH).ok()?)
        })
    })
    .await
    .unwrap();
}

/// Moves `clock` to `to` (forward only).
fn move_to(clock: &ManualClock, to: Timestamp) {
    use baton_embed::Clock as _;
    let d = Duration::try_from(to.duration_since(clock.wall())).unwrap();
    clock.advance(d);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_clock_steps_through_a_fixed_schedule_across_both_dst_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (clock, handle) = on_manual_clock(
        dir.path(),
        at("2026-03-27T12:00:00Z"),
        reporting("nightly", "30 2 * * *", tx),
    );
    // 02:30 in Berlin: CET the day before the change; on 2026-03-29 02:30
    // never happens, and it fires when the clocks jump (03:00 CEST); then
    // 02:30 CEST. On 2026-10-25 02:30 happens twice and fires the first
    // time only.
    let expected = [
        "2026-03-28T01:30:00Z",
        "2026-03-29T01:00:00Z",
        "2026-03-30T00:30:00Z",
        "2026-10-24T00:30:00Z",
        "2026-10-25T00:30:00Z",
        "2026-10-26T01:30:00Z",
    ];
    // Within the catch-up window (1 h) of the newest occurrence.
    let jump = at("2026-10-24T00:45:00Z");
    for e in expected.map(at) {
        if e == at("2026-10-24T00:30:00Z") {
            // Months at once: the newest occurrence runs, the summer's
            // before it, older than the window, are recorded missed.
            move_to(&clock, jump);
            assert_eq!(next(&mut rx).await, e);
            handle.idle().await;
            continue;
        }
        // A second early: nothing runs (before 2026-10-26, that second
        // is past the fold's second 02:30, 2026-10-25T01:30Z, which fires
        // nothing).
        move_to(&clock, e - jiff::SignedDuration::from_secs(1));
        tokio::task::yield_now().await;
        assert!(rx.try_recv().is_err(), "nothing runs before {e}");
        move_to(&clock, e);
        assert_eq!(next(&mut rx).await, e);
        // Its end recorded and its lease released before the next step.
        handle.idle().await;
    }
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(rx.try_recv().is_err());
    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(at("2026-10-26T02:00:00Z"))
        .unwrap();
    let runs = ledger.history("nightly", 100).unwrap();
    let mut occurrences: Vec<i64> = runs.iter().map(|r| r.occurrence.unwrap()).collect();
    occurrences.sort_unstable();
    let want: Vec<i64> = expected.iter().map(|e| at(e).as_second()).collect();
    assert_eq!(occurrences, want);
    assert!(
        runs.iter()
            .all(|r| r.verdict.map(|v| v.as_str()) == Some("ok"))
    );
    for r in &runs {
        // One step per run, named after the job, as `baton status` reads
        // the step of a job with a single `run`.
        let steps: Vec<&str> = r.attempts.iter().map(|a| a.step.as_str()).collect();
        assert_eq!(steps, ["nightly"]);
        // The ledger's times are the manual clock's.
        let occ = r.occurrence.unwrap();
        let started = if occ == at("2026-10-24T00:30:00Z").as_second() {
            jump
        } else {
            Timestamp::from_second(occ).unwrap()
        };
        assert_eq!(r.started, started, "{r:?}");
    }
    let missed = ledger.missed("nightly", 10).unwrap();
    assert_eq!(missed.len(), 1, "{missed:?}");
    assert_eq!(missed[0].reason.as_str(), "outside-window");
    assert_eq!(
        (missed[0].first, missed[0].last),
        (
            at("2026-03-31T00:30:00Z").as_second(),
            at("2026-10-23T00:30:00Z").as_second()
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_jump_over_several_occurrences_runs_the_newest_and_records_the_rest_missed() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (clock, handle) = on_manual_clock(
        dir.path(),
        at("2026-06-01T00:00:30Z"),
        reporting("quarterly", "*/15 * * * *", tx),
    );
    move_to(&clock, at("2026-06-01T01:05:00Z"));
    assert_eq!(next(&mut rx).await, at("2026-06-01T01:00:00Z"));
    handle.shutdown(Duration::from_secs(1)).await;
    assert!(rx.try_recv().is_err(), "only the newest ran");
    let mut ledger = baton_ledger::Files::new(dir.path().to_owned())
        .records(at("2026-06-01T02:00:00Z"))
        .unwrap();
    let missed = ledger.missed("quarterly", 10).unwrap();
    assert_eq!(missed.len(), 1, "{missed:?}");
    let m = &missed[0];
    assert_eq!(m.reason.as_str(), "superseded");
    assert_eq!(
        (m.first, m.last, m.count),
        (
            at("2026-06-01T00:15:00Z").as_second(),
            at("2026-06-01T00:45:00Z").as_second(),
            3
        )
    );
}

/// A `Handle` dropped (a service that starts the scheduler and keeps no
/// handle) leaves the scheduler running: its next occurrence still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_handle_leaves_the_scheduler_running() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let (clock, handle) = on_manual_clock(
        dir.path(),
        at("2026-06-01T00:00:30Z"),
        reporting("hourly", "0 * * * *", tx),
    );
    // Once the scheduler has seen the job (its first sighting is read at
    // the start, on the clock as it is then, and written to the ledger).
    poll_ledger(dir.path(), "the job's first sighting", |l| {
        l.job("hourly").ok()?.map(|_| ())
    })
    .await;
    drop(handle);
    move_to(&clock, at("2026-06-01T00:59:59Z"));
    tokio::task::yield_now().await;
    assert!(rx.try_recv().is_err(), "nothing runs before 01:00");
    move_to(&clock, at("2026-06-01T01:00:00Z"));
    assert_eq!(next(&mut rx).await, at("2026-06-01T01:00:00Z"));
    // With no handle to wait on: 01:00's verdict recorded, then its lease
    // let go (02:00 would find it held, the holder silent for the hour the
    // clock jumps, and be missed `hung`).
    poll_ledger(dir.path(), "the 01:00 run's verdict", |l| {
        let runs = l.history("hourly", 10).ok()?;
        runs.iter().any(|r| r.verdict.is_some()).then_some(())
    })
    .await;
    let state = dir.path().to_owned();
    tokio::task::spawn_blocking(move || {
        crate::support::poll("the 01:00 run's lease let go", || {
            let lock = baton_store::store::LockRef {
                job: "hourly",
                lock: "hourly",
                slot: 1,
                ttl: Duration::from_secs(30),
                takeover_grace: Duration::from_secs(30),
            };
            let verdict = baton_ledger::Files::new(state.clone())
                .inspect(&lock)
                .ok()??;
            matches!(verdict, baton_lease::Verdict::Free(_)).then_some(())
        });
    })
    .await
    .unwrap();
    move_to(&clock, at("2026-06-01T02:00:00Z"));
    assert_eq!(next(&mut rx).await, at("2026-06-01T02:00:00Z"));
}
