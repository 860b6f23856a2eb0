//! The queue: occurrences wait in order, start once, coalesce into the one
//! waiting, and leave as claimed when the lock file says they started.

use baton_store::ledger::{Begun, Decision, Queued};
use baton_store::words::SkipReason;

use crate::support::{Log, Store, at, occ, refused, scheduled};

both! {
    queued_occurrences_wait_in_order_and_start_once
    a_later_arrival_coalesces_into_the_one_waiting
    the_next_queued_is_the_oldest_across_jobs_ties_by_name
    occurrences_out_of_order_are_refused_and_write_nothing
    a_queued_occurrence_claimed_leaves_the_queue
}

fn queued_occurrences_wait_in_order_and_start_once(l: &mut Store, log: &mut Log) {
    assert_eq!(
        l.enqueue("j", &[occ(60), occ(120)], false, at(120))
            .unwrap(),
        Queued::Queued
    );
    assert_eq!(
        l.enqueue("j", &[occ(120)], false, at(121)).unwrap(),
        Queued::Moved
    );
    let queued = l.queued("j").unwrap();
    assert_eq!(queued.len(), 2);
    assert!(queued.iter().all(|d| d.decision == Decision::Queued));
    log.note("queued", &queued);
    assert_eq!(l.queued_jobs().unwrap(), ["j"]);
    assert_eq!(l.next_queued(&["j"]).unwrap(), Some(("j".into(), occ(60))));
    let run = scheduled("j", "00000000000000a1", 60);
    assert_eq!(l.begin_run(&run).unwrap(), Begun::Started);
    let again = scheduled("j", "00000000000000a2", 60);
    assert!(matches!(
        l.begin_run(&again).unwrap(),
        Begun::AlreadyDecided(_)
    ));
    assert_eq!(l.next_queued(&["j"]).unwrap(), Some(("j".into(), occ(120))));
    let started = l.decision("j", occ(60)).unwrap().unwrap();
    assert_eq!(started.decision, Decision::Started);
    assert_eq!(started.decided, at(60));
    log.note("started", &started);
    l.begin_run(&scheduled("j", "00000000000000a3", 120))
        .unwrap();
    assert_eq!(l.next_queued(&["j"]).unwrap(), None);
    assert!(l.queued_jobs().unwrap().is_empty());
}

fn a_later_arrival_coalesces_into_the_one_waiting(l: &mut Store, log: &mut Log) {
    assert_eq!(
        l.enqueue("j", &[occ(60)], true, at(60)).unwrap(),
        Queued::Queued
    );
    assert_eq!(
        l.enqueue("j", &[occ(120), occ(180)], true, at(180))
            .unwrap(),
        Queued::Coalesced { into: occ(60) }
    );
    let joined = l.decision("j", occ(180)).unwrap().unwrap();
    assert_eq!(joined.decision, Decision::Coalesced);
    assert_eq!(joined.joined, Some(occ(60)));
    log.note("joined", &joined);
    assert_eq!(l.queued("j").unwrap()[0].coalesced, 2);
    // Without coalescing, a later occurrence waits behind it.
    assert_eq!(
        l.enqueue("j", &[occ(240)], false, at(240)).unwrap(),
        Queued::Queued
    );
    // Coalescing joins the newest waiting occurrence.
    assert_eq!(
        l.enqueue("j", &[occ(300)], true, at(300)).unwrap(),
        Queued::Coalesced { into: occ(240) }
    );
    let run = scheduled("j", "00000000000000a1", 60);
    l.begin_run(&run).unwrap();
    let started = l.decision("j", occ(60)).unwrap().unwrap();
    assert_eq!(started.coalesced, 2, "the count stays on the started row");
    log.note("started", &started);
    log.note("queued", &l.queued("j").unwrap());
    let t = l.tallies().unwrap();
    assert_eq!(t[0].skipped[&SkipReason::Coalesced], 3);
}

fn the_next_queued_is_the_oldest_across_jobs_ties_by_name(l: &mut Store, log: &mut Log) {
    l.enqueue("b", &[occ(60)], false, at(60)).unwrap();
    l.enqueue("a", &[occ(60)], false, at(60)).unwrap();
    l.enqueue("c", &[occ(0)], false, at(60)).unwrap();
    l.enqueue("Z", &[occ(60)], false, at(60)).unwrap();
    assert_eq!(
        l.next_queued(&["a", "b"]).unwrap(),
        Some(("a".into(), occ(60)))
    );
    assert_eq!(
        l.next_queued(&["a", "b", "c"]).unwrap(),
        Some(("c".into(), occ(0)))
    );
    // Names compare byte by byte: upper case sorts first.
    assert_eq!(
        l.next_queued(&["a", "Z"]).unwrap(),
        Some(("Z".into(), occ(60)))
    );
    assert_eq!(l.next_queued(&["nobody"]).unwrap(), None);
    let jobs = l.queued_jobs().unwrap();
    assert_eq!(jobs, ["Z", "a", "b", "c"]);
    log.note("jobs", &jobs);
    log.note("all", &l.jobs().unwrap());
}

fn occurrences_out_of_order_are_refused_and_write_nothing(l: &mut Store, log: &mut Log) {
    for occurrences in [vec![], vec![occ(120), occ(60)], vec![occ(60), occ(60)]] {
        let problem = refused(l.enqueue("j", &occurrences, false, at(0)).unwrap_err());
        log.note("refused", &problem);
    }
    assert!(l.job("j").unwrap().is_none());
    assert!(l.queued("j").unwrap().is_empty());
}

fn a_queued_occurrence_claimed_leaves_the_queue(l: &mut Store, log: &mut Log) {
    l.enqueue("j", &[occ(60)], false, at(60)).unwrap();
    assert!(l.claimed("j", occ(60), "claimed by pid 7", at(61)).unwrap());
    let d = l.decision("j", occ(60)).unwrap().unwrap();
    assert_eq!(d.decision, Decision::Claimed);
    assert_eq!(d.decided, at(61));
    log.note("claimed", &d);
    assert!(l.queued("j").unwrap().is_empty());
    assert!(matches!(
        l.begin_run(&scheduled("j", "00000000000000a1", 60))
            .unwrap(),
        Begun::AlreadyDecided(_)
    ));
    assert_eq!(l.tallies().unwrap()[0].skipped[&SkipReason::Claimed], 1);
}
