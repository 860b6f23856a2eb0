//! One ledger transaction as its statements reach the server ([`Tx`]): a
//! statement whose answer the transaction reads is sent at once; one whose
//! answer nobody reads (a write that returns nothing) is held back and sent
//! with the next statement, or all together before the `COMMIT`, in one
//! round trip. Either way every statement reaches the server in the order
//! the transaction made it, on the transaction's one connection, so it
//! sees what the ones before it wrote.
//!
//! A read may go further ([`Tx::new`]'s `read_once`): its `COMMIT` goes out
//! right after the statements its body sends before it first waits for an
//! answer ([`Tx::end_read`]), so a read whose statements are all sent at
//! once (one, or several joined) takes one round trip with its `BEGIN`;
//! one that asks for another statement after an answer is refused it,
//! nothing more is sent, and its caller runs it again whole as an ordinary
//! transaction.
//!
//! A statement held back fails the transaction as surely as one sent at
//! once: its failure is what the next answer returns, and the commit
//! returns it instead of committing.
//!
//! A write's `BEGIN` goes out with its first statements, in one round trip,
//! behind a gate ([`Tx::open`]): until the `BEGIN` (and a new connection's
//! check) has answered, only a statement that reads ([`Tx::ask`] of a
//! plain `SELECT`) may go, and only while nothing waits before it. Every
//! other statement, and every one held back, waits for that answer, and is
//! never sent when it failed: a write never runs outside its transaction
//! (a `BEGIN` refused leaves a read run alone, in its own implicit
//! transaction, which writes nothing), nor on a schema that is not this
//! build's.
//!
//! What it must never do: commit a transaction one of whose statements
//! failed, or send a write's `COMMIT` before every statement before it has
//! answered (a writer cut off mid-transaction must leave nothing behind:
//! with its `COMMIT` sent along, a statement waiting on a row lock would
//! commit whenever the lock came free, long after its writer gave up).
//! Once any statement failed, nothing is committed, even when the
//! transaction went on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio_postgres::Client;
use tokio_postgres::types::{ToSql, Type};

use super::fail::Fail;
use crate::ride::{Got, Inside};
use crate::typed::{Owned, Param};

/// A statement held back, with copies of its parameters.
struct Held {
    sql: String,
    values: Vec<(Owned, Type)>,
}

impl Held {
    /// Sends it on `client` (at the first poll); its answer is only whether
    /// it failed.
    async fn send(&self, client: &Client) -> Result<u64, tokio_postgres::Error> {
        let refs: Vec<(&(dyn ToSql + Sync), Type)> = self
            .values
            .iter()
            .map(|(v, t)| (&**v as &(dyn ToSql + Sync), t.clone()))
            .collect();
        client.execute_typed(&self.sql, &refs).await
    }
}

/// A statement on its way.
type Sent<'a> = Pin<Box<dyn Future<Output = Result<u64, tokio_postgres::Error>> + 'a>>;

/// How a commit did not happen.
pub(crate) enum NotCommitted {
    /// Nothing was committed (a statement failed, and the `COMMIT` was not
    /// sent); roll back and report it.
    RolledBack(Option<tokio_postgres::Error>),
    /// The `COMMIT` went out and no answer came back: its fate is unknown.
    Unknown(tokio_postgres::Error),
}

/// A transaction open on `client` (see the module).
pub(crate) struct Tx<'c> {
    client: &'c Client,
    held: Mutex<Vec<Held>>,
    /// Set when any statement failed: the transaction is then not
    /// committed, whatever its caller did with the failure.
    failed: AtomicBool,
    /// A read that sends its `COMMIT` with its first statement.
    read_once: bool,
    /// Set once that `COMMIT` was sent.
    committed: AtomicBool,
    /// Set when such a read asked for a second statement, which was not
    /// sent: its caller must run it again as an ordinary transaction.
    overran: AtomicBool,
    /// Whether the transaction's `BEGIN` has answered (see the module).
    gate: Gate,
    /// A held lease's statement carried inside this write
    /// ([`Tx::carry`]), and its answer once sent.
    inside: Mutex<Option<Carried>>,
}

