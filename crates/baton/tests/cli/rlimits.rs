//! Resource limits on baton's own processes, as a service manager, a
//! container or an operator sets them: what the job may take (every task its
//! user may have) never makes its lease look lost, and a write past the
//! file-size limit is an error baton reports, never a signal that kills a
//! supervisor and its job without a word.

use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use crate::sched::Sched;
use crate::support::{BATON, Env, code, stderr, stdout, wrapped};

/// The uid and gid of `nobody` and `nogroup` on Debian.
const NOBODY: u32 = 65534;

#[test]
fn a_job_that_takes_every_task_its_user_may_have_keeps_its_lease() {
    // As `nobody`, with at most 64 tasks for the user (`ulimit -u`, a
    // unit's `TasksMax=`): the job forks until the kernel refuses, and
    // keeps every task for 3 s, three TTLs. A renewal that needed a task
    // then could not be made, and the run would stop as if its lease were
    // lost (exit 76).
    let env = Env::new();
    std::fs::set_permissions(env.path(""), std::fs::Permissions::from_mode(0o755)).unwrap();
    let state = env.path("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let nobody = Some(rustix::process::Uid::from_raw(NOBODY));
    let nogroup = Some(rustix::process::Gid::from_raw(NOBODY));
    rustix::fs::chown(&state, nobody, nogroup).unwrap();
    let job = "import os, time\n\
               kids = []\n\
               while True:\n\
               \x20   try:\n\
               \x20       pid = os.fork()\n\
               \x20   except OSError as e:\n\
               \x20       print('refused after', len(kids), e, flush=True)\n\
               \x20       break\n\
               \x20   if pid == 0:\n\
               \x20       time.sleep(3)\n\
               \x20       os._exit(0)\n\
               \x20   kids.append(pid)\n\
               for k in kids:\n\
               \x20   os.waitpid(k, 0)\n";
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["prlimit", "--nproc=64:64", BATON, "exec", "--state-dir"])
        .arg(&state)
        .args(["--name", "j", "--ttl", "1s", "--no-contain", "--"])
        .args(["python3", "-c", job])
        .env("HOME", "/nonexistent")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    // The job did take every task it could.
    assert!(stdout(&o).contains("refused after"), "{}", stdout(&o));
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("renew"), "{}", stderr(&o));
}

#[test]
fn a_run_past_its_file_size_limit_is_recorded_as_it_ended_and_never_killed() {
    // The job writes 2 MB; the run's file-size limit (`ulimit -f`) lets the
    // ledger grow but not the job's log that far. The log's write fails and
    // is said; the run goes on, ends and is recorded `ok`. With the
    // signal's default action, SIGXFSZ killed the supervisor and its
    // contained job (exit 153, nothing said, the run `abandoned`).
    let s = Sched::new(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\n\
         run = \"if [ -e big ]; then head -c 2000000 /dev/zero | tr '\\\\0' a; fi; echo done\"\n",
    );
    // A first run makes the ledger and the job's log.
    let o = s.run(&["run", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut largest = 0;
    for dir in [s.env.state(), s.env.state().join("logs")] {
        for e in std::fs::read_dir(dir).unwrap() {
            largest = largest.max(e.unwrap().metadata().unwrap().len());
        }
    }
    std::fs::write(s.env.path("big"), "").unwrap();
    let limit = format!("--fsize={}", largest + 512 * 1024);
    // Its 2 MB of output are thrown away as they come: a test's reader,
    // descheduled on a loaded machine, would have baton drop what it could
    // not take (its stdout never blocks it) and exit 2 for the loss.
    let o = wrapped(&s.cmd(&["run", "x"]), &["prlimit", &limit])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("File too large"), "{}", stderr(&o));
    let h = s.json(&["history", "x", "--json"]);
    let runs = h.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{h}");
    assert_eq!(runs[0]["verdict"], "ok", "{h}");
}
