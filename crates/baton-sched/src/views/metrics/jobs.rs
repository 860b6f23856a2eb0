//! The per-job families: every series of a job, named `baton_job_…` and
//! labelled `baton_job` (never `job`, which Prometheus sets on scrape),
//! built from [`JobFigures`] without reading anything.
//!
//! Every job has, from its first scrape on, a sample at 0 for every verdict
//! ([`RunVerdict::ALL`]), every miss reason ([`MissReason::ALL`]), every
//! skip reason ([`SkipReason::ALL`]) and every state ([`STATES`]), and for
//! any other word some job has counted (a reason only a version 1 ledger
//! recorded): a series never appears out of nowhere, so `increase()` sees
//! its first event. The timestamps of a success, a failure and the next
//! run are absent, not 0, when there is none; the start of a run in flight
//! and the budget are 0 when there is none, so that they exist from the
//! start as the flags do.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

use baton_store::ledger::{BOUNDS, JobTallies};
use baton_store::words::{MissReason, RunVerdict, SkipReason};
use jiff::Timestamp;

use super::exposition::{Family, Kind};

/// The label that names the job.
pub const JOB_LABEL: &str = "baton_job";

/// Every state of `baton_job_state`, in the order of precedence in which
/// one is decided: the words of the job state everywhere (`status`, its
/// `--json`, the page, the API).
pub const STATES: [crate::views::job_state::JobState; 10] = crate::views::job_state::JobState::ALL;

/// What the metrics show of one job.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct JobFigures {
    pub(crate) job: String,
    /// Its cumulative tallies (zeros when the ledger has counted nothing).
    pub(crate) tallies: JobTallies,
    /// A run of it is in flight.
    pub(crate) running: bool,
    /// A pause of it is in force.
    pub(crate) paused: bool,
    /// It and the scheduler's kill switch let it run.
    pub(crate) enabled: bool,
    /// Its state, as `status` decides it.
    pub(crate) state: crate::views::job_state::JobState,
    /// An occurrence that should have started did not.
    pub(crate) overdue: bool,
    /// Its newest finished run failed, as `status` says it (`failing`),
    /// whatever its state; `None` when the ledger could not tell (the
    /// series is then absent, never 0).
    pub(crate) failing: Option<bool>,
    /// Its next occurrence, if it has one.
    pub(crate) next_run: Option<Timestamp>,
    /// When its run in flight started, as `status` says it (the oldest,
    /// with `max_concurrent`); `None` when nothing of it runs.
    pub(crate) run_started: Option<Timestamp>,
    /// A run of it in flight is past its budget, as `status` says it.
    pub(crate) overrunning: bool,
    /// Its configured soft budget per run (`max_runtime`), if any.
    pub(crate) max_runtime: Option<std::time::Duration>,
}

fn job(j: &JobFigures) -> Vec<(&'static str, String)> {
    vec![(JOB_LABEL, j.job.clone())]
}

fn flag(b: bool) -> f64 {
    f64::from(u8::from(b))
}

fn seconds(t: Timestamp) -> f64 {
    t.as_duration().as_secs_f64()
}

/// A counter by a word: for each job, a sample per word of `listed` and
/// per word any job has counted, 0 where it has none, in the words' order.
fn by_word<W: Copy + Ord + Display>(
    mut family: Family,
    label: &'static str,
    jobs: &[JobFigures],
    listed: &[W],
    pick: fn(&JobTallies) -> &BTreeMap<W, u64>,
) -> Family {
    let words: BTreeSet<W> = listed
        .iter()
        .copied()
        .chain(jobs.iter().flat_map(|j| pick(&j.tallies).keys().copied()))
        .collect();
    for j in jobs {
        for w in &words {
            let n = pick(&j.tallies).get(w).copied().unwrap_or(0);
            let mut labels = job(j);
            labels.push((label, w.to_string()));
            family.push(labels, n as f64);
        }
    }
    family
}

/// A gauge with one sample per job.
fn per_job(
    name: &'static str,
    help: &'static str,
    unit: Option<&'static str>,
    jobs: &[JobFigures],
    value: impl Fn(&JobFigures) -> Option<f64>,
) -> Family {
    let mut f = Family::new(name, help, Kind::Gauge);
    f.unit = unit;
    for j in jobs {
        if let Some(v) = value(j) {
            f.push(job(j), v);
        }
    }
    f
}

