//! `baton __metrics`, the exposition `GET /metrics` will serve, after real
//! ticks: parsed by a Prometheus text parser, its values checked against
//! what ran, failed and was missed.

use std::collections::HashMap;

use baton_lease::Clock;
use prometheus_parse::{LineInfo, Scrape, Value};

use crate::policies::downtime;
use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// The samples of an exposition, keyed by name and sorted labels.
pub(crate) struct Exposition(Scrape);

impl Exposition {
    pub(crate) fn parse(text: &str) -> Self {
        // Every line is a comment or a sample the parser understands.
        for line in text.lines() {
            let understood = match LineInfo::parse(line) {
                LineInfo::Sample { .. } | LineInfo::Doc { .. } | LineInfo::Type { .. } => true,
                LineInfo::Ignored => line == "# EOF",
                LineInfo::Empty => false,
            };
            assert!(understood, "not understood: {line:?}\n{text}");
        }
        assert!(text.ends_with("# EOF\n"), "{text}");
        let lines = text.lines().map(|l| Ok(l.to_owned()));
        Self(Scrape::parse(lines).unwrap())
    }

    /// The value of the sample `name{labels}`, which must exist once.
    pub(crate) fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let found: Vec<&Value> = self
            .0
            .samples
            .iter()
            .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(v)))
            .filter(|s| s.labels.len() == labels.len() || !matches!(s.value, Value::Histogram(_)))
            .map(|s| &s.value)
            .collect();
        assert_eq!(found.len(), 1, "{name}{labels:?}: {found:?}");
        match found[0] {
            Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
            other => panic!("{name}{labels:?} is {other:?}"),
        }
    }

    /// The cumulative buckets of the histogram `name{job}`, by bound.
    fn buckets(&self, name: &str, job: &str) -> HashMap<String, f64> {
        let s = self
            .0
            .samples
            .iter()
            .find(|s| s.metric == name && s.labels.get("job") == Some(job))
            .unwrap_or_else(|| panic!("no {name} for {job}"));
        let Value::Histogram(h) = &s.value else {
            panic!("{name} is {:?}", s.value)
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
            .filter(|s| s.metric == name && s.labels.get("job") == Some(job))
            .map(|s| match s.value {
                Value::Counter(v) | Value::Untyped(v) => v,
                ref other => panic!("{name} is {other:?}"),
            })
            .sum()
    }
}

