//! A PostgreSQL lease held by a run, driven synchronously: what a
//! `baton_runner::Session` supervises when a job's lock lives in the store.
//!
//! This module owns the holder's connection. A [`PgHeld`] renews, names the
//! job's group, restates and releases through a store of its own, run by a
//! current-thread runtime on a thread of its own: on a connection of the
//! store it was acquired through when one is idle at that instant (never
//! waiting for it), else on one connection of its own, made once and kept; a call goes over a channel
//! and the caller waits for the answer for at most [`Options::deadline`], so
//! it can be made from any thread, inside another runtime or not, and never
//! hangs on a stuck server or a dropped network.
//!
//! A call keeps trying until its deadline: an attempt that fails (no
//! connection, a connection that failed, no answer) is tried again on a
//! fresh connection after a backoff (100 ms, doubling, within the call),
//! each attempt bounded by a third of the deadline (at least 100 ms), so a
//! store that answers again while a renewal is being made keeps the run,
//! whether its outage refused connections, reset them or dropped their
//! bytes. Only calls that are safe to repeat are repeated once a statement
//! may have reached the store (renewing, naming the job's group); a
//! restate or a release is repeated only when it never got a connection,
//! and its one attempt may take the whole deadline. A call that fails at its deadline is a failed renewal to the
//! session, which, once none has succeeded for a whole TTL by its boot
//! clock, stops the job. At most one connection attempt is in flight: the
//! thread serves one call at a time, and gives up on a call whose caller
//! has stopped waiting.
//!
//! What it never does: stop a job, renew on its own, or decide that the lease
//! is lost without the store saying the row no longer carries its token.
//! Dropping it does not release the lease (the row lapses after its TTL and
//! the takeover grace, or when a judge on this host finds the holder dead).

use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::time::Duration;

use baton_lease::{Clock, Once, SystemClock};
use baton_store::{Held, HeldError};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::error::Error;
use crate::holder::HolderFacts;
use crate::leases::Leases;
use crate::options::Options;
use crate::outcome::{PgLease, Release, Renewal, Restated};
use crate::pool::Pool;
use crate::ride::{Behind, Got, Inside, Statement};
use crate::statements::ST;
use crate::target::Target;
use crate::typed::Param;

/// The first wait, within a call, after a failed attempt before the store
/// is tried again; it doubles after each failure of the same call.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The shortest bound of one attempt of a call that may be repeated.
const SHORTEST_ATTEMPT: Duration = Duration::from_millis(100);

/// A lease in the PostgreSQL store, held by this process and driven through
/// a connection of its own. Build it with [`PgHeld::start`] right after the
/// acquisition; hand it to the session as a `Box<dyn baton_store::Held>`.
///
/// Dropping it stops its thread (once the call in progress, if any, is
/// over) and does not release the lease.
pub struct PgHeld {
    lease: PgLease,
    ttl: Duration,
    deadline: Duration,
    host: String,
    describe: String,
    calls: UnboundedSender<Call>,
    clock: SystemClock,
    /// The pool of the store the lease was acquired through, where the
    /// ledger's writes carry this holder's riders (`crate::ride`).
    lender: Arc<Pool>,
    /// The release foreseen behind the run's end ([`Held::foresee_release`]).
    release_foreseen: Option<Foreseen<(Got, Option<Got>)>>,
    /// The job's group foreseen inside the next write
    /// ([`Held::foresee_group`]), and its process group.
    group_foreseen: Option<(u32, Foreseen<Option<Got>>)>,
}

/// A rider's answer channel, and its answer once read.
struct Foreseen<T> {
    answer: Receiver<T>,
    got: Option<T>,
}

impl<T> Foreseen<T> {
    fn new(answer: Receiver<T>) -> Self {
        Self { answer, got: None }
    }

    /// The answer, waiting at most `wait` for it; `None` when the rider
    /// was never sent (taken back, or dropped with a write that did not
    /// commit) or did not answer in time.
    fn read(&mut self, wait: Duration) -> Option<&T> {
        if self.got.is_none() {
            self.got = self.answer.recv_timeout(wait).ok();
        }
        self.got.as_ref()
    }
}

