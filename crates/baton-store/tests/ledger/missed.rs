//! Missed ranges: recorded once, never behind the mark, extended only by a
//! streak that goes on, refused when they make no sense, counted by reason.

use baton_store::ledger::{Miss, Missed, MissedRow};
use baton_store::words::MissReason;

use crate::support::{Log, Store, at, occ, range, refused, scheduled};

both! {
    a_range_is_recorded_once_and_moves_the_mark
    a_streak_extends_the_newest_range_only_while_it_goes_on
    a_range_that_makes_no_sense_is_refused_and_writes_nothing
}

fn a_range_is_recorded_once_and_moves_the_mark(l: &mut Store, log: &mut Log) {
    let first = Miss {
        detail: Some("the host was down"),
        ..range("j", MissReason::OutsideWindow, 0, 120)
    };
    assert_eq!(l.miss(&first, at(130)).unwrap(), Missed::Recorded);
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.first_seen, at(130), "the job is seen when first missed");
    assert_eq!(job.last_decided, Some(occ(120)));

    // The same range, or one reaching back behind the mark, was decided.
    assert_eq!(l.miss(&first, at(131)).unwrap(), Missed::Moved);
    let overlapping = range("j", MissReason::Late, 120, 240);
    assert_eq!(l.miss(&overlapping, at(241)).unwrap(), Missed::Moved);
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(120)));
    let next = Miss {
        count: 2,
        at_least: true,
        detail: Some(""),
        ..range("j", MissReason::Late, 180, 240)
    };
    assert_eq!(l.miss(&next, at(242)).unwrap(), Missed::Recorded);

    let rows = l.missed("j", 10).unwrap();
    let expected_first = MissedRow {
        id: rows[1].id,
        job: "j".into(),
        reason: MissReason::OutsideWindow,
        first: occ(0),
        last: occ(120),
        count: 3,
        at_least: false,
        decided: at(130),
        updated: at(130),
        detail: Some("the host was down".into()),
    };
    let expected_next = MissedRow {
        id: rows[0].id,
        reason: MissReason::Late,
        first: occ(180),
        last: occ(240),
        count: 2,
        at_least: true,
        decided: at(242),
        updated: at(242),
        detail: None, // An empty detail is none.
        ..expected_first.clone()
    };
    assert_eq!(rows, [expected_next, expected_first]);
    assert!(rows[0].id > rows[1].id);
    log.note("missed", &rows);
    assert_eq!(l.missed("j", 1).unwrap().len(), 1);
    assert_eq!(
        l.missed_counts("j").unwrap(),
        [
            (MissReason::Late, 2, true),
            (MissReason::OutsideWindow, 3, false)
        ]
    );
    log.note("counts", &l.missed_counts("j").unwrap());
    assert!(l.missed("other", 10).unwrap().is_empty());
    assert!(l.missed_counts("other").unwrap().is_empty());
}

fn a_streak_extends_the_newest_range_only_while_it_goes_on(l: &mut Store, log: &mut Log) {
    let paused = |first, last| Miss {
        streak: true,
        ..range("j", MissReason::Paused, first, last)
    };
    assert_eq!(l.miss(&paused(0, 60), at(61)).unwrap(), Missed::Recorded);
    assert_eq!(
        l.miss(&paused(120, 180), at(181)).unwrap(),
        Missed::Extended
    );
    let row = &l.missed("j", 10).unwrap()[0];
    assert_eq!(
        (row.first, row.last, row.count, row.decided, row.updated),
        (occ(0), occ(180), 4, at(61), at(181))
    );
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(180)));

    // Not asked to continue a streak: a range of its own.
    let alone = range("j", MissReason::Paused, 240, 240);
    assert_eq!(l.miss(&alone, at(241)).unwrap(), Missed::Recorded);
    // Another reason ends the streak, and a streak never joins it.
    let disabled = Miss {
        streak: true,
        ..range("j", MissReason::Disabled, 300, 300)
    };
    assert_eq!(l.miss(&disabled, at(301)).unwrap(), Missed::Recorded);
    assert_eq!(
        l.miss(&paused(360, 360), at(361)).unwrap(),
        Missed::Recorded
    );
    // A decision in between (a run) breaks the streak.
    l.begin_run(&scheduled("j", "00000000000000a1", 420))
        .unwrap();
    assert_eq!(
        l.miss(&paused(480, 480), at(481)).unwrap(),
        Missed::Recorded
    );
    // A count that is a lower bound stays one when the range grows.
    let capped = Miss {
        count: 1,
        at_least: true,
        ..paused(540, 540)
    };
    assert_eq!(l.miss(&capped, at(541)).unwrap(), Missed::Extended);
    assert_eq!(
        l.miss(&paused(600, 600), at(601)).unwrap(),
        Missed::Extended
    );

    let rows: Vec<_> = l
        .missed("j", 10)
        .unwrap()
        .into_iter()
        .map(|r| (r.reason, r.first, r.last, r.count, r.at_least))
        .collect();
    let s = |secs| at(secs).as_second();
    assert_eq!(
        rows,
        [
            (MissReason::Paused, s(480), s(600), 3, true),
            (MissReason::Paused, s(360), s(360), 1, false),
            (MissReason::Disabled, s(300), s(300), 1, false),
            (MissReason::Paused, s(240), s(240), 1, false),
            (MissReason::Paused, s(0), s(180), 4, false),
        ]
    );
    log.note("missed", &rows);
    assert_eq!(
        l.missed_counts("j").unwrap(),
        [
            (MissReason::Disabled, 1, false),
            (MissReason::Paused, 9, true)
        ]
    );
    let tallies = l.tallies().unwrap();
    assert_eq!(tallies[0].missed[&MissReason::Paused], 9);
    log.note("tallies", &tallies);
}

fn a_range_that_makes_no_sense_is_refused_and_writes_nothing(l: &mut Store, log: &mut Log) {
    let backwards = Miss {
        first: 10,
        last: 9,
        ..range("j", MissReason::Late, 0, 0)
    };
    let empty = Miss {
        count: 0,
        ..range("j", MissReason::Late, 0, 60)
    };
    let crowded = Miss {
        count: 62,
        ..range("j", MissReason::Late, 0, 60)
    };
    let huge = Miss {
        first: i64::MIN,
        last: i64::MAX,
        count: u64::MAX,
        ..range("j", MissReason::Late, 0, 0)
    };
    for (m, says) in [
        (backwards, "after its end"),
        (empty, "at least one"),
        (crowded, "do not fit the 61 seconds"),
        (huge, "does not fit the l"),
    ] {
        let err = l.miss(&m, at(0)).unwrap_err();
        assert!(err.to_string().contains("nothing was written"), "{err}");
        let problem = refused(err);
        assert!(problem.contains(says), "{problem}");
        log.note("refused", &problem);
    }
    assert!(l.job("j").unwrap().is_none());
    assert!(l.missed("j", 10).unwrap().is_empty());
    // Every second of a range may be an occurrence.
    let dense = Miss {
        count: 61,
        ..range("j", MissReason::Late, 0, 60)
    };
    assert_eq!(l.miss(&dense, at(61)).unwrap(), Missed::Recorded);
    assert_eq!(l.missed("j", 10).unwrap().len(), 1);
}
