//! `baton backfill JOB --from TIME --to TIME [--dry-run]`: runs the job's
//! past occurrences in a range, oldest first, one at a time, under its
//! lock, holding one lease for the whole range.
//!
//! An occurrence that already ran (`started` or `claimed` in the ledger) is
//! not run again; a missed one is. Backfill claims nothing in the lock file
//! (claims only move forward, and these occurrences are behind them): the
//! ledger, read and written under the lease, is the record. A busy lock
//! refuses the backfill when the job's overlap rule is `skip` and waits for
//! it when it is `queue`. Occurrences after now are left to the schedule.
//!
//! The ledger is one of two records. The lock's claim says the job started
//! the occurrence it names, and only ever moves forward, so every earlier
//! occurrence may have run too; after the ledger was lost, moved aside or
//! could not be written, the ledger does not know which. So an occurrence at
//! or before the job's claim that the ledger has no decision of is not run
//! unless the ledger positively records it missed, and no occurrence is run
//! while the ledger cannot be read at all: neither record can rule out that
//! it ran (fail closed). That includes, once the job has run, its
//! occurrences from before it was first seen, which no tick decided: the
//! refusal says so, with the sighting. `--force` runs them anyway, saying
//! so for each.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use baton_lease::Clock;
use baton_store::words::MissReason;
use jiff::Timestamp;

use crate::config::{Config, Job};
use crate::engine::run::{Context, First, Request, Start, occurrence_text};
use crate::engine::surfaces::Surfaces;
use crate::outcome::Outcome;
use crate::store::{Guard, Taken};

/// The most occurrences one backfill runs.
pub const MAX_OCCURRENCES: usize = 10_000;

/// How long a backfill with `overlap = "queue"` waits for a busy lock.
pub const QUEUE_WAIT: Duration = Duration::from_secs(24 * 3600);

/// One occurrence of the range, and what the records say of it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Planned {
    /// The occurrence (RFC 3339 UTC).
    pub occurrence: String,
    /// `run` (would run), what the ledger says (`started`, `claimed`,
    /// `queued`, `coalesced`), or `unknown` (the records cannot rule out
    /// that it ran: not run without `--force`).
    pub action: String,
    /// The run that started it, when one did.
    pub run_id: Option<String>,
    /// Why it would not run, for `unknown`.
    pub why: Option<String>,
}

/// What the records say of one occurrence, before a backfill runs it.
#[derive(Debug, Clone)]
enum Known {
    /// The ledger decided it: it is never run again.
    Decided(baton_store::ledger::DecisionRow),
    /// Neither record rules out that it ran (the text says why).
    Unknown(String),
    /// It may run: the ledger records it missed, or it is after the job's
    /// claim and the ledger has no decision of it.
    Runnable,
}

/// The ledger a backfill consults.
enum Ledger<'a> {
    /// There is none yet: it records nothing.
    Absent,
    /// It is open.
    Open(&'a mut dyn baton_store::ledger::Records),
    /// It cannot be opened or read.
    Unreadable,
}

/// What the ledger and the lock's `claim` say of each of `occ`.
fn known(ledger: Ledger<'_>, job: &Job, occ: &[i64], claim: Option<i64>) -> Vec<Known> {
    let tz = &job.timezone.value.tz;
    let job = job.name.as_str();
    let unreadable = || {
        Known::Unknown(
            "the ledger cannot be read, and it is the record of which past occurrences ran".into(),
        )
    };
    let (mut ledger, missed, seen) = match ledger {
        Ledger::Absent => (None, Vec::new(), None),
        Ledger::Open(l) => match (l.missed(job, u32::MAX), l.job(job)) {
            (Ok(m), Ok(state)) => (Some(l), m, state.map(|st| st.first_seen)),
            _ => return occ.iter().map(|_| unreadable()).collect(),
        },
        Ledger::Unreadable => return occ.iter().map(|_| unreadable()).collect(),
    };
    let before_seen = |at: i64| seen.filter(|&s| Timestamp::from_second(at).is_ok_and(|t| t < s));
    occ.iter()
        .map(|&at| {
            match ledger.as_mut().map_or(Ok(None), |l| l.decision(job, at)) {
                Err(_) => unreadable(),
                Ok(Some(d)) => Known::Decided(d),
                Ok(None) if missed.iter().any(|m| m.first <= at && at <= m.last) => Known::Runnable,
                Ok(None) => match (claim.filter(|&c| c >= at), before_seen(at)) {
                    (None, _) => Known::Runnable,
                    // No tick decided it, and the job has run since.
                    (Some(c), Some(seen)) => Known::Unknown(format!(
                        "it is before {job} was first seen ({}), so the ledger never decided \
                         it, and the lock's claim says {job} started occurrences up to {} since",
                        crate::times::human(seen, tz),
                        shown(c, tz)
                    )),
                    (Some(c), None) => Known::Unknown(format!(
                        "the ledger has no record of it, and the lock's claim says {job} started \
                         occurrences up to {} under it: it may have run under a ledger that was \
                         lost, moved aside or not writable",
                        shown(c, tz)
                    )),
                },
            }
        })
        .collect()
}

