//! `overlap = "replace"`: an occurrence (or a run by hand, or a backfill)
//! that finds its job's run in flight asks that run to stop, and starts
//! once nothing of it runs (`DESIGN.md`, "Replace").
//!
//! Both sides meet in the ledger, never in a signal: the contender records
//! a request naming the run the lock's holder names and its own job
//! ([`ask`]); the holder's supervisor, for a run of a job whose policy is
//! `replace`, reads its run's request on a thread of its own ([`watch`],
//! every [`POLL`] at most) and hands it to the runner
//! ([`baton_runner::StopAsk`]), which stops the step's whole tree exactly as
//! a lost lease does, keeping the lease. The holder then drains the queue
//! as it always does, so the occurrence that replaced the run starts under
//! the same lease, after the tree is gone.
//!
//! What this module must never do: signal a process (only the runner
//! stops a tree), take or release a lease, or ask a run of another job
//! sharing the lock to stop ([`mate_runs`] tells those apart; a request
//! names its job, and a run of another job never reads it). A watcher
//! that cannot read the ledger leaves the run running: the occurrence then
//! waits as `queue` would, and nothing ever runs beside it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use baton_runner::StopAsk;
use baton_store::ledger::Replacement;

use crate::config::{Config, Job, Overlap};
use crate::engine::request::{lock_mates, occurrence_text};
use crate::engine::surfaces::Surfaces;

/// The longest a holder takes to notice a request, besides its ledger's
/// answer: at most the lease's renewal interval (a third of its TTL), and
/// at most this.
pub const POLL: Duration = Duration::from_secs(1);

