//! The configuration in use with the jobs services declared in its store's
//! ledger ([`crate::config::declared`]), for the commands that show or
//! pause a job: `history`, `pause` and `resume` (`status` reads the
//! declarations with its own first read, [`super::status`]).
//!
//! It reads; it never writes the ledger, nor creates one: with no ledger
//! yet there is nothing declared.

use baton_store::ledger::Error as LedgerError;
use jiff::Timestamp;

use crate::config::Config;

/// `config` with the jobs declared in its store's ledger, read at `now`;
/// a declaration that cannot be read as a job is left out and said.
///
/// # Errors
///
/// When the ledger exists and cannot be read.
pub fn with_declared(config: &Config, now: Timestamp) -> Result<Config, LedgerError> {
    let declared = match crate::engine::surfaces::existing_records_alerting(config, now) {
        None => Vec::new(),
        Some(opened) => opened?.declarations()?,
    };
    let (merged, problems) = crate::config::declared::merged(config, &declared);
    for p in problems {
        crate::say::warn(format_args!("{p}"));
    }
    Ok(merged)
}
