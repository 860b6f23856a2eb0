//! baton: run a scheduled job at most once at a time.
//!
//! `main` is thin: parse, validate, dispatch, exit with the code the command
//! chose. Every exit number lives in [`exit`].

#[macro_use]
mod say;
mod alert;
mod cli;
mod duration;
mod exec;
mod exit;
mod lock_cmd;
mod state_dir;

use std::process::ExitCode;

use clap::Parser;

use baton_lease::{Clock, SystemClock};
use cli::{Cli, Cmd, LockCmd};
use exit::Exit;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let is_exec = args.get(1).is_some_and(|a| a == "exec");
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    Exit::Ok
                }
                _ if is_exec => Exit::Failure,
                _ => Exit::LockUsage,
            };
            let _ = e.print();
            return code.into();
        }
    };
    run(cli).into()
}

fn run(cli: Cli) -> Exit {
    let state = cli.state_dir.as_deref();
    match cli.command {
        Cmd::Exec(args) => match exec::config::ExecConfig::new(args, state) {
            Ok(cfg) => exec::run(&cfg),
            Err(e) => {
                say!("baton exec: {e}");
                Exit::Failure
            }
        },
        Cmd::Lock(LockCmd::Show(a)) => {
            let targets = if a.all {
                lock_cmd::all(state)
            } else if a.names.is_empty() && a.lock.is_empty() {
                Err("name a lock, give --lock PATH, or use --all".into())
            } else {
                lock_cmd::targets(state, &a.names, &a.lock)
            };
            let targets = match targets {
                Ok(t) => t,
                Err(e) => {
                    say!("baton lock show: {e}");
                    return Exit::LockUsage;
                }
            };
            let now = SystemClock.wall();
            let mut shown = Vec::new();
            let mut failed = false;
            for t in &targets {
                match baton_lease::Lock::new(&t.path).inspect() {
                    Ok(i) => shown.push(lock_cmd::show::shown(&t.label, &i, now)),
                    Err(e) => {
                        say!("baton lock show: {}: {e}", t.label);
                        failed = true;
                    }
                }
            }
            if a.json {
                match serde_json::to_string_pretty(&shown) {
                    Ok(j) => outln!("{j}"),
                    Err(e) => {
                        say!("baton lock show: failed to encode JSON: {e}");
                        return Exit::LockUsage;
                    }
                }
            } else {
                out!("{}", lock_cmd::show::render(&shown));
            }
            if failed { Exit::Refused } else { Exit::Ok }
        }
        Cmd::Lock(LockCmd::Break(a)) => {
            let grace = match duration::parse(&a.grace) {
                Ok(g) => g,
                Err(e) => {
                    say!("baton lock break: --grace: {e}");
                    return Exit::LockUsage;
                }
            };
            let names: Vec<String> = a.name.into_iter().collect();
            let paths: Vec<std::path::PathBuf> = a.lock.into_iter().collect();
            let target = match lock_cmd::targets(state, &names, &paths) {
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
            let log_dir = state_dir::resolve(state).ok();
            lock_cmd::breaking::run(&lock_cmd::breaking::Request {
                label: &target.label,
                path: &target.path,
                kill: a.kill,
                force: a.force,
                grace,
                log_dir: log_dir.as_deref(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
