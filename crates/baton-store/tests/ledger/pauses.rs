//! Pauses: one in force at a time, kept after they end.

use jiff::SignedDuration;

use crate::support::{Log, Store, at, refused};

both! {
    a_new_pause_ends_the_one_in_force_and_resume_ends_the_last
    a_lapsed_pause_is_neither_resumed_nor_replaced
    a_pause_that_would_end_before_it_begins_is_refused
}

fn a_new_pause_ends_the_one_in_force_and_resume_ends_the_last(l: &mut Store, log: &mut Log) {
    let first = l
        .pause("j", None, Some("migration"), "alice", at(0))
        .unwrap();
    assert!(first.active(at(0)) && first.ended.is_none());
    let second = l.pause("j", Some(at(3600)), None, "bob", at(60)).unwrap();
    assert!(second.id > first.id);
    let pauses = l.pauses("j", 10).unwrap();
    assert_eq!(pauses.len(), 2);
    assert_eq!(pauses[0], second, "newest first");
    assert_eq!(pauses[1].ended, Some(at(60)), "the new pause ended the old");
    log.note("pauses", &pauses);
    let ended = l.resume("j", at(120)).unwrap().unwrap();
    assert_eq!(ended.id, second.id);
    assert_eq!(ended.ended, Some(at(120)));
    assert!(ended.covers(at(60)) && !ended.active(at(120)));
    log.note("resumed", &ended);
    assert_eq!(l.resume("j", at(121)).unwrap(), None);
    assert_eq!(l.pauses("j", 1).unwrap().len(), 1);
    assert!(l.pauses("other", 10).unwrap().is_empty());
}

fn a_lapsed_pause_is_neither_resumed_nor_replaced(l: &mut Store, log: &mut Log) {
    let hour = SignedDuration::from_hours(1);
    let lapsing = l
        .pause("j", Some(at(0) + hour), None, "alice", at(0))
        .unwrap();
    assert_eq!(l.resume("j", at(0) + hour).unwrap(), None);
    let next = l.pause("j", None, None, "alice", at(7200)).unwrap();
    let pauses = l.pauses("j", 10).unwrap();
    assert_eq!(pauses[1], lapsing, "a lapsed pause is left as it was");
    assert_eq!(pauses[0], next);
    log.note("pauses", &pauses);
}

fn a_pause_that_would_end_before_it_begins_is_refused(l: &mut Store, log: &mut Log) {
    for until in [at(0), at(-1)] {
        let problem = refused(l.pause("j", Some(until), None, "alice", at(0)).unwrap_err());
        log.note("refused", &problem);
    }
    assert!(l.pauses("j", 10).unwrap().is_empty());
}
