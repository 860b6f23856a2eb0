//! A small pool of connections: the only place that opens a connection to
//! the store, and the only place that writes a transaction's server-side
//! bounds (`bounds_sql`, which the ledger's and the migrations'
//! transactions send too).
//!
//! Nothing here relies on state a connection keeps between transactions,
//! so the store works behind a pooler in transaction mode (PgBouncer's
//! `pool_mode = transaction`), where each transaction may run on another
//! server connection: no startup `options`, no `SET`, no named statement
//! ([`crate::typed`]). The statement timeout and the idle-in-transaction
//! timeout are set with `SET LOCAL` by every transaction's `BEGIN`
//! ([`Conn::begin`]), sent in the same round trip as its first statement,
//! and a statement that runs alone is wrapped in such a transaction
//! ([`Conn::alone`]), also in one round trip. Every connection asks the
//! kernel to notice a server that vanished within the deadline
//! ([`Keepalive`]), not after its default two hours.
//!
//! A slot is lent to one operation at a time, so a transaction never shares
//! its connection. A connection that timed out or closed is dropped, never
//! reused (a transaction may still be open on it; dropping it makes the
//! server roll that back), and the next operation that needs the slot
//! connects again. Reconnection does not back off here: the caller decides
//! when to try again.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Connection, Row, Socket};

use crate::error::Error;
use crate::keepalive::Keepalive;
use crate::options::Options;
use crate::target::Target;
use crate::tls::{Connector, Stream};
use crate::typed::{Param, typed};

/// One open connection, and the `BEGIN` its transactions start with.
pub(crate) struct Conn {
    pub(crate) client: Client,
    /// `BEGIN` and the `SET LOCAL`s of the pool's bounds ([`bounds_sql`]).
    begin: String,
}

impl Conn {
    /// Begins a transaction with the pool's server-side bounds. Its answer
    /// may be awaited together with the transaction's first statement
    /// (`tokio::join!`): both are then sent in one round trip.
    pub(crate) async fn begin(&self) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute(&self.begin).await
    }

    /// Commits the transaction open on this connection.
    pub(crate) async fn commit(&self) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute("COMMIT").await
    }

    /// Rolls back the transaction open on this connection, if any.
    pub(crate) async fn rollback(&self) -> Result<(), tokio_postgres::Error> {
        self.client.batch_execute("ROLLBACK").await
    }

    /// Runs `sql` (at most one row) in the transaction open on this
    /// connection, or on its own without the pool's bounds when none is.
    pub(crate) async fn opt(
        &self,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        self.client.query_typed_opt(sql, &typed(params)).await
    }

    /// Runs `sql` (no rows) in the transaction open on this connection;
    /// returns how many rows it changed.
    pub(crate) async fn execute(
        &self,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<u64, tokio_postgres::Error> {
        self.client.execute_typed(sql, &typed(params)).await
    }

    /// Runs `sql` (at most one row) in a transaction of its own with the
    /// pool's bounds: `BEGIN`, the statement and `COMMIT`, sent together,
    /// one round trip. When the statement fails, the `COMMIT` rolls back,
    /// and its error is returned.
    pub(crate) async fn alone(
        &self,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let params = typed(params);
        let (begun, row, committed) = tokio::join!(
            self.begin(),
            self.client.query_typed_opt(sql, &params),
            self.commit()
        );
        begun?;
        let row = row?;
        committed?;
        Ok(row)
    }
}

/// Up to [`Options::pool_size`] connections.
pub(crate) struct Pool {
    target: Target,
    options: Options,
    begin: String,
    slots: Vec<Mutex<Option<Conn>>>,
    next: AtomicUsize,
}

impl Pool {
    pub(crate) fn new(target: &Target, options: Options) -> Self {
        let target = settings(target, &options);
        let slots = (0..options.pool_size.max(1))
            .map(|_| Mutex::new(None))
            .collect();
        Self {
            target,
            begin: format!("BEGIN; {}", bounds_sql(&options, options.statement_timeout)),
            options,
            slots,
            next: AtomicUsize::new(0),
        }
    }

    pub(crate) fn options(&self) -> &Options {
        &self.options
    }

    /// Host, port, database and user, for messages (never the password).
    pub(crate) fn target(&self) -> String {
        self.target.describe()
    }

    /// Runs `f` on a connection, within the deadline (plus, when every
    /// connection is in use, up to one more deadline waiting for one). On a
    /// timeout or a closed connection the connection is dropped.
    pub(crate) async fn with<T>(
        &self,
        what: &'static str,
        f: impl AsyncFnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let deadline = self.options.deadline;
        // Waiting for a connection that others use has a deadline of its own:
        // a call returns within twice the deadline whatever the others do.
        let mut slot = tokio::time::timeout(deadline, self.slot())
            .await
            .map_err(|_| Error::Timeout { what, deadline })?;
        let run = async {
            if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
                *slot = None;
                *slot = Some(self.connect().await?);
            }
            // OK because the slot was filled just above.
            let conn = slot.as_mut().expect("a connection in the slot");
            f(conn).await
        };
        let out = match tokio::time::timeout(deadline, run).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout { what, deadline }),
        };
        if matches!(out, Err(Error::Timeout { .. }))
            || slot.as_ref().is_some_and(|c| c.client.is_closed())
        {
            *slot = None;
        }
        out
    }

    /// A free slot if there is one, else the next one in turn.
    async fn slot(&self) -> MutexGuard<'_, Option<Conn>> {
        for s in &self.slots {
            if let Ok(g) = s.try_lock() {
                return g;
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        self.slots[i].lock().await
    }

    async fn connect(&self) -> Result<Conn, Error> {
        let (client, connection) = connect(&self.target).await?;
        // The connection task ends when the client is dropped or the socket
        // closes; its error then reaches the client as a closed connection.
        tokio::spawn(connection);
        // Every new connection checks the schema first: its statements name
        // the tables of this build's version, and nothing else is used.
        crate::schema::check(&client, &self.target()).await?;
        Ok(Conn {
            client,
            begin: self.begin.clone(),
        })
    }
}

