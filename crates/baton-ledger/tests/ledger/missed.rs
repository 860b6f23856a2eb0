//! Missed ranges: recorded once, never behind the mark, and extended only by
//! a streak that goes on.

use baton_store::ledger::Records;
use std::path::Path;

use baton_ledger::Ledger;
use baton_store::ledger::{Error, Miss, Missed, MissedRow};
use baton_store::words::MissReason;

use crate::support::{self, Scene, at, range, scheduled};

#[test]
fn a_range_is_recorded_once_and_moves_the_mark() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let first = Miss {
        detail: Some("the host was down"),
        ..range("j", MissReason::OutsideWindow, 0, 120)
    };
    assert_eq!(ledger.miss(&first, at(130)).unwrap(), Missed::Recorded);
    let job = ledger.job("j").unwrap().unwrap();
    assert_eq!(job.first_seen, at(130), "the job is seen when first missed");
    assert_eq!(job.last_decided, Some(at(120).as_second()));

    // The same range, or one reaching back behind the mark, was decided.
    assert_eq!(ledger.miss(&first, at(131)).unwrap(), Missed::Moved);
    let overlapping = range("j", MissReason::Late, 120, 240);
    assert_eq!(ledger.miss(&overlapping, at(241)).unwrap(), Missed::Moved);
    assert_eq!(
        ledger.job("j").unwrap().unwrap().last_decided,
        Some(at(120).as_second())
    );
    let next = Miss {
        count: 2,
        at_least: true,
        ..range("j", MissReason::Late, 180, 240)
    };
    assert_eq!(ledger.miss(&next, at(242)).unwrap(), Missed::Recorded);

    let rows = ledger.missed("j", 10).unwrap();
    let expected_first = MissedRow {
        id: rows[1].id,
        job: "j".into(),
        reason: MissReason::OutsideWindow,
        first: at(0).as_second(),
        last: at(120).as_second(),
        count: 3,
        at_least: false,
        decided: at(130),
        updated: at(130),
        detail: Some("the host was down".into()),
    };
    let expected_next = MissedRow {
        id: rows[0].id,
        reason: MissReason::Late,
        first: at(180).as_second(),
        last: at(240).as_second(),
        count: 2,
        at_least: true,
        decided: at(242),
        updated: at(242),
        detail: None,
        ..expected_first.clone()
    };
    assert_eq!(rows, [expected_next, expected_first]);
    assert!(rows[0].id > rows[1].id);
    assert_eq!(ledger.missed("j", 1).unwrap().len(), 1);
    assert_eq!(
        ledger.missed_counts("j").unwrap(),
        [
            (MissReason::Late, 2, true),
            (MissReason::OutsideWindow, 3, false)
        ]
    );
    assert!(ledger.missed("other", 10).unwrap().is_empty());
    assert!(ledger.missed_counts("other").unwrap().is_empty());
}

#[test]
fn a_streak_extends_the_newest_range_only_while_it_goes_on() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let paused = |first, last| Miss {
        streak: true,
        ..range("j", MissReason::Paused, first, last)
    };
    assert_eq!(
        ledger.miss(&paused(0, 60), at(61)).unwrap(),
        Missed::Recorded
    );
    assert_eq!(
        ledger.miss(&paused(120, 180), at(181)).unwrap(),
        Missed::Extended
    );
    let row = &ledger.missed("j", 10).unwrap()[0];
    assert_eq!(
        (row.first, row.last, row.count, row.decided, row.updated),
        (at(0).as_second(), at(180).as_second(), 4, at(61), at(181))
    );
    assert_eq!(
        ledger.job("j").unwrap().unwrap().last_decided,
        Some(at(180).as_second())
    );

    // Not asked to continue a streak: a range of its own.
    let alone = range("j", MissReason::Paused, 240, 240);
    assert_eq!(ledger.miss(&alone, at(241)).unwrap(), Missed::Recorded);
    // Another reason ends the streak, and a streak never joins it.
    let disabled = Miss {
        streak: true,
        ..range("j", MissReason::Disabled, 300, 300)
    };
    assert_eq!(ledger.miss(&disabled, at(301)).unwrap(), Missed::Recorded);
    assert_eq!(
        ledger.miss(&paused(360, 360), at(361)).unwrap(),
        Missed::Recorded
    );
    // A decision in between (a run) breaks the streak.
    ledger
        .begin_run(&scheduled("j", "00000000000000a1", 420))
        .unwrap();
    assert_eq!(
        ledger.miss(&paused(480, 480), at(481)).unwrap(),
        Missed::Recorded
    );
    // A count that is a lower bound stays one when the range grows.
    let capped = Miss {
        count: 1,
        at_least: true,
        ..paused(540, 540)
    };
    assert_eq!(ledger.miss(&capped, at(541)).unwrap(), Missed::Extended);
    assert_eq!(
        ledger.miss(&paused(600, 600), at(601)).unwrap(),
        Missed::Extended
    );

    let rows: Vec<_> = ledger
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
    assert_eq!(
        ledger.missed_counts("j").unwrap(),
        [
            (MissReason::Disabled, 1, false),
            (MissReason::Paused, 9, true)
        ]
    );
}

