//! `jobs.d/`: jobs in files of their own beside `baton.toml`, one job per
//! file, `jobs.d/JOB.toml` defining the job `JOB`. This module owns the
//! directory: which of its entries are read, and every write into it.
//!
//! ## Reading
//!
//! Every [`super::load`] reads `jobs.d/*.toml` by name, after `baton.toml`.
//! Names starting with `.` (a writer's temporary files) and names not
//! ending in `.toml` are skipped; anything else that is not a regular file
//! (a directory, a symbolic link, a FIFO), cannot be read, or is not named
//! after a valid job name is a [`ConfigError`] naming it. A missing
//! `jobs.d/` holds no jobs. A drop-in holds the job's keys at the top (the
//! canonical form, which [`job_toml`] writes) or the single table
//! `[jobs.JOB]`; never `[scheduler]` or `[daemon]`.
//!
//! ## Writing
//!
//! This is the only module that writes into the configuration's directory,
//! and it writes nowhere but `jobs.d/`: it never touches `baton.toml`, and
//! it refuses to replace or delete a job defined there. A [`write()`] is
//! atomic: a temporary file of its own (`.JOB.toml.tmp-<random>`, created
//! with `O_EXCL` and `O_NOFOLLOW`), written, `fsync`ed, renamed over
//! `JOB.toml`, and the directory `fsync`ed. The file is created 0600 (a
//! job's `env` and an HTTP step's headers may hold secrets), so a rewrite
//! leaves it private too. A reader sees the old file or
//! the new one, never a part; of two writers at once, each writes its own
//! temporary file and the last rename wins whole.
//!
//! ## What it does not do
//!
//! It does not lock. [`check_put`] then [`write()`] is not one atomic step: a
//! file changed in between is not seen by the check, so a caller that
//! mutates concurrently serialises its own check-and-write pairs (the
//! daemon does), and validates again on reload. Nothing here reloads
//! anything.

use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use super::doc::Node;
use super::error::ConfigError;
use super::found::Found;
use super::model::Config;
use super::read::{self, Overrides};
use super::value::valid_name;

/// The drop-in directory's name, beside the configuration file.
pub const DIR_NAME: &str = "jobs.d";

