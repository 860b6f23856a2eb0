//! `baton.toml` and its `jobs.d/` drop-ins: where the configuration is,
//! what it may say, and what it means once it is valid.
//!
//! Every scheduler command takes `--config FILE`; else `$BATON_CONFIG`; else
//! `./baton.toml`. [`keys`] defines every key once: where it may be
//! written, its default, what a job or a step inherits, and the `BATON_*`
//! variables: `BATON_<KEY>` overrides each `[scheduler]` key but `lock`
//! (`BATON_ENABLED=false` is the kill switch), and `BATON_STORE_<KEY>` each
//! `[store]` key; `--state-dir` overrides the state directory. A job's own
//! key overrides `[scheduler]`'s.
//!
//! Every load of `DIR/baton.toml` also reads `DIR/jobs.d/*.toml`, by name:
//! `jobs.d/JOB.toml` defines the job `JOB`, with the keys `[jobs.JOB]` takes
//! ([`dropin`] says what is read and what is refused).
//!
//! Loading is strict and all-or-nothing: an unknown key, a wrong type, a bad
//! duration, cron expression or zone, a job with both or neither of
//! `schedule`/`every` or of `run`/`http`/`steps`, `retries` on a check, a
//! job defined both in `baton.toml` and in `jobs.d/`, is a [`ConfigError`]
//! naming the file, line, key, value and what is allowed, and nothing else
//! happens: no directory, lock, ledger or log is created.
//!
//! Loading reads files and the environment and never writes anything. The
//! one writer into the configuration's directory is [`dropin`]'s `write`
//! and `delete`, for the daemon's jobs API; no other code writes there.

mod catch_up;
mod command;
pub mod declared;
mod doc;
pub mod dropin;
mod error;
mod found;
mod gap;
pub mod keys;
mod listen;
mod model;
mod otlp_endpoint;
mod overlap;
mod read;
pub use baton_lease::secret;
mod snapshot;
mod source;
mod store_url;
mod typed;
mod value;
mod webhook_url;
mod zone;

use std::path::{Path, PathBuf};

pub use catch_up::CatchUp;
pub use command::Command;
pub use error::ConfigError;
pub use keys::{env_keys, env_name};
pub use listen::{BadListen, LISTEN_FORMS, Listen};
pub use model::{
    Action, Config, DaemonSettings, Job, RunPolicy, Settings, Step, StepKind, StepSources,
    StoreSettings, TelemetrySettings, When,
};
pub use otlp_endpoint::{InvalidEndpoint, OtlpEndpoint};
pub use overlap::Overlap;
pub use read::{Checked, Overrides};
pub use snapshot::{Dropin, Snapshot};
pub use source::{Source, Sourced};
pub use store_url::{BadUrl, StoreUrl};
pub(crate) use typed::Value;
pub(crate) use value::Values;
pub use value::valid_name;
pub use webhook_url::WebhookUrl;
pub use zone::Zone;

/// Where the configuration file is: `flag`, else `$BATON_CONFIG`, else
/// `./baton.toml`, made absolute, with symbolic links resolved when it
/// exists.
pub fn locate(flag: Option<&Path>) -> PathBuf {
    let chosen = flag.map(Path::to_owned).or_else(|| {
        std::env::var_os("BATON_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let p = chosen.unwrap_or_else(|| PathBuf::from("baton.toml"));
    let p = if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map_or(p.clone(), |d| d.join(&p))
    };
    // The file itself, not a link to it: a relative `state_dir` and
    // `jobs.d/` are beside the real file, so every path that reaches one
    // configuration (cron's `/etc/baton.toml` link, a person's real path)
    // shares one state directory, one ledger and one set of locks.
    std::fs::canonicalize(&p).unwrap_or(p)
}

/// Reads, parses and validates the configuration at `path` and the
/// drop-ins in `jobs.d/` beside it.
///
/// # Errors
///
/// A missing or unreadable file, TOML that does not parse, anything the
/// configuration may not say, or a `jobs.d/` entry that cannot be read or
/// is not a regular file named `JOB.toml`.
///
/// # Example
///
/// ```no_run
/// use baton_sched::config::{self, Overrides};
///
/// let path = config::locate(None);
/// let c = config::load(&path, &Overrides::from_env(None))?;
/// for (name, job) in &c.jobs {
///     println!("{name}: {}", job.source);
/// }
/// # Ok::<(), config::ConfigError>(())
/// ```
pub fn load(path: &Path, over: &Overrides) -> Result<Config, ConfigError> {
    let root = read_main(path)?;
    let dropins = dropin::scan(path)?;
    read::document(&root, path, over, &dropins)
}

/// Checks the configuration at `path` and the drop-ins beside it as
/// [`load`] does, but goes on past a problem: every section, job and
/// drop-in is checked on its own, and every problem is returned, in the
/// order [`load`] meets them (its error is the first). For an operator's
/// check (`baton doctor`); nothing runs on a configuration with a problem.
///
/// # Example
///
/// ```no_run
/// use baton_sched::config::{self, Overrides};
///
/// let checked = config::check(&config::locate(None), &Overrides::from_env(None));
/// for problem in &checked.problems {
///     eprintln!("{problem}");
/// }
/// ```
pub fn check(path: &Path, over: &Overrides) -> Checked {
    let text = match snapshot::read_main_text(path) {
        Ok(text) => text,
        Err(e) => return Checked::failed(vec![e]),
    };
    let (dropins, mut problems) = dropin::scan_checked(path);
    let root = match parse_doc(&text, path) {
        Ok(root) => root,
        Err(e) => {
            problems.insert(0, e);
            return Checked::failed(problems);
        }
    };
    let mut c = read::checked(&root, path, over, &dropins);
    problems.append(&mut c.problems);
    c.problems = problems;
    c
}

/// Validates configuration `text` as if read from `path`, alone: the
/// drop-ins in `jobs.d/` are not read.
///
/// # Errors
///
/// As [`load`], but for the file itself.
pub fn parse(text: &str, path: &Path, over: &Overrides) -> Result<Config, ConfigError> {
    let root = parse_doc(text, path)?;
    read::document(&root, path, over, &[])
}

/// The configuration file at `path`, read and parsed (not yet validated).
fn read_main(path: &Path) -> Result<doc::Node, ConfigError> {
    parse_doc(&snapshot::read_main_text(path)?, path)
}

fn parse_doc(text: &str, path: &Path) -> Result<doc::Node, ConfigError> {
    doc::parse(text).map_err(|(line, message)| ConfigError::Syntax {
        path: path.to_owned(),
        line,
        message,
    })
}

#[cfg(test)]
mod tests;
