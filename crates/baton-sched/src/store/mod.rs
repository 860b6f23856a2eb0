//! Where the scheduler keeps what it shares between processes and hosts:
//! the leases and occurrence claims, and the ledger (runs, decisions, missed
//! ranges, the queue, alerts, pauses, watermarks, tallies).
//!
//! [`Store`] is the one trait the rest of the scheduler talks to; it has two
//! implementations. [`files::Files`] is the embedded default: lock files in
//! `STATE_DIR/locks/` and the SQLite ledger `STATE_DIR/baton.db`, nothing to
//! install or start. `pg::Postgres` (`[store] url`, or `BATON_STORE_URL`)
//! keeps both in PostgreSQL, so schedulers on several hosts share them.
//! [`open`] chooses from the configuration; nothing else in the scheduler
//! may name either implementation, open a ledger or take a lease by itself.

mod files;

pub use files::Files;

use baton_ledger::{Error as LedgerError, Records};
use jiff::Timestamp;

use crate::config::Config;

/// The scheduler's shared state, in files or in PostgreSQL.
pub trait Store {
    /// `files` or `postgres`, for messages and `status`.
    fn kind(&self) -> &'static str;
    /// Where it is, for messages and to tell two stores apart: the ledger's
    /// path, or the URL without its password.
    fn location(&self) -> String;
    /// Opens the ledger for writing (creating it when it does not exist).
    ///
    /// # Errors
    ///
    /// When the ledger cannot be opened: the caller says so and goes on
    /// unrecorded (a run) or fails (a command that only reads or edits it).
    fn records(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError>;
    /// Opens the ledger to read it: `None` when there is none yet (a reader
    /// never creates one).
    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>>;
}

/// The store `config` names: PostgreSQL with `[store] url`, else files in
/// the state directory.
pub fn open(config: &Config) -> Box<dyn Store> {
    Box::new(Files::new(config.settings.state_dir.value.clone()))
}

/// Opens the ledger of `config`'s store for writing.
///
/// # Errors
///
/// As [`Store::records`].
pub fn records(config: &Config, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
    open(config).records(now)
}

/// Opens the ledger of `config`'s store to read it, when there is one.
pub fn existing_records(
    config: &Config,
    now: Timestamp,
) -> Option<Result<Box<dyn Records>, LedgerError>> {
    open(config).existing_records(now)
}