/// Whether `run_id`, which the lock's holder names, is a run of a job that
/// shares `job`'s lock and is not `job`: such a run is never asked to stop.
/// `None` when the ledger cannot say (nothing is asked then).
pub(crate) fn mate_runs(
    config: &Config,
    job: &Job,
    run_id: &str,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Option<bool> {
    let mut s = surfaces.borrow_mut();
    for mate in lock_mates(config, job) {
        if mate == job.name {
            continue;
        }
        let running = s.ledger(|l| l.unfinished(mate))?;
        if running.iter().any(|r| r.run_id == run_id) {
            return Some(true);
        }
    }
    Some(false)
}

/// Asks the run `holder_run` of `job` to stop for `by` (an occurrence, or
/// `None` for a run by hand or a backfill), unless it is a run of another
/// job sharing the lock; returns whether the run is asked (by this call or
/// an earlier one). Said in the envelope.
pub(crate) fn ask(
    config: &Config,
    job: &Job,
    holder_run: &str,
    by: Option<i64>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> bool {
    asked(config, job, holder_run, by, surfaces).is_some()
}

/// As [`ask`]: `None` when the run is not asked; else the request this
/// call recorded (`None` inside when another had asked already), which
/// the asker takes back should it give up ([`withdraw`]).
fn asked(
    config: &Config,
    job: &Job,
    holder_run: &str,
    by: Option<i64>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Option<Option<Replacement>> {
    if job.policy.overlap.value != Overlap::Replace
        || mate_runs(config, job, holder_run, surfaces) != Some(false)
    {
        return None;
    }
    let mut s = surfaces.borrow_mut();
    let asked = Replacement {
        run_id: holder_run.to_owned(),
        job: job.name.clone(),
        by,
        asked: s.now(),
    };
    let first = s.ledger(|l| l.ask_replace(&asked))?;
    fail::fail_point!("replace-ask");
    if first {
        s.note(&format!(
            "{} occurrence={} asked run {holder_run} to stop for it (overlap = \"replace\")",
            job.name,
            occurrence_text(by)
        ));
    }
    Some(first.then_some(asked))
}

/// Takes back `mine`, the request a run by hand recorded and no longer
/// waits for (it gave up, or was refused for another reason): left, the
/// run it names would stop for nobody when its supervisor next reads it.
fn withdraw(r: &Replacement, job: &Job, surfaces: &Rc<RefCell<Surfaces>>) {
    let mut s = surfaces.borrow_mut();
    if s.ledger(|l| l.withdraw_replace(r)) == Some(true) {
        s.note(&format!(
            "{} run by hand no longer waits: its request that run {} stop is taken back",
            job.name, r.run_id
        ));
    }
}

/// A watcher of one run's request: dropping it ends its thread (at its
/// next look, or once a ledger call under way returns).
pub(crate) struct Watch {
    _stop: mpsc::Sender<()>,
    /// The request found, once found.
    found: Arc<Mutex<Option<Replacement>>>,
}

impl Watch {
    /// Whether the run was asked to stop by a run by hand or a backfill (a
    /// request naming no occurrence), which waits for the lock rather than
    /// queue behind it. (Read from the request found: a run's end prunes
    /// its request from the ledger.)
    pub(crate) fn by_hand(&self) -> bool {
        self.found
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|r| r.by.is_none())
    }
}

/// For a run of a job whose policy is `replace`: a thread that looks in the
/// ledger, every [`POLL`] (or a third of the job's TTL, when shorter), for a
/// request that run `run_id` stop, and sets the returned [`StopAsk`] when
/// it finds one. The thread opens a ledger connection of its own, so the
/// supervising thread never waits on the store for it. `None` for any other
/// policy, and when the thread cannot be started (said): the run is then
/// not replaced, and an occurrence that asks waits as with `queue`.
pub(crate) fn watch(
    config: &Config,
    job: &Job,
    run_id: &str,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Option<(Watch, StopAsk)> {
    if job.policy.overlap.value != Overlap::Replace || run_id.is_empty() {
        return None;
    }
    let now = surfaces.borrow().now();
    let every = POLL.min(job.policy.ttl.value / 3);
    let (stop, stopped) = mpsc::channel::<()>();
    let ask = StopAsk::new();
    let asked = ask.clone();
    let found = Arc::new(Mutex::new(None));
    let found_here = Arc::clone(&found);
    let (run, name, config) = (run_id.to_owned(), job.name.clone(), config.clone());
    let spawned = std::thread::Builder::new()
        .name("baton-replace".into())
        .spawn(move || {
            baton_runner::signals::block_in_this_thread();
            let mut records = None;
            let mut said = false;
            loop {
                // A ledger that cannot be opened or read is tried again at
                // the next look: until one answers, the run goes on, as it
                // would unasked.
                if records.is_none() {
                    match crate::store::open(&config)
                        .map_err(|e| e.to_string())
                        .and_then(|store| store.records(now).map_err(|e| e.to_string()))
                    {
                        Ok(r) => records = Some(r),
                        Err(e) if !said => {
                            said = true;
                            crate::say::warn(format_args!(
                                "{name}: run {run} cannot be told to stop for a later run \
                                 until the ledger opens: {e}"
                            ));
                        }
                        Err(_) => {}
                    }
                }
                if let Some(Ok(Some(r))) = records.as_mut().map(|l| l.replacement(&run, &name)) {
                    let why = why(&r);
                    *found_here.lock().unwrap_or_else(PoisonError::into_inner) = Some(r);
                    asked.ask(why);
                    return;
                }
                match stopped.recv_timeout(every) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    match spawned {
        Ok(_) => Some((Watch { _stop: stop, found }, ask)),
        Err(e) => {
            surfaces.borrow_mut().warn_of(
                &job.name,
                &format!(
                    "{}: run {run_id} cannot be replaced: failed to start a thread to watch \
                     for a request: {e}",
                    job.name
                ),
            );
            None
        }
    }
}

/// What the runner says of a request, for people.
fn why(r: &Replacement) -> String {
    match r.by {
        Some(_) => format!(
            "occurrence {} of {} replaces it (overlap = \"replace\")",
            occurrence_text(r.by),
            r.job
        ),
        None => format!(
            "a run of {} by hand (or a backfill) replaces it (overlap = \"replace\")",
            r.job
        ),
    }
}

/// How long a run by hand waits for the run it asked to stop: the job's
/// TTL (the holder notices within a renewal interval), the longest kill
/// grace of its steps and checks (the stop's first signal to its kill),
/// and 5 s for the kill rounds and the release.
fn patience(job: &Job) -> Duration {
    let grace = job
        .steps
        .iter()
        .chain(&job.checks)
        .map(|s| s.kill_grace.value)
        .max()
        .unwrap_or_default();
    job.policy.ttl.value + grace + Duration::from_secs(5)
}

/// A run by hand with `overlap = "replace"` that found the lock `first`:
/// while a live run of its job holds it, asks that run to stop and tries
/// the lock again every 200 ms, until it is taken, refused for another
/// reason or by another job's run, or [`patience`] has passed since the
/// last run was asked (then the last refusal stands). Each new run of the
/// job found holding it (one the holder drained from the queue) is asked
/// in turn. Before it asks anything, the run's end slot is reserved in
/// `spare`, which the caller keeps until the run reserves its own.
pub(crate) fn wait_replacing(
    config: &Config,
    job: &Job,
    first: Result<crate::store::Taken, crate::store::Error>,
    acquire: &mut dyn FnMut() -> Result<crate::store::Taken, crate::store::Error>,
    spare: &mut Option<crate::state::end_slot::Spare>,
    surfaces: &Rc<RefCell<Surfaces>>,
) -> Result<crate::store::Taken, crate::store::Error> {
    use crate::store::Taken;
    use baton_store::words::MissReason;
    if job.policy.overlap.value != Overlap::Replace {
        return first;
    }
    let clock = surfaces.borrow().clock();
    let mut o = first;
    let mut asked: Option<String> = None;
    // The requests this run recorded and has not seen answered: taken back
    // when it stops waiting without the lock.
    let mut mine: Vec<Replacement> = Vec::new();
    let give_up = |o: Result<Taken, crate::store::Error>, mine: Vec<Replacement>| {
        if !matches!(o, Ok(Taken::Acquired(_))) {
            for r in &mine {
                withdraw(r, job, surfaces);
            }
        }
        o
    };
    let mut deadline = Duration::ZERO;
    loop {
        let run = match &o {
            Ok(Taken::Refused(r)) if r.reason == MissReason::Busy => {
                r.holder.as_ref().and_then(|h| h.run()).map(str::to_owned)
            }
            _ => None,
        };
        let Some(run) = run else {
            return give_up(o, mine);
        };
        if asked.as_deref() != Some(run.as_str()) {
            // A run that could not record its end would not start: it asks
            // no live run to stop for it before its end has room.
            if spare.is_none() {
                let state = &config.settings.state_dir.value;
                match crate::state::end_slot::EndSlot::spare(state) {
                    Ok(s) => *spare = Some(s),
                    Err(e) => {
                        surfaces.borrow_mut().warn(&format!(
                            "{}: run {run} is not asked to stop: this run could not reserve \
                             room for its end: {e}",
                            job.name
                        ));
                        return give_up(o, mine);
                    }
                }
            }
            match self::asked(config, job, &run, None, surfaces) {
                None => return give_up(o, mine),
                Some(recorded) => mine.extend(recorded),
            }
            surfaces.borrow_mut().note(&format!(
                "{} run by hand waits for run {run} to stop (overlap = \"replace\")",
                job.name
            ));
            asked = Some(run);
            deadline = clock.boot().saturating_add(patience(job));
        } else if clock.boot() >= deadline {
            return give_up(o, mine);
        }
        drop(o);
        clock.sleep(Duration::from_millis(200));
        o = acquire();
    }
}
