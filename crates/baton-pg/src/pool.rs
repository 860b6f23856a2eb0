//! A small pool of connections: the only place that opens a connection to
//! the store, and the only place that writes a transaction's server-side
//! bounds (`bounds_sql`, which the ledger's and the migrations'
//! transactions send too).
//!
//! Nothing here relies on state a connection keeps between transactions,
//! so the store works behind a pooler in transaction mode (PgBouncer's
//! `pool_mode = transaction`), where each transaction may run on another
//! server connection: no startup `options`, no `SET`, no named statement
//! ([`crate::typed`]) unless the store's settings say its connections are
//! its own ([`crate::prepared`]). The statement timeout and the
//! idle-in-transaction timeout are set with `SET LOCAL` by every
//! transaction's `BEGIN`
//! ([`Conn::begin`]), sent in the same round trip as its first statement,
//! and a statement that runs alone is wrapped in such a transaction
//! ([`Conn::alone`]), also in one round trip. Every connection asks the
//! kernel to notice a server that vanished within the deadline
//! ([`Keepalive`]), not after its default two hours.
//!
//! A slot is lent to one operation at a time, so a transaction never shares
//! its connection. A connection whose operation failed (timed out, closed,
//! or any other error) is dropped, never reused (a transaction may still be
//! open on it; dropping it makes the server roll that back), and the next
//! operation that needs the slot connects again: an operation always
//! starts outside any transaction. Reconnection does not back off here: the caller decides
//! when to try again.
//!
//! One store value's callers share one pool ([`crate::Postgres`]), its
//! connections driven by a runtime of their own ([`crate::driver`]): the
//! lease calls, the ledger (which takes a slot for each of its
//! transactions, `ledger/session.rs`) and the leases it holds, which
//! borrow an idle connection and never wait for one
//! ([`Pool::borrowing_from`]). A run then opens one connection, not one
//! per caller; a connection is checked once, by whoever uses it first.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, MutexGuard};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, Connection, Row, Socket};

use crate::driver::Driver;
use crate::error::{Error, said};
use crate::keepalive::Keepalive;
use crate::options::Options;
use crate::prepared::Prepared;
use crate::ride::{Behind, Got, Seats, Statement};
use crate::target::Target;
use crate::tls::{Connector, Stream};
use crate::typed::{Param, typed};

/// One open connection, the task that drives its socket, and the `BEGIN`
/// its transactions start with (the bounds of the pool that lent it last).
pub(crate) struct Conn {
    pub(crate) client: Client,
    task: JoinHandle<()>,
    /// `BEGIN` and the `SET LOCAL`s of the bounds ([`bounds_sql`]) of the
    /// pool it was last lent by.
    begin: String,
    /// Whether the schema's version and the server's writability were
    /// checked on it ([`crate::schema::check`]).
    pub(crate) checked: AtomicBool,
    /// The statements prepared on it, when its store prepares them.
    prepared: Prepared,
    /// Whether it is encrypted (TLS).
    pub(crate) encrypted: bool,
}

impl Conn {
    /// Closes the socket now: aborts the connection's task and waits until
    /// it is gone. The server then rolls back whatever was open.
    pub(crate) async fn close(self) {
        let Conn { client, task, .. } = self;
        drop(client);
        task.abort();
        let _ = task.await;
    }

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
        self.prepared.opt(&self.client, sql, params).await
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

