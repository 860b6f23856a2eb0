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
