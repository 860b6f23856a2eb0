//! The queue: occurrences wait in order, later arrivals coalesce into the
//! one waiting, and each queued occurrence starts once.

use baton_store::ledger::Records;
use std::sync::{Arc, Barrier};

use baton_ledger::Ledger;
use baton_store::ledger::{Begun, Decision, Error, NewRun, Queued};

use crate::support::{Scene, at, scheduled};

fn s(secs: i64) -> i64 {
    at(secs).as_second()
}

#[test]
fn queued_occurrences_wait_in_order_and_start_once() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    assert_eq!(
        ledger
            .enqueue("j", &[s(0), s(60), s(120)], false, at(5))
            .unwrap(),
        Queued::Queued
    );
    let job = ledger.job("j").unwrap().unwrap();
    assert_eq!((job.first_seen, job.last_decided), (at(5), Some(s(120))));
    let queued = ledger.queued("j").unwrap();
    let summary: Vec<_> = queued
        .iter()
        .map(|d| (d.occurrence, d.decision, d.decided, d.coalesced, d.joined))
        .collect();
    assert_eq!(
        summary,
        [
            (s(0), Decision::Queued, at(5), 0, None),
            (s(60), Decision::Queued, at(5), 0, None),
            (s(120), Decision::Queued, at(5), 0, None),
        ]
    );
    // Behind the mark: decided already.
    assert_eq!(
        ledger.enqueue("j", &[s(60), s(180)], false, at(6)).unwrap(),
        Queued::Moved
    );
    assert_eq!(ledger.queued("j").unwrap().len(), 3);

    assert_eq!(
        ledger.next_queued(&["j"]).unwrap(),
        Some(("j".into(), s(0)))
    );
    let run = NewRun {
        started: at(200),
        ..scheduled("j", "00000000000000a1", 0)
    };
    assert_eq!(ledger.begin_run(&run).unwrap(), Begun::Started);
    let row = ledger.decision("j", s(0)).unwrap().unwrap();
    assert_eq!(row.decision, Decision::Started);
    assert_eq!(row.run_id.as_deref(), Some("00000000000000a1"));
    assert_eq!(row.decided, at(200));
    let again = NewRun {
        run_id: "00000000000000a2".into(),
        ..run
    };
    match ledger.begin_run(&again).unwrap() {
        Begun::AlreadyDecided(d) => assert_eq!(d.run_id.as_deref(), Some("00000000000000a1")),
        Begun::Started => panic!("a queued occurrence started twice"),
    }
    assert_eq!(
        ledger.next_queued(&["j"]).unwrap(),
        Some(("j".into(), s(60)))
    );
    assert_eq!(ledger.queued("j").unwrap().len(), 2);
    let job = ledger.job("j").unwrap().unwrap();
    assert_eq!(
        (job.last_decided, job.last_started),
        (Some(s(120)), Some(s(0)))
    );
}

#[test]
fn occurrences_out_of_order_are_refused_and_write_nothing() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    for occurrences in [&[][..], &[s(60), s(60)], &[s(120), s(60)]] {
        let err = ledger.enqueue("j", occurrences, false, at(0)).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    }
    assert!(ledger.job("j").unwrap().is_none());
    assert!(ledger.queued("j").unwrap().is_empty());
}

#[test]
fn a_later_arrival_coalesces_into_the_one_waiting() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let running = scheduled("j", "00000000000000b1", 0);
    ledger.begin_run(&running).unwrap();
    // Nothing waits yet: it waits.
    assert_eq!(
        ledger.enqueue("j", &[s(60)], true, at(60)).unwrap(),
        Queued::Queued
    );
    // One waits: the next ones join it.
    assert_eq!(
        ledger.enqueue("j", &[s(120)], true, at(120)).unwrap(),
        Queued::Coalesced { into: s(60) }
    );
    assert_eq!(
        ledger
            .enqueue("j", &[s(180), s(240)], true, at(240))
            .unwrap(),
        Queued::Coalesced { into: s(60) }
    );
    let waiting = ledger.queued("j").unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!((waiting[0].occurrence, waiting[0].coalesced), (s(60), 3));
    let joined = ledger.decision("j", s(180)).unwrap().unwrap();
    assert_eq!(
        (joined.decision, joined.joined, joined.decided),
        (Decision::Coalesced, Some(s(60)), at(240))
    );
    assert_eq!(ledger.job("j").unwrap().unwrap().last_decided, Some(s(240)));

    // Draining starts the waiting one, which keeps its count; those that
    // joined it never run.
    let drained = NewRun {
        started: at(300),
        ..scheduled("j", "00000000000000b2", 60)
    };
    assert_eq!(ledger.begin_run(&drained).unwrap(), Begun::Started);
    let row = ledger.decision("j", s(60)).unwrap().unwrap();
    assert_eq!((row.decision, row.coalesced), (Decision::Started, 3));
    match ledger
        .begin_run(&scheduled("j", "00000000000000b3", 120))
        .unwrap()
    {
        Begun::AlreadyDecided(d) => assert_eq!(d.decision, Decision::Coalesced),
        Begun::Started => panic!("a coalesced occurrence ran"),
    }
    assert_eq!(ledger.next_queued(&["j"]).unwrap(), None);
    // Nothing waits any more: the next arrival waits itself.
    assert_eq!(
        ledger.enqueue("j", &[s(300)], true, at(300)).unwrap(),
        Queued::Queued
    );
    assert_eq!(ledger.history("j", 10).unwrap().len(), 2);
}

