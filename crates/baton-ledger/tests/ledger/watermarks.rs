//! Watermarks: numbered in order per job, the newest is the value, and no
//! two settles share a number.

use baton_store::ledger::Records;
use std::sync::{Arc, Barrier};

use baton_ledger::Ledger;
use baton_store::ledger::{Error, WatermarkRow};

use crate::support::{Scene, at};

#[test]
fn settled_values_are_numbered_and_the_newest_is_the_watermark() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    assert_eq!(ledger.watermark("etl").unwrap(), None);
    let first = ledger
        .settle(
            "etl",
            "2026-11-28",
            Some("00000000000000a1"),
            Some(7),
            at(0),
        )
        .unwrap();
    assert_eq!(
        first,
        WatermarkRow {
            job: "etl".into(),
            seq: 1,
            value: "2026-11-28".into(),
            run_id: Some("00000000000000a1".into()),
            fence: Some(7),
            settled: at(0),
        }
    );
    let second = ledger
        .settle("etl", "2026-11-29", None, None, at(60))
        .unwrap();
    assert_eq!(
        (second.seq, second.run_id.as_deref(), second.fence),
        (2, None, None)
    );
    assert_eq!(ledger.watermark("etl").unwrap(), Some(second.clone()));
    assert_eq!(
        ledger.watermarks("etl", 10).unwrap(),
        [second.clone(), first]
    );
    assert_eq!(ledger.watermarks("etl", 1).unwrap(), [second]);
    // Each job counts its own.
    assert_eq!(
        ledger.settle("other", "x", None, None, at(0)).unwrap().seq,
        1
    );
}

#[test]
fn a_value_or_fence_that_does_not_fit_is_refused() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let long = "x".repeat(4097);
    for (value, fence) in [
        (long.as_str(), None),
        ("a\0b", None),
        ("ok", Some(u64::MAX)),
    ] {
        let err = ledger.settle("etl", value, None, fence, at(0)).unwrap_err();
        assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    }
    assert_eq!(ledger.watermark("etl").unwrap(), None);
    let full = "é".repeat(2048);
    let row = ledger
        .settle("etl", &full, None, Some(i64::MAX as u64), at(0))
        .unwrap();
    assert_eq!((row.value.len(), row.fence), (4096, Some(i64::MAX as u64)));
}

/// Threads, each with its own connection, settle at once: every value gets
/// its own number, and none is lost.
#[test]
fn concurrent_settles_take_distinct_numbers() {
    const THREADS: usize = 4;
    const EACH: usize = 25;
    let scene = Scene::new();
    scene.open();
    let barrier = Arc::new(Barrier::new(THREADS));
    let settlers: Vec<_> = (0..THREADS)
        .map(|who| {
            let dir = scene.dir().to_owned();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut ledger = Ledger::open(&dir, at(0)).unwrap();
                barrier.wait();
                (0..EACH)
                    .map(|i| {
                        let value = format!("{who}-{i}");
                        ledger.settle("etl", &value, None, None, at(0)).unwrap().seq
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut seqs: Vec<u64> = settlers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    seqs.sort_unstable();
    let all = (THREADS * EACH) as u64;
    assert_eq!(seqs, (1..=all).collect::<Vec<_>>());
    let mut ledger = scene.open();
    assert_eq!(ledger.watermark("etl").unwrap().unwrap().seq, all);
}
