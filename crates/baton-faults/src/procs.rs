//! The processes a trial started, found by the mark every one of them
//! inherits (`BATON_FAULTS_TRIAL=…` in its environment, which baton passes
//! on to its workers and jobs), wherever they went: another session, a
//! host's pid namespace, re-parented to init.

use std::path::{Path, PathBuf};

/// The name of the mark.
pub(crate) const MARK: &str = "BATON_FAULTS_TRIAL";

/// A live process carrying `mark`.
#[derive(Debug, Clone)]
pub(crate) struct Marked {
    pub(crate) pid: i32,
    pub(crate) cmdline: String,
}

/// Every live process (not a zombie) whose environment carries `mark`.
pub(crate) fn marked(mark: &str) -> Vec<Marked> {
    let needle = format!("{MARK}={mark}");
    let mut out = Vec::new();
    let me = std::process::id();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if u32::try_from(pid).is_ok_and(|p| p == me) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if !env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            continue;
        }
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, r)| r.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if zombie {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .split('\0')
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        out.push(Marked { pid, cmdline });
    }
    out
}

/// SIGKILL to `pid`.
pub(crate) fn kill(pid: i32) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        // OK to ignore: it may be gone already.
        let _ = rustix::process::kill_process(p, rustix::process::Signal::KILL);
    }
}

/// A signal to `pid`.
pub(crate) fn signal(pid: i32, sig: rustix::process::Signal) {
    if let Some(p) = rustix::process::Pid::from_raw(pid) {
        // OK to ignore: it may be gone already.
        let _ = rustix::process::kill_process(p, sig);
    }
}

/// The pid of `pid` in the innermost pid namespace it belongs to (the
/// last `NSpid` field): what a process in a host's namespace calls itself,
/// and what baton records.
pub(crate) fn inner_pid(pid: i32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))?
        .split_whitespace()
        .last()?
        .parse()
        .ok()
}

/// The first child of `pid`, if any.
pub(crate) fn child_of(pid: u32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The parent of `pid`, from `/proc/PID/stat` (read after the last `)`:
/// a command's name may hold spaces and parentheses).
pub(crate) fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The value of `key` in `pid`'s environment.
pub(crate) fn env_of(pid: i32, key: &str) -> Option<String> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{key}=");
    env.split(|b| *b == 0).find_map(|kv| {
        kv.strip_prefix(prefix.as_bytes())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    })
}

/// The supervisor of run `run_id` of the trial `mark`: the nearest
/// ancestor of one of the run's job processes (those whose environment
/// says `BATON_RUN_ID=run_id`) that executes one of `exes` outside the job's
/// own PID namespace (inside it, the step's init is a fork of the runner,
/// and killing it kills the job, not its supervisor), as seen from here.
pub(crate) fn supervisor_of(mark: &str, run_id: &str, exes: &[&Path]) -> Option<u32> {
    let exes: Vec<PathBuf> = exes.iter().filter_map(|e| e.canonicalize().ok()).collect();
    let runs =
        |pid: u32| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|e| exes.contains(&e));
    let ns = |pid: u32| std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok();
    marked(mark)
        .into_iter()
        .filter(|p| env_of(p.pid, "BATON_RUN_ID").as_deref() == Some(run_id))
        .find_map(|p| {
            let mut pid = u32::try_from(p.pid).ok()?;
            let job_ns = ns(pid)?;
            for _ in 0..16 {
                if runs(pid) && ns(pid).is_some_and(|n| n != job_ns) {
                    return Some(pid);
                }
                pid = parent_of(pid).filter(|&p| p > 1)?;
            }
            None
        })
}
