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
//! - **The start** decides whether the run may go on. With lock files a
//!   start the ledger did not take is written again at the run's end, and
//!   the run goes on meanwhile: the lock's claim keeps its occurrence from
//!   running twice, and a tick never calls it missed
//!   (`crate::plan::Known::claimed`). In the shared store every host
//!   decides by the ledger, so the run does not start until its start is
//!   recorded; if it cannot be within the TTL, the occurrence is recorded
//!   missed (`ledger-unavailable`) and alerted, and a claim never stands
//!   for a run that did not start (the next process that meets the claim
//!   records the miss when this one could not).
//! - **Attempts and the end** are written again before the lease is let
//!   go, so a run that ended well is never left `running` to be recorded
//!   `abandoned` later. Should the lease be lost meanwhile, they are still
//!   tried until the TTL has passed: the verdict is the run's, whoever holds
//!   the lock.
//!
//! Writing the same row again is safe: a start recorded already under the
//! run's own id is its start, an attempt is keyed by run and sequence, an
//! end lands once. This module never takes or releases the lease, and
//! never waits longer than the TTL (plus the ledger's own deadline) in all.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use baton_ledger::{Attempt, Begun, DecisionRow, Finished, NewRun, Records};
use baton_runner::{Paused, Session};

use crate::surfaces::Surfaces;
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
    /// Not recorded, and the run goes on (lock files): its start is written
    /// again at its end.
    Unrecorded,
    /// Not recorded within the TTL, in the shared store: the run must not
    /// start. Says why.
    NotRecorded(String),
}

/// The rows of one run not yet in the ledger.
#[derive(Debug)]
pub(crate) struct RunRecord {
    start: NewRun,
    start_recorded: bool,
    attempts: Vec<Attempt>,
    patience: Duration,
}

impl RunRecord {
    /// Records `start`. In the shared store (`shared`), a start the ledger
    /// does not take is tried again for up to `patience` while the session
    /// holds the lease; with lock files it is left for [`RunRecord::finish`].
    pub(crate) fn begin(
        start: NewRun,
        shared: bool,
        patience: Duration,
        session: &mut Session<'_>,
        surfaces: &Rc<RefCell<Surfaces>>,
    ) -> (Self, Begin) {
        let mut record = Self {
            start,
            start_recorded: false,
            attempts: Vec::new(),
            patience,
        };
        let row = record.start.clone();
        let mut begin = |l: &mut dyn Records| l.begin_run(&row);
        let mut first = surfaces.borrow_mut().ledger(|l| begin(l));
        if first.is_none() && shared {
            record.note(surfaces, "its start");
            let until = surfaces.borrow().clock().boot() + patience;
            first = insist(session, surfaces, until, true, &mut begin);
        }
        let begin = match first {
            Some(Begun::Started) => {
                record.start_recorded = true;
                Begin::Started
            }
            Some(Begun::AlreadyDecided(d)) => Begin::Decided(Box::new(d)),
            None if shared => Begin::NotRecorded(format!(
                "the store's ledger did not record its start within {}",
                show_duration(patience)
            )),
            None => Begin::Unrecorded,
        };
        (record, begin)
    }

    /// Records one attempt now, or, when the ledger does not take it (or
    /// does not yet have the run), at the run's end.
    pub(crate) fn attempt(&mut self, a: Attempt, surfaces: &mut Surfaces) {
        if self.start_recorded
            && self.attempts.is_empty()
            && surfaces.ledger(|l| l.record_attempt(&a)).is_some()
        {
            return;
        }
        self.attempts.push(a);
    }

    /// Records the run's end (and first whatever the ledger did not take
    /// yet: its start, its attempts), trying again for up to the patience;
    /// returns whether it is all recorded.
    pub(crate) fn finish(
        mut self,
        end: &Finished,
        history_keep: u32,
        session: &mut Session<'_>,
        surfaces: &Rc<RefCell<Surfaces>>,
    ) -> bool {
        if self.start_recorded
            && self.attempts.is_empty()
            && surfaces
                .borrow_mut()
                .ledger(|l| l.finish_run(end, history_keep))
                .is_some()
        {
            return true;
        }
        self.note(surfaces, "its end");
        let until = surfaces.borrow().clock().boot() + self.patience;
        if !self.start_recorded {
            let row = self.start.clone();
            match insist(session, surfaces, until, false, &mut |l| l.begin_run(&row)) {
                Some(Begun::Started) => self.start_recorded = true,
                Some(Begun::AlreadyDecided(d)) => surfaces.borrow_mut().note(&format!(
                    "{} run={}: its start was not recorded: the ledger had decided occurrence \
                     {} otherwise ({}) meanwhile",
                    self.start.job,
                    self.start.run_id,
                    crate::run::occurrence_text(Some(d.occurrence)),
                    d.decision.as_str()
                )),
                None => return self.gave_up(surfaces, end),
            }
        }
        for a in std::mem::take(&mut self.attempts) {
            if insist(session, surfaces, until, false, &mut |l| {
                l.record_attempt(&a)
            })
            .is_none()
            {
                return self.gave_up(surfaces, end);
            }
        }
        if insist(session, surfaces, until, false, &mut |l| {
            l.finish_run(end, history_keep)
        })
        .is_none()
        {
            return self.gave_up(surfaces, end);
        }
        surfaces.borrow_mut().note(&format!(
            "{} run={}: recorded in the ledger after it had failed",
            self.start.job, self.start.run_id
        ));
        true
    }

    fn note(&self, surfaces: &Rc<RefCell<Surfaces>>, what: &str) {
        surfaces.borrow_mut().note(&format!(
            "{} run={}: the ledger did not record {what}; trying again for up to {}",
            self.start.job,
            self.start.run_id,
            show_duration(self.patience)
        ));
    }

    fn gave_up(&self, surfaces: &Rc<RefCell<Surfaces>>, end: &Finished) -> bool {
        surfaces.borrow_mut().warn(&format!(
            "{}: run {} ended {} (exit {}), but the ledger did not record it within {}",
            self.start.job,
            self.start.run_id,
            end.verdict,
            end.exit_code,
            show_duration(self.patience)
        ));
        false
    }
}

/// Writes with `f` until the ledger takes it or `until` (boot clock) has
/// passed, waiting between attempts (renewing the lease while the session
/// holds it). When `needs_lease`, a lost lease or a stop signal ends the
/// attempts at once.
fn insist<T>(
    session: &mut Session<'_>,
    surfaces: &Rc<RefCell<Surfaces>>,
    until: Duration,
    needs_lease: bool,
    f: &mut dyn FnMut(&mut dyn Records) -> Result<T, baton_ledger::Error>,
) -> Option<T> {
    let clock = surfaces.borrow().clock();
    let mut delay = FIRST_DELAY;
    loop {
        let now = clock.boot();
        if now >= until {
            return None;
        }
        let wait = delay.min(until - now);
        match session.pause(wait) {
            Paused::Elapsed => {}
            Paused::LeaseLost | Paused::Interrupted(_) if needs_lease => return None,
            // Nothing more runs; the verdict is still the run's to record.
            Paused::LeaseLost | Paused::Interrupted(_) => clock.sleep(wait),
        }
        delay = (delay * 2).min(LAST_DELAY);
        if let Some(v) = surfaces.borrow_mut().ledger(|l| f(l)) {
            return Some(v);
        }
    }
}
