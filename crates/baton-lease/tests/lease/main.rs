#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.
//! baton-lease's integration tests: the real lock on real files, contended by
//! real threads and real processes, killed with real signals.

mod support;

mod bad_input;
mod claims;
mod contention;
mod crash;
mod fencing;
mod guard;
mod presence;
mod record;
mod renewal;
mod reopen;
mod versions;