    /// As [`Conn::alone`], for a statement whose parameters were copied
    /// (a rider's: `crate::ride`).
    pub(crate) async fn alone_statement(&self, statement: &Statement) -> Got {
        let (begun, row, committed) =
            tokio::join!(self.begin(), statement.opt(&self.client), self.commit());
        begun?;
        let row = row?;
        committed?;
        Ok(row)
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
        let (begun, row, committed) = tokio::join!(
            self.begin(),
            self.prepared.opt(&self.client, sql, params),
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
    /// Where new connections' tasks run: a runtime kept for them when
    /// others may use them, else the caller's.
    driver: Option<Arc<Driver>>,
    /// A pool whose idle connection this one uses, without ever waiting
    /// for it, while it has none of its own.
    lender: Option<Arc<Pool>>,
    /// Reads to send behind the ledger's next read transaction ([`Rider`]).
    riders: std::sync::Mutex<Vec<Rider>>,
    /// Statements a held lease foresees for the ledger's next write
    /// transaction (`crate::ride`).
    pub(crate) seats: Seats,
}

/// A read of one row, foreseen by the store value that owns the pool (a
/// job's guard, read before its run asks for the lease: `crate::store`),
/// sent on the connection of the ledger's next read sent whole, right
/// behind that read's `COMMIT`, in its round trip (`ledger/session.rs`),
/// in a transaction of its own with the pool's bounds ([`Conn::alone`]):
/// as good as a read of its own a moment later, and never inside the
/// ledger's transaction. Its answer, or its error, goes to `reply`; one
/// that never rides is dropped with the pool, and whoever foresaw it reads
/// for itself.
pub(crate) struct Rider {
    /// The statement, of text parameters only.
    pub(crate) sql: &'static str,
    pub(crate) params: Vec<String>,
    pub(crate) reply: tokio::sync::oneshot::Sender<Result<Option<Row>, tokio_postgres::Error>>,
}

impl Rider {
    /// Sends it on `conn` (at the first poll) and answers with what it
    /// returned.
    pub(crate) async fn ride(self, conn: &Conn) {
        let params: Vec<&dyn crate::typed::Param> = self
            .params
            .iter()
            .map(|p| p as &dyn crate::typed::Param)
            .collect();
        let got = conn.alone(self.sql, &params).await;
        // OK to ignore: whoever foresaw it stopped waiting, and reads for
        // itself.
        let _ = self.reply.send(got);
    }
}

impl Behind {
    /// Sends its statements on `conn` (at the first poll, in one round
    /// trip) and answers with what they returned.
    pub(crate) async fn ride(self, conn: &Conn) {
        let then = async {
            match &self.then {
                Some(s) => Some(conn.alone_statement(s).await),
                None => None,
            }
        };
        let (first, then) = tokio::join!(biased; conn.alone_statement(&self.first), then);
        // OK to ignore: a holder that stopped waiting does without.
        let _ = self.reply.send((first, then));
    }
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
            driver: None,
            lender: None,
            riders: std::sync::Mutex::new(Vec::new()),
            seats: Seats::default(),
        }
    }

    /// Sends `rider` behind the ledger's next read transaction on this
    /// pool, in place of one of the same statement that has not ridden yet.
    pub(crate) fn ride(&self, rider: Rider) {
        let mut riders = self
            .riders
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        riders.retain(|r| r.sql != rider.sql);
        riders.push(rider);
    }

