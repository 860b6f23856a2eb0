//! `baton __metrics`, the exposition `GET /metrics` serves, after real
//! ticks and runs: parsed by a Prometheus text parser, its values checked
//! against what ran, failed and was missed, and the whole of it checked by
//! `promtool check metrics` and by `prometheus_client`'s parsers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::{Command, Stdio};

use baton_lease::Clock;
use jiff::{SignedDuration, Timestamp};
use prometheus_parse::{LineInfo, Scrape, Value};

use crate::policies::downtime;
use crate::sched::Sched;
use crate::support::{code, eventually, stderr, stdout};

/// The samples of an exposition, keyed by name and labels.
pub(crate) struct Exposition(Scrape);

impl Exposition {
    /// Parses Prometheus's text format 0.0.4: every line a `# HELP`, a
    /// `# TYPE` or a sample, and none of OpenMetrics' own lines.
    pub(crate) fn parse(text: &str) -> Self {
        for line in text.lines() {
            let understood = matches!(
                LineInfo::parse(line),
                LineInfo::Sample { .. } | LineInfo::Doc { .. } | LineInfo::Type { .. }
            );
            assert!(understood, "not 0.0.4: {line:?}\n{text}");
        }
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        Self(Scrape::parse(lines).unwrap())
    }

    /// Parses OpenMetrics: `# UNIT` lines allowed, and `# EOF` last.
    pub(crate) fn parse_openmetrics(text: &str) -> Self {
        assert!(text.ends_with("\n# EOF\n"), "{text}");
        let rest: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("# UNIT ") && *l != "# EOF")
            .collect();
        Self::parse(&(rest.join("\n") + "\n"))
    }

    fn find(&self, name: &str, labels: &[(&str, &str)]) -> Vec<&Value> {
        self.0
            .samples
            .iter()
            .filter(|s| {
                s.metric == name
                    && s.labels.len() == labels.len()
                    && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v))
            })
            .map(|s| &s.value)
            .collect()
    }

    /// The value of the sample `name{labels}` (exactly those labels),
    /// which must exist once.
    pub(crate) fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found = self.find(name, labels);
        assert_eq!(found.len(), 1, "{name}{labels:?}: {found:?}");
        match found[0] {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{name}{labels:?} is {other:?}"),
        }
    }

    /// Whether `name{labels}` has a sample.
    pub(crate) fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        !self.find(name, labels).is_empty()
    }

    /// The cumulative buckets of the histogram `name{baton_job}`, by bound.
    fn buckets(&self, name: &str, job: &str) -> HashMap<String, f64> {
        let found = self.find(name, &[("baton_job", job)]);
        let Some(Value::Histogram(h)) = found.first() else {
            panic!("{name} of {job}: {found:?}")
        };
        h.iter()
            .map(|b| (b.less_than.to_string(), b.count))
            .collect()
    }

    /// The sum of a counter's samples for a job, over its other label.
    fn total(&self, name: &str, job: &str) -> f64 {
        self.0
            .samples
            .iter()
            .filter(|s| s.metric == name && s.labels.get("baton_job") == Some(job))
            .map(|s| match s.value {
                Value::Counter(v) | Value::Untyped(v) => v,
                ref other => panic!("{name} is {other:?}"),
            })
            .sum()
    }

    /// The states `baton_job_state` gives `job` 1 for (one, if right).
    fn states_of(&self, job: &str) -> Vec<&'static str> {
        STATES
            .into_iter()
            .filter(|st| self.value("baton_job_state", &[("baton_job", job), ("state", st)]) == 1.0)
            .collect()
    }

    /// The values a label takes on `name`'s samples of `job`.
    fn words(&self, name: &str, job: &str, label: &str) -> BTreeSet<String> {
        self.0
            .samples
            .iter()
            .filter(|s| s.metric == name && s.labels.get("baton_job") == Some(job))
            .filter_map(|s| s.labels.get(label).map(str::to_owned))
            .collect()
    }
}

