//! Watermarks: numbered per job, the newest is the mark, only a run of the
//! job may settle it.

use baton_store::ledger::{NewRun, WatermarkRow};

use crate::support::{Log, Store, at, refused, scheduled};

both! {
    settled_values_are_numbered_and_the_newest_is_the_watermark
    a_value_a_fence_or_a_run_that_does_not_fit_is_refused
}

fn settled_values_are_numbered_and_the_newest_is_the_watermark(l: &mut Store, log: &mut Log) {
    assert_eq!(l.watermark("etl").unwrap(), None);
    let first = l
        .settle(
            "etl",
            "2026-11-28",
            Some("00000000000000a1"),
            Some(42),
            at(0),
        )
        .unwrap();
    let second = l.settle("etl", "2026-11-29", None, None, at(60)).unwrap();
    let other = l.settle("other", "x", None, None, at(60)).unwrap();
    assert_eq!((first.seq, second.seq, other.seq), (1, 2, 1));
    assert_eq!(
        first,
        WatermarkRow {
            job: "etl".into(),
            seq: 1,
            value: "2026-11-28".into(),
            run_id: Some("00000000000000a1".into()),
            fence: Some(42),
            settled: at(0),
        }
    );
    assert_eq!((second.run_id.as_deref(), second.fence), (None, None));
    assert_eq!(l.watermark("etl").unwrap().as_ref(), Some(&second));
    let all = l.watermarks("etl", 10).unwrap();
    assert_eq!(all, [second, first]);
    log.note("watermarks", &all);
    assert_eq!(l.watermarks("etl", 1).unwrap(), [all[0].clone()]);
    // A run of the job itself may settle it.
    let run = scheduled("etl", "00000000000000b1", 60);
    l.begin_run(&run).unwrap();
    let third = l
        .settle("etl", "2026-11-30", Some(&run.run_id), Some(7), at(61))
        .unwrap();
    assert_eq!(third.seq, 3);
    log.note("third", &third);
}

fn a_value_a_fence_or_a_run_that_does_not_fit_is_refused(l: &mut Store, log: &mut Log) {
    let long = "x".repeat(4097);
    for (value, fence) in [
        (long.as_str(), None),
        ("a\0b", None),
        ("ok", Some(u64::MAX)),
    ] {
        let problem = refused(l.settle("etl", value, None, fence, at(0)).unwrap_err());
        log.note("refused", &problem);
    }
    assert_eq!(l.watermark("etl").unwrap(), None);
    // 4,096 bytes (of two-byte letters) and the largest fence fit.
    let full = "é".repeat(2048);
    let row = l
        .settle("etl", &full, None, Some(i64::MAX as u64), at(0))
        .unwrap();
    assert_eq!((row.value.len(), row.fence), (4096, Some(i64::MAX as u64)));
    // A run of another job sharing the lock may not settle this job's mark.
    let theirs = NewRun {
        ..scheduled("load", "00000000000000c1", 60)
    };
    l.begin_run(&theirs).unwrap();
    let problem = refused(
        l.settle("etl", "v", Some(&theirs.run_id), Some(1), at(61))
            .unwrap_err(),
    );
    assert!(problem.contains("is a run of job load"), "{problem}");
    log.note("refused", &problem);
    assert_eq!(l.watermarks("etl", 10).unwrap().len(), 1);
}
