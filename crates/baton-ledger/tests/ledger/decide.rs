//! An occurrence is decided once: by one call, one thread, one process.

use baton_store::ledger::Records;
use std::sync::{Arc, Barrier};

use baton_store::ledger::{Begun, Decision, Miss, Missed, NewRun, Queued};
use baton_store::words::MissReason;

use crate::support::{Scene, at, range, scheduled};

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
    // Nor can it be missed, queued or claimed now.
    let occ = at(60).as_second();
    assert_eq!(
        ledger
            .miss(&range("j", MissReason::Busy, 60, 60), at(62))
            .unwrap(),
        Missed::Moved
    );
    assert_eq!(
        ledger.enqueue("j", &[occ], false, at(62)).unwrap(),
        Queued::Moved
    );
    assert!(!ledger.claimed("j", occ, "claimed", at(62)).unwrap());
    assert!(ledger.missed("j", 10).unwrap().is_empty());
    assert_eq!(
        ledger.decision("j", occ).unwrap().unwrap().decision,
        Decision::Started
    );
}

#[test]
fn a_missed_occurrence_is_decided_once() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let first = baton_store::ledger::Miss {
        detail: Some("first"),
        ..range("j", MissReason::Busy, 120, 120)
    };
    assert_eq!(ledger.miss(&first, at(120)).unwrap(), Missed::Recorded);
    let second = baton_store::ledger::Miss {
        detail: Some("second"),
        ..range("j", MissReason::Hung, 120, 120)
    };
    assert_eq!(ledger.miss(&second, at(121)).unwrap(), Missed::Moved);
    let rows = ledger.missed("j", 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].reason.as_str(), rows[0].detail.as_deref()),
        ("busy", Some("first"))
    );
    // The mark covers it: it cannot be queued behind the decision.
    let occ = at(120).as_second();
    assert_eq!(ledger.job("j").unwrap().unwrap().last_decided, Some(occ));
    assert_eq!(
        ledger.enqueue("j", &[occ], false, at(122)).unwrap(),
        Queued::Moved
    );
    assert!(ledger.queued("j").unwrap().is_empty());
    // A missed range is no decision of the occurrence itself: a backfill may
    // still start it, once.
    assert_eq!(ledger.decision("j", occ).unwrap(), None);
    let backfill = scheduled("j", "00000000000000b1", 120);
    assert_eq!(ledger.begin_run(&backfill).unwrap(), Begun::Started);
    let again = NewRun {
        run_id: "00000000000000b2".into(),
        ..backfill
    };
    assert!(matches!(
        ledger.begin_run(&again).unwrap(),
        Begun::AlreadyDecided(_)
    ));
}

#[test]
fn a_claim_is_recorded_once_and_keeps_the_occurrence_from_running() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let occ = at(60).as_second();
    assert!(
        ledger
            .claimed("j", occ, "claimed by pid 7", at(70))
            .unwrap()
    );
    assert!(
        !ledger
            .claimed("j", occ, "claimed by pid 8", at(71))
            .unwrap()
    );
    let row = ledger.decision("j", occ).unwrap().unwrap();
    assert_eq!(row.decision, Decision::Claimed);
    assert_eq!(row.detail.as_deref(), Some("claimed by pid 7"));
    assert_eq!((row.run_id, row.decided), (None, at(70)));
    let job = ledger.job("j").unwrap().unwrap();
    assert_eq!((job.last_decided, job.first_seen), (Some(occ), at(70)));
    match ledger
        .begin_run(&scheduled("j", "00000000000000c1", 60))
        .unwrap()
    {
        Begun::AlreadyDecided(d) => assert_eq!(d.decision, Decision::Claimed),
        Begun::Started => panic!("a claimed occurrence started again"),
    }
    assert!(ledger.history("j", 10).unwrap().is_empty());

    // A started occurrence keeps its decision; a queued one leaves the
    // queue as claimed (the lock file says it started: it must not start).
    let started = scheduled("j", "00000000000000c2", 120);
    ledger.begin_run(&started).unwrap();
    assert!(
        !ledger
            .claimed("j", at(120).as_second(), "", at(121))
            .unwrap()
    );
    let queued = at(180).as_second();
    ledger.enqueue("j", &[queued], false, at(122)).unwrap();
    assert!(ledger.claimed("j", queued, "", at(123)).unwrap());
    assert_eq!(
        ledger.decision("j", queued).unwrap().unwrap().decision,
        Decision::Claimed
    );
    assert_eq!(ledger.next_queued(&["j"]).unwrap(), None);

    // The lock file outranks a missed range: what it says started, started.
    ledger
        .miss(&range("j", MissReason::Busy, 240, 300), at(301))
        .unwrap();
    assert!(
        ledger
            .claimed("j", at(240).as_second(), "", at(302))
            .unwrap()
    );
    let row = ledger.decision("j", at(240).as_second()).unwrap().unwrap();
    assert_eq!((row.decision, row.detail), (Decision::Claimed, None));
    // A claim behind the mark leaves the mark where it is.
    assert_eq!(
        ledger.job("j").unwrap().unwrap().last_decided,
        Some(at(300).as_second())
    );
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
                    // Even trials race begin_run, odd trials race miss.
                    barrier.wait();
                    let occ = 60 * trial;
                    let mine = if trial % 2 == 0 {
                        let run = scheduled("race", &format!("{who:08x}{trial:08x}"), occ);
                        ledger.begin_run(&run).unwrap() == Begun::Started
                    } else {
                        let tag = format!("thread {who}");
                        let m = Miss {
                            detail: Some(&tag),
                            ..range("race", MissReason::Busy, occ, occ)
                        };
                        let outcome = ledger.miss(&m, at(occ)).unwrap();
                        assert_ne!(outcome, Missed::Extended, "no streak was asked for");
                        outcome == Missed::Recorded
                    };
                    won.push(mine);
                }
                won
            })
        })
        .collect();
    let results: Vec<Vec<bool>> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let mut ledger = scene.open();
    let missed = ledger.missed("race", 1_000).unwrap();
    for trial in 0..TRIALS as usize {
        let winners = results.iter().filter(|won| won[trial]).count();
        assert_eq!(winners, 1, "trial {trial}: {winners} winners");
        let winner = results.iter().position(|won| won[trial]).unwrap();
        let occ = at(60 * trial as i64).as_second();
        if trial % 2 == 0 {
            let row = ledger.decision("race", occ).unwrap().unwrap();
            assert_eq!(row.decision, Decision::Started);
            assert_eq!(row.run_id.unwrap(), format!("{winner:08x}{trial:08x}"));
        } else {
            assert_eq!(ledger.decision("race", occ).unwrap(), None);
            let rows: Vec<_> = missed.iter().filter(|m| m.first == occ).collect();
            assert_eq!(rows.len(), 1, "trial {trial}");
            let tag = format!("thread {winner}");
            assert_eq!(rows[0].detail.as_deref(), Some(tag.as_str()));
        }
    }
    assert_eq!(missed.len(), TRIALS as usize / 2);
    assert_eq!(
        ledger.history("race", 100).unwrap().len(),
        TRIALS as usize / 2
    );
}
