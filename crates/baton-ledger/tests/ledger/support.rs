//! Fixtures: a state directory, times, runs and attempts built in one line,
//! and child processes that are this same test binary (see `main.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};

use baton_ledger::Ledger;
use baton_store::ledger::{Attempt, Finished, Miss, NewRun, Records, StepKind};
use baton_store::words::{AttemptOutcome, MissReason, RunVerdict};
use jiff::{SignedDuration, Timestamp};

/// The environment variable that makes the `child` test act as a child.
pub const CHILD_ROLE: &str = "BATON_LEDGER_TEST_CHILD";

/// A fixed instant the tests count from (the ledger never reads the clock).
pub fn t0() -> Timestamp {
    "2026-11-29T03:15:00Z".parse().unwrap()
}

/// `t0` plus `secs` seconds.
pub fn at(secs: i64) -> Timestamp {
    t0() + SignedDuration::from_secs(secs)
}

/// A state directory of its own, removed at the end of the test.
pub struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> PathBuf {
        self.dir().join("baton.db")
    }

    pub fn open(&self) -> Ledger {
        Ledger::open(self.dir(), t0()).unwrap()
    }

    /// Copies `baton.db` as it is now to `name` beside it.
    pub fn keep(&self, name: &str) -> PathBuf {
        let copy = self.dir().join(name);
        std::fs::copy(self.db(), &copy).unwrap();
        copy
    }

    /// Runs `sql` on `baton.db` through a connection of its own, closed
    /// before this returns, as another program would.
    pub fn tamper(&self, sql: &str) {
        rusqlite::Connection::open(self.db())
            .unwrap()
            .execute_batch(sql)
            .unwrap();
    }

    /// The files moved aside: `baton.db.corrupt-*` without their side files.
    pub fn corrupt_files(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                name.starts_with("baton.db.corrupt-")
                    && !["-wal", "-shm", "-journal"]
                        .iter()
                        .any(|s| name.ends_with(s))
            })
            .collect();
        found.sort();
        found
    }
}

/// The names of the jobs `ledger` knows, in order.
pub fn known_jobs(ledger: &mut Ledger) -> Vec<String> {
    ledger.jobs().unwrap().into_iter().map(|j| j.job).collect()
}

/// A scheduled run of `job` for occurrence `occ` (seconds after `t0`),
/// starting at the occurrence.
pub fn scheduled(job: &str, run_id: &str, occ: i64) -> NewRun {
    NewRun {
        run_id: run_id.into(),
        job: job.into(),
        occurrence: Some(at(occ).as_second()),
        fence: Some(1_000 + occ as u64),
        host: "ci-1".into(),
        pid: 4242,
        started: at(occ),
        backfill: false,
    }
}

/// A range of `job`'s occurrences that will not run, from `first` to `last`
/// (seconds after `t0`), one occurrence a minute, recorded as no streak.
pub fn range(job: &str, reason: MissReason, first: i64, last: i64) -> Miss<'_> {
    Miss {
        job,
        reason,
        first: at(first).as_second(),
        last: at(last).as_second(),
        count: ((last - first) / 60 + 1) as u64,
        at_least: false,
        detail: None,
        streak: false,
    }
}

/// One attempt of `step`, ten seconds long from `start`.
pub fn attempt(
    run: &NewRun,
    seq: u32,
    step: &str,
    outcome: AttemptOutcome,
    start: Timestamp,
) -> Attempt {
    Attempt {
        run_id: run.run_id.clone(),
        job: run.job.clone(),
        seq,
        step: step.into(),
        kind: StepKind::Step,
        attempt: 1,
        started: start,
        finished: start + SignedDuration::from_secs(10),
        exit_code: Some(if outcome == AttemptOutcome::Ok { 0 } else { 1 }),
        signal: None,
        outcome,
    }
}

/// The end of `run`, `secs` after it started.
pub fn finished(run: &NewRun, secs: i64, success: bool) -> Finished {
    Finished {
        run_id: run.run_id.clone(),
        job: run.job.clone(),
        finished: run.started + SignedDuration::from_secs(secs),
        verdict: if success {
            RunVerdict::Ok
        } else {
            RunVerdict::Failed
        },
        exit_code: if success { 0 } else { 1 },
        success,
    }
}

/// The line a child prints once it is ready for [`go`].
const READY: &str = "ledger-child-ready";

/// A child process: this test binary, running only the `child` test.
pub struct Kid {
    child: Child,
    out: BufReader<ChildStdout>,
}

/// Runs `n` children in `role` on the scene's state directory
/// (`STATE_DIR`), each told its number (`INDEX`) and a file of its own for
/// its answer (`OUT`): starts them, releases them at once, waits for each to
/// succeed, and returns their answers in order.
pub fn run_children(scene: &Scene, role: &str, n: usize) -> Vec<String> {
    let outs = tempfile::tempdir().unwrap();
    let out = |i: usize| outs.path().join(format!("out-{i}"));
    let mut children: Vec<_> = (0..n)
        .map(|i| {
            spawn_child(
                role,
                &[
                    ("STATE_DIR", scene.dir().display().to_string()),
                    ("INDEX", i.to_string()),
                    ("OUT", out(i).display().to_string()),
                ],
            )
        })
        .collect();
    go(&mut children);
    for (i, child) in children.into_iter().enumerate() {
        expect_success(child, &format!("{role} {i}"));
    }
    (0..n)
        .map(|i| std::fs::read_to_string(out(i)).unwrap())
        .collect()
}

/// Starts this test binary as a child in `role`, running only the `child`
/// test, with `env` set, and waits until it is ready. The child then waits
/// at [`wait_for_go`] until [`go`] releases it.
fn spawn_child(role: &str, env: &[(&str, String)]) -> Kid {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "child",
        "--nocapture",
        "--test-threads",
        "1",
        "-q",
    ])
    .env(CHILD_ROLE, role)
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let mut kid = Kid { child, out };
    let mut line = String::new();
    loop {
        line.clear();
        // A child that dies first ends its output: fail rather than wait.
        if kid.out.read_line(&mut line).unwrap() == 0 {
            let status = kid.child.wait().unwrap();
            panic!("the {role} child exited ({status}) before it was ready");
        }
        if line.trim_end() == READY {
            return kid;
        }
    }
}

/// Releases every child at once: each is blocked reading its standard
/// input, and wakes when the parent closes it.
fn go(kids: &mut [Kid]) {
    for kid in kids.iter_mut() {
        drop(kid.child.stdin.take());
    }
}

/// Says the child is ready, then blocks until the parent calls [`go`], so
/// that all children act within microseconds of each other.
pub fn wait_for_go() {
    println!("{READY}");
    std::io::stdout().flush().unwrap();
    let mut byte = [0u8; 1];
    // End of input is the signal (a parent that died sends it too).
    let _ = std::io::stdin().read(&mut byte);
}

/// Waits for a child (killing it after the test kit's patience); panics
/// with its output unless it succeeded.
fn expect_success(mut kid: Kid, what: &str) {
    let mut out = kid.out;
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = out.read_to_string(&mut rest);
        rest
    });
    let status = baton_testkit::wait_for_exit(&mut kid.child, what);
    let rest = reader.join().unwrap();
    assert!(
        status.success(),
        "{what} failed ({status}); its output:\n{rest}"
    );
}

/// An environment variable the parent set for a child.
pub fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("{name} is not set for the child"))
}
