//! Crashes and stops: kill -9 of baton with and without its job, SIGSTOP of
//! baton, a forced break under a running exec, orphans left by the job.

use std::os::unix::process::CommandExt;

use rustix::process::Signal;

use crate::support::{
    Env, alive, background, code, eventually, pause, signal, state_of, stderr, verdict,
    wait_for_file, wait_pid_file, write_pid,
};

#[test]
fn killing_baton_and_its_job_frees_the_lock_at_once() {
    let env = Env::new();
    let pidfile = env.path("pid");
    let mut b = env.spawn_sh(
        "job",
        &["--ttl", "1h", "--takeover-grace", "1h", "--no-contain"],
        &format!("{}; exec sleep 60", write_pid(&pidfile)),
    );
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    signal(b.id() as i32, Signal::KILL);
    b.wait().unwrap();
    signal(job, Signal::KILL);
    eventually("the job to be gone", || !alive(job));
    // No TTL to wait out (it is an hour): evidence frees it.
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("dead holder"), "{}", stderr(&o));
}

#[test]
fn without_a_namespace_killing_baton_leaves_an_orphan_that_break_kill_recovers() {
    let env = Env::new();
    let pidfile = env.path("pid");
    let mut b = env.spawn_sh(
        "job",
        &["--no-contain"],
        &format!("{}; exec sleep 60", write_pid(&pidfile)),
    );
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    signal(b.id() as i32, Signal::KILL);
    b.wait().unwrap();
    assert!(alive(job));
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 75);
    assert!(stderr(&o).contains("orphaned"), "{}", stderr(&o));
    assert_eq!(verdict(&env, "job"), "orphaned");
    // A plain break refuses: the job may still be writing.
    let o = env.run(&["lock", "break", "job"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let o = env.run(&["lock", "break", "job", "--kill", "--grace", "2s"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    eventually("the orphaned job to be stopped", || !alive(job));
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_stopped_baton_is_hung_and_resumes_to_finish_and_release() {
    let env = Env::new();
    let mut b = env.hold("job", &["--ttl", "1s"], 6);
    signal(b.id() as i32, Signal::STOP);
    pause(3000); // three TTLs without a renewal
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(stderr(&o).contains("hung"), "{}", stderr(&o));
    signal(b.id() as i32, Signal::CONT);
    let status = b.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn a_stopped_baton_cannot_keep_its_job_past_its_lease_its_init_kills_it() {
    // A runner stopped (SIGSTOP) renews nothing and stops nothing, while
    // its job runs on; a judge on another host takes the lease once it has
    // expired. The job's init, which runs on, kills the job by the
    // deadline the runner sent with its last renewal (TTL, renewal wait
    // and kill grace after it), before that lease may be taken.
    let env = Env::new();
    let pidfile = env.path("pid");
    let b = env.spawn_sh(
        "job",
        &[
            "--ttl",
            "1s",
            "--kill-grace",
            "200ms",
            "--takeover-grace",
            "2s",
        ],
        &format!("{}; exec sleep 60", write_pid(&pidfile)),
    );
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    signal(b.id() as i32, Signal::STOP);
    eventually("the job to be killed while its runner is stopped", || {
        !alive(job)
    });
    signal(b.id() as i32, Signal::CONT);
    let o = b.wait_with_output().unwrap();
    // The lease is lost, as the runner finds on waking: exit 76.
    assert_eq!(code(&o), 76, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("init killed the job at its deadline"),
        "{}",
        stderr(&o)
    );
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn a_forced_break_under_a_running_exec_stops_its_job_and_exits_76() {
    let env = Env::new();
    let pidfile = env.path("pid");
    // Renewals every 100 ms; kill grace 1 s: the job is gone within about
    // 1.1 s of the break (the documented bound is ttl/3 + kill grace).
    let b = env.spawn_sh(
        "job",
        &["--ttl", "300ms", "--kill-grace", "1s"],
        &format!("{}; exec sleep 60", write_pid(&pidfile)),
    );
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    let o = env.run(&["lock", "break", "job", "--force"]);
    assert_eq!(code(&o), 0, "{}", crate::support::stderr(&o));
    assert!(crate::support::stdout(&o).contains("replaced"));
    let out = b.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(76),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!alive(job), "the job outlived its lost lease");
    assert!(String::from_utf8_lossy(&out.stderr).contains("lease lost"));
    let log = std::fs::read_to_string(env.state().join("breaks.log")).unwrap();
    assert!(
        log.contains("forced") && log.contains("state=held"),
        "{log}"
    );
}

#[test]
fn a_backgrounded_grandchild_is_stopped_before_the_lease_is_released() {
    let env = Env::new();
    let pidfile = env.path("grandchild");
    let o = env.exec_sh(
        "job",
        &["--kill-grace", "2s"],
        &format!(
            "{} {}",
            background("sleep 60", &pidfile, false),
            wait_pid_file(&pidfile)
        ),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let grandchild: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually("the grandchild to be stopped", || !alive(grandchild));
    assert!(
        stderr(&o).contains("left 1 process running"),
        "{}",
        stderr(&o)
    );
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn the_job_starts_only_once_its_group_is_on_the_record() {
    let env = Env::new();
    // The fifth field of /proc/self/stat is the group, as the host numbers
    // it (the job's group is led by its namespace's init).
    let o = env.exec_sh(
        "job",
        &[],
        "read -r _ _ _ _ pg _ < /proc/self/stat; grep -q \"pgid=$pg \" \"$BATON_LOCK\"",
    );
    assert_eq!(
        code(&o),
        0,
        "the record did not name the job's group when it started: {}",
        stderr(&o)
    );
}

#[test]
fn signals_to_baton_reach_the_job_and_the_lease_is_released() {
    let env = Env::new();
    let started = env.path("started");
    let got = env.path("got");
    let b = env.spawn_sh(
        "job",
        &[],
        &format!(
            "trap 'echo TERM > {g}; exit 7' TERM; echo up > {s}; while :; do sleep 0.05; done",
            g = got.display(),
            s = started.display()
        ),
    );
    wait_for_file(&started);
    signal(b.id() as i32, Signal::TERM);
    let out = b.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(wait_for_file(&got), "TERM");
    assert_eq!(verdict(&env, "job"), "free");
}

/// SIGUSR1, SIGUSR2 and SIGALRM are the job's: passed on, they stop
/// nothing; baton exits as its command does, and frees the lock. (Their
/// default action ended baton and left the command unsupervised.)
#[test]
fn signals_meant_for_the_job_reach_it_and_stop_nothing() {
    for (sig, name) in [
        (Signal::USR1, "USR1"),
        (Signal::USR2, "USR2"),
        (Signal::ALARM, "ALRM"),
    ] {
        let env = Env::new();
        let started = env.path("started");
        let got = env.path("got");
        let b = env.spawn_sh(
            "job",
            &[],
            &format!(
                "trap 'echo {name} > {g}' {name}; echo up > {s}; while [ ! -s {g} ]; do sleep \
                 0.05; done; exit 5",
                g = got.display(),
                s = started.display()
            ),
        );
        wait_for_file(&started);
        signal(b.id() as i32, sig);
        let out = b.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(5),
            "SIG{name}: {:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(wait_for_file(&got), name);
        assert_eq!(verdict(&env, "job"), "free");
    }
}

/// SIGTSTP to baton (Ctrl-Z at a terminal whose foreground is baton's, as
/// when the command's input is not the terminal; `kill -TSTP`) stops its
/// command with it, as job control stops a whole job; SIGCONT continues
/// both, and the run ends as its command does. (By its default action it
/// stopped baton alone, and the command ran on unsupervised.)
#[test]
fn sigtstp_stops_baton_with_its_command_and_sigcont_continues_both() {
    let env = Env::new();
    let pidfile = env.path("pid");
    let (go, done) = (env.path("go"), env.path("done"));
    // A group of its own whose parent (this test) is in another group of
    // the same session: one a stop may stop, as a shell's job is. The
    // command runs until it is told to go, so it is there to be stopped.
    let mut b = env
        .cmd(&[
            "exec",
            "--name",
            "job",
            "--",
            "sh",
            "-c",
            &format!(
                "{}; while [ ! -e {} ]; do sleep 0.05; done; echo done > {}",
                write_pid(&pidfile),
                go.display(),
                done.display()
            ),
        ])
        .stdin(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    signal(b.id() as i32, Signal::TSTP);
    eventually("baton and its command to be stopped", || {
        state_of(b.id() as i32) == Some('T') && state_of(job) == Some('T')
    });
    // Told to go while stopped: a command that ran on would finish.
    std::fs::write(&go, "go\n").unwrap();
    pause(1500);
    assert!(!done.exists(), "the command ran on while baton was stopped");
    assert_eq!(verdict(&env, "job"), "live");
    signal(b.id() as i32, Signal::CONT);
    let status = baton_testkit::wait_for_exit(&mut b, "baton, continued, to finish");
    assert!(status.success(), "{status:?}");
    assert_eq!(wait_for_file(&done), "done");
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn a_holder_that_cannot_renew_for_a_ttl_stops_its_job_and_exits_76() {
    let env = Env::new();
    let pidfile = env.path("pid");
    let b = env.spawn_sh(
        "job",
        &["--ttl", "500ms", "--kill-grace", "1s"],
        &format!("{}; exec sleep 60", write_pid(&pidfile)),
    );
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    // Another process keeps the lock file's mutex: every renewal times out.
    let mut blocker = std::process::Command::new("flock")
        .arg(env.lock("job"))
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    let out = b.wait_with_output().unwrap();
    let _ = blocker.kill();
    let _ = blocker.wait();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(76), "{err}");
    assert!(err.contains("could not renew"), "{err}");
    assert!(
        !alive(job),
        "the job outlived a lease its holder could not renew"
    );
}

#[test]
fn the_job_inherits_no_descriptor_of_the_lock() {
    let env = Env::new();
    let o = env.exec_sh(
        "job",
        &[],
        "read -r p _ < /proc/self/stat; for f in /proc/$p/fd/*; do readlink \"$f\"; done \
         | grep -c '\\.lock' && exit 1 || exit 0",
    );
    assert_eq!(
        code(&o),
        0,
        "the job holds a descriptor of a lock file: {}",
        crate::support::stdout(&o)
    );
}

#[test]
fn a_detached_descendant_is_stopped_before_the_lease_is_released() {
    let env = Env::new();
    let pidfile = env.path("detached");
    // setsid leaves the job's process group; baton, its subreaper, still
    // finds it.
    let o = env.exec_sh(
        "job",
        &["--kill-grace", "2s"],
        &format!(
            "{} {}",
            background("sleep 60", &pidfile, true),
            wait_pid_file(&pidfile)
        ),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let detached: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !alive(detached),
        "a detached process outlived the release of its lease"
    );
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn a_timeout_stops_descendants_that_left_the_group() {
    let env = Env::new();
    let pidfile = env.path("inner");
    // GNU timeout moves itself into a process group of its own.
    let o = env.exec_sh(
        "job",
        &["--timeout", "1s", "--kill-grace", "1s"],
        &format!(
            "timeout 60 sh -c 'read -r p _ < /proc/self/stat; echo $p > {}; exec sleep 60'",
            pidfile.display()
        ),
    );
    assert_eq!(code(&o), 124, "{}", stderr(&o));
    let inner: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        !alive(inner),
        "a process outside the job's group survived the timeout"
    );
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn a_closed_stderr_never_frees_the_lease_while_the_job_runs() {
    let env = Env::new();
    let (started, go, alerts) = (env.path("started"), env.path("go"), env.path("alerts"));
    let collector = format!("cat >> {}", alerts.display());
    // The job runs until the checks below are done.
    let mut b = env
        .cmd(&[
            "exec",
            "--name",
            "job",
            "--max-runtime",
            "100ms",
            "--alert-command",
            &collector,
            "--",
            "sh",
            "-c",
        ])
        .arg(format!(
            "echo up > {}; while [ ! -e {} ]; do sleep 0.05; done",
            started.display(),
            go.display()
        ))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(b.stderr.take()); // the reader goes away: every write to stderr fails
    wait_for_file(&started);
    // The alert command is started after the alert's line is written to
    // stderr: once it has the alert, that write has failed.
    eventually("the overrunning alert", || {
        std::fs::read_to_string(&alerts).is_ok_and(|a| a.contains("overrunning"))
    });
    assert_eq!(verdict(&env, "job"), "live");
    assert_eq!(code(&env.exec_sh("job", &[], "true")), 75);
    std::fs::write(&go, "go\n").unwrap();
    let status = baton_testkit::wait_for_exit(&mut b, "the job to end");
    assert!(status.success());
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn a_signal_ignored_by_whoever_started_baton_stays_ignored_for_the_job() {
    let env = Env::new();
    let out = env.path("sigign");
    // nohup leaves SIGHUP ignored; the job must inherit that.
    let o = env.run(&[
        "exec",
        "--name",
        "job",
        "--",
        "sh",
        "-c",
        &format!("grep SigIgn /proc/self/status > {}", out.display()),
    ]);
    assert_eq!(code(&o), 0);
    let plain = std::fs::read_to_string(&out).unwrap();
    let o = std::process::Command::new("nohup")
        .env("BATON_STATE_DIR", env.state())
        .arg(crate::support::BATON)
        .args(["exec", "--name", "job", "--", "sh", "-c"])
        .arg(format!("grep SigIgn /proc/self/status > {}", out.display()))
        .current_dir(env.tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mask =
        |s: &str| u64::from_str_radix(s.trim().trim_start_matches("SigIgn:").trim(), 16).unwrap();
    let hup = 1u64 << 0; // SIGHUP is signal 1
    // Started plainly, the job has SIGHUP as this test has it (ignored too
    // when the suite itself runs under nohup).
    let own = std::fs::read_to_string("/proc/self/status").unwrap();
    let own = own.lines().find(|l| l.starts_with("SigIgn:")).unwrap();
    assert_eq!(mask(&plain) & hup, mask(own) & hup);
    assert_ne!(
        mask(&std::fs::read_to_string(&out).unwrap()) & hup,
        0,
        "the job lost nohup's SIG_IGN"
    );
}