impl std::fmt::Debug for PgHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgHeld")
            .field("lease", &self.describe)
            .field("fence", &self.lease.fence())
            .finish_non_exhaustive()
    }
}

impl PgHeld {
    /// Takes over `lease`, acquired through `store` for `holder` with `ttl`:
    /// starts the thread that will connect to the same store (its target
    /// and options, one connection) at the first call.
    ///
    /// # Errors
    ///
    /// [`Error::Stopped`] when the runtime or the thread cannot be started;
    /// the lease is then still held, and lapses unless released through
    /// `store`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), baton_pg::Error> {
    /// use std::time::Duration;
    /// use baton_pg::{Acquire, HolderFacts, Leases, Options, PgHeld};
    ///
    /// let store = Leases::open("postgres://baton@db/baton", Options::default()).await?;
    /// let me = HolderFacts::here();
    /// let ttl = Duration::from_secs(30);
    /// if let Acquire::Acquired(lease) = store.acquire("nightly", &me, ttl, None).await? {
    ///     let held: Box<dyn baton_store::Held> = Box::new(PgHeld::start(&store, lease, &me, ttl)?);
    ///     // Session::start(held, …)
    /// }
    /// # Ok(()) }
    /// ```
    pub fn start(
        store: &Leases,
        lease: PgLease,
        holder: &HolderFacts,
        ttl: Duration,
    ) -> Result<Self, Error> {
        Self::start_with(store, lease, holder, ttl, *store.options())
    }

    /// As [`PgHeld::start`], with the holder's connection on `options`
    /// rather than the store's (a holder usually needs a shorter deadline
    /// for its renewals than an acquisition may take).
    ///
    /// # Errors
    ///
    /// As [`PgHeld::start`].
    pub fn start_with(
        store: &Leases,
        lease: PgLease,
        holder: &HolderFacts,
        ttl: Duration,
        options: Options,
    ) -> Result<Self, Error> {
        const WHAT: &str = "start the lease's connection thread";
        let options = Options {
            pool_size: 1,
            ..options
        };
        let target = store.target().clone();
        let describe = format!("lock {} in {}", lease.name(), target.describe());
        let runtime = crate::runtime::current_thread()
            .build()
            .map_err(|_| Error::Stopped { what: WHAT })?;
        let (calls, rx) = tokio::sync::mpsc::unbounded_channel();
        let worker = Worker {
            target,
            options,
            lease: lease.clone(),
            store: None,
            lender: Arc::clone(&store.pool),
            clock: SystemClock,
        };
        std::thread::Builder::new()
            .name("baton-pg-held".into())
            .spawn(move || {
                // The session reads the stop signals from its own thread;
                // this one must never take them.
                baton_store::held::quiet_thread();
                runtime.block_on(worker.serve(rx));
                // Never wait for a lookup of the store's host still under way.
                runtime.shutdown_background();
            })
            .map_err(|_| Error::Stopped { what: WHAT })?;
        Ok(Self {
            lease,
            ttl,
            deadline: options.deadline,
            host: holder.host.clone(),
            describe,
            calls,
            clock: SystemClock,
            lender: Arc::clone(&store.pool),
            release_foreseen: None,
            group_foreseen: None,
        })
    }

    /// The lease as the store granted it.
    pub fn lease(&self) -> &PgLease {
        &self.lease
    }

    /// Sends `op` to the connection's thread and waits for its answer, at
    /// most the deadline.
    fn call(&self, op: Op) -> Result<Answer, Error> {
        let what = op.what();
        let deadline = self.deadline;
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        let due = self.clock.boot() + deadline;
        self.calls
            .send(Call { op, due, reply })
            .map_err(|_| Error::Stopped { what })?;
        match answer.recv_timeout(deadline) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => Err(Error::Timeout { what, deadline }),
            Err(RecvTimeoutError::Disconnected) => Err(Error::Stopped { what }),
        }
    }

    fn lost(&self) -> String {
        format!(
            "lease lost on {}: its row no longer carries this holder's token",
            self.describe
        )
    }
}

impl Held for PgHeld {
    fn ttl(&self) -> Duration {
        self.ttl
    }

