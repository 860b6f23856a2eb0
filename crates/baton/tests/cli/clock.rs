//! A clock that is off. With a shared store, what is due is decided by the
//! store's clock, so a host an hour ahead neither runs an occurrence early
//! nor silences the others, and one an hour behind records no misses. On
//! one host, decisions that a clock ahead left in the ledger and the lock
//! (faketime for one tick) do not supersede the present: the job keeps its
//! schedule, what ran early does not run again, and a `clock-skew` alert
//! says so. (A job's occurrences before the ledger first saw it are not
//! its to run: the jobs here are known from before the present minute, or
//! seen by an honest tick first.)

use baton_store::ledger::Records;
use std::process::Output;

use baton_testkit::pg::PgServer;

use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// Every minute, each run appending its occurrence to `out`.
fn minutely(out: &std::path::Path) -> String {
    format!(
        "[jobs.x]\nschedule = \"* * * * *\"\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        out.display()
    )
}

/// `baton ARGS` with the wall clock shifted by `offset` (faketime's
/// `+1h`, `-1h`): for this one process, as a host whose clock is off.
fn shifted(s: &Sched, offset: &str, args: &[&str]) -> Output {
    let mut c = crate::support::faketime();
    c.args(["-f", offset, crate::support::BATON])
        .args(args)
        .env("BATON_CONFIG", s.config())
        .env_remove("BATON_STATE_DIR")
        .env_remove("BATON_STORE_URL")
        .env_remove("PGPASSWORD")
        .current_dir(s.env.tmp.path())
        .stdin(std::process::Stdio::null());
    c.output().expect("faketime (apt-get install faketime)")
}

/// No occurrence in `all` ran twice, wherever the second run is.
fn each_once(all: &[String]) {
    let mut unique = all.to_vec();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), all.len(), "an occurrence ran twice: {all:?}");
}

fn ran(out: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn now_secs() -> i64 {
    baton_testkit::wall_seconds()
}

fn second_of(occurrence: &str) -> i64 {
    occurrence.parse::<jiff::Timestamp>().unwrap().as_second()
}

/// The start of the present minute, in seconds.
fn this_minute() -> i64 {
    now_secs() / 60 * 60
}

/// A job known to the ledger since just before the present minute's
/// occurrence: that occurrence is its to run.
fn known_before_this_minute(s: &Sched) {
    crate::sched::known_since(
        s,
        &["x"],
        jiff::Timestamp::from_second(this_minute() - 1).unwrap(),
    );
}

/// The job's mark in the ledger: the last occurrence decided.
fn last_decided(s: &Sched) -> Option<i64> {
    let now = jiff::Timestamp::from_second(now_secs()).unwrap();
    let mut l = baton_ledger::Ledger::open(&s.env.state(), now).unwrap();
    l.job("x").unwrap().and_then(|j| j.last_decided)
}

#[test]
fn a_clock_past_the_years_baton_counts_with_is_refused_and_nothing_runs() {
    // A clock stepped past 9998 (as far as faketime goes, or a bad RTC)
    // used to panic in the clock's read. Every command now refuses it
    // before it decides or runs anything, with its documented code.
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&minutely(&out));
    let lock = s.env.path("x.lock");
    let exec = ["exec", "--lock", lock.to_str().unwrap(), "--", "touch"];
    // faketime's offsets from now: to 9999-06-01 and 10000-01-02 (UTC).
    let to = |second: i64| format!("+{}", second - now_secs());
    for at in [to(253_383_811_200), to(253_402_387_200)] {
        let at = at.as_str();
        let touched = s.env.path("touched");
        let mut exec = exec.to_vec();
        exec.push(touched.to_str().unwrap());
        for (args, want) in [
            (&["tick"][..], 2),
            (&["run", "x"], 2),
            (&["status"], 2),
            (&["history", "x"], 2),
            (&exec, 125),
            (&["lock", "show", lock.to_str().unwrap()], 125),
        ] {
            let o = shifted(&s, at, args);
            assert_eq!(code(&o), want, "{at} {args:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.contains("the system clock reads")
                    && err.contains("set the clock right")
                    && !err.contains("panicked"),
                "{at} {args:?}: {err}"
            );
        }
        assert!(ran(&out).is_empty(), "{at}: ran {:?}", ran(&out));
        assert!(!touched.exists(), "{at}: exec ran its command");
        assert!(!lock.exists(), "{at}: exec made its lock");
    }
    // The last year it counts with works as ever.
    let o = shifted(&s, &to(253_352_275_200), &["run", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(ran(&out).len(), 1, "{:?}", ran(&out));
}

#[test]
fn on_one_host_a_tick_an_hour_behind_hands_the_honest_clock_no_misses() {
    // An honest tick sees a new job; one an hour behind ticks; the honest
    // one again. The hour between the two clocks is not a time the job
    // existed: it used to be counted missed (59 superseded, an alert, exit
    // 1), because the tick behind wrote its own now over the sighting.
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&minutely(&out));
    honest_behind_honest(&s, "-1h");
    let alerts =
        std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap_or_default();
    assert!(!alerts.contains("\"missed\""), "{alerts}");
    // What ran, ran once.
    each_once(&ran(&out));
}

/// A tick an hour behind a job's sighting, whose latest occurrence is
/// older than the catch-up window (a yearly job, seen first today): that
/// occurrence is neither run nor missed, as the honest clock decided (it
/// was recorded missed, older than the window, with an alert and exit 1).
#[test]
fn on_one_host_a_tick_behind_the_sighting_misses_no_occurrence_from_before_it() {
    // A yearly job whose window is 10 minutes; one whose window holds its
    // latest occurrence but that never catches up (that occurrence, more
    // than a minute old, was recorded missed `late`).
    for policy in [
        "catch_up_window = \"10m\"",
        "catch_up = \"none\"\ncatch_up_window = \"400d\"",
    ] {
        behind_the_sighting("0 0 1 1 *", policy, "-1h");
    }
}

fn behind_the_sighting(schedule: &str, policy: &str, behind: &str) {
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&format!(
        "[jobs.x]\nschedule = \"{schedule}\"\n{policy}\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        out.display()
    ));
    honest_behind_honest(&s, behind);
    assert!(ran(&out).is_empty(), "{:?}", ran(&out));
}

