//! The scheduler's commands: thin adapters from parsed arguments to
//! `baton_sched`, and from its answers to output and an exit code.

use std::path::Path;
use std::sync::Arc;

use baton_lease::{Clock, SystemClock};
use baton_sched::config::{self, Config, Overrides};

use crate::cli::{ConfigArgs, ConfigFile, HistoryArgs, MetricsArgs, RunArgs, StatusArgs, TickArgs};
use crate::exit::Exit;

/// The configuration the command names, or the exit code after saying why
/// it cannot be used; what its store's settings call to fix (a password
/// file others may read) is said on stderr.
pub(crate) fn load(state: Option<&Path>, file: &ConfigFile) -> Result<Config, Exit> {
    let path = config::locate(file.config.as_deref());
    let over = Overrides::from_env(state.map(Path::to_owned));
    said(config::load(&path, &over))
}

/// The configuration `read`, or the exit after saying why not; what its
/// store's settings call to fix is said on stderr.
fn said(read: Result<Config, config::ConfigError>) -> Result<Config, Exit> {
    let c = read.map_err(|e| {
        say!("baton: {e}");
        Exit::Usage
    })?;
    for w in baton_sched::store::warnings(&c) {
        say!("baton: warning: {w}");
    }
    Ok(c)
}

/// The configuration a command that shows or pauses jobs uses: the file's,
/// as [`load`]; or, when no file is named (no `--config`, no
/// `BATON_CONFIG`), there is no `./baton.toml` and a store is given
/// (`--state-dir`, `BATON_STATE_DIR` or `BATON_STORE_URL`), none of its own
/// on that store, so that the jobs a service declared there are shown and
/// controlled without a file.
pub(crate) fn load_reading(state: Option<&Path>, file: &ConfigFile) -> Result<Config, Exit> {
    let path = config::locate(file.config.as_deref());
    let over = Overrides::from_env(state.map(Path::to_owned));
    let named =
        file.config.is_some() || std::env::var_os("BATON_CONFIG").is_some_and(|v| !v.is_empty());
    let store_given = over.state_dir.is_some()
        || over.env.contains_key("state_dir")
        || over.env.contains_key("store_url");
    if named || !store_given || path.exists() {
        return load(state, file);
    }
    said(config::parse("", &path, &over))
}

/// `c` with the jobs services declared in its ledger, when `job` is not
/// one of its own (`None`: every job is wanted). When the ledger cannot be
/// read: `c` as it is for every job (the command's own read of the ledger
/// then says why), or, for a job `c` does not name, the exit after saying
/// why (rather than calling a job of the ledger unknown).
pub(crate) fn with_declared(c: Config, job: Option<&str>) -> Result<Config, Exit> {
    if job.is_some_and(|j| c.jobs.contains_key(j)) {
        return Ok(c);
    }
    match baton_sched::views::declared::with_declared(&c, SystemClock.wall()) {
        Ok(with) => Ok(with),
        Err(_) if job.is_none() => Ok(c),
        Err(e) => {
            say!("baton: {e}");
            Err(Exit::of_outcome(baton_sched::engine::run::ledger_failed(
                &c, &e,
            )))
        }
    }
}

pub(crate) fn clock() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// The clock `c`'s commands decide by: the shared store's, or this host's.
pub(crate) fn decision_clock(
    c: &baton_sched::config::Config,
    what: &str,
) -> Result<Arc<dyn Clock>, Exit> {
    baton_sched::store::clock_for(c, clock()).map_err(|e| {
        say!("baton {what}: {e}");
        Exit::Usage
    })
}

/// `baton tick`.
pub fn tick(state: Option<&Path>, a: &TickArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Some(name) = a.jobs.iter().find(|j| !c.jobs.contains_key(j.as_str())) {
        return no_such_job(&c, "tick", name);
    }
    if !a.json {
        return Exit::of_outcome(baton_sched::ops::tick::tick(&c, &a.jobs, clock()));
    }
    let r = baton_sched::ops::tick::tick_report(&c, &a.jobs, clock());
    let doc = crate::report::Tick::of(&c, &r, SystemClock.wall());
    match json_out("tick", &doc) {
        Exit::Ok => Exit::of_outcome(r.outcome),
        other => other,
    }
}