#[test]
fn a_range_that_makes_no_sense_is_refused_and_writes_nothing() {
    let scene = Scene::new();
    let mut ledger = scene.open();
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
        (huge, "does not fit the ledger"),
    ] {
        let err = ledger.miss(&m, at(0)).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
        assert!(err.to_string().contains(says), "{err}");
        assert!(err.to_string().contains("nothing was written"), "{err}");
    }
    // Every second of a range may be an occurrence.
    let dense = Miss {
        count: 61,
        ..range("j", MissReason::Late, 0, 60)
    };
    assert_eq!(ledger.miss(&dense, at(61)).unwrap(), Missed::Recorded);
    assert_eq!(ledger.missed("j", 10).unwrap().len(), 1);
}

/// How many ranges each misser process decides.
const RANGES: i64 = 100;

/// The `i`th range of the race: two minutes, two occurrences.
fn race_range(job: &str, reason: MissReason, i: i64, streak: bool) -> Miss<'_> {
    Miss {
        streak,
        ..range(job, reason, 120 * i, 120 * i + 60)
    }
}

/// One letter per outcome, for the parent to compare.
fn letter(m: Missed) -> char {
    match m {
        Missed::Recorded => 'R',
        Missed::Extended => 'E',
        Missed::Moved => 'M',
    }
}

/// One misser: when the parent says go, misses the same ranges as its
/// rivals, first as separate decisions of one job, then as a streak of
/// another, and writes one letter per outcome.
pub fn misser_child() {
    let dir = support::env("STATE_DIR");
    let out = support::env("OUT");
    support::wait_for_go();
    let mut ledger = Ledger::open(Path::new(&dir), at(0)).unwrap();
    let mut letters = String::new();
    for i in 0..RANGES {
        let m = race_range("busy", MissReason::Busy, i, false);
        letters.push(letter(ledger.miss(&m, at(120 * i + 61)).unwrap()));
    }
    letters.push('\n');
    for i in 0..RANGES {
        let m = race_range("paused", MissReason::Paused, i, true);
        letters.push(letter(ledger.miss(&m, at(120 * i + 61)).unwrap()));
    }
    std::fs::write(out, letters).unwrap();
}

#[test]
fn processes_missing_the_same_ranges_at_once_record_each_once() {
    const MISSERS: usize = 2;
    let scene = Scene::new();
    let outs = tempfile::tempdir().unwrap();
    let out = |i: usize| outs.path().join(format!("out-{i}"));
    let mut children: Vec<_> = (0..MISSERS)
        .map(|i| {
            support::spawn_child(
                "misser",
                &[
                    ("STATE_DIR", scene.dir().display().to_string()),
                    ("OUT", out(i).display().to_string()),
                ],
            )
        })
        .collect();
    support::go(&mut children);
    for (i, child) in children.into_iter().enumerate() {
        support::expect_success(child, &format!("misser {i}"));
    }
    let letters: Vec<Vec<Vec<char>>> = (0..MISSERS)
        .map(|i| {
            std::fs::read_to_string(out(i))
                .unwrap()
                .lines()
                .map(|l| l.chars().collect())
                .collect()
        })
        .collect();
    for i in 0..RANGES as usize {
        // Separate decisions: one process records each range, the other is
        // told the mark moved.
        let mut busy: Vec<char> = letters.iter().map(|l| l[0][i]).collect();
        busy.sort_unstable();
        assert_eq!(busy, ['M', 'R'], "busy range {i}");
        // A streak: one process writes each range (the first records, the
        // rest extend), the other is told the mark moved.
        let mut paused: Vec<char> = letters.iter().map(|l| l[1][i]).collect();
        paused.sort_unstable();
        let wrote = if i == 0 { 'R' } else { 'E' };
        let mut expected = ['M', wrote];
        expected.sort_unstable();
        assert_eq!(paused, expected, "paused range {i}");
    }

    let mut ledger = scene.open();
    let busy = ledger.missed("busy", 1_000).unwrap();
    assert_eq!(busy.len(), RANGES as usize);
    for (row, i) in busy.iter().zip((0..RANGES).rev()) {
        assert_eq!(row.first, at(120 * i).as_second());
        assert_eq!(row.count, 2);
    }
    let paused = ledger.missed("paused", 1_000).unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].count, 2 * RANGES as u64);
    assert_eq!(
        (paused[0].first, paused[0].last),
        (at(0).as_second(), at(120 * RANGES - 60).as_second())
    );
}
