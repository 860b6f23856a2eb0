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
        super::parse(&self.text, &self.path, over)
    }
}