/// `baton run`.
pub fn run(state: Option<&Path>, a: &RunArgs) -> Exit {
    // Without a file, a store given: the job named is a service's at best,
    // which `run` refuses, saying so.
    let c = match load_reading(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = known_job(&c, "run", &a.job) {
        return e;
    }
    if !a.json {
        return Exit::of_outcome(baton_sched::ops::tick::run_now(&c, &a.job, clock()));
    }
    let told = std::cell::RefCell::new(None);
    let tell = |t: &baton_sched::engine::run::Told| *told.borrow_mut() = Some(t.clone());
    let teller = baton_sched::engine::run::Teller::new(&tell);
    let outcome = baton_sched::ops::tick::run_now_with(&c, &a.job, clock(), false, Some(&teller));
    let exit = Exit::of_outcome(outcome);
    let told = told.borrow().clone();
    let doc = crate::report::Run::of(&c, &a.job, told.as_ref(), exit, SystemClock.wall());
    match json_out("run", &doc) {
        Exit::Ok => exit,
        other => other,
    }
}

/// `baton status`.
pub fn status(state: Option<&Path>, a: &StatusArgs) -> Exit {
    let c = match load_reading(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    // The jobs services declared are read with the ledger's first read:
    // a job of neither is known once it has been read.
    let s = match baton_sched::views::status::read_with_connection(&c, a.job.as_deref(), clock()) {
        Ok(s) => s,
        Err(e) => {
            say!("baton status: {e}");
            return Exit::Usage;
        }
    };
    if let Some(e) = &s.error {
        say!("baton status: {e}");
        if c.store.is_some() || s.ledger_newer {
            // Without the shared ledger, or with one a newer baton wrote,
            // every job would read "never run": say nothing rather than
            // something false.
            return Exit::Usage;
        }
    }
    if let Some(j) = &a.job
        && s.jobs.is_empty()
    {
        return no_such_job(&c, "status", j);
    }
    let mut s = s;
    if !c.path.exists() {
        // Read without a file (`load_reading`): every job shown is a
        // service's.
        s.config = "none".into();
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
        out!("{}", baton_sched::views::status::render(&s));
    }
    if s.healthy { Exit::Ok } else { Exit::Refused }
}

/// `baton __page`: the status page the daemon serves, on stdout; with
/// `--job`, that job's page (exit 2 when there is no such job).
pub fn page(state: Option<&Path>, a: &crate::cli::PageArgs) -> Exit {
    let c = match load(state, &a.file) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let Some(job) = &a.job else {
        out!(
            "{}",
            baton_sched::views::page::read(&c, &SystemClock, a.refresh)
        );
        return Exit::Ok;
    };
    match baton_sched::views::page::job::read(
        &c,
        &SystemClock,
        job,
        a.refresh,
        baton_sched::views::page::Viewer::Anyone,
        baton_sched::views::page::job::Log::Shown,
    ) {
        Some(html) => {
            out!("{html}");
            Exit::Ok
        }
        None => no_such_job(&c, "__page", job),
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
        baton_sched::views::metrics::Format::OpenMetrics
    } else {
        baton_sched::views::metrics::Format::Prometheus
    };
    match baton_sched::views::metrics::read(&c, &SystemClock, format) {
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
    // The store's URL is the driver's to read: resolved here as every
    // command that connects resolves it, so a URL they would refuse (an
    // unknown sslmode, a port out of range) is refused here too.
    if let Some(store) = &c.store
        && let Err(e) = baton_sched::store::target(store)
    {
        say!("baton config: {e}");
        return Exit::Usage;
    }
    if a.json {
        match serde_json::to_string_pretty(&baton_sched::views::show::to_json(&c)) {
            Ok(j) => outln!("{j}"),
            Err(e) => {
                say!("baton config: failed to encode JSON: {e}");
                return Exit::Usage;
            }
        }
    } else {
        out!("{}", baton_sched::views::show::render(&c));
    }
    Exit::Ok
}

/// `baton history`.
pub fn history(state: Option<&Path>, a: &HistoryArgs) -> Exit {
    let c = match load_reading(state, &a.file) {
        Ok(c) => match with_declared(c, a.job.as_deref()) {
            Ok(c) => c,
            Err(e) => return e,
        },
        Err(e) => return e,
    };
    let now = SystemClock.wall();
    if let Some(job) = &a.job
        && !c.jobs.contains_key(job)
    {
        // A job renamed or removed since it ran still has its history.
        let former = baton_sched::views::history::former_jobs(&c, now);
        if !former.is_ok_and(|f| f.contains(job)) {
            return no_such_job(&c, "history", job);
        }
        say!(
            "baton history: job {job:?} is not in {}: these are the runs the ledger keeps of it",
            c.path.display()
        );
    }
    let read = match &a.job {
        Some(job) => baton_sched::views::history::read(&c, job, a.limit, now),
        None => baton_sched::views::history::read_all(&c, a.limit, now),
    };
    let runs = match read {
        Ok(r) => r,
        Err(e) => {
            say!("baton history: {e}");
            return Exit::of_outcome(baton_sched::engine::run::ledger_failed(&c, &e));
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
        let zone_of = |job: &str| c.zone_of(job).clone();
        out!(
            "{}",
            baton_sched::views::history::render(&runs, &zone_of, a.job.is_none())
        );
    }
    Exit::Ok
}

/// The job `name` of `c`, or the exit after saying there is none.
pub(crate) fn known_job<'c>(
    c: &'c Config,
    verb: &str,
    name: &str,
) -> Result<&'c config::Job, Exit> {
    c.jobs
        .get(name)
        .map(Box::as_ref)
        .ok_or_else(|| no_such_job(c, verb, name))
}

/// Says that `c` has no job `name`, and which jobs it and its ledger's
/// declarations have; exit 2. A job a service declared is said to be run
/// by that service: `verb` does not take it.
pub(crate) fn no_such_job(c: &Config, verb: &str, name: &str) -> Exit {
    let with = baton_sched::views::declared::with_declared(c, SystemClock.wall());
    if let Ok(with) = &with
        && let Some(job) = with.jobs.get(name)
    {
        say!(
            "baton {verb}: job {name:?} is not in {}: it is declared by {}, which runs it; `baton \
             {verb}` takes only the jobs of the configuration, while status, history, pause, \
             resume, backfill and watermark get show and control this one",
            c.path.display(),
            match &job.source {
                config::Source::Declared(by) => by.as_str(),
                _ => "a service",
            }
        );
        return Exit::Usage;
    }
    let of_file: Vec<&str> = c.jobs.keys().map(String::as_str).collect();
    let declared: Vec<&str> = with.as_ref().map_or(Vec::new(), |w| {
        w.jobs
            .keys()
            .filter(|j| !c.jobs.contains_key(*j))
            .map(String::as_str)
            .collect()
    });
    let mut jobs = if !c.path.exists() {
        "it does not exist".to_owned()
    } else if of_file.is_empty() {
        "it has no jobs".to_owned()
    } else {
        format!("its jobs: {}", of_file.join(", "))
    };
    if !declared.is_empty() {
        jobs.push_str(&format!(
            "; jobs declared by services: {}",
            declared.join(", ")
        ));
    }
    say!(
        "baton {verb}: no job named {name:?} in {} ({jobs})",
        c.path.display()
    );
    Exit::Usage
}

/// Who is acting, for the ledger: `user@host`.
pub(crate) fn who() -> String {
    let user = std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| format!("uid {}", rustix::process::getuid().as_raw()));
    let uname = rustix::system::uname();
    format!("{user}@{}", uname.nodename().to_string_lossy())
}

/// `baton pause`.
pub fn pause(state: Option<&Path>, a: &crate::cli::PauseArgs) -> Exit {
    let c = match load_reading(state, &a.file) {
        Ok(c) => match with_declared(c, Some(&a.job)) {
            Ok(c) => c,
            Err(e) => return e,
        },
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
                Some(t) => baton_sched::ops::pause::Until::At(t),
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
            Ok(t) => baton_sched::ops::pause::Until::At(t),
            Err(e) => {
                say!("baton pause: --until: {e}");
                return Exit::Usage;
            }
        },
        (None, None) => baton_sched::ops::pause::Until::Resumed,
    };
    match baton_sched::ops::pause::pause_job(&c, &a.job, until, a.reason.as_deref(), &who(), clock)
    {
        Ok(p) if a.json => json_out("pause", &p),
        Ok(p) => {
            out!("{}", baton_sched::ops::pause::render_paused(&c, &p));
            Exit::Ok
        }
        Err(e) => Exit::of_outcome(e),
    }
}

