//! The ledger's thread: a current-thread tokio runtime, the pool its one
//! connection is kept in, and the transaction every call runs in. The only place the ledger's
//! transactions begin and end, and the only place the write lock is taken.
//!
//! A call is a task sent by the caller's side ([`super::pg_ledger`]); the
//! thread runs the tasks one after another, each holding its pool's slot
//! from its `BEGIN` to its end, so a transaction never shares its
//! connection. The pool is the ledger's own, or that of the store value
//! that opened it, whose lease calls use the same connection between the
//! ledger's. Each call is bounded by [`Options::deadline`], waiting for the
//! slot and connecting included: on a timeout, or when the connection closed, the connection is
//! closed at once (the server rolls back a transaction left open, and with
//! it releases the write lock) and the next call connects again. A new
//! connection's schema version and writability ([`crate::schema::check`])
//! are read in its first call's first round trip: a read's statements go
//! with them, and are thrown away when the check fails; a write's reads go
//! with them too, and its other statements wait for the check's answer.
//!
//! Nothing is left for later: a transaction that
//! fails is rolled back before the call returns (never by a `Drop` that
//! would only queue the `ROLLBACK`, leaving the write lock held until the
//! next call), and a connection given up is closed by aborting its task and
//! waiting for it, not merely dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::Receiver;

use tokio_postgres::Client;
use tokio_postgres::types::Type;

use super::fail::Fail;
use super::tx::{NotCommitted, Tx};
use crate::options::Options;
use crate::pool::{self, Conn, Pool};
use crate::target::Target;
use crate::write_lock::WRITE_LOCK;

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

/// The thread's state: its runtime, where the store is, and the pool its
/// connection is kept in (its own, or the one a store value shares).
pub(crate) struct Session {
    /// `None` only while dropping.
    rt: Option<tokio::runtime::Runtime>,
    target: Target,
    options: Options,
    pool: Arc<Pool>,
    /// Whether the last connection made was encrypted, for the caller's
    /// side ([`Link`]).
    link: Arc<AtomicU8>,
}

/// What the caller's side knows of the session's connection: none made
/// yet, one in plain text, or one encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Link {
    None = 0,
    Plain = 1,
    Encrypted = 2,
}

impl Link {
    /// A connection made, encrypted or not.
    fn of(encrypted: bool) -> Link {
        if encrypted {
            Link::Encrypted
        } else {
            Link::Plain
        }
    }

    /// What the session's atomic says: whether the last connection made
    /// was encrypted, `None` before one was made.
    pub(crate) fn encrypted(from: &AtomicU8) -> Option<bool> {
        match from.load(Ordering::Relaxed) {
            x if x == Link::Plain as u8 => Some(false),
            x if x == Link::Encrypted as u8 => Some(true),
            _ => None,
        }
    }
}

impl Session {
    /// A session with no connection yet; `link` says, once one is made,
    /// whether the last one was encrypted.
    ///
    /// With `shared`, its connection is taken from that pool for each call
    /// (a store value's, whose lease calls use it between the ledger's);
    /// else it keeps one of its own, driven only while a call runs.
    pub(crate) fn new(
        target: Target,
        options: Options,
        link: Arc<AtomicU8>,
        shared: Option<Arc<Pool>>,
    ) -> std::io::Result<Self> {
        let rt = crate::runtime::current_thread().build()?;
        let pool = shared.unwrap_or_else(|| {
            Arc::new(Pool::new(
                &target,
                Options {
                    pool_size: 1,
                    ..options
                },
            ))
        });
        Ok(Self {
            rt: Some(rt),
            target,
            options,
            pool,
            link,
        })
    }