    fn renew_wait(&self) -> Duration {
        self.deadline
    }

    fn fence(&self) -> u64 {
        self.lease.fence().get()
    }

    fn token(&self) -> String {
        self.lease.token().to_string()
    }

    fn host(&self) -> &str {
        &self.host
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    /// The group is named by the statement that [`Held::set_job_group`]
    /// sends, seated inside the next write (the run's start), so that it is
    /// named in that write's round trip.
    fn foresee_group(&mut self, pgid: u32, _leader: baton_lease::Leader) {
        let token = self.lease.token().to_string();
        let name: &str = &self.lease.name;
        let (pgid_col, jstart) = crate::leases::job_group(pgid);
        let boot = crate::leases::millis(self.clock.boot());
        let params: [&dyn Param; 5] = [&name, &token, &pgid_col, &jstart, &boot];
        let statement = Statement::new(ST.set_job_group, &params);
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.lender.seats.seat_inside(Inside { statement, reply });
        self.group_foreseen = Some((pgid, Foreseen::new(answer)));
    }

    /// The row has no column for what leads the group, so `leader` is not
    /// kept: a judge of this store counts the group's members whatever leads
    /// it (fail closed), as it did before the lock file's `jinit=`.
    fn set_job_group(
        &mut self,
        pgid: u32,
        _leader: baton_lease::Leader,
    ) -> Result<baton_store::Renewal, HeldError> {
        if let Some((foreseen, mut answer)) = self.group_foreseen.take()
            && foreseen == pgid
        {
            // Taken back when no write carried it; answered before that
            // write returned when one did.
            self.lender.seats.unseat_inside();
            match answer.read(self.deadline) {
                Some(Some(Ok(Some(_)))) => return Ok(baton_store::Renewal::Renewed),
                // Committed, and no row carried this holder's token.
                Some(Some(Ok(None))) => return Ok(baton_store::Renewal::Lost(self.lost())),
                // Not sent, rolled back, or its fate unknown: recorded
                // now, as without it.
                _ => {}
            }
        }
        let answer = self.call(Op::JobGroup(pgid)).map_err(HeldError::new)?;
        Ok(self.renewal(answer))
    }

    fn renew(&mut self) -> Result<baton_store::Renewal, HeldError> {
        let answer = self.call(Op::Renew).map_err(HeldError::new)?;
        if matches!(answer, Answer::Renewal(Renewal::Lost)) && self.freed_behind_the_end() {
            // The row lost its token to this holder's own release, behind
            // the run's recorded end: nothing runs under it any more, and
            // the session's release answers from it.
            return Ok(baton_store::Renewal::Renewed);
        }
        Ok(self.renewal(answer))
    }

    fn restate(
        &mut self,
        run: Option<String>,
        // The row keeps no occurrence of its own: the claim records it.
        _occ: Option<String>,
        once: Option<&Once>,
    ) -> Result<baton_store::Restated, HeldError> {
        let op = Op::Restate {
            run,
            once: once.cloned(),
        };
        match self.call(op).map_err(HeldError::new)? {
            Answer::Restated(Restated::Done(_)) => Ok(baton_store::Restated::Done),
            Answer::Restated(Restated::Claimed { occurrence, .. }) => {
                Ok(baton_store::Restated::Claimed { at: occurrence })
            }
            Answer::Restated(Restated::Lost)
            | Answer::Renewal(_)
            | Answer::Release(..)
            | Answer::Withdrawn(_) => Ok(baton_store::Restated::Lost(self.lost())),
        }
    }

    fn withdraw(&mut self, once: &Once) -> Result<Option<baton_store::Renewal>, HeldError> {
        // A claim the store could not take back stays: the next process that
        // meets it without a recorded start records its occurrence missed
        // (`ledger-unavailable`).
        match self
            .call(Op::Withdraw(once.clone()))
            .map_err(HeldError::new)?
        {
            Answer::Withdrawn(taken) => Ok(taken.map(|_| baton_store::Renewal::Renewed)),
            answer => Ok(Some(self.renewal(answer))),
        }
    }

    fn release(self: Box<Self>) -> Result<baton_store::Release, HeldError> {
        self.release_peeking(&[]).map(|(released, _)| released)
    }

    fn foresee_release(&mut self, run: &str, jobs: &[String]) {
        let token = self.lease.token().to_string();
        let names: Vec<&str> = jobs.iter().map(String::as_str).collect();
        let names: &[&str] = &names;
        let name: &str = &self.lease.name;
        let first = Statement::new(ST.release_if_ended, &[&name, &token, &run, &names]);
        let then = (!jobs.is_empty()).then(|| Statement::new(ST.queued, &[&names, &name, &token]));
        let (reply, answer) = std::sync::mpsc::sync_channel(1);
        self.lender.seats.seat_behind(Behind { first, then, reply });
        self.release_foreseen = Some(Foreseen::new(answer));
    }

    fn release_peeking(
        mut self: Box<Self>,
        jobs: &[String],
    ) -> Result<(baton_store::Release, Option<bool>), HeldError> {
        if self.freed_behind_the_end() {
            let queued = self
                .release_foreseen
                .as_mut()
                .and_then(|f| f.got.as_ref())
                .and_then(|(_, then)| then.as_ref())
                .and_then(|then| then.as_ref().ok())
                .and_then(|row| row.as_ref())
                .and_then(|row| row.try_get::<_, Option<bool>>(0).ok().flatten());
            return Ok((baton_store::Release::Released, queued));
        }
        Ok(match self.call(Op::Release(jobs.to_vec())) {
            Ok(Answer::Release(Release::Released(_), queued)) => {
                (baton_store::Release::Released, queued)
            }
            Ok(_) => (baton_store::Release::Lost(self.lost()), None),
            // The row lapses by itself: after its TTL and the takeover grace,
            // or as soon as a judge on this host finds this process gone.
            Err(e) => (baton_store::Release::Unconfirmed(e.to_string()), None),
        })
    }
}

impl PgHeld {
    /// Whether the release foreseen behind the run's end freed the lease
    /// (`crate::ride`). A rider not sent yet is taken back first, so that
    /// it is never sent after this holder stopped counting on it.
    fn freed_behind_the_end(&mut self) -> bool {
        let Some(foreseen) = self.release_foreseen.as_mut() else {
            return false;
        };
        if foreseen.got.is_none() {
            self.lender.seats.unseat_behind();
        }
        // A rider taken by a write answers before that write returns; one
        // taken back answers at once (its channel is gone).
        matches!(foreseen.read(self.deadline), Some((Ok(Some(_)), _)))
    }

