//! The ledger's thread: a current-thread tokio runtime, one connection, and
//! the transaction every call runs in. The only place the ledger's
//! transactions begin and end, and the only place the write lock is taken.
//!
//! A call is a task sent by the caller's side ([`super::pg_ledger`]); the
//! thread runs the tasks one after another, so the connection is never
//! shared. Each call is bounded by [`Options::deadline`], connecting
//! included: on a timeout, or when the connection closed, the connection is
//! dropped (the server rolls back a transaction left open) and the next
//! call connects again, checking the schema's version as it does.

use std::sync::mpsc::Receiver;

use tokio_postgres::{Client, Config, IsolationLevel, Transaction};

use super::fail::Fail;
use crate::options::Options;
use crate::pool;

/// The key of the transaction-scoped advisory lock every write transaction
/// of the ledger takes first (`baton-lg` in ASCII; the migrations take
/// `baton-mg`). Holding it is what SQLite's write lock is to the SQLite
/// ledger: one writer at a time, across every host.
pub(crate) const WRITE_LOCK: i64 = 0x6261_746f_6e2d_6c67;

/// Whether a call writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One REPEATABLE READ READ ONLY transaction, no lock.
    Read,
    /// One READ COMMITTED transaction that first takes [`WRITE_LOCK`].
    Write,
}

/// A call, as the thread runs it.
pub(crate) type Task = Box<dyn FnOnce(&mut Session) + Send>;

/// The thread's state: its runtime, where the store is, and the connection
/// when there is one.
pub(crate) struct Session {
    rt: tokio::runtime::Runtime,
    config: Config,
    options: Options,
    client: Option<Client>,
}

impl Session {
    /// A session with no connection yet.
    pub(crate) fn new(config: Config, options: Options) -> std::io::Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        Ok(Self {
            rt,
            config,
            options,
            client: None,
        })
    }

    /// Connects (checking the schema's version) within the deadline.
    pub(crate) fn connect(&mut self) -> Result<(), crate::Error> {
        let Self {
            rt,
            config,
            options,
            client,
        } = self;
        let deadline = options.deadline;
        let connected = rt.block_on(async {
            tokio::time::timeout(deadline, pool::connect_checked(config, options)).await
        });
        match connected {
            Ok(Ok(c)) => {
                *client = Some(c);
                Ok(())
            }
            Ok(Err(e)) => Err(e),
            Err(_) => Err(crate::Error::Timeout {
                what: "open the ledger",
                deadline,
            }),
        }
    }

    /// Runs `op` in one transaction of `mode`, within the deadline, and
    /// commits it. An error, or a timeout, leaves nothing written (the
    /// transaction rolls back), except a timeout during the commit itself,
    /// whose fate the next read tells.
    ///
    /// A connection kept from an earlier call may have been ended since (a
    /// server restart, an idle timeout, an administrator): when its `BEGIN`
    /// fails, nothing was written, so the call is tried once more on a new
    /// connection.
    pub(crate) fn run<T>(
        &mut self,
        mode: Mode,
        op: impl AsyncFnOnce(&Transaction<'_>) -> Result<T, Fail>,
    ) -> Result<T, Fail> {
        let Self {
            rt,
            config,
            options,
            client,
        } = self;
        let deadline = options.deadline;
        let mut op = Some(op);
        let out = rt.block_on(async {
            let call = async {
                match attempt(client, config, options, mode, &mut op).await {
                    Ok(value) => Ok(value),
                    Err(Attempt::Failed(fail)) => Err(fail),
                    Err(Attempt::Stale(_)) => {
                        *client = None;
                        attempt(client, config, options, mode, &mut op)
                            .await
                            .map_err(Attempt::into_fail)
                    }
                }
            };
            tokio::time::timeout(deadline, call)
                .await
                .unwrap_or(Err(Fail::Timeout(deadline)))
        });
        if matches!(out, Err(Fail::Timeout(_))) || client.as_ref().is_some_and(Client::is_closed) {
            *client = None;
        }
        out
    }
}

/// How one attempt at a call failed.
enum Attempt {
    /// The `BEGIN` on a connection kept from an earlier call failed:
    /// nothing was written, and a new connection may succeed.
    Stale(Fail),
    /// Anything else.
    Failed(Fail),
}

impl Attempt {
    fn into_fail(self) -> Fail {
        match self {
            Attempt::Stale(fail) | Attempt::Failed(fail) => fail,
        }
    }
}

/// One attempt at a call: connects when there is no connection, begins,
/// takes the write lock for a write, runs `op` (taken from its slot only
/// once the transaction has begun) and commits.
async fn attempt<T, F>(
    client: &mut Option<Client>,
    config: &Config,
    options: &Options,
    mode: Mode,
    op: &mut Option<F>,
) -> Result<T, Attempt>
where
    F: AsyncFnOnce(&Transaction<'_>) -> Result<T, Fail>,
{
    let failed = |e: tokio_postgres::Error| Attempt::Failed(Fail::Pg(e));
    let fresh = client.as_ref().is_none_or(Client::is_closed);
    if fresh {
        *client = None;
        let c = pool::connect_checked(config, options)
            .await
            .map_err(|e| Attempt::Failed(Fail::Connect(e)))?;
        *client = Some(c);
    }
    let Some(c) = client.as_mut() else {
        // OK because the connection was set just above; this only names
        // the impossible case.
        return Err(Attempt::Failed(Fail::Stopped));
    };
    let began = match mode {
        Mode::Read => {
            c.build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await
        }
        Mode::Write => c.transaction().await,
    };
    let tx = match began {
        Ok(tx) => tx,
        Err(e) if !fresh => return Err(Attempt::Stale(Fail::Pg(e))),
        Err(e) => return Err(failed(e)),
    };
    if mode == Mode::Write {
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await
            .map_err(failed)?;
    }
    let Some(op) = op.take() else {
        // OK because an attempt that took the operation returns its
        // outcome, never a retry; this only names the impossible case.
        return Err(Attempt::Failed(Fail::Stopped));
    };
    let value = op(&tx).await.map_err(Attempt::Failed)?;
    tx.commit().await.map_err(failed)?;
    Ok(value)
}

/// Runs the tasks sent to `inbox`, in order, until every sender is gone.
pub(crate) fn serve(mut session: Session, inbox: Receiver<Task>) {
    while let Ok(task) = inbox.recv() {
        task(&mut session);
    }
}
