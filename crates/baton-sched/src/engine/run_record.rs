//! A run's own rows in the ledger (its start, each attempt, its end), and
//! what a run does when the ledger does not take them.
//!
//! A ledger can fail for a while and answer again: a server restarting, a
//! terminated backend, a connection cut while a statement was in flight
//! (its answer lost, its transaction perhaps committed), another process
//! holding SQLite's write lock, a full disk. The rows a run writes about
//! itself are each written again, with a backoff, for up to the job's TTL,
//! while the run holds its lease (the waits between attempts renew it), so
//! that what the ledger ends up saying is what happened:
//!
//! - **The start** decides whether the run may go on, with lock files as
//!   in the shared store: the run does not start until its start is
//!   recorded; if it cannot be within the TTL, the occurrence is recorded
//!   missed (`ledger-unavailable`) and alerted, and a claim never stands
//!   for a run that did not start: with lock files it is taken back when
//!   the ledger takes no miss either, in the shared store the next process
//!   that meets the claim records the miss. A ledger that could not be
//!   opened at all refuses every run before its lease is taken
//!   (`crate::engine::surfaces`).
//!   Before the start, the run reserves its end slot
//!   ([`crate::state::end_slot`]); no slot, no run.
//! - **Attempts and the end** are written again before the lease is let
//!   go, so a run that ended well is never left `running` to be recorded
//!   `abandoned` later. An attempt is recorded before anything starts or
//!   waits after it (the next attempt, a retry's wait, a failure's
//!   alert); the last one of a run that goes straight to its end lands
//!   with the end, in one transaction; an end still not taken is kept in the run's end
//!   slot, which the next run under the lock records. Once the lease is
//!   lost (a host cut off from its store) only the end is tried again: the
//!   run is over, its end starts nothing and lands once, and no other host
//!   can read this host's end slot; the host that takes the lease over
//!   records the run `abandoned` only if its end has not landed by then.
//!   Once a signal asks the run to stop, nothing is tried again: the
//!   process ends, and the next run under the lock records it.
//! - **A ledger file left for a fresh one** while the run goes on (removed
//!   or renamed by someone, moved aside as corrupt, or moved aside because
//!   its `-wal` was removed): before each write the run looks at the file
//!   (`Records::follow`, an `lstat` of the file and one of its log), and once
//!   the file its start went to is gone, it records its start and the
//!   attempts recorded so far again in the fresh file, at once, so that
//!   the fresh file counts the run once and a crash after it still leaves
//!   the run to be found `abandoned`. Only a loss in the instant between
//!   that look and the write itself lands one write in the fresh file
//!   first; the end is then written again, whole.
//!
//! Writing the same row again is safe: a start recorded already under the
//! run's own id is its start, an attempt is keyed by run and sequence, an
//! end lands once. This module never takes or releases the lease, and
//! tries a run's start for at most the TTL, and its end for at most the
//! TTL or, on a shared store, [`crate::engine::steps`]' longer patience
//! (plus one call's own deadline each), while the lease renews.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use baton_runner::{Paused, Session};
use baton_store::ledger::{
    Attempt, Begun, DecisionRow, Finished, MissedRow, NewRun, Records, RunRow,
};

use crate::engine::surfaces::Surfaces;
use crate::state::end_slot::EndSlot;
use crate::units::show_duration;

/// The first wait before a row is written again; it doubles up to
/// [`LAST_DELAY`].
const FIRST_DELAY: Duration = Duration::from_millis(200);
/// The longest wait between two attempts at a row.
const LAST_DELAY: Duration = Duration::from_secs(2);

/// What the start of a run came to.
#[derive(Debug)]
pub(crate) enum Begin {
    /// Recorded: the run goes on.
    Started,
    /// The ledger had decided the occurrence already: the run must not start.
    Decided(Box<DecisionRow>),
    /// The ledger records the occurrence missed (decided before this start
    /// was recorded), and this is no backfill: the run must not start.
    Missed(Box<MissedRow>),
    /// Not recorded within the TTL: the run must not start. Says why.
    NotRecorded(String),
}

