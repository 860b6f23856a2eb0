//! `baton calendar` through the real binary: exact instants around each
//! zone's 2026 transitions (from `zdump -v ZONE`, as quoted in
//! `baton-cron`'s DST tests), the two output forms, `--job`, and refusals.

use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{BATON, Env, code, stderr, stdout};

/// `baton calendar ARGS`, in a process whose system zone is UTC and that
/// has no configuration around.
fn calendar(args: &[&str]) -> Output {
    Command::new(BATON)
        .arg("calendar")
        .args(args)
        .env("TZ", "UTC")
        .env_remove("BATON_CONFIG")
        .env_remove("BATON_STATE_DIR")
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `baton calendar ARGS --json`, which must succeed.
fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let o = calendar(&all);
    assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}", stdout(&o)))
}

/// The occurrences of EXPR in ZONE after FROM: `local dst` each, where dst
/// is `-` when daylight saving did nothing there.
fn occurrences(zone: &str, expr: &str, from: &str, count: u32) -> Vec<String> {
    let count = count.to_string();
    let v = json(&[expr, "--tz", zone, "--from", from, "--count", &count]);
    listed(&v)
}

fn listed(v: &Value) -> Vec<String> {
    v["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let dst = o["dst"].as_str().unwrap_or("-");
            format!("{} {dst}", o["local"].as_str().unwrap())
        })
        .collect()
}

