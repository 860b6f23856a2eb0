//! The ledger's write lock: the key of the advisory lock that every write
//! transaction of the ledger takes first (`ledger/session.rs`), and that a
//! lease's withdrawal of a claim takes too ([`crate::Leases::withdraw`]),
//! so that a start the ledger records meanwhile is seen. It is kept apart
//! from both, so that the lease need not reach into the ledger for it.
//!
//! This module holds the key and nothing else: it never takes the lock.
//! Whoever takes it holds it for one transaction
//! (`pg_advisory_xact_lock`), never across anything but that
//! transaction's own statements.

/// The key of the transaction-scoped advisory lock every write transaction
/// of the ledger takes first (`baton-lg` in ASCII; the migrations take
/// `baton-mg`). Holding it is what SQLite's write lock is to the SQLite
/// ledger: one writer at a time, across every host.
pub(crate) const WRITE_LOCK: i64 = 0x6261_746f_6e2d_6c67;
