//! The fault campaign's failpoints (`baton-faults`), compiled in only with
//! the `failpoints` feature: a build that ships never has this module, and
//! every `fail_point!` in the libraries is then nothing at all.
//!
//! Two ways to arm a point, both read once at start:
//!
//! - `FAILPOINTS`, as the `fail` crate reads it (`claim=panic`,
//!   `renewal=sleep(3000)`); a panic aborts the process, which is a
//!   `kill -9` of it at that point;
//! - `BATON_FAULT="POINT=ACTION[@N];…"`, whose actions act on the whole run
//!   from the point: `kill` (SIGKILL to this process), `kill-parent`
//!   (SIGKILL to the tick or daemon that forked this process, when it is a
//!   baton; the run goes on), `kill-job` (SIGKILL to every descendant of this
//!   process: the step's tree; the run goes on), `stall:MS` (the thread
//!   sleeps). `@N` acts on the Nth time the point is reached (default 1)
//!   and on no other. Each action is first appended to the file
//!   `BATON_FAULT_LOG` names, as `POINT ACTION PID HOST`, so the campaign
//!   knows the fault happened and in which process.
//!
//! This module must never be reachable in a build without the feature.

#![allow(clippy::disallowed_methods)] // A stall sleeps for real: the campaign's fault.

use std::io::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Arms the points; the returned value keeps `fail`'s configuration for the
/// process's life.
pub fn setup() -> fail::FailScenario<'static> {
    let scenario = fail::FailScenario::setup();
    let spec = std::env::var("BATON_FAULT").unwrap_or_default();
    for entry in spec.split(';').map(str::trim).filter(|e| !e.is_empty()) {
        let Some((point, action)) = entry.split_once('=') else {
            say!("baton: BATON_FAULT: {entry:?} is not POINT=ACTION");
            continue;
        };
        let (action, nth) = match action.split_once('@') {
            Some((a, n)) => (a.to_owned(), n.parse().unwrap_or(1)),
            None => (action.to_owned(), 1),
        };
        let name = point.to_owned();
        let hits = AtomicUsize::new(0);
        let armed = fail::cfg_callback(point, move || {
            if hits.fetch_add(1, Ordering::SeqCst) + 1 == nth {
                act(&name, &action);
            }
        });
        if let Err(e) = armed {
            say!("baton: BATON_FAULT: {point}: {e}");
        }
    }
    scenario
}

fn act(point: &str, action: &str) {
    log_hit(point, action);
    let me = rustix::process::getpid();
    match action.split_once(':') {
        Some(("stall", ms)) => {
            std::thread::sleep(std::time::Duration::from_millis(ms.parse().unwrap_or(1000)));
        }
        _ if action == "kill" => {
            let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
        }
        _ if action == "kill-parent" => {
            if let Some(parent) = rustix::process::getppid()
                && std::fs::read_link(format!("/proc/{}/exe", parent.as_raw_nonzero()))
                    .ok()
                    .zip(std::env::current_exe().ok())
                    .is_some_and(|(a, b)| a == b)
            {
                let _ = rustix::process::kill_process(parent, rustix::process::Signal::KILL);
            }
        }
        _ if action == "kill-job" => {
            // OK to ignore: a /proc that cannot be listed leaves nothing to
            // kill, and the trial sees the fault did not take effect.
            let me = me.as_raw_nonzero().get().unsigned_abs();
            for m in baton_lease::job::descendants(me, &[]).unwrap_or_default() {
                let _ = baton_lease::job::signal_process(m.pid, 9); // SIGKILL
            }
        }
        _ => say!("baton: BATON_FAULT: {point}: unknown action {action:?}"),
    }
}

fn log_hit(point: &str, action: &str) {
    let Some(path) = std::env::var_os("BATON_FAULT_LOG") else {
        return;
    };
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let line = format!("{point} {action} {} {}\n", std::process::id(), host.trim());
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}
