//! A contained step dies with its runner, however the runner dies: `kill
//! -9` included, detached processes included. Where the kernel refuses a
//! PID namespace (not root, and no user namespaces) there is nothing to
//! check, and the test says so.

use std::path::PathBuf;
use std::time::Duration;

use baton_runner::{Event, SessionConfig};
use rustix::process::Signal;

use crate::harness::role;
use crate::support::{Dir, Sleepers, Store, alive, eventually, kill, read_pid, sh, start, written};

listed!(TESTS: a_runner_killed_with_sigkill_takes_its_contained_step_along);

listed!(ROLES: runner_of_a_detaching_step);

/// Runs a contained step that starts a process in its group and one
/// detached (pids in `DIR/grouped`, `DIR/detached`), then writes
/// `DIR/ready` and waits; `DIR/uncontained` says the kernel refused.
fn runner_of_a_detaching_step() {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap());
    let sleepers = Sleepers::in_dir(&dir);
    let uncontained = dir.join("uncontained");
    let (store, _) = Store::new(Duration::from_secs(30));
    let mut report = |e: Event| {
        if let Event::Uncontained { why } = e {
            std::fs::write(&uncontained, format!("{why}\n")).unwrap();
        }
    };
    let mut s = start(Box::new(store), SessionConfig::default(), &mut report);
    let _ = s.run(sh(
        &format!(
            "{}; echo up > {}; wait",
            sleepers.start(false),
            dir.join("ready").display()
        ),
        true,
    ));
    unreachable!("the runner outlived its SIGKILL");
}

fn a_runner_killed_with_sigkill_takes_its_contained_step_along() {
    let dir = Dir::new();
    let mut runner = role("contain::runner_of_a_detaching_step")
        .arg(dir.path(""))
        .spawn()
        .unwrap();
    eventually("the step to run", || written(&dir.path("ready")));
    let sleepers = Sleepers::in_dir(&dir.path(""));
    let (d, g) = (read_pid(&sleepers.detached), read_pid(&sleepers.grouped));
    kill(runner.id(), Signal::KILL);
    let _ = runner.wait();
    if let Ok(why) = std::fs::read_to_string(dir.path("uncontained")) {
        kill(d, Signal::KILL);
        kill(g, Signal::KILL);
        println!(
            "the kernel refused a PID namespace ({}); nothing to check",
            why.trim()
        );
        return;
    }
    eventually("the step's grouped process to die with its runner", || {
        !alive(g)
    });
    eventually("the step's detached process to die with its runner", || {
        !alive(d)
    });
}