/// The rows of one run not yet in the ledger.
#[derive(Debug)]
pub(crate) struct RunRecord {
    start: NewRun,
    start_recorded: bool,
    /// The count of the ledger's resets when the start was recorded
    /// ([`Surfaces::ledger_resets`]): once it moves, the ledger's file is a
    /// fresh one without this run, and the start and the attempts recorded
    /// go again with the end.
    resets_at_start: u64,
    /// Attempts not recorded yet, in order.
    attempts: Vec<Attempt>,
    /// Attempts recorded already, in order: recorded again with the end
    /// should the ledger lose them.
    recorded: Vec<Attempt>,
    /// Set once the ledger did not take an attempt: the rest wait for the
    /// run's end.
    held_back: bool,
    patience: Duration,
    /// How long its end is tried ([`RunRecord::end_patience`]).
    end_patience: Duration,
    /// Where the end goes when the ledger does not take it.
    slot: Option<EndSlot>,
    /// The unfinished runs of each job asked for, read with the start, until
    /// taken ([`RunRecord::take_unfinished`]).
    unfinished: Option<Vec<(String, Vec<RunRow>)>>,
}

impl RunRecord {
    /// Records `start`, trying again for up to `patience` while the
    /// session holds the lease; reads the unfinished runs of each of
    /// `mates` in the same transaction ([`RunRecord::take_unfinished`]).
    /// Each try after the first waits at most `within` for the ledger
    /// (then the bound the run's calls had is put back), when given.
    pub(crate) fn begin(
        start: NewRun,
        (mates, patience, within): (&[&str], Duration, Option<Duration>),
        state: &std::path::Path,
        session: &mut Session<'_>,
        surfaces: &Rc<RefCell<Surfaces>>,
    ) -> (Self, Begin) {
        let mut record = Self {
            start,
            start_recorded: false,
            resets_at_start: 0,
            attempts: Vec::new(),
            recorded: Vec::new(),
            held_back: false,
            patience,
            end_patience: patience,
            slot: None,
            unfinished: None,
        };
        // Room for the end first: a run that starts can always keep its
        // true end, whatever the ledger does later.
        match EndSlot::reserve(state, &record.start.run_id) {
            Ok(slot) => record.slot = Some(slot),
            Err(e) => {
                let why = format!("failed to reserve room for its end: {e}");
                return (record, Begin::NotRecorded(why));
            }
        }
        // What the queue held at an earlier run's end is no answer for
        // this one's.
        surfaces.borrow_mut().kept_queue().forget();
        let mut row = record.start.clone();
        let clock = surfaces.borrow().clock();
        let mut retry = record.retry(surfaces, "its start");
        // The runs to look at go with the first try only: a read that only
        // informs never keeps a start from being recorded. Each try stamps
        // the start afresh: nothing runs before it is recorded, so a run
        // whose start waited for the ledger starts when it was recorded.
        let mut tries = 0;
        let first = retry.insist(session, &mut |l| {
            tries += 1;
            if tries == 2 && within.is_some() {
                // The first try waited its full bound (and was said): the
                // next ones wait briefly each, so the start they stamp is
                // close to when it is recorded.
                l.bound_calls(within);
            }
            row.started = clock.wall();
            if tries == 1 {
                l.begin_run_then_unfinished(&row, mates)
                    .map(|(begun, runs)| (begun, Some(runs)))
            } else {
                l.begin_run(&row).map(|begun| (begun, None))
            }
        });
        if tries > 1 && within.is_some() {
            // The run's calls are bounded as before (`engine::run`).
            let renew_wait = session.lease().renew_wait();
            surfaces.borrow_mut().bound_ledger(Some(renew_wait));
        }
        let begin = match first {
            Some((Begun::Started, runs)) => {
                record.start_recorded = true;
                record.resets_at_start = surfaces.borrow().ledger_resets();
                record.start.started = row.started;
                let named = mates.iter().map(|&m| m.to_owned());
                record.unfinished = runs.map(|runs| named.zip(runs).collect());
                Begin::Started
            }
            Some((Begun::AlreadyDecided(d), _)) => Begin::Decided(Box::new(d)),
            Some((Begun::Missed(m), _)) => Begin::Missed(Box::new(m)),
            None => Begin::NotRecorded(format!(
                "the ledger did not record its start within {}",
                show_duration(patience)
            )),
        };
        if !matches!(begin, Begin::Started)
            && let Some(slot) = record.slot.take()
        {
            slot.remove();
        }
        (record, begin)
    }