/// An honest tick, one `behind` (faketime's offset), an honest one again:
/// each exits 0 and says nothing missed, and nothing is recorded missed.
fn honest_behind_honest(s: &Sched, behind: &str) {
    for (offset, what) in [("", "honest"), (behind, "behind"), ("", "honest again")] {
        let o = if offset.is_empty() {
            s.run(&["tick"])
        } else {
            shifted(s, offset, &["tick"])
        };
        assert_eq!(code(&o), 0, "{what}: {}", stderr(&o));
        assert!(!stderr(&o).contains("missed"), "{what}: {}", stderr(&o));
    }
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
    assert!(missed_ranges(s).is_empty(), "{:?}", missed_ranges(s));
}

#[test]
fn on_one_host_a_job_a_clock_ahead_saw_first_runs_at_the_honest_clocks_present() {
    // A tick an hour ahead sees a new job first. The honest clock neither
    // waits an hour for that sighting nor counts anything before it missed:
    // the present occurrence runs at its first tick.
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&minutely(&out));
    let o = shifted(&s, "+1h", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(ran(&out).is_empty(), "{:?}", ran(&out));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let now = now_secs();
    let present = ran(&out);
    assert_eq!(present.len(), 1, "{present:?}: {}", stderr(&o));
    let at = second_of(&present[0]);
    assert!(now - 120 <= at && at <= now, "{present:?} at {now}");
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
    // It does not run again at the next honest tick of the same minute.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let again = ran(&out);
    assert!(
        again.iter().filter(|o| **o == present[0]).count() == 1,
        "{again:?}"
    );
}

