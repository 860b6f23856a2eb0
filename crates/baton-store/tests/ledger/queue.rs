//! The queue: occurrences wait in order, start once, coalesce into the one
//! waiting, and leave as claimed when the lock file says they started.

use baton_store::ledger::{Begun, Decision, NewRun, Queued, Requested};
use baton_store::words::SkipReason;

use crate::support::{Log, Store, at, occ, refused, scheduled};

both! {
    queued_occurrences_wait_in_order_and_start_once
    a_later_arrival_coalesces_into_the_one_waiting
    the_next_queued_is_the_oldest_across_jobs_ties_by_name
    occurrences_out_of_order_are_refused_and_write_nothing
    a_queued_occurrence_claimed_leaves_the_queue
    a_coalesced_occurrence_never_runs_and_the_next_arrival_waits
    a_backfill_queues_what_is_undecided_behind_the_mark_and_nothing_twice
    a_run_asked_for_now_is_queued_once_and_marked_as_asked
    a_due_occurrence_never_coalesces_into_one_asked_for
}

fn queued_occurrences_wait_in_order_and_start_once(l: &mut Store, log: &mut Log) {
    assert_eq!(
        l.enqueue("j", &[occ(0), occ(60), occ(120)], false, at(5))
            .unwrap(),
        Queued::Queued
    );
    let job = l.job("j").unwrap().unwrap();
    assert_eq!((job.first_seen, job.last_decided), (at(5), Some(occ(120))));
    let queued = l.queued("j").unwrap();
    let summary: Vec<_> = queued
        .iter()
        .map(|d| (d.occurrence, d.decision, d.decided, d.coalesced, d.joined))
        .collect();
    assert_eq!(
        summary,
        [
            (occ(0), Decision::Queued, at(5), 0, None),
            (occ(60), Decision::Queued, at(5), 0, None),
            (occ(120), Decision::Queued, at(5), 0, None),
        ]
    );
    // Behind the mark: decided already.
    assert_eq!(
        l.enqueue("j", &[occ(60), occ(180)], false, at(6)).unwrap(),
        Queued::Moved
    );
    assert_eq!(l.queued("j").unwrap().len(), 3);
    log.note("queued", &queued);
    assert_eq!(l.queued_jobs().unwrap(), ["j"]);

    assert_eq!(l.next_queued(&["j"]).unwrap(), Some(("j".into(), occ(0))));
    let run = NewRun {
        started: at(200),
        ..scheduled("j", "00000000000000a1", 0)
    };
    assert_eq!(l.begin_run(&run).unwrap(), Begun::Started);
    let row = l.decision("j", occ(0)).unwrap().unwrap();
    assert_eq!(row.decision, Decision::Started);
    assert_eq!(row.run_id.as_deref(), Some("00000000000000a1"));
    assert_eq!(row.decided, at(200));
    log.note("started", &row);
    let again = NewRun {
        run_id: "00000000000000a2".into(),
        ..run
    };
    match l.begin_run(&again).unwrap() {
        Begun::AlreadyDecided(d) => assert_eq!(d.run_id.as_deref(), Some("00000000000000a1")),
        other => panic!("a queued occurrence started twice, or was missed: {other:?}"),
    }
    assert_eq!(l.next_queued(&["j"]).unwrap(), Some(("j".into(), occ(60))));
    assert_eq!(l.queued("j").unwrap().len(), 2);
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(
        (job.last_decided, job.last_started),
        (Some(occ(120)), Some(occ(0)))
    );
    log.note("job", &job);
    for (id, secs) in [("00000000000000a3", 60), ("00000000000000a4", 120)] {
        l.begin_run(&scheduled("j", id, secs)).unwrap();
    }
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
    assert_eq!(l.next_queued(&[]).unwrap(), None);
    // Once a job's oldest starts, its next is what counts.
    l.begin_run(&scheduled("c", "00000000000000c1", 0)).unwrap();
    assert_eq!(
        l.next_queued(&["a", "b", "c"]).unwrap(),
        Some(("a".into(), occ(60)))
    );
    let jobs = l.queued_jobs().unwrap();
    assert_eq!(jobs, ["Z", "a", "b"]);
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
    l.enqueue("j", &[occ(0), occ(60)], false, at(5)).unwrap();
    assert!(
        l.claimed("j", occ(0), "claimed in the lock", at(6))
            .unwrap()
    );
    let d = l.decision("j", occ(0)).unwrap().unwrap();
    assert_eq!((d.decision, d.decided), (Decision::Claimed, at(6)));
    log.note("claimed", &d);
    assert!(matches!(
        l.begin_run(&scheduled("j", "00000000000000a1", 0)).unwrap(),
        Begun::AlreadyDecided(_)
    ));
    assert_eq!(l.next_queued(&["j"]).unwrap(), Some(("j".into(), occ(60))));
    assert_eq!(l.queued_jobs().unwrap(), vec!["j".to_owned()]);
    // A started occurrence is not turned into a claim.
    assert!(!l.claimed("j", occ(0), "again", at(7)).unwrap());
    l.claimed("j", occ(60), "claimed", at(8)).unwrap();
    assert!(l.queued_jobs().unwrap().is_empty());
    assert_eq!(l.tallies().unwrap()[0].skipped[&SkipReason::Claimed], 2);
}

