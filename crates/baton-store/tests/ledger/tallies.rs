//! Tallies: cumulative counts that pruning never touches.

use baton_store::ledger::{Finished, JobTallies, Miss};
use baton_store::words::{MissReason, RunVerdict, SkipReason};
use jiff::SignedDuration;

use crate::support::{Log, Store, at, finished, occ, range, scheduled};

both! {
    tallies_count_verdicts_misses_skips_and_durations_and_survive_pruning
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
