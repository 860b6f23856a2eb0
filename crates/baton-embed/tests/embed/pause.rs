//! A pause in the ledger (what `baton pause JOB` writes) stops the
//! embedded scheduler's runs of the job: each occurrence it covers is
//! recorded missed `paused`, not run; after the resume the job runs again.

use std::time::Duration;

use baton_embed::{Clock as _, Job, ManualClock, RunContext};
use baton_store::Store as _;
use jiff::Timestamp;
use tokio::sync::mpsc;

use crate::support::{next, on_manual_clock, poll};

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn step_to(clock: &ManualClock, to: Timestamp) {
    clock.advance(Duration::try_from(to.duration_since(clock.wall())).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_job_misses_its_occurrences_as_paused_and_runs_again_once_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let job = Job::cron("report", "*/15 * * * *").run(move |ctx: RunContext| {
        let tx = tx.clone();
        async move {
            tx.send(ctx.occurrence()).unwrap();
            Ok(())
        }
    });
    let (clock, handle) = on_manual_clock(dir.path(), at("2026-06-01T00:00:30Z"), job);
    let files = baton_ledger::Files::new(dir.path().to_owned());
    let pause = files
        .records(clock.wall())
        .unwrap()
        .pause(
            "report",
            None,
            Some("migration"),
            "alice",
            at("2026-06-01T00:05:00Z"),
        )
        .unwrap();
    assert!(pause.active(at("2026-06-01T00:10:00Z")));

    // Two occurrences while paused: one range, as the command line keeps a
    // pause's misses.
    let (quarter, half) = (at("2026-06-01T00:15:00Z"), at("2026-06-01T00:30:00Z"));
    let mut missed = Vec::new();
    for (when, count) in [(quarter, 1), (half, 2)] {
        step_to(&clock, when);
        let dir_path = dir.path().to_owned();
        missed = tokio::task::spawn_blocking(move || {
            let files = baton_ledger::Files::new(dir_path);
            poll("the paused occurrence recorded missed", || {
                let mut l = files.records(when).ok()?;
                l.missed("report", 10)
                    .ok()
                    .filter(|m| m.first().is_some_and(|m| m.count == count))
            })
        })
        .await
        .unwrap();
        handle.idle().await;
    }
    assert!(rx.try_recv().is_err(), "a paused occurrence ran");
    assert_eq!(missed.len(), 1, "{missed:?}");
    let m = &missed[0];
    assert_eq!(m.reason.as_str(), "paused");
    assert_eq!(
        (m.first, m.last, m.count),
        (quarter.as_second(), half.as_second(), 2)
    );
    let detail = m.detail.as_deref().unwrap_or_default();
    assert!(
        detail.contains("alice") && detail.contains("migration"),
        "{detail}"
    );

    files
        .records(at("2026-06-01T00:35:00Z"))
        .unwrap()
        .resume("report", at("2026-06-01T00:35:00Z"))
        .unwrap()
        .expect("the pause was in force");
    step_to(&clock, at("2026-06-01T00:45:00Z"));
    assert_eq!(next(&mut rx).await, at("2026-06-01T00:45:00Z"));
    handle.shutdown(Duration::from_secs(1)).await;

    let mut ledger = files.records(at("2026-06-01T01:00:00Z")).unwrap();
    let runs = ledger.history("report", 10).unwrap();
    let occurrences: Vec<Option<i64>> = runs.iter().map(|r| r.occurrence).collect();
    assert_eq!(
        occurrences,
        [Some(at("2026-06-01T00:45:00Z").as_second())],
        "only the occurrence after the resume ran"
    );
    assert_eq!(ledger.missed("report", 10).unwrap().len(), 1);
}