/// Why a drop-in cannot be made from a request, written or deleted.
#[derive(Debug, thiserror::Error)]
pub enum DropinError {
    /// The job's table cannot be written as a drop-in (a `null`, a number
    /// TOML cannot hold, something other than an object).
    #[error("{key}: {message}")]
    Table {
        /// Where in the table, as a dotted path (`jobs.backup.env.KEY`).
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The configuration refuses it (a bad job name, a job defined in
    /// `baton.toml`, a `baton.toml` that cannot be read).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Reading or writing the directory failed.
    #[error("failed to {what} {}: {source}", path.display())]
    Io {
        /// What was being done (`create the temporary drop-in`).
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

fn io(what: &'static str, path: &Path, source: std::io::Error) -> DropinError {
    DropinError::Io {
        what,
        path: path.to_owned(),
        source,
    }
}

/// `jobs.d/` beside the configuration file at `config_path`.
pub fn dir(config_path: &Path) -> PathBuf {
    config_path
        .parent()
        .unwrap_or(Path::new("/"))
        .join(DIR_NAME)
}

/// `jobs.d/NAME.toml` beside the configuration file at `config_path`.
pub fn path(config_path: &Path, name: &str) -> PathBuf {
    dir(config_path).join(format!("{name}.toml"))
}

/// The drop-ins beside the configuration at `config_path`, by name.
///
/// # Errors
///
/// The first problem [`scan_checked`] finds.
pub(super) fn scan(config_path: &Path) -> Result<Vec<Found>, ConfigError> {
    let (found, problems) = scan_checked(config_path);
    match problems.into_iter().next() {
        Some(first) => Err(first),
        None => Ok(found),
    }
}

/// The drop-ins beside the configuration at `config_path` that can be read,
/// by name, and a problem for each entry that cannot (by its name): a
/// `jobs.d/` that cannot be read or trusted is one problem, and no drop-in.
pub(super) fn scan_checked(config_path: &Path) -> (Vec<Found>, Vec<ConfigError>) {
    let dir = dir(config_path);
    let entries = match std::fs::read_dir(&dir) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => return (Vec::new(), vec![unreadable(&dir, &e.to_string())]),
    };
    // What another user could add to or replace in jobs.d/ would run as
    // whoever runs baton: it, every directory above it and every symbolic
    // link on the way to it are checked as a state directory is.
    let trusted = baton_lease::trust::check_dir_path(&dir, 1).map_err(ConfigError::from);
    if let Err(e) = trusted {
        return (Vec::new(), vec![e]);
    }
    let mut found = Vec::new();
    let mut problems: Vec<(PathBuf, ConfigError)> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => return (Vec::new(), vec![unreadable(&dir, &e.to_string())]),
        };
        let file_name = entry.file_name();
        let bytes = file_name.as_bytes();
        if bytes.starts_with(b".") || !bytes.ends_with(b".toml") {
            continue;
        }
        let path = entry.path();
        let stem = std::str::from_utf8(&bytes[..bytes.len() - ".toml".len()]);
        let name = match stem {
            Ok(s) if valid_name(s) => s.to_owned(),
            _ => {
                let e = ConfigError::Invalid {
                    at: path.display().to_string(),
                    key: DIR_NAME.into(),
                    message: format!(
                        "{:?} is not a job name: a drop-in is named JOB.toml, JOB being 1 to 64 \
                         characters of A-Z a-z 0-9 _ . -",
                        String::from_utf8_lossy(&bytes[..bytes.len() - ".toml".len()])
                    ),
                };
                problems.push((path, e));
                continue;
            }
        };
        match read_regular(&path) {
            Ok(text) => found.push(Found { path, name, text }),
            Err(e) => problems.push((path, e)),
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    problems.sort_by(|a, b| a.0.cmp(&b.0));
    (found, problems.into_iter().map(|(_, e)| e).collect())
}

fn unreadable(path: &Path, cause: &str) -> ConfigError {
    ConfigError::Unreadable {
        path: path.to_owned(),
        cause: cause.to_owned(),
    }
}

/// A drop-in's text, refusing anything but a regular file: the file is
/// opened without following a symbolic link (and without blocking on a
/// FIFO), and checked on the descriptor itself.
fn read_regular(path: &Path) -> Result<String, ConfigError> {
    let not_regular = |what: &str| {
        unreadable(
            path,
            &format!("it is {what}, not a regular file: {DIR_NAME}/ holds only JOB.toml files"),
        )
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| unreadable(path, &e.to_string()))?;
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(not_regular("a symbolic link"));
    }
    if kind.is_dir() {
        return Err(not_regular("a directory"));
    }
    if !kind.is_file() {
        return Err(not_regular("a special file"));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32)
        .open(path)
        .map_err(|e| unreadable(path, &e.to_string()))?;
    let meta = file
        .metadata()
        .map_err(|e| unreadable(path, &e.to_string()))?;
    if !meta.is_file() {
        return Err(not_regular("no longer a regular file"));
    }
    baton_lease::trust::check_config(path, &meta)?;
    std::io::read_to_string(file).map_err(|e| unreadable(path, &e.to_string()))
}

/// `jobs.d/NAME.toml`, once `name` is known to be a job name (so the path
/// cannot leave `jobs.d/`).
fn checked_path(config_path: &Path, name: &str) -> Result<PathBuf, ConfigError> {
    if name.starts_with('.') {
        return Err(ConfigError::Invalid {
            at: dir(config_path).display().to_string(),
            key: format!("jobs.{name}"),
            message: format!(
                "{name:?}: a drop-in's job may not start with '.' (jobs.d/ skips hidden files)"
            ),
        });
    }
    if !valid_name(name) {
        return Err(ConfigError::Invalid {
            at: dir(config_path).display().to_string(),
            key: format!("jobs.{name}"),
            message: format!(
                "{name:?} is not a job name: use 1 to 64 characters of A-Z a-z 0-9 _ . -"
            ),
        });
    }
    Ok(path(config_path, name))
}

/// Refuses a job `baton.toml` itself defines: its owner edits it there.
fn refuse_main(root: &Node, config_path: &Path, name: &str, verb: &str) -> Result<(), ConfigError> {
    match read::job_line(root, name) {
        Some(line) => Err(ConfigError::Invalid {
            at: format!("{}:{line}", config_path.display()),
            key: format!("jobs.{name}"),
            message: format!(
                "lives in baton.toml, not in {DIR_NAME}/: it cannot be {verb} over HTTP; edit \
                 baton.toml instead"
            ),
        }),
        None => Ok(()),
    }
}

/// The canonical drop-in text of a job: the JSON object `table` (the keys
/// `[jobs.NAME]` takes) as TOML with the keys at the top, such as the body
/// of `PUT /v1/jobs/{name}`. The text is not validated here; that is
/// [`check_put`]'s business.
///
/// # Errors
///
/// A bad job name; `table` not an object, or holding `null` anywhere, a
/// number above the largest 64-bit signed integer, or a key `jobs`,
/// `scheduler`, `daemon` or `store` (the table is the job's own).
///
/// # Example
///
/// ```
/// use baton_sched::config::dropin;
///
/// let table = serde_json::json!({"schedule": "*/5 * * * *", "run": "echo hi"});
/// let text = dropin::job_toml("hello", &table)?;
/// assert_eq!(text, "run = \"echo hi\"\nschedule = \"*/5 * * * *\"\n");
/// # Ok::<(), dropin::DropinError>(())
/// ```
pub fn job_toml(name: &str, table: &serde_json::Value) -> Result<String, DropinError> {
    if !valid_name(name) {
        return Err(DropinError::Config(ConfigError::Invalid {
            at: DIR_NAME.into(),
            key: format!("jobs.{name}"),
            message: format!(
                "{name:?} is not a job name: use 1 to 64 characters of A-Z a-z 0-9 _ . -"
            ),
        }));
    }
    let here = format!("jobs.{name}");
    let serde_json::Value::Object(map) = table else {
        return Err(DropinError::Table {
            key: here,
            message: format!(
                "is {}: expected an object, the job's table, such as {{\"schedule\": \"0 3 * * \
                 *\", \"run\": \"/usr/local/bin/backup.sh\"}}",
                json_type(table)
            ),
        });
    };
    for k in read::SECTIONS {
        if map.contains_key(*k) {
            return Err(DropinError::Table {
                key: format!("{here}.{k}"),
                message: "is not a job's key: give the job's own table, such as \
                          {\"schedule\": ..., \"run\": ...}"
                    .into(),
            });
        }
    }
    let t = map
        .iter()
        .map(|(k, v)| Ok((k.clone(), to_toml(v, &format!("{here}.{k}"))?)))
        .collect::<Result<toml::Table, DropinError>>()?;
    toml::to_string(&t).map_err(|e| DropinError::Table {
        key: here,
        message: format!("cannot be written as TOML: {e}"),
    })
}

fn json_type(v: &serde_json::Value) -> &'static str {
    use serde_json::Value as J;
    match v {
        J::Null => "null",
        J::Bool(_) => "a boolean",
        J::Number(_) => "a number",
        J::String(_) => "a string",
        J::Array(_) => "an array",
        J::Object(_) => "an object",
    }
}

fn to_toml(v: &serde_json::Value, key: &str) -> Result<toml::Value, DropinError> {
    use serde_json::Value as J;
    let bad = |message: String| DropinError::Table {
        key: key.to_owned(),
        message,
    };
    Ok(match v {
        J::Null => {
            return Err(bad(
                "is null, which TOML cannot hold: leave the key out for its default".into(),
            ));
        }
        J::Bool(b) => toml::Value::Boolean(*b),
        J::String(s) => toml::Value::String(s.clone()),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, _) if n.is_u64() => {
                return Err(bad(format!(
                    "= {n}: TOML integers are at most {} (64-bit signed)",
                    i64::MAX
                )));
            }
            (None, Some(f)) if f.is_finite() => toml::Value::Float(f),
            _ => return Err(bad(format!("= {n}: not a number TOML can hold"))),
        },
        J::Array(a) => toml::Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, v)| to_toml(v, &format!("{key}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        J::Object(m) => toml::Value::Table(
            m.iter()
                .map(|(k, v)| Ok((k.clone(), to_toml(v, &format!("{key}.{k}"))?)))
                .collect::<Result<_, DropinError>>()?,
        ),
    })
}

