//! An occurrence is decided once, and a job's `last_decided` never goes
//! back.

use baton_store::ledger::{Begun, Decision, Miss, Missed, NewRun, Queued};
use baton_store::words::MissReason;

use crate::support::{Log, Store, at, occ, range, scheduled};

both! {
    a_started_occurrence_is_not_started_again
    a_missed_occurrence_is_decided_once
    a_claim_is_recorded_once_and_keeps_the_occurrence_from_running
    the_last_decided_mark_never_goes_back
}

fn a_started_occurrence_is_not_started_again(l: &mut Store, log: &mut Log) {
    let first = scheduled("j", "00000000000000a1", 60);
    assert_eq!(l.begin_run(&first).unwrap(), Begun::Started);
    let second = NewRun {
        run_id: "00000000000000a2".into(),
        started: at(61),
        ..first.clone()
    };
    let begun = l.begin_run(&second).unwrap();
    let Begun::AlreadyDecided(existing) = &begun else {
        panic!("the occurrence was started twice");
    };
    assert_eq!(existing.decision, Decision::Started);
    assert_eq!(existing.run_id.as_deref(), Some("00000000000000a1"));
    log.note("second begin", &begun);
    let history = l.history("j", 10).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(history[0].run_id, "00000000000000a1");
    assert_eq!(
        l.job("j").unwrap().unwrap().last_run_id.as_deref(),
        Some("00000000000000a1")
    );
    assert_eq!(
        l.miss(&range("j", MissReason::Busy, 60, 60), at(62))
            .unwrap(),
        Missed::Moved
    );
    assert_eq!(
        l.enqueue("j", &[occ(60)], false, at(62)).unwrap(),
        Queued::Moved
    );
    assert!(!l.claimed("j", occ(60), "claimed", at(62)).unwrap());
    assert!(l.missed("j", 10).unwrap().is_empty());
    let d = l.decision("j", occ(60)).unwrap().unwrap();
    assert_eq!(d.decision, Decision::Started);
    log.note("decision", &d);
}

fn a_missed_occurrence_is_decided_once(l: &mut Store, log: &mut Log) {
    let first = Miss {
        detail: Some("first"),
        ..range("j", MissReason::Busy, 120, 120)
    };
    assert_eq!(l.miss(&first, at(120)).unwrap(), Missed::Recorded);
    let second = Miss {
        detail: Some("second"),
        reason: MissReason::Hung,
        ..first
    };
    assert_eq!(l.miss(&second, at(121)).unwrap(), Missed::Moved);
    let rows = l.missed("j", 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].reason, rows[0].detail.as_deref()),
        (MissReason::Busy, Some("first"))
    );
    log.note("missed", &rows);
    // The mark covers it: it cannot be queued behind the decision.
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(120)));
    assert_eq!(
        l.enqueue("j", &[occ(120)], false, at(122)).unwrap(),
        Queued::Moved
    );
    assert!(l.queued("j").unwrap().is_empty());
    // A missed range is no decision of the occurrence itself, but it is
    // decided: a scheduled start (another process that looked before the
    // miss was recorded) is refused, and writes nothing.
    assert_eq!(l.decision("j", occ(120)).unwrap(), None);
    let late = scheduled("j", "00000000000000c1", 120);
    let Begun::Missed(m) = l.begin_run(&late).unwrap() else {
        panic!("an occurrence recorded missed started too");
    };
    assert_eq!(
        (m.reason, m.first, m.last),
        (MissReason::Busy, occ(120), occ(120))
    );
    log.note("late start", &m);
    assert!(l.history("j", 10).unwrap().is_empty());
    assert_eq!(l.decision("j", occ(120)).unwrap(), None);
    // The miss holds only its own occurrences.
    assert_eq!(
        l.begin_run(&scheduled("j", "00000000000000c2", 180))
            .unwrap(),
        Begun::Started
    );
    // A backfill may still start it, once.
    let backfill = NewRun {
        backfill: true,
        ..scheduled("j", "00000000000000b1", 120)
    };
    assert_eq!(l.begin_run(&backfill).unwrap(), Begun::Started);
    log.note("decision", &l.decision("j", occ(120)).unwrap());
    let again = NewRun {
        run_id: "00000000000000b2".into(),
        ..backfill
    };
    assert!(matches!(
        l.begin_run(&again).unwrap(),
        Begun::AlreadyDecided(_)
    ));
}

