//! The scheduler's commands: thin adapters from parsed arguments to
//! `baton_sched`, and from its answers to output and an exit code.

use std::path::Path;
use std::sync::Arc;

use baton_lease::{Clock, SystemClock};
use baton_sched::config::{self, Config, Overrides};

use crate::cli::{ConfigArgs, ConfigFile, HistoryArgs, MetricsArgs, RunArgs, StatusArgs, TickArgs};
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

/// The clock `c`'s commands decide by: the shared store's, or this host's.
fn decision_clock(c: &baton_sched::config::Config, what: &str) -> Result<Arc<dyn Clock>, Exit> {
    baton_sched::store::clock_for(c, clock()).map_err(|e| {
        say!("baton {what}: {e}");
        Exit::Usage
    })
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
    let now = match decision_clock(&c, "status") {
        Ok(clock) => clock.wall(),
        Err(e) => return e,
    };
    let s = baton_sched::status::read(&c, a.job.as_deref(), now);
    if let Some(e) = &s.error {
        say!("baton status: {e}");
        if c.store.is_some() || s.ledger_newer {
            // Without the shared ledger, or with one a newer baton wrote,
            // every job would read "never run": say nothing rather than
            // something false.
            return Exit::Usage;
        }
    }
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

/// `baton __page`: the status page the daemon serves, on stdout.
pub fn page(state: Option<&Path>, a: &crate::cli::PageArgs) -> Exit {
    match load(state, &a.file) {
        Ok(c) => {
            out!("{}", baton_sched::page::read(&c, &SystemClock, a.refresh));
            Exit::Ok
        }
        Err(e) => e,
    }
}

/// `baton __metrics`: the exposition on stdout (0.0.4, or OpenMetrics with
/// `--openmetrics`); exit 125 when the ledger or this process's figures
/// cannot be read.
pub fn metrics(state: Option<&Path>, a: &MetricsArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let format = if a.openmetrics {
        baton_sched::metrics::Format::OpenMetrics
    } else {
        baton_sched::metrics::Format::Prometheus
    };
    match baton_sched::metrics::read(&c, &SystemClock, format) {
        Ok(text) => {
            out!("{text}");
            Exit::Ok
        }
        Err(e) => {
            say!("baton __metrics: {e}");
            Exit::Failure
        }
    }
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
    let runs = match baton_sched::history::read(&c, &a.job, a.limit, SystemClock.wall()) {
        Ok(r) => r,
        Err(e) => {
            say!("baton history: {e}");
            // A configured store that cannot be used, or a ledger a newer
            // baton wrote, cannot be honoured (exit 2), as for every run.
            return if c.store.is_some() || e.is_newer_schema() {
                Exit::Usage
            } else {
                Exit::Refused
            };
        }
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

/// The job `name` of `c`, or the exit after saying there is none.
fn known_job<'c>(c: &'c Config, verb: &str, name: &str) -> Result<&'c config::Job, Exit> {
    c.jobs.get(name).ok_or_else(|| {
        say!(
            "baton {verb}: no job named {name:?} in {}",
            c.path.display()
        );
        Exit::Usage
    })
}

/// Who is acting, for the ledger: `user@host`.
fn who() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| format!("uid {}", rustix::process::getuid().as_raw()));
    let uname = rustix::system::uname();
    format!("{user}@{}", uname.nodename().to_string_lossy())
}

/// `baton pause`.
pub fn pause(state: Option<&Path>, a: &crate::cli::PauseArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let job = match known_job(&c, "pause", &a.job) {
        Ok(j) => j,
        Err(e) => return e,
    };
    let clock = match decision_clock(&c, "pause") {
        Ok(clock) => clock,
        Err(e) => return e,
    };
    let now = clock.wall();
    let until = match (&a.for_, &a.until) {
        (Some(d), _) => match baton_sched::units::parse_duration(d) {
            Ok(d) if !d.is_zero() => match jiff::SignedDuration::try_from(d)
                .ok()
                .and_then(|d| now.checked_add(d).ok())
            {
                Some(t) => baton_sched::pause::Until::At(t),
                None => {
                    say!("baton pause: --for {d:?} is too long");
                    return Exit::Usage;
                }
            },
            Ok(_) => {
                say!("baton pause: --for 0 would end at once: give a positive duration");
                return Exit::Usage;
            }
            Err(e) => {
                say!("baton pause: --for: {e}");
                return Exit::Usage;
            }
        },
        (None, Some(t)) => match baton_sched::units::parse_instant(t, &job.timezone.value.tz) {
            Ok(t) => baton_sched::pause::Until::At(t),
            Err(e) => {
                say!("baton pause: --until: {e}");
                return Exit::Usage;
            }
        },
        (None, None) => baton_sched::pause::Until::Resumed,
    };
    let mut out = String::new();
    let code = baton_sched::pause::pause(
        &c,
        &a.job,
        until,
        a.reason.as_deref(),
        &who(),
        clock,
        &mut out,
    );
    out!("{out}");
    self::code(code)
}

/// `baton resume`.
pub fn resume(state: Option<&Path>, a: &crate::cli::ResumeArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = known_job(&c, "resume", &a.job) {
        return e;
    }
    let mut out = String::new();
    let code = baton_sched::pause::resume(&c, &a.job, clock(), &mut out);
    out!("{out}");
    self::code(code)
}

