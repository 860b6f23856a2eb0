//! Cumulative tallies: they rise with what they count, in the same
//! transaction, and outlive the rows pruning removes.

use baton_store::ledger::Records;
use std::time::Duration;

use baton_ledger::Ledger;
use baton_store::ledger::{Finished, JobTallies, Miss, Missed, Queued};
use baton_store::words::{MissReason, RunVerdict, SkipReason};

use crate::support::{Scene, at, finished, range, scheduled};

fn of(ledger: &mut Ledger, job: &str) -> JobTallies {
    ledger
        .tallies()
        .unwrap()
        .into_iter()
        .find(|t| t.job == job)
        .unwrap_or_else(|| panic!("no tallies for {job}"))
}

#[test]
fn tallies_survive_pruning() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    // Seven runs an hour apart, keeping 2: 0.05 s, 0.3 s, 3 s, 3 s, 2 min,
    // 5 h, and a failure of 10 s.
    let lengths_ms: [u64; 6] = [50, 300, 3_000, 3_000, 120_000, 18_000_000];
    for (i, ms) in lengths_ms.iter().enumerate() {
        let run = scheduled("j", &format!("{i:016x}"), 3600 * i as i64);
        ledger.begin_run(&run).unwrap();
        let mut end = finished(&run, 0, true);
        end.finished = run.started + jiff::SignedDuration::from_millis(*ms as i64);
        ledger.finish_run(&end, 2).unwrap();
    }
    let run = scheduled("j", "00000000000000ff", 3600 * 6);
    ledger.begin_run(&run).unwrap();
    ledger.finish_run(&finished(&run, 10, false), 2).unwrap();
    // Finishing it again counts nothing.
    ledger.finish_run(&finished(&run, 10, false), 2).unwrap();

    assert_eq!(ledger.history("j", 100).unwrap().len(), 2);
    let t = of(&mut ledger, "j");
    assert_eq!(t.runs.get(&RunVerdict::Ok), Some(&6));
    assert_eq!(t.runs.get(&RunVerdict::Failed), Some(&1));
    assert_eq!(t.lease_losses, 0);
    assert_eq!(t.durations.count(), 7);
    assert_eq!(t.durations.buckets, [1, 1, 0, 2, 1, 0, 1, 0, 0, 0, 1]);
    assert_eq!(
        t.durations.sum,
        Duration::from_millis(lengths_ms.iter().sum::<u64>() + 10_000)
    );
    let cumulative = t.durations.cumulative();
    assert_eq!(cumulative[3], (5.0, 4));
    assert_eq!(cumulative[10], (f64::INFINITY, 7));
    assert_eq!(t.last_success, Some(at(3600 * 5 + 18_000)));
    assert_eq!(t.last_failure, Some(at(3600 * 6 + 10)));
}

#[test]
fn a_miss_of_a_five_occurrence_range_counts_five() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let busy = range("j", MissReason::Busy, 0, 240);
    assert_eq!(busy.count, 5);
    assert_eq!(ledger.miss(&busy, at(300)).unwrap(), Missed::Recorded);
    // Another process recording the same range counts nothing.
    assert_eq!(ledger.miss(&busy, at(300)).unwrap(), Missed::Moved);
    assert_eq!(of(&mut ledger, "j").missed.get(&MissReason::Busy), Some(&5));

    // A streak that extends its range counts its occurrences too.
    let paused = |first: i64, last: i64| Miss {
        streak: true,
        ..range("j", MissReason::Paused, first, last)
    };
    assert_eq!(
        ledger.miss(&paused(300, 420), at(420)).unwrap(),
        Missed::Recorded
    );
    assert_eq!(
        ledger.miss(&paused(480, 540), at(540)).unwrap(),
        Missed::Extended
    );
    let t = of(&mut ledger, "j");
    assert_eq!(t.missed.get(&MissReason::Busy), Some(&5));
    assert_eq!(t.missed.get(&MissReason::Paused), Some(&5));
    assert!(t.runs.is_empty() && t.skipped.is_empty());
}

#[test]
fn coalesced_and_claimed_occurrences_count_as_skipped() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let s = |secs: i64| at(secs).as_second();
    assert_eq!(
        ledger.enqueue("j", &[s(0)], true, at(0)).unwrap(),
        Queued::Queued
    );
    assert_eq!(
        ledger
            .enqueue("j", &[s(60), s(120)], true, at(120))
            .unwrap(),
        Queued::Coalesced { into: s(0) }
    );
    assert!(ledger.claimed("j", s(180), "claimed", at(180)).unwrap());
    assert!(!ledger.claimed("j", s(180), "claimed", at(180)).unwrap());
    let t = of(&mut ledger, "j");
    assert_eq!(t.skipped.get(&SkipReason::Coalesced), Some(&2));
    assert_eq!(t.skipped.get(&SkipReason::Claimed), Some(&1));
    assert!(t.missed.is_empty());
}

#[test]
fn a_lost_lease_counts_as_a_verdict_and_a_lease_loss() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let run = scheduled("j", "0000000000000001", 0);
    ledger.begin_run(&run).unwrap();
    let lost = Finished {
        verdict: RunVerdict::LeaseLost,
        ..finished(&run, 30, false)
    };
    ledger.finish_run(&lost, 100).unwrap();
    let t = of(&mut ledger, "j");
    assert_eq!(t.runs.get(&RunVerdict::LeaseLost), Some(&1));
    assert_eq!(t.lease_losses, 1);
}

#[test]
fn a_job_seen_and_never_run_has_empty_tallies() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.see_jobs(&["quiet"], at(0)).unwrap();
    assert_eq!(
        ledger.tallies().unwrap(),
        [JobTallies {
            job: "quiet".into(),
            ..JobTallies::default()
        }]
    );
}
