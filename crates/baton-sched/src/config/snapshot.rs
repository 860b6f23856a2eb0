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
        match std::fs::read_to_string(path) {
            Ok(text) => Ok(Self {
                path: path.to_owned(),
                text,
                dropins: super::dropin::scan(path)?
                    .into_iter()
                    .map(|f| Dropin {
                        path: f.path,
                        name: f.name,
                        text: f.text,
                    })
                    .collect(),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ConfigError::Missing {
                path: path.to_owned(),
            }),
            Err(e) => Err(ConfigError::Unreadable {
                path: path.to_owned(),
                cause: e.to_string(),
            }),
        }
    }

    /// Validates the snapshot into a configuration.
    ///
    /// # Errors
    ///
    /// Anything [`super::load`] refuses.
    pub fn load(&self, over: &Overrides) -> Result<Config, ConfigError> {
        let root = super::parse_doc(&self.text, &self.path)?;
        let found: Vec<super::dropin::Found> = self
            .dropins
            .iter()
            .map(|d| super::dropin::Found {
                path: d.path.clone(),
                name: d.name.clone(),
                text: d.text.clone(),
            })
            .collect();
        super::read::document(&root, &self.path, over, &found)
    }
}