    fn renewal(&self, answer: Answer) -> baton_store::Renewal {
        match answer {
            Answer::Renewal(Renewal::Renewed(_)) => baton_store::Renewal::Renewed,
            Answer::Renewal(Renewal::Lost)
            | Answer::Restated(_)
            | Answer::Release(..)
            | Answer::Withdrawn(_) => baton_store::Renewal::Lost(self.lost()),
        }
    }
}

/// What the connection's thread is asked to do.
enum Op {
    JobGroup(u32),
    Renew,
    Restate {
        run: Option<String>,
        once: Option<Once>,
    },
    /// Release, then say whether any of these jobs has an occurrence
    /// queued ([`Leases::release_peeking`]).
    Release(Vec<String>),
    /// Take back a claim of a run that never started ([`Leases::withdraw`]).
    Withdraw(Once),
}

impl Op {
    /// Whether doing it twice comes to the same as doing it once: a
    /// renewal, or naming the job's group, whose answer was lost may be
    /// sent again; a restate (its claim) or a release may not. Taking a
    /// claim back twice comes to once: the second finds it gone.
    fn repeatable(&self) -> bool {
        matches!(self, Op::JobGroup(_) | Op::Renew | Op::Withdraw(_))
    }

    fn what(&self) -> &'static str {
        match self {
            Op::JobGroup(_) => "record the job's process group",
            Op::Renew => "renew a lease",
            Op::Restate { .. } => "restate a lease",
            Op::Release(_) => "release a lease",
            Op::Withdraw(_) => "take back a claim",
        }
    }
}

