//! Signals sent to the runner (SIGTERM, SIGINT, SIGHUP) reach the running
//! step's group, the run reports itself interrupted, and nothing more
//! starts; a run that stops on signals stops the step's whole tree. Those
//! meant for the job (SIGUSR1, SIGUSR2, SIGALRM) reach the running step and
//! stop nothing.
//!
//! The signals are sent with `kill(2)` to this process, as a service
//! manager would, from a thread started once the session blocked them (a
//! step in a PID namespace cannot name the runner).

use std::time::Duration;

use baton_runner::{Ending, Event, Finish, Paused, Session, SessionConfig};
use baton_store::Renewal;
use rustix::process::Signal;

use crate::support::{
    Calls, Dir, Events, PATIENCE, Sleepers, Store, alive, eventually, kill, read_pid, sh, start,
    write_pid, written,
};

listed!(TESTS:
    a_signal_to_the_runner_reaches_the_step_and_the_run_is_interrupted,
    a_signal_passed_on_reaches_a_step_stopped_by_job_control,
    a_signal_meant_for_the_job_reaches_the_step_and_stops_nothing,
    a_signal_meant_for_the_job_between_steps_is_dropped_and_never_ends_the_runner,
    a_signal_during_a_pause_ends_it,
    a_signal_before_the_gate_opens_keeps_the_command_from_starting,
    a_run_that_stops_on_signals_stops_the_steps_whole_tree,
    a_run_that_stops_on_signals_goes_on_through_a_hangup,
);

/// Sends `signal` to this process once `ready` is written.
fn send_when(ready: &std::path::Path, signal: Signal) -> std::thread::JoinHandle<()> {
    let ready = ready.to_owned();
    std::thread::spawn(move || {
        eventually("the step to be ready", || written(&ready));
        kill(std::process::id(), signal);
    })
}

/// Once a signal asked the run to stop, no step starts and no pause waits.
fn nothing_more_runs(s: &mut Session<'_>, calls: &Calls, dir: &Dir, signal: i32) {
    let asked = calls.recorded().len();
    let later = dir.path("later");
    let r = s.run(sh(&format!("echo ran > {}", later.display()), true));
    assert_eq!(r.ending, Ending::Signaled(signal));
    assert!(!later.exists(), "a step ran after the run was interrupted");
    assert_eq!(calls.recorded().len(), asked);
    assert_eq!(s.pause(PATIENCE), Paused::Interrupted(signal));
}

fn a_signal_to_the_runner_reaches_the_step_and_the_run_is_interrupted() {
    let signals = [
        (Signal::TERM, "TERM"),
        (Signal::INT, "INT"),
        (Signal::HUP, "HUP"),
    ];
    for contain in [true, false] {
        for (signal, name) in signals {
            let number = signal.as_raw();
            if baton_lease::job::signal_ignored(number) {
                // Inherited as ignored (nohup): it stays ignored, by design.
                println!("SIG{name} is ignored here; not sent");
                continue;
            }
            let dir = Dir::new();
            let (ready, got) = (dir.path("ready"), dir.path("got"));
            let (store, calls) = Store::new(Duration::from_secs(30));
            let mut events = Events::default();
            let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
            let sender = send_when(&ready, signal);
            let r = s.run(sh(
                &format!(
                    "trap 'echo {name} > {got}; exit 7' {name}; echo up > {ready}; while :; do \
                     sleep 0.05; done",
                    got = got.display(),
                    ready = ready.display()
                ),
                contain,
            ));
            sender.join().unwrap();
            let what = format!("SIG{name} (contain: {contain})");
            assert_eq!(r.ending, Ending::Exited(7), "{what}");
            assert_eq!(std::fs::read_to_string(&got).unwrap(), format!("{name}\n"));
            assert_eq!(r.interrupted, Some(number), "{what}");
            assert_eq!(s.interrupted(), Some(number), "{what}");
            nothing_more_runs(&mut s, &calls, &dir, number);
            assert_eq!(s.finish(), Finish::Released);
            assert_eq!(
                events.count(|e| *e == Event::Forwarded { signal: number }),
                1,
                "{what}: {:?}",
                events.0
            );
        }
    }
}

/// Whether process `pid` is stopped (`T` in `/proc/PID/stat`).
fn stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('T')
    })
}

