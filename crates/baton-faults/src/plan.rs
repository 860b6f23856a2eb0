//! A validated campaign ([`Plan`]): what the command line becomes once it
//! is checked ([`crate::cli`]), what the scenarios' needs are judged
//! against ([`crate::scenario::can_run`]) and what [`crate::campaign`]
//! runs.
//!
//! It only holds the campaign's choices: it never validates, runs or
//! prints anything.

use std::path::PathBuf;

/// A validated campaign.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// Scenarios and how many trials of each.
    pub(crate) scenarios: Vec<(&'static str, u32)>,
    pub(crate) seed: u64,
    pub(crate) baton: PathBuf,
    pub(crate) failpoints: Option<PathBuf>,
    pub(crate) parallel: usize,
    pub(crate) dir: PathBuf,
    pub(crate) json: Option<PathBuf>,
    pub(crate) keep: bool,
    pub(crate) progress: bool,
}
