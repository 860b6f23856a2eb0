//! `baton lock break`: replace a lease with a free marker. Without options,
//! only a lease judged dead (or expired, or abandoned) is broken; `--kill`
//! first stops a same-host holder and its job, signalling only what it
//! verified to be the record's; `--force` breaks whatever lease is there,
//! but never a file that is no lock record. Every break is logged, with the
//! whole record it replaced, to stderr and to `STATE_DIR/breaks.log`
//! (opened as every file baton writes in its state directory is: never
//! through a symbolic link, never blocking, only a regular file of its own).

use std::path::Path;
use std::time::Duration;

use baton_lease::{BreakMode, Broken, Stopped, Verdict};

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
    let grace = match baton_sched::units::parse_duration(&a.grace) {
        Ok(g) => g,
        Err(e) => {
            say!("baton lock break: --grace: {e}");
            return Exit::Usage;
        }
    };
    let names: Vec<String> = a.name.into_iter().collect();
    let paths: Vec<std::path::PathBuf> = a.lock.into_iter().collect();
    let target = match super::targets(state, &names, &paths) {
        Ok(mut t) if t.len() == 1 => t.remove(0),
        Ok(_) => {
            say!("baton lock break: name exactly one lock");
            return Exit::Usage;
        }
        Err((code, e)) => {
            say!("baton lock break: {e}");
            return code;
        }
    };
    // Logged only into a state directory that exists and is trusted.
    let log_dir = baton_sched::state::state_dir::resolve(state)
        .ok()
        .filter(|d| matches!(baton_sched::state::state_dir::check_existing(d), Ok(true)));
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
            return Exit::Usage;
        }
    };
    if r.kill {
        match lock.stop_holder(r.grace) {
            Ok(Stopped::NotHere { host }) => {
                say!(
                    "baton: {}: the holder runs on {host} (or in another pid namespace); nothing \
                     was signalled or broken",
                    r.label
                );
                return Exit::Refused;
            }
            Ok(Stopped::Unverified {
                why,
                strangers: None,
            }) => {
                say!("baton: {}: nothing was signalled or broken: {why}", r.label);
                return Exit::Refused;
            }
            Ok(Stopped::Unverified {
                why,
                strangers: Some(s),
            }) => {
                say!(
                    "baton: {}: nothing was signalled or broken: {why}; {s}; once sure nothing of \
                     the job runs, `baton lock break --force` breaks the lease without signalling \
                     anything",
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
                let whom = match (holder, group) {
                    (Some(h), Some(g)) => format!("holder pid {h} and job group {g}"),
                    (Some(h), None) => format!("holder pid {h}"),
                    (None, Some(g)) => format!("job group {g} (the holder was gone)"),
                    (None, None) => "nothing".to_owned(),
                };
                say!(
                    "baton: {}: sent SIGTERM{} to {whom}",
                    r.label,
                    if killed { " then SIGKILL" } else { "" },
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
                return Exit::of_error(&e);
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
        Ok(Broken::NothingHeld {
            verdict: Verdict::Absent,
        }) => {
            say!(
                "baton lock break: {}: no lock file at {} (is the name right?)",
                r.label,
                r.path.display()
            );
            Exit::NoSuchLock
        }
        Ok(Broken::NothingHeld { verdict }) => {
            outln!("{}: nothing to break ({})", r.label, verdict.word());
            Exit::Ok
        }
        Ok(Broken::Refused {
            verdict: verdict @ Verdict::Refused(_),
        }) => {
            say!(
                "baton: {}: not broken: it holds {}; make sure nothing runs under this lock, then \
                 add --force",
                r.label,
                match &verdict {
                    Verdict::Refused(baton_lease::Foreign::Version(v)) => format!("a lease of {v}"),
                    Verdict::Refused(baton_lease::Foreign::Unreadable(why)) =>
                        format!("a damaged record ({why})"),
                    _ => verdict.word().to_owned(),
                }
            );
            Exit::Unjudgeable
        }
        Ok(Broken::Refused { verdict }) => {
            say!(
                "baton: {}: not broken: the lease is {} and not provably dead; --kill stops a \
                 same-host holder and its job first, --force breaks it anyway",
                r.label,
                verdict.word()
            );
            Exit::Refused
        }
        Err(e) => {
            say!("baton: {e}");
            Exit::of_error(&e)
        }
    }
}

/// Appends `line` to `DIR/breaks.log` (through `baton_sched::state::state_file`:
/// owner-only, never through a symbolic link, never blocking on a named
/// pipe), one write per line.
fn log(dir: Option<&Path>, line: &str) {
    let Some(dir) = dir.filter(|d| d.is_dir()) else {
        return;
    };
    let path = dir.join("breaks.log");
    if let Err(e) = baton_sched::state::state_file::append(&path, format!("{line}\n").as_bytes()) {
        say!("baton: the break is not in breaks.log: {e}");
    }
}
