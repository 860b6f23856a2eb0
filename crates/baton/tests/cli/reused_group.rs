//! A crashed run's group id taken over by another user: once the job's
//! group is empty, a local user can own a process with its id, make it a
//! group leader, leave a member in the group and let the leader exit. A
//! contained run's lease still reads dead (its init, the recorded leader,
//! is gone, and nothing of the step outlives it); an uncontained run's
//! stays orphaned (fail closed), but every surface says whose the members
//! are, and `lock break --force` is the way out it names.
//!
//! The other user's process gets the id through `ns_last_pid` (root), so
//! no pid cycling is needed; everything else is real: the killed baton,
//! the group, the other user's process, the lock.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use baton_testkit::user::User;
use rustix::process::{Pid, Signal};

use crate::support::{Env, alive, code, eventually, root, signal, stderr, stdout, wait_for_file};

/// The `pgid=` the lock record of `name` names, and whether it says
/// `jinit=1`.
fn recorded_group(env: &Env, name: &str) -> (i32, bool) {
    let line = std::fs::read_to_string(env.lock(name)).unwrap();
    let pgid = line
        .split_ascii_whitespace()
        .find_map(|w| w.strip_prefix("pgid="))
        .unwrap_or_else(|| panic!("no pgid= in {line}"))
        .parse()
        .unwrap();
    (pgid, line.split_ascii_whitespace().any(|w| w == "jinit=1"))
}

/// Whether group `pgid` has any member.
fn group_exists(pgid: i32) -> bool {
    let pid = Pid::from_raw(pgid).unwrap();
    !matches!(
        rustix::process::test_kill_process_group(pid),
        Err(rustix::io::Errno::SRCH)
    )
}

/// Starts `baton exec --name NAME EXTRA -- sleep 600`, kills it with
/// SIGKILL once its job runs, and waits until its job's group is empty.
/// Returns the group id its record still names.
fn crash(env: &Env, name: &str, extra: &[&str]) -> (i32, bool) {
    let started = env.path("started");
    let mut args = vec!["--ttl", "1h"];
    args.extend_from_slice(extra);
    let mut b = env.spawn_sh(
        name,
        &args,
        &format!("echo up > {}; exec sleep 600", started.display()),
    );
    wait_for_file(&started);
    let recorded = recorded_group(env, name);
    signal(i32::try_from(b.id()).unwrap(), Signal::KILL);
    let _ = b.wait();
    if !recorded.1 {
        // Uncontained, the job outlives its supervisor: end it by hand.
        let _ =
            rustix::process::kill_process_group(Pid::from_raw(recorded.0).unwrap(), Signal::KILL);
    }
    eventually("the crashed job's group to empty", || {
        !group_exists(recorded.0) && !alive(recorded.0)
    });
    (recorded.0, recorded.1)
}

/// The other user's process left in the group; killed when dropped, so a
/// failed test leaves nothing behind.
struct Member(i32);

impl Drop for Member {
    fn drop(&mut self) {
        signal(self.0, Signal::KILL);
    }
}

/// As `user`, takes pid `pgid` for a group leader, leaves a sleeping member
/// in its group, and lets the leader exit: group `pgid` then holds only
/// `user`'s process, and its leader is gone.
fn reuse_group_as(user: &User, pgid: i32) -> Member {
    for _ in 0..500 {
        // The next pid the kernel hands out is `pgid` unless another
        // process forks first; then try again.
        std::fs::write("/proc/sys/kernel/ns_last_pid", (pgid - 1).to_string()).unwrap();
        let mut c = Command::new("setpriv")
            .args([
                &format!("--reuid={}", user.uid),
                &format!("--regid={}", user.gid),
                "--clear-groups",
                "sh",
                "-c",
                "sleep 600 </dev/null >/dev/null 2>&1 & echo $!",
            ])
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let got = i32::try_from(c.id()).unwrap();
        let mut out = String::new();
        c.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let _ = c.wait();
        let member: i32 = out.trim().parse().unwrap();
        if got == pgid {
            let member = Member(member);
            assert!(!alive(pgid) && alive(member.0));
            return member;
        }
        signal(member, Signal::KILL);
    }
    panic!("pid {pgid} could not be had");
}

#[test]
fn a_contained_runs_group_id_reused_by_another_user_does_not_keep_its_lease() {
    if !root() {
        eprintln!("skipped: needs root (another user, ns_last_pid)");
        return;
    }
    let env = Env::new();
    let (pgid, contained) = crash(&env, "victim", &[]);
    assert!(contained, "a root exec runs contained and says so: jinit=1");
    let member = reuse_group_as(&User::nobody(), pgid);
    // The step's init, the group's recorded leader, is gone: nothing of
    // the step can run, whoever is in group `pgid` now.
    let o = env.run(&["lock", "show", "victim"]);
    assert!(stdout(&o).contains("dead"), "{}", stdout(&o));
    let o = env.exec_sh("victim", &["--verbose"], "echo RAN");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "RAN\n");
    // Nothing was signalled on the way.
    assert!(alive(member.0));
}

#[test]
fn an_uncontained_runs_group_of_another_users_stays_refused_and_says_why() {
    if !root() {
        eprintln!("skipped: needs root (another user, ns_last_pid)");
        return;
    }
    let env = Env::new();
    let (pgid, contained) = crash(&env, "victim", &["--no-contain"]);
    assert!(!contained);
    let nobody = User::nobody();
    let member = reuse_group_as(&nobody, pgid);
    let whose = format!("uid {}", nobody.uid);
    // Still refused (a job's processes may change user), but the refusal
    // names whose the members are and what it likely is.
    let o = env.exec_sh("victim", &["--verbose"], "echo RAN");
    assert_eq!(code(&o), 75, "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    let e = stderr(&o);
    assert!(e.contains("orphaned"), "{e}");
    assert!(e.contains(&whose), "{e}");
    assert!(e.contains("not to the holder's uid 0 (root)"), "{e}");
    assert!(e.contains("reusing the group id"), "{e}");
    let o = env.run(&["lock", "show", "victim"]);
    let s = stdout(&o);
    assert!(s.contains("orphaned"), "{s}");
    assert!(s.contains(&whose), "{s}");
    assert!(s.contains("lock break --force victim"), "{s}");
    // --kill verifies nothing it could signal, and says what works.
    let o = env.run(&["lock", "break", "victim", "--kill", "--grace", "1s"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains(&whose), "{}", stderr(&o));
    assert!(stderr(&o).contains("lock break --force"), "{}", stderr(&o));
    assert!(alive(member.0), "--kill signalled another user's process");
    // The way out it names works.
    let o = env.run(&["lock", "break", "victim", "--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = env.exec_sh("victim", &[], "echo RAN");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o), "RAN\n");
    drop(member);
}
