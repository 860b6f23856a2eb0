//! The ledger: what the scheduler records (runs, decisions, missed ranges,
//! the queue, alerts, pauses, watermarks, tallies) and the contract every
//! store keeps for it, written once.
//!
//! Three layers, each in its own file:
//!
//! - [`Records`] is what the scheduler calls: one method per question or
//!   record, each one transaction, each documented with the guarantee it
//!   keeps. The scheduler holds a `dyn Records` and never learns which store
//!   it talks to.
//! - The transactions (`transactions.rs`) are every method's body, written
//!   once: which statements run, in which order, on what condition. They
//!   are what makes an occurrence decided once across every process and
//!   host, a decision never go back behind a job's `last_decided` mark, and
//!   no update be lost between writers.
//! - [`Statements`] are the single statements a store implements (SQLite in
//!   `baton-ledger`, PostgreSQL in `baton-pg`), and [`Backend`] how it runs
//!   a transaction: begin, run the body, commit, and say what failed.
//!   Adding a store is implementing these two traits and a lease table;
//!   `DESIGN.md` says exactly what that takes.
//!
//! Nothing here reads a clock: every time comes from the caller, and the
//! one clock a store may read is its own ([`Records::store_clock`]).

pub mod checks;
mod error;
mod records;
mod rows;
mod statements;
mod transactions;

/// The ledger's own words, where its callers have long found them.
pub use crate::words::{Decision, StepKind, UnknownWord};
pub use checks::{MAX_HISTORY_KEEP, MAX_WATERMARK};
pub use error::{Error, Failure, Kind, Unusable};
pub use records::Records;
pub use rows::{
    AlertRow, Attempt, AttemptRow, BACKFILL_DETAIL, BOUNDS, BOUNDS_US, Begun, DecisionRow,
    Declaration, Durations, Effect, Finished, JobAsk, JobRecord, JobState, JobTallies, Miss,
    Missed, MissedRow, NewAlert, NewRun, Overview, PauseRow, Queued, RUN_DETAIL, Recovered,
    Replacement, Requested, Reset, RunRow, StepState, WatermarkRow, Withdrawn, bucket,
};
pub use statements::{Backend, Fail, Mode, NewDecision, Statements};