/// `baton resume`.
pub fn resume(state: Option<&Path>, a: &crate::cli::ResumeArgs) -> Exit {
    let c = match load_reading(state, &a.file) {
        Ok(c) => match with_declared(c, Some(&a.job)) {
            Ok(c) => c,
            Err(e) => return e,
        },
        Err(e) => return e,
    };
    if let Err(e) = known_job(&c, "resume", &a.job) {
        return e;
    }
    match baton_sched::ops::pause::resume_job(&c, &a.job, clock()) {
        Ok(r) if a.json => json_out("resume", &r),
        Ok(r) => {
            out!("{}", baton_sched::ops::pause::render_resumed(&c, &r));
            Exit::Ok
        }
        Err(e) => Exit::of_outcome(e),
    }
}

/// Prints `value` as one pretty JSON document on stdout; exit 0, or 2
/// (said) when it cannot be encoded.
pub(crate) fn json_out(verb: &str, value: &impl serde::Serialize) -> Exit {
    match serde_json::to_string_pretty(value) {
        Ok(j) => {
            outln!("{j}");
            Exit::Ok
        }
        Err(e) => {
            say!("baton {verb}: failed to encode JSON: {e}");
            Exit::Usage
        }
    }
}

/// `baton watermark get`.
pub fn watermark_get(state: Option<&Path>, a: &crate::cli::WatermarkGetArgs) -> Exit {
    let c = match load_reading(state, &a.file) {
        Ok(c) => match with_declared(c, Some(&a.job)) {
            Ok(c) => c,
            Err(e) => return e,
        },
        Err(e) => return e,
    };
    if let Err(e) = known_job(&c, "watermark get", &a.job) {
        return e;
    }
    match baton_sched::ops::watermark::get(&c, &a.job, &SystemClock) {
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
            Exit::of_outcome(baton_sched::engine::run::ledger_failed(&c, &e))
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
    Exit::of_outcome(baton_sched::ops::watermark::settle(
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
