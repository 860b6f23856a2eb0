//! baton: run a scheduled job at most once at a time.
//!
//! `main` is thin: parse, validate, dispatch, exit with the code the command
//! chose. Every exit number lives in [`exit`].

#[macro_use]
mod say;
mod alert;
mod backfill_cmd;
mod backfill_report;
mod backfill_service;
mod calendar_cmd;
mod cli;
mod completion;
mod daemon_cmd;
mod doctor_cmd;
mod exec;
mod exit;
#[cfg(feature = "failpoints")]
mod failpoints;
mod http_cmd;
mod job_completer;
mod lock_cmd;
mod log;
mod man;
mod out_dir;
mod render_cmd;
mod report;
mod sched_cmd;
mod store_cmd;
mod worker_cmd;

use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Cmd, LockCmd, StoreCmd, WatermarkCmd};
use exit::Exit;

fn main() -> ExitCode {
    // A panic aborts (the profiles say so); its message must not block on a
    // stderr nobody reads on the way, or the abort that takes the step's
    // init along never comes while the job runs on.
    std::panic::set_hook(Box::new(|info| {
        baton_runner::console::stderr_from_panic(format!("baton: {info}\n").as_bytes());
    }));
    // A write past the file-size limit fails with an error baton reports,
    // instead of killing it (and a contained job with it) without a word.
    // OK to ignore: the kernel does not refuse a handler for this signal.
    let _ = baton_lease::job::catch_file_size_signal();
    // Started by a completion script: answer it, and run nothing else.
    completion::answer();
    // Started by a contained job (or in a pid namespace without its own
    // /proc): see this namespace's processes, while there is one thread.
    // Where that is refused, a run refuses to start, saying why.
    let _ = baton_runner::own_proc();
    #[cfg(feature = "failpoints")]
    let _failpoints = failpoints::setup();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let is_exec = subcommand(&args).is_some_and(|c| c == "exec");
    let parsed = match cli::ExecOnly::parse(&args) {
        Some(cli) => Ok(cli),
        None => Cli::try_parse_from(&args),
    };
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            let code = match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => Exit::Ok,
                _ if is_exec => Exit::Failure,
                _ => Exit::Usage,
            };
            let _ = e.print();
            if is_exec && e.kind() == ErrorKind::UnknownArgument && !args.iter().any(|a| a == "--")
            {
                say!(
                    "hint: put `--` between baton's options and the command: \
                     baton exec --name NAME [OPTIONS] -- COMMAND [ARGS...] \
                     (or give a shell command with -c 'CMD')"
                );
            }
            baton_runner::console::flush(baton_runner::console::EXIT_FLUSH);
            return code.into();
        }
    };
    // Output cut short: 125 for `exec` and `lock` (an I/O error), 2 for the
    // rest (not honoured).
    let cut_short = if matches!(cli.command, Cmd::Exec(_) | Cmd::Lock(_)) {
        Exit::Failure
    } else {
        Exit::Usage
    };
    let mut code = match clock_refused(&cli.command) {
        Some(refused) => refused,
        None => run(cli),
    };
    // Output cut short by a full disk is no success. It is said whatever
    // the code, so a failure's report lost is never silent.
    if let Some(why) = say::stdout_failed() {
        say!("baton: failed to write standard output: {why}; what it holds is incomplete");
        if code == Exit::Ok {
            code = cut_short;
        }
    }
    baton_runner::console::flush(baton_runner::console::EXIT_FLUSH);
    // Output its reader was too slow for was dropped (and said on standard
    // error, as far as that stream takes it): cut short too.
    if code == Exit::Ok && baton_runner::console::stdout_lost() > 0 {
        code = cut_short;
    }
    code.into()
}

/// The subcommand's word, read before clap parses (so a usage error can get
/// the subcommand's own exit code): the first argument that is neither an
/// option nor the value of `--state-dir`.
fn subcommand(args: &[std::ffi::OsString]) -> Option<&std::ffi::OsStr> {
    let mut it = args.iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--state-dir" {
            it.next();
        } else if !a.to_string_lossy().starts_with('-') {
            return Some(a);
        }
    }
    None
}

/// A wall clock past the years baton counts with is refused before any
/// command decides or runs anything: 125 for `exec`, `lock` and the daemon
/// (baton's own failure), 2 for the scheduler's commands (nothing ran).
/// Commands that read no time (completions, manual pages) go on.
fn clock_refused(command: &Cmd) -> Option<Exit> {
    if matches!(command, Cmd::Completions(_) | Cmd::Man(_)) {
        return None;
    }
    let e = baton_lease::check_system_wall().err()?;
    say!("baton: {e}");
    Some(match command {
        Cmd::Exec(_) | Cmd::Lock(_) | Cmd::Daemon(_) => Exit::Failure,
        _ => Exit::Usage,
    })
}

