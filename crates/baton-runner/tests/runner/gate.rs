//! A step's command starts only once its process group is on the lease
//! record: never before the store said so, never when it did not, and never
//! when the runner died first.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use baton_runner::{Ending, Finish, SessionConfig, SpawnKind};
use baton_store::Renewal;
use rustix::process::Signal;

use crate::harness::role;
use crate::support::{
    Dir, Events, Store, alive, down, eventually, forever, kill, lock_file, pause, read_pid, sh,
    start, write_group,
};

listed!(TESTS:
    a_step_starts_only_once_its_group_is_recorded,
    a_step_whose_group_was_not_recorded_never_runs,
    the_lock_file_names_the_steps_group_when_it_starts,
    a_runner_killed_at_the_gate_never_runs_its_step,
);

listed!(ROLES: runner_killed_at_the_gate);

fn a_step_starts_only_once_its_group_is_recorded() {
    for contain in [true, false] {
        let dir = Dir::new();
        let ran = dir.path("ran");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (store, calls) = Store::new(Duration::from_secs(30));
        let store = store.on_record({
            let (ran, seen) = (ran.clone(), Arc::clone(&seen));
            move |_| {
                let before = ran.exists();
                // A window in which a command let through before its group
                // is recorded would write its file.
                pause(300);
                seen.lock().unwrap().push((before, ran.exists()));
                Ok(Renewal::Renewed)
            }
        });
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        let r = s.run(sh(&write_group(&ran), contain));
        assert_eq!(r.ending, Ending::Exited(0), "contain: {contain}");
        assert_eq!(s.finish(), Finish::Released);
        assert_eq!(
            *seen.lock().unwrap(),
            [(false, false)],
            "the command ran before its group was on the record (contain: {contain})"
        );
        // The group on the record is the one the command runs in.
        assert_eq!(calls.recorded(), [read_pid(&ran)], "contain: {contain}");
    }
}

/// Whether a step ended as one whose group could not be recorded.
fn unrecorded(e: &Ending) -> bool {
    matches!(e, Ending::NotStarted(f) if f.kind == SpawnKind::Other
        && f.message.contains("did not run"))
}

fn a_step_whose_group_was_not_recorded_never_runs() {
    type Answer = fn() -> Result<Renewal, baton_store::HeldError>;
    type Expected = fn(&Ending) -> bool;
    let refusals: [(&str, Answer, Expected); 3] = [
        (
            "lost",
            || Ok(Renewal::Lost("the record names another holder".into())),
            |e| *e == Ending::LeaseLost,
        ),
        (
            "unconfirmed",
            || Ok(Renewal::Unconfirmed("no answer".into())),
            unrecorded,
        ),
        ("failed", || Err(down()), unrecorded),
    ];
    for (how, answer, expected) in refusals {
        let dir = Dir::new();
        let ran = dir.path("ran");
        let (store, calls) = Store::new(Duration::from_secs(30));
        let store = store.on_record(move |_| answer());
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        let r = s.run(sh(&format!("echo ran > {}", ran.display()), true));
        assert!(expected(&r.ending), "{how}: the step {:?}", r.ending);
        if r.ending == Ending::LeaseLost {
            assert!(s.lost().is_some_and(|w| w.contains("did not run")));
        }
        assert_eq!(r.code, None, "{how}");
        let _ = s.finish();
        let group = calls.recorded()[0];
        assert!(
            !alive(group),
            "{how}: the step's process outlived its refusal"
        );
        assert!(!ran.exists(), "{how}: the command ran unrecorded");
    }
}

fn the_lock_file_names_the_steps_group_when_it_starts() {
    for contain in [true, false] {
        let dir = Dir::new();
        let path = dir.path("job.lock");
        let (_lock, lease) = lock_file(&path, Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
        // The command's first act: find its group in the lock file.
        let r = s.run(sh(
            &format!(
                "read -r _ _ _ _ pg _ < /proc/self/stat; grep -q \"pgid=$pg \" {}",
                path.display()
            ),
            contain,
        ));
        assert_eq!(
            r.ending,
            Ending::Exited(0),
            "the lock file did not name the step's group when it started (contain: {contain})"
        );
        assert_eq!(s.finish(), Finish::Released);
    }
}

/// Runs a step whose runner dies (SIGKILL) while the store records its
/// group: arguments `DIR contain|plain`; writes the group to `DIR/group`;
/// the command would write `DIR/ran`.
fn runner_killed_at_the_gate() {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(&args[1]);
    let group = dir.join("group");
    let (store, _) = Store::new(Duration::from_secs(30));
    let store = store.on_record(move |pgid| {
        std::fs::write(&group, format!("{pgid}\n")).unwrap();
        kill(std::process::id(), Signal::KILL);
        forever()
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let _ = s.run(sh(
        &format!("echo ran > {}", dir.join("ran").display()),
        args[2] == "contain",
    ));
    unreachable!("the runner outlived its own SIGKILL");
}

fn a_runner_killed_at_the_gate_never_runs_its_step() {
    for contain in ["contain", "plain"] {
        let dir = Dir::new();
        let mut runner = role("gate::runner_killed_at_the_gate")
            .arg(dir.path(""))
            .arg(contain)
            .spawn()
            .unwrap();
        let status = baton_testkit::wait_for_exit(&mut runner, "the runner");
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{contain}: {status}");
        let group = read_pid(&dir.path("group"));
        eventually("the step's process held at the gate to end", || {
            !alive(group)
        });
        assert!(
            !dir.path("ran").exists(),
            "{contain}: the step ran although its runner died before opening the gate"
        );
    }
}
