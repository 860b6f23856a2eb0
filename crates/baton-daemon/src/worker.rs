//! Starting a run: a `baton __run` process in a process group of its own,
//! given the configuration in force on stdin, whose first line of stdout
//! says what the lock decided. This is the only place the daemon starts a
//! process; the run itself (steps, renewal, whole-tree stop) is the
//! runner's, inside that process.
//!
//! The worker is never killed by the daemon except at shutdown, and then
//! with SIGTERM, which stops its job's whole tree before its lease is
//! released. A daemon that dies leaves its workers running: each finishes,
//! records and releases on its own.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use baton_sched::engine::run::{Start, Told};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::OwnedSemaphorePermit;

use crate::state::{Daemon, Flight, Loaded, key};

/// How long a worker may take to say what the lock decided (its mutex wait
/// is bounded by seconds; this only guards against a stuck process).
const ANSWER: Duration = Duration::from_secs(120);

/// Why no answer came from a worker: it could not be started, or said
/// nothing the daemon reads.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unanswered {
    /// The configuration in force cannot be written for the worker.
    #[error("failed to encode the configuration: {0}")]
    Encode(#[source] serde_json::Error),
    /// The worker's process cannot be started.
    #[error("failed to start {} __run: {source}", exe.display())]
    Spawn {
        /// The executable.
        exe: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The worker has no standard output to answer on.
    #[error("the run's process has no stdout")]
    NoStdout,
    /// The worker said nothing within [`ANSWER`].
    #[error("the run's process said nothing for {}s", ANSWER.as_secs())]
    Silent,
    /// The worker's answer cannot be read.
    #[error("failed to read the run's answer: {0}")]
    Read(#[source] std::io::Error),
    /// The worker ended before it answered.
    #[error("the run's process ended before the lock decided")]
    Ended,
    /// The worker answered something that is no answer.
    #[error("the run's process answered {line:?}: {source}")]
    Answer {
        /// What it answered.
        line: String,
        /// Why it is no answer.
        source: serde_json::Error,
    },
    /// The task that started the worker failed.
    #[error("the start failed: {0}")]
    Task(#[source] tokio::task::JoinError),
}

impl Unanswered {
    /// Whether no worker process was made at all (the system refused it):
    /// nothing of the run was tried, so its occurrence did not run.
    pub(crate) fn never_started(&self) -> bool {
        matches!(self, Self::Encode(_) | Self::Spawn { .. })
    }
}

/// Starts a run of `job` for `start` under `permit`, and returns what the
/// lock decided; `None` when the daemon already has a worker for it.
pub(crate) async fn start(
    d: &Arc<Daemon>,
    loaded: &Arc<Loaded>,
    job: &str,
    start: Start,
    permit: OwnedSemaphorePermit,
) -> Option<Result<Told, Unanswered>> {
    let serial = d.serial.fetch_add(1, Ordering::Relaxed);
    let k = key(job, start, serial);
    let mut cmd = tokio::process::Command::new(&d.opts.exe);
    if let Some(dir) = d.state_flag() {
        cmd.arg("--state-dir").arg(dir);
    }
    cmd.arg("__run").arg("--job").arg(job);
    if d.opts.log_format_json {
        cmd.arg("--log-format").arg("json");
    }
    match start {
        Start::Scheduled(at) => cmd.arg("--at").arg(at.to_string()),
        Start::Queue => cmd.arg("--queue"),
        Start::Manual => cmd.arg("--manual"),
    };
    // A run's trace is its own: not one the daemon was started in, which
    // would gather every run of its life in one trace.
    cmd.env_remove(baton_sched::engine::trace::context::VARIABLE);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(false);
    let input = match serde_json::to_vec(&loaded.snapshot) {
        Ok(v) => v,
        Err(e) => return Some(Err(Unanswered::Encode(e))),
    };
    let mut child = {
        let mut flights = d.flights();
        if flights.contains_key(&k) {
            return None;
        }
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(source) => {
                return Some(Err(Unanswered::Spawn {
                    exe: d.opts.exe.clone(),
                    source,
                }));
            }
        };
        let pid = child.id().unwrap_or(0);
        flights.insert(k.clone(), Flight { pid });
        child
    };
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    // The worker's end: whenever it comes, the flight is over.
    let waiter = Arc::clone(d);
    let wk = k.clone();
    tokio::spawn(async move {
        let _ = child.wait().await;
        drop(permit);
        waiter.flights().remove(&wk);
        waiter.ended.notify_waiters();
    });
    if let Some(mut i) = stdin {
        // A worker that died before reading says so below (no first line).
        let _ = i.write_all(&input).await;
        let _ = i.shutdown().await;
    }
    let Some(out) = stdout else {
        return Some(Err(Unanswered::NoStdout));
    };
    let mut line = String::new();
    let mut reader = BufReader::new(out);
    let answer = tokio::time::timeout(ANSWER, reader.read_line(&mut line)).await;
    // Anything more on stdout is drained, so the worker never meets a
    // closed pipe.
    tokio::spawn(async move {
        let _ = tokio::io::copy(&mut reader, &mut tokio::io::sink()).await;
    });
    let told = match answer {
        Err(_) => Err(Unanswered::Silent),
        Ok(Err(e)) => Err(Unanswered::Read(e)),
        Ok(Ok(0)) => Err(Unanswered::Ended),
        Ok(Ok(_)) => {
            serde_json::from_str::<Told>(line.trim()).map_err(|source| Unanswered::Answer {
                line: line.trim().to_owned(),
                source,
            })
        }
    };
    Some(told)
}
