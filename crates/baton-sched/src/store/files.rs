//! The embedded store: lock files under `STATE_DIR/locks/` and the SQLite
//! ledger `STATE_DIR/baton.db`. It adds nothing to `baton-lease` and
//! `baton-ledger`, which own those files; it only says where they are.

use std::path::PathBuf;

use baton_ledger::{Error as LedgerError, Ledger, Records};
use jiff::Timestamp;

use super::Store;

/// Files in one state directory.
#[derive(Debug, Clone)]
pub struct Files {
    state_dir: PathBuf,
}

impl Files {
    /// The store in `state_dir`.
    pub fn new(state_dir: PathBuf) -> Self {
        Self { state_dir }
    }
}

impl Store for Files {
    fn kind(&self) -> &'static str {
        "files"
    }

    fn location(&self) -> String {
        self.state_dir.join("baton.db").display().to_string()
    }

    fn records(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
        Ok(Box::new(Ledger::open(&self.state_dir, now)?))
    }

    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>> {
        self.state_dir
            .join("baton.db")
            .exists()
            .then(|| self.records(now))
    }
}