fn a_signal_passed_on_reaches_a_step_stopped_by_job_control() {
    // The step stops itself, as Ctrl-Z or a read at a terminal not its own
    // would stop it; SIGTERM comes to the runner only once it is stopped.
    // Passed on alone, the signal waits for a SIGCONT that never comes,
    // and the run with it (until its timeout: then it ends timed out).
    for contain in [true, false] {
        let dir = Dir::new();
        let (pid_file, got) = (dir.path("pid"), dir.path("got"));
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        let sender = std::thread::spawn({
            let pid_file = pid_file.clone();
            move || {
                let pid = read_pid(&pid_file);
                eventually("the step to stop", || stopped(pid));
                kill(std::process::id(), Signal::TERM);
            }
        });
        let r = s.run(sh(
            &format!(
                "trap 'echo TERM > {got}; exit 7' TERM; {}; kill -STOP $$; while :; do sleep \
                 0.05; done",
                write_pid(&pid_file),
                got = got.display()
            ),
            contain,
        ));
        sender.join().unwrap();
        assert_eq!(r.ending, Ending::Exited(7), "contain: {contain}");
        assert_eq!(std::fs::read_to_string(&got).unwrap(), "TERM\n");
        assert_eq!(s.finish(), Finish::Released);
    }
}

/// The signals a job may be sent to act on while it runs.
const MEANT_FOR_THE_JOB: [(Signal, &str); 3] = [
    (Signal::USR1, "USR1"),
    (Signal::USR2, "USR2"),
    (Signal::ALARM, "ALRM"),
];

fn a_signal_meant_for_the_job_reaches_the_step_and_stops_nothing() {
    // Their default action ended the runner: the step went on unsupervised
    // and the run was left to be recorded abandoned.
    for (stop_on_signal, contain) in [(false, true), (false, false), (true, true)] {
        for (signal, name) in MEANT_FOR_THE_JOB {
            let number = signal.as_raw();
            if baton_lease::job::signal_ignored(number) {
                println!("SIG{name} is ignored here; not sent");
                continue;
            }
            let dir = Dir::new();
            let (ready, got, later) = (dir.path("ready"), dir.path("got"), dir.path("later"));
            let (store, _) = Store::new(Duration::from_secs(30));
            let mut events = Events::default();
            let cfg = SessionConfig {
                stop_on_signal,
                ..SessionConfig::default()
            };
            let mut s = start(Box::new(store), cfg, &mut events);
            let sender = send_when(&ready, signal);
            let r = s.run(sh(
                &format!(
                    "trap 'echo {name} > {got}' {name}; echo up > {ready}; while [ ! -s {got} ]; \
                     do sleep 0.05; done; exit 3",
                    got = got.display(),
                    ready = ready.display()
                ),
                contain,
            ));
            sender.join().unwrap();
            let what = format!("SIG{name} (contain: {contain}, stop_on_signal: {stop_on_signal})");
            assert_eq!(r.ending, Ending::Exited(3), "{what}");
            assert_eq!(std::fs::read_to_string(&got).unwrap(), format!("{name}\n"));
            assert_eq!(r.interrupted, None, "{what}");
            assert_eq!(s.interrupted(), None, "{what}");
            // The run goes on: its next step runs.
            let r = s.run(sh(&format!("echo ran > {}", later.display()), contain));
            assert_eq!(r.ending, Ending::Exited(0), "{what}");
            assert!(written(&later), "{what}");
            assert_eq!(s.finish(), Finish::Released, "{what}");
            assert_eq!(
                events.count(|e| *e == Event::Forwarded { signal: number }),
                1,
                "{what}: {:?}",
                events.0
            );
        }
    }
}

fn a_signal_meant_for_the_job_between_steps_is_dropped_and_never_ends_the_runner() {
    for (signal, name) in MEANT_FOR_THE_JOB {
        if baton_lease::job::signal_ignored(signal.as_raw()) {
            println!("SIG{name} is ignored here; not sent");
            continue;
        }
        let dir = Dir::new();
        let (ready, got) = (dir.path("ready"), dir.path("got"));
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        // Sent during no step: a pause goes on through it, and the next
        // step never gets it late.
        kill(std::process::id(), signal);
        assert_eq!(
            s.pause(Duration::from_millis(200)),
            Paused::Elapsed,
            "SIG{name}"
        );
        kill(std::process::id(), signal);
        let r = s.run(sh(
            &format!(
                "trap 'echo {name} > {got}' {name}; echo up > {ready}; sleep 0.3; sleep 0.3",
                got = got.display(),
                ready = ready.display()
            ),
            false,
        ));
        assert_eq!(r.ending, Ending::Exited(0), "SIG{name}");
        assert!(written(&ready), "SIG{name}");
        assert!(
            !got.exists(),
            "SIG{name} sent between steps reached a later step"
        );
        // Pending when the session ends: dropped with it, or unblocking it
        // would end this process by its default action.
        kill(std::process::id(), signal);
        assert_eq!(s.finish(), Finish::Released, "SIG{name}");
        assert_eq!(events.count(|e| matches!(e, Event::Forwarded { .. })), 0);
    }
}

