//! `baton backfill` says each occurrence as it starts and what ran in the
//! end; `--json` without `--dry-run` runs and prints that summary as JSON
//! (and nothing else); every time it shows is in the job's zone, the zone
//! `--from` and `--to` are read in.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde_json::Value;

use crate::first_seen::at;
use crate::friction::times::is_rfc3339;
use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// A job every hour in Kolkata (+05:30) that prints a marker and appends
/// its occurrence to `ran`.
fn hourly(ran: &std::path::Path) -> Sched {
    let s = Sched::new("");
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         [jobs.b]\nevery = \"1h\"\ntimezone = \"Asia/Kolkata\"\n\
         run = \"echo job-output-marker; echo $BATON_OCCURRENCE >> {}\"\n",
        ran.display()
    ));
    s
}

fn ran(p: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The newest whole hour before now, `hours_back` hours earlier, as a
/// civil time on Kolkata's wall clock (as a person would type it there).
fn kolkata(hours_back: i64) -> (Timestamp, String) {
    use baton_lease::Clock as _;
    let now = baton_lease::SystemClock.wall();
    let t = Timestamp::from_second(now.as_second() / 3600 * 3600 - hours_back * 3600).unwrap();
    let civil = t
        .to_zoned_datetime(TimeZone::get("Asia/Kolkata").unwrap())
        .strftime("%Y-%m-%dT%H:%M:%S")
        .to_string();
    (t, civil)
}

#[test]
fn backfill_json_runs_and_summarises_in_the_jobs_zone() {
    let env_ran = tempfile::tempdir().unwrap();
    let file = env_ran.path().join("ran");
    let s = hourly(&file);
    let (first, from) = kolkata(3);
    let (_, to) = kolkata(1);

    // The dry run lists the times on the job's wall clock.
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to, "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 3, "{}", stdout(&o));
    let want = first
        .to_zoned_datetime(TimeZone::get("Asia/Kolkata").unwrap())
        .strftime("%Y-%m-%d %H:%M:%S +05:30  would run")
        .to_string();
    assert_eq!(lines[0], want, "{}", stdout(&o));
    let v: Value = serde_json::from_slice(
        &s.run(&[
            "backfill",
            "b",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
            "--json",
        ])
        .stdout,
    )
    .unwrap();
    assert_eq!(v[0]["occurrence"], first.to_string(), "{v}");
    assert!(v[0]["local"].as_str().unwrap().ends_with("+05:30"), "{v}");
    assert!(ran(&file).is_empty(), "a dry run ran something");

    // --json runs them, and stdout is the summary alone.
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains("job-output-marker"), "{}", stdout(&o));
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(&o)));
    assert_eq!(ran(&file).len(), 3, "the backfill did not run");
    assert_eq!(v["job"], "b");
    assert_eq!(v["zone"], "Asia/Kolkata");
    assert_eq!(
        (v["ran"].clone(), v["ok"].clone(), v["already"].clone()),
        (3.into(), 3.into(), 0.into()),
        "{v}"
    );
    assert_eq!(v["exit"], 0);
    assert!(
        is_rfc3339(v["from"].as_str().unwrap()) && is_rfc3339(v["to"].as_str().unwrap()),
        "{v}"
    );
    let occ = v["occurrences"].as_array().unwrap();
    assert_eq!(occ.len(), 3, "{v}");
    for (o, want) in occ.iter().zip(ran(&file)) {
        assert_eq!(o["action"], "ran", "{v}");
        assert_eq!(o["verdict"], "ok", "{v}");
        assert_eq!(o["exit_code"], 0, "{v}");
        assert_eq!(o["occurrence"], want.as_str(), "{v}");
        let local = o["local"].as_str().unwrap();
        assert!(is_rfc3339(local) && local.ends_with("+05:30"), "{v}");
        assert!(o["run_id"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
    }

    // Again, by hand: nothing runs twice, and the summary says so.
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(ran(&file).len(), 3);
    assert!(!stdout(&o).contains(" started (run "), "{}", stdout(&o));
    assert!(
        stdout(&o)
            .contains("b: backfill of 3 occurrence(s): 0 ran (0 ok), 3 had run already, 0 not run"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn backfill_says_each_occurrence_as_it_starts_then_a_summary() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ran");
    let s = hourly(&file);
    let (first, from) = kolkata(2);
    let (_, to) = kolkata(1);
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    let kolkata = TimeZone::get("Asia/Kolkata").unwrap();
    let says = |t: Timestamp| {
        format!(
            "b: occurrence {} started (run ",
            t.to_zoned_datetime(kolkata.clone())
                .strftime("%Y-%m-%d %H:%M:%S %:z")
        )
    };
    let second = Timestamp::from_second(first.as_second() + 3600).unwrap();
    // Each start is said before its own output.
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].starts_with(&says(first)), "{text}");
    assert_eq!(lines[1], "job-output-marker", "{text}");
    assert!(lines[2].starts_with(&says(second)), "{text}");
    assert_eq!(lines[3], "job-output-marker", "{text}");
    assert_eq!(
        lines[4], "b: backfill of 2 occurrence(s): 2 ran (2 ok), 0 had run already, 0 not run",
        "{text}"
    );
    assert_eq!(ran(&file).len(), 2);
}

#[test]
fn backfill_messages_show_times_in_the_jobs_zone_too() {
    let dir = tempfile::tempdir().unwrap();
    let s = hourly(&dir.path().join("ran"));
    let (_, early) = kolkata(3);
    let (_, late) = kolkata(1);
    let o = s.run(&["backfill", "b", "--from", &late, "--to", &early]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let said = stderr(&o);
    assert!(said.contains("is after --to"), "{said}");
    assert_eq!(said.matches("+05:30").count(), 2, "{said}");
    assert!(!said.contains(":00Z"), "{said}");
}

#[test]
fn backfill_before_the_first_sighting_says_so_and_that_force_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ran");
    let s = hourly(&file);
    // A tick sees the job at 12:00:30 UTC (17:30:30 in Kolkata), after its
    // 12:00; the next tick runs 13:00, which the lock's claim keeps.
    let o = at(&s, "2026-03-09 12:00:30", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = at(&s, "2026-03-09 13:00:05", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(ran(&file), ["2026-03-09T13:00:00Z"]);
    // 10:00 and 11:00 UTC, on Kolkata's wall clock.
    let range = [
        "--from",
        "2026-03-09T15:30:00",
        "--to",
        "2026-03-09T16:30:00",
    ];
    let backfill = |extra: &[&str]| {
        let mut args = vec!["backfill", "b"];
        args.extend(range);
        args.extend(extra);
        at(&s, "2026-03-09 13:30:00", &args)
    };
    let why = "it is before b was first seen (2026-03-09 17:30:30 +05:30), so the ledger never \
               decided it";
    let o = backfill(&["--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).matches(why).count(), 2, "{}", stdout(&o));
    assert!(stdout(&o).contains("(--force runs it)"), "{}", stdout(&o));
    let o = backfill(&[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "backfill: b occurrence 2026-03-09 15:30:00 +05:30 not run: {why}"
        )),
        "{err}"
    );
    assert_eq!(err.matches("--force runs it anyway").count(), 2, "{err}");
    assert!(!err.contains("ledger that was lost"), "{err}");
    assert_eq!(ran(&file), ["2026-03-09T13:00:00Z"]);
    // --force runs them.
    let o = backfill(&["--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        ran(&file),
        [
            "2026-03-09T13:00:00Z",
            "2026-03-09T10:00:00Z",
            "2026-03-09T11:00:00Z"
        ]
    );
}
