//! Pruning, when a run finishes: old history goes, what is still to do or in
//! force stays.

use baton_store::ledger::Records;
use baton_store::ledger::{Begun, Decision, NewRun, Queued};
use baton_store::words::{AttemptOutcome, MissReason};

use crate::support::{Scene, at, attempt, finished, range, scheduled};

#[test]
fn pruning_keeps_the_newest_runs_their_attempts_and_the_newest_decision() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    // Six runs an hour apart, each with two attempts, and a claimed
    // occurrence between each pair of runs.
    for i in 0..6 {
        let run = scheduled("j", &format!("{i:016x}"), 3600 * i);
        ledger.begin_run(&run).unwrap();
        ledger
            .record_attempt(&attempt(&run, 1, "a", AttemptOutcome::Ok, run.started))
            .unwrap();
        ledger
            .record_attempt(&attempt(&run, 2, "b", AttemptOutcome::Ok, run.started))
            .unwrap();
        ledger.finish_run(&finished(&run, 60, true), 3).unwrap();
        let claim = 3600 * i + 1800;
        assert!(
            ledger
                .claimed("j", at(claim).as_second(), "", at(claim))
                .unwrap()
        );
    }
    // Another job's history is its own.
    let other = scheduled("other", "00000000000000ff", 0);
    ledger.begin_run(&other).unwrap();
    ledger.finish_run(&finished(&other, 1, true), 1).unwrap();

    let kept: Vec<_> = ledger
        .history("j", 100)
        .unwrap()
        .into_iter()
        .map(|r| (r.run_id, r.attempts.len()))
        .collect();
    assert_eq!(
        kept,
        [
            ("0000000000000005".to_string(), 2),
            ("0000000000000004".to_string(), 2),
            ("0000000000000003".to_string(), 2),
        ]
    );
    // The pruned runs' attempts went with them (the cascade).
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    let attempts: i64 = raw
        .query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(attempts, 6);
    drop(raw);

    // Decisions: those made before the oldest kept run (3) started are gone;
    // the kept runs' own and the claims after them stay. The last pruning
    // ran when run 5 finished, before the claim at 5 h 30 was recorded.
    let mut occs: Vec<i64> = Vec::new();
    for occ in (0..12).map(|half| 1800 * half) {
        if ledger.decision("j", at(occ).as_second()).unwrap().is_some() {
            occs.push(occ / 1800);
        }
    }
    assert_eq!(occs, [6, 7, 8, 9, 10, 11]);
    assert_eq!(ledger.history("other", 10).unwrap().len(), 1);
}

#[test]
fn pruning_never_removes_the_newest_decision() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    // The newest decision is for an occurrence before the run that prunes.
    let occ = at(0).as_second();
    assert!(ledger.claimed("j", occ, "", at(0)).unwrap());
    let manual = NewRun {
        occurrence: None,
        ..scheduled("j", "00000000000000c1", 600)
    };
    ledger.begin_run(&manual).unwrap();
    ledger.finish_run(&finished(&manual, 5, true), 1).unwrap();
    assert!(ledger.decision("j", occ).unwrap().is_some());
    // A history of 0 keeps the last run.
    ledger.finish_run(&finished(&manual, 5, true), 0).unwrap();
    assert_eq!(ledger.history("j", 10).unwrap().len(), 1);
}

/// Queued occurrences are work still to do: however long they have waited,
/// pruning leaves them, while older decisions around them go.
#[test]
fn pruning_keeps_queued_occurrences() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    assert!(ledger.claimed("j", at(0).as_second(), "", at(0)).unwrap());
    let waiting = [at(60).as_second(), at(120).as_second()];
    assert_eq!(
        ledger.enqueue("j", &waiting, false, at(1)).unwrap(),
        Queued::Queued
    );
    for (i, started) in [1_000, 2_000, 3_000].into_iter().enumerate() {
        let manual = NewRun {
            occurrence: None,
            started: at(started),
            ..scheduled("j", &format!("{i:016x}"), 0)
        };
        assert_eq!(ledger.begin_run(&manual).unwrap(), Begun::Started);
        ledger.finish_run(&finished(&manual, 5, true), 1).unwrap();
    }
    assert_eq!(ledger.history("j", 10).unwrap().len(), 1);
    assert_eq!(ledger.decision("j", at(0).as_second()).unwrap(), None);
    let queued: Vec<_> = ledger
        .queued("j")
        .unwrap()
        .into_iter()
        .map(|d| (d.occurrence, d.decision))
        .collect();
    assert_eq!(
        queued,
        [
            (waiting[0], Decision::Queued),
            (waiting[1], Decision::Queued)
        ]
    );
}

#[test]
fn pruning_keeps_the_newest_missed_ranges_pauses_and_watermarks() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    // 1,003 missed ranges, a minute each.
    for i in 0..1_003 {
        ledger
            .miss(&range("j", MissReason::Late, 60 * i, 60 * i), at(60 * i))
            .unwrap();
    }
    // A pause that begins later than the ones after it (its writer's clock
    // was ahead): in force when pruning runs, though the oldest.
    let ahead = ledger
        .pause("j", None, Some("ahead"), "alice", at(100_000))
        .unwrap();
    // 110 short pauses, each over five seconds after it began.
    for i in 0..110 {
        ledger
            .pause("j", Some(at(10 * i + 5)), None, "bob", at(10 * i))
            .unwrap();
    }
    // 103 watermarks.
    for i in 0..103 {
        ledger
            .settle("j", &format!("v{i}"), None, None, at(i))
            .unwrap();
    }
    // Another job's records are its own.
    ledger
        .miss(&range("k", MissReason::Late, 0, 0), at(0))
        .unwrap();
    ledger.settle("k", "v", None, None, at(0)).unwrap();

    let run = scheduled("j", "00000000000000d1", 200_000);
    ledger.begin_run(&run).unwrap();
    ledger.finish_run(&finished(&run, 5, true), 10).unwrap();

    let missed = ledger.missed("j", 2_000).unwrap();
    assert_eq!(missed.len(), 1_000);
    assert_eq!(missed[999].first, at(3 * 60).as_second());
    assert_eq!(missed[0].first, at(1_002 * 60).as_second());

    let pauses = ledger.pauses("j", 2_000).unwrap();
    assert_eq!(pauses.len(), 101);
    assert_eq!(pauses[100], ahead, "the pause in force stays");
    assert!(pauses[100].active(at(200_005)));
    assert_eq!(
        pauses[99].since,
        at(10 * 10),
        "the 10 oldest that are over went"
    );

    let seqs: Vec<u64> = ledger
        .watermarks("j", 1_000)
        .unwrap()
        .iter()
        .map(|w| w.seq)
        .collect();
    assert_eq!(seqs, (4..=103).rev().collect::<Vec<_>>());
    assert_eq!(ledger.watermark("j").unwrap().unwrap().value, "v102");

    assert_eq!(ledger.missed("k", 10).unwrap().len(), 1);
    assert_eq!(ledger.watermarks("k", 10).unwrap().len(), 1);
}
