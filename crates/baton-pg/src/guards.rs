//! Job guards in PostgreSQL: which lock each job last started a run under,
//! and that run's fence (`baton.job_guards`), so that a job never runs under
//! two locks at once, whatever lock it is given from one run to the next
//! (the file lock's `baton_lease::Guarded`, with the same rule).
//!
//! A run that holds a lease takes its job's guard under the guard row's lock
//! (`FOR UPDATE`, or the upsert's own lock: takes of one job serialise
//! across hosts, and each statement after the lock reads every commit
//! before it). A guard that already names this lock (or none) takes the new
//! fence at once, in one transaction sent whole with its `COMMIT`; one
//! naming another lock is left alone there, and judged in a second
//! transaction: that lock's row is judged by `baton_lease::decide` as any
//! contender would judge it; when that row is still held under the guard's
//! fence by a holder not provably gone, the job runs there and nothing
//! changes, else the guard names this lock and fence. While the store's
//! server is held back after a switch (`crate::switch`), no guard is taken:
//! a grant the old server made and the new one kept must not take a guard
//! the old server had given another lock and lost. The only SQL that reads
//! or writes `baton.job_guards` is in `crate::guard_statements`; this
//! module never locks a lease row.

use baton_lease::Verdict;
use baton_lease::record::Body;
use jiff::Timestamp;

use crate::error::Error;
use crate::guard_statements::{HELD_BACK, INSERT, SELECT, SET};
use crate::judge;
use crate::leases::Leases;
use crate::pool::Conn;
use crate::statements::ST;
use crate::switch::Switch;
use crate::typed::Param;

/// What [`Leases::take_guard`] came to. Contention is an outcome: only
/// [`TakeGuard::Taken`] lets the run start.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // Made once per run; boxing buys nothing.
pub enum TakeGuard {
    /// The guard names this lock and fence from now on.
    Taken,
    /// The job's run under another lock is in flight; nothing changed.
    Elsewhere {
        /// The other lock.
        lock: String,
        /// Its holder's verdict.
        verdict: Verdict,
    },
    /// The store's server changed too recently (a failover or a restore,
    /// see [`Switch`]); nothing changed.
    Switched(Switch),
}

/// Why a take of a guard stopped short: held back, or failed.
enum Stop {
    Held(Switch),
    Failed(Error),
}
use Stop::{Failed, Held};

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Failed(e)
    }
}

/// The switch a [`HELD_BACK`] row names, for lock `lock`.
fn switch_of(r: &tokio_postgres::Row, lock: &str) -> Result<Switch, Error> {
    let at = |i: usize| {
        Timestamp::from_microsecond(r.get(i)).map_err(|e| Error::Corrupt {
            name: lock.to_owned(),
            why: e.to_string(),
        })
    };
    Ok(Switch {
        switched: at(0)?,
        until: at(1)?,
    })
}

impl Leases {
    /// Whether `job` runs now under a lock other than `lock`: that lock's
    /// name and its holder's verdict, when it does. Changes nothing.
    ///
    /// # Errors
    ///
    /// When the store cannot answer, or the lease row cannot be read: then
    /// it is unknown, and the job must not start.
    pub async fn guard_of(
        &self,
        job: &str,
        lock: &str,
    ) -> Result<Option<(String, Verdict)>, Error> {
        const WHAT: &str = "read a job's guard";
        self.pool()
            .with(WHAT, async |c: &mut Conn| {
                let row = c
                    .alone(SELECT, &[&job])
                    .await
                    .map_err(|source| Error::Query { what: WHAT, source })?;
                match row {
                    None => Ok(None),
                    Some(r) => {
                        self.elsewhere(c, false, lock, r.get(0), r.get(1), WHAT)
                            .await
                    }
                }
            })
            .await
    }