/// A rider carried inside a write, and what it returned once sent.
struct Carried {
    rider: Inside,
    rode: Option<Got>,
}

/// A write's gate: shut until its `BEGIN` has answered, then open, or
/// failed for good.
struct Gate {
    state: AtomicU8,
    changed: tokio::sync::Notify,
    /// Statements waiting at the gate: a read made after one waits too, so
    /// that nothing overtakes a statement made before it.
    waiting: AtomicUsize,
}

const SHUT: u8 = 0;
const OPEN: u8 = 1;
const FAILED: u8 = 2;

impl Gate {
    /// Waits until the gate is open; an error once it failed.
    async fn pass(&self) -> Result<(), Fail> {
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _waiting = Waiting(&self.waiting);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.state.load(Ordering::SeqCst) {
                OPEN => return Ok(()),
                FAILED => return Err(Fail::Aborted),
                _ => changed.await,
            }
        }
    }
}

impl<'c> Tx<'c> {
    /// The transaction open on `client` (its `BEGIN` sent, or on its way).
    /// With `read_once`, a read whose `COMMIT` goes out with its first
    /// statements ([`Tx::end_read`]), in the same round trip; a statement
    /// asked for once that `COMMIT` went out is refused ([`Fail::Again`],
    /// [`Tx::overran`]), and the read must be run again whole. With
    /// `gated`, a write whose statements wait for [`Tx::open`] (see the
    /// module).
    pub(crate) fn new(client: &'c Client, read_once: bool, gated: bool) -> Self {
        Self {
            client,
            held: Mutex::new(Vec::new()),
            inside: Mutex::new(None),
            failed: AtomicBool::new(false),
            read_once,
            committed: AtomicBool::new(false),
            overran: AtomicBool::new(false),
            gate: Gate {
                state: AtomicU8::new(if gated { SHUT } else { OPEN }),
                changed: tokio::sync::Notify::new(),
                waiting: AtomicUsize::new(0),
            },
        }
    }

    /// Carries `rider` (a held lease's statement: `crate::ride`) inside
    /// this write: it is sent with the first statements that go once the
    /// gate is open (or with those held back for the commit), in their
    /// round trip, and fails the transaction as they do; it is answered
    /// once the `COMMIT`'s fate is known ([`Tx::commit_riding`]).
    pub(crate) fn carry(&self, rider: Option<Inside>) {
        *lock(&self.inside) = rider.map(|rider| Carried { rider, rode: None });
    }

    /// The carried rider, when it has not been sent yet; put back with
    /// [`Tx::rode`].
    fn unsent(&self) -> Option<Carried> {
        let mut inside = lock(&self.inside);
        if inside.as_ref().is_some_and(|c| c.rode.is_none()) {
            inside.take()
        } else {
            None
        }
    }

    /// Puts back the rider `carried`, sent, with what it returned: its
    /// error, when it failed (the transaction is then aborted).
    fn rode(&self, mut carried: Carried, got: Got) -> Result<(), tokio_postgres::Error> {
        let out = match got {
            Ok(row) => {
                carried.rode = Some(Ok(row));
                Ok(())
            }
            Err(e) => Err(e),
        };
        if out.is_ok() {
            *lock(&self.inside) = Some(carried);
        } else {
            // OK to ignore: a holder that stopped waiting does without.
            let _ = carried.rider.reply.send(None);
        }
        out
    }

    /// Opens the gate once the `BEGIN` (and the check) answered, `begun`
    /// saying whether they succeeded: the statements waiting at it are then
    /// sent, or, when they did not, fail unsent.
    pub(crate) fn open(&self, begun: bool) {
        let state = if begun { OPEN } else { FAILED };
        self.gate.state.store(state, Ordering::SeqCst);
        self.gate.changed.notify_waiters();
    }

