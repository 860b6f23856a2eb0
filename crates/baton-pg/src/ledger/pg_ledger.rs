//! [`PgLedger`], the caller's side: a synchronous handle that sends each
//! call to the ledger's thread ([`super::session`]) and waits for the
//! reply, never longer than the deadline and a margin. It owns the thread:
//! dropping the handle ends it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use baton_store::ledger::{Backend, Mode};
use jiff::Timestamp;

use super::fail::Fail;
use super::session::{self, Session, Task};
use super::statements::Pg;
use super::tx::Tx;
use crate::error::Error;
use crate::kept::Kept;
use crate::options::Options;
use crate::pool::Pool;
use crate::target::Target;

/// How much longer than the deadline the caller waits for the thread's
/// answer: the thread enforces the deadline itself, and this margin only
/// covers handing the reply over.
const MARGIN: Duration = Duration::from_millis(500);

/// The scheduler's ledger in PostgreSQL, shared by every host whose
/// scheduler opens the same store; `baton_store::ledger::Records` is its API.
///
/// It is synchronous, and safe to call from inside a tokio runtime: it owns
/// a thread with a runtime and one connection of its own, and each call is
/// one transaction there. Every call returns within
/// [`Options::deadline`] (plus half a second); a failure is
/// `baton_store::ledger::Error::Store`, naming the store without its password, and
/// a refused argument `baton_store::ledger::Error::Invalid`, with the SQLite
/// ledger's message. Dropping it closes the connection and ends the thread
/// (waiting at most for the call in flight).
///
/// It guarantees what the SQLite ledger guarantees, across hosts: every
/// write transaction holds one advisory lock, so writers take turns as
/// SQLite's do. It does not serialise runs: that is the lease's work.
///
/// # Example
///
/// ```no_run
/// use baton_store::ledger::{Begun, NewRun, Records};
/// use baton_pg::{Options, PgLedger, Target};
///
/// let target = Target::resolve("postgres://baton@db/baton", None, &|_| None)?;
/// let mut ledger = PgLedger::open(&target, Options::default())?;
/// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
/// let run = NewRun {
///     run_id: "9f3c1ab27de40518".into(),
///     job: "nightly".into(),
///     occurrence: Some(now.as_second()),
///     fence: Some(42),
///     host: "ci-1".into(),
///     pid: 4242,
///     started: now,
///     backfill: false,
/// };
/// if ledger.begin_run(&run)? == Begun::Started {
///     // This host decided the occurrence: run it.
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct PgLedger {
    /// `None` only while dropping.
    tasks: Option<Sender<Task>>,
    thread: Option<JoinHandle<()>>,
    store: String,
    deadline: Duration,
    /// The bound set on each call from now on
    /// ([`baton_store::ledger::Records::bound_calls`]).
    bound: Option<Duration>,
    /// Whether the thread's last connection was encrypted.
    link: Arc<AtomicU8>,
    /// The store value whose pool the thread's connection is taken from
    /// ([`PgLedger::open_shared`]); dropped after the thread has ended.
    kept: Option<Arc<Kept>>,
}

impl std::fmt::Debug for PgLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLedger")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

impl PgLedger {
    /// Starts the ledger's thread and connects to `target`, checking that
    /// the schema is exactly this build's version (run [`crate::migrate`]
    /// first).
    ///
    /// # Errors
    ///
    /// [`Error::Connect`], [`Error::SchemaBehind`], [`Error::SchemaTooNew`],
    /// [`Error::Query`], [`Error::Timeout`] (no answer within the
    /// deadline), or [`Error::Thread`] when the thread cannot start.
    pub fn open(target: &Target, options: Options) -> Result<PgLedger, Error> {
        Self::start(target, options, true, None)
    }

    /// As [`PgLedger::open`], but the schema's version and the server's
    /// writability are checked in the first call's first round trip, sent
    /// with its statements, rather than in a round trip of their own: a
    /// schema that is not this build's, or a server that takes no writes,
    /// fails that call (nothing is written: a write waits for the check's
    /// answer) and every call after it, as `open` would have failed.
    ///
    /// # Errors
    ///
    /// [`Error::Connect`], [`Error::Timeout`] (no connection within the
    /// deadline), or [`Error::Thread`] when the thread cannot start.
    pub fn open_deferred(target: &Target, options: Options) -> Result<PgLedger, Error> {
        Self::start(target, options, false, None)
    }

    /// As [`PgLedger::open`] (with `check`) or [`PgLedger::open_deferred`],
    /// its connection taken from `pool` for each call rather than kept
    /// apart: a store value's ([`crate::Postgres`]), whose lease calls and
    /// held leases use the same connection between the ledger's calls.
    /// The store value's connections are kept while the ledger lives, so
    /// a store value made later for the same store may share them.
    pub(crate) fn open_shared(
        target: &Target,
        options: Options,
        check: bool,
        pool: Arc<Pool>,
        keep: Arc<Kept>,
    ) -> Result<PgLedger, Error> {
        let mut ledger = Self::start(target, options, check, Some(pool))?;
        ledger.kept = Some(keep);
        Ok(ledger)
    }

