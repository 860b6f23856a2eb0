//! Statements a held lease foresees for the ledger's next write
//! transaction on the same pool, so that they cost no round trip of their
//! own: a statement seated *inside* goes with that write's last
//! statements, before its `COMMIT`, and commits or rolls back with it; one
//! seated *behind* goes right behind the `COMMIT`, in its round trip, in a
//! transaction of its own with the pool's bounds (`crate::pool::Conn`),
//! and only once the `COMMIT` was sent.
//!
//! The lease's holder seats them (`crate::held`), the pool keeps the seats,
//! the ledger's session sends them (`ledger/session.rs`, `ledger/tx.rs`;
//! one behind through [`Behind::ride`], which is the pool's, beside its own
//! riders, so that this module never names a connection), and the answer
//! goes back over a channel. What a rider never does: decide anything by
//! itself. Each statement is written to be right whichever write carries
//! it (naming a job's group, held at its gate, is right at any time before
//! its command runs; a release is conditional on the run's end being
//! recorded, and on nothing being queued), and a holder whose rider was
//! not answered does what it would have done without one.

use std::sync::Mutex;
use std::sync::mpsc::SyncSender;

use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row};

use crate::typed::{Owned, Param};

/// One statement of at most one row, with copies of its parameters.
pub(crate) struct Statement {
    sql: &'static str,
    values: Vec<(Owned, Type)>,
}

impl Statement {
    pub(crate) fn new(sql: &'static str, params: &[&dyn Param]) -> Self {
        Self {
            sql,
            values: params.iter().map(|p| (p.owned(), p.ty())).collect(),
        }
    }

    /// Sends it on `client` (at the first poll), unnamed; its row, if any.
    pub(crate) async fn opt(&self, client: &Client) -> Result<Option<Row>, tokio_postgres::Error> {
        let refs: Vec<(&(dyn ToSql + Sync), Type)> = self
            .values
            .iter()
            .map(|(v, t)| (&**v as &(dyn ToSql + Sync), t.clone()))
            .collect();
        let mut rows = client.query_typed(self.sql, &refs).await?;
        Ok(rows.drain(..).next())
    }
}

/// A statement's answer, as a rider reports it.
pub(crate) type Got = Result<Option<Row>, tokio_postgres::Error>;

/// A statement sent inside the next write, with its last statements,
/// before its `COMMIT`; its failure fails that write as theirs would. Its
/// answer is `Some` only once that `COMMIT` succeeded; `None` when the
/// transaction rolled back or its fate is unknown.
pub(crate) struct Inside {
    pub(crate) statement: Statement,
    pub(crate) reply: SyncSender<Option<Got>>,
}

/// A statement sent right behind the next write's `COMMIT`, and maybe a
/// second behind it, each in a transaction of its own, in that order;
/// their answers.
pub(crate) struct Behind {
    pub(crate) first: Statement,
    pub(crate) then: Option<Statement>,
    pub(crate) reply: SyncSender<(Got, Option<Got>)>,
}

/// Where riders wait for the next write (one of each kind at a time: a
/// newer one takes the seat of an older one, whose holder then reads no
/// answer and does without).
#[derive(Default)]
pub(crate) struct Seats {
    inside: Mutex<Option<Inside>>,
    behind: Mutex<Option<Behind>>,
}

impl Seats {
    pub(crate) fn seat_inside(&self, rider: Inside) {
        *lock(&self.inside) = Some(rider);
    }

    pub(crate) fn seat_behind(&self, rider: Behind) {
        *lock(&self.behind) = Some(rider);
    }

    /// The rider waiting inside, taken by the write that carries it.
    pub(crate) fn take_inside(&self) -> Option<Inside> {
        lock(&self.inside).take()
    }

    /// The rider waiting behind, taken by the write that carries it.
    pub(crate) fn take_behind(&self) -> Option<Behind> {
        lock(&self.behind).take()
    }

    /// Takes back the rider seated inside, if it was not sent: its
    /// holder's answer channel then reports it gone at once.
    pub(crate) fn unseat_inside(&self) {
        drop(lock(&self.inside).take());
    }

    /// As [`Seats::unseat_inside`], for the rider seated behind.
    pub(crate) fn unseat_behind(&self) {
        drop(lock(&self.behind).take());
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
