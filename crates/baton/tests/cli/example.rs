//! `examples/capture-scheduler/`: seed 003's deployment loads, and its jobs
//! run their stand-in steps through the real binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::{BATON, code, stderr, stdout};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/capture-scheduler")
}

fn baton(state: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BATON);
    c.args(args)
        .arg("--config")
        .arg(example().join("baton.toml"))
        .env("BATON_STATE_DIR", state)
        .env("PAGE_FILE", state.with_extension("paged"))
        .env_remove("BATON_ENABLED")
        .env_remove("CAPTURE_FAKE")
        .env_remove("HEALTH_FAKE")
        .current_dir(example());
    c
}

#[test]
fn seed_003s_deployment_loads_and_runs_on_baton() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let o = baton(&state, &["config", "--json"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let c: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = c.to_string();
    for want in [
        "Asia/Kolkata",
        "30 18 * * *",
        "0 19 * * 6",
        "1500",
        "capture",
    ] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
    // The daily job: its step and the health check.
    let o = baton(&state, &["run", "daily"]).output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("--register-only"), "{}", stdout(&o));
    assert!(stdout(&o).contains("health: OK"), "{}", stdout(&o));
    // A deterministic failure is not retried; the check still runs.
    let o = baton(&state, &["run", "weekly"])
        .env("CAPTURE_FAKE", "fatal")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(stdout(&o).matches("attempt").count(), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("health: OK"));
    // A LOSS from the health check fails the run, with an alert paged.
    let o = baton(&state, &["run", "daily"])
        .env("HEALTH_FAKE", "loss")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let paged = std::fs::read_to_string(state.with_extension("paged")).unwrap();
    assert!(paged.contains("check-failed"), "{paged}");
    // Both jobs share one lock.
    let s: serde_json::Value = serde_json::from_slice(
        &baton(&state, &["status", "--json"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let locks: Vec<&str> = s["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["lock"].as_str().unwrap())
        .collect();
    assert_eq!(locks, ["capture", "capture"]);
}
