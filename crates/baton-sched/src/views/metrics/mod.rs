//! The metrics of `GET /metrics` (and of the hidden `baton __metrics`): the
//! ledger's cumulative tallies, each job's state as `status` decides it,
//! what runs now, and the calling process's own figures, in Prometheus's
//! text format 0.0.4 or in OpenMetrics 1.0 ([`Format`], chosen from the
//! request's `Accept` header by [`Format::negotiate`]).
//!
//! [`read`] gathers the figures (it opens the ledger, reads the jobs'
//! status, inspects their locks and reads `/proc/self`) and renders them;
//! the rendering is a pure function of the figures, one writer for both
//! formats (`exposition.rs`). Nothing here writes: a state
//! directory or a ledger that does not exist yet is not created, and reads
//! as no tallies. Every job of the configuration appears, with zeros when
//! the ledger has not counted anything for it; a job the ledger knows and
//! the configuration no longer names does not (its runs still in flight are
//! counted in `baton_unconfigured_runs`).
//!
//! # What each metric says
//!
//! Every per-job series is named `baton_job_…` and names its job in the
//! label `baton_job` (Prometheus sets `job` and `instance` itself on
//! scrape, so a `job` label would arrive renamed `exported_job`). The
//! series are the same in both formats; only the metadata differs (0.0.4 names a
//! counter's family `…_total` and has no `info` type), and OpenMetrics adds `# UNIT` to the `_seconds` and
//! `_bytes` families.
//!
//! - `baton_job_runs_total{baton_job,verdict}`,
//!   `baton_job_missed_occurrences_total{baton_job,reason}`,
//!   `baton_job_missed_withdrawn_total{baton_job,reason}`,
//!   `baton_job_skipped_occurrences_total{baton_job,reason}`,
//!   `baton_job_lease_losses_total{baton_job}`: the ledger's tallies, which
//!   pruning never lowers (see `baton_store::ledger::JobTallies`). *Skipped*
//!   occurrences never ran themselves but were served (`coalesced` into one
//!   waiting in the queue) or had run already (`claimed`: the lock file says
//!   so); *missed* ones did not run at all (the reasons `paused` and
//!   `disabled` are a decision, the others a fault). A job's lease losses
//!   are its runs whose verdict is `lease-lost`. Each job has a sample at 0
//!   from the start for every verdict of `baton_store::words::RunVerdict`,
//!   every reason of `baton_store::words::MissReason` and
//!   `baton_store::words::SkipReason`, and any other word a job has counted
//!   (a reason only a version 1 ledger recorded), so `increase()` sees the
//!   first event.
//! - `baton_job_run_duration_seconds{baton_job}`: a histogram of finished
//!   runs' durations, buckets `baton_store::ledger::BOUNDS` and `+Inf` (the `le`
//!   values written `1.0`, `0.1`, `+Inf` in both formats).
//! - `baton_job_last_success_timestamp_seconds{baton_job}`,
//!   `baton_job_last_failure_timestamp_seconds{baton_job}`: when the newest
//!   successful or failed run finished, in Unix seconds; **absent** for a
//!   job that never had one (an alert on `time() - x` then needs `absent()`
//!   or `unless`, never a huge value it did not ask for).
//! - `baton_job_next_run_timestamp_seconds{baton_job}`: when the job's
//!   next occurrence is due, as `status` says it (`next_run`); absent when
//!   it has none.
//! - `baton_job_overdue{baton_job}`: 1 when `status` finds an occurrence
//!   that should have started and did not, else 0.
//! - `baton_job_failing{baton_job}`: 1 when the job's newest finished run
//!   failed (any verdict but `ok`, `interrupted` and `replaced`), the fact `status`
//!   gives as `failing` and ranks as the state `failing`, else 0. Unlike
//!   `baton_job_state{state="failing"}` it stays 1 while the job is in a
//!   state that ranks higher (`running` again, `paused`, `overdue`), so an
//!   alert on it does not flap with each run of a job that keeps failing,
//!   nor fall silent while a failed job is paused or late. [`read`]
//!   refuses when the jobs' records cannot be read ([`Error::Unread`]);
//!   a failing that is not known is never rendered as 0 (absent).
//! - `baton_job_state{baton_job,state}`: one sample per word of [`STATES`],
//!   1 for the state `status` gives the job and 0 for the others. A gauge
//!   in both formats, not an OpenMetrics stateset, whose label would have
//!   to be named after the family (`baton_job_state="…"`) and so differ
//!   between the formats.
//! - `baton_job_running{baton_job}`: 1 while a run of the job is in
//!   flight. The ledger alone cannot say so: a run whose process was killed
//!   (`SIGKILL`, a crash, a reboot) never records its end, and its row reads
//!   "started, not finished" until pruning removes it. The lock file can:
//!   its holder is `live` only while the holding process and its job's
//!   process group are alive and its lease is renewed. So a job runs when
//!   its lock's holder is live *and* the holder's run is the job's newest
//!   unfinished run in the ledger (a lock may be shared by several jobs);
//!   when no other job of the configuration shares the lock, a live holder
//!   is enough (its ledger row may be missing when the ledger was
//!   unavailable and the run went on unrecorded).
//! - `baton_job_run_started_timestamp_seconds{baton_job}`: when the run in
//!   flight started, in Unix seconds (with `max_concurrent`, the oldest of
//!   them), as `status` says it: the ledger's start of the run the lock's
//!   holder names, else when that holder took the lease. **0** while
//!   nothing of the job runs (exactly when `baton_job_running` is 0), so
//!   that the series exists from the start; a rule on the run's age keeps
//!   to `> 0`. With the duration histogram it says when a run has gone on
//!   far longer than the job's runs take (`BatonJobRunLong`), whether or
//!   not the job has a budget.
//! - `baton_job_overrunning{baton_job}`: 1 while a run in flight has used
//!   the whole budget (`max_runtime`) its holder declared, by
//!   `baton_lease::overran`, the rule by which the run itself raises its
//!   one `overrunning` alert and a refused contender says `overrunning`
//!   rather than `busy`; else 0. It stays 1 until the run ends (the alert
//!   is raised once; nothing is stopped).
//! - `baton_job_max_runtime_seconds{baton_job}`: the job's configured
//!   `max_runtime`, in seconds; **0** when it has none, as the
//!   configuration writes "none" (`max_runtime = "0"`). A run started
//!   before the configuration changed keeps the budget it started with,
//!   which `baton_job_overrunning` follows.
//! - `baton_job_paused{baton_job}`: 1 while a pause is in force;
//!   `baton_job_enabled{baton_job}`: 1 when the job and the scheduler's
//!   kill switch both let it run.
//! - `baton_build_info{version}`: always 1 (a gauge in 0.0.4, which has no
//!   info type; an info in OpenMetrics).
//! - `baton_unconfigured_runs`: how many runs are in flight on this host of
//!   jobs the configuration no longer names (renamed or removed while they
//!   ran), as a whole `status` lists them (`unconfigured_runs`); 0 when
//!   none. A run of the job under its new name would run beside them, and
//!   no `baton_job` series follows them.
//! - `process_*`: the process that calls [`read`] (the daemon, or
//!   `baton __metrics`), from `/proc/self`; see [`ProcessStats`].
//!
//! `deploy/prometheus/baton-rules.yml` has alerting rules written against
//! these series, tested with `promtool test rules`.