/// An occurrence for people: on the job's wall clock
/// ([`crate::times::human`]), as the backfill shows every time.
fn shown(at: i64, tz: &jiff::tz::TimeZone) -> String {
    Timestamp::from_second(at).map_or_else(
        |_| occurrence_text(Some(at)),
        |t| crate::times::human(t, tz),
    )
}

/// Why a range of occurrences cannot be backfilled ([`occurrences`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadRange {
    /// `--from` is after `--to`; both as the job's wall clock shows them.
    #[error("--from {from} is after --to {to}")]
    Backwards {
        /// `--from`, for people.
        from: String,
        /// `--to`, for people.
        to: String,
    },
    /// More than [`MAX_OCCURRENCES`] occurrences of the job.
    #[error("the range holds more than {MAX_OCCURRENCES} occurrences of {job}: narrow it")]
    TooMany {
        /// The job.
        job: String,
    },
}

/// The occurrences of `job` in `[from, to]`, at most now.
///
/// # Errors
///
/// [`BadRange`] when the range is backwards, or holds more than
/// [`MAX_OCCURRENCES`].
pub fn occurrences(
    job: &Job,
    from: Timestamp,
    to: Timestamp,
    now: Timestamp,
) -> Result<Vec<i64>, BadRange> {
    if from > to {
        let tz = &job.timezone.value.tz;
        return Err(BadRange::Backwards {
            from: crate::times::human(from, tz),
            to: crate::times::human(to, tz),
        });
    }
    let end = to.min(now);
    let schedule = &job.when.value.schedule;
    let tz = &job.timezone.value.tz;
    let start = from
        .checked_sub(jiff::SignedDuration::from_secs(1))
        .unwrap_or(from);
    let mut out = Vec::new();
    for t in schedule.iter_after(start, tz).take_while(|&t| t <= end) {
        if out.len() == MAX_OCCURRENCES {
            return Err(BadRange::TooMany {
                job: job.name.clone(),
            });
        }
        out.push(t.as_second());
    }
    Ok(out)
}

/// Why a backfill cannot be planned.
#[derive(Debug)]
pub enum Unplanned {
    /// The store cannot be used.
    Unusable(crate::store::Unusable),
    /// The store or the lock's record cannot be read.
    Store(crate::store::Error),
    /// A newer baton wrote the ledger: nothing in it was read, and no
    /// occurrence may run until baton is upgraded, not even with `--force`
    /// (its outcome is [`crate::engine::run::ledger_failed`]'s).
    Newer(baton_store::ledger::Error),
}

impl std::fmt::Display for Unplanned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unusable(e) => e.fmt(f),
            Self::Store(e) => e.fmt(f),
            Self::Newer(e) => e.fmt(f),
        }
    }
}

