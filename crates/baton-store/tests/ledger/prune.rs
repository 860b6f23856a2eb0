//! Pruning of missed ranges, pauses and watermarks when a run finishes:
//! the newest stay, and a pause not over stays however old.

use baton_store::words::MissReason;

use crate::support::{Log, Store, at, finished, occ, range, scheduled};

both! {
    pruning_keeps_the_newest_missed_ranges_pauses_and_watermarks
}

fn pruning_keeps_the_newest_missed_ranges_pauses_and_watermarks(l: &mut Store, log: &mut Log) {
    for i in 0..1_003 {
        l.miss(&range("j", MissReason::Late, 60 * i, 60 * i), at(60 * i))
            .unwrap();
    }
    // A pause that begins later than the ones after it (its writer's clock
    // was ahead): in force when pruning runs, though the oldest.
    let ahead = l
        .pause("j", None, Some("ahead"), "alice", at(100_000))
        .unwrap();
    for i in 0..110 {
        l.pause("j", Some(at(10 * i + 5)), None, "bob", at(10 * i))
            .unwrap();
    }
    for i in 0..103 {
        l.settle("j", &format!("v{i}"), None, None, at(i)).unwrap();
    }
    l.miss(&range("k", MissReason::Late, 0, 0), at(0)).unwrap();
    l.settle("k", "v", None, None, at(0)).unwrap();

    let run = scheduled("j", "00000000000000d1", 200_000);
    l.begin_run(&run).unwrap();
    l.finish_run(&finished(&run, 5, true), 10).unwrap();

    let missed = l.missed("j", 2_000).unwrap();
    assert_eq!(missed.len(), 1_000);
    assert_eq!(missed[999].first, occ(3 * 60));
    assert_eq!(missed[0].first, occ(1_002 * 60));
    log.note("oldest missed kept", &missed[999]);

    let pauses = l.pauses("j", 2_000).unwrap();
    assert_eq!(pauses.len(), 101);
    assert_eq!(pauses[100], ahead, "the pause in force stays");
    assert!(pauses[100].active(at(200_005)));
    assert_eq!(
        pauses[99].since,
        at(100),
        "the 10 oldest that are over went"
    );
    log.note("oldest pauses kept", &pauses[98..].to_vec());

    let seqs: Vec<u64> = l
        .watermarks("j", 1_000)
        .unwrap()
        .iter()
        .map(|w| w.seq)
        .collect();
    assert_eq!(seqs, (4..=103).rev().collect::<Vec<_>>());
    assert_eq!(l.watermark("j").unwrap().unwrap().value, "v102");
    assert_eq!(l.missed("k", 10).unwrap().len(), 1);
    assert_eq!(l.watermarks("k", 10).unwrap().len(), 1);
    log.note("tallies", &l.tallies().unwrap());
}
