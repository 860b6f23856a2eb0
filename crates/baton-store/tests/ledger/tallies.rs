//! Tallies: cumulative counts that pruning never touches.

use std::time::Duration;

use baton_store::ledger::{Finished, JobTallies, Miss, Missed, Queued};
use baton_store::words::{MissReason, RunVerdict, SkipReason};
use jiff::SignedDuration;

use crate::support::{Log, Store, at, finished, occ, range, scheduled};

both! {
    tallies_count_verdicts_misses_skips_and_durations_and_survive_pruning
    tallies_survive_pruning
    a_miss_of_a_five_occurrence_range_counts_five
    coalesced_and_claimed_occurrences_count_as_skipped
    a_lost_lease_counts_as_a_verdict_and_a_lease_loss
    a_job_seen_and_never_run_has_empty_tallies
}

fn of(l: &mut Store, job: &str) -> JobTallies {
    l.tallies()
        .unwrap()
        .into_iter()
        .find(|t| t.job == job)
        .unwrap()
}

fn tallies_count_verdicts_misses_skips_and_durations_and_survive_pruning(
    l: &mut Store,
    log: &mut Log,
) {
    l.see_jobs(&["idle"], at(0)).unwrap();
    for (i, (secs, ok)) in [
        (0, true),
        (1, false),
        (30, true),
        (7200, true),
        (20_000, false),
    ]
    .into_iter()
    .enumerate()
    {
        let start = 100_000 * i64::try_from(i).unwrap();
        let run = scheduled("j", &format!("{i:016x}"), start);
        l.begin_run(&run).unwrap();
        l.finish_run(&finished(&run, secs, ok), 1).unwrap();
    }
    // A run that lost its lease, finished in 50 ms.
    let lost = scheduled("j", "00000000000000ee", 900_000);
    l.begin_run(&lost).unwrap();
    let lease_lost = Finished {
        verdict: RunVerdict::LeaseLost,
        finished: lost.started + SignedDuration::from_millis(50),
        ..finished(&lost, 0, false)
    };
    l.finish_run(&lease_lost, 1).unwrap();
    // A run the ledger lost: its verdict counts, no duration.
    let gone = scheduled("j", "00000000000000ef", 1_000_000);
    l.finish_run(&finished(&gone, 5, true), 1).unwrap();
    l.miss(
        &Miss {
            count: 5,
            ..range("j", MissReason::Busy, 1_000_060, 1_000_300)
        },
        at(1_000_300),
    )
    .unwrap();
    l.enqueue("j", &[occ(1_000_360)], true, at(1_000_360))
        .unwrap();
    l.enqueue("j", &[occ(1_000_420)], true, at(1_000_420))
        .unwrap();
    l.claimed("j", occ(1_000_480), "", at(1_000_480)).unwrap();

    assert_eq!(l.history("j", 100).unwrap().len(), 1, "history was pruned");
    let t = of(l, "j");
    assert_eq!(
        t.runs[&RunVerdict::Ok],
        4,
        "the run the ledger lost counts too"
    );
    assert_eq!(t.runs[&RunVerdict::Failed], 2);
    assert_eq!(t.runs[&RunVerdict::LeaseLost], 1);
    assert_eq!(t.lease_losses, 1);
    assert_eq!(t.missed[&MissReason::Busy], 5);
    assert_eq!(t.skipped[&SkipReason::Coalesced], 1);
    assert_eq!(t.skipped[&SkipReason::Claimed], 1);
    assert_eq!(t.durations.count(), 6);
    assert_eq!(t.durations.buckets[0], 2, "0 s and 50 ms");
    assert_eq!(t.durations.buckets[2], 1, "1 s");
    assert_eq!(t.durations.buckets[5], 1, "30 s");
    assert_eq!(t.durations.buckets[9], 1, "2 h");
    assert_eq!(t.durations.buckets[10], 1, "beyond 3 h");
    assert_eq!(
        t.last_failure,
        Some(at(900_000) + SignedDuration::from_millis(50))
    );
    assert_eq!(t.last_success, Some(at(1_000_005)));
    log.note("tallies", &l.tallies().unwrap());
    let idle = of(l, "idle");
    assert_eq!(
        idle,
        JobTallies {
            job: "idle".into(),
            ..JobTallies::default()
        }
    );
}

