//! Edges a black-box campaign found in the scheduler: a configuration or a
//! state directory reached through a symbolic link, a run whose process was
//! killed, a lock mate settling another job's watermark, a timed-out
//! attempt's exit code, a backfill starting inside a daylight-saving gap,
//! a history of a state directory that cannot hold a ledger.

use std::process::Stdio;

use rustix::process::Signal;

use crate::sched::Sched;
use crate::support::{code, eventually, signal, stderr, stdout, wait_for_file};

/// Two paths to one configuration file share one state directory, so an
/// occurrence ticked through both runs once.
#[test]
fn a_configuration_reached_through_a_link_shares_its_state() {
    let s = Sched::new("");
    let real = s.env.path("real");
    let elsewhere = s.env.path("elsewhere");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let runs = s.env.path("runs.txt");
    std::fs::write(
        real.join("baton.toml"),
        format!(
            "[scheduler]\nstate_dir = \"state\"\ntimezone = \"UTC\"\n\
             [jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
            runs.display()
        ),
    )
    .unwrap();
    std::os::unix::fs::symlink(real.join("baton.toml"), elsewhere.join("baton.toml")).unwrap();
    let state_of = |p: &std::path::Path| {
        let o = s
            .cmd(&["config", "--json"])
            .env("BATON_CONFIG", p)
            .output()
            .unwrap();
        let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        j["scheduler"]["state_dir"]["value"].clone()
    };
    let a = state_of(&real.join("baton.toml"));
    let b = state_of(&elsewhere.join("baton.toml"));
    assert!(a.is_string(), "{a}");
    assert_eq!(a, b, "two paths to one file, two state directories");
}

/// A state directory that is a link (`/var/lib/baton` on another disk) has
/// a working ledger: runs are recorded.
#[test]
fn a_state_directory_reached_through_a_link_records_runs() {
    let s = Sched::new("[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"echo hi\"\n");
    let data = s.env.path("data");
    std::fs::create_dir_all(&data).unwrap();
    let link = s.env.path("link");
    std::os::unix::fs::symlink(&data, &link).unwrap();
    let o = s
        .cmd(&["run", "x"])
        .env("BATON_STATE_DIR", &link)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("unavailable"), "{}", stderr(&o));
    let h = s
        .cmd(&["history", "x", "--json"])
        .env("BATON_STATE_DIR", &link)
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap();
    assert_eq!(j[0]["verdict"], "ok", "{j}");
}

/// A run whose supervising process and job were killed never records an
/// end; the next run under the lock records it `abandoned`, so history does
/// not show it running forever.
#[test]
fn a_killed_run_is_recorded_abandoned_by_the_next_run() {
    let s = Sched::new("");
    let pidfile = s.env.path("job.pid");
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"read -r p _ < /proc/self/stat; echo $p > {}; \
         exec sleep 60\"\n",
        pidfile.display()
    ));
    let mut first = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    signal(i32::try_from(first.id()).unwrap(), Signal::KILL);
    signal(job, Signal::KILL);
    let _ = first.wait();
    eventually("the job to be gone", || !crate::support::alive(job));
    // Read commands already show it over (its lease's holder is dead); the
    // ledger itself learns it from the next run.
    let before = s.json(&["history", "x", "--json"]);
    assert_eq!(before[0]["verdict"], "abandoned", "{before}");
    assert!(before[0]["finished"].is_null(), "{before}");
    let stale = before[0]["run_id"].clone();
    std::fs::remove_file(&pidfile).unwrap();
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = \"echo $$ > {}\"\n",
        pidfile.display()
    ));
    let o = s.run(&["run", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let after = s.json(&["history", "x", "--json"]);
    let old = after
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == stale)
        .unwrap();
    assert_eq!(old["verdict"], "abandoned", "{after}");
    assert!(old["finished"].is_string(), "{after}");
    assert_eq!(after[0]["verdict"], "ok", "{after}");
}

/// A job sharing another job's lock holds the lease, but its run is not a
/// run of the other job: it may not settle the other job's watermark.
#[test]
fn a_lock_mate_cannot_settle_another_jobs_watermark() {
    let s = Sched::new("");
    let baton = crate::support::BATON;
    s.write(&format!(
        "[jobs.other]\nschedule = \"0 0 1 1 *\"\nlock = \"shared\"\n\
         run = \"{baton} watermark settle peer FROM_OTHER\"\n\
         [jobs.peer]\nschedule = \"0 0 1 1 *\"\nlock = \"shared\"\n\
         run = \"{baton} watermark settle peer FROM_PEER\"\n"
    ));
    let o = s.run(&["run", "other"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let got = s.run(&["watermark", "get", "peer"]);
    assert_eq!(stdout(&got).trim(), "", "{}", stderr(&got));
    let o = s.run(&["run", "peer"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&s.run(&["watermark", "get", "peer"])).trim(),
        "FROM_PEER"
    );
}

/// A timed-out attempt is recorded as exit 124 (and the signal that ended
/// it).
#[test]
fn a_timed_out_attempt_records_exit_124() {
    let s = Sched::new(
        "[jobs.t]\nschedule = \"0 0 1 1 *\"\ntimeout = \"1s\"\nkill_grace = \"1s\"\nrun = \"sleep 30\"\n",
    );
    let _ = s.run(&["run", "t"]);
    let h = s.json(&["history", "t", "--json"]);
    let a = &h[0]["attempts"][0];
    assert_eq!(a["outcome"], "timeout", "{h}");
    assert_eq!(a["exit_code"], 124, "{h}");
}

/// A backfill from a local time the zone skips starts at the first instant
/// after the gap, where that day's occurrence ran.
#[test]
fn a_backfill_from_inside_a_gap_includes_the_moved_occurrence() {
    let s = Sched::new(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"America/New_York\"\n\
         [jobs.sf]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n",
    );
    let o = s.run(&[
        "backfill",
        "sf",
        "--from",
        "2026-03-08 02:30",
        "--to",
        "2026-03-08 04:00",
        "--dry-run",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // 07:00Z, shown in the job's zone, where --from and --to are read.
    assert!(
        stdout(&o).contains("2026-03-08 03:00:00 -04:00  would run"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn history_of_a_state_directory_that_cannot_hold_a_ledger_fails_and_says_why() {
    // Only "nothing there" is "no runs yet": a state directory that is a
    // file, or a link planted at the ledger's path, is said and fails as
    // `status` does, never shown as a job that never ran.
    let s = Sched::new("[jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n");
    for args in [&["history"][..], &["history", "--json"], &["history", "j"]] {
        let o = s.run(args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
    }
    assert!(stdout(&s.run(&["history"])).contains("no runs yet"));
    assert!(
        !s.env.state().exists(),
        "history created the state directory"
    );
    std::fs::write(s.env.state(), "not a directory\n").unwrap();
    for args in [&["history"][..], &["history", "--json"], &["history", "j"]] {
        let o = s.run(args);
        assert_eq!(code(&o), 1, "{args:?}: {}", stdout(&o));
        assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    assert_eq!(code(&s.run(&["status"])), 1);
    std::fs::remove_file(s.env.state()).unwrap();
    std::fs::create_dir(s.env.state()).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", s.env.state().join("baton.db")).unwrap();
    let o = s.run(&["history"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
}
