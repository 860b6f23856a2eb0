//! Where an effective value came from ([`Source`]: baton's default, a
//! line of a file, a variable, a flag, the ledger), and a value carried
//! with it ([`Sourced`]), so that `baton config` can say where each value
//! came from.
//!
//! This module owns only these words. It must never read a file or the
//! environment, nor decide which source wins: the reader does.

/// Where an effective value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// baton's default.
    Default,
    /// A line of a configuration file.
    File {
        /// The file (shared by every value read from it).
        path: std::sync::Arc<std::path::Path>,
        /// The line (1-based).
        line: u32,
    },
    /// An environment variable (`BATON_RETRIES`).
    Env(String),
    /// A command-line option (`--state-dir`).
    Flag(String),
    /// A service that embeds baton's scheduler declared it in the ledger
    /// (a job only: see `config::declared`); who declared it, for people.
    Declared(String),
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line } => write!(f, "{}:{line}", path.display()),
            Source::Env(name) | Source::Flag(name) => f.write_str(name),
            Source::Declared(by) => write!(f, "the ledger (declared by {by})"),
        }
    }
}

/// A value and where it came from. `inherited` is set on a job's value that
/// it took from `[scheduler]` (whose source `source` then names).
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub source: Source,
    /// Whether a job took it from `[scheduler]`.
    pub inherited: bool,
}

impl<T> Sourced<T> {
    /// A value from `source`, not inherited.
    pub fn new(value: T, source: Source) -> Self {
        Self {
            value,
            source,
            inherited: false,
        }
    }

    /// A default value.
    pub fn default_value(value: T) -> Self {
        Self::new(value, Source::Default)
    }

    /// The value `f` makes of this one, from the same source.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Sourced<U> {
        Sourced {
            value: f(self.value),
            source: self.source,
            inherited: self.inherited,
        }
    }

    /// The same value, as a job inherits it.
    pub fn inherit(&self) -> Self
    where
        T: Clone,
    {
        Self {
            value: self.value.clone(),
            source: self.source.clone(),
            inherited: true,
        }
    }

    /// Where it came from, in words: `default`, `FILE:LINE`, `BATON_X`, or
    /// `[scheduler] FILE:LINE` for an inherited value.
    pub fn provenance(&self) -> String {
        if self.inherited {
            format!("[scheduler] {}", self.source)
        } else {
            self.source.to_string()
        }
    }
}
