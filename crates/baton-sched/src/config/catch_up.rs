//! `catch_up`'s words: what runs of the occurrences that passed while
//! nothing ran a job.
//!
//! This module owns the words and their spelling in `baton.toml`. It must
//! never decide what is due: the engine does, by them.

/// What runs of the occurrences that passed while nothing ran the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CatchUp {
    /// The most recent one within the window.
    Latest,
    /// Only one whose time is now (within a minute).
    None,
    /// Every one within the window, oldest first, at most `catch_up_max`.
    All,
}

impl CatchUp {
    /// The word in `baton.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::Latest => "latest",
            CatchUp::None => "none",
            CatchUp::All => "all",
        }
    }
}
