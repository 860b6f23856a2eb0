//! The attack on `baton exec` and `baton lock`: every way it found to get
//! two runs at once or a wrong kill, each replayed through the real binary.

use std::os::unix::fs::PermissionsExt;

use rustix::process::Signal;

use crate::support::{
    Env, alive, code, cpu_ticks, eventually, pause, processes_of_run, root, script, signal,
    state_of, stderr, stdout, verdict, wait_for_file,
};

/// Dates `path` an hour back: an empty lock file that young would be one
/// whose record is still being written.
fn left_an_hour_ago(path: &std::path::Path) {
    let touched = std::process::Command::new("touch")
        .args(["-d", "1 hour ago"])
        .arg(path)
        .status()
        .unwrap();
    assert!(touched.success());
}

/// A program whose main thread exits while another thread works on: its
/// `/proc/PID/stat` shows `Z`, yet it runs. It writes its pid (the host's
/// number: `/proc` is the host's) to `pidfile`,
/// and the worker writes `done` to `donefile` after `secs` seconds.
fn zombie_leader(pidfile: &std::path::Path, donefile: &std::path::Path, secs: u32) -> String {
    format!(
        "python3 -c 'import ctypes, os, threading, time\n\
         def work():\n    time.sleep({secs}); open(\"{done}\", \"w\").write(\"done\")\n\
         threading.Thread(target=work).start()\n\
         pid = open(\"/proc/self/stat\").read().split()[0]\n\
         open(\"{pid}\", \"w\").write(pid + \"\\n\")\n\
         ctypes.CDLL(None).pthread_exit(None)'",
        done = donefile.display(),
        pid = pidfile.display(),
    )
}

