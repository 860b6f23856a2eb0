//! The exhibits: transcriptions of the broken run locks that came before
//! baton, kept as evidence and used by nothing but this instrument.
//!
//! Seed 003 §9.1: "a test that only ever shows green proves the new code
//! passes. Running the old algorithm through the same instrument is what
//! shows there was something to fix." Each module's header names the defect
//! it demonstrates and the source it is transcribed from.
//!
//! Rules for these files (seed 003 §14.11: "do not improve the
//! transcription"):
//!
//! - They are faithful. Where the source is silent, a transcription takes
//!   the reading that is *correct*, so that any race the instrument shows is
//!   the documented defect and not an invention of the transcriber; each
//!   such reading is marked `Reading:` in the code.
//! - The one deliberate change is the time scale: thresholds are
//!   milliseconds, not hours, so a campaign finishes; stamps therefore carry
//!   microseconds where the originals carried seconds (a seconds stamp
//!   against a 200 ms threshold would invent staleness the original never
//!   had).
//! - They never link into the product: the crate `baton-stress` is a
//!   separate binary for exactly this reason.
//! - Their file mutexes go through [`crate::flock`], the crate's one door to
//!   `flock`; the one exhibit that lives in PostgreSQL ([`shedlock`]) is
//!   driven through [`crate::store`], the one door to the server.

pub(crate) mod counter;
pub(crate) mod schedule;
pub(crate) mod seed000;
pub(crate) mod seed001;
pub(crate) mod shedlock;
pub(crate) mod v1;
pub(crate) mod v2;

use std::path::PathBuf;

/// An I/O failure of an exhibit, saying what was being done to what.
#[derive(Debug, thiserror::Error)]
#[error("failed to {what} {}: {source}", path.display())]
pub(crate) struct IoError {
    /// What was being done.
    pub(crate) what: &'static str,
    /// To which path.
    pub(crate) path: PathBuf,
    /// The cause.
    #[source]
    pub(crate) source: std::io::Error,
}

impl IoError {
    pub(crate) fn new(what: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        Self {
            what,
            path: path.to_owned(),
            source,
        }
    }
}

/// A wall-clock stamp with microseconds, the precision the exhibits keep.
pub(crate) fn stamp(t: jiff::Timestamp) -> String {
    format!("{t:.6}")
}