/// While a run goes on, the arrivals after the one waiting join it; once it
/// starts, they never run, and the next arrival waits itself.
fn a_coalesced_occurrence_never_runs_and_the_next_arrival_waits(l: &mut Store, log: &mut Log) {
    let running = scheduled("j", "00000000000000b1", 0);
    l.begin_run(&running).unwrap();
    // Nothing waits yet: it waits.
    assert_eq!(
        l.enqueue("j", &[occ(60)], true, at(60)).unwrap(),
        Queued::Queued
    );
    // One waits: the next ones join it.
    assert_eq!(
        l.enqueue("j", &[occ(120)], true, at(120)).unwrap(),
        Queued::Coalesced { into: occ(60) }
    );
    assert_eq!(
        l.enqueue("j", &[occ(180), occ(240)], true, at(240))
            .unwrap(),
        Queued::Coalesced { into: occ(60) }
    );
    let waiting = l.queued("j").unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!((waiting[0].occurrence, waiting[0].coalesced), (occ(60), 3));
    let joined = l.decision("j", occ(180)).unwrap().unwrap();
    assert_eq!(
        (joined.decision, joined.joined, joined.decided),
        (Decision::Coalesced, Some(occ(60)), at(240))
    );
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(240)));

    // Draining starts the waiting one, which keeps its count; those that
    // joined it never run.
    let drained = NewRun {
        started: at(300),
        ..scheduled("j", "00000000000000b2", 60)
    };
    assert_eq!(l.begin_run(&drained).unwrap(), Begun::Started);
    let row = l.decision("j", occ(60)).unwrap().unwrap();
    assert_eq!((row.decision, row.coalesced), (Decision::Started, 3));
    log.note("started", &row);
    match l
        .begin_run(&scheduled("j", "00000000000000b3", 120))
        .unwrap()
    {
        Begun::AlreadyDecided(d) => assert_eq!(d.decision, Decision::Coalesced),
        other => panic!("a coalesced occurrence ran, or was missed: {other:?}"),
    }
    assert_eq!(l.next_queued(&["j"]).unwrap(), None);
    // Nothing waits any more: the next arrival waits itself.
    assert_eq!(
        l.enqueue("j", &[occ(300)], true, at(300)).unwrap(),
        Queued::Queued
    );
    assert_eq!(l.history("j", 10).unwrap().len(), 2);
}