#[test]
fn on_one_host_a_tick_an_hour_ahead_does_not_silence_the_schedule() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    // Due at this minute and at the same minute an hour later, and at no
    // time between: a job seen now (by an honest tick) has nothing of the
    // present to run or to miss, and a clock an hour ahead decides only
    // its own newest occurrence.
    let minute = jiff::Timestamp::from_second(this_minute())
        .unwrap()
        .to_zoned_datetime(jiff::tz::TimeZone::UTC);
    let (m, h) = (minute.minute(), minute.hour());
    s.write(&format!(
        "[jobs.x]\nschedule = \"{m} {h},{} * * *\"\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        (h + 1) % 24,
        out.display()
    ));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(ran(&out).is_empty());
    // A clock an hour ahead for one tick: it runs the occurrence of an hour
    // from now (nothing here can know better) ...
    let o = shifted(&s, "+1h", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let early = ran(&out);
    assert_eq!(early.len(), 1, "{early:?}");
    assert!(second_of(&early[0]) > now_secs() + 3000, "{early:?}");
    // ... but the honest tick takes its mark back: the schedule is decided
    // by this clock again, and nothing else ran.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ahead of this host's clock"),
        "{}",
        stderr(&o)
    );
    assert!(
        last_decided(&s).is_none_or(|d| d <= now_secs()),
        "the mark still silences the schedule: {:?}",
        last_decided(&s)
    );
    assert_eq!(ran(&out), early);
    // The alert is said once.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let alerts = std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap();
    assert_eq!(alerts.matches("\"clock-skew\"").count(), 1, "{alerts}");
    // When the early occurrence's time comes, it does not run again.
    let o = shifted(&s, "+1h", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(ran(&out), early, "an occurrence ran twice");
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
}

