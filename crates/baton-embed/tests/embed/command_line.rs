//! The command line on a service's store, with no `baton.toml`: `baton
//! status`, `history`, `pause` and `resume` show and control the jobs a
//! replica declared, `backfill` asks the replica to run what a pause
//! missed, and `run` refuses them, saying the service runs them.

#![allow(clippy::disallowed_methods)] // The test waits for real runs.

use std::path::Path;
use std::process::{Command, Output};
use std::str::FromStr;
use std::time::Duration;

use crate::support::{baton_bin, poll, read_sink, replica};

/// `baton ARGS` in `cwd`, which has no `baton.toml`, with `env` set and
/// none of the caller's `BATON_*` variables.
fn baton(cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(baton_bin());
    cmd.current_dir(cwd).args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("BATON_") {
            cmd.env_remove(k);
        }
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run baton")
}

fn said(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// No run in the sink is of an occurrence after `paused_at` (Unix
/// seconds, read after the pause was recorded): every later one was
/// covered by the pause.
fn assert_no_run_after(sink: &Path, paused_at: i64) {
    let late: Vec<_> = read_sink(sink)
        .into_iter()
        .filter(|r| r.occurrence > paused_at)
        .collect();
    assert!(late.is_empty(), "no run starts while paused: {late:?}");
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", said(o)))
}

#[test]
fn the_command_line_shows_pauses_and_resumes_a_services_job_without_a_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = dir.path().join("elsewhere");
    std::fs::create_dir(&cwd).unwrap();
    let sink = dir.path().join("sink");
    let state_arg = state.to_str().unwrap();
    let with_state = ["--state-dir", state_arg];
    let args =
        |verb: &[&'static str]| -> Vec<&str> { verb.iter().copied().chain(with_state).collect() };
    let service = replica(
        &format!("sqlite:{}", state.display()),
        &sink,
        100,
        60_000,
        2_000,
    );
    poll("two runs of the service", || {
        (read_sink(&sink).iter().filter(|r| r.end.is_some()).count() >= 2).then_some(())
    });

    // Seen: the job, who runs it, its last run.
    let o = baton(&cwd, &[], &args(&["status", "--json"]));
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        o.stderr.is_empty(),
        "every key of the declaration is read: {}",
        said(&o)
    );
    let s = json(&o);
    assert_eq!(s["config"], "none", "{s}");
    let job = &s["jobs"][0];
    assert_eq!(job["job"], "tick", "{s}");
    assert_eq!(job["schedule"], "* * * * * *", "{s}");
    assert!(
        job["declared_by"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", service.0.id())),
        "{s}"
    );
    // The newest run ended ok, or is the one in flight (a run each second).
    let verdict = &job["last_run"]["verdict"];
    assert!(verdict == "ok" || verdict.is_null(), "{s}");
    assert!(job["last_run"]["run_id"].is_string(), "{s}");
    let o = baton(&cwd, &[], &args(&["status"]));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("run by"),
        "{}",
        said(&o)
    );

    // Paused from the command line: the service starts nothing more. (A
    // run of an occurrence from before the pause may still write.)
    let o = baton(
        &cwd,
        &[],
        &args(&["pause", "tick", "--reason", "maintenance"]),
    );
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let paused_at = baton_testkit::wall_seconds();
    std::thread::sleep(Duration::from_millis(3_000));
    assert_no_run_after(&sink, paused_at);
    let s = json(&baton(&cwd, &[], &args(&["status", "tick", "--json"])));
    assert_eq!(s["jobs"][0]["state"], "paused", "{s}");
    assert!(
        s["jobs"][0]["missed"]["by_reason"]["paused"]
            .as_u64()
            .unwrap()
            >= 1,
        "the service records the occurrences the pause covers: {s}"
    );
    let before = read_sink(&sink).len();

    // Resumed: it runs again.
    let o = baton(&cwd, &[], &args(&["resume", "tick"]));
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    poll("a run after the resume", || {
        (read_sink(&sink).len() > before).then_some(())
    });
    drop(service); // killed, and waited for

    // Every run the service made is in the history the command line reads.
    let sunk = read_sink(&sink);
    let h = json(&baton(
        &cwd,
        &[],
        &args(&["history", "tick", "--json", "--limit", "1000"]),
    ));
    let listed = h.as_array().unwrap();
    for r in &sunk {
        assert!(
            listed.iter().any(|l| l["run_id"] == r.run_id.as_str()),
            "run {} of the sink is in the history: {h}",
            r.run_id
        );
    }

    // `run` leaves the service's job to the service.
    let o = baton(&cwd, &[], &args(&["run", "tick"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("declared by"),
        "{}",
        said(&o)
    );
    // An unknown job is refused, the declared ones listed.
    let o = baton(&cwd, &[], &args(&["status", "nope"]));
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("declared by services: tick"),
        "{}",
        said(&o)
    );
    // With neither a file nor a store, nothing is guessed.
    let o = baton(&cwd, &[], &["status"]);
    assert_eq!(o.status.code(), Some(2), "{}", said(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no configuration"),
        "{}",
        said(&o)
    );
    // The state directory may come from the environment too.
    // (Exit 1 when the kill left a run unfinished: the job is then crashed.)
    let o = baton(&cwd, &[("BATON_STATE_DIR", state_arg)], &["status", "tick"]);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", said(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("run by"),
        "{}",
        said(&o)
    );
}

#[cfg(feature = "postgres")]
#[test]
fn the_command_line_shows_and_pauses_a_services_job_on_postgres_from_the_url_alone() {
    let server = baton_testkit::pg::PgServer::start();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let sink = dir.path().join("sink");
    let env = [("BATON_STORE_URL", url.as_str())];
    let service = replica(&format!("postgres:{url}"), &sink, 100, 60_000, 2_000);
    poll("a run of the service", || {
        (read_sink(&sink).iter().any(|r| r.end.is_some())).then_some(())
    });
    let o = baton(dir.path(), &env, &["status", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let s = json(&o);
    assert_eq!(s["jobs"][0]["job"], "tick", "{s}");
    assert!(s["jobs"][0]["declared_by"].is_string(), "{s}");
    assert!(s["jobs"][0]["last_run"]["run_id"].is_string(), "{s}");

    let o = baton(dir.path(), &env, &["pause", "tick"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let paused_at = baton_testkit::wall_seconds();
    std::thread::sleep(Duration::from_millis(3_000));
    assert_no_run_after(&sink, paused_at);
    let o = baton(dir.path(), &env, &["history", "tick", "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(!json(&o).as_array().unwrap().is_empty());
    drop(service); // killed, and waited for
}

/// Every occurrence of `sink`'s runs, and that none ran twice.
fn occurrences_once(sink: &Path) -> std::collections::BTreeSet<i64> {
    let runs = read_sink(sink);
    let mut seen = std::collections::BTreeSet::new();
    for r in &runs {
        assert!(
            seen.insert(r.occurrence),
            "occurrence {} ran twice: {runs:?}",
            r.occurrence
        );
    }
    seen
}

#[test]
fn backfill_asks_the_service_to_run_what_a_pause_missed_and_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let sink = dir.path().join("sink");
    let state_arg = state.to_str().unwrap();
    let args = |verb: &[&str]| -> Vec<String> {
        verb.iter()
            .chain(&["--state-dir", state_arg])
            .map(|s| (*s).to_owned())
            .collect()
    };
    let run = |verb: &[&str]| {
        let a = args(verb);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        baton(dir.path(), &[], &a)
    };
    let _service = replica(
        &format!("sqlite:{}", state.display()),
        &sink,
        100,
        120_000,
        2_000,
    );
    poll("a run of the service", || {
        (read_sink(&sink).iter().any(|r| r.end.is_some())).then_some(())
    });
    let o = run(&["pause", "tick"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let from = baton_testkit::wall_seconds() + 1;
    std::thread::sleep(Duration::from_millis(3_000));
    let to = baton_testkit::wall_seconds() - 1;
    let o = run(&["resume", "tick"]);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let (from_s, to_s) = (
        jiff::Timestamp::from_second(from).unwrap().to_string(),
        jiff::Timestamp::from_second(to).unwrap().to_string(),
    );
    let range = ["backfill", "tick", "--from", &from_s, "--to", &to_s];
    let missed: Vec<i64> = (from..=to)
        .filter(|at| !occurrences_once(&sink).contains(at))
        .collect();
    assert!(!missed.is_empty(), "the pause covered occurrences");

    // The plan: the paused ones would run.
    let mut dry: Vec<&str> = range.to_vec();
    dry.extend(["--dry-run", "--json"]);
    let o = run(&dry);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let plan = json(&o);
    let would: Vec<i64> = plan
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["action"] == "run")
        .map(|p| {
            jiff::Timestamp::from_str(p["occurrence"].as_str().unwrap())
                .unwrap()
                .as_second()
        })
        .collect();
    assert_eq!(would, missed, "{plan}");

    // Run: queued for the service, which runs each once; the command
    // waits for them and reports them.
    let mut real: Vec<&str> = range.to_vec();
    real.push("--json");
    let o = run(&real);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    let s = json(&o);
    assert_eq!(s["ran"].as_u64(), Some(missed.len() as u64), "{s}");
    assert_eq!(s["ok"], s["ran"], "{s}");
    let ran = occurrences_once(&sink);
    for at in &missed {
        assert!(ran.contains(at), "backfilled occurrence {at} ran: {s}");
    }
    let h = json(&run(&["history", "tick", "--json", "--limit", "1000"]));
    for o in s["occurrences"].as_array().unwrap() {
        if o["action"] == "ran" {
            assert_eq!(o["verdict"], "ok", "{s}");
            assert!(
                h.as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["run_id"] == o["run_id"]),
                "{h}"
            );
        }
    }

    // Again: every one ran already; nothing is queued, nothing runs twice.
    let o = run(&range);
    assert_eq!(o.status.code(), Some(0), "{}", said(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("nothing to queue"),
        "{}",
        said(&o)
    );
    occurrences_once(&sink);
}
