//! The scheduler's commands: thin adapters from parsed arguments to
//! `baton_sched`, and from its answers to output and an exit code.

use std::path::Path;
use std::sync::Arc;

use baton_lease::{Clock, SystemClock};
use baton_sched::config::{self, Config, Overrides};

use crate::cli::{ConfigArgs, ConfigFile, HistoryArgs, RunArgs, StatusArgs, TickArgs};
use crate::exit::Exit;

/// The configuration the command names, or the exit code after saying why
/// it cannot be used.
pub(crate) fn load(state: Option<&Path>, file: &ConfigFile) -> Result<Config, Exit> {
    let path = config::locate(file.config.as_deref());
    let over = Overrides::from_env(state.map(Path::to_owned));
    config::load(&path, &over).map_err(|e| {
        say!("baton: {e}");
        Exit::Usage
    })
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

fn code(c: u8) -> Exit {
    match c {
        0 => Exit::Ok,
        2 => Exit::Usage,
        _ => Exit::Refused,
    }
}

/// `baton tick`.
pub fn tick(state: Option<&Path>, a: &TickArgs) -> Exit {
    match load(state, &a.file) {
        Ok(c) => code(baton_sched::tick::tick(&c, &a.jobs, clock())),
        Err(e) => e,
    }
}

/// `baton run`.
pub fn run(state: Option<&Path>, a: &RunArgs) -> Exit {
    match load(state, &a.file) {
        Ok(c) => code(baton_sched::tick::run_now(&c, &a.job, clock())),
        Err(e) => e,
    }
}

/// `baton status`.
pub fn status(state: Option<&Path>, a: &StatusArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Some(j) = &a.job
        && !c.jobs.contains_key(j)
    {
        say!("baton status: no job named {j:?} in {}", c.path.display());
        return Exit::Usage;
    }
    let s = baton_sched::status::read(&c, a.job.as_deref(), SystemClock.wall());
    if a.json {
        match serde_json::to_string_pretty(&s) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton status: failed to encode JSON: {e}");
                return Exit::Usage;
            }
        }
    } else {
        out!("{}", baton_sched::status::render(&s));
    }
    if s.healthy { Exit::Ok } else { Exit::Refused }
}

/// `baton config`.
pub fn config(state: Option<&Path>, a: &ConfigArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if a.json {
        match serde_json::to_string_pretty(&baton_sched::show::to_json(&c)) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton config: failed to encode JSON: {e}");
                return Exit::Usage;
            }
        }
    } else {
        out!("{}", baton_sched::show::render(&c));
    }
    Exit::Ok
}

/// `baton history`.
pub fn history(state: Option<&Path>, a: &HistoryArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if !c.jobs.contains_key(&a.job) {
        say!(
            "baton history: no job named {:?} in {}",
            a.job,
            c.path.display()
        );
        return Exit::Usage;
    }
    let dir = &c.settings.state_dir.value;
    let runs: Vec<baton_sched::history::RunView> = if dir.join("baton.db").exists() {
        match baton_ledger::Ledger::open(dir, SystemClock.wall()) {
            Ok(mut l) => match l.history(&a.job, a.limit) {
                Ok(r) => r.into_iter().map(Into::into).collect(),
                Err(e) => {
                    say!("baton history: {e}");
                    return Exit::Refused;
                }
            },
            Err(e) => {
                say!("baton history: {e}");
                return Exit::Refused;
            }
        }
    } else {
        Vec::new()
    };
    if a.json {
        match serde_json::to_string_pretty(&runs) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton history: failed to encode JSON: {e}");
                return Exit::Usage;
            }
        }
    } else {
        out!("{}", baton_sched::history::render(&runs));
    }
    Exit::Ok
}
