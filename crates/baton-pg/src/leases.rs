//! The PostgreSQL lease: acquire, renew, restate, naming the job's group and
//! release, each one transaction on the lock's row, judged with
//! `baton_lease::decide`.
//!
//! This module owns the critical section. An acquisition reads the row under
//! `FOR UPDATE` (or, in the conditional form, takes a free row in one
//! statement), judges it, and grants it with its occurrence claim in the same
//! transaction; renew, restate, naming the job's group and release are one
//! conditional statement each that changes the row only when its token is
//! the caller's. It never holds a
//! transaction open across a judgement's caller code or a job, never stamps a
//! row with the client's clock, and never breaks a holder that `decide` does
//! not call claimable.
//!
//! What it does not do: renew on its own, or stop a job. A holder that cannot
//! renew (the server is unreachable, a statement timed out) must stop its job
//! by its own boot clock before TTL plus grace has passed; every call here
//! returns within [`Options::deadline`] so that it can.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::record::Body;
use baton_lease::{
    Clock, Liveness, Observer, Once, OsLiveness, Policy, SystemClock, Token, Verdict,
};
use jiff::Timestamp;
use tokio_postgres::Row;
use tokio_postgres::error::SqlState;

use crate::error::Error;
use crate::form::Form;
use crate::holder::HolderFacts;
use crate::judge::{self, Judge};
use crate::options::Options;
use crate::outcome::{Acquire, PgLease, Release, Renewal, Restated};
use crate::pool::{Conn, Pool};
use crate::statements::{GRANT_IF_FREE_SEEN, SLOT_NAMES, ST, Statements};
use crate::switch::Switch;
use crate::target::Target;
use crate::typed::Param;

const ACQUIRE: &str = "acquire a lease";

/// How many times the conditional form tries its grant on a row that it
/// finds free after a refusal, before it judges the row under its lock.
const FREE_TRIES: usize = 2;

/// Leases in a PostgreSQL database whose `baton` schema is migrated.
///
/// ```no_run
/// # async fn f() -> Result<(), baton_pg::Error> {
/// use std::time::Duration;
/// use baton_pg::{Acquire, HolderFacts, Leases, Options};
///
/// let leases = Leases::open("postgres://baton@db/baton", Options::default()).await?;
/// match leases.acquire("nightly", &HolderFacts::here(), Duration::from_secs(30), None).await? {
///     Acquire::Acquired(lease) => {
///         println!("running as fence {}", lease.fence());
///         leases.renew(&lease).await?; // every third of the TTL
///         leases.release(&lease).await?;
///     }
///     other => eprintln!("skipped: {other:?}"),
/// }
/// # Ok(()) }
/// ```
///
/// A clone shares the connections of the original (its pool), with its
/// own clock, observer, policy, liveness and form from then on.
#[derive(Clone)]
pub struct Leases {
    pub(crate) pool: Arc<Pool>,
    target: Target,
    clock: Arc<dyn Clock>,
    observer: Observer,
    policy: Policy,
    liveness: Arc<dyn Liveness>,
    form: Form,
}

impl std::fmt::Debug for Leases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Leases")
            .field("store", &self.pool.target())
            .field("form", &self.form)
            .finish_non_exhaustive()
    }
}

impl Leases {
    /// Connects to the store at `url` and checks its schema version.
    ///
    /// # Errors
    ///
    /// [`Error::Url`], [`Error::UrlParam`], [`Error::Connect`], [`Error::Tls`],
    /// [`Error::SchemaBehind`] (run
    /// [`crate::migrate`] first) or [`Error::SchemaTooNew`].
    pub async fn open(url: &str, options: Options) -> Result<Self, Error> {
        Self::open_target(&Target::from_url(url)?, options).await
    }

    /// As [`Leases::open`], to a resolved [`Target`].
    ///
    /// # Errors
    ///
    /// As [`Leases::open`].
    pub async fn open_target(target: &Target, options: Options) -> Result<Self, Error> {
        let pool = Arc::new(Pool::new(target, options));
        // Connecting checks the schema's version.
        pool.with("open the baton schema", async |_: &mut Conn| Ok(()))
            .await?;
        Ok(Self::on_pool(pool, target))
    }

