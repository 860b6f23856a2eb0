//! A run asked to stop for a later one (`baton_runner::StopAsk`, what
//! `overlap = "replace"` sets): its running step's whole tree is stopped as
//! a lost lease stops it (the first signal, the kill grace, SIGKILL), the
//! lease is kept and still ours at the release, no later step or pause of
//! that run goes on, and the next run of the session listens to a request
//! of its own.

use std::time::Duration;

use baton_runner::{Ending, Event, Finish, Paused, SessionConfig, StopAsk};

use crate::support::{Dir, Events, Sleepers, eventually, lock_file, record, sh, start};

listed!(TESTS:
    a_request_stops_the_running_step_and_its_whole_tree_keeping_the_lease_contained,
    a_request_stops_the_running_step_and_its_whole_tree_keeping_the_lease_uncontained,
    a_step_that_ended_before_the_request_keeps_its_ending_and_the_next_run_listens_anew,
);

fn a_request_stops_the_running_step_and_its_whole_tree_keeping_the_lease_contained() {
    stops_the_tree(true);
}

fn a_request_stops_the_running_step_and_its_whole_tree_keeping_the_lease_uncontained() {
    stops_the_tree(false);
}

fn stops_the_tree(contain: bool) {
    let dir = Dir::new();
    let (lock, lease) = lock_file(&dir.path("job.lock"), Duration::from_secs(30));
    let fence = lease.fence();
    let mut events = Events::default();
    let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
    let ask = StopAsk::new();
    s.listen(Some(ask.clone()));
    // Both sleepers ignore SIGTERM: only the kill rounds end them.
    let sleepers = Sleepers::in_dir(&dir.path(""));
    let asker = {
        let (ask, sleepers) = (ask.clone(), Sleepers::in_dir(&dir.path("")));
        std::thread::spawn(move || {
            eventually("the step's tree to run", || sleepers.started());
            ask.ask("occurrence 2 replaces it".into());
        })
    };
    let r = s.run(sh(&format!("{}; sleep 120", sleepers.start(true)), contain));
    asker.join().unwrap();
    assert_eq!(r.ending, Ending::Replaced, "{r:?}");
    sleepers.assert_gone("the stop of a replaced run");
    assert_eq!(s.replaced(), Some("occurrence 2 replaces it"));
    assert_eq!(s.lost(), None);
    // The lease is still ours, under the same fence, through the stop.
    assert_eq!(record(&lock).unwrap().fence, fence);
    // Nothing more of this run goes on.
    let later = dir.path("later");
    let r = s.run(sh(&format!("echo ran > {}", later.display()), contain));
    assert_eq!(r.ending, Ending::Replaced);
    assert!(!later.exists(), "a step of the replaced run started");
    assert_eq!(s.pause(Duration::from_secs(60)), Paused::Replaced);
    assert_eq!(s.finish(), Finish::Released);
    assert_eq!(
        events.count(|e| matches!(e, Event::Replaced { .. })),
        1,
        "{:?}",
        events.0
    );
    assert_eq!(events.count(|e| matches!(e, Event::LeaseLost { .. })), 0);
}

fn a_step_that_ended_before_the_request_keeps_its_ending_and_the_next_run_listens_anew() {
    let dir = Dir::new();
    let (_lock, lease) = lock_file(&dir.path("job.lock"), Duration::from_secs(30));
    let mut events = Events::default();
    let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
    let first = StopAsk::new();
    s.listen(Some(first.clone()));
    assert_eq!(s.run(sh("exit 3", true)).ending, Ending::Exited(3));
    // Asked once the run's step had ended: its next step does not start.
    first.ask("late".into());
    assert_eq!(s.run(sh("exit 0", true)).ending, Ending::Replaced);
    // The next run listens to its own request: the first's is forgotten.
    s.listen(Some(StopAsk::new()));
    assert_eq!(s.replaced(), None);
    assert_eq!(s.run(sh("exit 0", true)).ending, Ending::Exited(0));
    assert_eq!(s.finish(), Finish::Released);
}
