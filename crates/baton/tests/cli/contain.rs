//! A killed supervisor takes its job's whole tree with it: every step runs
//! in a PID namespace whose init dies with the supervisor, so a process the
//! job detached from its group (`setsid`, a double fork) can no longer run
//! on beside the next run once the lease reads dead. Where the kernel
//! refuses namespaces, an `uncontained` alert says so, and the job's
//! process group is the evidence, as before namespaces.

use std::process::Stdio;

use rustix::process::Signal;

use crate::sched::Sched;
use crate::support::{
    BATON, Env, alive, code, eventually, signal, stderr, stdout, wait_for_file, wait_pid_file,
    write_pid,
};

/// A job that starts a heartbeat in a session of its own (writing its host
/// pid to `detached`) and one in its group (`grouped`), then waits.
fn detaching_job(env: &Env, beats: &std::path::Path) -> String {
    let beat = env.path("beat.sh");
    std::fs::write(
        &beat,
        format!(
            "read -r p _ < /proc/self/stat; echo $p > \"$2\"\nwhile :; do echo \"$1\" >> {}; sleep \
             0.05; done\n",
            beats.display()
        ),
    )
    .unwrap();
    let (d, g) = (env.path("detached"), env.path("grouped"));
    format!(
        "setsid sh {b} detached {d} & sh {b} grouped {g} & {wd}; {wg}; wait",
        b = beat.display(),
        d = d.display(),
        g = g.display(),
        wd = wait_pid_file(&d),
        wg = wait_pid_file(&g),
    )
}

/// Lines of `path` now.
fn count(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

#[test]
fn killing_exec_stops_its_whole_tree_detached_processes_included() {
    let env = Env::new();
    let beats = env.path("beats");
    let mut b = env.spawn_sh("job", &["--ttl", "1h"], &detaching_job(&env, &beats));
    let detached: i32 = wait_for_file(&env.path("detached")).parse().unwrap();
    let grouped: i32 = wait_for_file(&env.path("grouped")).parse().unwrap();
    assert!(alive(detached) && alive(grouped));
    signal(i32::try_from(b.id()).unwrap(), Signal::KILL);
    let _ = b.wait();
    eventually("the detached process to die with its supervisor", || {
        !alive(detached)
    });
    eventually("the grouped process to die with its supervisor", || {
        !alive(grouped)
    });
    // Nothing of the old run is left: the lease reads dead, and the next
    // run takes it at once (its TTL is an hour) and runs alone.
    let o = env.run(&["lock", "show", "job"]);
    assert!(stdout(&o).contains("dead"), "{}", stdout(&o));
    let before = count(&beats);
    let o = env.exec_sh("job", &[], "sleep 0.3");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(count(&beats), before, "the killed run's tree wrote on");
}

#[test]
fn killing_baton_run_stops_the_job_before_the_next_run_starts() {
    let s = Sched::new("");
    let beats = s.env.path("beats");
    let started = s.env.path("started");
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nttl = \"1h\"\nrun = {:?}\n",
        format!(
            "echo run >> {}; {}",
            started.display(),
            detaching_job(&s.env, &beats)
        )
    ));
    let mut first = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let detached: i32 = wait_for_file(&s.env.path("detached")).parse().unwrap();
    let grouped: i32 = wait_for_file(&s.env.path("grouped")).parse().unwrap();
    signal(i32::try_from(first.id()).unwrap(), Signal::KILL);
    let _ = first.wait();
    eventually("the detached process to die with the supervisor", || {
        !alive(detached)
    });
    eventually("the grouped process to die with the supervisor", || {
        !alive(grouped)
    });
    let before = count(&beats);
    std::fs::remove_file(s.env.path("detached")).unwrap();
    std::fs::remove_file(s.env.path("grouped")).unwrap();
    s.write("[jobs.x]\nschedule = \"0 0 1 1 *\"\nttl = \"1h\"\nrun = \"sleep 0.3\"\n");
    // The step's init goes last, a moment after its namespace: until then
    // the group has a member, and a run is rightly refused `orphaned`.
    let mut o = s.run(&["run", "x"]);
    for _ in 0..100 {
        if code(&o) == 0 {
            break;
        }
        assert!(stderr(&o).contains("orphaned"), "{}", stderr(&o));
        baton_testkit::pause(100);
        o = s.run(&["run", "x"]);
    }
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(count(&beats), before, "the killed run's tree wrote on");
    let h = s.json(&["history", "x", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h}");
    assert_eq!(h[1]["verdict"], "abandoned", "{h}");
    // Its end is unknown: `finished` is when the next run found it so, and
    // neither a duration (the time until then) nor an exit code is made up
    // for it, nor counted in the durations' histogram.
    assert!(h[1]["finished"].is_string(), "{h}");
    assert!(h[1]["duration_ms"].is_null(), "{h}");
    assert!(h[1]["exit_code"].is_null(), "{h}");
    let m = s.run(&["__metrics"]);
    assert_eq!(code(&m), 0, "{}", stderr(&m));
    assert!(
        stdout(&m).contains("baton_job_run_duration_seconds_count{baton_job=\"x\"} 1\n"),
        "{}",
        stdout(&m)
    );
}

#[test]
fn a_job_runs_in_a_namespace_of_its_own_unless_asked_not_to() {
    let env = Env::new();
    // `$$` is the namespace's number for the job's shell (init is 1), and
    // the host's without one.
    let o = env.exec_sh("job", &[], "echo $$");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "2");
    let o = env.exec_sh(
        "job",
        &["--no-contain"],
        "read -r p _ < /proc/self/stat; [ \"$p\" = \"$$\" ] && echo host",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).trim(), "host");
    assert!(!stderr(&o).contains("uncontained"), "{}", stderr(&o));
}

