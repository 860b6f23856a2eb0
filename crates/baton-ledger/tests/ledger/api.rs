//! What only the SQLite ledger's file shows: a new ledger's files are
//! private, and what one ledger wrote the next one to open the file finds.
//! The calls themselves are the conformance suite's (`baton-store`'s
//! `tests/ledger`), run on both stores.

use std::os::unix::fs::PermissionsExt;

use baton_ledger::Ledger;
use baton_store::ledger::Records;
use baton_store::words::AttemptOutcome;

use crate::support::{Scene, at, attempt, finished, scheduled};

#[test]
fn a_fresh_ledger_is_private_and_empty() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    assert_eq!(ledger.path(), scene.db());
    assert!(ledger.take_recovered().is_empty());
    assert!(ledger.jobs().unwrap().is_empty());
    for name in ["baton.db", "baton.db-wal", "baton.db-shm"] {
        let mode = std::fs::metadata(scene.dir().join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[test]
fn everything_survives_a_reopen() {
    let scene = Scene::new();
    let run = scheduled("j", "00000000000000e1", 0);
    {
        let mut ledger = scene.open();
        ledger.begin_run(&run).unwrap();
        ledger
            .record_attempt(&attempt(&run, 1, "s", AttemptOutcome::Ok, at(0)))
            .unwrap();
    }
    let mut ledger = Ledger::open(scene.dir(), at(3600)).unwrap();
    assert!(ledger.take_recovered().is_empty());
    ledger.finish_run(&finished(&run, 30, true), 5).unwrap();
    let last = ledger.last_run("j").unwrap().unwrap();
    assert_eq!(last.attempts.len(), 1);
    assert_eq!(last.finished, Some(at(30)));
}
