//! The `--json` documents of `tick` and `run`: what the command decided and
//! ran, built from what `baton_sched` returns and what the ledger recorded
//! of each run. Pure data: [`crate::sched_cmd`] prints them, and nothing
//! else goes to stdout while it does (a run's output stays in its log).
//! Instants are RFC 3339 in UTC, as the ledger and `history --json` write
//! them.

use std::time::Duration;

use baton_lease::{Clock, SystemClock};
use baton_sched::config::Config;
use baton_sched::engine::run::{Start, Told, occurrence_text};
use baton_sched::ops::tick::{RunEnd, TickReport};
use baton_sched::outcome::Outcome;
use baton_sched::views::history::{self, Recorded, RunView};
use serde::Serialize;

use crate::exit::Exit;

/// `tick --json`.
#[derive(Debug, Serialize)]
pub(crate) struct Tick {
    /// False when the kill switch is off: nothing was looked at.
    pub enabled: bool,
    /// What was started, in the configuration's order: a scheduled
    /// occurrence only with the run the ledger recorded for it.
    pub started: Vec<Started>,
    /// The missed ranges this tick recorded, then each occurrence it was to
    /// start that the ledger recorded missed instead (a lock found busy).
    pub missed: Vec<Missed>,
    /// Each occurrence it was to start that started no run and was not
    /// missed, and why.
    pub skipped: Vec<Skipped>,
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
    /// --json` shows it); null only for a queue drained.
    pub run: Option<RunView>,
}

/// A start of a tick that started no run of its occurrence and that the
/// ledger did not record missed.
#[derive(Debug, Serialize)]
pub(crate) struct Skipped {
    /// The job.
    pub job: String,
    /// The occurrence (RFC 3339 UTC).
    pub occurrence: String,
    /// Why: the ledger's decision (`queued`, `coalesced`, `claimed`, or
    /// `started` by a run it no longer keeps), `decided` (the run recorded
    /// for it is another process's), `not-started` (nothing is
    /// recorded: the process that was to run it was not started, or ended
    /// before it could), or `unknown` (the ledger could not be read).
    pub reason: &'static str,
    /// As [`Started::exit`].
    pub exit: Option<u8>,
    /// As [`Started::signal`].
    pub signal: Option<i32>,
}

/// Where one start of a tick goes in its report.
#[derive(Debug)]
enum Filed {
    Started(Box<Started>),
    Missed(Missed),
    Skipped(Skipped),
}

/// Files the start of `job` for `start`, whose process `worker` (if one
/// was started) ended `end`, by what the ledger `recorded` of its
/// occurrence (`None`: the ledger could not be read). A scheduled
/// occurrence is `started` only with its own run: one the ledger recorded
/// missed is `missed`, with the ledger's reason; one whose run another
/// process started (another scheduler's tick that decided it first) is
/// `skipped` as `decided`; and any other is `skipped`. A queue drained has
/// no occurrence of its own, and no run to show.
fn file(
    job: &str,
    start: Start,
    (end, worker): (RunEnd, Option<u32>),
    recorded: Option<Recorded>,
) -> Filed {
    let exit = match end {
        RunEnd::Exited(outcome) => Some(Exit::of_outcome(outcome).code()),
        _ => None,
    };
    let signal = match end {
        RunEnd::Signaled(sig) => Some(sig),
        _ => None,
    };
    let started = |run| Started {
        job: job.to_owned(),
        occurrence: start.occurrence().map(|at| occurrence_text(Some(at))),
        queue: start == Start::Queue,
        exit,
        signal,
        run,
    };
    let Some(at) = start.occurrence() else {
        return Filed::Started(Box::new(started(None)));
    };
    let occurrence = occurrence_text(Some(at));
    let skipped = |reason| {
        Filed::Skipped(Skipped {
            job: job.to_owned(),
            occurrence: occurrence.clone(),
            reason,
            exit,
            signal,
        })
    };
    match recorded {
        Some(Recorded::Run(run)) if run.pid.is_some() && run.pid != worker => skipped("decided"),
        Some(Recorded::Run(run)) => Filed::Started(Box::new(started(Some(*run)))),
        Some(Recorded::Missed(reason)) => Filed::Missed(Missed {
            job: job.to_owned(),
            reason: reason.as_str(),
            first: occurrence.clone(),
            last: occurrence,
            count: 1,
            at_least: false,
        }),
        Some(Recorded::Decided(d)) => skipped(d.as_str()),
        Some(Recorded::Nothing) => skipped("not-started"),
        None => skipped("unknown"),
    }
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
        let mut missed: Vec<Missed> = r
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
        let (mut started, mut skipped) = (Vec::new(), Vec::new());
        for (job, start) in &r.due.starts {
            let end = r
                .ended
                .iter()
                .find(|(n, _)| n == job)
                .map_or(RunEnd::NotStarted, |(_, e)| *e);
            let worker = r.workers.iter().find(|(n, _)| n == job).map(|(_, p)| *p);
            let recorded = match start.occurrence() {
                Some(at) => settled(c, job, at, end, now),
                None => Some(Recorded::Nothing),
            };
            match file(job, *start, (end, worker), recorded) {
                Filed::Started(s) => started.push(*s),
                Filed::Missed(m) => missed.push(m),
                Filed::Skipped(s) => skipped.push(s),
            }
        }
        Tick {
            enabled: r.enabled,
            started,
            missed,
            skipped,
            alerted: r.due.alerted,
            exit: Exit::of_outcome(r.outcome).code(),
        }
    }
}

