//! baton-sched's integration tests: the library driven by real threads on
//! real locks, ledgers and processes.
#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.

mod recovered;
mod threads;
