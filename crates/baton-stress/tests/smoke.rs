//! The stress run's part in `cargo test --workspace`: the real binary, real
//! processes, small sizes, every scenario and implementation. It asserts
//! behaviour only: baton never raced and the instrument worked (exit 0, and
//! from the JSON record: no overlap, no duplicate winner, no displaced
//! holder, no instrument error in any baton trial), and the instrument can
//! see a race (the exhibits that reclaim a live holder did). Never speed.
//! The same holds in PostgreSQL (`--store`, against a throwaway server):
//! baton never races, the ShedLock-style exhibit does. And with N slots
//! (`--slots 3`): baton holds N at once and never N + 1, the counter exhibit
//! (a count of holders in a file, no mutex) is seen admitting more.

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
    assert!(doc["config"].get("slots").is_none(), "one slot, as before");
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
fn with_n_slots_baton_holds_n_never_more_and_the_counter_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("slots.json");
    let out = Command::new(BIN)
        .args([
            "--slots",
            "3",
            "--sizes",
            "24",
            "--rounds",
            "10",
            "--hold-ms",
            "400",
            "--quiet",
        ])
        .args(["--impls", "baton,counter"])
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
    assert!(stdout.contains("never more than 3 holders"), "{stdout}");

    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["config"]["slots"], 3);
    let trials = doc["trials"].as_array().unwrap();
    let of = |imp: &str| -> Vec<&Value> { trials.iter().filter(|t| t["impl"] == imp).collect() };
    let baton = of("baton");
    let scenarios: std::collections::BTreeSet<&str> = baton
        .iter()
        .map(|t| t["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(
        scenarios.into_iter().collect::<Vec<_>>(),
        ["churn", "free", "kill9-churn", "sigstop", "slow-holder"]
    );
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
        let most = t["max_holders"].as_u64().unwrap();
        assert!((1..=3).contains(&most), "baton held {most} at once in {t}");
    }
    // The slots are really used side by side: on a free lock exactly three
    // of the 24 win and hold together; three long holders hold at once
    // (stopped, in sigstop) and nobody gets past them.
    for scenario in ["free", "slow-holder", "sigstop"] {
        let t = baton.iter().find(|t| t["scenario"] == scenario).unwrap();
        assert_eq!(t["winners"], 3, "{t}");
        assert_eq!(t["max_holders"], 3, "{t}");
    }
    assert!(
        baton
            .iter()
            .filter(|t| t["scenario"] == "kill9-churn")
            .all(|t| t["killed"].as_u64().unwrap() >= 1)
    );

    // The counter admits more than three: its unserialised read → check →
    // rewrite is seen by the witness as a fourth live holder.
    let counter = of("counter");
    let beyond: u64 = counter
        .iter()
        .map(|t| t["overlaps"].as_u64().unwrap())
        .sum();
    assert!(
        beyond > 0,
        "the counter never admitted a fourth: {counter:?}"
    );
    assert!(counter.iter().any(|t| t["max_holders"] == 4), "{counter:?}");
    assert!(stdout.contains("holder(s) beyond 3"), "{stdout}");
}

#[test]
fn in_postgres_baton_never_races_and_the_instrument_sees_shedlock_race() {
    let server = baton_testkit::pg::PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("stress.json");
    let out = Command::new(BIN)
        .args(["--store", &server.url()])
        .args(["--sizes", "4", "--rounds", "5", "--quiet"])
        .args(["--scenarios", "churn,slow-holder,kill9-churn"])
        .args(["--impls", "baton,shedlock"])
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
    let of = |imp: &str, scenario: &str| -> Vec<&Value> {
        trials
            .iter()
            .filter(|t| t["impl"] == imp && t["scenario"] == scenario)
            .collect()
    };
    for scenario in ["churn", "slow-holder", "kill9-churn"] {
        let baton = of("baton", scenario);
        assert_eq!(baton.len(), 1, "baton ran {scenario}");
        for t in baton {
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
        }
    }
    // Every churn round acquired once, one holder at a time.
    assert_eq!(of("baton", "churn")[0]["winners"], 20);
    assert!(of("baton", "kill9-churn")[0]["killed"].as_u64().unwrap() >= 1);
    // The slow holder outlives the exhibit's lock_until: the others take
    // its lock while it runs, and the witness sees it.
    let shed = of("shedlock", "slow-holder");
    assert_eq!(shed.len(), 1);
    assert!(shed[0]["overlaps"].as_u64().unwrap() > 0, "{}", shed[0]);
    assert_eq!(shed[0]["child_errors"], 0, "{}", shed[0]);
    assert!(
        doc["config"]["store"]
            .as_str()
            .is_some_and(|s| s.starts_with("postgres")),
        "the record names the store"
    );
}

#[test]
fn the_store_refuses_what_it_cannot_run() {
    let url = "postgres://baton@127.0.0.1:1/baton";
    for args in [
        &["--store", url, "--scenarios", "sigstop"][..],
        &["--store", url, "--impls", "v2"][..],
        &["--impls", "shedlock"][..],
        &["--store", url, "--hosts", "0"][..],
        &["--impls", "counter"][..],
        &["--slots", "3", "--scenarios", "stale"][..],
        &["--slots", "0"][..],
    ] {
        let out = Command::new(BIN).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.is_empty(), "{args:?} says why");
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
        "--store",
        "--hosts",
        "--slots",
    ] {
        assert!(help.contains(flag), "{help}");
    }
}

#[test]
fn a_counter_whose_slots_were_never_given_back_is_reported_wedged() {
    // Two holders were killed while they held both slots: the count stays 2.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("job.count"), "2\n").unwrap();
    let out = Command::new(BIN)
        .args(["contend", "--impl", "counter", "--role", "churn"])
        .args(["--slots", "2", "--rounds", "3", "--start-at-ms", "0"])
        .args(["--give-up-ms", "300"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let wedged: Vec<&Value> = events
        .iter()
        .filter(|e| e["event"] == "defect" && e["kind"] == "wedged")
        .collect();
    assert_eq!(wedged.len(), 1, "{events:?}");
    assert!(
        wedged[0]["detail"]
            .as_str()
            .unwrap()
            .contains("the count reads 2 of 2"),
        "{events:?}"
    );
    let done = events.iter().find(|e| e["event"] == "done").unwrap();
    assert_eq!(
        done["gave_up"], false,
        "a wedge is the finding, not the instrument"
    );
    assert!(!events.iter().any(|e| e["event"] == "win"), "{events:?}");
}
