//! The fault campaign's part in `cargo test --workspace`: one trial of
//! every scenario, against the binary under test and its failpoint build
//! (both built here, into `target/faults`, so the binary the other tests
//! use is never replaced). A scenario this machine cannot run fails the
//! test with the campaign's message (exit 2): nothing is skipped silently.
//!
//! Every scenario runs here, none left out: a scenario that finds a
//! violation fails the test, with the command that replays it.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_baton-faults");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the workspace root")
        .to_owned()
}

/// Builds baton (with `features`) into `target/faults` and copies the
/// binary to `NAME`, so the two builds do not overwrite each other.
fn build(features: &[&str], name: &str) -> PathBuf {
    let ws = workspace();
    let target = ws.join("target").join("faults");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&ws)
        .args(["build", "--locked", "-p", "baton"])
        .args(features)
        .arg("--target-dir")
        .arg(&target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo build -p baton {features:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let copy = target.join(name);
    std::fs::copy(target.join("debug").join("baton"), &copy).expect("copy the binary");
    copy
}

#[test]
fn one_trial_of_every_scenario_holds_every_invariant() {
    let baton = build(&[], "baton-under-test");
    let failpoints = build(&["--features", "failpoints"], "baton-failpoints");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("faults.json");
    let out = Command::new(BIN)
        .args([
            "--per-scenario",
            "1",
            "--parallel",
            // The trials mostly wait (TTLs, grace periods, a server's
            // start): eight at once keep two cores about a third busy and
            // hold the test to under two minutes.
            "8",
            "--seed",
            "1",
            "--quiet",
        ])
        .arg("--baton")
        .arg(&baton)
        .arg("--failpoints-baton")
        .arg(&failpoints)
        .arg("--dir")
        .arg(dir.path())
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let trials = doc["trials"].as_array().unwrap();
    let listed = Command::new(BIN).arg("--list").output().unwrap();
    let all = String::from_utf8_lossy(&listed.stdout).lines().count();
    assert!(
        trials.len() >= 30,
        "{} trials of {all} scenarios",
        trials.len()
    );
    let injected: u64 = trials.iter().map(|t| t["injected"].as_u64().unwrap()).sum();
    assert!(
        injected * 10 >= trials.len() as u64 * 8,
        "faults took effect in too few trials: {injected} in {}",
        trials.len()
    );
    for t in trials {
        assert_eq!(t["violations"]["details"], Value::Array(Vec::new()), "{t}");
        assert_eq!(t["broken"], Value::Array(Vec::new()), "{t}");
    }
}

#[test]
fn a_usage_error_exits_2_and_help_documents_the_exit_codes_and_the_replay() {
    for args in [
        &["--scenario", "no-such-scenario"][..],
        &["--per-scenario", "0"][..],
        &["--trials", "3", "--per-scenario", "1"][..],
        &[
            "--baton",
            "/nonexistent/baton",
            "--scenario",
            "dropin-permissions",
        ][..],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for line in [
        "0  every trial held every invariant",
        "1  a violation",
        "2  usage error",
        "3  no violation, but the instrument failed",
        "--scenario NAME --seed N --trials 1",
    ] {
        assert!(help.contains(line), "{help}");
    }
    let out = Command::new(BIN).arg("--list").output().unwrap();
    let list = String::from_utf8_lossy(&out.stdout);
    for name in ["failpoint-renewal-kill", "daemon-put-as-other-user"] {
        assert!(list.contains(name), "{list}");
    }
}
