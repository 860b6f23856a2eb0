//! The operations people and the daemon ask for: `tick` and `run` now
//! ([`tick`]), [`backfill`], [`pause`] and resume, and settling a
//! [`watermark`], and recording an occurrence a scheduler could not start
//! ([`unstarted`]). Each drives the engine and returns a typed
//! [`crate::outcome::Outcome`]; the binary decides the exit code.

pub mod backfill;
pub mod pause;
pub mod tick;
pub mod unstarted;
pub mod watermark;