#[test]
fn metrics_count_runs_failures_and_missed_occurrences() {
    let env = crate::support::Env::new();
    let s = Sched { env };
    // Two jobs due now (one occurrence a year, caught up for 400 days), one
    // succeeding and one failing; an hourly job back from a day of downtime;
    // a disabled job that never runs.
    let yearly = "schedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"";
    s.write(&format!(
        "[jobs.good]\n{yearly}\nrun = \"true\"\n\
         [jobs.bad]\n{yearly}\nrun = \"false\"\n\
         [jobs.late]\nevery = \"1h\"\ncatch_up_window = \"3h\"\nrun = \"true\"\n\
         [jobs.off]\n{yearly}\nrun = \"true\"\nenabled = false\n"
    ));
    let t0 = baton_lease::SystemClock.wall();
    let last = (t0 - jiff::SignedDuration::from_hours(24)).as_second() / 3600 * 3600;
    downtime(&s, "late", t0 - jiff::SignedDuration::from_hours(48), last);
    crate::sched::known_since(&s, &["good", "bad"], crate::sched::before_new_year());
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 1, "a failure and a miss: {}", stderr(&o));

    let o = s.run(&["__metrics"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let m = Exposition::parse(&stdout(&o));
    let v = |name: &str, labels: &[(&str, &str)]| m.value(name, labels);

    assert_eq!(
        v("baton_runs_total", &[("job", "good"), ("verdict", "ok")]),
        1.0
    );
    assert_eq!(
        v(
            "baton_runs_total",
            &[("job", "good"), ("verdict", "failed")]
        ),
        0.0
    );
    assert_eq!(
        v("baton_runs_total", &[("job", "bad"), ("verdict", "failed")]),
        1.0
    );
    assert_eq!(
        v("baton_runs_total", &[("job", "bad"), ("verdict", "ok")]),
        0.0
    );
    assert_eq!(
        v("baton_runs_total", &[("job", "late"), ("verdict", "ok")]),
        1.0
    );
    assert_eq!(
        v("baton_runs_total", &[("job", "off"), ("verdict", "ok")]),
        0.0
    );

    // The hourly job ran its newest occurrence and missed every one between
    // the downtime's last decided hour and it; the downtime's own claim is
    // a skipped occurrence.
    let newest = t0.as_second() / 3600 * 3600;
    let missed = ((newest - last) / 3600 - 1) as f64;
    assert_eq!(m.total("baton_missed_occurrences_total", "late"), missed);
    assert!(
        v(
            "baton_missed_occurrences_total",
            &[("job", "late"), ("reason", "superseded")]
        ) >= 1.0
    );
    assert_eq!(m.total("baton_missed_occurrences_total", "good"), 0.0);
    assert_eq!(
        v(
            "baton_skipped_occurrences_total",
            &[("job", "late"), ("reason", "claimed")]
        ),
        1.0
    );
    assert_eq!(
        v(
            "baton_skipped_occurrences_total",
            &[("job", "good"), ("reason", "coalesced")]
        ),
        0.0
    );
    assert_eq!(v("baton_lease_losses_total", &[("job", "good")]), 0.0);

    let now = baton_lease::SystemClock.wall().as_second() as f64;
    let recent = |x: f64| (t0.as_second() as f64 - 1.0..=now + 1.0).contains(&x);
    let good_success = v("baton_last_success_timestamp_seconds", &[("job", "good")]);
    assert!(recent(good_success), "{good_success}");
    assert_eq!(
        v("baton_last_failure_timestamp_seconds", &[("job", "good")]),
        0.0
    );
    let bad_failure = v("baton_last_failure_timestamp_seconds", &[("job", "bad")]);
    assert!(recent(bad_failure), "{bad_failure}");
    assert_eq!(
        v("baton_last_success_timestamp_seconds", &[("job", "bad")]),
        0.0
    );
    assert_eq!(
        v("baton_last_success_timestamp_seconds", &[("job", "off")]),
        0.0
    );

    // One run each, well under a minute.
    for job in ["good", "bad"] {
        let b = m.buckets("baton_run_duration_seconds", job);
        assert_eq!(b["60"], 1.0, "{job}: {b:?}");
        assert_eq!(b["inf"], 1.0, "{job}: {b:?}");
        assert_eq!(v("baton_run_duration_seconds_count", &[("job", job)]), 1.0);
    }
    assert_eq!(m.buckets("baton_run_duration_seconds", "off")["inf"], 0.0);

    for job in ["good", "bad", "late", "off"] {
        assert_eq!(v("baton_running", &[("job", job)]), 0.0, "{job}");
        assert_eq!(v("baton_job_paused", &[("job", job)]), 0.0, "{job}");
    }
    assert_eq!(v("baton_job_enabled", &[("job", "good")]), 1.0);
    assert_eq!(v("baton_job_enabled", &[("job", "off")]), 0.0);
    assert_eq!(
        v("baton_info", &[("version", env!("CARGO_PKG_VERSION"))]),
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
    let m = Exposition::parse(&stdout(&s.run(&["__metrics"])));
    assert_eq!(m.value("baton_job_paused", &[("job", "good")]), 1.0);
    assert_eq!(
        m.value("baton_runs_total", &[("job", "good"), ("verdict", "ok")]),
        1.0
    );
}

#[test]
fn metrics_is_hidden_from_help() {
    let s = Sched::new("[jobs.good]\nevery = \"1h\"\nrun = \"true\"\n");
    let help = stdout(&s.run(&["--help"]));
    assert!(!help.contains("__metrics"), "{help}");
    // Before anything ran, no ledger is created to read the jobs as zeros.
    let o = s.run(&["__metrics"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let m = Exposition::parse(&stdout(&o));
    assert_eq!(
        m.value("baton_runs_total", &[("job", "good"), ("verdict", "ok")]),
        0.0
    );
    assert!(!s.env.state().join("baton.db").exists());
}
