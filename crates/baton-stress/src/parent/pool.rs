//! The contender processes of one trial.
//!
//! A [`Pool`] spawns the binary's hidden `contend` subcommand, reads every
//! child's stdout on a thread of its own into one channel (so the parent
//! sees events in the order they arrive, whichever child sent them), writes
//! `go T` and end-of-file to their stdins, signals them, and kills and reaps
//! them. A child's stderr goes to a file in the trial directory, read only
//! when the child failed. Dropping a pool kills and reaps whatever still
//! runs: no trial leaves a process behind.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rustix::process::{Pid, Signal};

/// One line from a child, or its end of output (`None`).
pub(crate) type Msg = (usize, Option<String>);

pub(crate) struct Pool {
    exe: PathBuf,
    dir: PathBuf,
    kids: Vec<Kid>,
    tx: mpsc::Sender<Msg>,
    rx: mpsc::Receiver<Msg>,
}

struct Kid {
    child: Child,
    stdin: Option<ChildStdin>,
    stderr: PathBuf,
    status: Option<ExitStatus>,
    killed: bool,
}

impl Pool {
    /// A pool spawning `exe`, with stderr files in `dir`.
    pub(crate) fn new(exe: &Path, dir: &Path) -> Self {
        let (tx, rx) = mpsc::channel();
        Self {
            exe: exe.to_owned(),
            dir: dir.to_owned(),
            kids: Vec::new(),
            tx,
            rx,
        }
    }

    /// Spawns `exe contend ARGS…`; returns its index.
    ///
    /// # Errors
    ///
    /// When the process cannot be spawned.
    pub(crate) fn spawn(&mut self, args: &[OsString]) -> Result<usize, String> {
        let idx = self.kids.len();
        let stderr = self.dir.join(format!("stderr.{idx}"));
        let err = std::fs::File::create(&stderr)
            .map_err(|e| format!("failed to create {}: {e}", stderr.display()))?;
        let mut child = Command::new(&self.exe)
            .arg("contend")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .map_err(|e| format!("failed to spawn {}: {e}", self.exe.display()))?;
        let stdin = child.stdin.take();
        if let Some(out) = child.stdout.take() {
            let tx = self.tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if tx.send((idx, Some(line))).is_err() {
                        return;
                    }
                }
                let _ = tx.send((idx, None)); // OK to ignore: the pool is gone.
            });
        }
        self.kids.push(Kid {
            child,
            stdin,
            stderr,
            status: None,
            killed: false,
        });
        Ok(idx)
    }

    /// The next message, waiting at most `wait`.
    pub(crate) fn recv(&self, wait: Duration) -> Option<Msg> {
        self.rx.recv_timeout(wait).ok()
    }

    /// Writes a line to a child's stdin (ignoring a child that is gone).
    pub(crate) fn tell(&mut self, idx: usize, line: &str) {
        if let Some(s) = self.kids.get_mut(idx).and_then(|k| k.stdin.as_mut()) {
            // OK to ignore: a child that died has its death reported elsewhere.
            let _ = writeln!(s, "{line}");
            let _ = s.flush();
        }
    }

    /// Closes a child's stdin.
    pub(crate) fn close(&mut self, idx: usize) {
        if let Some(k) = self.kids.get_mut(idx) {
            k.stdin = None;
        }
    }

    /// The child's pid.
    pub(crate) fn pid(&self, idx: usize) -> u32 {
        self.kids[idx].child.id()
    }

    /// Sends `sig` to a child.
    pub(crate) fn signal(&self, idx: usize, sig: Signal) -> Result<(), String> {
        let pid = self.pid(idx);
        let p = Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX))
            .ok_or_else(|| format!("pid {pid} is not a valid pid"))?;
        rustix::process::kill_process(p, sig)
            .map_err(|e| format!("failed to send {sig:?} to pid {pid}: {e}"))
    }

    /// `kill -9`, then reaps. The child counts as killed, not failed.
    pub(crate) fn kill9(&mut self, idx: usize) -> Result<(), String> {
        if self.kids[idx].status.is_some() {
            return Ok(());
        }
        self.kids[idx].killed = true;
        // ESRCH means it already exited: still reap it.
        let _ = self.signal(idx, Signal::KILL);
        self.reap(idx).map(|_| ())
    }

    /// Waits for a child to exit; returns its status.
    pub(crate) fn reap(&mut self, idx: usize) -> Result<ExitStatus, String> {
        let k = &mut self.kids[idx];
        if let Some(s) = k.status {
            return Ok(s);
        }
        k.stdin = None;
        let s = k
            .child
            .wait()
            .map_err(|e| format!("failed to wait for pid {}: {e}", k.child.id()))?;
        k.status = Some(s);
        Ok(s)
    }

    /// Whether the parent killed this child.
    pub(crate) fn was_killed(&self, idx: usize) -> bool {
        self.kids[idx].killed
    }

    /// What the child wrote on stderr (at most 2000 bytes).
    pub(crate) fn stderr(&self, idx: usize) -> String {
        let s = std::fs::read_to_string(&self.kids[idx].stderr).unwrap_or_default();
        s.chars().take(2000).collect::<String>().trim().to_owned()
    }

    /// How many children were spawned.
    pub(crate) fn len(&self) -> usize {
        self.kids.len()
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for k in &mut self.kids {
            if k.status.is_none() {
                // OK to ignore: best effort on the way out; a stopped child
                // dies of SIGKILL too.
                let _ = k.child.kill();
                let _ = k.child.wait();
            }
        }
    }
}