/// `baton __metrics` (with `extra` arguments), which must succeed.
pub(crate) fn metrics(s: &Sched, extra: &[&str]) -> String {
    let mut args = vec!["__metrics"];
    args.extend_from_slice(extra);
    let o = s.run(&args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    stdout(&o)
}

const YEARLY: &str = "schedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"";

/// A state directory with a history: `good` succeeded and `bad` failed
/// (both by a tick), `late` came back from a day of downtime (one run, many
/// missed occurrences, one claimed), `off` is disabled. Returns the
/// scheduler and when it began.
pub(crate) fn history() -> (Sched, Timestamp, i64) {
    let s = Sched::new("");
    s.write(&format!(
        "[jobs.good]\n{YEARLY}\nrun = \"true\"\n\
         [jobs.bad]\n{YEARLY}\nrun = \"false\"\n\
         [jobs.late]\nevery = \"1h\"\ncatch_up_window = \"3h\"\nrun = \"true\"\n\
         [jobs.off]\n{YEARLY}\nrun = \"true\"\nenabled = false\n"
    ));
    let t0 = baton_lease::SystemClock.wall();
    let last = (t0 - SignedDuration::from_hours(24)).as_second() / 3600 * 3600;
    crate::sched::known_since(
        &s,
        &["good", "bad", "off"],
        t0 - SignedDuration::from_hours(24 * 400),
    );
    downtime(&s, "late", t0 - SignedDuration::from_hours(48), last);
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 1, "a failure and a miss: {}", stderr(&o));
    (s, t0, last)
}

