//! The metrics of `GET /metrics`: the ledger's cumulative tallies, what runs
//! and what is paused now, and the calling process's own figures, in the
//! OpenMetrics text exposition of `prometheus-client`.
//!
//! [`render`] is a pure function of what it is given; [`read`] gathers that
//! (it opens the ledger, inspects the jobs' locks and reads `/proc/self`)
//! and renders it. Nothing here writes: a state directory or a ledger that
//! does not exist yet is not created, and reads as no tallies. Every job of
//! the configuration appears, with zeros when the ledger has not counted
//! anything for it; a job the ledger knows and the configuration no longer
//! names does not.
//!
//! # What each metric says
//!
//! - `baton_runs_total{job,verdict}`, `baton_missed_occurrences_total
//!   {job,reason}`, `baton_skipped_occurrences_total{job,reason}`,
//!   `baton_lease_losses_total{job}`: the ledger's tallies, which pruning
//!   never lowers (see `baton_ledger::JobTallies`). *Skipped* occurrences
//!   never ran themselves but were served (`coalesced` into one waiting in
//!   the queue) or had run already (`claimed`: the lock file says so);
//!   *missed* ones did not run at all. A job's lease losses are its runs
//!   whose verdict is `lease-lost`. Each job has a sample for every word
//!   any job has counted, and for the baseline words (`ok` and `failed`
//!   verdicts; `coalesced` and `claimed`), 0 where it has none, so that a
//!   series starts at 0 rather than appearing at its first event.
//! - `baton_last_success_timestamp_seconds{job}`,
//!   `baton_last_failure_timestamp_seconds{job}`: when the newest successful
//!   or failed run finished, in Unix seconds; **0 when never**, so every job
//!   has a sample and `time() - x` is huge for a job that never succeeded.
//! - `baton_run_duration_seconds{job}`: a histogram of finished runs'
//!   durations, buckets `baton_ledger::BOUNDS` and `+Inf`.
//! - `baton_running{job}`: 1 while a run of the job is in flight. The
//!   ledger alone cannot say so: a run whose process was killed (`SIGKILL`,
//!   a crash, a reboot) never records its end, and its row reads "started,
//!   not finished" until pruning removes it, for ever with `history_keep`
//!   runs to come. The lock file can: its holder is `live` only while the
//!   holding process and its job's process group are alive and its lease is
//!   renewed. So a job runs when its lock's holder is live *and* the
//!   holder's run is the job's newest unfinished run in the ledger (a lock
//!   may be shared by several jobs); when no other job of the configuration
//!   shares the lock, a live holder is enough (its ledger row may be
//!   missing when the ledger was unavailable and the run went on
//!   unrecorded).
//! - `baton_job_paused{job}`: 1 while a pause is in force;
//!   `baton_job_enabled{job}`: 1 when the job and the scheduler's kill
//!   switch both let it run.
//! - `baton_info{version}`: always 1.
//! - `process_*`: the process that calls [`read`] (the daemon, or the
//!   hidden `baton __metrics`), from `/proc/self`; see [`ProcessStats`].

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::PathBuf;
use std::time::Duration;

use baton_lease::Clock;
use baton_ledger::{BOUNDS, JobTallies};
use jiff::Timestamp;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::config::Config;

/// Why [`read`] could not gather the metrics.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The ledger could not be opened or read (its error says what was
    /// being done to which file).
    #[error(transparent)]
    Ledger(#[from] baton_ledger::Error),
    /// A file of `/proc/self` could not be read or made sense of.
    #[error("failed to {action} {}: {source}", path.display())]
    Proc {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// What is true of the jobs now, beside their tallies: the jobs with a run
/// in flight, and the paused ones, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Now {
    /// Jobs with a run in flight.
    pub running: BTreeSet<String>,
    /// Jobs with a pause in force.
    pub paused: BTreeSet<String>,
}

/// The calling process's figures, as Prometheus's client libraries name
/// them (`process_*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    /// Resident memory, in bytes.
    pub resident_memory_bytes: u64,
    /// Virtual memory, in bytes.
    pub virtual_memory_bytes: u64,
    /// User and system CPU time spent.
    pub cpu: Duration,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors; `None` when unlimited.
    pub max_fds: Option<u64>,
    /// When the process started, in Unix seconds.
    pub start_time_seconds: f64,
}

