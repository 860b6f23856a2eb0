//! A runner whose open-file limit is taken away under it (`prlimit
//! --nofile=3:3` by its owner, below the descriptors it already holds)
//! still ends its step once the step's tree is gone, and lets go of its
//! lease: it gives the limit back where the kernel allows, and otherwise
//! decides without reading `/proc` (it reaps its exited children and asks
//! whether it has any left), says once that it cannot see the tree, and
//! keeps the lease while anything of the step may run.

use std::io::Read;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use baton_runner::SessionConfig;
use baton_testkit::mkfifo;
use rustix::process::{Pid, Resource, Rlimit, Signal};

use crate::harness::role;
use crate::support::{
    Dir, Events, PATIENCE, Store, alive, background, kill, pause, read_pid, sh, start, wait_file,
};

listed!(TESTS:
    a_contained_step_ends_and_its_lease_is_let_go_when_the_runner_loses_its_descriptors,
    an_uncontained_step_ends_and_its_lease_is_let_go_when_the_runner_loses_its_descriptors,
);

listed!(ROLES: runner_whose_descriptors_are_taken_away);

/// Runs one step (contained when its second argument is `1`) that leaves a
/// detached `sleep 3` (host pid in `DIR/leftover`) and exits once `DIR/go`,
/// a named pipe, is closed by its writer; then prints how the step ended,
/// how the lease was let go, and whether its open-file limit was given
/// back, beside every event (on standard output, which needs no new
/// descriptor).
fn runner_whose_descriptors_are_taken_away() {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap());
    let contain = std::env::args().nth(2).as_deref() == Some("1");
    let leftover = dir.join("leftover");
    let (store, _) = Store::new(Duration::from_secs(30));
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let r = s.run(sh(
        &format!(
            "{} {}; cat {} > /dev/null; exit 0",
            background("sleep 3", &leftover, true, false),
            wait_file(&leftover),
            dir.join("go").display()
        ),
        contain,
    ));
    let finish = s.finish();
    let limit = rustix::process::getrlimit(Resource::Nofile);
    println!("ending: {:?}", r.ending);
    println!("finish: {finish:?}");
    println!("regained: {}", limit.current != Some(3));
}

fn a_contained_step_ends_and_its_lease_is_let_go_when_the_runner_loses_its_descriptors() {
    taken_away(true);
}

fn an_uncontained_step_ends_and_its_lease_is_let_go_when_the_runner_loses_its_descriptors() {
    taken_away(false);
}

fn taken_away(contain: bool) {
    let dir = Dir::new();
    let go = dir.path("go");
    mkfifo(&go);
    let mut runner = role("descriptors::runner_whose_descriptors_are_taken_away")
        .arg(dir.path(""))
        .arg(if contain { "1" } else { "0" })
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let leftover = read_pid(&dir.path("leftover"));
    // Opened once the step opens it to read: the step runs, past its start.
    let writer = std::fs::OpenOptions::new().write(true).open(&go).unwrap();
    let pid = Pid::from_raw(i32::try_from(runner.id()).unwrap()).unwrap();
    rustix::process::prlimit(
        Some(pid),
        Resource::Nofile,
        Rlimit {
            current: Some(3),
            maximum: Some(3),
        },
    )
    .unwrap();
    // The step's command reads its end of file and exits; its detached
    // `sleep 3` is left.
    drop(writer);
    let deadline = PATIENCE + Duration::from_secs(3);
    let mut waited = Duration::ZERO;
    while runner.try_wait().unwrap().is_none() {
        if waited >= deadline {
            kill(runner.id(), Signal::KILL);
            kill(leftover, Signal::KILL);
            panic!("the runner never ended its step once its descriptors were taken away");
        }
        pause(10);
        waited += Duration::from_millis(10);
    }
    let mut out = String::new();
    runner
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    println!("{out}");
    assert!(runner.wait().unwrap().success(), "{out}");
    assert!(out.contains("ending: Exited(0)"), "{out}");
    assert!(out.contains("finish: Released"), "{out}");
    // The lease was let go only once nothing of the step ran.
    assert!(!alive(leftover), "the step's leftover outlived its lease");
    if out.contains("regained: true") {
        // The kernel gave the limit back (CAP_SYS_RESOURCE): the tree was
        // seen, and nothing had to be said.
        assert_eq!(out.matches("event: Unseen").count(), 0, "{out}");
    } else {
        assert_eq!(out.matches("event: Unseen").count(), 1, "{out}");
    }
}