#[test]
fn metrics_count_runs_failures_and_missed_occurrences() {
    let (s, t0, last) = history();
    let m = Exposition::parse(&metrics(&s, &[]));
    let v = |name: &str, labels: &[(&str, &str)]| m.value(name, labels);
    let runs = |job: &str, verdict: &str| {
        v(
            "baton_job_runs_total",
            &[("baton_job", job), ("verdict", verdict)],
        )
    };

    assert_eq!(runs("good", "ok"), 1.0);
    assert_eq!(runs("good", "failed"), 0.0);
    assert_eq!(runs("bad", "failed"), 1.0);
    assert_eq!(runs("bad", "ok"), 0.0);
    assert_eq!(runs("late", "ok"), 1.0);
    assert_eq!(runs("off", "ok"), 0.0);

    // The hourly job ran its newest occurrence and missed every one between
    // the downtime's last decided hour and it; the downtime's own claim is
    // a skipped occurrence.
    let newest = t0.as_second() / 3600 * 3600;
    let missed = ((newest - last) / 3600 - 1) as f64;
    assert_eq!(
        m.total("baton_job_missed_occurrences_total", "late"),
        missed
    );
    assert!(
        v(
            "baton_job_missed_occurrences_total",
            &[("baton_job", "late"), ("reason", "superseded")]
        ) >= 1.0
    );
    assert_eq!(m.total("baton_job_missed_occurrences_total", "good"), 0.0);
    assert_eq!(
        v(
            "baton_job_skipped_occurrences_total",
            &[("baton_job", "late"), ("reason", "claimed")]
        ),
        1.0
    );
    assert_eq!(
        v(
            "baton_job_skipped_occurrences_total",
            &[("baton_job", "good"), ("reason", "coalesced")]
        ),
        0.0
    );
    assert_eq!(
        v("baton_job_lease_losses_total", &[("baton_job", "good")]),
        0.0
    );

    // When the newest success and failure finished; absent when never.
    let now = baton_lease::SystemClock.wall().as_second() as f64;
    let recent = |x: f64| (t0.as_second() as f64 - 1.0..=now + 1.0).contains(&x);
    let success = "baton_job_last_success_timestamp_seconds";
    let failure = "baton_job_last_failure_timestamp_seconds";
    let good_success = v(success, &[("baton_job", "good")]);
    assert!(recent(good_success), "{good_success}");
    let bad_failure = v(failure, &[("baton_job", "bad")]);
    assert!(recent(bad_failure), "{bad_failure}");
    assert!(!m.has(failure, &[("baton_job", "good")]));
    assert!(!m.has(success, &[("baton_job", "bad")]));
    assert!(!m.has(success, &[("baton_job", "off")]));
    assert!(!m.has(failure, &[("baton_job", "off")]));

    // One run each, well under a minute.
    for job in ["good", "bad"] {
        let b = m.buckets("baton_job_run_duration_seconds", job);
        assert_eq!(b["60"], 1.0, "{job}: {b:?}");
        assert_eq!(b["inf"], 1.0, "{job}: {b:?}");
        assert_eq!(
            v(
                "baton_job_run_duration_seconds_count",
                &[("baton_job", job)]
            ),
            1.0
        );
    }
    assert_eq!(
        m.buckets("baton_job_run_duration_seconds", "off")["inf"],
        0.0
    );

    for job in ["good", "bad", "late", "off"] {
        assert_eq!(v("baton_job_running", &[("baton_job", job)]), 0.0, "{job}");
        assert_eq!(v("baton_job_paused", &[("baton_job", job)]), 0.0, "{job}");
        assert!(!m.has("baton_running", &[("job", job)]), "{job}");
    }
    assert_eq!(v("baton_job_enabled", &[("baton_job", "good")]), 1.0);
    assert_eq!(v("baton_job_enabled", &[("baton_job", "off")]), 0.0);
    assert_eq!(
        v(
            "baton_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );

    // The process that printed them.
    assert!(v("process_resident_memory_bytes", &[]) > 0.0);
    assert!(v("process_virtual_memory_bytes", &[]) > 0.0);
    assert!(v("process_open_fds", &[]) >= 3.0);
    assert!(v("process_max_fds", &[]) >= v("process_open_fds", &[]));
    assert!(v("process_cpu_seconds_total", &[]) >= 0.0);
    let started = v("process_start_time_seconds", &[]);
    assert!(
        (now - 60.0..=now + 1.0).contains(&started),
        "{started} vs {now}"
    );

    // A pause shows at once, and the tallies do not change by reading them.
    assert_eq!(code(&s.run(&["pause", "good"])), 0);
    let m = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(m.value("baton_job_paused", &[("baton_job", "good")]), 1.0);
    assert_eq!(
        m.value(
            "baton_job_runs_total",
            &[("baton_job", "good"), ("verdict", "ok")]
        ),
        1.0
    );
}

/// The words every job shows at 0 before anything happened to it: a
/// series that appears only at its first event hides that event from
/// `increase()`.
const VERDICTS: [&str; 7] = [
    "ok",
    "failed",
    "check-failed",
    "lease-lost",
    "interrupted",
    "abandoned",
    "replaced",
];
const MISS_REASONS: [&str; 12] = [
    "outside-window",
    "superseded",
    "late",
    "catch-up-max",
    "paused",
    "disabled",
    "busy",
    "hung",
    "orphaned",
    "version-conflict",
    "ledger-unavailable",
    "start-failed",
];
const SKIP_REASONS: [&str; 2] = ["coalesced", "claimed"];
const STATES: [&str; 10] = [
    "hung", "disabled", "paused", "running", "unknown", "overdue", "failing", "crashed", "new",
    "ok",
];

#[test]
fn metrics_show_every_word_at_zero_from_the_start() {
    let s = Sched::new("[jobs.good]\nevery = \"1h\"\nrun = \"true\"\n");
    let help = stdout(&s.run(&["--help"]));
    assert!(!help.contains("__metrics"), "{help}");
    // Before anything ran, no ledger is created to read the jobs as zeros.
    let m = Exposition::parse(&metrics(&s, &[]));
    assert!(!s.env.state().join("baton.db").exists());
    let set = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect();
    for (family, label, words) in [
        ("baton_job_runs_total", "verdict", &VERDICTS[..]),
        (
            "baton_job_missed_occurrences_total",
            "reason",
            &MISS_REASONS,
        ),
        (
            "baton_job_skipped_occurrences_total",
            "reason",
            &SKIP_REASONS,
        ),
    ] {
        assert_eq!(
            m.words(family, "good", label),
            set(words),
            "{family}{{{label}}}"
        );
        assert_eq!(m.total(family, "good"), 0.0, "{family}");
    }
    assert_eq!(m.words("baton_job_state", "good", "state"), set(&STATES));
    assert_eq!(
        m.value("baton_job_lease_losses_total", &[("baton_job", "good")]),
        0.0
    );
    assert_eq!(m.value("baton_job_overdue", &[("baton_job", "good")]), 0.0);
    assert_eq!(m.value("baton_job_failing", &[("baton_job", "good")]), 0.0);
    // "Never" is no sample at all.
    for never in [
        "baton_job_last_success_timestamp_seconds",
        "baton_job_last_failure_timestamp_seconds",
    ] {
        assert!(!m.has(never, &[("baton_job", "good")]), "{never}");
    }
    // No series is labelled `job`: Prometheus sets that label on scrape.
    assert!(
        m.0.samples.iter().all(|s| !s.labels.contains_key("job")),
        "a sample is labelled job"
    );
    for sample in &m.0.samples {
        if sample.labels.contains_key("baton_job") {
            assert!(sample.metric.starts_with("baton_job_"), "{}", sample.metric);
        }
    }
}

#[test]
fn a_first_busy_miss_rises_from_zero() {
    // `hold` and `hourly` share a lock; a manual run of `hold` keeps it
    // while the hourly job's newest occurrence comes due.
    let s = Sched::new("");
    let marker = s.env.path("hold.started");
    let go = s.env.path("go");
    s.write(&format!(
        "[jobs.hold]\n{YEARLY}\nlock = \"shared\"\n\
         run = \"touch {m}; while [ ! -e {g} ]; do sleep 0.05; done\"\n\
         [jobs.hourly]\nevery = \"1h\"\ncatch_up_window = \"3h\"\nlock = \"shared\"\nrun = \"true\"\n",
        m = marker.display(),
        g = go.display()
    ));
    let t0 = baton_lease::SystemClock.wall();
    let last = t0.as_second() / 3600 * 3600 - 3600;
    downtime(&s, "hourly", t0 - SignedDuration::from_hours(48), last);
    let busy = [("baton_job", "hourly"), ("reason", "busy")];
    let before = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(
        before.value("baton_job_missed_occurrences_total", &busy),
        0.0
    );

    let holder = s
        .cmd(&["run", "hold"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the holder to run", || marker.exists());
    let o = s.run(&["tick"]);
    std::fs::write(&go, "").unwrap();
    let held = holder.wait_with_output().unwrap();
    assert!(
        held.status.success(),
        "{}",
        String::from_utf8_lossy(&held.stderr)
    );
    assert!(stderr(&o).contains("busy"), "{}", stderr(&o));

    let after = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(
        after.value("baton_job_missed_occurrences_total", &busy),
        1.0
    );
    assert_eq!(
        after.value(
            "baton_job_runs_total",
            &[("baton_job", "hold"), ("verdict", "ok")]
        ),
        1.0
    );
}

#[test]
fn metrics_show_each_jobs_state_overdue_flag_and_next_run() {
    let s = Sched::new("");
    let marker = s.env.path("slow.started");
    let go = s.env.path("go");
    s.write(&format!(
        "[jobs.good]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n\
         [jobs.bad]\nschedule = \"0 3 * * *\"\nrun = \"exit 3\"\n\
         [jobs.held]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n\
         [jobs.off]\nschedule = \"0 3 * * *\"\nrun = \"true\"\nenabled = false\n\
         [jobs.slow]\nschedule = \"0 3 * * *\"\n\
         run = \"touch {m}; while [ ! -e {g} ]; do sleep 0.05; done\"\n\
         [jobs.late]\nevery = \"1h\"\ncatch_up_window = \"1h\"\nrun = \"true\"\n",
        m = marker.display(),
        g = go.display()
    ));
    // Seen two days ago, last started a day ago: occurrences it should
    // have run since went by.
    let t0 = baton_lease::SystemClock.wall();
    let last = (t0 - SignedDuration::from_hours(24)).as_second() / 3600 * 3600;
    downtime(&s, "late", t0 - SignedDuration::from_hours(48), last);
    for job in ["good", "bad", "held"] {
        s.run(&["run", job]);
    }
    assert_eq!(code(&s.run(&["pause", "held"])), 0);
    let slow = s
        .cmd(&["run", "slow"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the slow run to start", || marker.exists());
    let m = Exposition::parse(&metrics(&s, &[]));
    std::fs::write(&go, "").unwrap();
    slow.wait_with_output().unwrap();

    assert_eq!(m.states_of("good"), ["ok"]);
    assert_eq!(m.states_of("bad"), ["failing"]);
    assert_eq!(m.states_of("held"), ["paused"]);
    assert_eq!(m.states_of("off"), ["disabled"]);
    assert_eq!(m.states_of("slow"), ["running"]);
    assert_eq!(m.value("baton_job_running", &[("baton_job", "slow")]), 1.0);
    assert_eq!(m.value("baton_job_paused", &[("baton_job", "held")]), 1.0);

    // One job failing, one overdue; every other at 0.
    for (flag, on) in [("baton_job_failing", "bad"), ("baton_job_overdue", "late")] {
        for job in ["good", "bad", "held", "off", "slow", "late"] {
            assert_eq!(
                m.value(flag, &[("baton_job", job)]),
                f64::from(u8::from(job == on)),
                "{flag} {job}"
            );
        }
    }

    // The next 03:00 UTC after the scrape.
    let next = m.value(
        "baton_job_next_run_timestamp_seconds",
        &[("baton_job", "good")],
    );
    let day = 86_400;
    let after = |t: Timestamp| (t.as_second() - 3 * 3600).div_euclid(day) * day + day + 3 * 3600;
    let now = baton_lease::SystemClock.wall();
    assert!(
        [after(t0), after(now)].contains(&(next as i64)),
        "{next} vs {t0} and {now}"
    );
    let hourly = m.value(
        "baton_job_next_run_timestamp_seconds",
        &[("baton_job", "late")],
    );
    assert_eq!(hourly as i64 % 3600, 0, "{hourly}");
    assert!(
        (t0.as_second()..=now.as_second() + 3600).contains(&(hourly as i64)),
        "{hourly}"
    );
}

/// `baton_job_failing` says the newest finished run failed whatever the
/// state ranks above `failing`: while the job runs again, and while it is
/// paused; its next success clears it.
#[test]
fn a_failed_job_is_failing_while_it_runs_again_and_while_it_is_paused() {
    let s = Sched::new("");
    let started = s.env.path("started");
    let go = s.env.path("go");
    let pass = s.env.path("pass");
    s.write(&format!(
        "[jobs.flaky]\nschedule = \"0 3 * * *\"\n\
         run = \"touch {st}; while [ ! -e {g} ]; do sleep 0.05; done; test -e {p}\"\n",
        st = started.display(),
        g = go.display(),
        p = pass.display()
    ));
    let flaky = [("baton_job", "flaky")];
    // It fails.
    std::fs::write(&go, "").unwrap();
    assert_eq!(code(&s.run(&["run", "flaky"])), 1);
    let m = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(m.states_of("flaky"), ["failing"]);
    assert_eq!(m.value("baton_job_failing", &flaky), 1.0);
    // It runs again: running, and still failing.
    std::fs::remove_file(&go).unwrap();
    std::fs::remove_file(&started).unwrap();
    let again = s
        .cmd(&["run", "flaky"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the second run to start", || started.exists());
    let m = Exposition::parse(&metrics(&s, &[]));
    std::fs::write(&go, "").unwrap();
    let out = again.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(m.states_of("flaky"), ["running"]);
    assert_eq!(m.value("baton_job_failing", &flaky), 1.0);
    // Paused after failing: paused, and still failing.
    assert_eq!(code(&s.run(&["pause", "flaky"])), 0);
    let m = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(m.states_of("flaky"), ["paused"]);
    assert_eq!(m.value("baton_job_failing", &flaky), 1.0);
    // A success clears it.
    assert_eq!(code(&s.run(&["resume", "flaky"])), 0);
    std::fs::write(&pass, "").unwrap();
    assert_eq!(code(&s.run(&["run", "flaky"])), 0);
    let m = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(m.states_of("flaky"), ["ok"]);
    assert_eq!(m.value("baton_job_failing", &flaky), 0.0);
}

/// A job's entry in `baton status --json`.
fn status_of(s: &Sched, job: &str) -> serde_json::Value {
    let v = s.json(&["status", "--json"]);
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["job"] == job)
        .unwrap_or_else(|| panic!("no {job} in {v}"))
        .clone()
}

/// A run in flight shows when it started (the ledger's start, as `status`
/// gives it), the job's budget, and whether it is past it: once the run
/// has raised its own `overrunning` alert, `baton_job_overrunning` says 1,
/// and a run within its budget says 0. A job with nothing in flight and no
/// budget has every one at 0, and so does a job whose run has ended (its
/// budget stays).
#[test]
fn a_run_in_flight_shows_its_start_its_budget_and_whether_it_overruns() {
    let s = Sched::new("");
    let go = s.env.path("go");
    let marker = |job: &str| s.env.path(&format!("{job}.started"));
    let wait = |job: &str| {
        format!(
            "run = \"touch {m}; while [ ! -e {g} ]; do sleep 0.05; done\"\n",
            m = marker(job).display(),
            g = go.display()
        )
    };
    s.write(&format!(
        "[jobs.stuck]\nschedule = \"0 3 * * *\"\nmax_runtime = \"1s\"\n{}\
         [jobs.long]\nschedule = \"0 3 * * *\"\nmax_runtime = \"24h\"\n{}\
         [jobs.idle]\nschedule = \"0 3 * * *\"\nmax_runtime = \"0\"\nrun = \"true\"\n",
        wait("stuck"),
        wait("long")
    ));
    // idle has a finished run, nothing in flight and no budget (the
    // default is 2h).
    assert_eq!(code(&s.run(&["run", "idle"])), 0);
    let before = baton_lease::SystemClock.wall();
    let runs: Vec<_> = ["stuck", "long"]
        .map(|job| {
            s.cmd(&["run", job])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .into();
    eventually("both runs to start", || {
        marker("stuck").exists() && marker("long").exists()
    });
    // The run judges its budget from its command's start, after the
    // ledger's start of it that the metrics judge from: once it has raised
    // its alert (alerts.log has it at once, the ledger after the step),
    // they say it overruns too.
    let alerts = s.env.state().join("logs").join("alerts.log");
    eventually("stuck's overrunning alert", || {
        std::fs::read_to_string(&alerts).is_ok_and(|a| {
            a.lines()
                .any(|l| l.contains("\"overrunning\"") && l.contains("\"stuck\""))
        })
    });
    let text = metrics(&s, &[]);
    let after = baton_lease::SystemClock.wall();
    let m = Exposition::parse(&text);
    let v = |name: &str, job: &str| m.value(name, &[("baton_job", job)]);

    for (job, running, over, budget) in [
        ("stuck", 1.0, 1.0, 1.0),
        ("long", 1.0, 0.0, 86_400.0),
        ("idle", 0.0, 0.0, 0.0),
    ] {
        assert_eq!(v("baton_job_running", job), running, "{job}");
        assert_eq!(v("baton_job_overrunning", job), over, "{job}");
        assert_eq!(v("baton_job_max_runtime_seconds", job), budget, "{job}");
    }
    assert_eq!(v("baton_job_run_started_timestamp_seconds", "idle"), 0.0);
    for job in ["stuck", "long"] {
        let shown = v("baton_job_run_started_timestamp_seconds", job);
        let st = status_of(&s, job);
        assert!(st["last_run"]["finished"].is_null(), "{st}");
        let ledger: Timestamp = st["last_run"]["started"].as_str().unwrap().parse().unwrap();
        assert!(
            (shown - ledger.as_duration().as_secs_f64()).abs() < 1e-3,
            "{job}: {shown} vs the ledger's {ledger}"
        );
        assert!(
            (before.as_second() as f64..=after.as_second() as f64 + 1.0).contains(&shown),
            "{job}: {shown} not between {before} and {after}"
        );
    }
    if promtool().is_some() {
        let o = run_promtool(&["check", "metrics"], &text);
        assert!(
            o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
            "promtool: {}{}\n{text}",
            stdout(&o),
            stderr(&o)
        );
    }

    // The runs end: nothing in flight, nothing overrunning; the budgets stay.
    std::fs::write(&go, "").unwrap();
    for run in runs {
        let out = run.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
    }
    let m = Exposition::parse(&metrics(&s, &[]));
    let v = |name: &str, job: &str| m.value(name, &[("baton_job", job)]);
    for (job, budget) in [("stuck", 1.0), ("long", 86_400.0), ("idle", 0.0)] {
        assert_eq!(v("baton_job_running", job), 0.0, "{job}");
        assert_eq!(
            v("baton_job_run_started_timestamp_seconds", job),
            0.0,
            "{job}"
        );
        assert_eq!(v("baton_job_overrunning", job), 0.0, "{job}");
        assert_eq!(v("baton_job_max_runtime_seconds", job), budget, "{job}");
    }
}

/// `promtool`, when it is installed (Debian's `prometheus` package has it).
pub(crate) fn promtool() -> Option<&'static str> {
    let found = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: promtool is not installed (apt-get install prometheus)");
    }
    found.then_some("promtool")
}

/// Runs `promtool ARGS` with `input` on its standard input.
pub(crate) fn run_promtool(args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn metrics_of_a_real_history_pass_promtool_check_metrics() {
    if promtool().is_none() {
        return;
    }
    let (s, _, _) = history();
    let text = metrics(&s, &[]);
    let o = run_promtool(&["check", "metrics"], &text);
    assert!(
        o.status.success() && o.stdout.is_empty() && o.stderr.is_empty(),
        "promtool: {}{}\n{text}",
        stdout(&o),
        stderr(&o)
    );
}

/// A Python with `prometheus_client` (Debian's `python3-prometheus-client`).
fn python_with_prometheus_client() -> Option<&'static str> {
    let found = ["python3", "/usr/bin/python3"].into_iter().find(|py| {
        Command::new(py)
            .args(["-c", "import prometheus_client"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    if found.is_none() {
        eprintln!(
            "skipped: no python3 with prometheus_client (apt-get install python3-prometheus-client)"
        );
    }
    found
}

/// Parses `text` with `prometheus_client`'s parser `module` and prints each
/// family as `name type samples`.
fn python_families(python: &str, module: &str, text: &str) -> BTreeMap<String, (String, usize)> {
    use std::io::Write;
    let script = format!(
        "import sys\nfrom {module} import text_string_to_metric_families as p\n\
         for f in p(sys.stdin.read()):\n    print(f.name, f.type, len(f.samples))\n"
    );
    let mut child = Command::new(python)
        .args(["-c", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{module}: {}\n{text}", stderr(&o));
    stdout(&o)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            (f[0].to_owned(), (f[1].to_owned(), f[2].parse().unwrap()))
        })
        .collect()
}

#[test]
fn prometheus_client_reads_both_formats_with_every_counter_whole() {
    let Some(python) = python_with_prometheus_client() else {
        return;
    };
    let (s, _, _) = history();
    let classic = python_families(python, "prometheus_client.parser", &metrics(&s, &[]));
    let open = python_families(
        python,
        "prometheus_client.openmetrics.parser",
        &metrics(&s, &["--openmetrics"]),
    );
    for (name, (kind, n)) in &classic {
        // The classic parser once read every counter as an empty family
        // beside an untyped one per sample.
        assert_ne!(kind, "unknown", "{name}: {classic:?}");
        if kind == "counter" {
            assert!(*n > 0, "{name}: {classic:?}");
        }
    }
    assert_eq!(
        classic["baton_job_runs"],
        ("counter".into(), 4 * VERDICTS.len())
    );
    assert_eq!(
        classic["baton_job_missed_occurrences"].1,
        4 * MISS_REASONS.len()
    );
    assert_eq!(classic["baton_build_info"].0, "gauge");
    assert_eq!(open["baton_build"].0, "info");
    // The same families with the same samples, but for the info's name.
    let names = |m: &BTreeMap<String, (String, usize)>| -> BTreeMap<String, (String, usize)> {
        m.iter()
            .filter(|(k, _)| !k.starts_with("baton_build"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(names(&classic), names(&open));
}

#[test]
fn openmetrics_has_units_and_the_series_of_0_0_4() {
    let (s, _, _) = history();
    let text = metrics(&s, &[]);
    let open = metrics(&s, &["--openmetrics"]);
    assert!(
        !text.contains("# UNIT") && !text.contains("# EOF"),
        "{text}"
    );
    for unit in [
        "# UNIT baton_job_run_duration_seconds seconds",
        "# UNIT baton_job_last_success_timestamp_seconds seconds",
        "# UNIT baton_job_last_failure_timestamp_seconds seconds",
        "# UNIT baton_job_next_run_timestamp_seconds seconds",
        "# UNIT process_cpu_seconds seconds",
        "# UNIT process_resident_memory_bytes bytes",
    ] {
        assert!(open.lines().any(|l| l == unit), "{unit}\n{open}");
    }
    assert!(open.contains("# TYPE baton_job_runs counter\n"), "{open}");
    assert!(
        text.contains("# TYPE baton_job_runs_total counter\n"),
        "{text}"
    );
    // Every job series alike, and every count: only the process's own
    // figures (and a next run, at an hour's turn) may change between two
    // invocations.
    let jobs = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("baton_job_"))
            .map(|l| {
                let (series, value) = l.rsplit_once(' ').unwrap();
                let counted = ["_total{", "_bucket{", "_sum{", "_count{"]
                    .iter()
                    .any(|c| series.contains(c));
                if counted {
                    l.to_owned()
                } else {
                    assert!(value.parse::<f64>().is_ok(), "{l}");
                    series.to_owned()
                }
            })
            .collect()
    };
    assert_eq!(jobs(&text), jobs(&open));
    assert!(jobs(&text).len() > 100);
    let m = Exposition::parse_openmetrics(&open);
    assert_eq!(
        m.value(
            "baton_job_runs_total",
            &[("baton_job", "bad"), ("verdict", "failed")]
        ),
        1.0
    );
}
