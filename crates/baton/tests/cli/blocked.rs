//! A supervisor whose standard output or error nobody reads (a stuck log
//! collector, Docker's blocking log mode, a full pipe) still renews, and
//! still stops its job on time when its lease is lost: nothing it writes
//! may block it.

use std::process::{Child, Stdio};
use std::time::Duration;

use baton_testkit::process::full_pipe;
use baton_testkit::within;

use crate::sched::Sched;
use crate::support::{BATON, Env, alive, pause, wait_for_file, write_pid};

/// How long a job may outlive its lost lease here: the bound is a third
/// of the TTL plus the kill grace (about 1.5 s in these tests); this leaves
/// room for a loaded machine, and a job whose supervisor is stuck would run
/// its whole two minutes.
const STOPPED_WITHIN: Duration = Duration::from_secs(30);

/// Whether `pid` is gone within [`STOPPED_WITHIN`].
fn stopped(pid: i32) -> bool {
    within(STOPPED_WITHIN, || !alive(pid))
}

/// Reaps `child`, killing it first if it is still running after
/// [`STOPPED_WITHIN`].
fn finish(mut child: Child) -> Option<i32> {
    let mut code = None;
    let done = within(STOPPED_WITHIN, || match child.try_wait() {
        Ok(Some(s)) => {
            code = s.code();
            true
        }
        _ => false,
    });
    if !done {
        let _ = child.kill();
        let _ = child.wait();
    }
    code
}

#[test]
fn exec_whose_stderr_nobody_reads_still_stops_its_job_when_its_lease_is_lost() {
    let env = Env::new();
    let pidfile = env.path("pid");
    let (_reader, full) = full_pipe();
    // The budget passes at once, so baton has an alert to write while the
    // job runs; the forced break is seen at the next renewal (every 100 ms).
    let b = env
        .cmd(&[
            "exec",
            "--name",
            "job",
            "--ttl",
            "300ms",
            "--kill-grace",
            "1s",
            "--max-runtime",
            "100ms",
            "--",
            "sh",
            "-c",
        ])
        .arg(format!("{}; exec sleep 120", write_pid(&pidfile)))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(full))
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    pause(500); // the overrunning alert has been written (or is waiting)
    let o = env.run(&["lock", "break", "job", "--force"]);
    assert!(o.status.success());
    assert!(
        stopped(job),
        "the job ran on after its lease was lost: the supervisor was stuck writing to stderr"
    );
    assert_eq!(finish(b), Some(76));
}

#[test]
fn exec_in_a_pid_namespace_whose_group_leader_is_outside_it_still_stops_its_job() {
    // `unshare --pid --fork`, as a container's runtime or the fault
    // campaign's hosts start baton: its process group's leader is in the
    // parent namespace, so getpgrp(2) says 0 there. Stopping the job asks
    // for the group (a job's group is never signalled when it is baton's
    // own), which once panicked, and the panic's message then waited on the
    // full stderr forever while the job ran on.
    let env = Env::new();
    let started = env.path("started");
    let (_reader, full) = full_pipe();
    let script = format!(
        "{BATON} exec --name job --ttl 300ms --kill-grace 1s -- sh -c 'echo > {}; exec sleep \
         120'; exit $?",
        started.display()
    );
    let b = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "--kill-child", "--"])
        .args(["sh", "-c"])
        .arg(script)
        .env("BATON_STATE_DIR", env.state())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(full))
        .spawn()
        .unwrap();
    wait_for_file(&started);
    let o = env.run(&["lock", "break", "job", "--force"]);
    assert!(o.status.success(), "{}", crate::support::stderr(&o));
    // baton exits only once its job's tree is gone.
    assert_eq!(
        finish(b),
        Some(76),
        "the job ran on after its lease was lost: the supervisor was stuck"
    );
}

#[test]
fn run_whose_stderr_nobody_reads_still_self_fences_when_it_cannot_renew() {
    let s = Sched::new("");
    let pidfile = s.env.path("pid");
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nttl = \"1s\"\nkill_grace = \"1s\"\nrun = {:?}\n",
        format!("{}; exec sleep 120", write_pid(&pidfile))
    ));
    let (_reader, full) = full_pipe();
    let b = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::from(full))
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    // Another process keeps the lock file's mutex: every renewal fails, and
    // each failure is a warning on stderr.
    let mut blocker = std::process::Command::new("flock")
        .arg(s.env.state().join("locks").join("x.lock"))
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    let stopped = stopped(job);
    let _ = blocker.kill();
    let _ = blocker.wait();
    assert!(
        stopped,
        "the job outlived a lease its holder could not renew: the supervisor was stuck writing \
         to stderr"
    );
    assert_eq!(finish(b), Some(1));
}

#[test]
fn run_whose_stdout_nobody_reads_still_stops_its_job_and_logs_its_output() {
    let s = Sched::new("");
    let pidfile = s.env.path("pid");
    // The job's output is copied to `baton run`'s stdout, which is full;
    // more of it than baton keeps for a slow reader.
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nttl = \"300ms\"\nkill_grace = \"1s\"\nrun = {:?}\n",
        format!(
            "{}; yes line-of-output | head -c 400000; exec sleep 120",
            write_pid(&pidfile)
        )
    ));
    let (_reader, full) = full_pipe();
    let b = s
        .cmd(&["run", "x"])
        .stdout(Stdio::from(full))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    // The 400 kB are out of the job (its log has them), more than baton
    // keeps for the slow reader.
    let logs = s.env.state().join("logs");
    let logged = || -> u64 {
        std::fs::read_dir(&logs)
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().starts_with("x_"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    crate::support::eventually("the job's output in its log", || logged() >= 400_000);
    let config = s.config();
    let o = s.run(&[
        "lock",
        "break",
        "x",
        "--config",
        config.to_str().unwrap(),
        "--force",
    ]);
    assert!(o.status.success(), "{}", crate::support::stderr(&o));
    assert!(
        stopped(job),
        "the job ran on after its lease was lost: the supervisor was stuck writing to stdout"
    );
    assert_eq!(finish(b), Some(1));
    let log: String = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("x_"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert!(log.contains("line-of-output"), "{log}");
    assert!(log.contains("not copied to standard output"), "{log}");
}

#[test]
fn run_whose_stdout_reader_is_too_slow_says_what_was_lost_and_exits_2() {
    // The job's 700 kB are copied to `baton run`'s stdout, a pipe whose
    // reader reads nothing until baton has exited: more than the pipe and
    // baton's buffer hold. The run itself is whole (recorded `ok`), but its
    // output was not written whole: said on stderr, exit 2, as for a full
    // disk. A reader that is gone (`| head`) is no failure; this one is
    // there and slow.
    let s = Sched::new(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"head -c 700000 /dev/zero | tr '\\\\0' a\"\n",
    );
    let (reader, full) = full_pipe();
    let b = s
        .cmd(&["run", "x"])
        .stdout(Stdio::from(full))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let o = b.wait_with_output().unwrap();
    drop(reader);
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("bytes were not written to standard output"),
        "{said}"
    );
    let h = s.json(&["history", "x", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h}");
}