fn a_signal_during_a_pause_ends_it() {
    let dir = Dir::new();
    let (store, calls) = Store::new(Duration::from_millis(900));
    // Sent once the pause is under way: it has renewed the lease.
    let renewed = dir.path("renewed");
    let store = store.on_renew({
        let renewed = renewed.clone();
        move |_| {
            std::fs::write(&renewed, "1\n").unwrap();
            Ok(Renewal::Renewed)
        }
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let sender = send_when(&renewed, Signal::TERM);
    assert_eq!(s.pause(PATIENCE), Paused::Interrupted(libc::SIGTERM));
    sender.join().unwrap();
    assert_eq!(s.interrupted(), Some(libc::SIGTERM));
    nothing_more_runs(&mut s, &calls, &dir, libc::SIGTERM);
    assert_eq!(s.finish(), Finish::Released);
}

fn a_signal_before_the_gate_opens_keeps_the_command_from_starting() {
    let dir = Dir::new();
    let ran = dir.path("ran");
    // The signal comes while the step's group is being recorded.
    let (store, calls) = Store::new(Duration::from_secs(30));
    let store = store.on_record(|_| {
        kill(std::process::id(), Signal::TERM);
        Ok(Renewal::Renewed)
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let r = s.run(sh(&format!("echo ran > {}", ran.display()), true));
    assert_eq!(r.ending, Ending::Signaled(libc::SIGTERM));
    assert_eq!(r.interrupted, Some(libc::SIGTERM));
    let group = calls.recorded()[0];
    assert!(!alive(group), "the step's process outlived its refusal");
    assert!(
        !ran.exists(),
        "the command started after the run was interrupted"
    );
    assert_eq!(s.finish(), Finish::Released);
}

fn a_run_that_stops_on_signals_stops_the_steps_whole_tree() {
    for contain in [true, false] {
        let dir = Dir::new();
        let ready = dir.path("ready");
        let sleepers = Sleepers::in_dir(&dir.path(""));
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let cfg = SessionConfig {
            stop_on_signal: true,
            ..SessionConfig::default()
        };
        let mut s = start(Box::new(store), cfg, &mut events);
        let sender = send_when(&ready, Signal::TERM);
        // Everything of the step is deaf to SIGTERM.
        let r = s.run(sh(
            &format!(
                "{}; trap '' TERM; echo up > {}; wait",
                sleepers.start(true),
                ready.display()
            ),
            contain,
        ));
        sender.join().unwrap();
        assert_eq!(
            r.ending,
            Ending::Signaled(libc::SIGKILL),
            "contain: {contain}"
        );
        assert_eq!(r.interrupted, Some(libc::SIGTERM));
        sleepers.assert_gone("the stop");
        assert_eq!(s.finish(), Finish::Released);
    }
}

/// A daemon's run (one that stops on signals) drops SIGHUP: the daemon
/// never sends it, and the kernel sends it to a run whose daemon died while
/// the run was stopped (its process group orphaned). The step goes on to
/// its own end, and the run is not interrupted.
fn a_run_that_stops_on_signals_goes_on_through_a_hangup() {
    if baton_lease::job::signal_ignored(Signal::HUP.as_raw()) {
        println!("SIGHUP is ignored here; not sent");
        return;
    }
    let dir = Dir::new();
    let (ready, finished) = (dir.path("ready"), dir.path("finished"));
    let (store, _) = Store::new(Duration::from_secs(30));
    let mut events = Events::default();
    let cfg = SessionConfig {
        stop_on_signal: true,
        ..SessionConfig::default()
    };
    let mut s = start(Box::new(store), cfg, &mut events);
    let sender = send_when(&ready, Signal::HUP);
    let r = s.run(sh(
        &format!(
            "echo up > {}; sleep 1; echo done > {}",
            ready.display(),
            finished.display()
        ),
        true,
    ));
    sender.join().unwrap();
    assert_eq!(r.ending, Ending::Exited(0), "the hangup stopped the step");
    assert_eq!(r.interrupted, None);
    assert!(written(&finished), "the step did not go on to its end");
    assert_eq!(s.interrupted(), None);
    assert_eq!(s.finish(), Finish::Released);
}