    /// The reads waiting to ride, taken by the transaction they ride
    /// behind.
    pub(crate) fn take_riders(&self) -> Vec<Rider> {
        std::mem::take(
            &mut *self
                .riders
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Its connections driven by `driver`, so that callers on other
    /// runtimes may use them (one store value's lease calls, ledger and
    /// held leases: [`crate::Postgres`]).
    pub(crate) fn driven_by(mut self, driver: Arc<Driver>) -> Self {
        self.driver = Some(driver);
        self
    }

    /// While it has no connection of its own, it uses an idle one of
    /// `lender`'s when there is one, never waiting for it (a held lease's
    /// renewal never waits behind another caller's transaction), and only
    /// when `lender` has a driver ([`Pool::driven_by`]).
    pub(crate) fn borrowing_from(mut self, lender: Arc<Pool>) -> Self {
        self.lender = Some(lender);
        self
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
    /// timeout, a closed connection or a failed check of the schema, the
    /// connection is closed; so it is when the call is dropped before its
    /// end. A connection made elsewhere is checked before its first use
    /// here.
    pub(crate) async fn with<T>(
        &self,
        what: &'static str,
        f: impl AsyncFnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        if let Some(lent) = self.borrow() {
            return self.run_on(lent, what, f).await;
        }
        let deadline = self.options.deadline;
        // Waiting for a connection that others use has a deadline of its own:
        // a call returns within twice the deadline whatever the others do.
        let slot = tokio::time::timeout(deadline, self.slot())
            .await
            .map_err(|_| Error::Timeout { what, deadline })?;
        self.run_on(slot, what, f).await
    }

    /// Whether a call now would run on a connection borrowed from the
    /// lender.
    pub(crate) fn would_borrow(&self) -> bool {
        self.borrow().is_some()
    }

    /// The lender's idle, open connection, when this pool has none of its
    /// own (every slot empty and free) and one of the lender's slots is
    /// free and holds one; never waits. Only a lender with a driver lends:
    /// another's connections run only while their caller's runtime does.
    fn borrow(&self) -> Option<MutexGuard<'_, Option<Conn>>> {
        let lender = self.lender.as_ref().filter(|l| l.driver.is_some())?;
        let own = self
            .slots
            .iter()
            .any(|s| s.try_lock().map_or(true, |g| g.is_some()));
        if own {
            return None;
        }
        lender.slots.iter().find_map(|s| {
            s.try_lock()
                .ok()
                .filter(|g| g.as_ref().is_some_and(|c| !c.client.is_closed()))
        })
    }

    /// Runs `f` on the connection in `slot` (made when there is none, or
    /// the one there has closed) with this pool's bounds and deadline.
    async fn run_on<T>(
        &self,
        slot: MutexGuard<'_, Option<Conn>>,
        what: &'static str,
        f: impl AsyncFnOnce(&mut Conn) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let deadline = self.options.deadline;
        let mut lent = Lent { slot, done: false };
        let run = async {
            if lent.slot.as_ref().is_none_or(|c| c.client.is_closed()) {
                if let Some(gone) = lent.slot.take() {
                    gone.close().await;
                }
                *lent.slot = Some(self.connect().await?);
            }
            // OK because the slot was filled just above.
            let conn = lent.slot.as_mut().expect("a connection in the slot");
            conn.begin.clone_from(&self.begin);
            if !conn.checked.load(Ordering::Relaxed) {
                // Its statements name the tables of this build's version,
                // and nothing else is used.
                if let Err(e) = crate::schema::check(&conn.client, &self.target()).await {
                    if let Some(unusable) = lent.slot.take() {
                        unusable.close().await;
                    }
                    return Err(e);
                }
                conn.checked.store(true, Ordering::Relaxed);
            }
            f(conn).await
        };
        let out = match tokio::time::timeout(deadline, run).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout { what, deadline }),
        };
        // A call that failed may have left a transaction open on its
        // connection (a statement that failed inside it, a path that gave
        // up early); the next call may send a statement alone (the
        // conditional grant), which must never run inside it. So a failed
        // call's connection is closed, whatever failed: the server rolls
        // back what was open, and the next call connects afresh.
        if (out.is_err() || lent.slot.as_ref().is_some_and(|c| c.client.is_closed()))
            && let Some(gone) = lent.slot.take()
        {
            gone.close().await;
        }
        lent.done = true;
        out
    }

    /// A free slot if there is one, else the next one in turn.
    pub(crate) async fn slot(&self) -> MutexGuard<'_, Option<Conn>> {
        for s in &self.slots {
            if let Ok(g) = s.try_lock() {
                return g;
            }
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
        self.slots[i].lock().await
    }

    /// A new connection with this pool's settings, nothing checked yet. With
    /// a driver, it is made on the driver's runtime, which its socket is
    /// then registered with and its task runs on; else on the caller's.
    pub(crate) async fn connect(&self) -> Result<Conn, Error> {
        let connector = connector(&self.target)?;
        let encrypted = connector.encrypted();
        let deadline = self.options.deadline;
        let (client, task) = match &self.driver {
            Some(driver) => {
                let (made, client) = tokio::sync::oneshot::channel();
                let target = self.target.clone();
                let task = driver.spawn(async move {
                    match connect_with(&target, connector, deadline).await {
                        Ok((client, connection)) => {
                            // A caller that stopped waiting drops the client,
                            // which ends the connection.
                            let _ = made.send(Ok(client));
                            let _ = connection.await;
                        }
                        Err(e) => {
                            let _ = made.send(Err(e));
                        }
                    }
                });
                let client = within(deadline, async {
                    client.await.unwrap_or(Err(Error::Stopped {
                        what: "connect to the store",
                    }))
                })
                .await;
                match client {
                    Ok(client) => (client, task),
                    Err(e) => {
                        task.abort();
                        return Err(e);
                    }
                }
            }
            None => {
                let (client, connection) =
                    within(deadline, connect_with(&self.target, connector, deadline)).await?;
                // Its error reaches the client as a closed connection.
                let task = tokio::spawn(async move {
                    let _ = connection.await;
                });
                (client, task)
            }
        };
        Ok(Conn {
            client,
            task,
            begin: self.begin.clone(),
            checked: AtomicBool::new(false),
            prepared: Prepared::new(self.target.prepares()),
            encrypted: encrypted.load(Ordering::Relaxed),
        })
    }
}