fn utc(v: &Value) -> Vec<String> {
    v["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["utc"].as_str().unwrap().to_owned())
        .collect()
}

fn seconds(utc: &str) -> i64 {
    utc.parse::<jiff::Timestamp>().unwrap().as_second()
}

// America/New_York, EST -05:00 / EDT -04:00: on 2026-03-08 02:00 EST
// jumps to 03:00 EDT (07:00Z); on 2026-11-01 02:00 EDT goes back to 01:00
// EST (06:00Z).

#[test]
fn new_york_fixed_time_in_the_gap_runs_once_when_the_clocks_jump() {
    let v = json(&[
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-03-07T00:00:00-05:00",
        "--count",
        "3",
    ]);
    assert_eq!(
        listed(&v),
        [
            "2026-03-07T02:30:00-05:00 -",
            "2026-03-08T03:00:00-04:00 gap",
            "2026-03-09T02:30:00-04:00 -",
        ]
    );
    assert_eq!(
        utc(&v),
        [
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:00:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
    assert_eq!(
        v["occurrences"][1]["note"],
        "02:30 does not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); \
         it runs when they jump"
    );
}

#[test]
fn new_york_fixed_time_on_the_fall_back_day_runs_once_at_its_first_occurrence() {
    assert_eq!(
        occurrences(
            "America/New_York",
            "30 1 * * *",
            "2026-10-31T00:00:00-04:00",
            3
        ),
        [
            "2026-10-31T01:30:00-04:00 -",
            "2026-11-01T01:30:00-04:00 first-of-two",
            "2026-11-02T01:30:00-05:00 -",
        ]
    );
    // Asked from inside the second 01:00-01:59: the repeated 01:30 is not
    // an occurrence.
    assert_eq!(
        occurrences(
            "America/New_York",
            "30 1 * * *",
            "2026-11-01T01:15:00-05:00",
            1
        ),
        ["2026-11-02T01:30:00-05:00 -"]
    );
    // 02:30 happens once that day, after the fold.
    assert_eq!(
        occurrences(
            "America/New_York",
            "30 2 * * *",
            "2026-10-31T12:00:00-04:00",
            2
        ),
        ["2026-11-01T02:30:00-05:00 -", "2026-11-02T02:30:00-05:00 -"]
    );
}

#[test]
fn new_york_every_quarter_hour_follows_elapsed_time_through_both_transitions() {
    let spring = json(&[
        "*/15 * * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-03-08T01:30:00-05:00",
        "--count",
        "3",
    ]);
    assert_eq!(
        listed(&spring),
        [
            "2026-03-08T01:45:00-05:00 -",
            "2026-03-08T03:00:00-04:00 skipped",
            "2026-03-08T03:15:00-04:00 -",
        ]
    );
    let fall = json(&[
        "*/15 * * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-11-01T00:45:00-04:00",
        "--count",
        "9",
    ]);
    assert_eq!(
        listed(&fall),
        [
            "2026-11-01T01:00:00-04:00 first-of-two",
            "2026-11-01T01:15:00-04:00 first-of-two",
            "2026-11-01T01:30:00-04:00 first-of-two",
            "2026-11-01T01:45:00-04:00 first-of-two",
            "2026-11-01T01:00:00-05:00 second-of-two",
            "2026-11-01T01:15:00-05:00 second-of-two",
            "2026-11-01T01:30:00-05:00 second-of-two",
            "2026-11-01T01:45:00-05:00 second-of-two",
            "2026-11-01T02:00:00-05:00 -",
        ]
    );
    // Fifteen real minutes apart, every one, through both transitions.
    for v in [&spring, &fall] {
        let s: Vec<i64> = utc(v).iter().map(|u| seconds(u)).collect();
        assert!(s.windows(2).all(|w| w[1] - w[0] == 900), "{s:?}");
    }
}

#[test]
fn new_york_list_of_fixed_times_in_the_gap_runs_once() {
    let v = json(&[
        "0,30 2 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-03-08T00:00:00-05:00",
        "--count",
        "3",
    ]);
    // 02:00 and 02:30 do not exist: one run, at 03:00 EDT; the next day
    // both again.
    assert_eq!(
        listed(&v),
        [
            "2026-03-08T03:00:00-04:00 gap",
            "2026-03-09T02:00:00-04:00 -",
            "2026-03-09T02:30:00-04:00 -",
        ]
    );
    assert_eq!(
        v["occurrences"][0]["note"],
        "02:00 and 02:30 do not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); \
         they run once, when the clocks jump"
    );
}

// Europe/London, GMT / BST: on 2026-03-29 01:00 GMT jumps to 02:00 BST.

#[test]
fn london_across_the_gap() {
    assert_eq!(
        occurrences("Europe/London", "30 1 * * *", "2026-03-28T00:00:00Z", 3),
        [
            "2026-03-28T01:30:00+00:00 -",
            "2026-03-29T02:00:00+01:00 gap",
            "2026-03-30T01:30:00+01:00 -",
        ]
    );
    // Midnight exists on both sides of the gap.
    assert_eq!(
        occurrences("Europe/London", "0 0 * * *", "2026-03-28T12:00:00Z", 2),
        ["2026-03-29T00:00:00+00:00 -", "2026-03-30T00:00:00+01:00 -"]
    );
}

// Europe/Berlin, CET / CEST: on 2026-03-29 02:00 CET jumps to 03:00 CEST.

#[test]
fn berlin_weekly_on_the_gap_sunday() {
    let v = json(&[
        "30 2 * * 0",
        "--tz",
        "Europe/Berlin",
        "--from",
        "2026-03-21T00:00:00+01:00",
        "--count",
        "3",
    ]);
    assert_eq!(
        listed(&v),
        [
            "2026-03-22T02:30:00+01:00 -",
            "2026-03-29T03:00:00+02:00 gap",
            "2026-04-05T02:30:00+02:00 -",
        ]
    );
    let abbreviations: Vec<&str> = v["occurrences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["abbreviation"].as_str().unwrap())
        .collect();
    assert_eq!(abbreviations, ["CET", "CEST", "CEST"]);
}

// America/Santiago, -04 / -03: on 2026-09-06 00:00 -04 jumps to 01:00 -03.

#[test]
fn santiago_midnight_that_does_not_exist() {
    let v = json(&[
        "0 0 * * *",
        "--tz",
        "America/Santiago",
        "--from",
        "2026-09-04T12:00:00-04:00",
        "--count",
        "3",
    ]);
    assert_eq!(
        listed(&v),
        [
            "2026-09-05T00:00:00-04:00 -",
            "2026-09-06T01:00:00-03:00 gap",
            "2026-09-07T00:00:00-03:00 -",
        ]
    );
    assert_eq!(v["occurrences"][1]["utc"], "2026-09-06T04:00:00Z");
    assert_eq!(v["occurrences"][1]["abbreviation"], "-03");
}

// Australia/Lord_Howe, +10:30 / +11: on 2026-10-04 02:00 +10:30 jumps to
// 02:30 +11; on 2026-04-05 02:00 +11 goes back to 01:30 +10:30.

#[test]
fn lord_howe_shifts_by_half_an_hour() {
    assert_eq!(
        occurrences(
            "Australia/Lord_Howe",
            "0 2 * * *",
            "2026-10-03T00:00:00+10:30",
            3
        ),
        [
            "2026-10-03T02:00:00+10:30 -",
            "2026-10-04T02:30:00+11:00 gap",
            "2026-10-05T02:00:00+11:00 -",
        ]
    );
    assert_eq!(
        occurrences(
            "Australia/Lord_Howe",
            "*/15 * * * *",
            "2026-04-05T01:10:00+11:00",
            6
        ),
        [
            "2026-04-05T01:15:00+11:00 -",
            "2026-04-05T01:30:00+11:00 first-of-two",
            "2026-04-05T01:45:00+11:00 first-of-two",
            "2026-04-05T01:30:00+10:30 second-of-two",
            "2026-04-05T01:45:00+10:30 second-of-two",
            "2026-04-05T02:00:00+10:30 -",
        ]
    );
}

#[test]
fn kolkata_has_no_daylight_saving() {
    // Across the dates other zones change their clocks.
    for from in ["2026-03-07T12:00:00+05:30", "2026-10-31T12:00:00+05:30"] {
        let v = json(&[
            "0 9 * * *",
            "--tz",
            "Asia/Kolkata",
            "--from",
            from,
            "--count",
            "3",
        ]);
        for o in v["occurrences"].as_array().unwrap() {
            assert_eq!(o["offset"], "+05:30");
            assert_eq!(o["abbreviation"], "IST");
            assert!(o["note"].is_null() && o["dst"].is_null(), "{o}");
            assert!(o["local"].as_str().unwrap().ends_with("T09:00:00+05:30"));
        }
    }
    assert_eq!(
        occurrences("Asia/Kolkata", "0 9 * * *", "2026-03-08T00:00:00Z", 2),
        ["2026-03-08T09:00:00+05:30 -", "2026-03-09T09:00:00+05:30 -"]
    );
}

#[test]
fn intervals_count_elapsed_time_in_every_zone() {
    let from = "2026-11-01T01:40:00-04:00";
    let want = [
        "2026-11-01T01:45:00-04:00 first-of-two",
        "2026-11-01T01:00:00-05:00 second-of-two",
        "2026-11-01T01:15:00-05:00 second-of-two",
    ];
    for expr in ["every:15m", "every 15m", "@every 15m", "every:900s"] {
        let v = json(&[
            expr,
            "--tz",
            "America/New_York",
            "--from",
            from,
            "--count",
            "3",
        ]);
        assert_eq!(listed(&v), want, "{expr}");
        assert_eq!(v["kind"], "every");
        assert_eq!(v["normalized"], "every:900s");
        assert_eq!(
            utc(&v),
            [
                "2026-11-01T05:45:00Z",
                "2026-11-01T06:00:00Z",
                "2026-11-01T06:15:00Z"
            ]
        );
    }
    // Several words are one expression.
    let v = json(&[
        "every", "15m", "--tz", "UTC", "--from", from, "--count", "1",
    ]);
    assert_eq!(v["expression"], "every 15m");
    assert_eq!(utc(&v), ["2026-11-01T05:45:00Z"]);
}

#[test]
fn nothing_comes_out_of_order_or_twice() {
    for expr in ["*/15 * * * *", "0,30 1-3 * * *", "30 2 * * *", "every:7m"] {
        let v = json(&[
            expr,
            "--tz",
            "America/New_York",
            "--from",
            "2026-03-01T00:00:00Z",
            "--count",
            "1000",
        ]);
        let s: Vec<i64> = utc(&v).iter().map(|u| seconds(u)).collect();
        assert_eq!(s.len(), 1000, "{expr}");
        assert!(s.windows(2).all(|w| w[0] < w[1]), "{expr}: out of order");
    }
}

#[test]
fn the_human_form() {
    let o = calendar(&[
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-03-07T00:00:00-05:00",
        "--count",
        "3",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stderr(&o), "");
    assert_eq!(
        stdout(&o),
        "\
Expression: 30 2 * * *
      Kind: fixed wall-clock time (a time the clocks skip runs when they jump; a time they repeat runs once)
      Zone: America/New_York
      From: Sat 2026-03-07 00:00:00 EST -05:00 (2026-03-07T05:00:00Z)

1  Sat 2026-03-07 02:30:00 EST -05:00  2026-03-07T07:30:00Z  in 2h30m
2  Sun 2026-03-08 03:00:00 EDT -04:00  2026-03-08T07:00:00Z
   02:30 does not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); it runs when they jump
3  Mon 2026-03-09 02:30:00 EDT -04:00  2026-03-09T06:30:00Z
"
    );
}

#[test]
fn the_json_form() {
    let v = json(&[
        "30  1 * * *",
        "--tz",
        "America/New_York",
        "--from",
        "2026-11-01T04:00:00Z",
        "--count",
        "1",
    ]);
    assert_eq!(
        v,
        serde_json::json!({
            "expression": "30  1 * * *",
            "normalized": "30 1 * * *",
            "kind": "fixed",
            "zone": "America/New_York",
            "job": null,
            "from": "2026-11-01T00:00:00-04:00",
            "exhausted": false,
            "occurrences": [{
                "local": "2026-11-01T01:30:00-04:00",
                "utc": "2026-11-01T05:30:00Z",
                "offset": "-04:00",
                "abbreviation": "EDT",
                "dst": "first-of-two",
                "note": "first of two 01:30s on 2026-11-01 (the clocks go back from 02:00 to \
                         01:00); the second does not run",
                "starts": "2026-11-01T05:30:00Z",
            }],
            "jitter_offset_seconds": null,
        })
    );
    let wildcard = json(&["*/5 * * * *", "--from", "2026-01-01T00:00:00Z"]);
    assert_eq!(wildcard["kind"], "wildcard");
    // Five by default, in the system's zone.
    assert_eq!(wildcard["occurrences"].as_array().unwrap().len(), 5);
    assert_eq!(wildcard["zone"], "UTC");
}

#[test]
fn the_zone_defaults_to_the_systems() {
    let o = Command::new(BATON)
        .args([
            "calendar",
            "0 9 * * *",
            "--from",
            "2026-03-08T00:00:00Z",
            "--count",
            "1",
            "--json",
        ])
        .env("TZ", "America/New_York")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["zone"], "America/New_York");
    assert_eq!(listed(&v), ["2026-03-08T09:00:00-04:00 -"]);
}

#[test]
fn from_defaults_to_now_and_occurrences_come_strictly_after_it() {
    let v = json(&["*/15 * * * *", "--count", "2"]);
    let from = seconds(v["from"].as_str().unwrap());
    let s: Vec<i64> = utc(&v).iter().map(|u| seconds(u)).collect();
    assert!(s[0] > from && s[0] - from <= 900, "{v}");
    assert_eq!(s[1] - s[0], 900);
    // Strictly after: from an occurrence, the next one.
    assert_eq!(
        occurrences("UTC", "*/15 * * * *", "2026-03-08T00:15:00Z", 1),
        ["2026-03-08T00:30:00+00:00 -"]
    );
}

#[test]
fn a_schedule_that_never_fires_again_says_so_and_succeeds() {
    let args = [
        "0 0 1 1 *",
        "--tz",
        "UTC",
        "--from",
        "9998-06-01T00:00:00Z",
        "--count",
        "3",
    ];
    let v = json(&args);
    assert_eq!(listed(&v), ["9999-01-01T00:00:00+00:00 -"]);
    assert_eq!(v["exhausted"], true);
    let o = calendar(&args);
    assert_eq!(code(&o), 0);
    assert!(
        stdout(&o).ends_with(
            "No further occurrences: the schedule does not fire again within about 100 years \
             (or before 9999-12-30T22:00:00Z, the last instant baton computes).\n"
        ),
        "{}",
        stdout(&o)
    );
}

/// A `baton.toml` with two jobs in their own zones.
fn jobs(env: &Env) -> std::path::PathBuf {
    let path = env.path("baton.toml");
    std::fs::write(
        &path,
        format!(
            "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n\
             [jobs.backup]\nschedule = \"30 2 * * *\"\ntimezone = \"America/New_York\"\n\
             run = \"true\"\n\
             [jobs.report]\nevery = \"15m\"\ntimezone = \"Asia/Kolkata\"\nrun = \"true\"\n\
             [jobs.yearly]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
            env.state().to_str().unwrap()
        ),
    )
    .unwrap();
    path
}

#[test]
fn a_configured_job_in_its_own_zone() {
    let env = Env::new();
    let config = jobs(&env);
    let config = config.to_str().unwrap();
    let v = json(&[
        "--job",
        "backup",
        "--config",
        config,
        "--from",
        "2026-03-07T00:00:00-05:00",
        "--count",
        "3",
    ]);
    assert_eq!(v["job"], "backup");
    assert_eq!(v["zone"], "America/New_York");
    assert_eq!(v["expression"], "30 2 * * *");
    assert_eq!(
        listed(&v),
        [
            "2026-03-07T02:30:00-05:00 -",
            "2026-03-08T03:00:00-04:00 gap",
            "2026-03-09T02:30:00-04:00 -",
        ]
    );

    // An interval job, found through $BATON_CONFIG.
    let o = env
        .cmd(&[
            "calendar",
            "--job",
            "report",
            "--from",
            "2026-03-08T00:07:00+05:30",
            "--count",
            "2",
        ])
        .env("BATON_CONFIG", config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with(
            "       Job: report\nExpression: every 15m\nNormalized: every:900s\n      Kind: interval"
        ),
        "{text}"
    );
    assert!(text.contains("\n      Zone: Asia/Kolkata\n"), "{text}");
    assert!(
        text.contains("1  Sun 2026-03-08 00:15:00 IST +05:30  2026-03-07T18:45:00Z  in 8m\n"),
        "{text}"
    );
    // Looking at a job creates nothing.
    assert!(!env.state().exists());
}

#[test]
fn status_and_calendar_agree_on_the_next_run() {
    let env = Env::new();
    let config = jobs(&env);
    let config = config.to_str().unwrap();
    let o = env
        .cmd(&["status", "yearly", "--json", "--config", config])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&o.stdout).unwrap();
    let next = status["jobs"][0]["next_run"].as_str().unwrap().to_owned();
    let v = json(&["--job", "yearly", "--config", config, "--count", "1"]);
    assert_eq!(v["occurrences"][0]["local"], next.as_str());
}

#[test]
fn job_refusals_exit_2() {
    let env = Env::new();
    let config = jobs(&env);
    let config = config.to_str().unwrap();
    let o = calendar(&["--job", "nightly", "--config", config]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("baton calendar: no job named \"nightly\" in"),
        "{}",
        stderr(&o)
    );
    // The job's zone is the job's: --tz is refused with --job.
    let o = calendar(&["--job", "backup", "--config", config, "--tz", "UTC"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("--tz"), "{}", stderr(&o));
    // A configuration that cannot be honoured, as the other commands say.
    let broken = env.path("broken.toml");
    std::fs::write(
        &broken,
        "[jobs.x]\nschedule = \"61 * * * *\"\nrun = \"true\"\n",
    )
    .unwrap();
    let o = calendar(&["--job", "x", "--config", broken.to_str().unwrap()]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("minute \"61\""), "{}", stderr(&o));
    let o = calendar(&[
        "--job",
        "x",
        "--config",
        env.path("none.toml").to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no configuration"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());
}

#[test]
fn garbage_exits_2_and_names_the_part() {
    for (args, says) in [
        (
            &["61 * * * *"][..],
            "minute \"61\" is out of range: allowed 0-59",
        ),
        (&["0 2 * *"], "found 4 in \"0 2 * *\""),
        (&["0 2 * * * * *"], "found 7"),
        (&["0 2 31 2 *"], "never fires"),
        (&["every:15x"], "\"15x\" is not a duration"),
        (
            &["* * * * *", "--tz", "Mars/Olympus"],
            "baton calendar: unknown time zone \"Mars/Olympus\": use an IANA name",
        ),
        (
            &["* * * * *", "--from", "yesterday"],
            "--from \"yesterday\" is not an RFC 3339 time",
        ),
        (
            &["* * * * *", "--from", "2026-03-08T00:00:00"],
            "--from \"2026-03-08T00:00:00\"",
        ),
        (&["* * * * *", "--count", "0"], "--count"),
        (&["* * * * *", "--count", "1001"], "--count"),
        (&["* * * * *", "--count", "many"], "--count"),
        (&["* * * * *", "--job", "backup"], "--job"),
        (&[], "EXPR"),
        (&["* * * * *", "--config", "baton.toml"], "--config"),
    ] {
        let o = calendar(args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{args:?}: {}", stdout(&o));
    }
}

#[test]
fn a_tz_that_names_no_zone_is_refused_when_the_configuration_names_none() {
    // With no `timezone`, the system's zone is read from TZ; one nothing
    // can read used to put every job on UTC without a word.
    let s = crate::sched::Sched::new("");
    let state = s.env.state();
    let without = format!(
        "[scheduler]\nstate_dir = {:?}\n[jobs.a]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n",
        state.to_str().unwrap()
    );
    std::fs::write(s.config(), &without).unwrap();
    for args in [&["tick"][..], &["status"], &["config"]] {
        let o = s.cmd(args).env("TZ", "America/New_Yrok").output().unwrap();
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("\"America/New_Yrok\" is not a zone baton can read"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    // A zone that can be read, or one the configuration names, is used.
    let o = s
        .cmd(&["tick"])
        .env("TZ", "America/New_York")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::write(
        s.config(),
        without.replace("[jobs.a]", "timezone = \"UTC\"\n[jobs.a]"),
    )
    .unwrap();
    let o = s
        .cmd(&["tick"])
        .env("TZ", "America/New_Yrok")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn a_tz_rule_without_a_zone_name_is_called_by_its_rule_not_utc() {
    // A POSIX rule in TZ is a zone without an IANA name: its rules apply,
    // and every surface used to call it UTC.
    let s = crate::sched::Sched::new("");
    let state = s.env.state();
    std::fs::write(
        s.config(),
        format!(
            "[scheduler]\nstate_dir = {:?}\n[jobs.a]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
            state.to_str().unwrap()
        ),
    )
    .unwrap();
    let rule = "EST5EDT,M3.2.0,M11.1.0";
    let o = s
        .cmd(&["status", "--json"])
        .env("TZ", rule)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["timezone"], rule, "{v}");
    let job = &v["jobs"][0];
    assert_eq!(job["timezone"], rule, "{job}");
    let next = job["next_run"].as_str().unwrap();
    assert!(
        next.ends_with("T09:00:00-05:00") || next.ends_with("T09:00:00-04:00"),
        "{next}"
    );
    let o = s.cmd(&["status"]).env("TZ", rule).output().unwrap();
    assert!(
        stdout(&o).contains("(EST5EDT,M3.2.0,M11.1.0)"),
        "{}",
        stdout(&o)
    );
    assert!(
        !s.env.without_dir(&stdout(&o)).contains("UTC"),
        "{}",
        stdout(&o)
    );
}