impl ProcessStats {
    /// Reads this process's figures from `/proc/self/stat` and
    /// `/proc/self/fd`, and its file limit with `getrlimit`. The start time
    /// is the kernel's (in clock ticks since boot) placed on the wall clock
    /// through `clock`: now on the wall, less the boot clock's time since
    /// the process started.
    ///
    /// # Errors
    ///
    /// [`Error::Proc`] when a file of `/proc/self` cannot be read or does
    /// not read as Linux writes it.
    pub fn read(clock: &dyn Clock) -> Result<Self, Error> {
        let stat_path = PathBuf::from("/proc/self/stat");
        let stat = std::fs::read_to_string(&stat_path).map_err(|source| Error::Proc {
            action: "read",
            path: stat_path.clone(),
            source,
        })?;
        let fields = stat_fields(&stat).ok_or_else(|| Error::Proc {
            action: "parse",
            path: stat_path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidData, "unexpected format"),
        })?;
        let ticks = rustix::param::clock_ticks_per_second().max(1);
        let page = rustix::param::page_size() as u64;
        let fd_path = PathBuf::from("/proc/self/fd");
        let open_fds = std::fs::read_dir(&fd_path)
            .map_err(|source| Error::Proc {
                action: "list",
                path: fd_path.clone(),
                source,
            })?
            .count() as u64;
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let since_boot = Duration::from_secs_f64(fields.start_ticks as f64 / ticks as f64);
        let age = clock.boot().saturating_sub(since_boot);
        let start = clock.wall().as_duration().as_secs_f64() - age.as_secs_f64();
        Ok(Self {
            resident_memory_bytes: fields.rss_pages.saturating_mul(page),
            virtual_memory_bytes: fields.vsize,
            cpu: Duration::from_secs_f64((fields.utime + fields.stime) as f64 / ticks as f64),
            // One of them is the directory being listed.
            open_fds: open_fds.saturating_sub(1),
            max_fds: limit.current,
            start_time_seconds: start,
        })
    }
}

