//! `baton backfill` of a job a service runs (declared in the ledger by
//! an embedded scheduler): the command line cannot run the service's code,
//! so it asks the service to. The occurrences the plan would run are
//! queued in the ledger for that job ([`Records::request_backfill`]); the
//! service's scheduler, which looks at the queue every few seconds, runs
//! them oldest first under the job's lock; this command waits for each to
//! end and reports it as a backfill of a file's job does.
//!
//! The ledger's decision of each occurrence is the guard, as for every
//! queued occurrence: one the service (or anything else) started first is
//! never started again. This command only plans, queues and reads: it
//! never takes the job's lease and never runs a step. Interrupted, it
//! leaves what it queued to the service.

use std::time::Duration;

use baton_lease::Clock;
use baton_sched::config::{Config, Job, Source};
use baton_sched::engine::surfaces::RunStart;
use baton_sched::ops::backfill::Planned;
use baton_sched::outcome::Outcome;
use baton_store::ledger::{Decision, Records, Requested};
use jiff::Timestamp;

use crate::backfill_report::{Summary, human_at, render_summary, summary};
use crate::exit::Exit;

/// How long the wait goes on while nothing the backfill queued has
/// started or ended: the service is then taken not to be running (what
/// was queued stays queued for it).
pub(crate) const STALL: Duration = Duration::from_secs(60);

/// How often the ledger is read while waiting.
const POLL: Duration = Duration::from_millis(250);

/// Who runs `job`: the service that declared it, for people; `None` for
/// a job of the configuration file.
pub(crate) fn service(job: &Job) -> Option<&str> {
    match &job.source {
        Source::Declared(by) => Some(by),
        _ => None,
    }
}

/// What the wait saw of one queued occurrence.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Seen {
    /// It waits in the queue.
    Waiting,
    /// Its run started and has not ended.
    Running,
    /// Its run ended, or the ledger decided it otherwise.
    Over,
}

/// Queues the occurrences `plan` would run for the service running `job`,
/// waits for their runs and reports them (as `--json` says); the exit.
pub(crate) fn queue_and_wait(
    c: &Config,
    job: &Job,
    range: (Timestamp, Timestamp),
    occ: &[i64],
    mut before: Vec<Planned>,
    clock: &dyn Clock,
    json: bool,
) -> Exit {
    let by = service(job).unwrap_or("a service");
    let name = job.name.as_str();
    let wanted: Vec<i64> = occ
        .iter()
        .zip(&before)
        .filter(|(_, p)| p.action == "run")
        .map(|(&at, _)| at)
        .collect();
    // Waiting in the queue already (an earlier backfill interrupted, or the
    // schedule's queue): waited for too, not counted as run.
    let mut queued: Vec<i64> = occ
        .iter()
        .zip(&before)
        .filter(|(_, p)| p.action == "queued")
        .map(|(&at, _)| at)
        .collect();
    for p in before.iter_mut().filter(|p| p.action == "queued") {
        // Reported as this backfill's: ran, or not run.
        p.action = "run".to_owned();
    }
    let mut ledger = match baton_sched::store::existing_records(c, clock.wall()) {
        Some(Ok(l)) => l,
        Some(Err(e)) => {
            say!("baton backfill: {name}: {e}; nothing was queued");
            return Exit::of_outcome(baton_sched::engine::run::ledger_failed(c, &e));
        }
        None => {
            say!("baton backfill: {name}: the store has no ledger; nothing was queued");
            return Exit::of_outcome(Outcome::Unable);
        }
    };
    let waiting_before = queued.len();
    if !wanted.is_empty() {
        let asked = ledger.request_backfill(name, &wanted, &crate::sched_cmd::who(), clock.wall());
        let asked = match asked {
            Ok(a) => a,
            Err(e) => {
                say!("baton backfill: {name}: the occurrences could not be queued: {e}");
                return Exit::of_outcome(baton_sched::engine::run::ledger_failed(c, &e));
            }
        };
        for (&at, answer) in wanted.iter().zip(asked) {
            match answer {
                Requested::Queued => queued.push(at),
                Requested::Decided(d) if d.decision == Decision::Queued => queued.push(at),
                // Decided since the plan was read: reported as the ledger
                // says, as if planned so.
                Requested::Decided(d) => {
                    if let Some(p) = occ
                        .iter()
                        .position(|&o| o == at)
                        .and_then(|i| before.get_mut(i))
                    {
                        p.action = d.decision.as_str().to_owned();
                        p.run_id = d.run_id;
                    }
                }
            }
        }
    }
    queued.sort_unstable();
    if !json {
        let fresh = queued.len() - waiting_before;
        if queued.is_empty() {
            outln!("{name}: nothing to queue for {by}");
        } else {
            outln!(
                "{name}: {fresh} occurrence(s) queued for {by}, which runs the job{}; waiting for \
                 them (interrupted, they stay queued for it)",
                if waiting_before > 0 {
                    format!(", and {waiting_before} queued before")
                } else {
                    String::new()
                }
            );
        }
    }
    let (ran, stalled) = wait(&mut *ledger, job, &queued, clock, json);
    let mut s = summary(c, job, range, occ, &before, &ran, clock.wall());
    let mut outcome = if s.not_run > 0 || s.ok < s.ran {
        Outcome::Failed
    } else {
        Outcome::Done
    };
    if let Some(left) = stalled {
        say!(
            "baton backfill: {name}: {left} occurrence(s) still queued: {by} took none of them in \
             {}s; they stay queued and run when it looks at its queue",
            STALL.as_secs()
        );
        outcome = Outcome::Failed;
    }
    let exit = Exit::of_outcome(outcome);
    s.exit = exit.code();
    report(&s, job, json, exit)
}

