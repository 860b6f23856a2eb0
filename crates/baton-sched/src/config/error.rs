//! Why a configuration cannot be honoured. One line each, naming the file
//! and line (or the environment variable), the key, the bad value and what
//! is allowed, so the fix is obvious from the message alone. Every one of
//! them makes a command exit 2 before anything runs or is created.

use std::path::PathBuf;

/// A configuration that cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// No configuration file where one was looked for.
    #[error(
        "no configuration: {} does not exist (give --config FILE, or set BATON_CONFIG)",
        path.display()
    )]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// The file says nothing: empty, or blank lines and comments only.
    /// Never read as every default: a file being rewritten in place is
    /// empty for a moment, and its defaults (another state directory)
    /// would let a job run beside its own run.
    #[error(
        "the configuration {} is empty: a file being rewritten? nothing runs on it; write it whole (to a new file, then rename it over), or, for every default, put `[scheduler]` in it",
        path.display()
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("failed to read the configuration {}: {cause}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        cause: String,
    },
    /// A key, a value, or a combination of them is not allowed.
    #[error("{at}: {key}: {message}")]
    Invalid {
        /// `FILE:LINE`, or the environment variable.
        at: String,
        /// The key, as a dotted path (`jobs.backup.retries`).
        key: String,
        /// The bad value and what is allowed.
        message: String,
    },
    /// A file or directory of the configuration another user could have
    /// written: it names the commands baton runs.
    #[error("{0}")]
    Untrusted(#[from] baton_lease::trust::Untrusted),
    /// The file is not TOML.
    #[error("{}:{line}: not valid TOML: {message}", path.display())]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The line.
        line: u32,
        /// The parser's message.
        message: String,
    },
}