/// The fields of `/proc/self/stat` the metrics use.
struct StatFields {
    utime: u64,
    stime: u64,
    start_ticks: u64,
    vsize: u64,
    rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`: the command name (field 2) is in parentheses
/// and may hold spaces and parentheses, so the fields are counted from the
/// last `)`.
fn stat_fields(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |field: usize| f.get(field - 3)?.parse::<u64>().ok();
    Some(StatFields {
        utime: n(14)?,
        stime: n(15)?,
        start_ticks: n(22)?,
        vsize: n(23)?,
        rss_pages: n(24)?,
    })
}

/// Gathers what [`render`] needs for `config`'s jobs and renders it, with
/// this process's figures: the ledger's tallies (without creating a ledger
/// that does not exist), the lock files' holders, the pauses in force.
///
/// # Errors
///
/// [`Error::Ledger`] when the ledger exists and cannot be read;
/// [`Error::Proc`] when this process's figures cannot be read.
pub fn read(config: &Config, clock: &dyn Clock) -> Result<String, Error> {
    let now = clock.wall();
    let mut ledger = crate::store::existing_records(config, now).transpose()?;
    let tallies = match ledger.as_deref_mut() {
        Some(l) => l.tallies()?,
        None => Vec::new(),
    };
    let mut jobs_now = Now::default();
    let jobs: Vec<&crate::config::Job> = config.jobs.values().collect();
    // Every lock judged over one store connection; one that cannot be read
    // says nothing is known to run.
    let verdicts = match crate::store::open(config) {
        Ok(s) => s.inspect_all(&jobs),
        Err(_) => vec![None; jobs.len()],
    };
    for (job, verdict) in jobs.into_iter().zip(verdicts) {
        if let Some(l) = ledger.as_deref_mut()
            && l.pauses(&job.name, 1)?.iter().any(|p| p.active(now))
        {
            jobs_now.paused.insert(job.name.clone());
        }
        if running(config, job, verdict.as_ref(), ledger.as_deref_mut())? {
            jobs_now.running.insert(job.name.clone());
        }
    }
    let process = ProcessStats::read(clock)?;
    Ok(render(config, &tallies, &jobs_now, Some(&process)))
}

/// Whether a run of `job` is in flight (see the module's documentation).
fn running(
    config: &Config,
    job: &crate::config::Job,
    verdict: Option<&baton_lease::Verdict>,
    ledger: Option<&mut (dyn baton_ledger::Records + 'static)>,
) -> Result<bool, Error> {
    let Some(baton_lease::Verdict::Live { holder, .. }) = verdict else {
        return Ok(false);
    };
    let shared = config
        .jobs
        .values()
        .any(|other| other.name != job.name && other.lock.value == job.lock.value);
    if !shared {
        return Ok(true);
    }
    let Some(ledger) = ledger else {
        return Ok(false);
    };
    let in_flight = ledger.running(&job.name)?;
    Ok(in_flight.is_some_and(|r| holder.run() == Some(r.run_id.as_str())))
}

/// Renders the exposition: every metric of the module's documentation for
/// `config`'s jobs, from `tallies` (jobs without any read as zeros) and
/// `now`, and the `process_*` metrics when `process` is given. Ends with
/// OpenMetrics' `# EOF`.
pub fn render(
    config: &Config,
    tallies: &[JobTallies],
    now: &Now,
    process: Option<&ProcessStats>,
) -> String {
    let mut registry = Registry::default();
    let by_name: BTreeMap<&str, &JobTallies> =
        tallies.iter().map(|t| (t.job.as_str(), t)).collect();
    let jobs = config
        .jobs
        .values()
        .map(|job| {
            let tallies = by_name
                .get(job.name.as_str())
                .map_or_else(JobTallies::default, |t| (*t).clone());
            JobMetrics {
                job: job.name.clone(),
                running: now.running.contains(&job.name),
                paused: now.paused.contains(&job.name),
                enabled: job.enabled.value && config.enabled(),
                tallies,
            }
        })
        .collect();
    registry.register_collector(Box::new(Jobs(jobs)));
    if let Some(p) = process {
        process_metrics(&mut registry, p);
    }
    let mut out = String::new();
    // OK because writing into a String cannot fail, and every value
    // encodes.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// Registers the `process_*` metrics of `stats` into `registry`.
pub fn process_metrics(registry: &mut Registry, stats: &ProcessStats) {
    registry.register_collector(Box::new(Process(*stats)));
}

/// One job's figures, owned, for the collector.
#[derive(Debug)]
struct JobMetrics {
    job: String,
    running: bool,
    paused: bool,
    enabled: bool,
    tallies: JobTallies,
}

/// The jobs' metrics, encoded on each scrape from the figures it holds.
#[derive(Debug)]
struct Jobs(Vec<JobMetrics>);

type Fmt = Result<(), std::fmt::Error>;

/// Encodes one family: its descriptor, then one sample per item.
fn family<T>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    kind: MetricType,
    items: impl IntoIterator<Item = T>,
    mut sample: impl FnMut(&mut prometheus_client::encoding::MetricEncoder<'_>, T) -> Fmt,
) -> Fmt {
    let mut metric = encoder.encode_descriptor(name, help, None, kind)?;
    for item in items {
        sample(&mut metric, item)?;
    }
    Ok(())
}

fn counter(
    m: &mut prometheus_client::encoding::MetricEncoder<'_>,
    labels: &[(&str, &str)],
    n: u64,
) -> Fmt {
    ConstCounter::new(n).encode(m.encode_family(&labels)?)
}

fn gauge(
    m: &mut prometheus_client::encoding::MetricEncoder<'_>,
    labels: &[(&str, &str)],
    v: f64,
) -> Fmt {
    ConstGauge::new(v).encode(m.encode_family(&labels)?)
}

fn seconds(t: Option<Timestamp>) -> f64 {
    t.map_or(0.0, |t| t.as_duration().as_secs_f64())
}

impl Collector for Jobs {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> Fmt {
        let jobs = &self.0;
        // Counters by a word: every job has a sample for each of the
        // family's baseline words and each word any job has counted, 0
        // where it has none, so a series never appears out of nowhere.
        let by_word = |pick: fn(&JobTallies) -> &BTreeMap<String, u64>, baseline: &[&str]| {
            let words: BTreeSet<String> = baseline
                .iter()
                .map(|w| (*w).to_owned())
                .chain(jobs.iter().flat_map(|j| pick(&j.tallies).keys().cloned()))
                .collect();
            jobs.iter()
                .flat_map(|j| {
                    words.iter().map(move |w| {
                        let n = pick(&j.tallies).get(w).copied().unwrap_or(0);
                        (j.job.as_str(), w.clone(), n)
                    })
                })
                .collect::<Vec<_>>()
        };
        family(
            &mut e,
            "baton_runs",
            "Finished runs, by verdict.",
            MetricType::Counter,
            by_word(|t| &t.runs, &["ok", "failed"]),
            |m, (job, verdict, n)| counter(m, &[("job", job), ("verdict", &verdict)], n),
        )?;
        family(
            &mut e,
            "baton_missed_occurrences",
            "Occurrences that did not run, by reason.",
            MetricType::Counter,
            by_word(|t| &t.missed, &[]),
            |m, (job, reason, n)| counter(m, &[("job", job), ("reason", &reason)], n),
        )?;
        family(
            &mut e,
            "baton_skipped_occurrences",
            "Occurrences that did not run themselves but were served (coalesced) or had run \
             (claimed), by reason.",
            MetricType::Counter,
            by_word(|t| &t.skipped, &["coalesced", "claimed"]),
            |m, (job, reason, n)| counter(m, &[("job", job), ("reason", &reason)], n),
        )?;
        family(
            &mut e,
            "baton_lease_losses",
            "Runs that lost their lease.",
            MetricType::Counter,
            jobs,
            |m, j| counter(m, &[("job", &j.job)], j.tallies.lease_losses),
        )?;
        family(
            &mut e,
            "baton_last_success_timestamp_seconds",
            "When the newest successful run finished, in Unix seconds; 0 when never.",
            MetricType::Gauge,
            jobs,
            |m, j| gauge(m, &[("job", &j.job)], seconds(j.tallies.last_success)),
        )?;
        family(
            &mut e,
            "baton_last_failure_timestamp_seconds",
            "When the newest failed run finished, in Unix seconds; 0 when never.",
            MetricType::Gauge,
            jobs,
            |m, j| gauge(m, &[("job", &j.job)], seconds(j.tallies.last_failure)),
        )?;
        family(
            &mut e,
            "baton_run_duration_seconds",
            "How long finished runs took.",
            MetricType::Histogram,
            jobs,
            |m, j| {
                let d = &j.tallies.durations;
                let labels = [("job", j.job.as_str())];
                // The encoder sums the buckets itself: each bound with the
                // runs in its bucket alone.
                let buckets: Vec<(f64, u64)> = BOUNDS
                    .iter()
                    .copied()
                    .chain([f64::INFINITY])
                    .zip(d.buckets)
                    .collect();
                m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
                    d.sum.as_secs_f64(),
                    d.count(),
                    &buckets,
                    None,
                )
            },
        )?;
        family(
            &mut e,
            "baton_running",
            "1 while a run of the job is in flight (its lock's holder is live).",
            MetricType::Gauge,
            jobs,
            |m, j| gauge(m, &[("job", &j.job)], f64::from(u8::from(j.running))),
        )?;
        family(
            &mut e,
            "baton_job_paused",
            "1 while a pause of the job is in force.",
            MetricType::Gauge,
            jobs,
            |m, j| gauge(m, &[("job", &j.job)], f64::from(u8::from(j.paused))),
        )?;
        family(
            &mut e,
            "baton_job_enabled",
            "1 when the job and the scheduler's kill switch let it run.",
            MetricType::Gauge,
            jobs,
            |m, j| gauge(m, &[("job", &j.job)], f64::from(u8::from(j.enabled))),
        )?;
        let mut info =
            e.encode_descriptor("baton", "This baton's version.", None, MetricType::Info)?;
        info.encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;
        Ok(())
    }
}

