//! `--json` on the commands that change something or check something:
//! `pause`, `resume`, `store status`, `tick` and `run`. Stdout holds one
//! JSON document and nothing else; times in it are RFC 3339.

use baton_testkit::pg::PgServer;
use serde_json::Value;

use crate::friction::times::is_rfc3339;
use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// Runs `args` and reads stdout as exactly one JSON document.
fn only_json(s: &Sched, args: &[&str]) -> (i32, Value) {
    let o = s.run(args);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: stdout is not one JSON document ({e}): {}{}",
            stdout(&o),
            stderr(&o)
        )
    });
    (code(&o), v)
}

fn one_job(extra: &str) -> Sched {
    Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"Asia/Kolkata\"\n\
         [jobs.j]\nschedule = \"0 3 * * *\"\nrun = \"echo out-of-the-job\"\n{extra}"
    ))
}

#[test]
fn pause_and_resume_json_say_what_was_done() {
    let s = one_job("");
    let (c, v) = only_json(
        &s,
        &["pause", "j", "--for", "1h", "--reason", "upgrade", "--json"],
    );
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["job"], "j");
    assert_eq!(v["pause"]["reason"], "upgrade");
    assert!(
        v["pause"]["by"].as_str().is_some_and(|b| !b.is_empty()),
        "{v}"
    );
    let (since, until) = (
        v["pause"]["since"].as_str().unwrap(),
        v["pause"]["until"].as_str().unwrap(),
    );
    assert!(is_rfc3339(since) && is_rfc3339(until), "{v}");
    assert!(since.ends_with("+05:30"), "on the job's wall clock: {v}");
    let span = until.parse::<jiff::Timestamp>().unwrap().as_second()
        - since.parse::<jiff::Timestamp>().unwrap().as_second();
    assert!((3599..=3601).contains(&span), "{v}");
    assert!(v["replaced"].is_null(), "{v}");

    // A second pause replaces the first, and says which.
    let (c, v) = only_json(&s, &["pause", "j", "--json"]);
    assert_eq!(c, 0, "{v}");
    assert!(v["pause"]["until"].is_null(), "{v}");
    assert_eq!(v["replaced"]["reason"], "upgrade", "{v}");

    let (c, v) = only_json(&s, &["resume", "j", "--json"]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["resumed"], true, "{v}");
    assert!(v["pause"]["until"].is_null(), "{v}");
    let (c, v) = only_json(&s, &["resume", "j", "--json"]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["resumed"], false, "{v}");
    assert!(v["pause"].is_null(), "{v}");

    // A refusal prints no JSON and says why on stderr.
    let o = s.run(&["pause", "j", "--until", "2001-01-01T00:00:00Z", "--json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

#[test]
fn store_status_json_says_the_versions() {
    let pg = PgServer::start();
    let s = Sched::new(&format!("[store]\nurl = {:?}\n", pg.url()));
    let (c, v) = only_json(&s, &["store", "status", "--json"]);
    assert_eq!(c, 1, "{v}");
    assert_eq!(v["schema_version"], 0, "{v}");
    assert_eq!(v["current"], false, "{v}");
    assert_eq!(v["verdict"], "missing", "{v}");
    assert!(v["build_version"].as_i64().is_some_and(|b| b > 0), "{v}");
    assert!(!v["store"].as_str().unwrap().contains("://"), "{v}");
    assert_eq!(code(&s.run(&["store", "migrate"])), 0);
    let (c, v) = only_json(&s, &["store", "status", "--json"]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["schema_version"], v["build_version"], "{v}");
    assert_eq!(v["current"], true, "{v}");
    assert_eq!(v["verdict"], "current", "{v}");
}

#[test]
fn run_json_is_the_run_and_the_steps_output_stays_in_the_log() {
    let s = one_job("[jobs.bad]\nschedule = \"0 3 * * *\"\nrun = \"echo bad-out; exit 3\"\n");
    let (c, v) = only_json(&s, &["run", "j", "--json"]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["job"], "j");
    assert_eq!(v["outcome"], "started", "{v}");
    assert_eq!(v["exit"], 0, "{v}");
    assert_eq!(v["run"]["run_id"], v["run_id"], "{v}");
    assert_eq!(v["run"]["verdict"], "ok", "{v}");
    assert_eq!(v["run"]["manual"], true, "{v}");
    assert!(is_rfc3339(v["run"]["started"].as_str().unwrap()), "{v}");
    let log = std::fs::read_dir(s.env.state().join("logs"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("j_"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect::<String>();
    assert!(log.contains("out-of-the-job"), "{log}");

    let (c, v) = only_json(&s, &["run", "bad", "--json"]);
    assert_eq!(c, 1, "{v}");
    assert_eq!(v["exit"], 1, "{v}");
    assert_eq!(v["run"]["verdict"], "failed", "{v}");
    assert_eq!(v["run"]["exit_code"], 3, "{v}");

    let s = one_job("enabled = false\n");
    let (c, v) = only_json(&s, &["run", "j", "--json"]);
    assert_eq!(c, 0, "{v}");
    assert_eq!(v["outcome"], "disabled", "{v}");
    assert!(v["run"].is_null(), "{v}");
}

#[test]
fn tick_json_lists_what_started_and_how_it_ended() {
    let s = Sched::new(
        "[jobs.j]\nevery = \"1s\"\nrun = \"echo out-of-the-job\"\n\
         [jobs.later]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n",
    );
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    crate::support::pause(1200);
    let (c, v) = only_json(&s, &["tick", "--json"]);
    assert_eq!(v["enabled"], true, "{v}");
    // Occurrences between the two ticks may have been superseded (an
    // alert, exit 1): the document says so as the exit code does.
    assert_eq!(v["exit"], c, "{v}");
    assert_eq!(v["alerted"], c == 1, "{v}");
    let started = v["started"].as_array().unwrap();
    assert_eq!(started.len(), 1, "{v}");
    let one = &started[0];
    assert_eq!(one["job"], "j", "{v}");
    assert_eq!(one["queue"], false, "{v}");
    assert_eq!(one["exit"], 0, "{v}");
    let occurrence = one["occurrence"].as_str().unwrap();
    assert!(is_rfc3339(occurrence), "{v}");
    assert_eq!(one["run"]["occurrence"], occurrence, "{v}");
    assert_eq!(one["run"]["verdict"], "ok", "{v}");
    for m in v["missed"].as_array().unwrap() {
        assert!(is_rfc3339(m["first"].as_str().unwrap()), "{v}");
        assert!(is_rfc3339(m["last"].as_str().unwrap()), "{v}");
    }

    assert!(v["skipped"].as_array().unwrap().is_empty(), "{v}");

    // The kill switch: nothing looked at, said so.
    let o = s
        .cmd(&["tick", "--json"])
        .env("BATON_ENABLED", "false")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["enabled"], false, "{v}");
    assert!(v["started"].as_array().unwrap().is_empty(), "{v}");
}

/// An occurrence a tick was to start whose lock another run held: its
/// process found the lock busy and recorded it missed, and `tick --json`
/// lists it under `missed` with the ledger's reason. It used to list it
/// under `started` with `"run": null`, though no run of it started.
#[test]
fn tick_json_lists_an_occurrence_its_lock_refused_as_missed_not_started() {
    use std::process::Stdio;
    let s = Sched::new("[jobs.j]\nschedule = \"* * * * *\"\nrun = \"sleep 30\"\n");
    let seen = baton_testkit::wall_seconds() - 180;
    crate::sched::known_since(&s, &["j"], jiff::Timestamp::from_second(seen).unwrap());
    let mut holder = s
        .cmd(&["run", "j"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    crate::support::eventually("the run by hand to hold the lock", || {
        s.json(&["status", "--json", "j"])["jobs"][0]["state"] == "running"
    });
    let (c, v) = only_json(&s, &["tick", "--json"]);
    // Stopped as a stop asks: its step's tree with it.
    crate::support::signal(
        i32::try_from(holder.id()).unwrap(),
        rustix::process::Signal::TERM,
    );
    let _ = holder.wait();
    assert_eq!(c, 1, "{v}");
    assert!(v["started"].as_array().unwrap().is_empty(), "{v}");
    assert!(v["skipped"].as_array().unwrap().is_empty(), "{v}");
    let busy: Vec<&Value> = v["missed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["reason"] == "busy")
        .collect();
    assert_eq!(busy.len(), 1, "{v}");
    assert_eq!(busy[0]["job"], "j", "{v}");
    assert_eq!(busy[0]["count"], 1, "{v}");
    assert_eq!(busy[0]["first"], busy[0]["last"], "{v}");
    assert!(is_rfc3339(busy[0]["first"].as_str().unwrap()), "{v}");
}

/// Ticks racing for one occurrence: one of them runs it, and only that one
/// lists it under `started`. The others, which decided it too but whose
/// workers found it taken, list it under `skipped` (`decided`, or the
/// ledger's own decision) or `missed`. Each used to list the winner's run
/// under its own `started`, as if it had run it.
#[test]
fn racing_ticks_list_the_run_under_started_only_in_the_tick_that_ran_it() {
    use std::process::Stdio;
    let s = Sched::new("[jobs.j]\nschedule = \"* * * * *\"\nrun = \"sleep 2\"\n");
    let seen = baton_testkit::wall_seconds() - 180;
    crate::sched::known_since(&s, &["j"], jiff::Timestamp::from_second(seen).unwrap());
    let ticks: Vec<_> = (0..3)
        .map(|_| {
            s.cmd(&["tick", "--json"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let docs: Vec<Value> = ticks
        .into_iter()
        .map(|t| {
            let o = t.wait_with_output().unwrap();
            serde_json::from_slice(&o.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}{}", stdout(&o), stderr(&o)))
        })
        .collect();
    let started: Vec<&Value> = docs
        .iter()
        .flat_map(|v| v["started"].as_array().unwrap())
        .collect();
    assert_eq!(started.len(), 1, "{docs:#?}");
    let history = s.json(&["history", "--json", "j"]);
    let runs = history.as_array().unwrap();
    assert_eq!(runs.len(), 1, "{history}");
    assert_eq!(started[0]["run"]["run_id"], runs[0]["run_id"], "{docs:#?}");
    for v in &docs {
        for k in v["skipped"].as_array().unwrap() {
            assert!(
                ["decided", "claimed", "coalesced"].contains(&k["reason"].as_str().unwrap()),
                "{docs:#?}"
            );
        }
    }
}
