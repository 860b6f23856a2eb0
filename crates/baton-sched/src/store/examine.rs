//! An operator's look at the configured store (`baton doctor`) that changes
//! nothing: for files, the ledger as [`baton_ledger::Ledger::examine`]
//! finds it; for PostgreSQL, how the connection is made and what one
//! connection reads (the schema's version, the server's clock against this
//! host's). The lock files and lease rows are read through [`Store::inspect`],
//! as `baton status` reads them.
//!
//! [`Store::inspect`]: super::Store::inspect

use std::path::PathBuf;

use baton_lease::Clock;

use crate::config::Config;

/// What an examination of the store found.
#[derive(Debug)]
pub enum Examination {
    /// The embedded store: lock files and the SQLite ledger in the state
    /// directory.
    Files {
        /// The state directory.
        state_dir: PathBuf,
        /// The ledger: `None` when there is none yet.
        ledger: Result<Option<baton_ledger::Examined>, baton_ledger::Error>,
    },
    /// The PostgreSQL store.
    Postgres {
        /// Host, port, database and user (never the password).
        target: String,
        /// How a connection is made, as configured.
        link: baton_pg::examine::Link,
        /// What one connection read, or why none could be made.
        found: Result<baton_pg::examine::Examined, super::Error>,
    },
}

/// Examines the store `config` names, changing nothing.
///
/// # Errors
///
/// When `[store]` cannot be used at all (its URL or password): the message
/// names the setting.
pub fn examine(config: &Config, clock: &dyn Clock) -> Result<Examination, super::Unusable> {
    match &config.store {
        None => {
            let state_dir = config.settings.state_dir.value.clone();
            // No state directory yet: no ledger either (the first run
            // creates both).
            let ledger = if state_dir.exists() {
                baton_ledger::Ledger::examine(&state_dir)
            } else {
                Ok(None)
            };
            Ok(Examination::Files { state_dir, ledger })
        }
        Some(s) => {
            let pg = super::postgres(s)?;
            let (target, link) = pg.link();
            let found = pg.examine(clock);
            Ok(Examination::Postgres {
                target,
                link,
                found,
            })
        }
    }
}
