//! Pauses: in force between their bounds, one at a time, kept after they
//! end.

use baton_store::ledger::PauseRow;

use crate::support::{Log, Store, at, refused};

both! {
    a_new_pause_ends_the_one_in_force_and_resume_ends_the_last
    a_lapsed_pause_is_neither_resumed_nor_replaced
    a_pause_that_would_end_before_it_begins_is_refused
}

fn pause(since: i64, until: Option<i64>, ended: Option<i64>) -> PauseRow {
    PauseRow {
        id: 1,
        job: "j".into(),
        since: at(since),
        until: until.map(at),
        reason: None,
        who: "alice".into(),
        ended: ended.map(at),
    }
}

#[test]
fn a_pause_covers_from_its_start_to_its_first_end() {
    let open = pause(0, None, None);
    assert!(!open.covers(at(-1)));
    assert!(open.covers(at(0)));
    assert!(open.covers(at(1_000_000)));

    let lapsing = pause(0, Some(100), None);
    assert!(lapsing.covers(at(99)));
    assert!(!lapsing.covers(at(100)));

    let resumed_early = pause(0, Some(100), Some(50));
    assert!(resumed_early.covers(at(49)));
    assert!(!resumed_early.covers(at(50)));
    assert!(!resumed_early.covers(at(75)));

    let resumed_late = pause(0, Some(100), Some(150));
    assert!(!resumed_late.covers(at(120)), "it lapsed first");

    for p in [open, lapsing, resumed_early, resumed_late] {
        for t in [-1, 0, 49, 50, 99, 100, 150] {
            assert_eq!(p.active(at(t)), p.covers(at(t)), "{p:?} at {t}");
        }
    }
}

fn a_new_pause_ends_the_one_in_force_and_resume_ends_the_last(l: &mut Store, log: &mut Log) {
    let first = l
        .pause("j", None, Some("migration"), "alice", at(0))
        .unwrap();
    assert_eq!(
        first,
        PauseRow {
            id: first.id,
            job: "j".into(),
            since: at(0),
            until: None,
            reason: Some("migration".into()),
            who: "alice".into(),
            ended: None,
        }
    );
    assert!(first.active(at(0)));

    let second = l.pause("j", Some(at(100)), None, "bob", at(10)).unwrap();
    assert!(second.id > first.id);
    assert_eq!((second.since, second.until), (at(10), Some(at(100))));
    let listed = l.pauses("j", 10).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0], second, "newest first");
    let first = &listed[1];
    assert_eq!(first.ended, Some(at(10)), "replaced by the new pause");
    assert!(first.covers(at(5)) && !first.active(at(10)));
    log.note("pauses", &listed);

    let ended = l.resume("j", at(20)).unwrap().unwrap();
    assert_eq!(
        ended,
        PauseRow {
            ended: Some(at(20)),
            ..second
        }
    );
    assert!(ended.covers(at(10)) && !ended.active(at(20)));
    log.note("resumed", &ended);
    // Nothing in force any more.
    assert_eq!(l.resume("j", at(21)).unwrap(), None);
    assert_eq!(l.pauses("j", 10).unwrap()[0], ended);
    assert_eq!(l.pauses("j", 1).unwrap().len(), 1);
    assert!(l.pauses("other", 10).unwrap().is_empty());
    assert_eq!(l.resume("other", at(21)).unwrap(), None);
}

fn a_lapsed_pause_is_neither_resumed_nor_replaced(l: &mut Store, log: &mut Log) {
    let short = l.pause("j", Some(at(30)), None, "alice", at(0)).unwrap();
    assert_eq!(l.resume("j", at(30)).unwrap(), None);
    assert_eq!(l.resume("j", at(40)).unwrap(), None);
    let next = l.pause("j", None, None, "alice", at(50)).unwrap();
    let listed = l.pauses("j", 10).unwrap();
    assert_eq!(listed[1], short, "it lapsed: no one ended it");
    assert_eq!(listed[0], next);
    log.note("pauses", &listed);
}

fn a_pause_that_would_end_before_it_begins_is_refused(l: &mut Store, log: &mut Log) {
    for until in [at(0), at(-1)] {
        let problem = refused(l.pause("j", Some(until), None, "alice", at(0)).unwrap_err());
        log.note("refused", &problem);
    }
    assert!(l.pauses("j", 10).unwrap().is_empty());
    l.pause("j", None, None, "alice", at(0)).unwrap();
    for until in [at(10), at(9)] {
        let problem = refused(l.pause("j", Some(until), None, "bob", at(10)).unwrap_err());
        log.note("refused", &problem);
    }
    // The pause in force was not ended by the refused one.
    let listed = l.pauses("j", 10).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].active(at(10)));
}
