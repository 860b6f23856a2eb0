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
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use tokio_postgres::Client;
use tokio_postgres::types::{ToSql, Type};

use super::fail::Fail;
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
}

impl<'c> Tx<'c> {
    /// The transaction open on `client` (its `BEGIN` already sent). With
    /// `read_once`, a read whose `COMMIT` goes out with its first
    /// statements ([`Tx::end_read`]), in the same round trip; a statement
    /// asked for once that `COMMIT` went out is refused ([`Fail::Again`],
    /// [`Tx::overran`]), and the read must be run again whole.
    pub(crate) fn new(client: &'c Client, read_once: bool) -> Self {
        Self {
            client,
            held: Mutex::new(Vec::new()),
            failed: AtomicBool::new(false),
            read_once,
            committed: AtomicBool::new(false),
            overran: AtomicBool::new(false),
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

    /// Sends the statements held back, then `statement` (made on this
    /// transaction's client), in one round trip, and returns its answer;
    /// when a statement held back failed, its failure instead. In a read
    /// sent whole, a statement asked for once its `COMMIT` went out is
    /// never sent ([`Fail::Again`]).
    pub(crate) async fn answer<T>(
        &self,
        statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<T, Fail> {
        if self.committed.load(Ordering::SeqCst) {
            self.overran.store(true, Ordering::SeqCst);
            return Err(Fail::Again);
        }
        let held = self.take();
        let mut held = Sending::new(&held, self.client);
        let ((), answer) = tokio::join!(biased; &mut held, statement);
        let out = match held.failure.take() {
            Some(e) => Err(e),
            None => answer,
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
    pub(crate) async fn commit(&self) -> Result<(), NotCommitted> {
        if self.failed.load(Ordering::SeqCst) {
            return Err(NotCommitted::RolledBack(None));
        }
        if self.committed.load(Ordering::SeqCst) {
            // A read sent whole, committed with its statements.
            return Ok(());
        }
        let held = self.take();
        let mut sending = Sending::new(&held, self.client);
        (&mut sending).await;
        if let Some(e) = sending.failure.take() {
            return Err(NotCommitted::RolledBack(Some(e)));
        }
        self.client
            .batch_execute("COMMIT")
            .await
            .map_err(NotCommitted::Unknown)
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