    /// Connects within the deadline; with `check`, also checks the
    /// schema's version and that the server takes writes, else leaves that
    /// to the first call's first round trip.
    pub(crate) fn connect(&mut self, check: bool) -> Result<(), crate::Error> {
        const WHAT: &str = "open the ledger";
        let deadline = self.options.deadline;
        let Some(rt) = &self.rt else {
            return Err(crate::Error::Stopped { what: WHAT });
        };
        let (target, pool) = (&self.target, &self.pool);
        let connecting = async {
            let mut slot = pool.slot().await;
            if slot.as_ref().is_none_or(|c| c.client.is_closed()) {
                if let Some(gone) = slot.take() {
                    gone.close().await;
                }
                *slot = Some(pool.connect().await?);
            }
            // OK because the slot was filled just above.
            let live = slot.as_ref().expect("a connection in the slot");
            let encrypted = live.encrypted;
            if check && !live.checked.load(Ordering::Relaxed) {
                if let Err(e) = crate::schema::check(&live.client, &target.describe()).await {
                    if let Some(unusable) = slot.take() {
                        unusable.close().await;
                    }
                    return Err(e);
                }
                live.checked.store(true, Ordering::Relaxed);
            }
            Ok(encrypted)
        };
        let encrypted = rt
            .block_on(async { tokio::time::timeout(deadline, connecting).await })
            .map_err(|_| crate::Error::Timeout {
                what: WHAT,
                deadline,
            })??;
        self.link
            .store(Link::of(encrypted) as u8, Ordering::Relaxed);
        Ok(())
    }

    /// Runs `op` in one transaction of `mode`, within the deadline, and
    /// commits it. An error, or a timeout, leaves nothing written (the
    /// transaction rolls back), except a timeout during the commit itself,
    /// whose fate the next read tells.
    ///
    /// A connection kept from an earlier call may have been ended since (a
    /// server restart, an idle timeout, an administrator): when its `BEGIN`
    /// fails, nothing was written, so the call is tried once more on a new
    /// connection. A read's `BEGIN` goes out with its statements, so `op`
    /// may have run once already then: it is run again (it only read).
    ///
    /// With `bound`, the call's deadline (and its statements' timeout) is
    /// no longer than that ([`Options::within`]).
    pub(crate) fn run<T>(
        &mut self,
        mode: Mode,
        bound: Option<std::time::Duration>,
        op: impl for<'t> AsyncFn(&'t Tx<'t>) -> Result<T, Fail>,
    ) -> Result<T, Fail> {
        let Self {
            rt,
            target,
            options,
            pool,
            link,
        } = self;
        let narrowed = options.within(bound);
        let options = &narrowed;
        let deadline = options.deadline;
        let Some(rt) = rt else {
            return Err(Fail::Stopped);
        };
        rt.block_on(async {
            // The wait for the connection counts against the deadline.
            let began = tokio::time::Instant::now();
            let Ok(mut slot) = tokio::time::timeout(deadline, pool.slot()).await else {
                return Err(Fail::Timeout(deadline));
            };
            let live: &mut Option<Conn> = &mut slot;
            let deadline_left = deadline.saturating_sub(began.elapsed());
            // A read is first sent whole, its `COMMIT` with the statements
            // its body sends at once; one that wants more is run again,
            // waiting for its `COMMIT` (it only read).
            let once = mode == Mode::Read;
            let call = async {
                let first = match attempt(live, pool, target, options, mode, &op, once).await {
                    Err(Attempt::Stale(_)) => {
                        if let Some(stale) = live.take() {
                            stale.close().await;
                        }
                        attempt(live, pool, target, options, mode, &op, once).await
                    }
                    done => done,
                };
                match first {
                    Err(Attempt::Again) => {
                        attempt(live, pool, target, options, mode, &op, false).await
                    }
                    done => done,
                }
            };
            // A connection that timed out may be in the middle of anything;
            // one that closed, or could not end its transaction, is of no
            // more use.
            let (out, broken) = match tokio::time::timeout(deadline_left, call).await {
                Ok(Ok(value)) => (Ok(value), false),
                Ok(Err(Attempt::Stale(fail) | Attempt::Failed(fail))) => (Err(fail), false),
                Ok(Err(Attempt::Broken(fail))) => (Err(fail), true),
                // Only a read sent whole is run again; not this one.
                Ok(Err(Attempt::Again)) => (Err(Fail::Again), false),
                Err(_) => (Err(Fail::Timeout(deadline)), true),
            };
            if let Some(l) = live.as_ref() {
                link.store(Link::of(l.encrypted) as u8, Ordering::Relaxed);
            }
            let give_up = broken || live.as_ref().is_some_and(|l| l.client.is_closed());
            if give_up && let Some(gone) = live.take() {
                gone.close().await;
            }
            out
        })
    }
}

