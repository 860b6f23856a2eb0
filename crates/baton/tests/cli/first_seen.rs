//! A new job waits for its first occurrence: an occurrence before the job
//! was first seen (by a tick or by the daemon) is neither run nor missed,
//! whether the job was added to `baton.toml`, to `jobs.d/` or over the
//! daemon's `PUT`, or the state directory is fresh. A job seen before keeps
//! its catch-up, its schedule edited or not.
//!
//! Times are set with faketime, one process at a time.

use std::path::Path;
use std::process::{Output, Stdio};

use crate::daemon::Daemon;
use crate::policies::read_lines;
use crate::sched::{Sched, lines};
use crate::support::{BATON, code, eventually, pause, stderr, stdout};

/// `baton ARGS` with the wall clock starting at `at` (UTC), as faketime's
/// `@` sets it for this one process.
pub(crate) fn at(s: &Sched, at: &str, args: &[&str]) -> Output {
    let mut c = crate::support::faketime();
    c.args(["-f", &format!("@{at}"), BATON])
        .args(args)
        .env("TZ", "UTC")
        .env("BATON_CONFIG", s.config())
        .env_remove("BATON_STATE_DIR")
        .env_remove("BATON_ENABLED")
        .current_dir(s.env.tmp.path())
        .stdin(Stdio::null());
    c.output().expect("faketime (apt-get install faketime)")
}

/// A job `name` on `when` that appends "NAME OCCURRENCE" to `out`.
fn recording(name: &str, when: &str, out: &Path) -> String {
    format!(
        "[jobs.{name}]\n{when}\nrun = \"echo $BATON_JOB $BATON_OCCURRENCE >> {}\"\n",
        out.display()
    )
}

fn sorted(p: &Path) -> Vec<String> {
    let mut v = read_lines(p);
    v.sort();
    v
}

fn missed_total(s: &Sched, now: &str, job: &str) -> u64 {
    let o = at(s, now, &["status", job, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("status: not JSON ({e}): {}", stderr(&o)));
    v["jobs"][0]["missed"]["total"].as_u64().unwrap()
}

fn alerts(s: &Sched) -> String {
    std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap_or_default()
}

#[test]
fn a_job_added_to_the_file_or_to_jobs_d_waits_for_its_first_occurrence() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    let nightly = "schedule = \"30 2 * * *\"";
    let main = recording("main", nightly, &out);
    s.write(&main);
    let o = at(&s, "2026-03-09 12:00:00", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&out), 0);
    // Two nightly 02:30 jobs are added at 02:50, one in the file and one in
    // jobs.d/: their 02:30 came before they existed. The job seen before
    // catches its own 02:30 up, as ever.
    s.write(&format!("{main}{}", recording("added", nightly, &out)));
    let d = s.env.path("jobs.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("dropped.toml"),
        format!(
            "{nightly}\nrun = \"echo $BATON_JOB $BATON_OCCURRENCE >> {}\"\n",
            out.display()
        ),
    )
    .unwrap();
    let o = at(&s, "2026-03-10 02:50:00", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "", "a tick spoke");
    assert_eq!(sorted(&out), ["main 2026-03-10T02:30:00Z"]);
    for job in ["added", "dropped"] {
        assert_eq!(missed_total(&s, "2026-03-10 02:51:00", job), 0, "{job}");
    }
    assert_eq!(alerts(&s), "");
    // Their first occurrence after it runs when it comes.
    let o = at(&s, "2026-03-11 02:30:05", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        sorted(&out),
        [
            "added 2026-03-11T02:30:00Z",
            "dropped 2026-03-11T02:30:00Z",
            "main 2026-03-10T02:30:00Z",
            "main 2026-03-11T02:30:00Z",
        ]
    );
    // A job seen before whose schedule is edited catches up as ever: its
    // 02:45 of yesterday (after its last decided occurrence) is older than
    // the window, and today's runs.
    s.write(&format!(
        "{}{}",
        recording("main", "schedule = \"45 2 * * *\"", &out),
        recording("added", nightly, &out)
    ));
    let o = at(&s, "2026-03-12 03:00:00", &["tick"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("older than the catch-up window (2026-03-11 02:45:00 +00:00)"),
        "{}",
        stderr(&o)
    );
    let all = sorted(&out);
    for want in [
        "added 2026-03-12T02:30:00Z",
        "dropped 2026-03-12T02:30:00Z",
        "main 2026-03-12T02:45:00Z",
    ] {
        assert!(all.iter().any(|l| l == want), "{want} did not run: {all:?}");
    }
    assert_eq!(all.len(), 7, "{all:?}");
}