    /// Starts the ledger's thread and connects, checking the schema now or
    /// at the first call.
    fn start(
        target: &Target,
        options: Options,
        check: bool,
        shared: Option<Arc<Pool>>,
    ) -> Result<PgLedger, Error> {
        let session_target = target.clone();
        let link = Arc::new(AtomicU8::new(session::Link::None as u8));
        let session_link = Arc::clone(&link);
        let (tasks, inbox) = mpsc::channel::<Task>();
        let (ready, opened) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("baton-pg-ledger".into())
            .spawn(move || {
                // A run's supervisor reads the stop signals and SIGCHLD
                // from its own thread; this one must never take them.
                baton_store::held::quiet_thread();
                let mut session = match Session::new(session_target, options, session_link, shared)
                {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready.send(Err(Error::Thread(e)));
                        return;
                    }
                };
                let connected = session.connect(check);
                let ok = connected.is_ok();
                // The caller may have stopped waiting; the inbox then ends.
                let _ = ready.send(connected);
                if ok {
                    session::serve(session, inbox);
                }
            })
            .map_err(Error::Thread)?;
        let deadline = options.deadline;
        match opened.recv_timeout(deadline + MARGIN) {
            Ok(Ok(())) => Ok(PgLedger {
                kept: None,
                tasks: Some(tasks),
                thread: Some(thread),
                store: target.describe(),
                deadline,
                bound: None,
                link,
            }),
            Ok(Err(e)) => {
                // The thread has nothing more to do once it has answered.
                let _ = thread.join();
                Err(e)
            }
            // The thread ends on its own once its connection attempt does:
            // the inbox's sender is dropped here.
            Err(_) => Err(Error::Timeout {
                what: "open the ledger",
                deadline,
            }),
        }
    }

    /// The store, for messages: host, port, database and user.
    pub fn store(&self) -> &str {
        &self.store
    }

    /// Runs `op` in one transaction of `mode` on the ledger's thread and
    /// waits for its answer. `action` names the call in an error.
    pub(crate) fn call<T: Send + 'static>(
        &self,
        mode: session::Mode,
        action: String,
        op: impl for<'t> AsyncFn(&'t Tx<'t>) -> Result<T, Fail> + Send + 'static,
    ) -> Result<T, baton_store::ledger::Error> {
        let (reply, answer) = mpsc::sync_channel(1);
        // Set when the caller stops waiting: a call still queued behind a
        // slow one is then never run, so no write lands long after its
        // caller was told that its fate is unknown.
        let abandoned = Arc::new(AtomicBool::new(false));
        let gone = abandoned.clone();
        let bound = self.bound;
        let deadline = bound.map_or(self.deadline, |b| b.min(self.deadline));
        let task: Task = Box::new(move |s: &mut Session| {
            if gone.load(Ordering::SeqCst) {
                return;
            }
            // The caller may have stopped waiting meanwhile: nobody is told.
            let _ = reply.send(s.run(mode, bound, op));
        });
        let sent = self.tasks.as_ref().map(|t| t.send(task));
        if !matches!(sent, Some(Ok(()))) {
            return Err(Fail::Stopped.into_error(action, &self.store));
        }
        let out = match answer.recv_timeout(deadline + MARGIN) {
            Ok(out) => out,
            Err(RecvTimeoutError::Timeout) => {
                abandoned.store(true, Ordering::SeqCst);
                Err(Fail::Timeout(deadline))
            }
            Err(RecvTimeoutError::Disconnected) => Err(Fail::Stopped),
        };
        out.map_err(|fail| fail.into_error(action, &self.store))
    }
}

impl Drop for PgLedger {
    fn drop(&mut self) {
        // Closing the inbox ends the thread after the call in flight, which
        // the deadline bounds.
        drop(self.tasks.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Backend for PgLedger {
    type Error = Fail;
    type Statements<'t> = Pg<'t>;

    fn location(&self) -> String {
        self.store.clone()
    }

    fn transact<T: Send + 'static>(
        &mut self,
        mode: Mode,
        action: &dyn Fn() -> String,
        body: impl for<'t> AsyncFn(&mut Pg<'t>) -> Result<T, baton_store::ledger::Fail<Fail>>
        + Send
        + 'static,
    ) -> Result<T, baton_store::ledger::Error> {
        let mode = match mode {
            Mode::Read => session::Mode::Read,
            Mode::Write => session::Mode::Write,
        };
        self.call(mode, action(), async move |tx: &Tx<'_>| {
            match body(&mut Pg { tx }).await {
                Ok(value) => Ok(value),
                Err(baton_store::ledger::Fail::Store(fail)) => Err(fail),
                Err(baton_store::ledger::Fail::Invalid(problem)) => Err(Fail::Invalid(problem)),
            }
        })
    }

    fn bound_calls(&mut self, within: Option<Duration>) {
        self.bound = within;
    }

    /// Whether the last connection made was encrypted; `None` before one
    /// was made.
    fn encrypted(&self) -> Option<bool> {
        session::Link::encrypted(&self.link)
    }

    /// The server makes every commit durable: nothing to do.
    fn checkpoint(&mut self) -> Result<(), baton_store::ledger::Error> {
        Ok(())
    }

    /// The server's `clock_timestamp()`.
    fn store_clock(&mut self) -> Result<Option<Timestamp>, baton_store::ledger::Error> {
        self.call(
            session::Mode::Read,
            "read the server's clock".into(),
            async |tx: &Tx<'_>| {
                let client = tx.client();
                let row = tx
                    .answer(client.query_typed_one(
                        "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint",
                        &[],
                    ))
                    .await?;
                super::rows::time(&row, 0).map(Some)
            },
        )
    }
}