#[test]
fn a_claim_from_the_future_still_leaves_the_present_claimed_when_the_ledger_is_lost() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&minutely(&out));
    known_before_this_minute(&s);
    // The tick ahead runs its newest occurrence, and calls the hour before
    // it missed (an alert).
    let o = shifted(&s, "+1h", &["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    assert_eq!(ran(&out).len(), 1);
    // Now the ledger is lost before every tick (but not that it knew the
    // job): the lock's claims are the
    // only record of what ran. Honest ticks run the present occurrence
    // once, however many there are in its minute.
    for _ in 0..3 {
        crate::claims::fresh_ledger(&s);
        let o = s.run(&["tick"]);
        assert!(code(&o) <= 1, "{}", stderr(&o));
    }
    let all = ran(&out);
    assert!(all.len() > 1, "the schedule was silenced: {all:?}");
    each_once(&all[1..]);
}

/// A scheduler on a fresh throwaway server, migrated.
fn on_store(pg: &PgServer, out: &std::path::Path) -> Sched {
    on_url(&pg.url(), &minutely(out))
}

/// A scheduler of `jobs` on the store at `url`, migrated.
fn on_url(url: &str, jobs: &str) -> Sched {
    let s = Sched::new("");
    let state = s.env.state();
    std::fs::write(
        s.config(),
        format!(
            "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n[store]\nurl = {:?}\n{}",
            state.display(),
            url,
            jobs
        ),
    )
    .unwrap();
    let o = s.run(&["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    s
}

#[test]
fn with_a_shared_store_a_host_an_hour_ahead_decides_by_the_stores_clock() {
    let pg = PgServer::start();
    let out = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let s = on_store(&pg, &out);
    crate::sched::pg_known_since(
        &pg,
        &["x"],
        jiff::Timestamp::from_second(this_minute() - 1).unwrap(),
    );
    let o = shifted(&s, "+1h", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("ahead of the store's"),
        "the skew was not said: {}",
        stderr(&o)
    );
    let first = ran(&out);
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(
        second_of(&first[0]) <= now_secs(),
        "a host an hour ahead ran an occurrence of the future: {first:?}"
    );
    // An honest host finds nothing more to do this minute, and nothing was
    // called missed.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
    each_once(&ran(&out));
}

/// A slow reply is not a skewed clock. Another session holds the ledger's
/// jobs table locked for 4.8 s, so a tick's first read (the store's clock,
/// then the jobs) is answered seconds after the clock was read: measured
/// against the middle of that round trip, an honest host looked 2.4 s
/// ahead, and said so.
/// Nothing is said of a skew the measurement cannot tell from its own
/// delay, and the clock is measured again on the open connection; a clock
/// an hour off still is said, through the same slow reply.
#[test]
fn with_a_shared_store_a_slow_reply_is_not_taken_for_a_skewed_clock() {
    let pg = PgServer::start();
    let s = on_url(
        &pg.url(),
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = [\"true\"]\n",
    );
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for (offset, said) in [(None, false), (Some("+1h"), true)] {
        let mut locker = pg.session();
        locker.send("BEGIN; LOCK TABLE baton.jobs IN ACCESS EXCLUSIVE MODE;");
        crate::support::eventually("the jobs table locked", || {
            pg.sql(
                "SELECT count(*) FROM pg_locks WHERE relation = 'baton.jobs'::regclass \
                 AND mode = 'AccessExclusiveLock' AND granted",
            )
            .trim()
                == "1"
        });
        locker.send("SELECT pg_sleep(4.8); COMMIT;");
        let o = match offset {
            None => s.run(&["tick"]),
            Some(offset) => shifted(&s, offset, &["tick"]),
        };
        drop(locker);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(
            stderr(&o).contains("the store's ("),
            said,
            "{offset:?}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn with_a_shared_store_a_host_an_hour_behind_records_no_misses() {
    let pg = PgServer::start();
    let out = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let s = on_store(&pg, &out);
    // The host an hour behind sees the new job first, then an honest one
    // ticks: the hour between the two clocks is not a time the job existed.
    let o = shifted(&s, "-1h", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["missed"]["total"], 0, "{st}");
    let h = s.json(&["history", "x", "--json"]);
    for r in h.as_array().unwrap() {
        let started: jiff::Timestamp = r["started"].as_str().unwrap().parse().unwrap();
        assert!(
            (started.as_second() - now_secs()).abs() < 600,
            "a run was stamped by the wrong clock: {h}"
        );
    }
}

/// The missed ranges of job `x`, as `(first, last)`.
fn missed_ranges(s: &Sched) -> Vec<(i64, i64)> {
    let now = jiff::Timestamp::from_second(now_secs()).unwrap();
    let mut l = baton_ledger::Ledger::open(&s.env.state(), now).unwrap();
    l.missed("x", 100)
        .unwrap()
        .into_iter()
        .map(|m| (m.first, m.last))
        .collect()
}

/// The sum of every sample of `family` in `baton __metrics`.
fn metric_sum(s: &Sched, family: &str) -> f64 {
    stdout(&s.run(&["__metrics"]))
        .lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

#[test]
fn on_one_host_what_a_clock_a_day_ahead_called_missed_is_taken_back() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&minutely(&out));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // A clock a day ahead calls the whole day missed, and runs its end.
    let o = shifted(&s, "+1d", &["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    assert!(
        !missed_ranges(&s).is_empty(),
        "the day was not called missed"
    );
    let missed_before = metric_sum(&s, "baton_job_missed_occurrences_total");
    assert!(missed_before > 0.0);
    // The honest tick takes that back: the present is decided by it, and
    // no missed range holds an occurrence that ran.
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    // A counter never falls: what was taken back is counted as withdrawn.
    assert!(metric_sum(&s, "baton_job_missed_occurrences_total") >= missed_before);
    assert!(
        metric_sum(&s, "baton_job_missed_withdrawn_total") >= missed_before - 2.0,
        "{}",
        stdout(&s.run(&["__metrics"]))
    );
    assert!(
        stderr(&o).contains("are not missed after all"),
        "{}",
        stderr(&o)
    );
    let alerts = std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap();
    assert_eq!(
        alerts.matches("\"missed-withdrawn\"").count(),
        1,
        "{alerts}"
    );
    let st = s.json(&["status", "--json"]);
    let total = st["jobs"][0]["missed"]["total"].as_u64().unwrap_or(0);
    assert!(total <= 2, "the day is still counted missed: {st}");
    // When the early occurrence's time comes, it neither runs again nor is
    // called missed.
    let o = shifted(&s, "+1d", &["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    let all = ran(&out);
    each_once(&all);
    let ranges = missed_ranges(&s);
    for r in &all {
        let at = second_of(r);
        assert!(
            !ranges.iter().any(|&(a, b)| a <= at && at <= b),
            "{r} ran and is counted missed: {ranges:?}"
        );
    }
}

/// A wall clock stepped while a run goes on (an NTP step, `date -s`), an
/// hour either way: the run and its attempt are recorded as long as they
/// ran, ending after they began, never an hour long or before their start.
#[test]
fn a_clock_stepped_during_a_run_leaves_its_length_true() {
    let s = Sched::new("[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"sleep 3\"\n");
    for step in ["+1h", "-1h"] {
        let o = s
            .cmd(&["run", "j"])
            .env(
                "LD_PRELOAD",
                "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
            )
            .env("FAKETIME", step)
            // The step comes a second into the process; the boot clock
            // goes on as it did.
            .env("FAKETIME_START_AFTER_SECONDS", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .env("FAKETIME_NO_CACHE", "1")
            .output()
            .unwrap();
        assert_eq!(code(&o), 0, "{step}: {}", stderr(&o));
    }
    let o = s.run(&["history", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = runs.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    let at = |v: &serde_json::Value| v.as_str().unwrap().parse::<jiff::Timestamp>().unwrap();
    for r in runs {
        let run_ms = r["duration_ms"].as_u64().unwrap();
        let attempt_ms = r["attempts"][0]["duration_ms"].as_u64().unwrap();
        for ms in [run_ms, attempt_ms] {
            assert!((2_500..60_000).contains(&ms), "{r}");
        }
        assert!(at(&r["finished"]) > at(&r["started"]), "{r}");
    }
}

/// A daemon shown a wall clock an hour behind the system's (libfaketime,
/// as an attacker or a test would run it): its timer, which follows the
/// kernel's clock, fires at once for every instant it arms. It waits out
/// the rest on its own clock instead of ticking again and again (it held a
/// core and wrote thousands of lines a second to the envelope log, one per
/// tick, noting the job's sighting ahead of its clock).
#[test]
fn a_daemon_shown_a_clock_behind_the_systems_sleeps_until_its_instant() {
    let s = Sched::new("[jobs.s1]\nevery = \"1m\"\nrun = \"true\"\n");
    // First seen by an honest tick: each tick of the daemon says so.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut cmd = s.cmd(&["daemon", "--listen", "127.0.0.1:0"]);
    cmd.env(
        "LD_PRELOAD",
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    )
    .env("FAKETIME", "-1h")
    .env("FAKETIME_NO_CACHE", "1");
    let mut d = crate::daemon::Daemon::start_cmd(cmd)
        .unwrap_or_else(|(code, log)| panic!("the daemon did not start ({code:?}): {log}"));
    crate::support::pause(3000);
    let logs = s.env.state().join("logs");
    let noted: usize = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("baton_")
        })
        .map(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .matches("by a clock ahead of this one")
                .count()
        })
        .sum();
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(d.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let _ = baton_testkit::wait_for_exit(&mut d.child, "the daemon");
    // The tick at its start, and at most the one of the next minute.
    assert!((1..=2).contains(&noted), "{noted} ticks in 3 s");
}

/// The mirror of the above: a daemon shown a clock ahead of the system's.
/// Its timer, armed at the instant by its own clock, would fire late by
/// the whole offset (an hour here: nothing ran, then everything between
/// was missed); it also sleeps the span on the monotonic clock, so the
/// job runs when it is due by the daemon's clock.
#[test]
fn a_daemon_shown_a_clock_ahead_of_the_systems_runs_on_time() {
    let s = Sched::new("");
    let out = s.env.path("ran");
    s.write(&every_two_seconds(&out));
    runs_on_time_ahead(&s, &out);
}

/// The same on the PostgreSQL store, whose clock the daemon decides by
/// (an hour behind the daemon's own here, the monotonic clock left true
/// as on a host whose wall clock is wrong): it ran nothing, and every
/// surface said all was well.
#[test]
fn with_a_shared_store_a_daemon_an_hour_ahead_runs_on_time() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ran");
    let s = on_url(&pg.url(), &every_two_seconds(&out));
    runs_on_time_ahead(&s, &out);
}

fn every_two_seconds(out: &std::path::Path) -> String {
    format!(
        "[jobs.s]\nschedule = \"*/2 * * * * *\"\nrun = \"echo $BATON_OCCURRENCE >> {}\"\n",
        out.display()
    )
}

/// Starts a daemon of `s` shown a clock an hour ahead, and checks that its
/// job, due every 2 s, runs (into `out`) within 30 s, each occurrence once.
fn runs_on_time_ahead(s: &Sched, out: &std::path::Path) {
    let mut cmd = s.cmd(&["daemon", "--listen", "127.0.0.1:0"]);
    cmd.env(
        "LD_PRELOAD",
        "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    )
    .env("FAKETIME", "+1h")
    .env("FAKETIME_NO_CACHE", "1")
    .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    let mut d = crate::daemon::Daemon::start_cmd(cmd)
        .unwrap_or_else(|(code, log)| panic!("the daemon did not start ({code:?}): {log}"));
    let ran_some =
        baton_testkit::within(std::time::Duration::from_secs(30), || ran(out).len() >= 2);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(d.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    let _ = baton_testkit::wait_for_exit(&mut d.child, "the daemon");
    assert!(
        ran_some,
        "{:?} in 30 s of a job due every 2 s:\n{}",
        ran(out),
        d.log()
    );
    each_once(&ran(out));
}
