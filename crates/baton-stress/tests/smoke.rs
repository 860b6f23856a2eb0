//! The stress run's part in `cargo test --workspace`: the real binary, real
//! processes, small sizes, every scenario and implementation. It asserts
//! behaviour only: baton never raced and the instrument worked (exit 0, and
//! from the JSON record: no overlap, no duplicate winner, no displaced
//! holder, no instrument error in any baton trial), and the instrument can
//! see a race (the exhibits that reclaim a live holder did). Never speed.

use std::process::Command;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_baton-stress");

#[test]
fn baton_never_races_and_the_instrument_sees_the_exhibits_race() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stress.json");
    let out = Command::new(BIN)
        .args([
            "--sizes",
            "2",
            "8",
            "--rounds",
            "5",
            "--repeat",
            "2",
            "--skip-latency",
            "--quiet",
        ])
        .args(["--impls", "baton,v2,v1,seed000,seed001"])
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
    assert!(stdout.contains("baton: 0 race(s)"), "{stdout}");

    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let trials = doc["trials"].as_array().unwrap();
    let baton: Vec<&Value> = trials.iter().filter(|t| t["impl"] == "baton").collect();
    // 8 scenarios × 2 sizes × 2 repeats.
    assert_eq!(baton.len(), 32, "every baton trial ran");
    let scenarios: std::collections::BTreeSet<&str> = baton
        .iter()
        .map(|t| t["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(scenarios.len(), 8, "{scenarios:?}");
    for t in &baton {
        for field in [
            "overlaps",
            "duplicates",
            "displaced",
            "child_errors",
            "never_finished",
            "gave_up",
        ] {
            assert_eq!(t[field], 0, "baton {field} in {t}");
        }
        assert!(t["winners"].as_u64().unwrap() >= 1, "baton acquired in {t}");
    }
    // The kill -9 churn really killed someone, and the SIGSTOPped baton
    // holder kept its lease (no displaced holder above).
    assert!(
        baton
            .iter()
            .filter(|t| t["scenario"] == "kill9-churn")
            .all(|t| t["killed"].as_u64().unwrap() >= 1)
    );

    // The instrument can see a race: a live holder outliving v2's and seed
    // 001's thresholds is reclaimed beside it.
    for imp in ["v2", "seed001"] {
        let seen: u64 = trials
            .iter()
            .filter(|t| {
                t["impl"] == imp && (t["scenario"] == "slow-holder" || t["scenario"] == "sigstop")
            })
            .map(|t| t["overlaps"].as_u64().unwrap())
            .sum();
        assert!(seen > 0, "{imp} never raced against a live holder");
    }
}

#[test]
fn a_usage_error_exits_2_and_help_documents_the_exit_codes() {
    let out = Command::new(BIN).args(["--sizes", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BIN).args(["--impls", "v9"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    for line in [
        "0  baton never raced",
        "1  baton raced",
        "2  usage error",
        "3  the instrument broke",
    ] {
        assert!(help.contains(line), "{help}");
    }
    for flag in [
        "--sizes",
        "--rounds",
        "--impls",
        "--repeat",
        "--json",
        "--skip-latency",
    ] {
        assert!(help.contains(flag), "{help}");
    }
}