fn a_backfill_queues_what_is_undecided_behind_the_mark_and_nothing_twice(
    l: &mut Store,
    log: &mut Log,
) {
    // 0 ran, 60 and 120 were missed, and the mark is at 180.
    l.begin_run(&scheduled("j", "00000000000000b1", 0)).unwrap();
    l.miss(
        &crate::support::range("j", baton_store::words::MissReason::Paused, 60, 120),
        at(150),
    )
    .unwrap();
    l.enqueue("j", &[occ(180)], false, at(181)).unwrap();
    let asked = l
        .request_backfill("j", &[occ(0), occ(60), occ(120), occ(180)], "ops", at(300))
        .unwrap();
    log.note("asked", &asked);
    assert!(
        matches!(&asked[0], Requested::Decided(d) if d.decision == Decision::Started && !d.backfill()),
        "{asked:?}"
    );
    assert_eq!(asked[1..3], [Requested::Queued, Requested::Queued]);
    assert!(
        matches!(&asked[3], Requested::Decided(d) if d.decision == Decision::Queued && !d.backfill()),
        "{asked:?}"
    );
    let queued = l.queued("j").unwrap();
    let marked: Vec<_> = queued
        .iter()
        .map(|d| (d.occurrence, d.backfill()))
        .collect();
    assert_eq!(
        marked,
        [(occ(60), true), (occ(120), true), (occ(180), false)]
    );
    assert_eq!(
        queued[0].detail.as_deref(),
        Some("backfill requested by ops")
    );
    // Asked again: each is decided, the queue is unchanged.
    let again = l.request_backfill("j", &[occ(60)], "ops", at(301)).unwrap();
    assert!(
        matches!(&again[0], Requested::Decided(d) if d.backfill()),
        "{again:?}"
    );
    assert_eq!(l.queued("j").unwrap().len(), 3);
    // The oldest runs first, once; a second start of it is refused.
    assert_eq!(l.next_queued(&["j"]).unwrap(), Some(("j".into(), occ(60))));
    assert_eq!(
        l.begin_run(&scheduled("j", "00000000000000b2", 60))
            .unwrap(),
        Begun::Started
    );
    assert!(matches!(
        l.begin_run(&scheduled("j", "00000000000000b3", 60))
            .unwrap(),
        Begun::AlreadyDecided(_)
    ));
    // Out of order or empty: refused, nothing written.
    for bad in [&[occ(240), occ(230)][..], &[]] {
        let e = l.request_backfill("j", bad, "ops", at(302)).unwrap_err();
        log.note("refused", &refused(e));
    }
    assert_eq!(l.queued("j").unwrap().len(), 2);
}

fn a_run_asked_for_now_is_queued_once_and_marked_as_asked(l: &mut Store, log: &mut Log) {
    assert_eq!(
        l.request_run("j", occ(30), "http", at(30)).unwrap(),
        Requested::Queued
    );
    let again = l.request_run("j", occ(30), "http", at(30)).unwrap();
    log.note("again", &again);
    assert!(
        matches!(&again, Requested::Decided(d) if d.requested() && !d.backfill()),
        "{again:?}"
    );
    let queued = l.queued("j").unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].detail.as_deref(), Some("run requested by http"));
    // The schedule's own occurrence of a second already started: decided.
    l.begin_run(&scheduled("j", "00000000000000d1", 60))
        .unwrap();
    let taken = l.request_run("j", occ(60), "http", at(61)).unwrap();
    assert!(
        matches!(&taken, Requested::Decided(d) if d.decision == Decision::Started),
        "{taken:?}"
    );
}

fn a_due_occurrence_never_coalesces_into_one_asked_for(l: &mut Store, log: &mut Log) {
    l.request_backfill("j", &[occ(0)], "ops", at(1)).unwrap();
    // Due while the backfill's waits: queued as itself, not joined to it.
    let q = l.enqueue("j", &[occ(60)], true, at(61)).unwrap();
    log.note("queued", &q);
    assert_eq!(q, Queued::Queued);
    let queued: Vec<_> = l
        .queued("j")
        .unwrap()
        .iter()
        .map(|d| (d.occurrence, d.requested()))
        .collect();
    assert_eq!(queued, [(occ(0), true), (occ(60), false)]);
    // The next due one joins the scheduled one waiting, as before.
    assert_eq!(
        l.enqueue("j", &[occ(120)], true, at(121)).unwrap(),
        Queued::Coalesced { into: occ(60) }
    );
}
