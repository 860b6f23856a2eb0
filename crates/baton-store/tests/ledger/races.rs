//! Sixteen ledgers (threads here, hosts in production) racing to decide the
//! same occurrence: exactly one decides it, on either kind of store.

use std::sync::{Arc, Barrier};

use baton_store::ledger::{Begun, Decision, Missed, NewRun, Queued, Records};
use baton_store::words::MissReason;

use crate::support::{Log, Store, at, occ, range, scheduled};

both! {
    racing_ledgers_start_an_occurrence_once
    racing_ledgers_record_a_missed_range_once
    racing_settles_take_distinct_numbers
    racing_ledgers_queue_an_occurrence_once_and_drain_it_once
}

const RACERS: usize = 16;

/// Runs `race` on `RACERS` ledgers of the store at once, each on its own
/// thread, released together; returns what each returned.
fn race<T: Send + 'static>(
    store: &Store,
    race: impl Fn(usize, &mut dyn Records) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let race = Arc::new(race);
    let barrier = Arc::new(Barrier::new(RACERS));
    let racers: Vec<_> = (0..RACERS)
        .map(|i| {
            let mut ledger = store.another();
            let (race, barrier) = (race.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                race(i, &mut *ledger)
            })
        })
        .collect();
    racers.into_iter().map(|r| r.join().unwrap()).collect()
}

fn racing_ledgers_start_an_occurrence_once(l: &mut Store, log: &mut Log) {
    // The job is known already, as at every tick but the first: no insert
    // of its row makes the racers wait for each other.
    l.see_jobs(&["j"], at(0)).unwrap();
    let results = race(l, |i, ledger| {
        let run = NewRun {
            started: at(60),
            ..scheduled("j", &format!("{i:016x}"), 60)
        };
        (run.run_id.clone(), ledger.begin_run(&run).unwrap())
    });
    let started: Vec<&String> = results
        .iter()
        .filter(|(_, b)| *b == Begun::Started)
        .map(|(id, _)| id)
        .collect();
    assert_eq!(started.len(), 1, "{results:?}");
    let winner = started[0];
    for (_, begun) in &results {
        if let Begun::AlreadyDecided(d) = begun {
            assert_eq!(d.decision, Decision::Started);
            assert_eq!(d.run_id.as_ref(), Some(winner));
        }
    }
    let history = l.history("j", 100).unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(&history[0].run_id, winner);
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.last_run_id.as_ref(), Some(winner));
    assert_eq!(job.last_decided, Some(occ(60)));
    log.note("racers told decided", &(RACERS - 1));
}

fn racing_ledgers_record_a_missed_range_once(l: &mut Store, log: &mut Log) {
    l.see_jobs(&["j"], at(0)).unwrap();
    let results = race(l, |_, ledger| {
        ledger
            .miss(&range("j", MissReason::Busy, 0, 600), at(600))
            .unwrap()
    });
    let recorded = results.iter().filter(|m| **m == Missed::Recorded).count();
    let moved = results.iter().filter(|m| **m == Missed::Moved).count();
    assert_eq!((recorded, moved), (1, RACERS - 1), "{results:?}");
    let rows = l.missed("j", 100).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].count, 11);
    assert_eq!(
        l.tallies().unwrap()[0].missed[&MissReason::Busy],
        11,
        "counted once"
    );
    log.note("missed", &rows);
}

fn racing_settles_take_distinct_numbers(l: &mut Store, log: &mut Log) {
    l.settle("etl", "start", None, None, at(0)).unwrap();
    let results = race(l, |i, ledger| {
        ledger
            .settle("etl", &format!("v{i}"), None, None, at(60))
            .unwrap()
            .seq
    });
    let mut seqs = results;
    seqs.sort_unstable();
    let expected: Vec<u64> = (2..=17).collect();
    assert_eq!(seqs, expected);
    let newest = l.watermark("etl").unwrap().unwrap();
    assert_eq!(newest.seq, 17);
    log.note("settles", &l.watermarks("etl", 100).unwrap().len());
}

fn racing_ledgers_queue_an_occurrence_once_and_drain_it_once(l: &mut Store, log: &mut Log) {
    l.see_jobs(&["j"], at(0)).unwrap();
    let queued = race(l, |_, ledger| {
        ledger.enqueue("j", &[occ(60)], true, at(60)).unwrap()
    });
    let first = queued.iter().filter(|q| **q == Queued::Queued).count();
    let moved = queued.iter().filter(|q| **q == Queued::Moved).count();
    assert_eq!((first, moved), (1, RACERS - 1), "{queued:?}");
    assert_eq!(l.queued("j").unwrap().len(), 1);
    // Every ledger drains the queue at once: one starts the occurrence.
    let drained = race(l, |i, ledger| {
        let (job, occurrence) = ledger.next_queued(&["j"]).unwrap()?;
        let run = NewRun {
            occurrence: Some(occurrence),
            ..scheduled(&job, &format!("{i:016x}"), 60)
        };
        Some(ledger.begin_run(&run).unwrap())
    });
    let started = drained
        .iter()
        .filter(|b| **b == Some(Begun::Started))
        .count();
    assert_eq!(started, 1, "{drained:?}");
    assert!(l.queued("j").unwrap().is_empty());
    assert_eq!(l.history("j", 100).unwrap().len(), 1);
    log.note(
        "decision",
        &l.decision("j", occ(60)).unwrap().map(|d| d.decision),
    );
}
