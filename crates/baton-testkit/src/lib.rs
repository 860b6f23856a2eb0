//! Fixtures shared by baton's test suites: how long a test waits for another
//! process before it fails, the waits themselves, a headless browser
//! ([`browser`]) for tests that look at a page, a test HTTP server
//! ([`http`]) for HTTP steps, an HTTP client ([`client`]) for tests of
//! the daemon's API, a throwaway PostgreSQL server ([`pg`]), a PgBouncer
//! in front of it ([`pgbouncer`]), a throwaway certificate authority for
//! its TLS ([`ca`]), a TCP proxy
//! that a test can cut ([`proxy`]), simulated hosts made of Linux
//! namespaces ([`hosts`]), a thread run as another user ([`user`]), and
//! processes seen from outside: whether one still runs, and a pipe that
//! blocks its writer ([`process`]).
//!
//! Tests drive real processes, so they wait for real. A wait here bounds a
//! broken test; it never measures anything, and no test may assert on how
//! long something took. The library's clock chokepoint does not apply to
//! test fixtures, which is why this crate reads the clock and sleeps itself.

#![allow(clippy::disallowed_methods)] // Test fixtures wait for real (see above).

use std::time::{Duration, Instant};

pub mod http;

/// How long a test waits for another process before failing. Generous: it
/// bounds a broken test on a loaded machine, it measures nothing.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The wall clock now, in seconds since 1970: for a test that checks which
/// occurrence a process ran, never how long anything took.
pub fn wall_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Sleeps for `ms` milliseconds.
pub fn pause(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// Waits for `child` to exit; kills it and panics naming `what` after
/// [`PATIENCE`] (a hang is a failure, never a test that runs forever).
pub fn wait_for_exit(child: &mut std::process::Child, what: &str) -> std::process::ExitStatus {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("timed out waiting for {what}");
        }
        pause(20);
    }
}

/// Polls `f` every 10 ms until it holds or `limit` has passed; says
/// whether it held. For a bound that is part of what a test checks (a job
/// stopped well before anyone may take its lease over), never a speed.
pub fn within(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        pause(10);
    }
}

/// Polls `f` every 10 ms until it holds; panics naming `what` after
/// [`PATIENCE`].
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + PATIENCE;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        pause(10);
    }
}

/// A named pipe at `p` (whatever was there removed first), mode 0600: what
/// a hostile or careless user plants where baton expects a file.
pub fn mkfifo(p: &std::path::Path) {
    let _ = std::fs::remove_file(p);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        p,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap_or_else(|e| panic!("mkfifo {}: {e}", p.display()));
}

pub mod browser;
pub mod ca;
pub mod client;
pub mod hosts;
pub mod pg;
pub mod pgbouncer;
pub mod process;
pub mod proxy;
pub mod replica;
pub mod user;