    /// Takes `job`'s guard for the lease held on `lock` under `fence`:
    /// [`TakeGuard::Elsewhere`] (nothing changed) when the job's run under
    /// another lock is in flight, [`TakeGuard::Switched`] (nothing changed)
    /// while the store's server is held back after a switch, else
    /// [`TakeGuard::Taken`], and the guard names `lock` and `fence` from
    /// now on.
    ///
    /// # Errors
    ///
    /// As [`Leases::guard_of`]; nothing is known to have changed.
    pub async fn take_guard(&self, job: &str, lock: &str, fence: u64) -> Result<TakeGuard, Error> {
        const WHAT: &str = "take a job's guard";
        let fence = i64::try_from(fence).map_err(|_| Error::Corrupt {
            name: lock.to_owned(),
            why: format!("fence {fence} is out of range"),
        })?;
        self.pool()
            .with(WHAT, async |c: &mut Conn| {
                let q = |source| Error::Query { what: WHAT, source };
                let params: [&dyn Param; 3] = [&job, &lock, &fence];
                let mine: [&dyn Param; 2] = [&lock, &fence];
                // Whether the server is held back, and the guard made or
                // kept on this lock unless it is, with the `COMMIT`, in one
                // round trip: a run under the same lock as its job's last
                // one takes its guard there. A failed statement aborts the
                // transaction, and the `COMMIT` then rolls it back.
                let (begun, held, inserted, committed) = tokio::join!(
                    c.begin(),
                    c.opt(HELD_BACK, &mine),
                    c.opt(INSERT, &params),
                    c.commit()
                );
                begun.map_err(q)?;
                let held = held.map_err(q)?;
                let inserted = inserted.map_err(q)?;
                committed.map_err(q)?;
                // The upsert's own look at the hold decides: the hold may
                // have ended between the two statements.
                if inserted.is_some() {
                    return Ok(TakeGuard::Taken);
                }
                if let Some(r) = held {
                    return Ok(TakeGuard::Switched(switch_of(&r, lock)?));
                }
                // The guard names another lock: judged under its row's lock,
                // in a transaction of its own.
                let out = async {
                    let locked = format!("{SELECT} FOR UPDATE");
                    let by_job: [&dyn Param; 1] = [&job];
                    let (begun, held, row) =
                        tokio::join!(c.begin(), c.opt(HELD_BACK, &mine), c.opt(&locked, &by_job));
                    begun.map_err(q)?;
                    if let Some(r) = held.map_err(q)? {
                        return Err(Held(switch_of(&r, lock)?));
                    }
                    let r = row.map_err(q)?.ok_or_else(|| Error::Corrupt {
                        name: lock.to_owned(),
                        why: format!("job {job}'s guard is gone while it was taken"),
                    })?;
                    let found = self
                        .elsewhere(c, true, lock, r.get(0), r.get(1), WHAT)
                        .await?;
                    Ok::<_, Stop>(match found {
                        None => {
                            c.execute(SET, &params).await.map_err(q)?;
                            TakeGuard::Taken
                        }
                        Some((lock, verdict)) => TakeGuard::Elsewhere { lock, verdict },
                    })
                }
                .await;
                match out {
                    Ok(found) => {
                        c.commit().await.map_err(q)?;
                        Ok(found)
                    }
                    Err(Held(switch)) => {
                        // The switch's record, if this was the first to see
                        // it, goes with the rollback: the next look records
                        // it later, the safe side.
                        let _ = c.rollback().await;
                        Ok(TakeGuard::Switched(switch))
                    }
                    // The pool drops a failed call's connection, and the
                    // server rolls its transaction back.
                    Err(Failed(e)) => Err(e),
                }
            })
            .await
    }

    /// Whether the guard naming `named` and `fence` says the job runs
    /// under a lock other than `mine`, judging that lock's row, read in the
    /// transaction open on `c` when `in_transaction`, else in one of its own.
    async fn elsewhere(
        &self,
        c: &mut Conn,
        in_transaction: bool,
        mine: &str,
        named: String,
        fence: i64,
        what: &'static str,
    ) -> Result<Option<(String, Verdict)>, Error> {
        if baton_lease::slot::same_lock(&named, mine) {
            // This lock's own lease excludes its other runs by itself; its
            // other slots (`max_concurrent`) run beside it by design, and
            // the claims table refuses an occurrence one of them claimed.
            return Ok(None);
        }
        let params: [&dyn Param; 1] = [&named];
        let row = if in_transaction {
            c.opt(&ST.inspect, &params).await
        } else {
            c.alone(&ST.inspect, &params).await
        };
        let row = row.map_err(|source| Error::Query { what, source })?;
        let Some(row) = row else {
            return Ok(None);
        };
        let seen = judge::read(&named, &row)?;
        let held_there =
            matches!(&seen.body, Body::Held(h) if i64::try_from(h.fence.get()) == Ok(fence));
        let verdict = self.judge().verdict(&seen);
        if held_there && !verdict.claimable() {
            return Ok(Some((named, verdict)));
        }
        self.other_slot_held(c, in_transaction, &named, what).await
    }

    /// Another slot of the lock `named` (the guard's, not the caller's)
    /// held by a holder that may still run, as the file store's guard
    /// judges it (`baton_lease::guard`): the guard names only the slot
    /// whose run took it last, and the job's runs in its other slots may
    /// run on under fences it no longer names. Slot 1 may be another job's
    /// now, and a row does not say whose run it holds: any holder not
    /// provably gone is taken for the job's, so the job waits for that lock
    /// rather than run beside itself. Held rows are read one at a time
    /// (rarely more than one: only while a guard names a former lock).
    async fn other_slot_held(
        &self,
        c: &mut Conn,
        in_transaction: bool,
        named: &str,
        what: &'static str,
    ) -> Result<Option<(String, Verdict)>, Error> {
        let (base, named_slot) = baton_lease::slot::slot_of(named);
        let names: Vec<String> = (1..=baton_lease::slot::MOST)
            .filter(|&k| k != named_slot)
            .map(|k| baton_lease::slot::slot_name(base, k).into_owned())
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut after = String::new();
        loop {
            let params: [&dyn Param; 2] = [&names.as_slice(), &after];
            let row = if in_transaction {
                c.opt(&ST.held_among, &params).await
            } else {
                c.alone(&ST.held_among, &params).await
            };
            let Some(row) = row.map_err(|source| Error::Query { what, source })? else {
                return Ok(None);
            };
            let name: String = row.get(20);
            let seen = judge::read(&name, &row)?;
            let verdict = self.judge().verdict(&seen);
            if matches!(&seen.body, Body::Held(_)) && !verdict.claimable() {
                return Ok(Some((name, verdict)));
            }
            after = name;
        }
    }
}
