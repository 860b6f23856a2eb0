//! The `--json` documents of `tick` and `run`: what the command decided and
//! ran, built from what `baton_sched` returns and what the ledger recorded
//! of each run. Pure data: [`crate::sched_cmd`] prints them, and nothing
//! else goes to stdout while it does (a run's output stays in its log).
//! Instants are RFC 3339 in UTC, as the ledger and `history --json` write
//! them.

use baton_sched::config::Config;
use baton_sched::engine::run::{Start, Told, occurrence_text};
use baton_sched::ops::tick::{RunEnd, TickReport};
use baton_sched::views::history::{self, RunView};
use serde::Serialize;

use crate::exit::Exit;

/// `tick --json`.
#[derive(Debug, Serialize)]
pub(crate) struct Tick {
    /// False when the kill switch is off: nothing was looked at.
    pub enabled: bool,
    /// What was started, in the configuration's order.
    pub started: Vec<Started>,
    /// The missed ranges this tick recorded.
    pub missed: Vec<Missed>,
    /// Whether an alert was raised.
    pub alerted: bool,
    /// The exit code.
    pub exit: u8,
}

/// One start of a tick.
#[derive(Debug, Serialize)]
pub(crate) struct Started {
    /// The job.
    pub job: String,
    /// The occurrence (RFC 3339 UTC); null for a queue drained.
    pub occurrence: Option<String>,
    /// Whether it was the job's queue, not an occurrence of its own.
    pub queue: bool,
    /// The exit code of the process that ran it (0, 1 or 2, as `baton
    /// run`'s); null when it died of a signal or was not started.
    pub exit: Option<u8>,
    /// The signal that process died of, or null.
    pub signal: Option<i32>,
    /// The run the ledger recorded for the occurrence (as `history
    /// --json` shows it), or null (not started, started elsewhere, or a
    /// queue).
    pub run: Option<RunView>,
}

/// One missed range of a tick.
#[derive(Debug, Serialize)]
pub(crate) struct Missed {
    /// The job.
    pub job: String,
    /// Why: `paused`, `disabled`, `late`, `outside-window`, ….
    pub reason: &'static str,
    /// The first occurrence missed (RFC 3339 UTC).
    pub first: String,
    /// The last.
    pub last: String,
    /// How many.
    pub count: u64,
    /// Whether `count` is a lower bound.
    pub at_least: bool,
}

impl Tick {
    /// The document for `r`, each start's run read from the ledger at `now`.
    pub(crate) fn of(c: &Config, r: &TickReport, now: jiff::Timestamp) -> Tick {
        let started = r
            .due
            .starts
            .iter()
            .map(|(job, start)| {
                let end = r
                    .ended
                    .iter()
                    .find(|(n, _)| n == job)
                    .map_or(RunEnd::NotStarted, |(_, e)| *e);
                let run = match (start, end) {
                    (Start::Scheduled(at), RunEnd::Exited(_) | RunEnd::Signaled(_)) => {
                        history::find(c, job, None, Some(*at), now).ok().flatten()
                    }
                    _ => None,
                };
                Started {
                    job: job.clone(),
                    occurrence: start.occurrence().map(|at| occurrence_text(Some(at))),
                    queue: *start == Start::Queue,
                    exit: match end {
                        RunEnd::Exited(outcome) => Some(Exit::of_outcome(outcome).code()),
                        _ => None,
                    },
                    signal: match end {
                        RunEnd::Signaled(sig) => Some(sig),
                        _ => None,
                    },
                    run,
                }
            })
            .collect();
        let missed = r
            .due
            .missed
            .iter()
            .map(|(job, m)| Missed {
                job: job.clone(),
                reason: m.reason.as_str(),
                first: occurrence_text(Some(m.first)),
                last: occurrence_text(Some(m.last)),
                count: m.count,
                at_least: m.at_least,
            })
            .collect();
        Tick {
            enabled: r.enabled,
            started,
            missed,
            alerted: r.due.alerted,
            exit: Exit::of_outcome(r.outcome).code(),
        }
    }
}

/// `run --json`.
#[derive(Debug, Serialize)]
pub(crate) struct Run {
    /// The job.
    pub job: String,
    /// What the lock decided: `started`, `claimed`, `running`, `queued`,
    /// `coalesced`, `missed`, `decided` or `error`; `switched-off` (the
    /// kill switch) and `disabled` (`enabled = false`) when nothing was
    /// tried.
    pub outcome: String,
    /// What goes with the outcome: `run_id` and `fence` for `started`,
    /// `holder`, `reason` and `message` where they apply.
    #[serde(flatten)]
    pub detail: serde_json::Map<String, serde_json::Value>,
    /// The run, as `history --json` shows it, or null when none started.
    pub run: Option<RunView>,
    /// The exit code.
    pub exit: u8,
}

impl Run {
    /// The document for a `baton run` of `job` that told `told` (nothing
    /// when no lock was tried) and exits `exit`.
    pub(crate) fn of(
        c: &Config,
        job: &str,
        told: Option<&Told>,
        exit: Exit,
        now: jiff::Timestamp,
    ) -> Run {
        let mut detail = match told.map(serde_json::to_value) {
            Some(Ok(serde_json::Value::Object(m))) => m,
            _ => serde_json::Map::new(),
        };
        let outcome = match detail.remove("outcome") {
            Some(serde_json::Value::String(o)) => o,
            _ if !c.enabled() => "switched-off".to_owned(),
            _ if c.jobs.get(job).is_some_and(|j| !j.enabled.value) => "disabled".to_owned(),
            _ => "error".to_owned(),
        };
        let run = match told {
            Some(Told::Started { run_id, .. }) if !run_id.is_empty() => {
                history::find(c, job, Some(run_id), None, now)
                    .ok()
                    .flatten()
            }
            _ => None,
        };
        Run {
            job: job.to_owned(),
            outcome,
            detail,
            run,
            exit: exit.code(),
        }
    }
}
