//! Missed ranges decided by processes racing on one file: each recorded
//! once. (What a range is, on either store, is the conformance suite's.)

use baton_store::ledger::Records;
use std::path::Path;

use baton_ledger::Ledger;
use baton_store::ledger::{Miss, Missed};
use baton_store::words::MissReason;

use crate::support::{self, Scene, at, range};

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
    let letters: Vec<Vec<Vec<char>>> = support::run_children(&scene, "misser", MISSERS)
        .iter()
        .map(|out| out.lines().map(|l| l.chars().collect()).collect())
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

/// A paused job's streak, recorded by an honest clock, then extended an
/// hour into the future by one tick whose clock was an hour ahead: the
/// honest tick after it takes the extended range back whole, and the
/// job's mark falls back to the present. Before, the range kept its honest
/// `decided` stamp and stayed: the job's mark an hour ahead, every honest
/// tick said the clock was ahead and took nothing back, and a resumed job
/// did not run for that hour.
#[test]
fn a_streak_a_clock_ahead_extended_is_taken_back_whole() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.see_jobs(&["held"], at(0)).unwrap();
    let honest = Miss {
        streak: true,
        ..range("held", MissReason::Paused, 60, 120)
    };
    assert_eq!(ledger.miss(&honest, at(121)).unwrap(), Missed::Recorded);
    // One tick an hour ahead goes on with the streak.
    let ahead = Miss {
        streak: true,
        ..range("held", MissReason::Paused, 180, 3720)
    };
    assert_eq!(ledger.miss(&ahead, at(3721)).unwrap(), Missed::Extended);
    // The honest clock, a minute later.
    let w = ledger
        .withdraw_ahead("held", at(181), 5)
        .unwrap()
        .expect("the mark was ahead: something is taken back");
    assert_eq!(w.ranges.len(), 1, "{w:?}");
    assert_eq!(w.now, None, "nothing decided remains: {w:?}");
    assert!(ledger.missed("held", 10).unwrap().is_empty());
    assert_eq!(ledger.withdraw_ahead("held", at(182), 5).unwrap(), None);
}