    /// Tries the run's end for up to `patience` rather than the start's
    /// (never less): on a shared store, a lease that renews while the
    /// ledger does not answer (another writer holding its write lock) is a
    /// slow ledger, and a holder that let go then would leave its true end
    /// in a slot only this host reads, for another host to record the run
    /// `abandoned`.
    pub(crate) fn end_patience(&mut self, patience: Duration) {
        self.end_patience = self.patience.max(patience);
    }

    /// The unfinished runs of `job` read with the start, once; `None` when
    /// they were not, or were taken already.
    pub(crate) fn take_unfinished(&mut self, job: &str) -> Option<Vec<RunRow>> {
        let runs = self.unfinished.as_mut()?;
        let at = runs.iter().position(|(name, _)| name == job)?;
        Some(runs.swap_remove(at).1)
    }

    /// Keeps an attempt that ended, to be recorded by the next
    /// [`RunRecord::flush`] (before anything else starts or waits), or with
    /// the run's end, in its transaction.
    pub(crate) fn attempt(&mut self, a: Attempt) {
        self.attempts.push(a);
    }

    /// Records the attempts kept so far, now, in order. Once the ledger did
    /// not take one (or while it does not have the run), they all wait for
    /// the run's end, which tries them again.
    pub(crate) fn flush(&mut self, surfaces: &mut Surfaces) {
        if !self.start_recorded || self.held_back {
            return;
        }
        loop {
            // Never into a fresh file that lacks the run: looked at first
            // (an `lstat`), and the start recorded there again at once.
            if self.looked_lost(surfaces) && !self.begin_again(surfaces) {
                return;
            }
            let Some(a) = self.attempts.first() else {
                return;
            };
            if surfaces.ledger(|l| l.record_attempt(a)).is_none() {
                self.held_back = true;
                return;
            }
            self.recorded.push(self.attempts.remove(0));
        }
    }

    /// Whether the ledger's file, looked at now, is no longer the one the
    /// start was recorded in ([`RunRecord::lost`]).
    fn looked_lost(&mut self, surfaces: &mut Surfaces) -> bool {
        let _ = surfaces.ledger(|l| l.follow());
        self.lost(surfaces)
    }

    /// Records the start again in a fresh ledger, once, right away (a crash
    /// before the run's end then leaves the run to be found `abandoned`,
    /// not unrecorded); whether it is recorded. When not, the start and the
    /// attempts wait for the end, which tries them for its patience.
    fn begin_again(&mut self, surfaces: &mut Surfaces) -> bool {
        let row = self.start.clone();
        if let Some(Begun::Started) = surfaces.ledger(|l| l.begin_run(&row)) {
            self.start_recorded = true;
            self.held_back = false;
            self.resets_at_start = surfaces.ledger_resets();
            surfaces.note(&format!(
                "{} run={}: the ledger was lost while it ran: its start and attempts are \
                 recorded again",
                self.start.job, self.start.run_id
            ));
            return true;
        }
        false
    }

    /// Whether the ledger's file was left for a fresh one since the start
    /// was recorded; if so, the start and every attempt wait for the end,
    /// which records them again in the fresh one.
    fn lost(&mut self, surfaces: &Surfaces) -> bool {
        if !self.start_recorded || surfaces.ledger_resets() == self.resets_at_start {
            return false;
        }
        self.start_recorded = false;
        self.held_back = true;
        let mut again = std::mem::take(&mut self.recorded);
        again.append(&mut self.attempts);
        self.attempts = again;
        true
    }

