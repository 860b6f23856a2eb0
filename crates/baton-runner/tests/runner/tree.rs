//! A step is over only when its whole process tree is gone: what its
//! command left in its group and what it detached (the runner is their
//! subreaper) is stopped before the step ends, and the lease is never free
//! while any of it runs. Helper commands running beside a step are not part
//! of it.

use std::time::Duration;

use baton_runner::{Ending, Event, Finish, HookCommand, HookOutcome, SessionConfig};

use crate::support::{
    Dir, Events, PATIENCE, Sleepers, Store, alive, background, eventually, lock_file, read_pid,
    record, sh, start, wait_file, write_pid,
};

listed!(TESTS:
    a_step_is_over_only_when_its_whole_tree_is_gone,
    the_lease_is_released_only_once_the_last_process_of_a_step_is_gone,
    a_hook_running_beside_a_step_is_not_part_of_its_tree,
);

fn a_step_is_over_only_when_its_whole_tree_is_gone() {
    for contain in [true, false] {
        let dir = Dir::new();
        let sleepers = Sleepers::in_dir(&dir.path(""));
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        // The command exits and leaves both running, deaf to SIGTERM.
        let spec = sh(&format!("{}; exit 0", sleepers.start(true)), contain);
        let grace = spec.kill_grace;
        let r = s.run(spec);
        // The command's own ending stands; its leftovers were stopped, with
        // SIGKILL once the grace had passed, before the step ended.
        assert_eq!(r.ending, Ending::Exited(0), "contain: {contain}");
        assert!(r.duration >= grace, "{:?}", r.duration);
        sleepers.assert_gone("its step");
        assert_eq!(s.finish(), Finish::Released);
        assert_eq!(
            events.count(|e| matches!(e, Event::Leftovers { count } if *count >= 1)),
            1,
            "{:?}",
            events.0
        );
    }
}

fn the_lease_is_released_only_once_the_last_process_of_a_step_is_gone() {
    for contain in [true, false] {
        let dir = Dir::new();
        let (lock, lease) = lock_file(&dir.path("job.lock"), Duration::from_secs(30));
        let token = lease.token();
        let mut events = Events::default();
        let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
        let d = dir.path("detached");
        // Another process's view of the lock file, from the moment the
        // detached process runs until the lease is free: at that moment,
        // nothing of the step may run.
        let watcher = std::thread::spawn({
            let (lock, d) = (lock.clone(), d.clone());
            move || {
                let pid = read_pid(&d);
                let mut ran = false;
                eventually("the lease to be released", || {
                    let ours = record(&lock).is_some_and(|h| h.token == token);
                    // Read after the record: a process alive now was alive
                    // when the record was read.
                    ran = !ours && alive(pid);
                    !ours
                });
                ran
            }
        });
        let r = s.run(sh(
            &format!(
                "{} {}; exit 0",
                background("sleep 120", &d, true, true),
                wait_file(&d)
            ),
            contain,
        ));
        assert_eq!(r.ending, Ending::Exited(0));
        assert_eq!(s.finish(), Finish::Released);
        assert!(
            !watcher.join().unwrap(),
            "the lease was free while a process of the step ran (contain: {contain})"
        );
        assert!(!alive(read_pid(&d)));
    }
}

fn a_hook_running_beside_a_step_is_not_part_of_its_tree() {
    for contain in [true, false] {
        let dir = Dir::new();
        let (hook_pid, go) = (dir.path("hook"), dir.path("go"));
        let (store, _) = Store::new(Duration::from_secs(30));
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        let hook = std::thread::spawn({
            let script = format!("{}; {}", write_pid(&hook_pid), wait_file(&go));
            move || {
                baton_runner::hook::run(
                    &HookCommand::Shell(script),
                    b"{}",
                    &[],
                    std::process::Stdio::null(),
                    PATIENCE,
                )
            }
        });
        let pid = read_pid(&hook_pid);
        let r = s.run(sh("exit 0", contain));
        assert_eq!(r.ending, Ending::Exited(0));
        assert!(
            alive(pid),
            "the step's stop took a hook along (contain: {contain})"
        );
        std::fs::write(&go, "1\n").unwrap();
        assert_eq!(hook.join().unwrap(), HookOutcome::Done);
        assert_eq!(s.finish(), Finish::Released);
        assert_eq!(
            events.count(|e| matches!(e, Event::Leftovers { .. })),
            0,
            "a hook was taken for a step's leftover: {:?}",
            events.0
        );
    }
}