/// The store's answer to an [`Op`].
enum Answer {
    Renewal(Renewal),
    Restated(Restated),
    Release(Release, Option<bool>),
    /// Whether the claim was taken back ([`Leases::withdraw`]).
    Withdrawn(Option<Renewal>),
}

/// One call: the operation, when its caller stops waiting (boot clock), and
/// where the answer goes.
struct Call {
    op: Op,
    due: Duration,
    reply: SyncSender<Result<Answer, Error>>,
}

/// The connection's side: one store of one connection, opened at the first
/// call and again after a failed attempt.
struct Worker {
    target: Target,
    options: Options,
    lease: PgLease,
    store: Option<Leases>,
    /// The pool of the store the lease was acquired through, whose idle
    /// connection a call uses rather than make one of its own.
    lender: Arc<Pool>,
    clock: SystemClock,
}

impl Worker {
    async fn serve(mut self, mut calls: UnboundedReceiver<Call>) {
        while let Some(call) = calls.recv().await {
            let left = call.due.saturating_sub(self.clock.boot());
            if left.is_zero() {
                // Its caller stopped waiting; doing it now would only delay
                // the calls behind it.
                continue;
            }
            let what = call.op.what();
            let out = match tokio::time::timeout(left, self.answer(&call.op, call.due)).await {
                Ok(out) => out,
                Err(_) => {
                    // An attempt cut short leaves the connection in an
                    // unknown state: drop it.
                    self.store = None;
                    Err(Error::Timeout {
                        what,
                        deadline: self.options.deadline,
                    })
                }
            };
            // OK to ignore: the caller stopped waiting.
            let _ = call.reply.send(out);
        }
    }

    /// Tries `op` until it is answered or `due` (boot clock) would pass
    /// before the next attempt.
    async fn answer(&mut self, op: &Op, due: Duration) -> Result<Answer, Error> {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let left = due.saturating_sub(self.clock.boot());
            let short = (self.options.deadline / 3).max(SHORTEST_ATTEMPT);
            // The last attempt that fits takes what is left.
            let bound = if op.repeatable() && short + backoff + SHORTEST_ATTEMPT <= left {
                short
            } else {
                left
            };
            let attempt = tokio::time::timeout(bound, self.attempt(op)).await;
            let (failed, sent) = match attempt {
                Ok(Ok(answer)) => return Ok(answer),
                Ok(Err(failed)) => failed,
                Err(_) => (
                    Error::Timeout {
                        what: op.what(),
                        deadline: bound,
                    },
                    true,
                ),
            };
            // The connection is of no more use once an attempt failed on it.
            self.store = None;
            let repeatable = !sent || op.repeatable();
            let retry_at = self.clock.boot() + backoff;
            if !repeatable || retry_at >= due {
                return Err(failed);
            }
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
    }

    /// One attempt: a connection when there is none, then the statement. A
    /// failure says whether the statement may have been sent.
    async fn attempt(&mut self, op: &Op) -> Result<Answer, (Error, bool)> {
        let store = match &self.store {
            Some(store) => store,
            None => {
                let lender = Arc::clone(&self.lender);
                let opened = Leases::open_borrowing(&self.target, self.options, lender)
                    .await
                    .map_err(|e| (e, false))?;
                self.store.insert(opened)
            }
        };
        let lease = &self.lease;
        let answer = match op {
            Op::JobGroup(pgid) => store.set_job_group(lease, *pgid).await.map(Answer::Renewal),
            Op::Renew => store.renew(lease).await.map(Answer::Renewal),
            Op::Restate { run, once } => store
                .restate(lease, run.as_deref(), once.as_ref())
                .await
                .map(Answer::Restated),
            Op::Release(jobs) => store
                .release_peeking(lease, jobs)
                .await
                .map(|(released, queued)| Answer::Release(released, queued)),
            Op::Withdraw(once) => store.withdraw(lease, once).await.map(Answer::Withdrawn),
        };
        // A connection that could not be made again sent nothing.
        answer.map_err(|e| {
            let sent = !matches!(e, Error::Connect { .. } | Error::NoHost { .. });
            (e, sent)
        })
    }
}