/// The per-job families of `jobs`, in the order the module's parent
/// documents them.
pub(crate) fn families(jobs: &[JobFigures]) -> Vec<Family> {
    let mut out = vec![
        by_word(
            Family::new(
                "baton_job_runs",
                "Finished runs, by verdict.",
                Kind::Counter,
            ),
            "verdict",
            jobs,
            RunVerdict::ALL,
            |t| &t.runs,
        ),
        by_word(
            Family::new(
                "baton_job_missed_occurrences",
                "Occurrences that did not run, by reason.",
                Kind::Counter,
            ),
            "reason",
            jobs,
            MissReason::ALL,
            |t| &t.missed,
        ),
        by_word(
            Family::new(
                "baton_job_missed_withdrawn",
                "Of the occurrences counted missed, those a clock that was ahead recorded and \
                 an honest one took back (missed-withdrawn), by reason.",
                Kind::Counter,
            ),
            "reason",
            jobs,
            MissReason::ALL,
            |t| &t.withdrawn,
        ),
        by_word(
            Family::new(
                "baton_job_skipped_occurrences",
                "Occurrences that did not run themselves but were served (coalesced) or had run \
                 (claimed), by reason.",
                Kind::Counter,
            ),
            "reason",
            jobs,
            SkipReason::ALL,
            |t| &t.skipped,
        ),
    ];
    let mut losses = Family::new(
        "baton_job_lease_losses",
        "Runs that lost their lease.",
        Kind::Counter,
    );
    for j in jobs {
        losses.push(job(j), j.tallies.lease_losses as f64);
    }
    out.push(losses);
    let mut durations = Family::new(
        "baton_job_run_duration_seconds",
        "How long finished runs took.",
        Kind::Histogram,
    )
    .unit("seconds");
    let bounds: Vec<f64> = BOUNDS.iter().copied().chain([f64::INFINITY]).collect();
    for j in jobs {
        let d = &j.tallies.durations;
        durations.push_histogram(&job(j), &bounds, &d.buckets, d.sum.as_secs_f64());
    }
    out.push(durations);
    out.extend([
        per_job(
            "baton_job_last_success_timestamp_seconds",
            "When the newest successful run finished, in Unix seconds; absent when never.",
            Some("seconds"),
            jobs,
            |j| j.tallies.last_success.map(seconds),
        ),
        per_job(
            "baton_job_last_failure_timestamp_seconds",
            "When the newest failed run finished, in Unix seconds; absent when never.",
            Some("seconds"),
            jobs,
            |j| j.tallies.last_failure.map(seconds),
        ),
        per_job(
            "baton_job_next_run_timestamp_seconds",
            "When the next occurrence is due, in Unix seconds; absent when there is none.",
            Some("seconds"),
            jobs,
            |j| j.next_run.map(seconds),
        ),
        per_job(
            "baton_job_overdue",
            "1 when an occurrence that should have started did not.",
            None,
            jobs,
            |j| Some(flag(j.overdue)),
        ),
        per_job(
            "baton_job_failing",
            "1 when the newest finished run failed (not interrupted or replaced), whatever the job's state.",
            None,
            jobs,
            |j| j.failing.map(flag),
        ),
    ]);
    let mut state = Family::new(
        "baton_job_state",
        "The job's state: 1 for the state it is in, 0 for every other.",
        Kind::Gauge,
    );
    for j in jobs {
        for word in STATES {
            let mut labels = job(j);
            labels.push(("state", word.word().to_owned()));
            state.push(labels, flag(j.state == word));
        }
    }
    out.push(state);
    out.extend([
        per_job(
            "baton_job_running",
            "1 while a run of the job is in flight (its lock's holder is live).",
            None,
            jobs,
            |j| Some(flag(j.running)),
        ),
        per_job(
            "baton_job_run_started_timestamp_seconds",
            "When the run in flight started, in Unix seconds; 0 when none runs.",
            Some("seconds"),
            jobs,
            |j| Some(j.run_started.map_or(0.0, seconds)),
        ),
        per_job(
            "baton_job_overrunning",
            "1 while a run in flight is past its max_runtime (the run's overrunning alert), else 0.",
            None,
            jobs,
            |j| Some(flag(j.overrunning)),
        ),
        per_job(
            "baton_job_max_runtime_seconds",
            "The job's max_runtime, the soft budget of a run, in seconds; 0 when it has none.",
            Some("seconds"),
            jobs,
            |j| Some(j.max_runtime.map_or(0.0, |d| d.as_secs_f64())),
        ),
        per_job(
            "baton_job_paused",
            "1 while a pause of the job is in force.",
            None,
            jobs,
            |j| Some(flag(j.paused)),
        ),
        per_job(
            "baton_job_enabled",
            "1 when the job and the scheduler's kill switch let it run.",
            None,
            jobs,
            |j| Some(flag(j.enabled)),
        ),
    ]);
    out
}
