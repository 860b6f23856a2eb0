//! A drop-in as read from `jobs.d/`: its file, the job it defines and its
//! text, handed from the directory's scan ([`super::dropin`]) or a
//! snapshot to the reader, which validates it with `baton.toml`.
//!
//! This module owns only the type. It must never read the directory nor
//! validate the text: [`super::dropin`] finds drop-ins, the reader judges
//! them.

use std::path::PathBuf;

/// A drop-in as read: its file, the job it defines, its text.
#[derive(Debug, Clone)]
pub(super) struct Found {
    /// `jobs.d/NAME.toml`.
    pub(super) path: PathBuf,
    /// `NAME`.
    pub(super) name: String,
    /// What it says.
    pub(super) text: String,
}