use baton_lease::Clock;

use crate::config::Config;
use crate::views::status::JobStatus;

mod exposition;
mod format;
mod jobs;
mod process;
#[cfg(test)]
mod tests;

pub use format::Format;
pub use jobs::{JOB_LABEL, STATES};
pub use process::ProcessStats;

use exposition::{Family, Kind};
use jobs::JobFigures;

/// Why [`read`] could not gather the metrics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The ledger could not be opened or read (its error says what was
    /// being done to which file).
    #[error(transparent)]
    Ledger(#[from] baton_store::ledger::Error),
    /// The ledger opened, but the jobs' records could not be read from it
    /// (the status's error says why): no figure of theirs is known.
    #[error("the ledger's records could not be read: {0}")]
    Unread(String),
    /// A file of `/proc/self` could not be read or made sense of.
    #[error("failed to {action} {}: {source}", path.display())]
    Proc {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// Gathers the figures of `config`'s jobs and this process and renders them
/// in `format`: the ledger's tallies (without creating a ledger that does
/// not exist), each job's status, the lock files' holders.
///
/// # Errors
///
/// [`Error::Ledger`] when the ledger exists and cannot be read
/// ([`Error::Unread`] when the jobs' records cannot be read from it);
/// [`Error::Proc`] when this process's figures cannot be read.
pub fn read(config: &Config, clock: &dyn Clock, format: Format) -> Result<String, Error> {
    let now = clock.wall();
    let mut ledger = crate::engine::surfaces::existing_records_alerting(config, now).transpose()?;
    let tallies = match ledger.as_deref_mut() {
        Some(l) => l.tallies()?,
        None => Vec::new(),
    };
    let status = crate::views::status::read(config, None, now);
    if let Some(e) = status.error {
        // Every figure the ledger gives would read as 0: none is exported.
        return Err(Error::Unread(e));
    }
    let jobs: Vec<&crate::config::Job> = config.jobs.values().map(Box::as_ref).collect();
    // Every lock judged over one store connection; one that cannot be read
    // says nothing is known to run.
    let verdicts = crate::views::slots::judge(config, &jobs);
    let mut figures = Vec::with_capacity(jobs.len());
    for (job, verdict) in jobs.into_iter().zip(verdicts) {
        let mut f = JobFigures {
            job: job.name.clone(),
            tallies: tallies
                .iter()
                .find(|t| t.job == job.name)
                .cloned()
                .unwrap_or_default(),
            running: running(config, job, verdict.main(), ledger.as_deref_mut())?,
            enabled: job.enabled.value && config.enabled(),
            max_runtime: job.policy.max_runtime.value,
            ..JobFigures::default()
        };
        if let Some(s) = status.jobs.iter().find(|s| s.job == job.name) {
            from_status(&mut f, s);
        }
        figures.push(f);
    }
    let process = ProcessStats::read(clock)?;
    let unconfigured = status.unconfigured_runs.len();
    Ok(render(&figures, unconfigured, Some(&process), format))
}

/// What the metrics take from a job's status: its state, whether a run of
/// it is in flight, when it started and whether it is overrunning, whether
/// the job is overdue, failing and paused, and its next run. The one place here that
/// reads a [`JobStatus`], so that the metrics say what `status` says.
fn from_status(f: &mut JobFigures, s: &JobStatus) {
    f.state = s.state;
    f.running = s.in_flight;
    f.overdue = s.overdue.is_some();
    f.failing = s.failing;
    f.paused = s.paused.is_some();
    f.next_run = s.next_run.as_deref().and_then(|t| t.parse().ok());
    f.run_started = s.run_started;
    f.overrunning = s.overrunning;
}

/// Whether a run of `job` is in flight (see the module's documentation).
fn running(
    config: &Config,
    job: &crate::config::Job,
    verdict: Option<&baton_lease::Verdict>,
    ledger: Option<&mut (dyn baton_store::ledger::Records + 'static)>,
) -> Result<bool, Error> {
    let shared = config
        .jobs
        .values()
        .any(|other| other.name != job.name && other.lock.value == job.lock.value);
    let in_flight = match (verdict, ledger) {
        (Some(baton_lease::Verdict::Live { .. }), Some(l)) if shared => l.running(&job.name)?,
        _ => None,
    };
    Ok(crate::views::job_state::holding(
        verdict,
        shared,
        in_flight.as_ref().map(|r| r.run_id.as_str()),
    ) == crate::views::job_state::Holding::Live)
}

/// Renders the exposition of `jobs` and of the `unconfigured` runs in
/// flight in `format`: every metric of the module's documentation, and the
/// `process_*` metrics when `process` is given.
pub(crate) fn render(
    jobs: &[JobFigures],
    unconfigured: usize,
    process: Option<&ProcessStats>,
    format: Format,
) -> String {
    let mut families = jobs::families(jobs);
    let mut build = Family::new("baton_build", "This baton's version.", Kind::Info);
    build.push(vec![("version", env!("CARGO_PKG_VERSION").to_owned())], 1.0);
    families.push(build);
    let mut orphans = Family::new(
        "baton_unconfigured_runs",
        "Runs in flight on this host of jobs the configuration no longer names.",
        Kind::Gauge,
    );
    #[allow(clippy::cast_precision_loss)] // a count of runs
    orphans.push(Vec::new(), unconfigured as f64);
    families.push(orphans);
    if let Some(p) = process {
        families.extend(process::families(p));
    }
    exposition::encode(&families, format)
}
