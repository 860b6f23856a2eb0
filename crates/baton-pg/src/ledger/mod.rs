//! The scheduler's ledger in PostgreSQL: [`PgLedger`], a second
//! implementation of `baton_store::ledger::Records`, for schedulers on several
//! hosts that share one history.
//!
//! This module owns every statement on the ledger's tables (created by the
//! schema's version 2, the SQLite ledger's tables in the `baton` schema)
//! and the one write lock they are written under (its key is in
//! `crate::write_lock`, which a lease's withdrawal of a claim takes too).
//! Its guarantees are the SQLite ledger's, statement for statement: an
//! occurrence is decided once across every host and process; a decision
//! never goes back behind a job's `last_decided`; no update is lost between
//! writers; every time is the caller's, never a clock read here nor the
//! server's.
//!
//! # Writers are serialised, as SQLite serialises them
//!
//! SQLite has one writer at a time, and the ledger's rules lean on it: a
//! condition read in a write transaction (is the mark still below this
//! range? is an occurrence already waiting?) holds until that transaction
//! commits. Here every write transaction first takes one transaction-scoped
//! advisory lock ([`crate::write_lock::WRITE_LOCK`]), then runs the
//! statements the SQLite transaction runs, in READ COMMITTED: each
//! statement after the lock sees every write committed before it, and no
//! other writer commits until this one ends. Reads take no lock: each is
//! one REPEATABLE READ READ ONLY transaction, so a run and its attempts
//! come from one snapshot.
//!
//! # Synchronous, on a thread of its own
//!
//! Callers are synchronous, and some run inside a tokio runtime where a
//! nested `block_on` panics. So a [`PgLedger`] owns a thread running a
//! current-thread runtime with one connection (`session`), sends each call
//! there over a channel and blocks on the reply, for at most
//! [`crate::Options::deadline`] and a little more. A connection that timed
//! out or closed is dropped (the server rolls back what it held open) and
//! the next call connects again.
//!
//! Map: `pg_ledger` is the caller's side and the store's `Backend` (every
//! `Records` call is a transaction written once in `baton-store`),
//! `session` the thread's, `tx` how a transaction's statements are sent,
//! `fail` how a call fails, `rows` the conversions
//! between stored and API values and each table's row, and `statements`
//! the `Statements` the transactions are made of, table by table, each with
//! its SQL, as in `baton_ledger`.
//!
//! What it never does: write outside a transaction that holds the write
//! lock; hold a transaction across anything but its own statements; read a
//! clock; decide whether a run may start (that is the lease's work); or
//! touch the lease tables.

mod fail;
mod pg_ledger;
mod rows;
mod session;
mod statements;
mod tx;

pub use fail::LedgerError;
pub use pg_ledger::PgLedger;