/// Prints the summary; the exit.
fn report(s: &Summary, job: &Job, json: bool, exit: Exit) -> Exit {
    if json {
        return match crate::sched_cmd::json_out("backfill", s) {
            Exit::Ok => exit,
            other => other,
        };
    }
    out!("{}", render_summary(s, &job.timezone.value.tz));
    exit
}

/// Waits until every one of `queued` has ended, or nothing moved for
/// [`STALL`]; the runs that started, and how many were left waiting when
/// the wait gave up.
fn wait(
    ledger: &mut dyn Records,
    job: &Job,
    queued: &[i64],
    clock: &dyn Clock,
    json: bool,
) -> (Vec<RunStart>, Option<usize>) {
    let tz = &job.timezone.value.tz;
    let name = job.name.as_str();
    let mut seen = vec![Seen::Waiting; queued.len()];
    let mut ran: Vec<RunStart> = Vec::new();
    let mut moved = clock.boot();
    loop {
        for (i, &at) in queued.iter().enumerate() {
            if seen[i] == Seen::Over {
                continue;
            }
            let now = match look(ledger, name, at) {
                Look::Waiting => Seen::Waiting,
                Look::Other(word) => {
                    if !json {
                        outln!("{name}: occurrence {} not run: {word}", human_at(at, tz));
                    }
                    Seen::Over
                }
                Look::Started {
                    run_id,
                    fence,
                    ended,
                } => {
                    if !ran.iter().any(|r| r.run_id == run_id) {
                        if !json {
                            outln!(
                                "{name}: occurrence {} started (run {run_id})",
                                human_at(at, tz)
                            );
                        }
                        ran.push(RunStart {
                            job: name.to_owned(),
                            run_id,
                            occurrence: Some(at),
                            fence,
                        });
                    }
                    if ended { Seen::Over } else { Seen::Running }
                }
            };
            if now != seen[i] {
                seen[i] = now;
                moved = clock.boot();
            }
        }
        let waiting = seen.iter().filter(|s| **s == Seen::Waiting).count();
        if seen.iter().all(|s| *s == Seen::Over) {
            return (ran, None);
        }
        let running = seen.contains(&Seen::Running);
        if !running && clock.boot().saturating_sub(moved) >= STALL {
            return (ran, Some(waiting));
        }
        clock.sleep(POLL);
    }
}

/// What the ledger says of one queued occurrence now.
enum Look {
    /// Still queued (or the ledger could not be read this time).
    Waiting,
    /// A run started it; `ended` once that run's end is recorded.
    Started {
        run_id: String,
        fence: u64,
        ended: bool,
    },
    /// Decided otherwise (the word, for people).
    Other(String),
}

fn look(ledger: &mut dyn Records, job: &str, at: i64) -> Look {
    let d = match ledger.decision(job, at) {
        Ok(Some(d)) => d,
        Ok(None) => return Look::Other("its queued record is gone".into()),
        Err(_) => return Look::Waiting,
    };
    match (d.decision, d.run_id) {
        (Decision::Queued, _) => Look::Waiting,
        (Decision::Started, Some(run_id)) => {
            // Ended once the ledger no longer calls it running (however
            // many runs came after it, and even once pruned).
            let Ok(running) = ledger.unfinished(job) else {
                return Look::Waiting;
            };
            let row = running.into_iter().find(|r| r.run_id == run_id);
            Look::Started {
                fence: row.as_ref().and_then(|r| r.fence).unwrap_or(0),
                ended: row.is_none(),
                run_id,
            }
        }
        (other, _) => Look::Other(format!("the ledger says {}", other.as_str())),
    }
}
