//! Missed ranges: recorded once, extended by a streak, refused when they
//! make no sense, counted by reason.

use baton_store::ledger::{Miss, Missed};
use baton_store::words::MissReason;

use crate::support::{Log, Store, at, occ, range, refused};

both! {
    a_range_is_recorded_once_and_moves_the_mark
    a_streak_extends_the_newest_range_only_while_it_goes_on
    a_range_that_makes_no_sense_is_refused_and_writes_nothing
}

fn a_range_is_recorded_once_and_moves_the_mark(l: &mut Store, log: &mut Log) {
    let outage = Miss {
        detail: Some("host down"),
        ..range("j", MissReason::Late, 0, 3540)
    };
    assert_eq!(l.miss(&outage, at(3600)).unwrap(), Missed::Recorded);
    assert_eq!(l.miss(&outage, at(3601)).unwrap(), Missed::Moved);
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(3540)));
    let busy = Miss {
        at_least: true,
        detail: Some(""),
        ..range("j", MissReason::Busy, 3600, 3720)
    };
    assert_eq!(l.miss(&busy, at(3720)).unwrap(), Missed::Recorded);
    assert_eq!(
        l.miss(&range("j", MissReason::Late, 3780, 3780), at(3780))
            .unwrap(),
        Missed::Recorded
    );
    let rows = l.missed("j", 10).unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0].first, occ(3780), "newest first");
    assert_eq!(rows[1].detail, None, "an empty detail is none");
    assert_eq!(rows[2].count, 60);
    assert!(rows[0].id > rows[1].id && rows[1].id > rows[2].id);
    log.note("missed", &rows);
    assert_eq!(l.missed("j", 1).unwrap().len(), 1);
    let counts = l.missed_counts("j").unwrap();
    assert_eq!(
        counts,
        [(MissReason::Busy, 3, true), (MissReason::Late, 61, false)]
    );
    log.note("counts", &counts);
    assert!(l.missed_counts("other").unwrap().is_empty());
}

fn a_streak_extends_the_newest_range_only_while_it_goes_on(l: &mut Store, log: &mut Log) {
    let paused = |first, last| Miss {
        streak: true,
        ..range("j", MissReason::Paused, first, last)
    };
    assert_eq!(l.miss(&paused(0, 60), at(60)).unwrap(), Missed::Recorded);
    assert_eq!(
        l.miss(&paused(120, 180), at(180)).unwrap(),
        Missed::Extended
    );
    let rows = l.missed("j", 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].first, rows[0].last, rows[0].count),
        (occ(0), occ(180), 4)
    );
    assert_eq!(rows[0].updated, at(180));
    assert_eq!(rows[0].decided, at(60));
    log.note("missed", &rows);
    // Another reason breaks the streak.
    assert_eq!(
        l.miss(&range("j", MissReason::Busy, 240, 240), at(240))
            .unwrap(),
        Missed::Recorded
    );
    assert_eq!(
        l.miss(&paused(300, 300), at(300)).unwrap(),
        Missed::Recorded
    );
    // So does a decision after the range (a run).
    l.begin_run(&crate::support::scheduled("j", "00000000000000a1", 360))
        .unwrap();
    assert_eq!(
        l.miss(&paused(420, 420), at(420)).unwrap(),
        Missed::Recorded
    );
    let rows = l.missed("j", 10).unwrap();
    assert_eq!(rows.len(), 4);
    log.note("missed", &rows);
    let tallies = l.tallies().unwrap();
    assert_eq!(tallies[0].missed[&MissReason::Paused], 6);
    log.note("tallies", &tallies);
}

fn a_range_that_makes_no_sense_is_refused_and_writes_nothing(l: &mut Store, log: &mut Log) {
    let backwards = Miss {
        first: occ(60),
        last: occ(0),
        ..range("j", MissReason::Late, 0, 0)
    };
    let none = Miss {
        count: 0,
        ..range("j", MissReason::Late, 0, 60)
    };
    let too_many = Miss {
        count: 62,
        ..range("j", MissReason::Late, 0, 60)
    };
    let huge = Miss {
        first: i64::MIN,
        last: i64::MAX,
        count: u64::MAX,
        ..range("j", MissReason::Late, 0, 60)
    };
    for m in [backwards, none, too_many, huge] {
        let problem = refused(l.miss(&m, at(60)).unwrap_err());
        log.note("refused", &problem);
    }
    assert!(l.job("j").unwrap().is_none());
    assert!(l.missed("j", 10).unwrap().is_empty());
}