/// A slot lent to one call: when the call is dropped before its end, its
/// connection may be in the middle of anything, so it is closed.
struct Lent<'a> {
    slot: MutexGuard<'a, Option<Conn>>,
    done: bool,
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Some(cut) = self.slot.take()
        {
            cut.task.abort();
        }
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
    let tcp = target
        .connect_timeout()
        .map_or(options.connect_timeout, |t| t.min(options.connect_timeout));
    target
        .config
        .connect_timeout(tcp)
        .keepalives(true)
        .keepalives_idle(k.idle)
        .keepalives_interval(k.interval)
        .keepalives_retries(k.retries)
        .tcp_user_timeout(k.user_timeout)
        .application_name("baton");
    target
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
    let (client, connection) = within(
        options.deadline,
        connect_with(&target, connector, options.deadline),
    )
    .await?;
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

/// Tries each of the target's hosts in turn ([`Target::attempts`]) until
/// one takes the connection. Each has the URL's `connect_timeout` when it
/// gives one (as libpq's, the whole connection, not its TCP part only);
/// else one host has the whole `deadline` (the caller bounds the call by
/// it), and each of several an even share of what is left of it, so
/// that a host that accepts and never answers (a frozen primary) leaves
/// time for the next. A little of `deadline` is kept back, so the caller's
/// bound never fires before the message saying what each host did.
async fn connect_with(
    target: &Target,
    connector: Connector,
    deadline: Duration,
) -> Result<(Client, Connection<Socket, Stream>), Error> {
    let attempts = target.attempts();
    if let [one] = attempts.as_slice() {
        let connecting = one.config.connect(connector);
        let made = match target.connect_timeout().filter(|&t| t < deadline) {
            Some(bound) => {
                tokio::time::timeout(bound, connecting)
                    .await
                    .map_err(|_| Error::Timeout {
                        what: "connect to the store",
                        deadline: bound,
                    })?
            }
            None => connecting.await,
        };
        return made.map_err(|source| Error::Connect {
            target: target.describe(),
            source,
        });
    }
    let started = tokio::time::Instant::now();
    let budget = deadline.saturating_sub(deadline / 20);
    let mut tried = Vec::new();
    let n = attempts.len();
    for (k, attempt) in attempts.into_iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        let share = left / u32::try_from(n - k).unwrap_or(u32::MAX);
        let bound = target.connect_timeout().map_or(share, |t| t.min(left));
        match tokio::time::timeout(bound, attempt.config.connect(connector.clone())).await {
            Ok(Ok(made)) => return Ok(made),
            Ok(Err(source)) => tried.push(format!("{}: {}", attempt.host, said(&source))),
            Err(_) => tried.push(format!(
                "{}: no answer within {:.1}s",
                attempt.host,
                bound.as_secs_f64()
            )),
        }
    }
    Err(Error::NoHost {
        target: target.describe(),
        tried: tried.join("; "),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that failed with its transaction open leaves nothing open for
    /// the next call on the same slot, which then starts outside any
    /// transaction (it does not see the failed transaction's setting).
    #[test]
    fn a_failed_call_leaves_no_transaction_open_for_the_next() {
        // A database of its own: other unit tests make a `baton` schema of
        // their own in the shared server's `postgres` database.
        let server = baton_testkit::pg::PgServer::shared();
        server.sql("DROP DATABASE IF EXISTS pool_failed_call");
        server.sql("CREATE DATABASE pool_failed_call");
        let url = server.url().replace("/postgres", "/pool_failed_call");
        let rt = crate::runtime::current_thread().build().expect("a runtime");
        rt.block_on(async {
            crate::migrate(&url, Options::default())
                .await
                .expect("the schema");
            let target = Target::from_url(&url).expect("the test server's URL");
            let pool = Pool::new(&target, Options::default());
            let failed: Result<(), Error> = pool
                .with("fail inside a transaction", async |c: &mut Conn| {
                    c.begin().await.expect("BEGIN");
                    c.client
                        .batch_execute("SET LOCAL application_name = 'inside'")
                        .await
                        .expect("SET LOCAL");
                    Err(Error::Corrupt {
                        name: "test".into(),
                        why: "given up inside its transaction".into(),
                    })
                })
                .await;
            assert!(failed.is_err());
            let alone: bool = pool
                .with("look", async |c: &mut Conn| {
                    let row = c
                        .opt(
                            "SELECT current_setting('application_name') <> 'inside'",
                            &[],
                        )
                        .await
                        .expect("the look");
                    Ok(row.expect("a row").get(0))
                })
                .await
                .expect("the next call");
            assert!(
                alone,
                "the next call ran inside the failed call's transaction"
            );
        });
    }
}
