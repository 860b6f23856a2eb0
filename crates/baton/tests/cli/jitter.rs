//! `jitter`: each occurrence starts at a fixed offset after it, derived from
//! the job's name, the same on every host and every tick; its identity
//! (`BATON_OCCURRENCE`, the ledger's key) does not move, so it still runs
//! once. Through the real binary: `calendar`, `status`, `config`, ticks on
//! a clock set by faketime, the daemon, and two state directories sharing
//! a PostgreSQL store.

use std::path::Path;
use std::process::Stdio;

use baton_testkit::pg::PgServer;

use crate::daemon::Daemon;
use crate::sched::Sched;
use crate::support::{BATON, baton_on, code, pause, stderr, stdout};

/// The offset `calendar --job NAME` reports, in seconds.
fn offset_of(s: &Sched, job: &str) -> i64 {
    let v = s.json(&["calendar", "--job", job, "--json", "--count", "1"]);
    v["jitter_offset_seconds"]
        .as_i64()
        .unwrap_or_else(|| panic!("no offset for {job}: {v}"))
}

/// Each line of `file`: an occurrence and the second its run started.
fn starts(file: &Path) -> Vec<(i64, f64)> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let (occ, at) = l.split_once(' ').unwrap();
            let occ = occ.parse::<jiff::Timestamp>().unwrap().as_second();
            (occ, at.parse::<f64>().unwrap())
        })
        .collect()
}

/// A job's command that appends its occurrence and the instant it started.
fn recording(file: &Path) -> String {
    format!(
        "echo $BATON_OCCURRENCE $(date +%s.%N) >> {}",
        file.display()
    )
}

/// Checks that each occurrence ran once and never before its start.
fn each_once_at_its_start(runs: &[(i64, f64)], offset: i64) {
    let mut seen = std::collections::BTreeSet::new();
    for &(occ, at) in runs {
        assert!(seen.insert(occ), "occurrence {occ} ran twice: {runs:?}");
        // The job's own clock reading comes after its start; a whole
        // second of slack for `date` against the scheduler's clock read.
        assert!(
            at + 1.0 >= (occ + offset) as f64,
            "occurrence {occ} (offset {offset}s) started at {at}, before {}: {runs:?}",
            occ + offset
        );
    }
}

#[test]
fn jobs_with_one_schedule_spread_over_the_window_and_two_hosts_agree() {
    let jobs: String = (0..30)
        .map(|i| format!("[jobs.report-{i}]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n"))
        .collect();
    let text =
        format!("[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\njitter = \"1h\"\n{jobs}");
    let (a, b) = (Sched::new(&text), Sched::new(&text));
    let from = "2026-12-03T00:00:00Z";
    let start_of = |s: &Sched, i: usize| {
        let v = s.json(&[
            "calendar",
            "--job",
            &format!("report-{i}"),
            "--json",
            "--count",
            "1",
            "--from",
            from,
        ]);
        assert_eq!(v["occurrences"][0]["utc"], "2026-12-03T03:00:00Z", "{v}");
        v["occurrences"][0]["starts"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .unwrap()
    };
    let three = "2026-12-03T03:00:00Z"
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_second();
    let mut offsets = std::collections::BTreeSet::new();
    for i in 0..30 {
        let (here, there) = (start_of(&a, i), start_of(&b, i));
        assert_eq!(here, there, "report-{i}: two hosts disagree");
        let off = here.as_second() - three;
        assert!(
            (0..3600).contains(&off),
            "report-{i}: offset {off}s is outside the hour"
        );
        offsets.insert(off);
    }
    assert!(
        offsets.len() >= 25,
        "30 jobs share too few starts: {offsets:?}"
    );
    for quarter in 0..4 {
        let q = quarter * 900..quarter * 900 + 900;
        assert!(
            offsets.iter().any(|o| q.contains(o)),
            "no start in {q:?}: {offsets:?}"
        );
    }
    // status names the same start, and the occurrence it is for.
    let st = a.json(&["status", "report-7", "--json"]);
    let job = &st["jobs"][0];
    let off = job["jitter_offset_seconds"].as_i64().unwrap();
    assert_eq!(off, offset_of(&a, "report-7"));
    let next: jiff::Timestamp = job["next_run"].as_str().unwrap().parse().unwrap();
    let occurrence: jiff::Timestamp = job["next_occurrence"].as_str().unwrap().parse().unwrap();
    assert_eq!(next.as_second() - occurrence.as_second(), off, "{job}");
    assert_eq!(occurrence.as_second() % 86_400, 3 * 3600, "{job}");
    let text = stdout(&a.run(&["status", "report-7"]));
    assert!(text.contains("(jitter offset "), "{text}");
    // config shows the key and where it was set.
    let config = stdout(&a.run(&["config"]));
    assert!(config.contains("jitter = \"1h\""), "{config}");
}

#[test]
fn a_jitter_longer_than_the_schedule_allows_is_refused() {
    let s =
        Sched::new("[jobs.fast]\nschedule = \"*/5 * * * *\"\njitter = \"6m\"\nrun = \"true\"\n");
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("jobs.fast.jitter") && e.contains("at most 5m"),
        "{e}"
    );
    // Inherited from [scheduler], the message names where it was set.
    s.write("[scheduler]\nstate_dir = \"STATE\"\njitter = \"2m\"\n[jobs.fast]\nschedule = \"* * * * *\"\nrun = \"true\"\n");
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("scheduler.jitter"), "{}", stderr(&o));
    // Not a duration: refused as any duration is.
    s.write("[jobs.fast]\nschedule = \"* * * * *\"\njitter = \"soon\"\nrun = \"true\"\n");
    assert_eq!(code(&s.run(&["status"])), 2);
}