/// What a backfill of `occ` would do, from the ledger and the lock's claim
/// (read only; `force` as `--force`). A ledger that cannot be read leaves
/// every occurrence `unknown`; one a newer baton wrote refuses the plan.
///
/// # Errors
///
/// When the store or the lock's record cannot be read, or a newer baton
/// wrote the ledger.
pub fn dry_run(
    config: &Config,
    job: &Job,
    occ: &[i64],
    now: Timestamp,
    force: bool,
) -> Result<Vec<Planned>, Unplanned> {
    let store = crate::store::open(config).map_err(Unplanned::Unusable)?;
    let claim = crate::store::claim_of_job(store.as_ref(), job).map_err(Unplanned::Store)?;
    let known = match crate::store::existing_records(config, now) {
        None => known(Ledger::Absent, job, occ, claim),
        Some(Ok(mut l)) => known(Ledger::Open(l.as_mut()), job, occ, claim),
        Some(Err(e)) if e.is_newer_schema() => return Err(Unplanned::Newer(e)),
        Some(Err(_)) => known(Ledger::Unreadable, job, occ, claim),
    };
    Ok(occ
        .iter()
        .zip(known)
        .map(|(&at, k)| {
            let (action, run_id, why) = match k {
                Known::Decided(d) => (d.decision.as_str().to_owned(), d.run_id, None),
                Known::Unknown(why) if !force => ("unknown".to_owned(), None, Some(why)),
                Known::Unknown(_) | Known::Runnable => ("run".to_owned(), None, None),
            };
            Planned {
                occurrence: occurrence_text(Some(at)),
                action,
                run_id,
                why,
            }
        })
        .collect())
}

/// How a backfill runs besides its range.
pub struct Options {
    /// Run the occurrences whose records cannot rule out that they ran.
    pub force: bool,
    /// Copy the steps' output to standard output as well as the log.
    pub tee: bool,
    /// Told of each occurrence as it starts, before its first step.
    pub on_start: Option<crate::engine::surfaces::OnStart>,
}

/// Runs the backfill; returns the worst outcome. `force` runs the
/// occurrences whose records cannot rule out that they ran.
pub fn run(config: &Config, job: &Job, occ: &[i64], clock: Arc<dyn Clock>, force: bool) -> Outcome {
    let opts = Options {
        force,
        tee: true,
        on_start: None,
    };
    run_observed(config, job, occ, clock, opts)
}

/// As [`run`], with the output and the progress as `opts` says.
pub fn run_observed(
    config: &Config,
    job: &Job,
    occ: &[i64],
    clock: Arc<dyn Clock>,
    opts: Options,
) -> Outcome {
    let Options {
        force,
        tee,
        on_start,
    } = opts;
    if occ.is_empty() {
        return Outcome::Done;
    }
    if let Err(e) = crate::ops::tick::preflight(config, clock.wall()) {
        crate::say::line(format_args!("backfill: {e}; nothing was run"));
        return Outcome::Unable;
    }
    let mut opened = Surfaces::open(config, clock);
    if opened.ledger_is_newer() {
        // Said when it was opened: nothing runs, even with `--force`.
        opened.finish();
        return Outcome::Unable;
    }
    if let Some(f) = on_start {
        opened.on_start(f);
    }
    let surfaces = Rc::new(RefCell::new(opened));
    // Refused before any lease is taken, a backfill loses nothing.
    let checked = surfaces.borrow_mut().check_job_log(&job.name);
    if let Err(e) = checked {
        let message = format!("backfill: {}: not run: {e}", job.name);
        surfaces.borrow_mut().warn(&message);
        surfaces.borrow_mut().finish();
        return Outcome::Unable;
    }
    let outcome = run_with(config, job, occ, force, tee, &surfaces);
    let _ = surfaces.borrow_mut().ledger(|l| l.checkpoint());
    surfaces.borrow_mut().finish();
    outcome
}