    /// Records the run's end (and first whatever the ledger did not take
    /// yet: its start, its attempts), trying again for up to the patience
    /// while the lease is held; returns whether it is all recorded.
    ///
    /// With `queue`, the jobs whose queue the holder drains next, that
    /// queue is read in the end's transaction and kept for the holder's
    /// next look (`engine::kept_queue`).
    pub(crate) fn finish(
        mut self,
        end: &Finished,
        history_keep: u32,
        queue: Option<&[&str]>,
        session: &mut Session<'_>,
        surfaces: &Rc<RefCell<Surfaces>>,
    ) -> bool {
        // The file is looked at first: an end written into a fresh file
        // that lacks the run would count it there, and count it again with
        // the start recorded after.
        for _ in 0..2 {
            let lost = {
                let mut s = surfaces.borrow_mut();
                self.looked_lost(&mut s)
            };
            if lost {
                surfaces.borrow_mut().note(&format!(
                    "{} run={}: the ledger was lost while it ran: its start and attempts are \
                     recorded again with its end",
                    self.start.job, self.start.run_id
                ));
            }
            let resets = surfaces.borrow().ledger_resets();
            if !self.finish_once(end, history_keep, queue, session, surfaces) {
                return false;
            }
            if surfaces.borrow().ledger_resets() == resets {
                // All of it is in the file the run began in, or in the one
                // its start was recorded in again: the slot is done with.
                if let Some(slot) = self.slot.take() {
                    slot.remove();
                }
                return true;
            }
            // The file was lost in the instant between the look and the
            // end's own call: the end went to a fresh file; again, whole.
        }
        let attempts = std::mem::take(&mut self.recorded);
        self.gave_up(surfaces, end, &attempts)
    }

    /// [`RunRecord::finish`] once: whether it is all recorded.
    fn finish_once(
        &mut self,
        end: &Finished,
        history_keep: u32,
        queue: Option<&[&str]>,
        session: &mut Session<'_>,
        surfaces: &Rc<RefCell<Surfaces>>,
    ) -> bool {
        let mut retry = self.retry_for(surfaces, "its end", self.end_patience);
        if !self.start_recorded {
            let row = self.start.clone();
            match retry.insist(session, &mut |l| l.begin_run(&row)) {
                Some(Begun::Started) => {
                    self.start_recorded = true;
                    self.resets_at_start = surfaces.borrow().ledger_resets();
                }
                Some(Begun::AlreadyDecided(d)) => surfaces.borrow_mut().note(&format!(
                    "{} run={}: its start was not recorded: the ledger had decided occurrence \
                     {} otherwise ({}) meanwhile",
                    self.start.job,
                    self.start.run_id,
                    crate::engine::request::occurrence_text(Some(d.occurrence)),
                    d.decision.as_str()
                )),
                Some(Begun::Missed(m)) => surfaces.borrow_mut().note(&format!(
                    "{} run={}: its start was not recorded: the ledger had recorded its \
                     occurrence missed ({}) meanwhile",
                    self.start.job,
                    self.start.run_id,
                    m.reason.as_str()
                )),
                None => {
                    let attempts = std::mem::take(&mut self.attempts);
                    return self.gave_up(surfaces, end, &attempts);
                }
            }
        }
        // The attempts not recorded yet (the last one, usually) land with
        // the end, in one transaction.
        let attempts = std::mem::take(&mut self.attempts);
        // The queue is read with the first try only: a read that only
        // informs never keeps an end from being recorded.
        let clock = surfaces.borrow().clock();
        let mut tries = 0;
        // The run is over: its end starts nothing, lands once, and no other
        // host can read the slot it would be kept in, so it is tried for
        // the whole patience even once the lease is lost.
        retry.unleased = true;
        let drained: Vec<String> = queue
            .unwrap_or_default()
            .iter()
            .map(|&j| j.to_owned())
            .collect();
        session.foresee_release(&self.start.run_id, &drained);
        let recorded = retry.insist(session, &mut |l| {
            tries += 1;
            match queue {
                Some(jobs) if tries == 1 => l
                    .finish_run_then_next(&attempts, end, history_keep, jobs, clock.wall())
                    .map(|next| Some((jobs, next))),
                _ => l
                    .finish_run_after(&attempts, end, history_keep)
                    .map(|()| None),
            }
        });
        let Some(read) = recorded else {
            return self.gave_up(surfaces, end, &attempts);
        };
        if let Some((jobs, next)) = read {
            surfaces.borrow_mut().kept_queue().keep(jobs, next);
        }
        if retry.retried {
            surfaces.borrow_mut().note(&format!(
                "{} run={}: recorded in the ledger after it had failed",
                self.start.job, self.start.run_id
            ));
        }
        self.recorded.extend(attempts);
        true
    }