/// The whole configuration as it would be with `jobs.d/NAME.toml` holding
/// `text` (replacing the drop-in of that name, if there is one). Nothing is
/// written.
///
/// # Errors
///
/// `name` is not a job name; `baton.toml` defines the job itself (it cannot
/// be replaced from here); or the configuration with the new file is not
/// valid, with the message `baton config` would give for it.
///
/// # Example
///
/// ```no_run
/// use std::path::Path;
/// use baton_sched::config::{Overrides, dropin};
///
/// let config = Path::new("/etc/baton/baton.toml");
/// let text = "every = \"15m\"\nrun = \"/usr/local/bin/capture\"\n";
/// let c = dropin::check_put(config, &Overrides::default(), "capture", text)?;
/// assert!(c.jobs.contains_key("capture"));
/// dropin::write(config, "capture", text)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn check_put(
    config_path: &Path,
    over: &Overrides,
    name: &str,
    text: &str,
) -> Result<Config, ConfigError> {
    let target = checked_path(config_path, name)?;
    let root = super::read_main(config_path)?;
    refuse_main(&root, config_path, name, "replaced")?;
    let mut dropins = scan(config_path)?;
    dropins.retain(|f| f.name != name);
    dropins.push(Found {
        path: target,
        name: name.to_owned(),
        text: text.to_owned(),
    });
    dropins.sort_by(|a, b| a.name.cmp(&b.name));
    read::document(&root, config_path, over, &dropins)
}