/// The process's metrics.
#[derive(Debug)]
struct Process(ProcessStats);

impl Collector for Process {
    fn encode(&self, mut e: DescriptorEncoder<'_>) -> Fmt {
        let p = &self.0;
        let gauges: [(&str, &str, f64); 5] = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                p.resident_memory_bytes as f64,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                p.virtual_memory_bytes as f64,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                p.open_fds as f64,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors (+Inf when unlimited).",
                p.max_fds.map_or(f64::INFINITY, |n| n as f64),
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since the Unix epoch, in seconds.",
                p.start_time_seconds,
            ),
        ];
        let cpu = e.encode_descriptor(
            "process_cpu_seconds",
            "Total user and system CPU time spent, in seconds.",
            None,
            MetricType::Counter,
        )?;
        ConstCounter::new(p.cpu.as_secs_f64()).encode(cpu)?;
        for (name, help, v) in gauges {
            let m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(v).encode(m)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{self, Overrides};

    fn config() -> Config {
        let text = "[scheduler]\nstate_dir = \"/nonexistent/state\"\ntimezone = \"UTC\"\n\
                    [jobs.nightly]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n\
                    [jobs.quiet]\nschedule = \"0 4 * * *\"\nrun = \"true\"\nenabled = false\n";
        config::parse(text, Path::new("/etc/baton.toml"), &Overrides::default()).unwrap()
    }

    fn tallies() -> Vec<JobTallies> {
        let mut t = JobTallies {
            job: "nightly".into(),
            lease_losses: 1,
            last_success: Some("2026-11-29T03:00:02Z".parse().unwrap()),
            ..JobTallies::default()
        };
        t.runs.insert("ok".into(), 3);
        t.runs.insert("lease-lost".into(), 1);
        t.missed.insert("busy".into(), 5);
        t.skipped.insert("coalesced".into(), 2);
        t.durations.buckets[3] = 3;
        t.durations.buckets[10] = 1;
        t.durations.sum = Duration::from_millis(20_500);
        // A job the configuration no longer names is not shown.
        let gone = JobTallies {
            job: "gone".into(),
            ..JobTallies::default()
        };
        vec![gone, t]
    }

    /// The exposition of `metrics_render_every_configured_job`, pinned.
    const EXPECTED: &str = include_str!("snapshots/metrics.txt");

    #[test]
    fn metrics_render_every_configured_job() {
        let now = Now {
            running: ["nightly".to_string()].into(),
            paused: ["quiet".to_string()].into(),
        };
        let process = ProcessStats {
            resident_memory_bytes: 4096,
            virtual_memory_bytes: 8192,
            cpu: Duration::from_millis(250),
            open_fds: 5,
            max_fds: Some(1024),
            start_time_seconds: 1_764_385_200.0,
        };
        let text = render(&config(), &tallies(), &now, Some(&process));
        assert_eq!(text, EXPECTED, "{text}");
    }

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let stat = "4242 (we ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    7 3 0 0 20 0 1 0 5000 123456 789 18446744073709551615";
        let f = stat_fields(stat).unwrap();
        assert_eq!(
            (f.utime, f.stime, f.start_ticks, f.vsize, f.rss_pages),
            (7, 3, 5000, 123456, 789)
        );
        assert!(stat_fields("garbage").is_none());
    }
}
