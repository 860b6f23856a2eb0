//! An occurrence is decided once: by one call, one thread, one process.

use std::sync::{Arc, Barrier};

use baton_ledger::{Begun, Decision, NewRun};

use crate::support::{Scene, at, scheduled};

#[test]
fn a_started_occurrence_is_not_started_again() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let first = scheduled("j", "00000000000000a1", 60);
    assert_eq!(ledger.begin_run(&first).unwrap(), Begun::Started);
    let second = NewRun {
        run_id: "00000000000000a2".into(),
        started: at(61),
        ..first.clone()
    };
    let Begun::AlreadyDecided(existing) = ledger.begin_run(&second).unwrap() else {
        panic!("the occurrence was started twice");
    };
    assert_eq!(existing.decision, Decision::Started);
    assert_eq!(existing.run_id.as_deref(), Some("00000000000000a1"));
    // Nothing of the second run was written.
    let history = ledger.history("j", 10).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].run_id, "00000000000000a1");
    assert_eq!(
        ledger.job("j").unwrap().unwrap().last_run_id.as_deref(),
        Some("00000000000000a1")
    );
    // Nor can it be skipped now.
    let occ = at(60).as_second();
    assert!(
        !ledger
            .decide("j", occ, Decision::Skipped, "busy", "", at(62))
            .unwrap()
    );
    assert_eq!(
        ledger.decision("j", occ).unwrap().unwrap().decision,
        Decision::Started
    );
}

#[test]
fn a_skipped_occurrence_is_decided_once_and_never_started() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let occ = at(120).as_second();
    assert!(
        ledger
            .decide("j", occ, Decision::Skipped, "busy", "first", at(120))
            .unwrap()
    );
    assert!(
        !ledger
            .decide("j", occ, Decision::Skipped, "hung", "second", at(121))
            .unwrap()
    );
    let row = ledger.decision("j", occ).unwrap().unwrap();
    assert_eq!(
        (row.reason.as_deref(), row.detail.as_deref()),
        (Some("busy"), Some("first"))
    );
    let run = scheduled("j", "00000000000000b1", 120);
    match ledger.begin_run(&run).unwrap() {
        Begun::AlreadyDecided(d) => assert_eq!(d.decision, Decision::Skipped),
        Begun::Started => panic!("a skipped occurrence started"),
    }
    assert!(ledger.running("j").unwrap().is_none());
}

/// Two threads, each with its own connection, race on one occurrence per
/// trial; exactly one wins every time.
#[test]
fn racing_threads_decide_each_occurrence_once() {
    const TRIALS: i64 = 50;
    let scene = Scene::new();
    scene.open();
    let barrier = Arc::new(Barrier::new(2));
    let racers: Vec<_> = (0..2)
        .map(|who| {
            let dir = scene.dir().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut ledger = baton_ledger::Ledger::open(&dir, at(0)).unwrap();
                let mut won = Vec::new();
                for trial in 0..TRIALS {
                    // Even trials race begin_run, odd trials race decide.
                    barrier.wait();
                    let occ = 60 * trial;
                    let mine = if trial % 2 == 0 {
                        let run = scheduled("race", &format!("{who:08x}{trial:08x}"), occ);
                        ledger.begin_run(&run).unwrap() == Begun::Started
                    } else {
                        let reason = format!("thread {who}");
                        ledger
                            .decide(
                                "race",
                                at(occ).as_second(),
                                Decision::Skipped,
                                &reason,
                                "",
                                at(occ),
                            )
                            .unwrap()
                    };
                    won.push(mine);
                }
                won
            })
        })
        .collect();
    let results: Vec<Vec<bool>> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let mut ledger = scene.open();
    for trial in 0..TRIALS as usize {
        let winners = results.iter().filter(|won| won[trial]).count();
        assert_eq!(winners, 1, "trial {trial}: {winners} winners");
        let winner = results.iter().position(|won| won[trial]).unwrap();
        let row = ledger
            .decision("race", at(60 * trial as i64).as_second())
            .unwrap()
            .unwrap();
        if trial % 2 == 0 {
            assert_eq!(row.decision, Decision::Started);
            assert_eq!(row.run_id.unwrap(), format!("{winner:08x}{trial:08x}"));
        } else {
            assert_eq!(row.decision, Decision::Skipped);
            assert_eq!(row.reason.unwrap(), format!("thread {winner}"));
        }
    }
    assert_eq!(
        ledger.history("race", 100).unwrap().len(),
        TRIALS as usize / 2
    );
}
