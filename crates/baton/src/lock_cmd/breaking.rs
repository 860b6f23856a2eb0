//! `baton lock break`: replace a lease with a free marker. Without options,
//! only a lease judged dead (or expired, or abandoned) is broken; `--kill`
//! first stops a same-host holder and its job; `--force` breaks whatever is
//! there. Every break is logged, with the record it replaced, to stderr and to
//! `STATE_DIR/breaks.log`.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use baton_lease::{BreakMode, Broken, Stopped};

use crate::cli::BreakArgs;

use crate::exit::Exit;

/// What to break, and how.
pub struct Request<'a> {
    /// Label for messages.
    pub label: &'a str,
    /// The lock file.
    pub path: &'a Path,
    /// Stop the holder first.
    pub kill: bool,
    /// Break whatever is there.
    pub force: bool,
    /// Between SIGTERM and SIGKILL.
    pub grace: Duration,
    /// Where `breaks.log` goes, when known.
    pub log_dir: Option<&'a Path>,
    /// v2's stale threshold, as given.
    pub v2_stale_after: &'a str,
}

/// `baton lock break`: validates the arguments, then [`run`]s.
pub fn run_args(state: Option<&Path>, a: BreakArgs) -> Exit {
    let grace = match crate::duration::parse(&a.grace) {
        Ok(g) => g,
        Err(e) => {
            say!("baton lock break: --grace: {e}");
            return Exit::LockUsage;
        }
    };
    let names: Vec<String> = a.name.into_iter().collect();
    let paths: Vec<std::path::PathBuf> = a.lock.into_iter().collect();
    let target = match super::targets(state, &names, &paths) {
        Ok(mut t) if t.len() == 1 => t.remove(0),
        Ok(_) => {
            say!("baton lock break: name exactly one lock");
            return Exit::LockUsage;
        }
        Err(e) => {
            say!("baton lock break: {e}");
            return Exit::LockUsage;
        }
    };
    let log_dir = crate::state_dir::resolve(state).ok();
    run(&Request {
        label: &target.label,
        path: &target.path,
        kill: a.kill,
        force: a.force,
        grace,
        log_dir: log_dir.as_deref(),
        v2_stale_after: &a.v2_stale_after,
    })
}

/// Runs a break; prints what happened; returns the exit code.
pub fn run(r: &Request<'_>) -> Exit {
    let lock = match super::lock_at(r.path, r.v2_stale_after) {
        Ok(l) => l,
        Err(e) => {
            say!("baton lock break: {e}");
            return Exit::LockUsage;
        }
    };
    if r.kill {
        match lock.stop_holder(r.grace) {
            Ok(Stopped::NotHere { host }) => {
                say!(
                    "baton: {}: the holder runs on {host} (or in another pid namespace); nothing was signalled or broken",
                    r.label
                );
                return Exit::Refused;
            }
            Ok(Stopped::Signalled {
                holder,
                group,
                killed,
                remaining,
            }) => {
                say!(
                    "baton: {}: sent SIGTERM{} to holder {:?} and job group {:?}",
                    r.label,
                    if killed { " then SIGKILL" } else { "" },
                    holder,
                    group
                );
                if remaining {
                    say!(
                        "baton: {}: something still runs; the lease is left alone",
                        r.label
                    );
                    return Exit::Refused;
                }
            }
            Ok(Stopped::NothingHeld | Stopped::AlreadyGone) => {}
            Err(e) => {
                say!("baton: {e}");
                return Exit::LockUsage;
            }
        }
    }
    let mode = if r.force {
        BreakMode::Force
    } else {
        BreakMode::IfDead
    };
    match lock.break_lease(mode) {
        Ok(Broken::Freed { verdict, raw }) => {
            let line = format!(
                "{} broke {} ({}, {}): replaced {raw:?}",
                crate::alert::now_text(),
                r.path.display(),
                if r.force { "forced" } else { "provably dead" },
                verdict.word()
            );
            outln!("{line}");
            log(r.log_dir, &line);
            Exit::Ok
        }
        Ok(Broken::NothingHeld { verdict }) => {
            outln!("{}: nothing to break ({})", r.label, verdict.word());
            Exit::Ok
        }
        Ok(Broken::Refused { verdict }) => {
            say!(
                "baton: {}: not broken: the lease is {} and not provably dead; use --kill to stop a \
                 same-host holder first, or --force",
                r.label,
                verdict.word()
            );
            Exit::Refused
        }
        Err(e) => {
            say!("baton: {e}");
            Exit::LockUsage
        }
    }
}

fn log(dir: Option<&Path>, line: &str) {
    let Some(dir) = dir.filter(|d| d.is_dir()) else {
        return;
    };
    let path = dir.join("breaks.log");
    let r = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = r {
        say!("baton: failed to append to {}: {e}", path.display());
    }
}
