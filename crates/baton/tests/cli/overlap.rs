//! A second run never starts while the first holds the lease; waiting works;
//! a long job keeps its lease; many concurrent execs never overlap.

use crate::support::{Env, code, eventually, pause, stderr, wait_for_file};

#[test]
fn a_second_exec_is_skipped_with_75_and_its_command_never_starts() {
    let env = Env::new();
    let first = env.hold("job", &[], 60);
    let marker = env.path("second-ran");
    let o = env.exec_sh("job", &[], &format!("touch {}", marker.display()));
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(!marker.exists(), "the second command ran");
    // Quiet, as flock -n is, while the holder is healthy.
    assert_eq!(stderr(&o), "");
    let o = env.exec_sh(
        "job",
        &["--verbose"],
        &format!("touch {}", marker.display()),
    );
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(!marker.exists(), "the second command ran");
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    for needle in ["job", "busy", "pid", "held for", "last renewed"] {
        assert!(err.contains(needle), "{err:?} lacks {needle:?}");
    }
    assert_eq!(env.end(first), 143);
}

#[test]
fn busy_exit_is_configurable() {
    let env = Env::new();
    let first = env.hold("job", &[], 60);
    let o = env.exec_sh("job", &["--busy-exit", "3"], "true");
    assert_eq!(code(&o), 3);
    assert_eq!(env.end(first), 143);
}

#[test]
fn with_wait_the_second_starts_once_the_first_ends() {
    let env = Env::new();
    let started = env.path("started");
    let first_done = env.path("first-done");
    let mut first = env.spawn_sh(
        "job",
        &[],
        &format!(
            "echo up > {}; sleep 1; echo done > {}",
            started.display(),
            first_done.display()
        ),
    );
    wait_for_file(&started);
    let o = env.exec_sh(
        "job",
        &["--wait", "60s"],
        &format!("test -f {}", first_done.display()),
    );
    assert_eq!(
        code(&o),
        0,
        "the second ran before the first ended: {}",
        stderr(&o)
    );
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_job_running_for_many_ttls_keeps_its_lease() {
    let env = Env::new();
    let started = env.path("started");
    let go = env.path("go");
    // TTL 1 s (shorter could make a starved holder fence itself on a loaded
    // machine): the job runs until the checks below are done, which takes
    // at least five of them. It waits for a file rather than a time, so it
    // is still running whatever the checks cost.
    let mut long = env.spawn_sh(
        "job",
        &["--ttl", "1s"],
        &format!(
            "echo up > {}; while [ ! -e {} ]; do sleep 0.05; done",
            started.display(),
            go.display()
        ),
    );
    wait_for_file(&started);
    for _ in 0..12 {
        let o = env.exec_sh("job", &[], "true");
        assert_eq!(code(&o), 75, "a live job's lease was taken: {}", stderr(&o));
        pause(400);
    }
    std::fs::write(&go, "go\n").unwrap();
    assert!(baton_testkit::wait_for_exit(&mut long, "the long job to end").success());
    assert_eq!(crate::support::verdict(&env, "job"), "free");
}

#[test]
fn concurrent_execs_never_overlap() {
    let env = Env::new();
    let witness = env.path("witness");
    let script = format!(
        "set -C; : > {w} || {{ echo OVERLAP; exit 99; }}; sleep 0.01; rm -f {w}",
        w = witness.display()
    );
    let runs = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..24 {
            s.spawn(|| {
                for _ in 0..3 {
                    let o = env.exec_sh("job", &["--wait", "120s"], &script);
                    assert_eq!(code(&o), 0, "{}", stderr(&o));
                    runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                }
            });
        }
    });
    assert_eq!(runs.into_inner(), 72);
    eventually("the lock to be free", || {
        crate::support::verdict(&env, "job") == "free"
    });
}
