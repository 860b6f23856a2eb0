//! The documented exit codes, each produced for real.

use crate::support::{Env, code, processes_of_run, signal, stderr};

#[test]
fn the_commands_status_passes_through() {
    let env = Env::new();
    assert_eq!(code(&env.exec_sh("job", &[], "exit 0")), 0);
    assert_eq!(code(&env.exec_sh("job", &[], "exit 3")), 3);
    assert_eq!(code(&env.exec_sh("job", &[], "exit 200")), 200);
}

#[test]
fn death_by_signal_is_128_plus_n() {
    let env = Env::new();
    assert_eq!(code(&env.exec_sh("job", &[], "kill -9 $$")), 137);
    assert_eq!(code(&env.exec_sh("job", &[], "kill -15 $$")), 143);
}

#[test]
fn timeout_is_124_and_the_group_is_stopped() {
    let env = Env::new();
    let o = env.exec_sh(
        "job",
        &["--timeout", "500ms", "--kill-grace", "1s"],
        "trap '' TERM; sleep 30",
    );
    assert_eq!(code(&o), 124, "{}", stderr(&o));
    assert!(stderr(&o).contains("timed out"));
}

#[test]
fn not_found_is_127_and_not_executable_is_126() {
    let env = Env::new();
    let o = env.run(&["exec", "--name", "job", "--", "/no/such/command"]);
    assert_eq!(code(&o), 127, "{}", stderr(&o));
    let script = env.path("not-executable");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
    let o = env.run(&["exec", "--name", "job", "--", script.to_str().unwrap()]);
    assert_eq!(code(&o), 126, "{}", stderr(&o));
    // Neither left the lock held.
    assert_eq!(crate::support::verdict(&env, "job"), "free");
}

#[test]
fn bad_options_are_125_and_name_the_problem() {
    let env = Env::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["exec", "--name", "a/b", "--", "true"],
            "invalid lock name",
        ),
        (&["exec", "--name", "..", "--", "true"], "invalid lock name"),
        (
            &["exec", "--name", "x", "--ttl", "soon", "--", "true"],
            "--ttl",
        ),
        (
            &["exec", "--name", "x", "--ttl", "10ms", "--", "true"],
            "--ttl",
        ),
        (
            &["exec", "--name", "x", "--kill-grace", "1m", "--", "true"],
            "--takeover-grace",
        ),
        (
            &["exec", "--name", "x", "--busy-exit", "0", "--", "true"],
            "--busy-exit",
        ),
        (
            &["exec", "--name", "x", "--signal", "NOPE", "--", "true"],
            "--signal",
        ),
        (
            &[
                "exec",
                "--name",
                "x",
                "--alert-on",
                "busy,nope",
                "--",
                "true",
            ],
            "--alert-on",
        ),
        (
            &[
                "exec",
                "--name",
                "x",
                "--kill-grace",
                "0ms",
                "--takeover-grace",
                "1s",
                "--",
                "true",
            ],
            "lengthen --takeover-grace",
        ),
        (
            &["exec", "--name", "x", "--run-id", "has space", "--", "true"],
            "--run-id",
        ),
        (&["exec", "--name", "x"], "COMMAND"),
        (&["exec", "--", "true"], "--name"),
        (
            &["exec", "--name", "x", "--lock", "/tmp/y", "--", "true"],
            "--lock",
        ),
    ];
    for (args, needle) in cases {
        let o = env.run(args);
        assert_eq!(code(&o), 125, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(needle),
            "{args:?}: {:?} lacks {needle:?}",
            stderr(&o)
        );
    }
}

#[test]
fn an_unusable_state_directory_is_125() {
    let env = Env::new();
    let file = env.path("a-file");
    std::fs::write(&file, "").unwrap();
    let o = env.run(&[
        "--state-dir",
        file.to_str().unwrap(),
        "exec",
        "--name",
        "x",
        "--",
        "true",
    ]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(file.to_str().unwrap()),
        "{}",
        stderr(&o)
    );
}

