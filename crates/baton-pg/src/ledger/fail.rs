//! How a call on the PostgreSQL ledger fails, before the ledger adds the
//! action and the store: the driver's error, a refusal of the caller's
//! arguments, a stored value this build cannot read, no connection, or no
//! answer in time. [`Fail::into_error`] is the one place that turns these
//! into `baton_store::ledger::Error`.
//!
//! A refused argument becomes `Error::Invalid`, as in the SQLite ledger
//! (its `path` is the store's description), so callers that tell a bad
//! argument from a failing store keep doing so; every other failure is
//! `Error::Store`. None of them is ever taken for corruption: this ledger
//! never recovers by moving anything aside.

use std::time::Duration;

/// Why a call failed.
#[derive(Debug)]
pub enum Fail {
    /// A statement failed (the transaction rolled back).
    Pg(tokio_postgres::Error),
    /// An argument contradicts the ledger; nothing was written.
    Invalid(String),
    /// A stored value does not fit the API's type.
    Value(String),
    /// No connection could be made, or its schema is not this build's.
    Connect(crate::Error),
    /// No answer within the deadline; the connection was dropped.
    Timeout(Duration),
    /// The ledger's thread has stopped.
    Stopped,
    /// A statement of the transaction failed earlier, and the transaction
    /// went on: nothing was committed.
    Aborted,
    /// A read sent as one statement asked for a second, which was not
    /// sent: the read is run again, waiting for its `COMMIT`.
    Again,
}

impl From<tokio_postgres::Error> for Fail {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::Pg(e)
    }
}

impl Fail {
    /// The error a caller sees: `action` is what was being done, `store`
    /// the store's description (never its password).
    pub(crate) fn into_error(self, action: String, store: &str) -> baton_store::ledger::Error {
        use baton_store::ledger::{Error, Kind};
        match self {
            Fail::Invalid(problem) => Error::Invalid {
                action,
                store: store.to_owned(),
                problem,
            },
            fail => {
                let kind = match &fail {
                    Fail::Connect(crate::Error::SchemaTooNew { .. }) => Kind::NewerSchema,
                    _ => Kind::Failed,
                };
                Error::store(
                    kind,
                    LedgerError {
                        action,
                        store: store.to_owned(),
                        fail,
                    },
                )
            }
        }
    }

    /// What went wrong, in words.
    fn message(&self) -> String {
        match self {
            Fail::Invalid(problem) => problem.clone(),
            Fail::Pg(e) => describe(e),
            Fail::Value(why) => format!("a stored value cannot be read: {why}"),
            Fail::Connect(e) => e.to_string(),
            Fail::Timeout(deadline) => format!(
                "no answer from the store within {deadline:?}; the connection was dropped, and \
                 a write in flight may or may not have committed"
            ),
            Fail::Stopped => "the ledger's thread has stopped".to_owned(),
            Fail::Again => "a read asked for more statements than it was sent with".to_owned(),
            Fail::Aborted => {
                "a statement of the transaction failed; nothing was written".to_owned()
            }
        }
    }
}

/// A failure of the PostgreSQL ledger: what was being done, in which store
/// (never its password), and what went wrong. Nothing was written, or the
/// write's fate is unknown and the next read tells.
#[derive(Debug)]
pub struct LedgerError {
    action: String,
    store: String,
    fail: Fail,
}

impl LedgerError {
    /// What was being done.
    pub fn action(&self) -> &str {
        &self.action
    }

    /// The store, without its password.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// What went wrong, in words.
    pub fn message(&self) -> String {
        self.fail.message()
    }
}

impl std::fmt::Display for LedgerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "failed to {} in {}: {}",
            self.action,
            self.store,
            self.fail.message()
        )
    }
}

impl std::error::Error for LedgerError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.fail {
            Fail::Pg(e) => Some(e),
            Fail::Connect(e) => Some(e),
            _ => None,
        }
    }
}

/// The driver's error in words, with the server's code and message when
/// the server answered.
fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({}): {detail}", db.message(), db.code().code()),
            None => format!("{} ({})", db.message(), db.code().code()),
        },
        None => e.to_string(),
    }
}