/// The whole configuration as it would be without `jobs.d/NAME.toml`.
/// Nothing is written.
///
/// # Errors
///
/// `name` is not a job name; `baton.toml` defines the job itself; or the
/// configuration without the file is not valid.
pub fn check_delete(
    config_path: &Path,
    over: &Overrides,
    name: &str,
) -> Result<Config, ConfigError> {
    checked_path(config_path, name)?;
    let root = super::read_main(config_path)?;
    refuse_main(&root, config_path, name, "deleted")?;
    let mut dropins = scan(config_path)?;
    dropins.retain(|f| f.name != name);
    read::document(&root, config_path, over, &dropins)
}

/// Writes `text` to `jobs.d/NAME.toml` atomically (see the module's doc),
/// creating `jobs.d/` if it is missing, and returns the file's path. The
/// text is not validated: call [`check_put`] first.
///
/// # Errors
///
/// `name` is not a job name; `baton.toml` cannot be read or defines the job
/// itself; creating, writing, syncing or renaming fails (the temporary file
/// is removed then).
pub fn write(config_path: &Path, name: &str, text: &str) -> Result<PathBuf, DropinError> {
    let target = checked_path(config_path, name)?;
    refuse_main(
        &super::read_main(config_path)?,
        config_path,
        name,
        "replaced",
    )?;
    let dir = dir(config_path);
    // The owner's alone whatever the umask: its files hold secrets, and
    // every command refuses a jobs.d/ others may write.
    let made = {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).create(&dir)
    };
    match made {
        Ok(()) => {
            if let Some(parent) = dir.parent() {
                sync_dir(parent)?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("create the drop-in directory", &dir, e)),
    }
    let file_name = format!("{name}.toml");
    // A job's `env` and an HTTP step's headers may hold secrets: the file
    // is its owner's alone, as the ledger is.
    crate::state::atomic::replace_private(&dir, &file_name, text.as_bytes())
        .map_err(from_atomic)?;
    Ok(target)
}

fn from_atomic(e: crate::state::atomic::AtomicError) -> DropinError {
    DropinError::Io {
        what: e.what,
        path: e.path,
        source: e.source,
    }
}

/// Removes `jobs.d/NAME.toml`: `true` if it was there, `false` if there is
/// no such drop-in.
///
/// # Errors
///
/// `name` is not a job name; `baton.toml` cannot be read or defines the job
/// itself; the file cannot be removed, or the directory synced.
pub fn delete(config_path: &Path, name: &str) -> Result<bool, DropinError> {
    let target = checked_path(config_path, name)?;
    refuse_main(
        &super::read_main(config_path)?,
        config_path,
        name,
        "deleted",
    )?;
    match std::fs::remove_file(&target) {
        Ok(()) => {
            sync_dir(&dir(config_path))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io("remove the drop-in", &target, e)),
    }
}

/// `fsync`s a directory, so a rename or removal in it survives a crash.
fn sync_dir(dir: &Path) -> Result<(), DropinError> {
    crate::state::atomic::sync_dir(dir).map_err(from_atomic)
}

#[cfg(test)]
#[path = "dropin_tests.rs"]
mod tests;
