//! Alerts: the alert command gets valid JSON; a failing one does not fail the
//! run; --max-runtime alerts once and keeps the lease.

use crate::support::{Env, code, eventually, stderr, verdict, wait_for_file};

fn alerts_in(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l:?}: {e}")))
        .collect()
}

fn collector(env: &Env) -> (String, std::path::PathBuf) {
    let file = env.path("alerts.jsonl");
    // One JSON object per line: baton ends each with a newline.
    (format!("cat >> {}", file.display()), file)
}

#[test]
fn a_nonzero_exit_raises_a_failed_alert_with_json() {
    let env = Env::new();
    let (cmd, file) = collector(&env);
    let o = env.exec_sh("job", &["--alert-command", &cmd], "exit 4");
    assert_eq!(code(&o), 4);
    let a = alerts_in(&file);
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0]["kind"], "failed");
    assert_eq!(a[0]["status"], 4);
    assert_eq!(a[0]["name"], "job");
    assert!(a[0]["fence"].as_u64().unwrap() > 0);
    assert!(a[0]["run_id"].as_str().is_some());
    assert!(a[0]["message"].as_str().unwrap().contains("status 4"));
}

#[test]
fn a_skipped_run_raises_a_busy_alert_naming_the_holder() {
    let env = Env::new();
    let first = env.hold("job", &[], 60);
    let (cmd, file) = collector(&env);
    // A skip because a healthy holder runs is quiet by default...
    let o = env.exec_sh("job", &["--alert-command", &cmd], "true");
    assert_eq!(code(&o), 75);
    assert_eq!(stderr(&o), "");
    assert!(alerts_in(&file).is_empty());
    // ...and alerts when asked to.
    let o = env.exec_sh(
        "job",
        &["--alert-command", &cmd, "--alert-on", "busy"],
        "true",
    );
    assert_eq!(code(&o), 75);
    let a = alerts_in(&file);
    assert_eq!(a[0]["kind"], "busy");
    assert_eq!(a[0]["holder"]["pid"].as_u64(), Some(u64::from(first.id())));
    assert_eq!(env.end(first), 143);
}

#[test]
fn a_failing_alert_command_does_not_fail_the_run() {
    let env = Env::new();
    let o = env.exec_sh("job", &["--alert-command", "exit 9"], "exit 5");
    assert_eq!(code(&o), 5);
    assert!(stderr(&o).contains("alert command"), "{}", stderr(&o));
    let o = env.exec_sh(
        "job",
        &["--alert-command", "exit 9", "--max-runtime", "100ms"],
        "sleep 0.5",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn overrunning_alerts_once_and_keeps_the_lease() {
    let env = Env::new();
    let (cmd, file) = collector(&env);
    let (started, go) = (env.path("started"), env.path("go"));
    // The job runs until the checks below are done.
    let mut b = env.spawn_sh(
        "job",
        &[
            "--max-runtime",
            "200ms",
            "--ttl",
            "1s",
            "--alert-command",
            &cmd,
        ],
        &format!(
            "echo up > {}; while [ ! -e {} ]; do sleep 0.05; done",
            started.display(),
            go.display()
        ),
    );
    wait_for_file(&started);
    eventually("the overrunning alert", || {
        std::fs::read_to_string(&file).is_ok_and(|a| a.ends_with('\n') && a.contains("overrunning"))
    });
    // More than a TTL on, for the lease to have been renewed past its
    // budget, and for a second alert to have come if it were to.
    crate::support::pause(1200);
    // Past its budget, still running, still holding.
    assert_eq!(verdict(&env, "job"), "live");
    let o = env.exec_sh("job", &[], "true");
    assert_eq!(code(&o), 75);
    std::fs::write(&go, "go\n").unwrap();
    let status = baton_testkit::wait_for_exit(&mut b, "the overrunning job to end");
    assert!(status.success());
    let a = alerts_in(&file);
    let over: Vec<_> = a.iter().filter(|x| x["kind"] == "overrunning").collect();
    assert_eq!(over.len(), 1, "{a:?}");
    assert_eq!(verdict(&env, "job"), "free");
}
