//! Pruning in the file: a pruned run's attempts go with it (the schema's
//! cascade). What pruning keeps, on either store, is the conformance
//! suite's.

use baton_store::ledger::Records;
use baton_store::words::AttemptOutcome;

use crate::support::{Scene, attempt, finished, scheduled};

#[test]
fn a_pruned_runs_attempts_go_with_it() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    for i in 0..6 {
        let run = scheduled("j", &format!("{i:016x}"), 3600 * i);
        ledger.begin_run(&run).unwrap();
        for (seq, step) in [(1, "a"), (2, "b")] {
            let a = attempt(&run, seq, step, AttemptOutcome::Ok, run.started);
            ledger.record_attempt(&a).unwrap();
        }
        ledger.finish_run(&finished(&run, 60, true), 3).unwrap();
    }
    assert_eq!(ledger.history("j", 100).unwrap().len(), 3);
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    let attempts: i64 = raw
        .query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(attempts, 6);
}