    /// [`Tx::answer`] for a statement of `sql`: a plain `SELECT`, which
    /// writes nothing, goes at once, before a write's `BEGIN` has answered,
    /// when no statement waits before it; any other waits for that answer.
    pub(crate) async fn ask<T>(
        &self,
        sql: &str,
        statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Fail> {
        let first = self.gate.state.load(Ordering::SeqCst) == SHUT
            && self.gate.waiting.load(Ordering::SeqCst) == 0
            && self.lock().is_empty();
        if first && only_reads(sql) {
            self.send(statement).await
        } else {
            self.answer(statement).await
        }
    }

    /// Whether a read sent whole asked for a statement after its `COMMIT`
    /// (see [`Tx::new`]): what it returned is then to be thrown away.
    pub(crate) fn overran(&self) -> bool {
        self.overran.load(Ordering::SeqCst)
    }

    /// Holds back `sql` with `params` (copied), to be sent with the next
    /// statement or the commit.
    pub(crate) fn hold(&self, sql: &str, params: &[&dyn Param]) {
        let values = params.iter().map(|p| (p.owned(), p.ty())).collect();
        self.lock().push(Held {
            sql: sql.to_owned(),
            values,
        });
    }

    /// Once a write's gate is open, sends the statements held back, then
    /// `statement` (made on this transaction's client), in one round trip,
    /// and returns its answer; when a statement held back failed, its
    /// failure instead, and when the gate failed, [`Fail::Aborted`] with
    /// nothing sent. In a read
    /// sent whole, a statement asked for once its `COMMIT` went out is
    /// never sent ([`Fail::Again`]).
    pub(crate) async fn answer<T>(
        &self,
        statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Fail> {
        if let Err(e) = self.gate.pass().await {
            self.failed.store(true, Ordering::SeqCst);
            return Err(e);
        }
        self.send(statement).await
    }

    /// Sends the statements held back, then `statement`, not waiting at the
    /// gate (the caller passed it, or may go before it).
    async fn send<T>(
        &self,
        statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Fail> {
        if self.committed.load(Ordering::SeqCst) {
            self.overran.store(true, Ordering::SeqCst);
            return Err(Fail::Again);
        }
        let held = self.take();
        // A carried rider goes with the first statements sent once the
        // gate is open, after those held back.
        let carried = if self.gate.state.load(Ordering::SeqCst) == OPEN {
            self.unsent()
        } else {
            None
        };
        let mut held = Sending::new(&held, self.client);
        let riding = async {
            match &carried {
                Some(c) => Some(c.rider.statement.opt(self.client).await),
                None => None,
            }
        };
        let ((), rode, answer) = tokio::join!(biased; &mut held, riding, statement);
        let rode = match (carried, rode) {
            (Some(c), Some(got)) => self.rode(c, got),
            _ => Ok(()),
        };
        let out = match (held.failure.take(), rode) {
            (Some(e), _) | (None, Err(e)) => Err(e),
            (None, Ok(())) => answer,
        };
        if out.is_err() {
            self.failed.store(true, Ordering::SeqCst);
        }
        out.map_err(Fail::Pg)
    }

    /// In a read sent whole ([`Tx::new`]'s `read_once`), sends its
    /// `COMMIT` and waits for its answer; otherwise does nothing. Polled
    /// first right after the body's first poll, so the `COMMIT` follows the
    /// statements the body sent before it first waited, in the same round
    /// trip, and closes the read to any later one.
    pub(crate) async fn end_read(&self) -> Result<(), tokio_postgres::Error> {
        if !self.read_once {
            return Ok(());
        }
        self.committed.store(true, Ordering::SeqCst);
        self.client.batch_execute("COMMIT").await
    }

    /// The client the transaction is open on, to make the statements given
    /// to [`Tx::answer`] (never to send one past it: it would overtake the
    /// statements held back).
    pub(crate) fn client(&self) -> &'c Client {
        self.client
    }

    /// Sends the statements held back, in one round trip, and once every
    /// one has answered, the `COMMIT`. The `COMMIT` never goes out with
    /// them: a transaction whose connection is cut off before they answer
    /// is then never committed (the server ends it once it sits idle).
    #[cfg(test)]
    pub(crate) async fn commit(&self) -> Result<(), NotCommitted> {
        self.commit_riding(async {}).await
    }

    /// Sends the statements held back and then the `COMMIT`, as `commit`
    /// (the tests') does, answering the rider carried inside it
    /// ([`Tx::carry`]; sent now with the statements held back when nothing
    /// went after the gate opened) once the `COMMIT`'s fate is known
    /// (`None` unless it committed), and with `behind` (a held lease's
    /// rider: `crate::ride`) polled right after the `COMMIT` was sent, so
    /// that what it sends follows the `COMMIT` in its round trip; `behind`
    /// is never run when the `COMMIT` was not sent.
    pub(crate) async fn commit_riding(
        &self,
        behind: impl Future<Output = ()>,
    ) -> Result<(), NotCommitted> {
        let answer = |committed: bool| {
            if let Some(c) = lock(&self.inside).take() {
                // OK to ignore: a holder that stopped waiting does without.
                let _ = c.rider.reply.send(c.rode.filter(|_| committed));
            }
        };
        if self.failed.load(Ordering::SeqCst) {
            answer(false);
            return Err(NotCommitted::RolledBack(None));
        }
        if self.committed.load(Ordering::SeqCst) {
            // A read sent whole, committed with its statements.
            answer(false);
            return Ok(());
        }
        if self.gate.pass().await.is_err() {
            answer(false);
            return Err(NotCommitted::RolledBack(None));
        }
        let held = self.take();
        let carried = self.unsent();
        let mut sending = Sending::new(&held, self.client);
        let riding = async {
            match &carried {
                Some(c) => Some(c.rider.statement.opt(self.client).await),
                None => None,
            }
        };
        let ((), rode) = tokio::join!(biased; &mut sending, riding);
        let rode = match (carried, rode) {
            (Some(c), Some(got)) => self.rode(c, got),
            _ => Ok(()),
        };
        if let Some(e) = sending.failure.take() {
            answer(false);
            return Err(NotCommitted::RolledBack(Some(e)));
        }
        if let Err(e) = rode {
            answer(false);
            return Err(NotCommitted::RolledBack(Some(e)));
        }
        let (committed, ()) = tokio::join!(biased; self.client.batch_execute("COMMIT"), behind);
        match committed {
            Ok(()) => {
                answer(true);
                Ok(())
            }
            Err(e) => {
                answer(false);
                Err(NotCommitted::Unknown(e))
            }
        }
    }

    fn take(&self) -> Vec<Held> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Held>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Whether `sql` only reads: a plain `SELECT` (the ledger's statements
/// call no function that writes, and a `SELECT … FOR UPDATE` outside a
/// transaction locks nothing beyond itself).
fn only_reads(sql: &str) -> bool {
    sql.split_whitespace()
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("SELECT"))
}

/// Statements held back, polled in the order they were made until every
/// one has answered; keeps the first failure. Polling it again once over
/// does nothing.
struct Sending<'a> {
    statements: Vec<Option<Sent<'a>>>,
    failure: Option<tokio_postgres::Error>,
}

impl<'a> Sending<'a> {
    fn new(held: &'a [Held], client: &'a Client) -> Self {
        Self {
            statements: held
                .iter()
                .map(|h| Some(Box::pin(h.send(client)) as Sent<'a>))
                .collect(),
            failure: None,
        }
    }
}

impl Future for Sending<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let mut waiting = false;
        for slot in &mut this.statements {
            let Some(statement) = slot else { continue };
            match statement.as_mut().poll(cx) {
                Poll::Ready(out) => {
                    *slot = None;
                    if let Err(e) = out
                        && this.failure.is_none()
                    {
                        this.failure = Some(e);
                    }
                }
                Poll::Pending => waiting = true,
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.

    use super::*;

    const COUNT: &str = "SELECT count(*) FROM t";
    const INSERT: &str = "INSERT INTO t VALUES (1)";

    /// Runs `test` on a connection to the shared test server that has an
    /// empty table `t` of its own (a temporary one).
    fn on_a_connection(test: impl AsyncFnOnce(&Client)) {
        crate::test_server::on_a_connection(async |client| {
            client
                .batch_execute("CREATE TEMP TABLE t (x int)")
                .await
                .unwrap();
            test(client).await;
        });
    }

    async fn count(client: &Client) -> i64 {
        client.query_one(COUNT, &[]).await.unwrap().get(0)
    }

    /// The gate of a write opened once `begin` has answered.
    async fn opening(tx: &Tx<'_>, client: &Client, begin: &str) {
        let begun = client.batch_execute(begin).await;
        tx.open(begun.is_ok());
    }

    #[test]
    fn a_write_whose_begin_failed_sends_its_first_reads_and_no_write() {
        on_a_connection(async |client: &Client| {
            let tx = Tx::new(client, false, true);
            let read = tx.ask(COUNT, client.query_typed_one(COUNT, &[]));
            let write = tx.ask(INSERT, client.execute_typed(INSERT, &[]));
            // A refused begin, as the server would answer one.
            let ((), read, write) =
                tokio::join!(biased; opening(&tx, client, "SELECT 1/0"), read, write);
            assert_eq!(read.unwrap().get::<_, i64>(0), 0, "the read went");
            assert!(matches!(write, Err(Fail::Aborted)), "{write:?}");
            assert!(matches!(
                tx.commit().await,
                Err(NotCommitted::RolledBack(None))
            ));
            assert_eq!(count(client).await, 0, "no write ran outside a transaction");
        });
    }

    #[test]
    fn a_read_after_a_held_write_waits_for_the_begin_with_it() {
        on_a_connection(async |client: &Client| {
            let tx = Tx::new(client, false, true);
            tx.hold(INSERT, &[]);
            let read = tx.ask(COUNT, client.query_typed_one(COUNT, &[]));
            let ((), read) = tokio::join!(biased; opening(&tx, client, "SELECT 1/0"), read);
            assert!(matches!(read, Err(Fail::Aborted)), "{read:?}");
            assert_eq!(count(client).await, 0, "the held write was never sent");

            // With the begin answered, the held write goes first.
            let tx = Tx::new(client, false, true);
            tx.hold(INSERT, &[]);
            let read = tx.ask(COUNT, client.query_typed_one(COUNT, &[]));
            let ((), read) = tokio::join!(biased; opening(&tx, client, "START TRANSACTION"), read);
            assert_eq!(read.unwrap().get::<_, i64>(0), 1);
            assert!(tx.commit().await.is_ok());
            assert_eq!(count(client).await, 1);
        });
    }

    #[test]
    fn a_read_made_after_a_waiting_write_never_overtakes_it() {
        on_a_connection(async |client: &Client| {
            let tx = Tx::new(client, false, true);
            let write = tx.ask(INSERT, client.execute_typed(INSERT, &[]));
            let read = tx.ask(COUNT, client.query_typed_one(COUNT, &[]));
            let ((), write, read) =
                tokio::join!(biased; opening(&tx, client, "START TRANSACTION"), write, read);
            assert_eq!(write.unwrap(), 1);
            assert_eq!(read.unwrap().get::<_, i64>(0), 1, "the read saw the write");
            assert!(tx.commit().await.is_ok());
        });
    }
}