fn run_with(
    config: &Config,
    job: &Job,
    occ: &[i64],
    force: bool,
    tee: bool,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Outcome {
    let store = match crate::store::open(config) {
        Ok(s) => s,
        Err(e) => {
            crate::say::line(format_args!("backfill: {}: {e}", job.name));
            return Outcome::Unable;
        }
    };
    let lock = store.lock_label(&job.lock_ref());
    let mut firsts = Vec::new();
    for (i, &at) in occ.iter().enumerate() {
        let Ok(token) = baton_lease::Token::fresh() else {
            crate::say::line(format_args!(
                "backfill: failed to read random bytes for a run id"
            ));
            return Outcome::Unable;
        };
        firsts.push(First {
            ctx: Context {
                job: job.name.clone(),
                occurrence: occurrence_text(Some(at)),
                run_id: token.to_string(),
                lock: lock.clone(),
                name: job.lock.value.clone(),
                fence: None,
                slot: 1,
                guard: None,
            },
            start: Start::Scheduled(at),
            restate: i > 0,
        });
    }
    let claim = baton_lease::Claim {
        run: Some(firsts[0].ctx.run_id.clone()),
        occ: Some(firsts[0].ctx.occurrence.clone()),
        budget: job.policy.max_runtime.value,
        once: None,
        mates: crate::engine::run::owned_mates(config, job),
    };
    let refuse = |why: &dyn std::fmt::Display| {
        crate::say::line(format_args!(
            "backfill: {} not run: {}; nothing was run",
            job.name,
            crate::times::human_in(&why.to_string(), &job.timezone.value.tz)
        ));
    };
    match store.runs_elsewhere(&job.lock_ref(), None) {
        Ok(Guard::Clear | Guard::Claimed { .. }) => {}
        Ok(Guard::Elsewhere(refused)) => {
            refuse(&refused.why);
            return Outcome::Failed;
        }
        Err(e) => {
            refuse(&e);
            return Outcome::Unable;
        }
    }
    let clock = surfaces.borrow().clock();
    let deadline = clock.boot().saturating_add(QUEUE_WAIT);
    let mut said = false;
    let mut slot = 1;
    // The first run's end slot, kept from before a run is asked to stop
    // until that run reserves it.
    let mut spare = None;
    let outcome = loop {
        let o = crate::engine::slots::try_acquire(&*store, job, &claim, true).map(|t| {
            slot = t.slot;
            t.taken
        });
        let waits = job.policy.overlap.value.waits()
            && matches!(&o, Ok(Taken::Refused(r)) if r.reason == MissReason::Busy && r.holder.is_some())
            && clock.boot() < deadline;
        if !waits {
            break o;
        }
        if let Ok(Taken::Refused(refused)) = &o
            && let Some(run) = refused.holder.as_ref().and_then(|h| h.run())
        {
            // `replace`: the job's run in flight is asked to stop (each
            // run found holding the lock, once); a mate's is waited for.
            // Only once this run's end has room: one that could not start
            // stops nothing.
            if job.policy.overlap.value == crate::config::Overlap::Replace && spare.is_none() {
                match crate::state::end_slot::EndSlot::spare(&config.settings.state_dir.value) {
                    Ok(s) => spare = Some(s),
                    Err(e) => {
                        surfaces.borrow_mut().warn(&format!(
                            "{}: run {run} is not asked to stop: the backfill could not \
                             reserve room for its run's end: {e}",
                            job.name
                        ));
                        break o;
                    }
                }
            }
            crate::engine::replace::ask(config, job, run, None, surfaces);
        }
        if !said {
            said = true;
            if let Ok(Taken::Refused(refused)) = &o {
                crate::say::line(format_args!(
                    "backfill: {}: {}; waiting for it to end (overlap = \"{}\")",
                    job.name,
                    crate::times::human_in(&refused.why, &job.timezone.value.tz),
                    job.policy.overlap.value.as_str()
                ));
            }
        }
        drop(o);
        clock.sleep(Duration::from_millis(200));
    };
    let lease = match outcome {
        Ok(Taken::Acquired(lease)) => lease,
        Ok(Taken::Refused(refused)) => {
            crate::say::line(format_args!(
                "backfill: {} not run: {} (overlap = \"{}\"); nothing was run",
                job.name,
                crate::times::human_in(&refused.why, &job.timezone.value.tz),
                job.policy.overlap.value.as_str()
            ));
            return Outcome::Failed;
        }
        Ok(Taken::Claimed { at }) => {
            crate::say::line(format_args!(
                "backfill: {} not run: the lock's claim says {} started already; nothing was run",
                job.name,
                shown(at, &job.timezone.value.tz)
            ));
            return Outcome::Failed;
        }
        Err(e) => {
            crate::say::line(format_args!("backfill: {}: {e}", job.name));
            return Outcome::Unable;
        }
    };
    // No occurrence is claimed in the guard here: nothing to take back.
    // What the guard claimed before it named this lock (the job's claims
    // under the lock it ran under before a rename) still says what may have
    // run: the take moves the guard here, where it says nothing more.
    let guard_claim = match store.take_guard(&job.slot_ref(slot), lease.fence(), None) {
        Ok((Guard::Clear | Guard::Claimed { .. }, taken)) => taken.and_then(|t| t.before),
        Ok((Guard::Elsewhere(refused), _)) => {
            let _ = lease.release();
            refuse(&refused.why);
            return Outcome::Failed;
        }
        Err(e) => {
            let _ = lease.release();
            refuse(&e);
            return Outcome::Unable;
        }
    };
    // Under the lease, no other run of the lock's jobs can start, and only
    // a holder moves the claim: what the records say now stays true.
    let label = store.lock_label(&job.slot_ref(slot));
    for f in &mut firsts {
        f.ctx.slot = slot;
        f.ctx.lock.clone_from(&label);
    }
    let (firsts, refused) = match runnable(&*store, job, (firsts, guard_claim), force, surfaces) {
        Ok(kept) => kept,
        Err(e) => {
            crate::say::line(format_args!("backfill: {}: {e}; nothing was run", job.name));
            let _ = lease.release();
            return Outcome::Unable;
        }
    };
    let worst = if refused {
        Outcome::Failed
    } else {
        Outcome::Done
    };
    if firsts.is_empty() {
        let _ = lease.release();
        return worst;
    }
    let req = Request {
        config,
        job,
        start: Start::Manual,
        tee,
        teller: None,
        stop_on_signal: false,
        backfill: true,
    };
    worst.max(crate::engine::run::hold(
        &req,
        (lease, slot),
        firsts,
        surfaces,
    ))
}

/// The occurrences of `firsts` to run, after what the records say of each
/// (the ledger, the lock's claims and `guard_claim`, what the job's guard
/// claimed before this backfill took it): one whose records cannot rule
/// out that it ran is left out (said, and the second value is true) unless
/// `force`. The first kept one restates the lease when it is not the one
/// the acquisition named.
fn runnable(
    store: &dyn crate::store::Store,
    job: &Job,
    (firsts, guard_claim): (Vec<First>, Option<i64>),
    force: bool,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Result<(Vec<First>, bool), crate::store::Error> {
    let claim = crate::store::claim_of_job(store, job)?.max(guard_claim);
    let tz = &job.timezone.value.tz;
    let occ: Vec<i64> = firsts.iter().filter_map(|f| f.start.occurrence()).collect();
    let known = surfaces
        .borrow_mut()
        .ledger(|l| Ok(known(Ledger::Open(l), job, &occ, claim)))
        .unwrap_or_else(|| known(Ledger::Unreadable, job, &occ, claim));
    let named = firsts.first().map(|f| f.ctx.run_id.clone());
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for (mut f, k) in firsts.into_iter().zip(known) {
        if let Known::Unknown(why) = k {
            if !force {
                refused.push((f.start.occurrence(), why));
                continue;
            }
            crate::say::line(format_args!(
                "backfill: {} occurrence {}: run anyway (--force), though {why}",
                job.name,
                f.start
                    .occurrence()
                    .map_or_else(|| f.ctx.occurrence.clone(), |at| shown(at, tz))
            ));
        }
        f.restate = named.as_ref() != Some(&f.ctx.run_id);
        kept.push(f);
    }
    for (at, why) in &refused {
        let occurrence = at.map_or_else(|| "manual".to_owned(), |at| shown(at, tz));
        crate::say::line(format_args!(
            "backfill: {} occurrence {occurrence} not run: {why}; if you know it did not run, \
             --force runs it anyway",
            job.name
        ));
    }
    Ok((kept, !refused.is_empty()))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{self, Overrides};

    fn hourly() -> Job {
        let text = "[scheduler]\nstate_dir = \"/nonexistent\"\ntimezone = \"UTC\"\n\
                    [jobs.h]\nschedule = \"0 * * * *\"\nrun = \"true\"\n";
        let c = config::parse(text, Path::new("/etc/baton.toml"), &Overrides::default()).unwrap();
        (*c.jobs["h"]).clone()
    }

    #[test]
    fn a_ledger_that_cannot_be_read_rules_out_nothing_and_a_claim_covers_what_is_behind_it() {
        let job = hourly();
        let occ = [3600, 7200, 10800];
        let unknown = |k: &Known, why: &str| matches!(k, Known::Unknown(w) if w.contains(why));
        let k = known(Ledger::Unreadable, &job, &occ, None);
        assert!(k.iter().all(|k| unknown(k, "cannot be read")), "{k:?}");
        // No ledger yet: the claim alone says what may have run.
        let k = known(Ledger::Absent, &job, &occ, Some(7200));
        assert!(
            unknown(&k[0], "lock's claim") && unknown(&k[1], "lock's claim"),
            "{k:?}"
        );
        assert!(matches!(k[2], Known::Runnable), "{k:?}");
    }
}