/// A catch-up batch waits as a whole; with `coalesce`, the newest waiting
/// occurrence is the one joined.
#[test]
fn coalescing_joins_the_newest_waiting_occurrence() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger
        .enqueue("j", &[s(0), s(60), s(120)], false, at(120))
        .unwrap();
    assert_eq!(
        ledger.enqueue("j", &[s(180)], true, at(180)).unwrap(),
        Queued::Coalesced { into: s(120) }
    );
    let counts: Vec<_> = ledger
        .queued("j")
        .unwrap()
        .iter()
        .map(|d| d.coalesced)
        .collect();
    assert_eq!(counts, [0, 0, 1]);
}

#[test]
fn the_next_queued_is_the_oldest_across_jobs_ties_by_name() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.enqueue("b", &[s(60)], false, at(0)).unwrap();
    ledger.enqueue("a", &[s(60), s(180)], false, at(0)).unwrap();
    ledger.enqueue("c", &[s(120)], false, at(0)).unwrap();
    assert_eq!(
        ledger.next_queued(&["c", "b", "a"]).unwrap(),
        Some(("a".into(), s(60)))
    );
    assert_eq!(
        ledger.next_queued(&["c", "b"]).unwrap(),
        Some(("b".into(), s(60)))
    );
    assert_eq!(
        ledger.next_queued(&["c", "nobody"]).unwrap(),
        Some(("c".into(), s(120)))
    );
    assert_eq!(ledger.next_queued(&["nobody"]).unwrap(), None);
    assert_eq!(ledger.next_queued(&[]).unwrap(), None);
    ledger
        .begin_run(&scheduled("a", "00000000000000c1", 60))
        .unwrap();
    assert_eq!(
        ledger.next_queued(&["a", "b", "c"]).unwrap(),
        Some(("b".into(), s(60)))
    );
}

/// Threads, each with its own connection, drain one queue at once: each
/// queued occurrence is started by exactly one of them.
#[test]
fn racing_threads_start_each_queued_occurrence_once() {
    const THREADS: usize = 4;
    const OCCURRENCES: i64 = 40;
    let scene = Scene::new();
    let occurrences: Vec<i64> = (0..OCCURRENCES).map(|i| s(60 * i)).collect();
    assert_eq!(
        scene
            .open()
            .enqueue("q", &occurrences, false, at(0))
            .unwrap(),
        Queued::Queued
    );
    let barrier = Arc::new(Barrier::new(THREADS));
    let racers: Vec<_> = (0..THREADS)
        .map(|who| {
            let dir = scene.dir().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut ledger = Ledger::open(&dir, at(0)).unwrap();
                let mut won = Vec::new();
                for i in 0..OCCURRENCES {
                    barrier.wait();
                    let run = scheduled("q", &format!("{who:08x}{i:08x}"), 60 * i);
                    won.push(ledger.begin_run(&run).unwrap() == Begun::Started);
                }
                won
            })
        })
        .collect();
    let results: Vec<Vec<bool>> = racers.into_iter().map(|t| t.join().unwrap()).collect();
    let mut ledger = scene.open();
    for i in 0..OCCURRENCES as usize {
        let winners: Vec<usize> = (0..THREADS).filter(|&w| results[w][i]).collect();
        assert_eq!(winners.len(), 1, "occurrence {i}: winners {winners:?}");
        let row = ledger.decision("q", occurrences[i]).unwrap().unwrap();
        assert_eq!(row.decision, Decision::Started);
        assert_eq!(row.run_id.unwrap(), format!("{:08x}{i:08x}", winners[0]));
    }
    assert!(ledger.queued("q").unwrap().is_empty());
    assert_eq!(
        ledger.history("q", 1_000).unwrap().len(),
        OCCURRENCES as usize
    );
}

#[test]
fn a_queued_occurrence_the_lock_file_says_started_leaves_the_queue_as_claimed() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.enqueue("j", &[s(0), s(60)], false, at(5)).unwrap();
    assert!(
        ledger
            .claimed("j", s(0), "claimed in the lock", at(6))
            .unwrap()
    );
    assert_eq!(
        ledger.decision("j", s(0)).unwrap().unwrap().decision,
        Decision::Claimed
    );
    assert_eq!(
        ledger.next_queued(&["j"]).unwrap(),
        Some(("j".into(), s(60)))
    );
    assert_eq!(ledger.queued_jobs().unwrap(), vec!["j".to_owned()]);
    // A started occurrence is not turned into a claim.
    assert!(!ledger.claimed("j", s(0), "again", at(7)).unwrap());
    ledger.claimed("j", s(60), "claimed", at(8)).unwrap();
    assert!(ledger.queued_jobs().unwrap().is_empty());
}
