//! The ledgers idle between their users. Opening the local ledger (a
//! SQLite connection: the file opened, its schema checked) costs
//! milliseconds, and a run due now would pay it before its function is
//! called. So a ledger of the local store is kept when its user is done
//! with it, and the next one takes it, while it is younger than [`KEEP`]
//! (a ledger follows its file when it is moved aside, at each call; the
//! bound only keeps idle connections from piling up).
//!
//! It never opens, reads or writes a ledger: it only keeps the ones
//! handed back and hands them out again ([`crate::ledgers::Ledger`] does
//! both, for the local store only).

use std::sync::Mutex;
use std::time::Duration;

use baton_store::ledger::Records;

/// How long a ledger is kept for the next user after it was opened.
pub(crate) const KEEP: Duration = Duration::from_secs(10);

/// How many idle ledgers are kept at most.
const MOST: usize = 16;

/// A ledger opened, and when (boot clock).
type Kept = (Box<dyn Records>, Duration);

/// The ledgers idle between users.
#[derive(Default)]
pub(crate) struct Idle {
    kept: Mutex<Vec<Kept>>,
}

impl Idle {
    /// A ledger younger than [`KEEP`] at `now` (boot clock), if one waits.
    pub(crate) fn take(&self, now: Duration) -> Option<Kept> {
        let mut kept = self.kept.lock().ok()?;
        kept.retain(|(_, opened)| now.saturating_sub(*opened) < KEEP);
        kept.pop()
    }

    /// Keeps `ledger` for the next user, when it is young enough.
    pub(crate) fn give(&self, ledger: Kept, now: Duration) {
        if now.saturating_sub(ledger.1) >= KEEP {
            return;
        }
        if let Ok(mut kept) = self.kept.lock()
            && kept.len() < MOST
        {
            kept.push(ledger);
        }
    }
}
