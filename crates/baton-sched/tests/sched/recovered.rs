//! A ledger found corrupt while a process holds it open (the daemon keeps
//! one between ticks; a run holds one for its whole length) is moved aside
//! under the time it was found, not the time it was opened.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Clock, ManualClock};
use baton_sched::config::{self, Overrides};
use baton_sched::engine::surfaces::Surfaces;

#[test]
fn a_ledger_found_corrupt_later_is_named_by_when_it_was_found() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let text = format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n\
         [jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        state.to_str().unwrap()
    );
    let cfg = config::parse(&text, &tmp.path().join("baton.toml"), &Overrides::default()).unwrap();
    baton_sched::state::state_dir::locks_dir(&state).unwrap();
    let opened: jiff::Timestamp = "2026-11-29T03:15:00Z".parse().unwrap();
    let clock = Arc::new(ManualClock::new(opened, Duration::from_secs(100)));
    let mut s = Surfaces::open(&cfg, Arc::clone(&clock) as Arc<dyn Clock>);
    assert!(s.ledger(|l| l.jobs()).is_some());
    // An hour later, the file at the path is no database (a bad restore,
    // without the old file's write-ahead log).
    clock.advance(Duration::from_secs(3600));
    let garbage = state.join("garbage");
    std::fs::write(&garbage, vec![0x5au8; 8192]).unwrap();
    std::fs::rename(&garbage, state.join("baton.db")).unwrap();
    for side in ["baton.db-wal", "baton.db-shm"] {
        let _ = std::fs::remove_file(state.join(side));
    }
    let _ = s.ledger(|l| l.jobs());
    s.finish();
    let aside: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| {
            n.starts_with("baton.db.corrupt-") && !n.ends_with("-wal") && !n.ends_with("-shm")
        })
        .collect();
    assert_eq!(
        aside,
        ["baton.db.corrupt-20261129T041500Z"],
        "opened at 03:15, found at 04:15"
    );
    let alerts = std::fs::read_to_string(state.join("logs/alerts.log")).unwrap();
    assert!(
        alerts.contains("baton.db.corrupt-20261129T041500Z"),
        "{alerts}"
    );
}