/// A relative `--state-dir` names another directory, and so other locks,
/// from each directory a run is started in: refused, as `BATON_STATE_DIR`
/// is, by `exec` (125) and by the scheduler's commands (2).
#[test]
fn a_relative_state_directory_is_refused() {
    let env = Env::new();
    for (args, exit) in [
        (
            &["--state-dir", "st", "exec", "--name", "x", "--", "true"][..],
            125,
        ),
        (
            &["exec", "--state-dir", "st", "--name", "x", "--", "true"],
            125,
        ),
        (&["--state-dir", "st", "status"], 2),
        (&["run", "j", "--state-dir", "./st"], 2),
    ] {
        let o = env.run(args);
        assert_eq!(code(&o), exit, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("a state directory must be absolute"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_missing_lock_directory_is_125_and_named() {
    let env = Env::new();
    let lock = env.path("nowhere/x.lock");
    let o = env.run(&["exec", "--lock", lock.to_str().unwrap(), "--", "true"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
}

#[test]
fn the_job_sees_its_lease_in_its_environment() {
    let env = Env::new();
    let out = env.path("env");
    let o = env.exec_sh(
        "job",
        &["--run-id", "nightly-42"],
        &format!(
            "echo \"$BATON_LOCK $BATON_TOKEN $BATON_FENCE $BATON_RUN_ID\" > {}",
            out.display()
        ),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let line = std::fs::read_to_string(&out).unwrap();
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f[0], env.lock("job").to_str().unwrap());
    assert_eq!(f[1].len(), 16);
    assert!(f[2].parse::<u64>().unwrap() > 0);
    assert_eq!(f[3], "nightly-42");
}

#[test]
fn the_fence_strictly_increases_over_runs_and_a_deleted_file() {
    let env = Env::new();
    let out = env.path("fence");
    let mut last = 0u64;
    for i in 0..20 {
        if i == 10 {
            std::fs::remove_file(env.lock("job")).unwrap();
        }
        let o = env.exec_sh(
            "job",
            &[],
            &format!("echo $BATON_FENCE > {}", out.display()),
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let f: u64 = std::fs::read_to_string(&out)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(f > last, "run {i}: fence {f} after {last}");
        last = f;
    }
}

/// Output that could not be written whole (stdout on a full disk) is no
/// success: it is said, and the exit is 2 for the scheduler's commands and
/// the printing ones (125 for `lock`, by hand; a doctor that found a check
/// failing keeps its 1); a reader that went away (a closed pipe) is no
/// failure.
#[test]
fn output_a_full_disk_cut_short_is_said_and_no_success() {
    let s = crate::sched::Sched::new("[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    assert_eq!(code(&s.run(&["run", "j"])), 0);
    for (args, exit) in [
        (&["history", "--json"][..], 2),
        (&["status"], 2),
        (&["config", "--json"], 2),
        (&["calendar", "--job", "j"], 2),
        (&["completions", "bash"], 2),
        (&["man", "exec"], 2),
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = s.cmd(args).stdout(full).output().unwrap();
        assert_eq!(code(&o), exit, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("failed to write standard output"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // A doctor whose check fails keeps its 1, and its lost report is said
    // all the same.
    let broken = crate::sched::Sched::new("[jobs.j]\nschedule = \"never\"\nrun = \"true\"\n");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = broken.cmd(&["doctor"]).stdout(full).output().unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("failed to write standard output"),
        "{}",
        stderr(&o)
    );
    // A pipe closed by its reader before a byte was read.
    let mut child = s
        .cmd(&["history", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_lock_file_removed_under_a_live_exec_makes_the_next_exec_busy_until_it_ends() {
    // The lock file is the lease; its holder still stands at the path by its
    // presence, so a second exec at the emptied path does not start beside
    // it (75), and once the holder ends the lock is free again.
    let env = Env::new();
    let holder = env.hold("job", &[], 60);
    std::fs::remove_file(env.lock("job")).unwrap();
    let o = env.exec_sh("job", &["--verbose"], "true");
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no lock file is at the path"),
        "{}",
        stderr(&o)
    );
    assert!(!env.lock("job").exists(), "the refusal left a lock file");
    env.end(holder);
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_lease_found_lost_only_at_the_release_exits_76_and_says_how_the_command_ended() {
    // The command removes its own lock file and ends before any renewal:
    // its release finds the lease lost. The command was not stopped, so
    // the alert says how it ended, and 76 says the lease was lost.
    let env = Env::new();
    let o = env.exec_sh("job", &[], "rm -f \"$BATON_LOCK\"; exit 3");
    assert_eq!(code(&o), 76, "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.contains("found when the lease was released")
            && said.contains("already ended on its own (exited with status 3) and was not stopped"),
        "{said}"
    );
}

#[test]
fn an_exec_whose_open_file_limit_is_taken_away_still_ends_and_frees_its_lock() {
    // The command lowers its supervisor's open-file limit below what the
    // supervisor holds (`$PPID` is the supervisor when uncontained) and
    // leaves a detached `sleep 5`. The supervisor cannot read /proc any
    // more; it says so, keeps the lease while the sleep runs, and lets go
    // once it is gone: the command's status, and the lock free for the next.
    // The sleep is long enough to be still there when the supervisor looks.
    let env = Env::new();
    let run = format!("nofile-{}", std::process::id());
    let o = env.exec_sh(
        "job",
        &["--no-contain", "--verbose", "--run-id", &run],
        "prlimit --pid $PPID --nofile=3:3 || exit 9; setsid sleep 5 & exit 0",
    );
    // Nothing of the run outlives the test, whatever it found.
    for p in processes_of_run(&run) {
        signal(p, rustix::process::Signal::KILL);
    }
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let said = stderr(&o);
    // With CAP_SYS_RESOURCE the supervisor gives itself its limit back and
    // sees the tree: then it stops the sleep as any leftover, and says so.
    assert!(
        said.contains("cannot be seen") && said.contains("baton keeps the lease")
            || said.contains("left 1 process running"),
        "{said}"
    );
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}