    /// As [`Leases::open_target`], its calls run on an idle connection of
    /// `lender`'s while it has none of its own ([`Pool::borrowing_from`]):
    /// connects now only when none is idle.
    pub(crate) async fn open_borrowing(
        target: &Target,
        options: Options,
        lender: Arc<Pool>,
    ) -> Result<Self, Error> {
        let pool = Arc::new(Pool::new(target, options).borrowing_from(lender));
        if !pool.would_borrow() {
            pool.with("open the baton schema", async |_: &mut Conn| Ok(()))
                .await?;
        }
        Ok(Self::on_pool(pool, target))
    }

    /// Leases on `pool`, nothing connected yet: its first call connects
    /// (or takes a connection another caller made) and checks the schema.
    pub(crate) fn on_pool(pool: Arc<Pool>, target: &Target) -> Self {
        Self {
            pool,
            target: target.clone(),
            clock: Arc::new(SystemClock),
            observer: Observer::here(),
            policy: Policy::default(),
            liveness: Arc::new(OsLiveness),
            form: Form::default(),
        }
    }

    /// Reads the boot clock (for same-host freshness) from `clock`. The wall
    /// clock is never read: every stamp is the server's.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Judges with `policy` (its takeover grace, in particular).
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = policy;
        self
    }

    /// Judges from `observer`'s standpoint instead of this process's.
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = observer;
        self
    }

    /// Asks `liveness` about same-host holders.
    pub fn with_liveness(mut self, liveness: Arc<dyn Liveness>) -> Self {
        self.liveness = liveness;
        self
    }

    /// Acquires in `form`.
    pub fn with_form(mut self, form: Form) -> Self {
        self.form = form;
        self
    }

    /// The row, if any, that the statement `pick` returns for `params`, run
    /// in a transaction of its own on a pooled connection; `what` names the
    /// call in its errors.
    async fn row(
        &self,
        what: &'static str,
        pick: fn(&Statements) -> &str,
        params: &[&dyn Param],
    ) -> Result<Option<Row>, Error> {
        self.pool
            .with(what, async |c: &mut Conn| {
                c.alone(pick(&ST), params)
                    .await
                    .map_err(|source| Error::Query { what, source })
            })
            .await
    }

    /// Tries to take lock `name` for `holder` with `ttl`, and, when `claim`
    /// names a job's occurrence, claims it in the same transaction: the
    /// lease is granted only with the claim, and an occurrence is claimed at
    /// most once, across every host and process.
    ///
    /// A grant whose answer was lost (the statement reached the server and
    /// committed, then the connection failed or the deadline passed) is not
    /// left standing for nobody: the row is read again on a fresh
    /// connection, and a row that carries this acquisition's token is the
    /// lease granted ([`Acquire::Acquired`], with its claim).
    ///
    /// Nothing is granted for the TTL plus takeover grace after the store's
    /// server changed (a promoted standby, a restore: [`Acquire::Switched`]);
    /// a live holder is still told [`Acquire::Busy`].
    ///
    /// # Errors
    ///
    /// When the store cannot answer ([`Error::Query`], [`Error::Timeout`],
    /// [`Error::Connect`]) or the row cannot be read ([`Error::Corrupt`]).
    /// Then nothing was granted, or (when the second look could not be made
    /// either) a grant was made whose token nobody holds (it lapses after
    /// TTL plus grace): either way, do not run.
    pub async fn acquire(
        &self,
        name: &str,
        holder: &HolderFacts,
        ttl: Duration,
        claim: Option<&Once>,
    ) -> Result<Acquire, Error> {
        Ok(self
            .acquire_guarding(name, holder, ttl, claim, None)
            .await?
            .0)
    }

    /// As [`Leases::acquire`], for a caller that takes `guard`'s (a job's)
    /// guard on this lock next ([`Leases::take_guard`]): behind the first
    /// conditional grant, on the same connection, the guard is taken as
    /// that call's first transaction would take it, for the row only while
    /// it carries this acquisition's token (so nothing when the grant was
    /// refused). `true` with the lease when the guard now names this lock
    /// and the lease's fence: the caller's take may then be skipped.
    /// `false` whenever that is not known (a guard naming another lock, a
    /// server held back, a grant made another way or whose answer was
    /// lost): the caller takes the guard itself.
    ///
    /// # Errors
    ///
    /// As [`Leases::acquire`].
    pub async fn acquire_guarding(
        &self,
        name: &str,
        holder: &HolderFacts,
        ttl: Duration,
        claim: Option<&Once>,
        guard: Option<&str>,
    ) -> Result<(Acquire, bool), Error> {
        let token = Token::fresh().map_err(Error::Random)?;
        let grant = Grant::new(name, token, holder, ttl, claim, self.clock.boot())
            .held_back_for(self.policy.takeover_grace);
        // How long the conditional grant may wait for a lock: the store's
        // statement timeout, which bounds every other statement (at least
        // 1 ms: PostgreSQL reads 0 as no bound).
        let lock_ms = millis(self.pool.options().statement_timeout).max(1);
        let judge = self.judge();
        let form = self.form;
        let out = self
            .pool
            .with(ACQUIRE, async |c: &mut Conn| {
                if form == Form::Conditional {
                    let params = grant.if_free_params(&lock_ms);
                    for tries_left in (0..FREE_TRIES).rev() {
                        // The grant when the row is free; else the row as the
                        // statement read it, without its lock. The first
                        // try carries the guard's take behind it. The grant
                        // is one statement in a transaction of its own,
                        // without the pool's `BEGIN`: it bounds its own
                        // waits for locks (schema version 9), and waits for
                        // nothing else.
                        let first = tries_left + 1 == FREE_TRIES;
                        let (granted, guarded) = match guard.filter(|_| first) {
                            Some(job) => {
                                let mine: [&dyn Param; 3] = [&job, &grant.name, &grant.token_text];
                                let (granted, guarded) = tokio::join!(
                                    c.opt(ST.grant_if_free, &params),
                                    c.alone(crate::guard_statements::TAKE_WITH_GRANT, &mine)
                                );
                                (granted, guarded.ok().flatten().is_some())
                            }
                            None => (c.opt(ST.grant_if_free, &params).await, false),
                        };
                        let row = match granted {
                            Ok(Some(row)) => row,
                            // No row at all: the statement returns one.
                            Ok(None) => break,
                            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                                return Ok((grant.claimed(), false));
                            }
                            Err(source) => return Err(query(source)),
                        };
                        if let Some(out) = grant.answer(&row)? {
                            let guarded = guarded && matches!(out, Acquire::Acquired(_));
                            return Ok((out, guarded));
                        }
                        // First use of the lock (no row yet): the locking
                        // form makes it.
                        if row.get::<_, Option<&str>>(GRANT_IF_FREE_SEEN).is_none() {
                            break;
                        }
                        // Held: judge the row as read. A holder that may not
                        // be taken is refused here, so contenders for a live
                        // lease never queue on its row lock; only one that
                        // may be taken is judged again under the lock before
                        // anything is written.
                        let seen = judge::read_at(grant.name, &row, GRANT_IF_FREE_SEEN)?;
                        let verdict = judge.verdict(&seen);
                        if !verdict.claimable() {
                            let busy = Acquire::Busy {
                                verdict,
                                at: seen.now,
                            };
                            return Ok((busy, false));
                        }
                        // Seen free (its holder let go between the grant and
                        // the read of the row, or the grant was held back
                        // after a switch of servers): the conditional grant
                        // again, which holds the row's lock for one statement,
                        // rather than the locking form, which holds it across a
                        // round trip while every other contender (and the next
                        // holder's release) queues behind it. The locking
                        // form has the last word.
                        if tries_left == 0 || !grant.may_take_free(&seen.body) {
                            break;
                        }
                    }
                }
                // A failure may leave its transaction open: the pool then
                // drops the connection, so the server rolls it back.
                locking(c, &grant, &judge).await.map(|out| (out, false))
            })
            .await;
        match out {
            Err(e) if e.fate_unknown() => Ok((self.confirm(&grant, e).await?, false)),
            out => out,
        }
    }

    /// After an acquisition whose answer never came: whether the row carries
    /// its token (the grant committed), read once on a fresh connection.
    /// The grant when it does; `failed` when it does not (nothing was
    /// granted) or the row cannot be read either.
    async fn confirm(&self, grant: &Grant<'_>, failed: Error) -> Result<Acquire, Error> {
        let params: [&dyn Param; 2] = [&grant.name, &grant.token_text];
        let found = self
            .row("confirm an acquisition", |s| s.confirm, &params)
            .await;
        match found {
            Ok(Some(row)) => grant.granted(&row),
            Ok(None) | Err(_) => Err(failed),
        }
    }

    /// Renews `lease`: one conditional `UPDATE` stamping the server's clock.
    ///
    /// # Errors
    ///
    /// When the store cannot answer. The holder must then treat the lease as
    /// lapsing, and stop its job before TTL plus grace from its last
    /// successful renewal.
    pub async fn renew(&self, lease: &PgLease) -> Result<Renewal, Error> {
        let token = lease.token.to_string();
        let boot = millis(self.clock.boot());
        let params: [&dyn Param; 3] = [&lease.name, &token, &boot];
        let row = self.row("renew a lease", |s| s.renew, &params).await?;
        renewal(lease, row)
    }

    /// Releases `lease`: one conditional `UPDATE` that frees the row, keeping
    /// its fence, only when it still carries the lease's token.
    ///
    /// # Errors
    ///
    /// When the store cannot answer; the lease then lapses by itself.
    pub async fn release(&self, lease: &PgLease) -> Result<Release, Error> {
        let token = lease.token.to_string();
        let params: [&dyn Param; 2] = [&lease.name, &token];
        match self.row("release a lease", |s| s.release, &params).await? {
            Some(r) => Ok(Release::Released(stamp(&lease.name, r.get(1))?)),
            None => Ok(Release::Lost),
        }
    }

    /// Releases `lease` as [`Leases::release`] does and then, sent in the
    /// same round trip and read in a snapshot taken after the release
    /// committed, whether any of `jobs` has an occurrence waiting in the
    /// ledger's queue: `Some(false)` when none had, so that a holder's look
    /// at the queue after its release ([`baton_store::Held::release_peeking`])
    /// needs no round trip of its own. `None` when `jobs` is empty or the
    /// read failed: whoever asked then looks itself.
    ///
    /// # Errors
    ///
    /// As [`Leases::release`].
    pub async fn release_peeking(
        &self,
        lease: &PgLease,
        jobs: &[String],
    ) -> Result<(Release, Option<bool>), Error> {
        const WHAT: &str = "release a lease";
        if jobs.is_empty() {
            return Ok((self.release(lease).await?, None));
        }
        let token = lease.token.to_string();
        let names: Vec<&str> = jobs.iter().map(String::as_str).collect();
        let names: &[&str] = &names;
        self.pool
            .with(WHAT, async |c: &mut Conn| {
                let params: [&dyn Param; 2] = [&lease.name, &token];
                let look: [&dyn Param; 3] = [&names, &lease.name, &token];
                // Sent in this order on one connection, so the look's
                // transaction begins once the release's has ended; it
                // answers only once the row is no longer this lease's.
                let (released, queued) =
                    tokio::join!(c.alone(ST.release, &params), c.alone(ST.queued, &look));
                let released =
                    match released.map_err(|source| Error::Query { what: WHAT, source })? {
                        Some(r) => Release::Released(stamp(&lease.name, r.get(1))?),
                        None => Release::Lost,
                    };
                let queued = queued
                    .ok()
                    .flatten()
                    .and_then(|r| r.try_get::<_, Option<bool>>(0).ok().flatten());
                Ok((released, queued))
            })
            .await
    }

    /// The names of every lease row that is a slot above a lock's first
    /// (`NAME@K`), in order.
    ///
    /// # Errors
    ///
    /// When the store cannot answer.
    pub async fn slot_names(&self) -> Result<Vec<String>, Error> {
        const WHAT: &str = "read the slots of the locks";
        let row = self.row(WHAT, |_| SLOT_NAMES, &[]).await?;
        Ok(row.map(|r| r.get(0)).unwrap_or_default())
    }

    /// Names the process group `pgid` of the job `lease`'s holder runs (and
    /// its leader's start time, read here), so that a judge on this host
    /// that finds the holder dead also asks whether the job still runs; also
    /// renews. One conditional `UPDATE`: [`Renewal::Lost`] when the row no
    /// longer carries the lease's token, and nothing changed.
    ///
    /// # Errors
    ///
    /// When the store cannot answer; whether the group is recorded is then
    /// unknown, and the job must not start.
    pub async fn set_job_group(&self, lease: &PgLease, pgid: u32) -> Result<Renewal, Error> {
        let token = lease.token.to_string();
        let (pgid_col, jstart) = job_group(pgid);
        let boot = millis(self.clock.boot());
        let params: [&dyn Param; 5] = [&lease.name, &token, &pgid_col, &jstart, &boot];
        let what = "record the job's process group";
        renewal(lease, self.row(what, |s| s.set_job_group, &params).await?)
    }

    /// Restates what `lease` runs, for a holder that runs one occurrence
    /// after another under one lease: the row's run id becomes `run`, and
    /// `once` (a job's occurrence) is claimed exactly as [`Leases::acquire`]
    /// claims one, in the row's `claims` and in `baton.claims`, in the same
    /// statement. Also renews. The row keeps no occurrence of its own: the
    /// claim is the occurrence's record.
    ///
    /// [`Restated::Claimed`] when the job's claim under this lock is already
    /// at or past `once`, or another lock claimed that occurrence;
    /// [`Restated::Lost`] when the row no longer carries the lease's token.
    /// Either way nothing changed.
    ///
    /// # Errors
    ///
    /// When the store cannot answer; nothing is known to have changed.
    pub async fn restate(
        &self,
        lease: &PgLease,
        run: Option<&str>,
        once: Option<&Once>,
    ) -> Result<Restated, Error> {
        const WHAT: &str = "restate a lease";
        let token = lease.token.to_string();
        let boot = millis(self.clock.boot());
        let job = once.map(|o| o.key.as_str());
        let at = once.map(|o| o.at);
        self.pool
            .with(WHAT, async |c: &mut Conn| {
                let q = |source| Error::Query { what: WHAT, source };
                let params: [&dyn Param; 6] = [&lease.name, &token, &run, &boot, &job, &at];
                let row = match c.alone(ST.restate, &params).await {
                    Ok(row) => row,
                    Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                        // Another lock claimed this occurrence; the statement
                        // was rolled back whole.
                        return Ok(Restated::Claimed {
                            job: job.unwrap_or_default().to_owned(),
                            occurrence: at.unwrap_or_default(),
                        });
                    }
                    Err(source) => return Err(q(source)),
                };
                if let Some(r) = row {
                    return Ok(Restated::Done(stamp(&lease.name, r.get(0))?));
                }
                // Refused: lost, or claimed already. Only this holder
                // changes its row's claims while it holds it, so a row that
                // is still ours was refused for its claim.
                let why = c
                    .alone(ST.restate_refused, &[&lease.name, &token, &job])
                    .await
                    .map_err(q)?;
                match why {
                    Some(r) if r.get::<_, Option<bool>>(0) == Some(true) => Ok(Restated::Claimed {
                        job: job.unwrap_or_default().to_owned(),
                        occurrence: r.get::<_, Option<i64>>(1).or(at).unwrap_or_default(),
                    }),
                    _ => Ok(Restated::Lost),
                }
            })
            .await
    }

    /// Takes back `lease`'s claim of `once` for a run that never started
    /// (a job's guard refused it, its start was not recorded, or it was
    /// decided elsewhere meanwhile), so that a later process may run that
    /// occurrence or record it missed, as the file lease's
    /// [`baton_lease::Lease::withdraw`] does: the row's claim for the job
    /// goes back to the one before, and the occurrence's row in
    /// `baton.claims` goes. Also renews. In one transaction that first takes
    /// the ledger's write lock, so that a start being recorded meanwhile is
    /// seen: a claim whose occurrence the ledger records started stays.
    ///
    /// `Some(Renewal::Renewed)` when taken back; `None`, changing nothing,
    /// when the row no longer carries the token, `once` is not the job's
    /// latest claim under it, or its start is recorded.
    ///
    /// # Errors
    ///
    /// When the store cannot answer (the ledger's write lock held past the
    /// statement timeout, too); nothing is known to have changed.
    pub async fn withdraw(&self, lease: &PgLease, once: &Once) -> Result<Option<Renewal>, Error> {
        const WHAT: &str = "take back a claim";
        let token = lease.token.to_string();
        let boot = millis(self.clock.boot());
        let lock: [&dyn Param; 1] = [&crate::write_lock::WRITE_LOCK];
        let params: [&dyn Param; 5] = [&lease.name, &token, &once.key, &once.at, &boot];
        self.pool
            .with(WHAT, async |c: &mut Conn| {
                let q = |source| Error::Query { what: WHAT, source };
                // One round trip: the statements are sent together, and a
                // failure rolls the whole back at the `COMMIT`.
                let (begun, locked, row, committed) = tokio::join!(
                    c.begin(),
                    c.opt("SELECT pg_advisory_xact_lock($1)", &lock),
                    c.opt(ST.withdraw, &params),
                    c.commit()
                );
                begun.map_err(q)?;
                locked.map_err(q)?;
                let row = row.map_err(q)?;
                committed.map_err(q)?;
                row.map(|r| stamp(&lease.name, r.get(0)).map(Renewal::Renewed))
                    .transpose()
            })
            .await
    }

    /// Judges lock `name` as [`Leases::acquire`] would, without locking or
    /// changing its row (what `status` shows): `None` when the lock was
    /// never taken.
    ///
    /// # Errors
    ///
    /// When the store cannot answer or the row cannot be read.
    pub async fn inspect(&self, name: &str) -> Result<Option<Verdict>, Error> {
        match self.row("read a lease", |s| &s.inspect, &[&name]).await? {
            Some(row) => Ok(Some(self.judge().verdict(&judge::read(name, &row)?))),
            None => Ok(None),
        }
    }

    /// Whether `token` holds lock `name` now: its fence and run id when it
    /// does. A read; it locks nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot answer.
    pub async fn vouch(
        &self,
        name: &str,
        token: &str,
    ) -> Result<Option<(u64, Option<String>)>, Error> {
        let params: [&dyn Param; 2] = [&name, &token];
        let row = self
            .row("read a lease's holder", |s| s.vouch, &params)
            .await?;
        Ok(row.map(|r| {
            (
                u64::try_from(r.get::<_, i64>(0)).unwrap_or(0),
                r.get::<_, Option<String>>(1),
            )
        }))
    }

    /// One `SELECT 1` on a pooled connection: the floor an acquisition's
    /// latency is compared with.
    ///
    /// # Errors
    ///
    /// When the store cannot answer.
    pub async fn ping(&self) -> Result<(), Error> {
        const WHAT: &str = "ping the store";
        self.pool
            .with(WHAT, async |c: &mut Conn| {
                c.client
                    .query_typed_one("SELECT 1", &[])
                    .await
                    .map(drop)
                    .map_err(|source| Error::Query { what: WHAT, source })
            })
            .await
    }

    /// The connections, for the other statements of this crate.
    pub(crate) fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The judge this was opened with.
    pub(crate) fn judge(&self) -> Judge<'_> {
        Judge {
            observer: &self.observer,
            policy: &self.policy,
            liveness: &*self.liveness,
            clock: &*self.clock,
        }
    }

    /// The store this was opened on.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &Options {
        self.pool.options()
    }
}