fn tallies_survive_pruning(l: &mut Store, log: &mut Log) {
    // Seven runs an hour apart, keeping 2: 0.05 s, 0.3 s, 3 s, 3 s, 2 min,
    // 5 h, and a failure of 10 s.
    let lengths_ms: [u64; 6] = [50, 300, 3_000, 3_000, 120_000, 18_000_000];
    for (i, ms) in lengths_ms.iter().enumerate() {
        let run = scheduled("j", &format!("{i:016x}"), 3600 * i as i64);
        l.begin_run(&run).unwrap();
        let mut end = finished(&run, 0, true);
        end.finished = run.started + SignedDuration::from_millis(*ms as i64);
        l.finish_run(&end, 2).unwrap();
    }
    let run = scheduled("j", "00000000000000ff", 3600 * 6);
    l.begin_run(&run).unwrap();
    l.finish_run(&finished(&run, 10, false), 2).unwrap();
    // Finishing it again counts nothing.
    l.finish_run(&finished(&run, 10, false), 2).unwrap();

    assert_eq!(l.history("j", 100).unwrap().len(), 2);
    let t = of(l, "j");
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
    log.note("tallies", &t);
}

fn a_miss_of_a_five_occurrence_range_counts_five(l: &mut Store, log: &mut Log) {
    let busy = range("j", MissReason::Busy, 0, 240);
    assert_eq!(busy.count, 5);
    assert_eq!(l.miss(&busy, at(300)).unwrap(), Missed::Recorded);
    // Another process recording the same range counts nothing.
    assert_eq!(l.miss(&busy, at(300)).unwrap(), Missed::Moved);
    assert_eq!(of(l, "j").missed.get(&MissReason::Busy), Some(&5));

    // A streak that extends its range counts its occurrences too.
    let paused = |first: i64, last: i64| Miss {
        streak: true,
        ..range("j", MissReason::Paused, first, last)
    };
    assert_eq!(
        l.miss(&paused(300, 420), at(420)).unwrap(),
        Missed::Recorded
    );
    assert_eq!(
        l.miss(&paused(480, 540), at(540)).unwrap(),
        Missed::Extended
    );
    let t = of(l, "j");
    assert_eq!(t.missed.get(&MissReason::Busy), Some(&5));
    assert_eq!(t.missed.get(&MissReason::Paused), Some(&5));
    assert!(t.runs.is_empty() && t.skipped.is_empty());
    log.note("tallies", &t);
}

fn coalesced_and_claimed_occurrences_count_as_skipped(l: &mut Store, log: &mut Log) {
    assert_eq!(
        l.enqueue("j", &[occ(0)], true, at(0)).unwrap(),
        Queued::Queued
    );
    assert_eq!(
        l.enqueue("j", &[occ(60), occ(120)], true, at(120)).unwrap(),
        Queued::Coalesced { into: occ(0) }
    );
    assert!(l.claimed("j", occ(180), "claimed", at(180)).unwrap());
    assert!(!l.claimed("j", occ(180), "claimed", at(180)).unwrap());
    let t = of(l, "j");
    assert_eq!(t.skipped.get(&SkipReason::Coalesced), Some(&2));
    assert_eq!(t.skipped.get(&SkipReason::Claimed), Some(&1));
    assert!(t.missed.is_empty());
    log.note("tallies", &t);
}

fn a_lost_lease_counts_as_a_verdict_and_a_lease_loss(l: &mut Store, log: &mut Log) {
    let run = scheduled("j", "0000000000000001", 0);
    l.begin_run(&run).unwrap();
    let lost = Finished {
        verdict: RunVerdict::LeaseLost,
        ..finished(&run, 30, false)
    };
    l.finish_run(&lost, 100).unwrap();
    let t = of(l, "j");
    assert_eq!(t.runs.get(&RunVerdict::LeaseLost), Some(&1));
    assert_eq!(t.lease_losses, 1);
    log.note("tallies", &t);
}

fn a_job_seen_and_never_run_has_empty_tallies(l: &mut Store, log: &mut Log) {
    l.see_jobs(&["quiet"], at(0)).unwrap();
    let all = l.tallies().unwrap();
    log.note("tallies", &all);
    assert_eq!(
        all,
        [JobTallies {
            job: "quiet".into(),
            ..JobTallies::default()
        }]
    );
}