#[test]
fn a_fresh_state_directory_runs_nothing_for_the_past() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    // Its occurrence of 1 January is within a catch-up window of 400 days.
    s.write(&recording(
        "yearly",
        "schedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"",
        &out,
    ));
    for _ in 0..2 {
        let o = s.run(&["tick"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(stderr(&o), "", "a tick spoke");
    }
    assert_eq!(lines(&out), 0, "the past ran: {:?}", read_lines(&out));
    let st = s.json(&["status", "yearly", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
    assert_eq!(alerts(&s), "");
    // `backfill` is there for the past.
    let year = baton_lease::Clock::wall(&baton_lease::SystemClock)
        .to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .year();
    let jan1 = format!("{year}-01-01T00:00:00Z");
    let o = s.run(&["backfill", "yearly", "--from", &jan1, "--to", &jan1]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read_lines(&out), [format!("yearly {jan1}")]);
}

#[test]
fn a_job_put_to_the_daemon_waits_for_its_first_occurrence() {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let out = s.env.path("ran");
    let d = Daemon::start(&s, &[]);
    let body = serde_json::json!({
        "every": "1h",
        "run": format!("echo $BATON_OCCURRENCE >> {}", out.display()),
    })
    .to_string();
    let r = d.request(
        "PUT",
        "/v1/jobs/hourly",
        &[("Content-Type", "application/json")],
        &body,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    // The occurrence of this hour came before the job did.
    let t = d.post("/v1/tick", "");
    assert_eq!(t.status, 200, "{}", t.body);
    let ticked = t.json();
    for list in ["started", "skipped", "missed"] {
        assert!(
            ticked[list]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["job"] != "hourly"),
            "{ticked}"
        );
    }
    // So a run by hand right after it finds the lock free.
    let r = d.post("/v1/jobs/hourly/run", "");
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("the manual run to finish", || {
        d.get("/v1/jobs/hourly/runs").json()[0]["verdict"] == "ok"
    });
    assert_eq!(read_lines(&out), ["manual"]);
    let st = s.json(&["status", "hourly", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
    assert_eq!(d.terminate(), Some(0));
}

#[test]
fn a_sighting_by_a_clock_ahead_does_not_keep_a_new_job_waiting() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&recording("often", "every = \"2s\"", &out));
    // A tick an hour ahead sees the job first.
    let mut c = crate::support::faketime();
    c.args(["-f", "+1h", BATON, "tick"])
        .env("BATON_CONFIG", s.config())
        .env_remove("BATON_STATE_DIR")
        .current_dir(s.env.tmp.path())
        .stdin(Stdio::null());
    let o = c.output().expect("faketime (apt-get install faketime)");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&out), 0);
    // This clock neither waits for that sighting nor writes its own over
    // it (it may be the clock behind): it decides as if the job were seen
    // just before its latest occurrence, which runs.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ran = read_lines(&out);
    assert_eq!(ran.len(), 1, "the job waited for the clock ahead: {ran:?}");
    let occ = |line: &str| -> jiff::Timestamp {
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert!(
        occ(&ran[0]).as_second() <= baton_testkit::wall_seconds(),
        "{ran:?} is the clock ahead's"
    );
    // And so on at its next tick. (Two may have come by then: the newest
    // runs, the other is superseded, and the tick exits 1 for that alert.)
    pause(2200);
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}{}", stdout(&o), stderr(&o));
    let ran = read_lines(&out);
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(occ(&ran[0]) < occ(&ran[1]), "{ran:?}");
    assert!(
        occ(&ran[1]).as_second() <= baton_testkit::wall_seconds(),
        "{ran:?} is the clock ahead's"
    );
    assert!(
        s.envelope().contains("by a clock ahead"),
        "{}",
        s.envelope()
    );
}