fn run(cli: Cli) -> Exit {
    // The libraries' events: plain lines, or JSON for a daemon asked for it
    // and the runs it starts. Built at the first event, so a command that
    // has none (`exec`'s usual run) pays only for the installing.
    log::install(match &cli.command {
        Cmd::Daemon(a) => a.log_format,
        Cmd::Worker(a) => a.log_format,
        _ => log::LogFormat::Text,
    });
    let state = cli.state_dir.as_deref();
    match cli.command {
        Cmd::Exec(args) => match exec::config::ExecConfig::new(args, state) {
            Ok(cfg) => exec::run(&cfg),
            Err(e) => {
                say!("baton exec: {e}");
                Exit::Failure
            }
        },
        Cmd::Lock(LockCmd::Show(a)) => match sched_cmd::state_of(state, a.config.as_deref()) {
            Ok(dir) => lock_cmd::show::run(dir.as_deref().or(state), &a),
            Err(e) => e,
        },
        Cmd::Lock(LockCmd::Break(a)) => match sched_cmd::state_of(state, a.config.as_deref()) {
            Ok(dir) => lock_cmd::breaking::run_args(dir.as_deref().or(state), a),
            Err(e) => e,
        },
        Cmd::Tick(a) => sched_cmd::tick(state, &a),
        Cmd::Run(a) => sched_cmd::run(state, &a),
        Cmd::Status(a) => sched_cmd::status(state, &a),
        Cmd::Config(a) => sched_cmd::config(state, &a),
        Cmd::Page(a) => sched_cmd::page(state, &a),
        Cmd::History(a) => sched_cmd::history(state, &a),
        Cmd::Pause(a) => sched_cmd::pause(state, &a),
        Cmd::Resume(a) => sched_cmd::resume(state, &a),
        Cmd::Backfill(a) => backfill_cmd::run(state, &a),
        Cmd::Watermark(WatermarkCmd::Get(a)) => sched_cmd::watermark_get(state, &a),
        Cmd::Watermark(WatermarkCmd::Settle(a)) => sched_cmd::watermark_settle(state, &a),
        Cmd::Calendar(a) => calendar_cmd::run(state, &a),
        Cmd::Daemon(a) => daemon_cmd::run(state, &a),
        Cmd::Store(StoreCmd::Migrate(a)) => store_cmd::migrate(state, &a),
        Cmd::Store(StoreCmd::Status(a)) => store_cmd::status(state, &a),
        Cmd::Worker(a) => worker_cmd::run(state, &a),
        Cmd::Metrics(a) => sched_cmd::metrics(state, &a),
        Cmd::Render(a) => render_cmd::run(state, &a),
        Cmd::Doctor(a) => doctor_cmd::run(state, &a),
        Cmd::Http => http_cmd::run(),
        Cmd::Completions(a) => match completion::script(a.shell) {
            Ok(text) => {
                out!("{text}");
                Exit::Ok
            }
            Err(e) => {
                say!("baton completions: {e}");
                Exit::Failure
            }
        },
        Cmd::Man(a) => man_cmd(&a),
    }
}

/// `baton man`: a page on stdout, or every page into `--dir`.
fn man_cmd(a: &cli::ManArgs) -> Exit {
    if let Some(dir) = &a.dir {
        return match man::write_all(dir) {
            Ok(written) => {
                for p in written {
                    outln!("{}", p.display());
                }
                Exit::Ok
            }
            Err(e) => {
                say!("baton man: {e}");
                Exit::Failure
            }
        };
    }
    match man::page(&a.command) {
        Ok(p) => {
            out!("{}", p.text);
            Exit::Ok
        }
        Err(e @ man::ManError::Unknown(..)) => {
            say!("baton man: {e}");
            Exit::Usage
        }
        Err(e) => {
            say!("baton man: {e}");
            Exit::Failure
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
        super::cli::ExecOnly::command().debug_assert();
    }

    /// What the one-command parser takes, it takes as the whole command
    /// line does; what it leaves, the whole command line parses.
    #[test]
    fn exec_alone_parses_as_the_whole_command_line() {
        use clap::Parser;
        let cases: &[&[&str]] = &[
            &["exec", "--name", "x", "--", "true"],
            &[
                "exec",
                "--name=x",
                "--ttl",
                "30s",
                "--verbose",
                "--",
                "sh",
                "-c",
                "echo $1",
                "a",
            ],
            &["exec", "--lock", "/tmp/x.lock", "-c", "sleep 1"],
            &[
                "exec",
                "--name",
                "x",
                "--state-dir",
                "/tmp/s",
                "--no-contain",
                "--",
                "true",
            ],
            &["exec", "--name", "x", "--", "true", "--help"],
            &["exec", "--help"],
            &["exec", "--version"],
            &["exec", "--name"],
            &["exec", "--bogus", "--", "true"],
            &["--state-dir", "/tmp/s", "exec", "--name", "x", "--", "true"],
            &["status"],
            &[],
        ];
        for case in cases {
            let args: Vec<std::ffi::OsString> = std::iter::once("baton")
                .chain(case.iter().copied())
                .map(Into::into)
                .collect();
            let whole = super::Cli::try_parse_from(&args);
            match super::cli::ExecOnly::parse(&args) {
                Some(alone) => {
                    let whole = whole.unwrap_or_else(|e| panic!("{case:?}: {e}"));
                    assert_eq!(format!("{alone:?}"), format!("{whole:?}"), "{case:?}");
                }
                None => assert!(
                    whole.is_err() || case.first() != Some(&"exec"),
                    "{case:?}: the one-command parser left what it should take"
                ),
            }
        }
    }
}
