//! `baton.toml`: where the configuration is, what it may say, and what it
//! means once it is valid.
//!
//! Every scheduler command takes `--config FILE`; else `$BATON_CONFIG`; else
//! `./baton.toml`. `BATON_<KEY>` overrides each `[scheduler]` key
//! (`BATON_ENABLED=false` is the kill switch); `--state-dir` overrides the
//! state directory. A job's own key overrides `[scheduler]`'s.
//!
//! Loading is strict and all-or-nothing: an unknown key, a wrong type, a bad
//! duration, cron expression or zone, a job with both or neither of
//! `schedule`/`every` or of `run`/`http`/`steps`, `retries` on a check, is a
//! [`ConfigError`] naming the file, line, key, value and what is allowed,
//! and nothing else happens: no directory, lock, ledger or log is created.
//! This module reads files and the environment and never writes anything.

mod doc;
mod error;
mod model;
mod read;

use std::path::{Path, PathBuf};

pub use error::ConfigError;
pub use model::{
    Action, CatchUp, Command, Config, Job, Overlap, RunPolicy, Settings, Source, Sourced, Step,
    StepKind, When, Zone,
};
pub use read::{Overrides, env_name, scheduler_keys, valid_name};

/// Where the configuration file is: `flag`, else `$BATON_CONFIG`, else
/// `./baton.toml`, made absolute.
pub fn locate(flag: Option<&Path>) -> PathBuf {
    let chosen = flag.map(Path::to_owned).or_else(|| {
        std::env::var_os("BATON_CONFIG")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let p = chosen.unwrap_or_else(|| PathBuf::from("baton.toml"));
    if p.is_absolute() {
        p
    } else {
        std::env::current_dir().map_or(p.clone(), |d| d.join(&p))
    }
}

/// Reads, parses and validates the configuration at `path`.
///
/// # Errors
///
/// A missing or unreadable file, TOML that does not parse, or anything the
/// configuration may not say.
pub fn load(path: &Path, over: &Overrides) -> Result<Config, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ConfigError::Missing {
                path: path.to_owned(),
            });
        }
        Err(e) => {
            return Err(ConfigError::Unreadable {
                path: path.to_owned(),
                cause: e.to_string(),
            });
        }
    };
    parse(&text, path, over)
}

/// Validates configuration `text` as if read from `path`.
///
/// # Errors
///
/// As [`load`], but for the file itself.
pub fn parse(text: &str, path: &Path, over: &Overrides) -> Result<Config, ConfigError> {
    let root = doc::parse(text).map_err(|(line, message)| ConfigError::Syntax {
        path: path.to_owned(),
        line,
        message,
    })?;
    read::document(&root, path, over)
}

#[cfg(test)]
mod tests;
