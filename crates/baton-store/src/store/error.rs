//! Why a store could not decide: it could not be reached, read or trusted.
//! Contention is never one of these (a busy lock is a [`super::Taken`]); an
//! error means the run does not start and nothing was changed by it.

/// What failed, for the caller to say and refuse on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The lock file's protocol failed (I/O, permissions, no mutex).
    #[error(transparent)]
    Lease(#[from] baton_lease::Error),
    /// The store could not be reached or refused a statement; `at` names
    /// the lock when the store's own message does not.
    #[error("{}{source}", at.as_ref().map(|a| format!("{a}: ")).unwrap_or_default())]
    Failed {
        /// The lock the call was about, when the message should name it.
        at: Option<String>,
        /// The store's error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// What a command was handed as a lease's token is not one.
    #[error("{0:?} is not a lease token")]
    NotAToken(String),
    /// The lock file's critical section could not be entered in time.
    #[error(
        "refused: the lock's critical section could not be entered ({0}); nothing was written, \
         try again"
    )]
    Busy(String),
    /// The lock's record is not one this build reads, so the job's claims
    /// in it are unknown.
    #[error("{lock}: its claims cannot be read: {why}")]
    Claims {
        /// The lock, for people.
        lock: String,
        /// What is wrong with its record.
        why: String,
    },
    /// The thread a store's call runs on could not be started or failed.
    #[error("{0}")]
    Thread(&'static str),
    /// The runtime a store's call runs on could not be started.
    #[error("failed to start a runtime for the store: {0}")]
    Runtime(#[source] std::io::Error),
}

impl Error {
    /// A store's own error, naming the lock (`at`) when given.
    pub fn failed(
        at: Option<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Failed {
            at,
            source: source.into(),
        }
    }
}