#[test]
fn contain_false_is_a_policy_key_shown_with_its_source() {
    let s = Sched::new("[jobs.x]\nevery = \"1h\"\ncontain = false\nrun = \"echo $$\"\n");
    let j = s.json(&["config", "--json"]);
    let text = j.to_string();
    assert!(text.contains("\"contain\""), "{text}");
    let o = s.run(&["run", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.run(&["config"]);
    assert!(stdout(&o).contains("contain"), "{}", stdout(&o));
    let bad = Sched::new("[jobs.x]\nevery = \"1h\"\ncontain = \"yes\"\nrun = \"true\"\n");
    let o = bad.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(stderr(&o).contains("contain"), "{}", stderr(&o));
}

/// Runs `script` in a user namespace whose limit of PID namespaces is
/// zero: the kernel refuses every namespace baton asks for there.
fn without_pid_namespaces(script: &str) -> std::process::Command {
    let mut c = std::process::Command::new("unshare");
    c.args(["--user", "--map-root-user", "sh", "-c"])
        .arg(format!(
            "echo 0 > /proc/sys/user/max_pid_namespaces && {script}"
        ));
    c
}

#[test]
fn where_the_kernel_refuses_a_namespace_an_uncontained_alert_says_so_and_the_group_is_the_evidence()
{
    let env = Env::new();
    let alerts = env.path("alerts.json");
    let pidfile = env.path("pid");
    let script = format!(
        "BATON_STATE_DIR={state} exec {BATON} exec --name job --ttl 1h \
         --alert-command 'cat >> {alerts}' -- sh -c '{w}; exec sleep 60'",
        state = env.state().display(),
        alerts = alerts.display(),
        w = write_pid(&pidfile),
    );
    let mut b = without_pid_namespaces(&script)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    eventually("the uncontained alert", || {
        std::fs::read_to_string(&alerts).is_ok_and(|a| a.contains("\"uncontained\""))
    });
    let a = std::fs::read_to_string(&alerts).unwrap();
    assert!(a.contains("refused"), "{a}");
    // Without a namespace a killed baton leaves its job running, as it
    // always did: the lease reads orphaned while the job's group lives.
    signal(i32::try_from(b.id()).unwrap(), Signal::KILL);
    let _ = b.wait();
    assert!(alive(job));
    let o = env.run(&["lock", "show", "job"]);
    assert!(stdout(&o).contains("orphaned"), "{}", stdout(&o));
    signal(job, Signal::KILL);
    eventually("the job to be gone", || !alive(job));
}

#[test]
fn the_scheduler_alerts_uncontained_once_per_run_where_the_kernel_refuses() {
    let s = Sched::new("");
    s.write(
        "[jobs.x]\nevery = \"1h\"\nsteps = [{ name = \"a\", run = \"true\" }, { name = \"b\", run \
         = \"true\" }]\n",
    );
    let o = without_pid_namespaces(&format!("exec {BATON} run x"))
        .env("BATON_CONFIG", s.config())
        .current_dir(s.env.tmp.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log = std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap();
    let n = log.matches("\"uncontained\"").count();
    assert_eq!(n, 1, "{log}");
    // A job that asks for no namespace is not alerted.
    s.write("[jobs.x]\nevery = \"1h\"\ncontain = false\nrun = \"true\"\n");
    let o = without_pid_namespaces(&format!("exec {BATON} run x"))
        .env("BATON_CONFIG", s.config())
        .current_dir(s.env.tmp.path())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let log = std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap();
    assert_eq!(log.matches("\"uncontained\"").count(), 1, "{log}");
}

#[test]
fn root_without_cap_sys_admin_runs_uncontained_and_keeps_roots_powers() {
    let env = Env::new();
    let secret = env.path("secret");
    std::fs::write(&secret, "for nobody\n").unwrap();
    rustix::fs::chown(&secret, Some(rustix::process::Uid::from_raw(65534)), None).unwrap();
    std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    // A service unit or a container that drops CAP_SYS_ADMIN: a user
    // namespace would cost the job root's powers over other users' files,
    // so it runs without a namespace, and says so.
    let o = std::process::Command::new("setpriv")
        .args(["--bounding-set=-sys_admin", "--inh-caps=-sys_admin"])
        .arg(BATON)
        .args(["exec", "--name", "job", "--", "cat"])
        .arg(&secret)
        .env("BATON_STATE_DIR", env.state())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "for nobody\n");
    assert!(
        stderr(&o).contains("without a PID namespace"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_baton_started_by_a_contained_job_sees_its_own_namespace() {
    // A contained step shares its runner's /proc, which numbers processes
    // as the runner's namespace does: a `baton exec` in the job mounts a
    // /proc of its own namespace before it supervises anything, so it
    // finds (and stops) its own job's tree, and nothing else.
    let env = Env::new();
    let marker = env.path("ran");
    let o = env.exec_sh(
        "outer",
        &[],
        &format!(
            "{BATON} exec --name inner --kill-grace 1s -- sh -c 'sleep 60 & touch {}'",
            marker.display()
        ),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(marker.exists(), "the inner job did not run");
    assert!(
        stderr(&o).contains("left 1 process running"),
        "the inner baton saw other processes than its job's: {}",
        stderr(&o)
    );
    // And where /proc was left to the parent namespace by hand.
    let o = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child", "--"])
        .arg(BATON)
        .args([
            "exec",
            "--name",
            "x",
            "--",
            "sh",
            "-c",
            "sleep 60 & touch \"$0\"",
        ])
        .arg(&marker)
        .env("BATON_STATE_DIR", env.state())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("left 1 process running"),
        "{}",
        stderr(&o)
    );
}