/// The locking form: `BEGIN` + `SELECT … FOR UPDATE` in one round trip, the
/// judgement, then the grant (or nothing) + `COMMIT` in a second.
async fn locking(c: &mut Conn, grant: &Grant<'_>, judge: &Judge<'_>) -> Result<Acquire, Error> {
    let name = grant.name;
    let by_name: [&dyn Param; 1] = [&name];
    let (begun, row) = tokio::join!(c.begin(), c.opt(ST.select, &by_name));
    begun.map_err(query)?;
    let row = match row.map_err(query)? {
        Some(row) => row,
        None => {
            // First use of this lock: create its row free, then lock it.
            c.execute(ST.ensure, &[&name]).await.map_err(query)?;
            c.opt(ST.select, &[&name])
                .await
                .map_err(query)?
                .ok_or_else(|| Error::Corrupt {
                    name: name.to_owned(),
                    why: "its row is gone right after it was made".to_owned(),
                })?
        }
    };
    let seen = judge::read(name, &row)?;
    let verdict = judge.verdict(&seen);
    if !verdict.claimable() {
        c.commit().await.map_err(query)?;
        return Ok(Acquire::Busy {
            verdict,
            at: seen.now,
        });
    }
    let params = grant.params();
    let (granted, committed) = tokio::join!(c.opt(ST.grant, &params), c.commit());
    match granted {
        // A unique violation aborted the transaction; the COMMIT rolled it back.
        Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => Ok(grant.claimed()),
        Err(source) => Err(query(source)),
        Ok(row) => {
            committed.map_err(query)?;
            match row {
                Some(row) => Ok(grant.answer(&row)?.unwrap_or_else(|| grant.claimed())),
                None => Ok(grant.claimed()),
            }
        }
    }
}

