//! Quiet when it is deliberate: a pause (`baton pause`) and a job with
//! `enabled = false` are decisions, not failures. Their occurrences are
//! recorded missed (`paused`, `disabled`) and counted by `status`; no alert
//! is raised (no alert command, nothing in `alerts.log`, nothing on
//! stderr) and the tick exits 0. Other misses keep alerting.

use std::path::{Path, PathBuf};

use crate::policies::read_lines;
use crate::sched::Sched;
use crate::support::{code, pause, stderr, stdout};

/// A scheduler whose alert command appends each alert to `alerts.jsonl`,
/// with the jobs `jobs` writes for a file they may append to; the
/// scheduler, the alert command's file and the jobs' file.
fn alerting(jobs: impl FnOnce(&Path) -> String) -> (Sched, PathBuf, PathBuf) {
    let s = Sched::new("");
    let collected = s.env.path("alerts.jsonl");
    let out = s.env.path("ran");
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_command = \"cat >> {}\"\n{}",
        collected.display(),
        jobs(&out)
    ));
    (s, collected, out)
}

/// Every second, appending its occurrence to `out`.
fn every_second(name: &str, out: &Path, extra: &str) -> String {
    format!(
        "[jobs.{name}]\nevery = \"1s\"\n{extra}\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        out.display()
    )
}

fn logged_alerts(s: &Sched) -> Vec<serde_json::Value> {
    std::fs::read_to_string(s.env.state().join("logs/alerts.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A tick that must be silent and exit 0.
fn quiet_tick(s: &Sched) {
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(stderr(&o), "", "the tick spoke");
}

fn missed_by(s: &Sched, job: &str, reason: &str) -> u64 {
    let st = s.json(&["status", job, "--json"]);
    st["jobs"][0]["missed"]["by_reason"][reason]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn a_paused_job_misses_quietly_and_every_tick_exits_0() {
    let (s, collected, out) = alerting(|out| every_second("p", out, ""));
    quiet_tick(&s); // The job is seen.
    let o = s.run(&["pause", "p", "--reason", "maintenance"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for _ in 0..3 {
        pause(1100);
        quiet_tick(&s);
    }
    assert!(read_lines(&out).is_empty(), "a paused job ran");
    assert!(missed_by(&s, "p", "paused") >= 3);
    assert!(logged_alerts(&s).is_empty(), "{:?}", logged_alerts(&s));
    assert!(!collected.exists(), "the alert command ran");
    // Said where people look for what a tick did, not as a problem.
    let envelope = s.envelope();
    assert!(envelope.contains("while the job was paused"), "{envelope}");
    assert!(!envelope.contains("ALERT"), "{envelope}");
}

#[test]
fn a_disabled_job_misses_quietly_and_the_tick_exits_0() {
    let (s, collected, out) = alerting(|out| every_second("off", out, "enabled = false"));
    quiet_tick(&s);
    pause(1100);
    quiet_tick(&s);
    pause(1100);
    quiet_tick(&s);
    assert!(!out.exists(), "a disabled job ran");
    assert!(missed_by(&s, "off", "disabled") >= 2);
    assert!(logged_alerts(&s).is_empty(), "{:?}", logged_alerts(&s));
    assert!(!collected.exists(), "the alert command ran");
}

#[test]
fn misses_for_other_reasons_keep_alerting_after_a_pause() {
    let (s, collected, out) = alerting(|out| every_second("p", out, ""));
    quiet_tick(&s);
    assert_eq!(code(&s.run(&["pause", "p"])), 0);
    pause(1100);
    quiet_tick(&s);
    assert_eq!(code(&s.run(&["resume", "p"])), 0);
    // No tick for two seconds: the newest occurrence runs, the ones before
    // it since the resume are superseded (an alert), any before the resume
    // were paused (none in the alert).
    pause(2200);
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("superseded"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("paused"), "{}", stderr(&o));
    assert_eq!(read_lines(&out).len(), 1);
    let alerts = logged_alerts(&s);
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    assert_eq!(alerts[0]["kind"], "missed");
    let by = alerts[0]["missed"]["by_reason"].as_object().unwrap();
    assert!(by.contains_key("superseded"), "{by:?}");
    assert!(!by.contains_key("paused"), "{by:?}");
    let sent = std::fs::read_to_string(&collected).unwrap();
    assert_eq!(sent.lines().count(), 1, "{sent}");
}
