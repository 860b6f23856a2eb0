//! The store's failures. Contention is never one of them: a busy lease, a
//! claimed occurrence and a lost token are outcomes ([`crate::Acquire`],
//! [`crate::Renewal`], [`crate::Release`]). An error means the store could not
//! answer, and the caller must act as if it had lost the lease.

use std::time::Duration;

/// A failure to reach or use the PostgreSQL store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The store URL could not be parsed; the message names the option
    /// the driver refused (never its value).
    #[error(
        "failed to parse the store url: {}; remove it or spell it as the README's connection \
         settings list the url's parameters",
        said(.0)
    )]
    Url(#[source] tokio_postgres::Error),
    /// A TLS parameter of the store URL (`sslmode` …) cannot be used; the
    /// message names it.
    #[error("failed to parse the store url: {0}")]
    UrlParam(#[source] crate::tls::ParamError),
    /// A file holding the store's password could not be read.
    #[error("failed to read the store password file {}: {cause}", path.display())]
    PasswordFile {
        /// The file (`[store] password_file`, or `PGPASSFILE`).
        path: std::path::PathBuf,
        /// What the system said.
        #[source]
        cause: std::io::Error,
    },
    /// `[store] password_file` cannot be used: not a regular file of this
    /// user's or root's that nobody else may read or write, empty, or too
    /// long (checked as the daemon's token file is).
    #[error("[store] password_file: {0}")]
    PasswordFileRefused(#[source] baton_lease::secret::SecretError),
    /// A libpq variable holds a value that cannot be used.
    #[error("failed to read {name}: {why}")]
    Env {
        /// The variable.
        name: &'static str,
        /// What is wrong.
        why: String,
    },
    /// No connection could be made.
    #[error("failed to connect to the store at {target}: {}", said(source))]
    Connect {
        /// Host, port, database and user (never the password).
        target: String,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// No host of a URL naming several took the connection: what each did,
    /// in the order they were tried (never a password).
    #[error("failed to connect to the store at {target}: no host took the connection: {tried}")]
    NoHost {
        /// Hosts, ports, database and user (never the password).
        target: String,
        /// Each host and what it did (`db1:5432: no answer within 2.9s; …`).
        tried: String,
    },
    /// TLS could not be set up for a connection (a certificate or key file
    /// the URL names cannot be read or used); nothing was sent.
    #[error("failed to connect to the store at {target}: {source}")]
    Tls {
        /// Host, port, database and user (never the password).
        target: String,
        /// What went wrong (boxed: this error stays small).
        #[source]
        source: Box<crate::tls::TlsError>,
    },
    /// A statement failed (statement timeouts included: the server cancels a
    /// statement that runs longer than [`crate::Options::statement_timeout`]).
    #[error("failed to {what}: {}", said(source))]
    Query {
        /// What was being done, as `<verb> <object>`.
        what: &'static str,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The server did not answer in time; the connection is dropped.
    #[error("failed to {what}: no answer from the store within {deadline:?}")]
    Timeout {
        /// What was being done.
        what: &'static str,
        /// The client-side deadline that passed.
        deadline: Duration,
    },
    /// The schema is newer than this build: it refuses to use or migrate it.
    #[error(
        "failed to {what}: the baton schema is at version {found}, newer than this build's \
         {known}: a newer baton made it; nothing was read or changed: upgrade baton to that \
         version or later"
    )]
    SchemaTooNew {
        /// What was being done.
        what: &'static str,
        /// The version in the database.
        found: i32,
        /// The newest version this build knows.
        known: i32,
    },
    /// The schema has not been migrated to this build's version.
    #[error(
        "failed to open the baton schema: it is at version {found}, this build needs {known} \
         (run `baton store migrate`)"
    )]
    SchemaBehind {
        /// The version in the database (0: none).
        found: i32,
        /// The version this build needs.
        known: i32,
    },
    /// The server takes no writes (a standby in recovery, or
    /// `default_transaction_read_only` on), and every lease step writes:
    /// refused when the connection is opened, before anything runs.
    #[error(
        "failed to open the store at {target}: the server is read-only ({why}); baton writes \
         every lease and record there: point the store url at the primary, or turn \
         default_transaction_read_only off for baton's database or user"
    )]
    ReadOnly {
        /// Host, port, database and user (never the password).
        target: String,
        /// Why it is read-only.
        why: &'static str,
    },
    /// A held lease's connection thread is gone (its runtime could not be
    /// built, or it ended); nothing can be sent to the store through it.
    #[error("failed to {what}: the lease's connection thread has stopped")]
    Stopped {
        /// What was being done.
        what: &'static str,
    },
    /// The PostgreSQL ledger's thread, or the runtime it runs, could not be
    /// started.
    #[error("failed to start the ledger's thread: {0}")]
    Thread(#[source] std::io::Error),
    /// The random source for tokens could not be read.
    #[error("failed to draw a lease token: {0}")]
    Random(#[source] std::io::Error),
    /// A lease row holds a value this build cannot read.
    #[error("failed to read lease {name}: {why}")]
    Corrupt {
        /// The lock's name.
        name: String,
        /// What is wrong.
        why: String,
    },
}

impl Error {
    /// Whether a statement may have reached the server and committed
    /// although no answer said so: the deadline passed, or the connection
    /// failed without the server's word. An error the server sent rolled
    /// its transaction back; a failure to connect sent nothing.
    pub(crate) fn fate_unknown(&self) -> bool {
        match self {
            Self::Timeout { .. } => true,
            Self::Query { source, .. } => source.as_db_error().is_none(),
            _ => false,
        }
    }
}

/// What the driver's error says, whole: the server's own message for an
/// error the server sent (`password authentication failed for user "x"`,
/// `database "y" does not exist`), else the driver's words and their cause
/// (`error connecting to server: Connection refused (os error 111)`). The
/// driver's `Display` alone says only "db error".
pub(crate) fn said(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}