/// How long a start that another process claimed first is waited for.
const SETTLE: Duration = Duration::from_secs(3);

/// What the ledger recorded of `job`'s occurrence `at`, whose worker ended
/// `end` (`None`: the ledger could not be read). A worker that ended well
/// with nothing recorded found the occurrence claimed by another process
/// (another tick's worker) whose start record may not be committed yet:
/// that record is waited for, a bounded moment, so that the occurrence is
/// said decided elsewhere, not "not started".
fn settled(c: &Config, job: &str, at: i64, end: RunEnd, now: jiff::Timestamp) -> Option<Recorded> {
    let clock = SystemClock;
    let until = clock.boot() + SETTLE;
    loop {
        let recorded = history::occurrence(c, job, at, now).ok();
        let pending =
            end == RunEnd::Exited(Outcome::Done) && matches!(recorded, Some(Recorded::Nothing));
        if !pending || clock.boot() >= until {
            return recorded;
        }
        clock.sleep(Duration::from_millis(50));
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
        let found = match told {
            Some(Told::Started { run_id, .. }) if !run_id.is_empty() => {
                Some(history::find(c, job, Some(run_id), None, now))
            }
            _ => None,
        };
        let run = found
            .as_ref()
            .and_then(|f| f.as_ref().ok().cloned().flatten());
        let mut outcome = outcome;
        if exit == Exit::Usage && matches!(found, Some(Ok(None))) {
            // The lease was taken, then the start could not be recorded (a
            // full disk, a ledger that did not answer): nothing ran, and the
            // ledger knows no such run. Said as the error it is, never as a
            // start with a run id no history holds.
            outcome = "error".to_owned();
            detail.clear();
            detail.insert(
                "message".to_owned(),
                "the run did not start: its start could not be recorded (stderr says why)".into(),
            );
        }
        Run {
            job: job.to_owned(),
            outcome,
            detail,
            run,
            exit: exit.code(),
        }
    }
}

#[cfg(test)]
mod tests {
    use baton_sched::engine::run::Start;
    use baton_sched::ops::tick::RunEnd;
    use baton_sched::outcome::Outcome;
    use baton_sched::views::history::{Recorded, RunView};
    use baton_store::words::{Decision, MissReason};

    use super::{Filed, file};

    const AT: i64 = 1_796_577_654;

    /// A scheduled occurrence is said started only with the run the ledger
    /// recorded for it; whatever else became of it is said as that.
    #[test]
    fn a_start_without_a_run_is_never_said_started() {
        let scheduled = Start::Scheduled(AT);
        let ended = RunEnd::Exited(Outcome::Failed);
        match file(
            "j",
            scheduled,
            (ended, Some(7)),
            Some(Recorded::Missed(MissReason::Busy)),
        ) {
            Filed::Missed(m) => {
                assert_eq!(m.reason, "busy");
                assert_eq!((m.first.as_str(), m.count), (m.last.as_str(), 1));
            }
            other => panic!("{other:?}"),
        }
        let cases = [
            (ended, Some(Recorded::Nothing), "not-started"),
            (RunEnd::NotStarted, Some(Recorded::Nothing), "not-started"),
            (RunEnd::Signaled(9), Some(Recorded::Nothing), "not-started"),
            (ended, Some(Recorded::Decided(Decision::Claimed)), "claimed"),
            (ended, Some(Recorded::Decided(Decision::Queued)), "queued"),
            (ended, None, "unknown"),
        ];
        for (end, recorded, reason) in cases {
            match file("j", scheduled, (end, Some(7)), recorded) {
                Filed::Skipped(s) => assert_eq!(s.reason, reason),
                other => panic!("{reason}: {other:?}"),
            }
        }
        // A queue drained has no occurrence, and no run of its own.
        match file("j", Start::Queue, (ended, Some(7)), Some(Recorded::Nothing)) {
            Filed::Started(s) => assert!(s.queue && s.run.is_none()),
            other => panic!("{other:?}"),
        }
    }

    /// A run of the occurrence that another process started (another
    /// tick's worker, which decided it first) is not this tick's start.
    #[test]
    fn another_processs_run_of_the_occurrence_is_said_decided() {
        let run = |pid| {
            Some(Recorded::Run(Box::new(RunView {
                run_id: "r".into(),
                job: "j".into(),
                occurrence: "2026-12-01T00:00:00Z".into(),
                manual: false,
                fence: Some(1),
                host: Some("h".into()),
                pid: Some(pid),
                started: "2026-12-01T00:00:01Z".into(),
                finished: None,
                duration_ms: None,
                verdict: None,
                exit_code: None,
                attempts: Vec::new(),
            })))
        };
        let ended = RunEnd::Exited(Outcome::Done);
        let scheduled = Start::Scheduled(AT);
        match file("j", scheduled, (ended, Some(7)), run(7)) {
            Filed::Started(s) => assert_eq!(s.run.map(|r| r.pid), Some(Some(7))),
            other => panic!("{other:?}"),
        }
        for worker in [Some(8), None] {
            match file("j", scheduled, (ended, worker), run(7)) {
                Filed::Skipped(s) => assert_eq!(s.reason, "decided"),
                other => panic!("{worker:?}: {other:?}"),
            }
        }
    }
}