/// One acquisition's parameters, in the grant statement's order.
struct Grant<'a> {
    name: &'a str,
    token: Token,
    token_text: String,
    holder: &'a HolderFacts,
    pidns: Option<i64>,
    pid: i32,
    pstart: Option<i64>,
    pgid: Option<i32>,
    jstart: Option<i64>,
    ttl_ms: i64,
    grace_ms: Option<i64>,
    /// How long after a switch of servers nothing is granted: the TTL plus
    /// the larger of the holder's and the judge's takeover grace.
    hold_ms: i64,
    boot_ms: i64,
    job: Option<&'a str>,
    occurrence: Option<i64>,
}

impl<'a> Grant<'a> {
    fn new(
        name: &'a str,
        token: Token,
        holder: &'a HolderFacts,
        ttl: Duration,
        claim: Option<&'a Once>,
        boot: Duration,
    ) -> Self {
        let signed = |v: u64| i64::try_from(v).ok();
        Self {
            name,
            token,
            token_text: token.to_string(),
            holder,
            pidns: holder.pidns.and_then(signed),
            // Pids are below 2^22 on Linux; a larger one is recorded as
            // unknown (-1), which no judge can find alive or dead.
            pid: i32::try_from(holder.pid).unwrap_or(-1),
            pstart: holder.pstart.and_then(signed),
            pgid: holder.pgid.and_then(|p| i32::try_from(p).ok()),
            jstart: holder.jstart.and_then(signed),
            ttl_ms: millis(ttl),
            grace_ms: holder.grace.map(millis),
            hold_ms: millis(ttl + holder.grace.unwrap_or_default()),
            boot_ms: millis(boot),
            job: claim.map(|c| c.key.as_str()),
            occurrence: claim.map(|c| c.at),
        }
    }

