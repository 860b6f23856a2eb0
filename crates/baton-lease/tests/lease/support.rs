//! Shared fixtures: a temporary lock directory, the holder process, and a
//! reader for its line protocol.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub use baton_testkit::{PATIENCE, eventually, pause};

use baton_lease::{Clock, SystemClock};

pub const HOLDER: &str = env!("CARGO_BIN_EXE_baton-lease-holder");

pub struct Dir {
    pub tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }
    pub fn lock(&self) -> PathBuf {
        self.tmp.path().join("job.lock")
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
}

/// A running holder process and its output lines.
pub struct Holder {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Holder {
    pub fn spawn(mode: &str, lock: &Path, extra: &[&str]) -> Self {
        let mut child = Command::new(HOLDER)
            .arg(mode)
            .arg(lock)
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let lines = read_lines(child.stdout.take().unwrap());
        Self {
            child,
            stdin,
            lines,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The next line, skipping `renewed` chatter unless asked for.
    pub fn next(&self) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(PATIENCE)
                .expect("the holder said nothing in time");
            if line != "renewed" {
                return line;
            }
        }
    }

    /// Waits for a `renewed` line.
    pub fn renewed(&self) {
        loop {
            let line = self
                .lines
                .recv_timeout(PATIENCE)
                .expect("the holder never renewed");
            if line == "renewed" {
                return;
            }
            assert!(
                !line.starts_with("lost"),
                "the holder lost its lease: {line}"
            );
        }
    }

    /// Closes stdin, which tells a `hold` to release, and returns its last line.
    pub fn finish(mut self) -> String {
        drop(self.stdin.take());
        let last = self.next();
        self.child.wait().unwrap();
        last
    }

    pub fn signal(&self, sig: rustix::process::Signal) {
        rustix::process::kill_process(rustix::process::Pid::from_raw(self.pid()).unwrap(), sig)
            .unwrap();
    }

    /// kill -9, then reap.
    pub fn kill9(mut self) {
        self.signal(rustix::process::Signal::KILL);
        self.child.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_lines(out: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// A boot-clock instant `ms` milliseconds from now, for `--start-at-ms`.
pub fn start_in(ms: u64) -> String {
    (SystemClock.boot() + Duration::from_millis(ms))
        .as_millis()
        .to_string()
}

/// Whether `flock -n FILE true` succeeds: flock(1) interop.
pub fn flock_n_succeeds(path: &Path) -> bool {
    Command::new("flock")
        .arg("-n")
        .arg(path)
        .arg("true")
        .status()
        .unwrap()
        .success()
}

/// A pid that was just alive and is now reaped: no process has it.
pub fn a_dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}