/// `baton tick` at the instant `at` (`YYYY-MM-DD HH:MM:SS` UTC) by faketime.
fn tick_at(s: &Sched, at: &str) {
    let o = crate::support::faketime()
        .args(["-f", &format!("@{at}"), BATON, "tick"])
        .env("BATON_CONFIG", s.config())
        .env("TZ", "UTC")
        .env_remove("BATON_STATE_DIR")
        .env_remove("BATON_STORE_URL")
        .current_dir(s.env.tmp.path())
        .stdin(Stdio::null())
        .output()
        .expect("faketime (apt-get install faketime)");
    assert!(code(&o) == 0, "tick at {at}: {}{}", stdout(&o), stderr(&o));
}

#[test]
fn a_tick_runs_an_occurrence_at_its_start_and_not_before() {
    let s = Sched::new("");
    let out = s.env.path("ran.txt");
    s.write(&format!(
        "[jobs.report]\nschedule = \"0 * * * *\"\njitter = \"1h\"\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        out.display()
    ));
    let off = offset_of(&s, "report");
    assert!(off > 10, "the test needs an offset past 10s, not {off}");
    let ten: jiff::Timestamp = "2026-12-03T10:00:00Z".parse().unwrap();
    let at = |secs: i64| {
        let t = ten
            .checked_add(jiff::SignedDuration::from_secs(secs))
            .unwrap();
        jiff::fmt::strtime::format(
            "%Y-%m-%d %H:%M:%S",
            &t.to_zoned_datetime(jiff::tz::TimeZone::UTC),
        )
        .unwrap()
    };
    // Seen at 10:00:00, before the occurrence starts.
    tick_at(&s, &at(0));
    tick_at(&s, &at(off - 5));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap_or_default(),
        "",
        "ran before its start"
    );
    tick_at(&s, &at(off + 1));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "2026-12-03T10:00:00Z\n"
    );
    tick_at(&s, &at(off + 3));
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "2026-12-03T10:00:00Z\n",
        "ran twice"
    );
    // Nothing was called missed on the way.
    let st = s.json(&["status", "report", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
}

#[test]
fn the_daemon_starts_each_occurrence_at_its_offset() {
    let s = Sched::new("");
    let out = s.env.path("ran.txt");
    s.write(&format!(
        "[jobs.station]\nschedule = \"*/10 * * * * *\"\njitter = \"10s\"\nrun = \"{}\"\n",
        recording(&out)
    ));
    let off = offset_of(&s, "station");
    let d = Daemon::start(&s, &[]);
    pause(32_000);
    drop(d);
    let runs = starts(&out);
    assert!(runs.len() >= 2, "too few runs: {runs:?}");
    each_once_at_its_start(&runs, off);
}

#[test]
fn two_hosts_on_one_store_run_each_occurrence_once_at_its_offset() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ran.txt");
    let job = format!(
        "[jobs.station]\nschedule = \"*/10 * * * * *\"\njitter = \"10s\"\nrun = \"{}\"\n",
        recording(&out)
    );
    let configs = crate::sched::two_hosts_on(dir.path(), &pg, "", &job);
    let o = baton_on(&configs[0], &["calendar", "--job", "station", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let off = v["jitter_offset_seconds"].as_i64().unwrap();
    // Both hosts tick every half second for 32 s.
    let tickers: Vec<_> = configs
        .iter()
        .map(|config| {
            let config = config.clone();
            std::thread::spawn(move || {
                for _ in 0..64 {
                    let _ = baton_on(&config, &["tick"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .status();
                    pause(500);
                }
            })
        })
        .collect();
    for t in tickers {
        t.join().unwrap();
    }
    let runs = starts(&out);
    assert!(runs.len() >= 2, "too few runs: {runs:?}");
    each_once_at_its_start(&runs, off);
}
