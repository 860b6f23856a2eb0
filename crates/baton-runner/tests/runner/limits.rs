//! A step's time limits: past its timeout its whole tree gets the first
//! signal, and SIGKILL once the kill grace has passed; the run's soft
//! budget warns, once per run, and stops nothing.

use std::time::Duration;

use baton_runner::{Ending, Event, Finish, Paused, SessionConfig};
use baton_store::Restated;

use crate::support::{Dir, Events, Sleepers, Store, What, sh, start};

listed!(TESTS:
    a_step_past_its_timeout_is_stopped_whole_and_ends_timed_out,
    a_step_deaf_to_the_first_signal_is_killed_once_the_grace_has_passed,
    the_soft_budget_warns_once_per_run_and_stops_nothing,
);

fn a_step_past_its_timeout_is_stopped_whole_and_ends_timed_out() {
    for contain in [true, false] {
        let dir = Dir::new();
        let sleepers = Sleepers::in_dir(&dir.path(""));
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        let mut spec = sh(&format!("{}; wait", sleepers.start(false)), contain);
        spec.timeout = Some(Duration::from_secs(1));
        let r = s.run(spec);
        assert_eq!(r.ending, Ending::TimedOut, "contain: {contain}");
        assert_eq!(r.exit_code(), baton_runner::TIMED_OUT);
        // The command died of the first signal.
        assert_eq!((r.code, r.signal), (None, Some(libc::SIGTERM)));
        sleepers.assert_gone("its step's timeout");
        assert_eq!(s.finish(), Finish::Released);
        assert_eq!(
            events.count(|e| *e
                == Event::TimedOut {
                    after: Duration::from_secs(1)
                }),
            1
        );
    }
}

fn a_step_deaf_to_the_first_signal_is_killed_once_the_grace_has_passed() {
    for (signal, name) in [(libc::SIGTERM, "TERM"), (libc::SIGUSR1, "USR1")] {
        let dir = Dir::new();
        let log = dir.path("log");
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        // The step notes the signal and runs on.
        let mut spec = sh(
            &format!(
                "trap 'echo {name} >> {log}' {name}; while :; do echo tick >> {log}; sleep 0.05; \
                 done",
                log = log.display()
            ),
            true,
        );
        spec.first_signal = signal;
        // Long enough for the shell to have set its trap by the first
        // signal.
        let timeout = Duration::from_secs(2);
        spec.timeout = Some(timeout);
        spec.kill_grace = Duration::from_secs(1);
        let r = s.run(spec);
        assert_eq!(r.ending, Ending::TimedOut, "{name}");
        assert_eq!(r.signal, Some(libc::SIGKILL), "{name}");
        // Killed only once the grace had passed since the first signal,
        // which it had been sent, and outlived.
        assert!(
            r.duration >= timeout + Duration::from_secs(1),
            "{:?}",
            r.duration
        );
        let log = std::fs::read_to_string(&log).unwrap();
        let after = log
            .split_once(&format!("{name}\n"))
            .unwrap_or_else(|| panic!("the step never got SIG{name}: {log}"))
            .1;
        assert!(
            after.contains("tick"),
            "the step was killed at the first signal"
        );
        assert_eq!(s.finish(), Finish::Released);
    }
}

fn the_soft_budget_warns_once_per_run_and_stops_nothing() {
    let (store, calls) = Store::new(Duration::from_secs(30));
    let mut events = Events::default();
    let cfg = SessionConfig {
        max_runtime: Some(Duration::from_millis(200)),
        ..SessionConfig::default()
    };
    let mut s = start(Box::new(store), cfg, &mut events);
    let r = s.run(sh("sleep 0.5", true));
    assert_eq!(r.ending, Ending::Exited(0));
    assert_eq!(s.pause(Duration::from_millis(300)), Paused::Elapsed);
    // The next run under the same lease has a budget of its own.
    assert_eq!(s.restate(None, None, None).unwrap(), Restated::Done);
    assert_eq!(s.pause(Duration::from_millis(500)), Paused::Elapsed);
    assert_eq!(s.finish(), Finish::Released);
    let budget = Duration::from_millis(200);
    assert_eq!(
        events.0,
        [Event::Overrunning { budget }, Event::Overrunning { budget }]
    );
    assert_eq!(calls.of(|w| w == What::Restate).len(), 1);
}
