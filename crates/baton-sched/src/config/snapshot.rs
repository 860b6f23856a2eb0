//! The configuration's files as text, read once: what the daemon keeps in
//! force and hands to each run it starts, so that a run uses the
//! configuration the daemon validated, never a file edited since (an
//! invalid edit is refused by the reload and must not reach the runs).
//!
//! A snapshot only reads; it never writes a file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, Overrides};

/// The text of a configuration's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The configuration file, absolute.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// The drop-ins in `jobs.d/`, by name.
    pub dropins: Vec<Dropin>,
}

/// One drop-in of a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropin {
    /// `jobs.d/NAME.toml`.
    pub path: PathBuf,
    /// `NAME`.
    pub name: String,
    /// What it says.
    pub text: String,
}

impl Snapshot {
    /// Reads the configuration's files at `path`.
    ///
    /// # Errors
    ///
    /// A missing or unreadable file.
    pub fn read(path: &Path) -> Result<Self, ConfigError> {
        Ok(Self {
            path: path.to_owned(),
            text: read_main_text(path)?,
            dropins: super::dropin::scan(path)?
                .into_iter()
                .map(|f| Dropin {
                    path: f.path,
                    name: f.name,
                    text: f.text,
                })
                .collect(),
        })
    }

    /// Validates the snapshot into a configuration.
    ///
    /// # Errors
    ///
    /// Anything [`super::load`] refuses.
    pub fn load(&self, over: &Overrides) -> Result<Config, ConfigError> {
        let root = super::parse_doc(&self.text, &self.path)?;
        let found: Vec<super::found::Found> = self
            .dropins
            .iter()
            .map(|d| super::found::Found {
                path: d.path.clone(),
                name: d.name.clone(),
                text: d.text.clone(),
            })
            .collect();
        super::read::document(&root, &self.path, over, &found)
    }
}

/// The text of the configuration file at `path` ([`read_trusted`]).
///
/// # Errors
///
/// A missing, unreadable or untrusted file.
pub(super) fn read_main_text(path: &Path) -> Result<String, ConfigError> {
    match read_trusted(path) {
        Ok(text) if says_nothing(&text) => Err(ConfigError::Empty {
            path: path.to_owned(),
        }),
        Ok(text) => Ok(text),
        Err(Read::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Err(ConfigError::Missing {
            path: path.to_owned(),
        }),
        Err(Read::Io(e)) => Err(ConfigError::Unreadable {
            path: path.to_owned(),
            cause: e.to_string(),
        }),
        Err(Read::Refused(e)) => Err(e),
    }
}

/// Whether a TOML text holds no table and no key: empty, or blank lines
/// and comments only.
fn says_nothing(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|l| l.is_empty() || l.starts_with('#'))
}

/// Why the configuration file was not read.
enum Read {
    Io(std::io::Error),
    Refused(ConfigError),
}

/// The configuration file's text, once it is known to be a regular file
/// (opened without blocking: a named pipe there never hangs a command)
/// that only this user or root can change, in directories nobody else can
/// rearrange. It names the commands baton runs, as whoever runs it: a file
/// another user could write is a way to run commands as this one. A
/// symbolic link to it is followed, and its target checked.
fn read_trusted(path: &Path) -> Result<String, Read> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(Read::Io)?;
    let meta = file.metadata().map_err(Read::Io)?;
    if !meta.is_file() {
        return Err(Read::Refused(ConfigError::Unreadable {
            path: path.to_owned(),
            cause: format!(
                "it is {}, not a regular file",
                baton_lease::trust::kind(meta.file_type())
            ),
        }));
    }
    let refused = |e| Read::Refused(ConfigError::Untrusted(e));
    let real = std::fs::canonicalize(path).map_err(Read::Io)?;
    baton_lease::trust::check_config(&real, &meta).map_err(refused)?;
    if let Some(dir) = real.parent() {
        baton_lease::trust::check_dir_path(dir, 0).map_err(refused)?;
    }
    std::io::read_to_string(file).map_err(Read::Io)
}