    /// Holds the grant back after a switch of servers for at least the TTL
    /// plus `grace` (the judge's takeover grace), when that is longer than
    /// the TTL plus the holder's own.
    fn held_back_for(mut self, grace: Duration) -> Self {
        let ttl_ms = self.ttl_ms;
        self.hold_ms = self.hold_ms.max(ttl_ms.saturating_add(millis(grace)));
        self
    }

    /// The conditional grant's parameters ([`ST`]`.grant_if_free`): the
    /// grant's, then how long it may wait for a lock, in milliseconds.
    fn if_free_params<'s>(&'s self, lock_ms: &'s i64) -> [&'s dyn Param; 18] {
        let [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q] = self.params();
        [a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, lock_ms]
    }

    fn params(&self) -> [&dyn Param; 17] {
        [
            &self.name,
            &self.token_text,
            &self.holder.host,
            &self.holder.machine,
            &self.holder.boot,
            &self.pidns,
            &self.pid,
            &self.pstart,
            &self.pgid,
            &self.jstart,
            &self.holder.run,
            &self.ttl_ms,
            &self.grace_ms,
            &self.boot_ms,
            &self.job,
            &self.occurrence,
            &self.hold_ms,
        ]
    }

    /// What a grant statement's row says: granted (a fence), held back
    /// after a switch of servers, or (`None`) neither: the lock was not
    /// free, or the claim stood.
    fn answer(&self, row: &Row) -> Result<Option<Acquire>, Error> {
        if row.get::<_, Option<i64>>(0).is_some() {
            return self.granted(row).map(Some);
        }
        let (Some(switched), Some(until)) =
            (row.get::<_, Option<i64>>(2), row.get::<_, Option<i64>>(3))
        else {
            return Ok(None);
        };
        Ok(Some(Acquire::Switched(Switch {
            switched: stamp(self.name, switched)?,
            until: stamp(self.name, until)?,
        })))
    }

    fn granted(&self, row: &Row) -> Result<Acquire, Error> {
        let fence = u64::try_from(row.get::<_, i64>(0)).map_err(|_| Error::Corrupt {
            name: self.name.to_owned(),
            why: "a negative fence".to_owned(),
        })?;
        Ok(Acquire::Acquired(PgLease {
            name: self.name.to_owned(),
            fence: baton_lease::Fence::new(fence),
            token: self.token,
            acquired: stamp(self.name, row.get(1))?,
        }))
    }

    /// Whether `body`, a row read without its lock, is free with this
    /// acquisition's claim still open under it: what the conditional grant
    /// would take.
    fn may_take_free(&self, body: &Body) -> bool {
        let Body::Free(free) = body else {
            return false;
        };
        match (self.job, self.occurrence) {
            (Some(job), Some(at)) => free.claims.get(job).is_none_or(|latest| latest < at),
            _ => true,
        }
    }

    fn claimed(&self) -> Acquire {
        Acquire::Claimed {
            job: self.job.unwrap_or_default().to_owned(),
            occurrence: self.occurrence.unwrap_or_default(),
        }
    }
}

fn query(source: tokio_postgres::Error) -> Error {
    Error::Query {
        what: ACQUIRE,
        source,
    }
}

/// What a renewing statement's `row` says of `lease`: renewed at the stamp
/// in its first column, or lost when no row carried the lease's token.
fn renewal(lease: &PgLease, row: Option<Row>) -> Result<Renewal, Error> {
    match row {
        Some(r) => Ok(Renewal::Renewed(stamp(&lease.name, r.get(0))?)),
        None => Ok(Renewal::Lost),
    }
}

fn stamp(name: &str, us: i64) -> Result<Timestamp, Error> {
    Timestamp::from_microsecond(us).map_err(|e| Error::Corrupt {
        name: name.to_owned(),
        why: e.to_string(),
    })
}

/// The columns naming the job's process group `pgid` (none for an id the
/// column cannot hold) and its leader's start time, read now.
pub(crate) fn job_group(pgid: u32) -> (Option<i32>, Option<i64>) {
    let pgid_col = i32::try_from(pgid).ok().filter(|&p| p > 0);
    let jstart = pgid_col
        .and_then(|_| baton_lease::job::process_start(pgid))
        .and_then(|s| i64::try_from(s).ok());
    (pgid_col, jstart)
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