fn a_claim_is_recorded_once_and_keeps_the_occurrence_from_running(l: &mut Store, log: &mut Log) {
    assert!(
        l.claimed("j", occ(60), "claimed by pid 4242", at(60))
            .unwrap()
    );
    assert!(
        !l.claimed("j", occ(60), "claimed by pid 4243", at(61))
            .unwrap()
    );
    let d = l.decision("j", occ(60)).unwrap().unwrap();
    assert_eq!(d.decision, Decision::Claimed);
    assert_eq!(d.detail.as_deref(), Some("claimed by pid 4242"));
    assert_eq!((d.run_id.as_deref(), d.decided), (None, at(60)));
    log.note("decision", &d);
    let job = l.job("j").unwrap().unwrap();
    assert_eq!((job.last_decided, job.first_seen), (Some(occ(60)), at(60)));
    let run = scheduled("j", "00000000000000a1", 60);
    assert!(matches!(
        l.begin_run(&run).unwrap(),
        Begun::AlreadyDecided(_)
    ));
    assert!(l.history("j", 10).unwrap().is_empty());
    // An empty detail is stored as none.
    assert!(l.claimed("j", occ(120), "", at(120)).unwrap());
    let d = l.decision("j", occ(120)).unwrap().unwrap();
    assert_eq!(d.detail, None);
    log.note("decision", &d);
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(120)));
    // A started occurrence keeps its decision.
    l.begin_run(&scheduled("j", "00000000000000a2", 180))
        .unwrap();
    assert!(!l.claimed("j", occ(180), "", at(181)).unwrap());
    // The lock file outranks a missed range: what it says started, started;
    // a claim behind the mark leaves the mark where it is.
    l.miss(&range("j", MissReason::Busy, 240, 300), at(301))
        .unwrap();
    assert!(l.claimed("j", occ(240), "", at(302)).unwrap());
    let d = l.decision("j", occ(240)).unwrap().unwrap();
    assert_eq!((d.decision, d.detail), (Decision::Claimed, None));
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(300)));
}

fn the_last_decided_mark_never_goes_back(l: &mut Store, log: &mut Log) {
    assert_eq!(
        l.miss(&range("j", MissReason::Late, 600, 600), at(600))
            .unwrap(),
        Missed::Recorded
    );
    let mark = Some(occ(600));
    // Nothing at or before the mark is decided again by planning…
    assert_eq!(
        l.miss(&range("j", MissReason::Late, 300, 300), at(601))
            .unwrap(),
        Missed::Moved
    );
    assert_eq!(
        l.miss(&range("j", MissReason::Late, 600, 660), at(601))
            .unwrap(),
        Missed::Moved
    );
    assert_eq!(
        l.enqueue("j", &[occ(300)], false, at(601)).unwrap(),
        Queued::Moved
    );
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, mark);
    // …and what is decided below it (a backfill, a claim) leaves it be.
    l.begin_run(&scheduled("j", "00000000000000a1", 300))
        .unwrap();
    assert!(l.claimed("j", occ(240), "", at(602)).unwrap());
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.last_decided, mark);
    assert_eq!(job.last_started, Some(occ(300)));
    log.note("job", &job);
    // Past the mark, a decision raises it.
    assert_eq!(
        l.enqueue("j", &[occ(660), occ(720)], false, at(603))
            .unwrap(),
        Queued::Queued
    );
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(720)));
    log.note("job", &l.job("j").unwrap());
}
