//! baton-store: the boundary between the scheduler and where it keeps what
//! it shares: the lease a run holds ([`Held`]) and the ledger it writes.
//!
//! Four concepts: [`store`], the store itself (taking, judging and
//! guarding a job's lock, opening its ledger, and what the scheduler must
//! know of it); [`held`], the lease a run holds while it runs (the runner
//! renews and releases it, whatever keeps it); [`ledger`], what the
//! scheduler records, with its transactions written once over each store's
//! single statements; and [`words`], the typed vocabulary it records in
//! (verdicts, outcomes, reasons, alert kinds), text only at its edges.
//!
//! The scheduler, the runner and the daemon speak to a store only through
//! this crate's traits and types; each store (lock files and SQLite in
//! `baton-ledger`, PostgreSQL in `baton-pg`) implements them and depends on
//! nothing above it. Nothing here spawns, stops or supervises a process,
//! reads a clock, or names one store.

pub mod held;
mod lease_file;
pub mod ledger;
pub mod store;
pub mod words;

pub use held::{Held, HeldError, Release, Renewal, Restated};
pub use store::{LockRef, Store};
