//! How a call on the ledger fails, whatever the store: the caller's
//! arguments refused ([`Error::Invalid`], the same words from every store),
//! or the store's own typed error ([`Failure`]), shown as the store says it
//! and classed by [`Kind`], which is all a caller decides on.

use std::fmt;

/// Why a call on the ledger failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument cannot be stored, or contradicts the ledger (a run named
    /// with another job than its own). Nothing was written.
    #[error("failed to {action} in {store}: {problem}; nothing was written")]
    Invalid {
        /// What was being done.
        action: String,
        /// The store: the database's path, or the server without its
        /// password.
        store: String,
        /// What is wrong with the argument.
        problem: String,
    },
    /// The store failed, or refused to be used.
    #[error(transparent)]
    Store(#[from] Failure),
}

impl Error {
    /// A store's failure of `kind`.
    pub fn store(kind: Kind, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Store(Failure::new(kind, source))
    }

    /// What kind of failure it is: [`Kind::Failed`] for a refused argument.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Invalid { .. } => Kind::Failed,
            Error::Store(f) => f.kind,
        }
    }

    /// Whether the ledger was written by a newer baton: it was neither read
    /// nor changed, and nothing may be decided from it until baton is
    /// upgraded.
    pub fn is_newer_schema(&self) -> bool {
        self.kind() == Kind::NewerSchema
    }

    /// Whether the ledger's files themselves are refused (a symbolic link,
    /// anything but a regular file, a file another user could write):
    /// retrying changes nothing; an operator must act.
    pub fn is_refused_file(&self) -> bool {
        self.kind() == Kind::Refused
    }

    /// The store's own error, to look into (`downcast_ref`) where a caller
    /// knows the store.
    pub fn source_error(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        match self {
            Error::Invalid { .. } => None,
            Error::Store(f) => Some(&*f.source),
        }
    }
}

/// What kind of failure a store's is: all a caller needs to decide what to
/// do (exit 2 and change nothing, refuse and say who must act, or try
/// again later).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Kind {
    /// The ledger has a schema a newer baton wrote: it was left as it is.
    NewerSchema,
    /// The ledger's files are refused as they are; an operator must act.
    Refused,
    /// Anything else: the store failed, was busy, or did not answer.
    Failed,
}

/// A store's failure: its own typed error, shown as it is, and its
/// [`Kind`].
pub struct Failure {
    kind: Kind,
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl Failure {
    /// `source`, a store's error, classed as `kind`.
    pub fn new(kind: Kind, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self {
            kind,
            source: Box::new(source),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failure")
            .field("kind", &self.kind)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.source, f)
    }
}

impl std::error::Error for Failure {
    /// Transparent: the store's error is this one, shown as it is; what
    /// caused it is what caused the store's.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.source()
    }
}

/// A store that could not be used at all (its configuration, or its
/// connection, refused): what was being done, where, and the cause.
#[derive(Debug, thiserror::Error)]
#[error("failed to {action} in {store}: {source}")]
pub struct Unusable {
    /// What was being done.
    pub action: String,
    /// The store, without its password.
    pub store: String,
    /// Why it cannot be used.
    pub source: Box<dyn std::error::Error + Send + Sync>,
}