#[test]
fn a_job_member_whose_main_thread_exited_keeps_the_lease_held() {
    let env = Env::new();
    let pidfile = env.path("zpid");
    let done = env.path("done");
    let o = env.exec_sh(
        "job",
        &["--kill-grace", "1s"],
        &format!("{} & sleep 1; exit 0", zombie_leader(&pidfile, &done, 60)),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let z: i32 = wait_for_file(&pidfile).parse().unwrap();
    // baton saw a process with a live thread and stopped it before releasing.
    assert!(
        stderr(&o).contains("left 1 process running"),
        "{}",
        stderr(&o)
    );
    assert!(!alive(z), "a thread of the job outlived the release");
    assert!(!done.exists());
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn after_kill_9_a_member_whose_main_thread_exited_reads_orphaned_not_dead() {
    let env = Env::new();
    let pidfile = env.path("zpid");
    let done = env.path("done");
    let shpid = env.path("shpid");
    // Without a namespace: with one, the kill takes the whole tree along.
    let mut b = env.spawn_sh(
        "job",
        &["--no-contain"],
        &format!(
            "{}; {} & wait",
            crate::support::write_pid(&shpid),
            zombie_leader(&pidfile, &done, 60)
        ),
    );
    let z: i32 = wait_for_file(&pidfile).parse().unwrap();
    let sh: i32 = wait_for_file(&shpid).parse().unwrap();
    eventually("the main thread to exit", || state_of(z) == Some('Z'));
    // baton and the shell die; only the thread of the zombie leader works on.
    signal(b.id() as i32, Signal::KILL);
    b.wait().unwrap();
    signal(sh, Signal::KILL);
    eventually("the shell to be gone", || !alive(sh));
    assert!(alive(z));
    assert_eq!(verdict(&env, "job"), "orphaned");
    let marker = env.path("second");
    let o = env.exec_sh("job", &[], &format!("touch {}", marker.display()));
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(
        !marker.exists(),
        "a second run started beside the first one's thread"
    );
    // Once it is gone, the lease is dead and the next run takes it.
    signal(z, Signal::KILL);
    eventually("the thread to be gone", || !alive(z));
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_job_that_keeps_forking_detached_children_is_stopped_whole() {
    let env = Env::new();
    // Detached spawners, each forking a detached sleeper every 10 ms, all
    // ignoring SIGTERM: a single scan and a single SIGKILL leave some of
    // them running (outside the job's group, so a judge would call the
    // lease dead). Freezing first leaves them no time to fork.
    let job = script(
        &env,
        "swarm.sh",
        "#!/bin/sh\n\
         trap '' TERM\n\
         for i in 1 2 3 4; do\n\
           setsid sh -c 'trap \"\" TERM; while :; do setsid sleep 30 & sleep 0.01; done' &\n\
         done\n\
         sleep 30\n",
    );
    for trial in 0..3 {
        let run = format!("swarm-{}-{trial}", std::process::id());
        let o = env.run(&[
            "exec",
            "--name",
            "job",
            "--run-id",
            &run,
            "--timeout",
            "1s",
            "--kill-grace",
            "300ms",
            "--",
            job.to_str().unwrap(),
        ]);
        let left = processes_of_run(&run);
        for p in &left {
            signal(*p, Signal::KILL);
        }
        assert_eq!(code(&o), 124, "{}", stderr(&o));
        assert!(
            left.is_empty(),
            "trial {trial}: {} processes outlived baton",
            left.len()
        );
        assert_eq!(verdict(&env, "job"), "free");
    }
}

#[test]
fn a_job_that_hands_itself_on_to_a_detached_successor_is_caught() {
    let env = Env::new();
    let stop = env.path("stop");
    // Each generation starts its successor in a new session and exits: at
    // any instant the job is one process, somewhere in flight.
    let walker = env.path("walker.sh");
    let body = format!(
        "#!/bin/sh\ntrap '' TERM\n[ -e {stop} ] && exit 0\nsetsid {me} &\nexit 0\n",
        stop = stop.display(),
        me = walker.display()
    );
    let walker = script(&env, "walker.sh", &body);
    for trial in 0..5 {
        let run = format!("walker-{}-{trial}", std::process::id());
        let o = env.run(&[
            "exec",
            "--name",
            "job",
            "--run-id",
            &run,
            "--kill-grace",
            "300ms",
            "--",
            walker.to_str().unwrap(),
        ]);
        let left = processes_of_run(&run);
        if !left.is_empty() {
            std::fs::write(&stop, "").unwrap();
        }
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert!(
            left.is_empty(),
            "trial {trial}: the job ran on after the release"
        );
    }
}

#[test]
fn detached_descendants_left_behind_are_all_stopped_before_release() {
    let env = Env::new();
    let run = format!("detached-{}", std::process::id());
    let job = script(
        &env,
        "leaver.sh",
        "#!/bin/sh\n\
         for i in 1 2 3 4; do\n\
           setsid sh -c 'trap \"\" TERM; while :; do sleep 0.05 & wait; done' &\n\
         done\n\
         exit 0\n",
    );
    let o = env.run(&[
        "exec",
        "--name",
        "job",
        "--run-id",
        &run,
        "--kill-grace",
        "300ms",
        "--",
        job.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(processes_of_run(&run).is_empty());
    assert_eq!(verdict(&env, "job"), "free");
}

#[test]
fn the_stop_sleeps_through_the_kill_grace() {
    let env = Env::new();
    let started = env.path("started");
    let b = env.spawn_sh(
        "job",
        &["--timeout", "500ms", "--kill-grace", "3s"],
        &format!("trap '' TERM; echo up > {}; sleep 30", started.display()),
    );
    wait_for_file(&started);
    let pid = b.id() as i32;
    // Into the grace: the timeout passed, SIGTERM was ignored.
    pause(1000);
    let before = cpu_ticks(pid);
    pause(1500);
    let used = cpu_ticks(pid) - before;
    // /proc counts in USER_HZ, 100 a second on Linux.
    let tick = 100u64;
    // 1.5 s of wall time: a sleeping supervisor uses a few ticks at most; a
    // spinning one uses them all.
    assert!(
        used * 5 < tick * 3 / 2,
        "baton used {used} ticks of CPU ({tick}/s) in 1.5 s of kill grace"
    );
    let out = b.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(124));
}

#[test]
fn a_file_that_is_no_lock_is_never_overwritten() {
    let env = Env::new();
    let victim = env.path("victim.txt");
    let mut content = b"important data\n".to_vec();
    content.extend(std::iter::repeat_n(b'x', 10_000));
    std::fs::write(&victim, &content).unwrap();
    let v = victim.to_str().unwrap();
    let o = env.run(&["lock", "break", "--force", "--lock", v]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("not a lock file"), "{}", stderr(&o));
    let o = env.run(&["lock", "show", "--lock", v]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(!stderr(&o).contains("--force"), "{}", stderr(&o));
    let o = env.run(&["exec", "--lock", v, "--", "true"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert_eq!(std::fs::read(&victim).unwrap(), content);
}

#[test]
fn a_directory_at_the_lock_path_is_one_code_everywhere() {
    let env = Env::new();
    let dir = env.path("a-dir");
    std::fs::create_dir(&dir).unwrap();
    let d = dir.to_str().unwrap();
    for args in [
        vec!["exec", "--lock", d, "--", "true"],
        vec!["lock", "show", "--lock", d],
        vec!["lock", "break", "--lock", d],
    ] {
        let o = env.run(&args);
        assert_eq!(code(&o), 125, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("a directory"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn a_relative_state_directory_is_refused() {
    let env = Env::new();
    let o = std::process::Command::new(crate::support::BATON)
        .env("BATON_STATE_DIR", "state")
        .current_dir(env.tmp.path())
        .args(["exec", "--name", "job", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("relative"), "{}", stderr(&o));
    assert!(!env.path("state").exists());
}

#[test]
fn a_relative_lock_path_is_resolved_once_and_shown_absolute() {
    let env = Env::new();
    let o = std::process::Command::new(crate::support::BATON)
        .current_dir(env.tmp.path())
        .args([
            "exec",
            "--lock",
            "rel.lock",
            "--",
            "sh",
            "-c",
            "echo $BATON_LOCK",
        ])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let shown = stdout(&o).trim().to_owned();
    assert_eq!(
        std::path::Path::new(&shown),
        env.path("rel.lock"),
        "BATON_LOCK is not the absolute path"
    );
}

#[test]
fn a_state_directory_others_can_write_is_refused() {
    let env = Env::new();
    let state = env.state();
    std::fs::create_dir_all(state.join("locks")).unwrap();
    for (dir, mode) in [
        (&state, 0o777),
        (&state.join("locks"), 0o777),
        (&state, 0o1777),
    ] {
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(state.join("locks"), std::fs::Permissions::from_mode(0o700))
            .unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let marker = env.path("ran");
        let o = env.exec_sh("job", &[], &format!("touch {}", marker.display()));
        assert_eq!(code(&o), 125, "{mode:o}: {}", stderr(&o));
        assert!(stderr(&o).contains(dir.to_str().unwrap()), "{}", stderr(&o));
        assert!(!marker.exists());
        let o = env.run(&["lock", "show", "job"]);
        assert_eq!(code(&o), 125, "{}", stderr(&o));
    }
}

/// A state directory of root's, mode 0700, then given to uid 4242 through
/// an ACL entry (`setfacl -m u:4242:rwx`): its mode reads 0770, the group
/// root's own, yet that user could rename its lock files away during a run.
#[test]
fn a_state_directory_another_user_may_write_through_an_acl_is_refused() {
    let env = Env::new();
    let state = env.state();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    crate::support::grant_through_acl(&state);
    let marker = env.path("ran");
    let o = env.exec_sh("job", &[], &format!("touch {}", marker.display()));
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("writable by uid 4242 through its ACL"),
        "{}",
        stderr(&o)
    );
    assert!(!marker.exists());
    crate::support::drop_acl(&state, 0o700);
    let o = env.exec_sh("job", &[], &format!("touch {}", marker.display()));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(marker.exists());
}

#[test]
fn a_state_directory_or_lock_file_another_user_owns_is_refused() {
    if !root() {
        // Making a file another user's needs root; the mode checks above run
        // for everyone.
        return;
    }
    let env = Env::new();
    assert_eq!(code(&env.exec_sh("job", &[], "true")), 0);
    let nobody = rustix::process::Uid::from_raw(65534);
    let chown = |p: &std::path::Path| rustix::fs::chown(p, Some(nobody), None).unwrap();
    // A lock file of another user's: it could be rewritten under a run.
    chown(&env.lock("job"));
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("owned by uid 65534"), "{}", stderr(&o));
    // A state directory another user created.
    let env = Env::new();
    std::fs::create_dir_all(env.state().join("locks")).unwrap();
    std::fs::set_permissions(env.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    chown(&env.state());
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("owned by uid 65534"), "{}", stderr(&o));
}

/// A state directory named through a symbolic link another user owns (in a
/// sticky directory such as `/tmp`, where anyone may make one): its owner
/// could point it at another directory of root's during a run, and a
/// second run would find the lock free there. The link is refused, though
/// the directories it leads to are root's; a link root owns is followed.
/// So is a `jobs.d/` reached through such a link.
#[test]
fn a_state_directory_or_jobs_d_through_another_users_link_is_refused() {
    if !root() {
        return; // Making a link another user's needs root.
    }
    let env = Env::new();
    let shared = env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let real = env.path("real");
    std::fs::create_dir(&real).unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
    let theirs = shared.join("theirs");
    std::os::unix::fs::symlink(&real, &theirs).unwrap();
    std::os::unix::fs::lchown(&theirs, Some(65534), None).unwrap();
    let exec = |dir: &std::path::Path| {
        env.run(&[
            "exec",
            "--state-dir",
            dir.to_str().unwrap(),
            "--name",
            "job",
            "--",
            "true",
        ])
    };
    let o = exec(&theirs.join("state"));
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a symbolic link owned by uid 65534"),
        "{}",
        stderr(&o)
    );
    assert!(
        !real.join("state").exists(),
        "something was made through the link"
    );
    let mine = shared.join("mine");
    std::os::unix::fs::symlink(&real, &mine).unwrap();
    let o = exec(&mine.join("state"));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A configuration's jobs.d/ through another user's link.
    let conf = env.path("conf");
    std::fs::create_dir(&conf).unwrap();
    std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o700)).unwrap();
    let dropins = env.path("dropins");
    std::fs::create_dir(&dropins).unwrap();
    std::fs::set_permissions(&dropins, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(dropins.join("x.toml"), "every = \"1h\"\nrun = [\"true\"]\n").unwrap();
    std::os::unix::fs::symlink(&dropins, conf.join("jobs.d")).unwrap();
    std::os::unix::fs::lchown(conf.join("jobs.d"), Some(65534), None).unwrap();
    std::fs::write(
        conf.join("baton.toml"),
        format!(
            "[scheduler]\nstate_dir = {:?}\n",
            env.path("sched").display()
        ),
    )
    .unwrap();
    let o = env.run(&[
        "config",
        "--config",
        conf.join("baton.toml").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a symbolic link owned by uid 65534"),
        "{}",
        stderr(&o)
    );
}

/// A symbolic link planted at a job's guard or at the ledger's repair
/// mutex is refused by name, never followed, and the run does not start.
#[test]
fn a_link_at_a_guard_or_the_repair_mutex_is_said_as_one() {
    for planted in ["locks/j.job", ".baton.db.repair"] {
        let s = crate::sched::Sched::new("[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = [\"true\"]\n");
        let target = s.env.path("elsewhere");
        let at = s.env.state().join(planted);
        std::fs::create_dir_all(s.env.state().join("locks")).unwrap();
        for d in [s.env.state(), s.env.state().join("locks")] {
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        std::os::unix::fs::symlink(&target, &at).unwrap();
        let o = s.run(&["run", "j"]);
        assert_eq!(code(&o), 2, "{planted}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("a symbolic link, which baton never follows"),
            "{planted}: {}",
            stderr(&o)
        );
        assert!(!target.exists(), "{planted}: written through the link");
    }
}

#[test]
fn a_lock_path_in_a_shared_directory_needs_the_sticky_bit() {
    let env = Env::new();
    let shared = env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let lock = shared.join("x.lock");
    let o = env.run(&["exec", "--lock", lock.to_str().unwrap(), "--", "true"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("writable by its group or by others"),
        "{}",
        stderr(&o)
    );
    // As /tmp: others can write it, but only an entry's owner can remove it.
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let o = env.run(&["exec", "--lock", lock.to_str().unwrap(), "--", "true"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn breaks_log_is_never_written_through_a_symbolic_link() {
    let env = Env::new();
    assert_eq!(code(&env.exec_sh("job", &[], "true")), 0);
    let victim = env.path("victim");
    std::fs::write(&victim, "keep\n").unwrap();
    std::os::unix::fs::symlink(&victim, env.state().join("breaks.log")).unwrap();
    std::fs::write(env.lock("job"), "version=9 a=b\n").unwrap();
    let o = env.run(&["lock", "break", "--force", "job"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("breaks.log"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
}

/// A v3 record naming `pid` (with its real start time) as the holder, and
/// the given group fields; machine, boot and pid namespace are this host's.
fn forged(env: &Env, pid: u32, exe: &str, group: &str) -> String {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let start = fields[19];
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    use std::os::unix::fs::MetadataExt;
    let pidns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let host = rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned();
    let machine = std::fs::read_to_string("/etc/machine-id")
        .map(|m| format!(" machine={}", m.trim()))
        .unwrap_or_default();
    let line = format!(
        "version=3 state=held fence=100 token=0123456789abcdef pid={pid} host={host} \
         at=2026-01-01T00:00:00Z renewed=2026-01-01T00:00:00Z ttl_ms=1{machine} boot={} \
         pidns={pidns} pstart={start} bt_ms=1 exe={exe}{group}\n",
        boot.trim()
    );
    std::fs::create_dir_all(env.state().join("locks")).unwrap();
    std::fs::set_permissions(env.state(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(env.lock("job"), &line).unwrap();
    line
}

#[test]
fn break_kill_never_signals_what_a_forged_record_names() {
    let env = Env::new();
    let mut victim = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let v = victim.id();
    // The victim's real pid and start time, but not the executable the
    // record names: not the holder.
    forged(&env, v, "/usr/local/bin/baton", "");
    let o = env.run(&["lock", "break", "--kill", "--grace", "1s", "job"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("nothing was signalled"),
        "{}",
        stderr(&o)
    );
    assert!(alive(v as i32), "an unrelated process was killed");
    // A group with no leader start time, and group 1: never signalled.
    for group in [format!(" pgid={v}"), " pgid=1 jstart=1".to_owned()] {
        forged(&env, v, "/nonexistent", &group);
        let o = env.run(&["lock", "break", "--kill", "--grace", "1s", "job"]);
        assert_eq!(code(&o), 1, "{group}: {}", stderr(&o));
        assert!(alive(v as i32), "{group}: an unrelated process was killed");
        assert!(!stderr(&o).contains("Some("), "{}", stderr(&o));
    }
    victim.kill().unwrap();
    victim.wait().unwrap();
}

#[test]
fn a_fence_past_what_baton_can_write_is_refused_and_a_forced_break_keeps_the_fence() {
    let env = Env::new();
    assert_eq!(code(&env.exec_sh("job", &[], "true")), 0);
    let lock = env.lock("job");
    std::fs::write(&lock, "version=3 state=free fence=9223372036854775807\n").unwrap();
    let before = std::fs::read(&lock).unwrap();
    let o = env.exec_sh("job", &["--verbose"], "true");
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(stderr(&o).contains("out of range"), "{}", stderr(&o));
    assert_eq!(std::fs::read(&lock).unwrap(), before);
    // A damaged record whose fence is in range (far in the future): the
    // forced break keeps it, so the next fence is larger still.
    let high = 200_000_000_000_000_000u64;
    std::fs::write(
        &lock,
        format!("version=3 state=held fence={high} token=zz\n"),
    )
    .unwrap();
    let o = env.run(&["lock", "break", "--force", "job"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = env.exec_sh("job", &[], "echo $BATON_FENCE");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let fence: u64 = stdout(&o).trim().parse().unwrap();
    assert!(fence > high, "the fence went down to {fence}");
}

#[test]
fn an_empty_file_left_by_flock1_is_taken_seconds_later() {
    let env = Env::new();
    let lock = env.path("x.lock");
    let made = std::process::Command::new("flock")
        .arg(&lock)
        .arg("true")
        .status()
        .unwrap();
    assert!(made.success());
    assert_eq!(std::fs::read(&lock).unwrap(), b"");
    // Left long ago.
    let old = std::process::Command::new("touch")
        .args(["-d", "10 minutes ago"])
        .arg(&lock)
        .status()
        .unwrap();
    assert!(old.success());
    let o = env.run(&["exec", "--lock", lock.to_str().unwrap(), "--", "true"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("flock(1)"), "{}", stderr(&o));
}

#[test]
fn an_alert_command_is_stopped_with_its_group_and_reads_whole_lines() {
    let env = Env::new();
    let lines = env.path("lines");
    let sleeper = env.path("sleeper");
    // A handler that reads line by line, then starts something long.
    let cmd = format!(
        "while read -r line; do echo \"$line\" >> {}; done; sleep 100 & echo $! > {}; wait",
        lines.display(),
        sleeper.display()
    );
    let o = env.exec_sh("job", &["--alert-command", &cmd], "exit 3");
    assert_eq!(code(&o), 3);
    assert!(stderr(&o).contains("stopped"), "{}", stderr(&o));
    let got = std::fs::read_to_string(&lines).unwrap();
    let v: serde_json::Value = serde_json::from_str(got.trim()).unwrap();
    assert_eq!(v["kind"], "failed");
    let s: i32 = wait_for_file(&sleeper).parse().unwrap();
    // SIGKILL to the group is sent before baton returns; a loaded machine
    // may take a moment to schedule the child's death.
    baton_testkit::eventually("the alert command's child to die with its group", || {
        !alive(s)
    });
}

#[test]
fn an_interactive_job_gets_the_terminal() {
    let env = Env::new();
    let out = env.path("got");
    // script(1) runs baton on a pseudo-terminal, in its foreground.
    let inner = format!(
        "{} exec --name tty -- sh -c 'read a; echo \"got:$a\" > {}'",
        crate::support::BATON,
        out.display()
    );
    let mut child = std::process::Command::new("script")
        .args(["-qec", &inner, "/dev/null"])
        .env("BATON_STATE_DIR", env.state())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    pause(500);
    // Kept open until the job is done: script(1) ends its session at EOF.
    let mut input = child.stdin.take().unwrap();
    input.write_all(b"hello\n").unwrap();
    let status = baton_testkit::wait_for_exit(
        &mut child,
        "the interactive job (hung if it was stopped by SIGTTIN)",
    );
    assert!(status.success(), "{status}");
    drop(input);
    assert_eq!(std::fs::read_to_string(&out).unwrap().trim(), "got:hello");
    assert_eq!(verdict(&env, "tty"), "free");
}

#[test]
fn a_missing_interpreter_is_not_reported_as_a_missing_script() {
    let env = Env::new();
    let s = script(&env, "bad.sh", "#!/nonexistent/python9\nprint(1)\n");
    let o = env.run(&["exec", "--name", "job", "--", s.to_str().unwrap()]);
    assert_eq!(code(&o), 126, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("/nonexistent/python9"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn messages_speak_to_people() {
    let env = Env::new();
    // A file where the state directory should be.
    let file = env.path("f");
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
    assert_eq!(code(&o), 125);
    assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("File exists"), "{}", stderr(&o));
    // A duration typo: no library types in the hint.
    let o = env.run(&["exec", "--name", "x", "--ttl", "soon", "--", "true"]);
    assert!(!stderr(&o).contains("Span"), "{}", stderr(&o));
    assert!(stderr(&o).contains("1h30m"), "{}", stderr(&o));
    // Durations in lock show are for people.
    let b = env.hold("job", &["--ttl", "1s"], 60);
    signal(b.id() as i32, Signal::STOP);
    eventually("the lease to lapse", || verdict(&env, "job") == "hung");
    let o = env.run(&["lock", "show", "job"]);
    assert!(
        !env.without_dir(&stdout(&o)).contains("PT"),
        "{}",
        stdout(&o)
    );
    signal(b.id() as i32, Signal::CONT);
    assert_eq!(env.end(b), 143);
}

#[test]
fn a_bare_command_without_dashes_gets_a_hint() {
    let env = Env::new();
    let o = env.run(&["exec", "--name", "x", "echo", "hi"]);
    assert_eq!(code(&o), 125, "{}", stderr(&o));
    assert!(stderr(&o).contains("put `--`"), "{}", stderr(&o));
}

#[test]
fn dash_c_timeout_zero_and_signal_work_as_in_flock_and_timeout() {
    let env = Env::new();
    let o = env.run(&["exec", "--name", "x", "--timeout", "0", "-c", "echo via-c"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "via-c");
    let got = env.path("got");
    let o = env.run(&[
        "exec",
        "--name",
        "x",
        "--timeout",
        "300ms",
        "--kill-grace",
        "1s",
        "--signal",
        "INT",
        "-c",
        &format!(
            "trap 'echo INT > {}; exit 0' INT; sleep 10 & wait",
            got.display()
        ),
    ]);
    assert_eq!(code(&o), 124, "{}", stderr(&o));
    assert_eq!(wait_for_file(&got), "INT");
}

#[test]
fn completions_and_the_manual_are_generated() {
    let env = Env::new();
    for shell in ["bash", "zsh", "fish"] {
        let o = env.run(&["completions", shell]);
        assert_eq!(code(&o), 0, "{shell}: {}", stderr(&o));
        // The script asks baton itself on each TAB (see friction::completions).
        assert!(stdout(&o).contains("_BATON_COMPLETE"), "{shell}");
    }
    let o = env.run(&["man"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains(".TH"), "{}", stdout(&o));
}

/// A cgroup v2 directory the test `name` may create cgroups in, if there
/// is one (root, on a host whose cgroup2 mount is writable).
fn cgroup_parent(name: &str) -> Option<std::path::PathBuf> {
    if !root() {
        return None;
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mounts.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        right
            .starts_with("cgroup2 ")
            .then(|| left.split_whitespace().nth(4).map(std::path::PathBuf::from))?
    })?;
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?;
    let parent = mount
        .join(rel.trim_start_matches('/'))
        .join(format!("baton-test-{name}-{}", std::process::id()));
    std::fs::create_dir(&parent).ok()?;
    Some(parent)
}

#[test]
fn with_a_delegated_cgroup_the_tree_is_frozen_and_killed_through_it() {
    let env = Env::new();
    let job = script(
        &env,
        "swarm.sh",
        "#!/bin/sh\n\
         trap '' TERM\n\
         for i in 1 2 3 4; do\n\
           setsid sh -c 'trap \"\" TERM; while :; do setsid sleep 30 & sleep 0.01; done' &\n\
         done\n\
         sleep 30\n",
    );
    let run = format!("cgroup-{}", std::process::id());
    let Some(parent) = cgroup_parent("frozen") else {
        // No delegated cgroup here: --cgroup falls back to /proc, says so,
        // and still stops everything.
        let o = env.run(&[
            "exec",
            "--name",
            "job",
            "--run-id",
            &run,
            "--cgroup",
            "/nonexistent",
            "--timeout",
            "1s",
            "--kill-grace",
            "300ms",
            "--",
            job.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 124, "{}", stderr(&o));
        assert!(stderr(&o).contains("cgroup"), "{}", stderr(&o));
        assert!(processes_of_run(&run).is_empty());
        return;
    };
    let o = env.run(&[
        "exec",
        "--name",
        "job",
        "--run-id",
        &run,
        "--cgroup",
        parent.to_str().unwrap(),
        "--timeout",
        "1s",
        "--kill-grace",
        "300ms",
        "--",
        job.to_str().unwrap(),
    ]);
    let left = processes_of_run(&run);
    let subdirs: Vec<_> = std::fs::read_dir(&parent)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    let _ = std::fs::remove_dir(&parent);
    assert_eq!(code(&o), 124, "{}", stderr(&o));
    assert!(!stderr(&o).contains("cgroup"), "{}", stderr(&o));
    assert!(left.is_empty(), "{} processes outlived baton", left.len());
    assert!(
        subdirs.is_empty(),
        "the step's cgroup was left behind: {subdirs:?}"
    );
    assert_eq!(verdict(&env, "job"), "free");
}

/// A lock file others may read (what `flock -n` leaves with a umask of
/// 022) is made private by the first run that opens it: any reader could
/// hold its `flock` mutex and keep every run out.
#[test]
fn a_lock_file_others_may_read_is_made_private() {
    let env = Env::new();
    let lock = env.path("left.lock");
    std::fs::write(&lock, "").unwrap();
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    // Left an hour ago: an empty file that young would be one being written.
    left_an_hour_ago(&lock);
    let o = env.run(&["exec", "--lock", lock.to_str().unwrap(), "--", "true"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
}

/// A lock file other users may write is refused and left as it is, never
/// quietly made private: a writer's open descriptor survives any `chmod`,
/// and with it the power to rewrite the record.
#[test]
fn a_lock_file_others_may_write_is_refused_not_made_private() {
    for mode in [0o666, 0o664] {
        let env = Env::new();
        let lock = env.path("shared.lock");
        std::fs::write(&lock, "").unwrap();
        std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(mode)).unwrap();
        left_an_hour_ago(&lock);
        let ran = env.path("ran");
        let o = env.run(&[
            "exec",
            "--lock",
            lock.to_str().unwrap(),
            "--",
            "touch",
            ran.to_str().unwrap(),
        ]);
        assert_eq!(code(&o), 125, "{mode:o}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("writable by its group or by others"),
            "{}",
            stderr(&o)
        );
        assert!(!ran.exists(), "{mode:o}: the command ran");
        let now = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
        assert_eq!(now, mode, "{mode:o} became {now:o}");
    }
}

/// A lock file left open to other users (`flock -n` with a umask of 022)
/// whose mutex another user holds: the run is refused busy, and the
/// refusal says the holder may be any local user, naming the mode and how
/// to find the holder; the file is made `0600` even so, keeping out
/// whoever opens it next.
#[test]
fn a_lock_file_another_user_holds_open_says_so_and_is_made_private() {
    if !root() {
        return; // The holder must be another user.
    }
    let env = Env::new();
    let shared = env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    for d in [env.path(""), shared.clone()] {
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let lock = shared.join("g.lock");
    std::fs::write(&lock, "").unwrap();
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o644)).unwrap();
    let script = format!(
        "import fcntl, time\nf = open({:?}, 'rb')\nfcntl.flock(f, fcntl.LOCK_EX)\n\
         print('held', flush=True)\ntime.sleep(600)\n",
        lock.display().to_string()
    );
    let mut holder = std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "/usr/bin/python3",
            "-c",
        ])
        .arg(script)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    let o = env.run(&[
        "exec",
        "--verbose",
        "--lock",
        lock.to_str().unwrap(),
        "--",
        "true",
    ]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("open to other users (mode 0644)"), "{err}");
    assert!(err.contains("any local user"), "{err}");
    let mode = std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
}

/// A delegated cgroup directory another user owns (or may write) is not
/// used: its owner could freeze or kill the step through its
/// `cgroup.freeze` and `cgroup.kill`. The command runs contained as
/// without `--cgroup`, and the reason is said.
#[test]
fn a_cgroup_directory_another_user_owns_is_not_used() {
    let Some(parent) = cgroup_parent("foreign") else {
        return; // No delegated cgroup here: nothing to refuse.
    };
    let env = Env::new();
    let nobody = baton_testkit::user::User::nobody().uid;
    std::os::unix::fs::chown(&parent, Some(nobody), None).unwrap();
    let o = env.run(&[
        "exec",
        "--name",
        "job",
        "--cgroup",
        parent.to_str().unwrap(),
        "--",
        "true",
    ]);
    let subdirs = std::fs::read_dir(&parent)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .count();
    let _ = std::fs::remove_dir(&parent);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("owned by uid {nobody}")),
        "{}",
        stderr(&o)
    );
    assert_eq!(subdirs, 0, "a cgroup was made in another user's directory");
}

#[test]
fn lock_names_the_lock_commands_refuse_are_refused_by_the_configuration_too() {
    for (lock, job) in [(".", "a"), ("..", "a"), (".hidden", "a"), ("", ".x")] {
        let s = crate::sched::Sched::new("");
        let lock_line = if lock.is_empty() {
            String::new()
        } else {
            format!("lock = {lock:?}\n")
        };
        s.write(&format!(
            "[jobs.{job:?}]\nschedule = \"0 0 1 1 *\"\n{lock_line}run = \"true\"\n"
        ));
        let o = s.run(&["config"]);
        assert_eq!(code(&o), 2, "{lock:?} {job:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("start with '.'"), "{}", stderr(&o));
        // The lock commands refuse the same name.
        let name = if lock.is_empty() { job } else { lock };
        let o = s.env.run(&["lock", "show", name]);
        assert_eq!(code(&o), 2, "{name:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("invalid lock name"), "{}", stderr(&o));
    }
}

/// `baton config`'s first line of stderr, for a configuration refused.
fn refusal(s: &crate::sched::Sched) -> String {
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    stderr(&o).lines().next().unwrap_or_default().to_owned()
}

#[test]
fn a_self_fencing_refusal_names_the_key_at_fault_where_it_is_set() {
    let s = crate::sched::Sched::new("");
    let main = s.config();
    let main = main.display();
    // A TTL below the minimum: the ttl, on its own line.
    s.write("[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\nttl = \"50ms\"\n");
    let e = refusal(&s);
    assert!(e.contains(&format!("{main}:7: jobs.x.ttl:")), "{e}");
    // A takeover grace too short for the default kill grace.
    s.write(
        "[scheduler]\nstate_dir = \"STATE\"\ntakeover_grace = \"5s\"\n\
         [jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
    );
    let e = refusal(&s);
    assert!(
        e.contains(&format!("{main}:3: scheduler.takeover_grace:")),
        "{e}"
    );
    // A job's own kill grace too long for the takeover grace it inherits.
    s.write(
        "[scheduler]\nstate_dir = \"STATE\"\n\n[jobs.x]\nschedule = \"0 0 1 1 *\"\n\
         run = \"true\"\nkill_grace = \"40s\"\n",
    );
    let e = refusal(&s);
    assert!(e.contains(&format!("{main}:7: jobs.x.kill_grace:")), "{e}");
    // A drop-in whose takeover grace is too short for the kill grace it
    // inherits from baton.toml: the drop-in's own key, on its own line.
    s.write("[scheduler]\nstate_dir = \"STATE\"\nkill_grace = \"15s\"\n");
    let dir = s.env.path("jobs.d");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("y.toml"),
        "schedule = \"0 0 1 1 *\"\nrun = \"true\"\ntakeover_grace = \"16s\"\n",
    )
    .unwrap();
    let e = refusal(&s);
    let dropin = dir.join("y.toml");
    assert!(
        e.contains(&format!("{}:3: jobs.y.takeover_grace:", dropin.display())),
        "{e}"
    );
    std::fs::write(
        dir.join("y.toml"),
        "schedule = \"0 0 1 1 *\"\nrun = \"true\"\nttl = \"30s\"\n",
    )
    .unwrap();
    s.write("[scheduler]\nstate_dir = \"STATE\"\nkill_grace = \"10s\"\n[jobs.z]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\ntakeover_grace = \"5s\"\n");
    let e = refusal(&s);
    assert!(
        e.contains(&format!("{main}:7: jobs.z.takeover_grace:")),
        "{e}"
    );
}