/// `baton backfill`.
pub fn backfill(state: Option<&Path>, a: &crate::cli::BackfillArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let job = match known_job(&c, "backfill", &a.job) {
        Ok(j) => j,
        Err(e) => return e,
    };
    let tz = &job.timezone.value.tz;
    let parse = |what: &str, t: &str| {
        baton_sched::units::parse_instant(t, tz).map_err(|e| {
            say!("baton backfill: {what}: {e}");
            Exit::Usage
        })
    };
    let (from, to) = match (parse("--from", &a.from), parse("--to", &a.to)) {
        (Ok(f), Ok(t)) => (f, t),
        (Err(e), _) | (_, Err(e)) => return e,
    };
    let clock = match decision_clock(&c, "backfill") {
        Ok(clock) => clock,
        Err(e) => return e,
    };
    let now = clock.wall();
    if from > now {
        say!(
            "baton backfill: --from {from} is in the future: only past occurrences can be backfilled"
        );
        return Exit::Usage;
    }
    let occ = match baton_sched::backfill::occurrences(job, from, to, now) {
        Ok(o) => o,
        Err(e) => {
            say!("baton backfill: {e}");
            return Exit::Usage;
        }
    };
    if to > now {
        say!("baton backfill: occurrences after now are left to the schedule");
    }
    if a.dry_run {
        let plan = match baton_sched::backfill::dry_run(&c, job, &occ, now, a.force) {
            Ok(p) => p,
            Err(e) => {
                say!("baton backfill: {}: {e}", a.job);
                return code(baton_sched::run::CANNOT);
            }
        };
        if a.json {
            match serde_json::to_string_pretty(&plan) {
                Ok(j) => outln!("{j}"),
                Err(e) => {
                    say!("baton backfill: failed to encode JSON: {e}");
                    return Exit::Usage;
                }
            }
        } else if plan.is_empty() {
            outln!("{}: no occurrence in that range", a.job);
        } else {
            for p in &plan {
                match p.action.as_str() {
                    "run" => outln!("{}  would run", p.occurrence),
                    "unknown" => outln!(
                        "{}  not run: {} (--force runs it)",
                        p.occurrence,
                        p.why
                            .as_deref()
                            .unwrap_or("its records cannot rule out that it ran")
                    ),
                    other => outln!(
                        "{}  {other} already{}: not run again",
                        p.occurrence,
                        p.run_id
                            .as_ref()
                            .map(|r| format!(" (run {r})"))
                            .unwrap_or_default()
                    ),
                }
            }
        }
        return Exit::Ok;
    }
    if occ.is_empty() {
        outln!("{}: no occurrence in that range", a.job);
        return Exit::Ok;
    }
    code(baton_sched::backfill::run(&c, job, &occ, clock, a.force))
}

/// `baton watermark get`.
pub fn watermark_get(state: Option<&Path>, a: &crate::cli::WatermarkGetArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = known_job(&c, "watermark get", &a.job) {
        return e;
    }
    match baton_sched::watermark::get(&c, &a.job, &SystemClock) {
        Ok(w) if a.json => match serde_json::to_string_pretty(&w) {
            Ok(j) => {
                outln!("{j}");
                Exit::Ok
            }
            Err(e) => {
                say!("baton watermark get: failed to encode JSON: {e}");
                Exit::Usage
            }
        },
        Ok(w) => {
            if let Some(v) = w.value.or_else(|| a.default.clone()) {
                outln!("{v}");
            }
            Exit::Ok
        }
        Err(e) => {
            say!("baton watermark get: {e}");
            Exit::Refused
        }
    }
}

/// `baton watermark settle`.
pub fn watermark_settle(state: Option<&Path>, a: &crate::cli::WatermarkSettleArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = known_job(&c, "watermark settle", &a.job) {
        return e;
    }
    let token = std::env::var("BATON_TOKEN").ok();
    code(baton_sched::watermark::settle(
        &c,
        &a.job,
        &a.value,
        token.as_deref(),
        clock(),
    ))
}

/// The state directory of the configuration `file`, for the lock commands'
/// `--config`; `None` without one. A configuration whose locks are in the
/// PostgreSQL store is refused (exit 2): its lock files would say nothing.
pub fn state_of(
    state: Option<&Path>,
    file: Option<&Path>,
) -> Result<Option<std::path::PathBuf>, Exit> {
    let Some(file) = file else { return Ok(None) };
    let c = load(
        state,
        &ConfigFile {
            config: Some(file.to_owned()),
        },
    )?;
    if let Some(store) = &c.store {
        say!(
            "baton lock: the locks of {} are kept in PostgreSQL ({}), not in lock files: \
             `baton status` shows their holders, and a lease there frees itself once its \
             holder is judged dead or its renewal lapses past ttl + takeover_grace",
            c.path.display(),
            store.url.value
        );
        return Err(Exit::Usage);
    }
    Ok(Some(c.settings.state_dir.value))
}

/// `baton daemon`.
pub fn daemon(state: Option<&Path>, a: &crate::cli::DaemonArgs) -> Exit {
    // The store's schema is migrated once, before serving; a reload does
    // not migrate again.
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = crate::store_cmd::before_daemon(&c) {
        return e;
    }
    // The daemon reads and keeps its own copy; this one goes now.
    drop(c);
    let exe = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            say!("baton daemon: failed to find the baton binary to run jobs with: {e}");
            return Exit::Failure;
        }
    };
    let opts = baton_daemon::Options {
        config_path: config::locate(a.file.config.as_deref()),
        state_dir: state.map(Path::to_owned),
        listen: a.listen.clone(),
        exe,
    };
    match baton_daemon::serve(opts, clock()) {
        baton_daemon::EXIT_OK => Exit::Ok,
        baton_daemon::EXIT_CONFIG => Exit::Usage,
        _ => Exit::Failure,
    }
}