    /// Attempts at `what` of this run, for up to the patience from now.
    fn retry<'s>(&self, surfaces: &'s Rc<RefCell<Surfaces>>, what: &str) -> Retry<'s> {
        self.retry_for(surfaces, what, self.patience)
    }

    /// Attempts at `what` of this run, for up to `patience` from now.
    fn retry_for<'s>(
        &self,
        surfaces: &'s Rc<RefCell<Surfaces>>,
        what: &str,
        patience: Duration,
    ) -> Retry<'s> {
        Retry {
            surfaces,
            until: surfaces.borrow().clock().boot() + patience,
            retried: false,
            unleased: false,
            said: format!(
                "{} run={}: the ledger did not record {what}; trying again for up to {}",
                self.start.job,
                self.start.run_id,
                show_duration(patience)
            ),
        }
    }

    fn gave_up(
        &self,
        surfaces: &Rc<RefCell<Surfaces>>,
        end: &Finished,
        attempts: &[baton_store::ledger::Attempt],
    ) -> bool {
        let alerts = surfaces
            .borrow_mut()
            .take_unwritten_alerts(&self.start.run_id);
        let kept = match &self.slot {
            Some(slot) => match slot.keep(end, attempts, &alerts) {
                Ok(()) => "; its end is kept in its end slot, for the next run under the lock \
                           to record"
                    .to_owned(),
                Err(e) => format!("; nor could its end be kept: {e}"),
            },
            None => String::new(),
        };
        surfaces.borrow_mut().warn(&format!(
            "{}: run {} ended {} (exit {}), but the ledger did not record it within {}{kept}",
            self.start.job,
            self.start.run_id,
            end.verdict,
            end.exit_code,
            show_duration(self.end_patience)
        ));
        false
    }
}

/// Writes that must land by a time: each tried until the ledger takes it,
/// waiting between attempts while the session renews the lease.
struct Retry<'s> {
    surfaces: &'s Rc<RefCell<Surfaces>>,
    /// When the attempts stop (boot clock).
    until: Duration,
    /// Whether any write had to be tried again (said once, in the envelope).
    retried: bool,
    /// Whether the write goes on being tried once the lease is lost (a
    /// run's end, after the run).
    unleased: bool,
    said: String,
}

impl Retry<'_> {
    /// Writes with `f` until the ledger takes it or the time is up. A stop
    /// signal ends the attempts, and so does a lost lease unless the write
    /// is [`Retry::unleased`].
    fn insist<T>(
        &mut self,
        session: &mut Session<'_>,
        f: &mut dyn FnMut(&mut dyn Records) -> Result<T, baton_store::ledger::Error>,
    ) -> Option<T> {
        let clock = self.surfaces.borrow().clock();
        let mut delay = FIRST_DELAY;
        loop {
            if let Some(v) = self.surfaces.borrow_mut().ledger(|l| f(l)) {
                return Some(v);
            }
            let now = clock.boot();
            // A ledger that could not even be opened is not tried again.
            let gone = !self.surfaces.borrow().has_ledger();
            if gone
                || now >= self.until
                || (session.lost().is_some() && !self.unleased)
                || session.interrupted().is_some()
            {
                return None;
            }
            if !std::mem::replace(&mut self.retried, true) {
                self.surfaces.borrow_mut().warn(&self.said);
            }
            let wait = delay.min(self.until - now);
            match session.linger(wait) {
                Paused::Elapsed => {}
                Paused::LeaseLost if self.unleased => {}
                _ => return None,
            }
            delay = (delay * 2).min(LAST_DELAY);
        }
    }
}