/// How long a ledger's connection may sit idle inside a transaction before
/// the server ends it (at most the statement timeout). Every ledger write
/// holds the one write lock every host's writes wait for, so a writer cut
/// off between two statements (a dead host, a frozen network) stalls every
/// other host's ledger for this long, not for the statement timeout.
/// A ledger transaction's statements follow one another without waiting on
/// anything but the server.
pub(crate) const LEDGER_IDLE_IN_TRANSACTION: Duration = Duration::from_secs(1);

/// The bounds the server enforces in the transaction open when they are
/// sent, and in it only: the statement timeout, and the idle-in-transaction
/// timeout `idle`. `SET LOCAL` ends with the transaction, so no later
/// transaction on the same server connection (another client's, behind a
/// pooler) inherits it.
pub(crate) fn bounds_sql(options: &Options, idle: Duration) -> String {
    let ms = options.statement_timeout.as_millis().max(1);
    let idle = idle.as_millis().max(1);
    format!(
        "SET LOCAL statement_timeout = {ms}; \
         SET LOCAL idle_in_transaction_session_timeout = {idle}"
    )
}

/// `target` with the settings of every connection: the connect timeout,
/// TCP keepalives and user timeout ([`Keepalive`]), and baton's application
/// name. Nothing the server would keep for the session.
fn settings(target: &Target, options: &Options) -> Target {
    let mut target = target.clone();
    let k = Keepalive::within(options.deadline);
    target
        .config
        .connect_timeout(options.connect_timeout)
        .keepalives(true)
        .keepalives_idle(k.idle)
        .keepalives_interval(k.interval)
        .keepalives_retries(k.retries)
        .tcp_user_timeout(k.user_timeout)
        .application_name("baton");
    target
}

/// Opens the one connection of a PostgreSQL ledger ([`crate::PgLedger`]),
/// with the pool's settings, without checking anything yet: the ledger
/// checks the schema's version and that the server takes writes
/// ([`crate::schema::check`]) in its first round trip, sent with the first
/// call's statements (`ledger/session.rs`). The ledger's transactions set
/// their own bounds (a shorter idle-in-transaction timeout,
/// [`LEDGER_IDLE_IN_TRANSACTION`]). The connection's task runs on the
/// caller's runtime; aborting it closes the socket at once. Also says
/// whether the connection is encrypted.
pub(crate) async fn connect_ledger(
    target: &Target,
    options: &Options,
) -> Result<(Client, JoinHandle<()>, bool), Error> {
    let target = settings(target, options);
    let connector = connector(&target)?;
    let encrypted = connector.encrypted();
    let (client, connection) = within(options.deadline, connect_with(&target, connector)).await?;
    // Its error reaches the client as a closed connection.
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok((client, task, encrypted.load(Ordering::Relaxed)))
}

/// Opens one connection with the pool's settings (for migrations and an
/// examination); says whether it is encrypted.
pub(crate) async fn connect_once(
    target: &Target,
    options: &Options,
) -> Result<(Client, bool), Error> {
    let target = settings(target, options);
    let connector = connector(&target)?;
    let encrypted = connector.encrypted();
    let (client, connection) = within(options.deadline, connect_with(&target, connector)).await?;
    tokio::spawn(connection);
    Ok((client, encrypted.load(Ordering::Relaxed)))
}

/// `connecting`, or a timeout once `deadline` has passed: the connect
/// timeout bounds the TCP connection only, and a server that accepts and
/// never answers would hold the start-up forever.
async fn within<T>(
    deadline: Duration,
    connecting: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    tokio::time::timeout(deadline, connecting)
        .await
        .map_err(|_| Error::Timeout {
            what: "connect to the store",
            deadline,
        })?
}

/// Connects to `target`, TLS as its URL says: the only call that opens a
/// connection.
async fn connect(target: &Target) -> Result<(Client, Connection<Socket, Stream>), Error> {
    connect_with(target, connector(target)?).await
}

/// Tries each of the target's configurations in turn ([`Target::configs`]:
/// one, or one per host when their passwords differ) until one connects;
/// the last failure when none does, as the driver says it of its hosts.
async fn connect_with(
    target: &Target,
    connector: Connector,
) -> Result<(Client, Connection<Socket, Stream>), Error> {
    let mut failed = None;
    for config in target.configs() {
        match config.connect(connector.clone()).await {
            Ok(made) => return Ok(made),
            Err(source) => failed = Some(source),
        }
    }
    // OK because a target has at least one configuration.
    let source = failed.expect("a configuration to connect with");
    Err(Error::Connect {
        target: target.describe(),
        source,
    })
}

/// The TLS side of a connection to `target`, its certificate files read
/// now.
fn connector(target: &Target) -> Result<Connector, Error> {
    target.tls.connector().map_err(|source| Error::Tls {
        target: target.describe(),
        source: Box::new(source),
    })
}