/// How one attempt at a call failed.
enum Attempt {
    /// The `BEGIN` (or the check) on a connection kept from an earlier
    /// call, or made before this one, failed on a connection now closed:
    /// nothing was written, and a new connection may succeed.
    Stale(Fail),
    /// The call failed, and its transaction was rolled back.
    Failed(Fail),
    /// The call failed, and its transaction could not be rolled back, or
    /// the connection proved unusable (a schema not this build's, a server
    /// that takes no writes): the connection must be closed.
    Broken(Fail),
    /// A read sent whole asked for a statement after its `COMMIT`: nothing
    /// more was sent, its transaction is over, and it is to be run again.
    Again,
}

/// A failed check of a connection's schema and writability: stale when the
/// connection was made before this attempt and has closed since (a new one
/// may pass), else the connection is of no use.
fn unusable(e: crate::Error, fresh: bool, client: &Client) -> Attempt {
    if !fresh && client.is_closed() {
        Attempt::Stale(Fail::Connect(e))
    } else {
        Attempt::Broken(Fail::Connect(e))
    }
}

/// One attempt at a call: connects when there is no connection, begins,
/// takes the write lock for a write, runs `op` and commits; on a failure after
/// `BEGIN`, rolls back before it returns.
///
/// A transaction begins in the same round trip as its bounds, its write
/// lock and the statements its body sends at once (and, on a connection not
/// yet checked, the check): the server runs them in the order sent. When
/// the begin or the check failed, what was read is thrown away; nothing was
/// written, because a write's statements other than plain reads wait at
/// its gate for the begin's and the check's answers ([`Tx`]), so that no
/// statement that writes ever runs outside its transaction (and its write
/// lock), nor on a schema that is not this build's.
async fn attempt<T, F>(
    live: &mut Option<Conn>,
    pool: &Pool,
    target: &Target,
    options: &Options,
    mode: Mode,
    op: &F,
    once: bool,
) -> Result<T, Attempt>
where
    F: for<'t> AsyncFn(&'t Tx<'t>) -> Result<T, Fail>,
{
    let fresh = live.as_ref().is_none_or(|l| l.client.is_closed());
    if fresh {
        if let Some(gone) = live.take() {
            gone.close().await;
        }
        let made = pool
            .connect()
            .await
            .map_err(|e| Attempt::Failed(Fail::Connect(e)))?;
        *live = Some(made);
    }
    let Some(conn) = live.as_ref() else {
        // OK because the connection was set just above; this only names
        // the impossible case.
        return Err(Attempt::Failed(Fail::Stopped));
    };
    let Conn {
        client, checked, ..
    } = conn;
    let describe = target.describe();
    let check = async {
        if checked.load(Ordering::Relaxed) {
            Ok(())
        } else {
            crate::schema::check(client, &describe).await
        }
    };
    // The bounds and the write lock go out with the transaction's first
    // statement, in the same round trip: the server runs them in the order
    // sent, so every statement of `op` runs under both, and one that failed
    // aborts the transaction before any of `op`'s runs.
    let idle = options
        .statement_timeout
        .min(pool::LEDGER_IDLE_IN_TRANSACTION);
    let bounds = pool::bounds_sql(options, idle);
    let begin = match mode {
        Mode::Read => format!("{READ_BEGIN}; {bounds}"),
        Mode::Write => format!("{WRITE_BEGIN}; {bounds}"),
    };
    let tx = Tx::new(client, once && mode == Mode::Read, mode == Mode::Write);
    // A held lease's rider inside a write (`crate::ride`).
    if mode == Mode::Write {
        tx.carry(pool.seats.take_inside());
    }
    // The gate of a write's statements opens once the check and the begin
    // have answered (`Tx::open`).
    let opening = async {
        let (passed, bounded) = tokio::join!(biased; check, client.batch_execute(&begin));
        tx.open(passed.is_ok() && bounded.is_ok());
        (passed, bounded)
    };
    let locked = async {
        match mode {
            Mode::Write => client
                .execute_typed(
                    "SELECT pg_advisory_xact_lock($1)",
                    &[(&WRITE_LOCK, Type::INT8)],
                )
                .await
                .map(drop),
            Mode::Read => Ok(()),
        }
    };
    // A read another part of the command foresaw rides behind a read sent
    // whole (`pool::Rider`), after its `COMMIT`, in a transaction of its own
    // with the pool's bounds: what it finds is its reader's, and its error
    // never reaches this call.
    let riders = if mode == Mode::Read && once {
        pool.take_riders()
    } else {
        Vec::new()
    };
    let riding = async {
        // Polled in order, so sent in order, in one round trip (there are
        // at most a few: one of each statement).
        let mut riders = riders.into_iter();
        let (first, second) = (riders.next(), riders.next());
        let ride = async |r: Option<crate::pool::Rider>| {
            if let Some(r) = r {
                r.ride(conn).await;
            }
        };
        tokio::join!(biased; ride(first), ride(second));
        for r in riders {
            r.ride(conn).await;
        }
    };
    // Polled first in the order written, so sent in that order: the check,
    // the begin and its bounds, the write lock, the body's statements, a
    // read's `COMMIT` (`Tx::end_read`) and the read riding behind it.
    let ((passed, bounded), locked, done, ended, ()) = tokio::join!(
        biased;
        opening,
        locked,
        op(&tx),
        tx.end_read(),
        riding
    );
    if let Err(e) = passed {
        return Err(unusable(e, fresh, client));
    }
    checked.store(true, Ordering::Relaxed);
    if !fresh && let Err(e) = bounded {
        // A kept connection that could not begin: nothing was written (a
        // write's statements wait for the begin's answer), and the caller
        // closes it and tries a new one.
        return Err(Attempt::Stale(Fail::Pg(e)));
    }
    if tx.overran() {
        // Its `COMMIT` went out with its first statements and has ended
        // the transaction; nothing after it was sent.
        return Err(Attempt::Again);
    }
    let done = bounded.and(locked).and(ended).map_err(Fail::Pg).and(done);
    // A held lease's rider behind a write's `COMMIT` (`crate::ride`), only
    // once its body succeeded.
    let behind = match (&done, mode) {
        (Ok(_), Mode::Write) => pool.seats.take_behind(),
        _ => None,
    };
    let behind = async {
        if let Some(b) = behind {
            b.ride(conn).await;
        }
    };
    let done = match done {
        Ok(value) => match tx.commit_riding(behind).await {
            Ok(()) => return Ok(value),
            Err(NotCommitted::Unknown(e)) => return Err(Attempt::Broken(Fail::Pg(e))),
            Err(NotCommitted::RolledBack(e)) => Err(e.map_or(Fail::Aborted, Fail::Pg)),
        },
        Err(fail) => Err(fail),
    };
    match done {
        Ok(value) => Ok(value),
        Err(fail) => match client.batch_execute("ROLLBACK").await {
            Ok(()) => Err(Attempt::Failed(fail)),
            Err(_) => Err(Attempt::Broken(fail)),
        },
    }
}

/// How a read transaction begins: one snapshot, and no writes.
const READ_BEGIN: &str = "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";
/// How a write transaction begins (READ COMMITTED, the server's default).
const WRITE_BEGIN: &str = "START TRANSACTION";

/// Runs the tasks sent to `inbox`, in order, until every sender is gone.
/// Dropping the session then drops the runtime, and with it the connection.
pub(crate) fn serve(mut session: Session, inbox: Receiver<Task>) {
    while let Ok(task) = inbox.recv() {
        task(&mut session);
    }
}

impl Drop for Session {
    /// Closes the connection and stops the runtime without waiting for work
    /// it cannot cancel (a lookup of the store's host name still under
    /// way), so a ledger is dropped within its deadline whatever the
    /// network does.
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
