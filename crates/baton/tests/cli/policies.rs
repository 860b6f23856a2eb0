//! Time and policies through the real binary: catch-up after downtime
//! (latest, none, all), missed occurrences and their alerts, the kill
//! switch, overlap queue and skip, pause and resume, backfill, shared locks
//! and watermarks.
//!
//! Downtime is prepared in the ledger (a job first seen and last decided
//! hours ago), never waited for.

use baton_store::ledger::Records;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;

use baton_lease::Clock;
use jiff::Timestamp;

use crate::sched::{Sched, before_new_year, known_since, known_this_second, lines};
use crate::support::{code, eventually, pause, stderr, stdout};

fn now() -> Timestamp {
    baton_lease::SystemClock.wall()
}

/// A job first seen at `seen` whose occurrences up to `last` are decided:
/// the ledger as downtime leaves it.
pub(crate) fn downtime(s: &Sched, job: &str, seen: Timestamp, last: i64) {
    use std::os::unix::fs::PermissionsExt;
    let state = s.env.state();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut l = baton_ledger::Ledger::open(&state, seen).unwrap();
    l.see_jobs(&[job], seen).unwrap();
    assert!(l.claimed(job, last, "prepared downtime", seen).unwrap());
    l.checkpoint().unwrap();
}

fn secs(n: i64) -> jiff::SignedDuration {
    jiff::SignedDuration::from_secs(n)
}

/// The job appends its occurrence to `file` (and checks nothing else runs
/// it at the same moment: a second run beside it writes OVERLAP).
fn recording_job(name: &str, file: &Path, extra: &str, body: &str) -> String {
    let dir = file.with_extension("running");
    format!(
        "[jobs.{name}]\n{extra}\nrun = \"mkdir {d} 2>/dev/null || echo OVERLAP >> {f}; echo \
         $BATON_OCCURRENCE >> {f}; {body} rmdir {d}\"\n",
        d = dir.display(),
        f = file.display()
    )
}

pub(crate) fn read_lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn alerts(s: &Sched) -> Vec<serde_json::Value> {
    std::fs::read_to_string(s.env.state().join("logs/alerts.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn missed_alerts(s: &Sched) -> Vec<serde_json::Value> {
    alerts(s)
        .into_iter()
        .filter(|a| a["kind"] == "missed")
        .collect()
}

fn status_job(s: &Sched, job: &str) -> serde_json::Value {
    let st = s.json(&["status", job, "--json"]);
    st["jobs"][0].clone()
}

#[test]
fn latest_after_downtime_runs_the_newest_and_records_the_rest_once() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job(
        "hourly",
        &file,
        "every = \"1h\"\ncatch_up_window = \"3h\"",
        "",
    ));
    let t0 = now();
    // Down for three days: last decided the hour three days ago.
    let last = (t0 - secs(3 * 86_400)).as_second() / 3600 * 3600;
    downtime(&s, "hourly", t0 - secs(4 * 86_400), last);
    let o = s.run(&["tick"]);
    assert_eq!(
        code(&o),
        1,
        "a missed alert makes the tick exit 1: {}",
        stderr(&o)
    );
    let ran = read_lines(&file);
    assert_eq!(ran.len(), 1, "{ran:?}");
    let newest = t0.as_second() / 3600 * 3600;
    assert_eq!(ran[0], Timestamp::from_second(newest).unwrap().to_string());
    // One alert for the whole decision, naming how many and which.
    let m = missed_alerts(&s);
    assert_eq!(m.len(), 1, "{m:?}");
    let count = m[0]["missed"]["count"].as_u64().unwrap();
    let expected = u64::try_from((newest - last) / 3600 - 1).unwrap();
    assert_eq!(count, expected);
    assert_eq!(
        m[0]["missed"]["first"],
        Timestamp::from_second(last + 3600).unwrap().to_string()
    );
    assert!(
        m[0]["missed"]["by_reason"]["outside-window"]
            .as_u64()
            .unwrap()
            > 60
    );
    assert!(m[0]["missed"]["by_reason"]["superseded"].as_u64().unwrap() >= 1);
    // Status counts them per reason; a second tick adds nothing.
    let j = status_job(&s, "hourly");
    assert_eq!(j["missed"]["total"].as_u64().unwrap(), expected);
    assert_eq!(code(&s.run(&["tick"])), 0);
    assert_eq!(missed_alerts(&s).len(), 1);
    assert_eq!(read_lines(&file).len(), 1);
}

#[test]
fn none_runs_only_the_occurrence_of_now() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job(
        "minutely",
        &file,
        "every = \"1m\"\ncatch_up = \"none\"\ncatch_up_window = \"10m\"",
        "",
    ));
    let t0 = now();
    let last = (t0 - secs(3600)).as_second() / 60 * 60;
    downtime(&s, "minutely", t0 - secs(7200), last);
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let ran = read_lines(&file);
    assert_eq!(ran.len(), 1, "{ran:?}");
    let run_at: Timestamp = ran[0].parse().unwrap();
    assert!(
        t0.duration_since(run_at) <= secs(120),
        "{run_at} is not now ({t0})"
    );
    let m = missed_alerts(&s);
    assert_eq!(m.len(), 1, "{m:?}");
    let by = &m[0]["missed"]["by_reason"];
    assert!(by["late"].as_u64().unwrap() >= 8, "{by}");
    assert!(by["outside-window"].as_u64().unwrap() >= 40, "{by}");
    // Every occurrence after the last decided one is either missed or run.
    let count = m[0]["missed"]["count"].as_u64().unwrap();
    let total = u64::try_from((run_at.as_second() - last) / 60).unwrap();
    assert_eq!(count + 1, total);
}

#[test]
fn all_runs_each_missed_occurrence_in_the_window_oldest_first_up_to_the_max() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job(
        "batch",
        &file,
        "every = \"1m\"\ncatch_up = \"all\"\ncatch_up_window = \"10m\"\ncatch_up_max = 4",
        "sleep 0.2;",
    ));
    let t0 = now();
    let last = (t0 - secs(1800)).as_second() / 60 * 60;
    downtime(&s, "batch", t0 - secs(7200), last);
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let ran = read_lines(&file);
    assert!(!ran.iter().any(|l| l == "OVERLAP"), "{ran:?}");
    assert_eq!(ran.len(), 4, "{ran:?}");
    let times: Vec<Timestamp> = ran.iter().map(|l| l.parse().unwrap()).collect();
    assert!(
        times
            .windows(2)
            .all(|w| w[1].duration_since(w[0]) == secs(60)),
        "{ran:?}"
    );
    let m = missed_alerts(&s);
    assert_eq!(m.len(), 1);
    assert!(
        m[0]["missed"]["by_reason"]["catch-up-max"]
            .as_u64()
            .unwrap()
            >= 5
    );
    let h = s.json(&["history", "batch", "--json"]);
    assert_eq!(h.as_array().unwrap().len(), 4);
}

#[test]
fn nothing_before_a_job_was_first_seen_runs_or_is_missed() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job(
        "fresh",
        &file,
        "every = \"1s\"\ncatch_up = \"all\"",
        "",
    ));
    let seen = now();
    assert_eq!(code(&s.run(&["tick"])), 0);
    assert!(read_lines(&file).is_empty(), "{:?}", read_lines(&file));
    // What came after the sighting runs, all of it (catch_up = "all").
    pause(1100);
    assert_eq!(code(&s.run(&["tick"])), 0);
    let ran = read_lines(&file);
    assert!(!ran.is_empty());
    for r in &ran {
        let at: Timestamp = r.parse().unwrap();
        assert!(at.as_second() >= seen.as_second(), "{r} ran: {ran:?}");
    }
    assert!(missed_alerts(&s).is_empty());
    assert_eq!(status_job(&s, "fresh")["missed"]["total"], 0);
}

#[test]
fn the_kill_switch_touches_nothing_and_the_first_tick_after_it_records_what_was_missed() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job(
        "j",
        &file,
        "every = \"1m\"\ncatch_up_window = \"5m\"",
        "",
    ));
    let t0 = now();
    let last = (t0 - secs(1200)).as_second() / 60 * 60;
    downtime(&s, "j", t0 - secs(7200), last);
    let db = s.env.state().join("baton.db");
    let before = std::fs::read(&db).unwrap();
    let o = s
        .cmd(&["tick"])
        .env("BATON_ENABLED", "false")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "the kill switch touched the ledger"
    );
    assert!(!s.env.state().join("logs").exists());
    assert_eq!(code(&s.run(&["tick"])), 1);
    assert_eq!(read_lines(&file).len(), 1);
    let m = missed_alerts(&s);
    assert_eq!(m.len(), 1);
    assert!(m[0]["missed"]["count"].as_u64().unwrap() >= 18);
}

/// Job `q`, due every second with `overlap = "queue"`, whose runs record
/// themselves in `file` and wait for `go` (ticks meanwhile queue), and the
/// tick that started its first run, once that run has started. With
/// `catch_stop`, a run's step catches SIGINT and SIGTERM by writing `go`.
struct Gated {
    s: Sched,
    file: std::path::PathBuf,
    go: std::path::PathBuf,
    first: std::process::Child,
}

fn gated_queue(catch_stop: bool) -> Gated {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let started = env.path("started");
    let go = env.path("go");
    let s = Sched { env };
    let catch = if catch_stop {
        format!("trap ': > {}' INT TERM; ", go.display())
    } else {
        String::new()
    };
    s.write(&recording_job(
        "q",
        &file,
        "every = \"1s\"\noverlap = \"queue\"",
        &format!(
            "{catch}touch {}; while [ ! -e {g} ]; do sleep 0.05; done;",
            started.display(),
            g = go.display()
        ),
    ));
    known_this_second(&s, &["q"]);
    let first = s.cmd(&["tick"]).stderr(Stdio::piped()).spawn().unwrap();
    eventually("the first run to start", || started.exists());
    Gated { s, file, go, first }
}

#[test]
fn queue_runs_an_occurrence_that_arrived_during_the_run_right_after_it_never_beside_it() {
    let Gated { s, file, go, first } = gated_queue(false);
    // Three more ticks while it runs: the first queues, the rest coalesce.
    // (A tick that finds two new occurrences runs the newest and misses the
    // other as superseded: exit 1 then.)
    for _ in 0..3 {
        pause(1100);
        let o = s.run(&["tick"]);
        assert!(code(&o) <= 1, "{}", stderr(&o));
    }
    let j = status_job(&s, "q");
    let queued = j["queued"].as_array().unwrap();
    assert_eq!(queued.len(), 1, "at most one waits: {j}");
    assert!(queued[0]["coalesced"].as_u64().unwrap() >= 1, "{j}");
    std::fs::write(&go, "").unwrap();
    let o = first.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    // The holder ran the waiting occurrence on its way out.
    let ran = read_lines(&file);
    assert!(!ran.iter().any(|l| l == "OVERLAP"), "{ran:?}");
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(ran[0] < ran[1]);
    assert!(status_job(&s, "q")["queued"].as_array().unwrap().is_empty());
    assert_eq!(
        s.json(&["history", "q", "--json"])
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

/// The configuration as it is when the holder reaches its queue decides
/// whether it runs what waits there: a job disabled while its run was in
/// flight leaves its queued occurrence in the queue (the holder read its
/// configuration when it started, and reads it again before each further
/// run under its lease); the job runs it once enabled again.
#[test]
fn a_job_disabled_while_it_runs_leaves_its_queue_to_a_later_tick() {
    let Gated { s, file, go, first } = gated_queue(false);
    pause(1100);
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    let queued = status_job(&s, "q")["queued"].as_array().unwrap().len();
    assert_eq!(queued, 1, "an occurrence queued behind the run");
    let enabled = std::fs::read_to_string(s.config()).unwrap();
    let disabled = enabled.replace(
        "overlap = \"queue\"",
        "overlap = \"queue\"\nenabled = false",
    );
    assert_ne!(enabled, disabled);
    std::fs::write(s.config(), &disabled).unwrap();
    std::fs::write(&go, "").unwrap();
    let o = first.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read_lines(&file).len(), 1, "the queued occurrence ran");
    let j = status_job(&s, "q");
    assert_eq!(j["queued"].as_array().unwrap().len(), 1, "{j}");
    // Enabled again, a tick runs it.
    std::fs::write(s.config(), &enabled).unwrap();
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    assert!(
        read_lines(&file).len() >= 2,
        "the queued occurrence never ran"
    );
}

/// A stop signal to the holder's tick ends its tenure with the run in
/// flight: the occurrence queued behind it is not started after the signal
/// (its step caught the signal and ended normally, so only the signal can
/// keep the holder from running the queue), and the next tick runs it.
#[test]
fn a_signal_to_the_holders_tick_leaves_the_queue_to_the_next_tick() {
    let Gated {
        s,
        file,
        go: got,
        mut first,
    } = gated_queue(true);
    pause(1100);
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    assert_eq!(status_job(&s, "q")["queued"].as_array().unwrap().len(), 1);
    crate::support::signal(
        i32::try_from(first.id()).unwrap(),
        rustix::process::Signal::TERM,
    );
    baton_testkit::wait_for_exit(&mut first, "the signalled tick");
    assert!(got.exists(), "the signal never reached the step");
    let ran = read_lines(&file);
    assert_eq!(ran.len(), 1, "a run started after the signal: {ran:?}");
    assert_eq!(status_job(&s, "q")["queued"].as_array().unwrap().len(), 1);
    // The next tick runs what waits (its step finds `got` and ends at once).
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    let ran = read_lines(&file);
    assert!(ran.len() >= 2, "{ran:?}");
    assert!(!ran.iter().any(|l| l == "OVERLAP"), "{ran:?}");
    assert!(status_job(&s, "q")["queued"].as_array().unwrap().is_empty());
}

#[test]
fn a_queued_occurrence_left_by_a_holder_killed_with_its_job_runs_at_the_next_tick() {
    queued_behind_a_killed_holder("1h");
}

/// As above, with the job still due every second, so the next tick also
/// finds a new occurrence due: the waiting one still runs (the new one
/// joins it, at most one waiting), never passed over as claimed by a run
/// of the new one started ahead of it.
#[test]
fn a_queued_occurrence_left_by_a_killed_holder_runs_though_a_newer_one_is_due() {
    queued_behind_a_killed_holder("1s");
}

/// Job `q` (`overlap = "queue"`): a run in flight, an occurrence queued
/// behind it, the run's tick, worker and job killed with `kill -9`, then
/// the job rewritten to be quick and due `every`, and one tick: the queued
/// occurrence runs, and nothing is left waiting.
fn queued_behind_a_killed_holder(every: &str) {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let started = env.path("started");
    let s = Sched { env };
    s.write(&recording_job(
        "q",
        &file,
        "every = \"1s\"\noverlap = \"queue\"\ncatch_up_window = \"1h\"",
        &format!("touch {}; sleep 60;", started.display()),
    ));
    known_this_second(&s, &["q"]);
    let mut first = s.cmd(&["tick"]).process_group(0).spawn().unwrap();
    eventually("the first run to start", || started.exists());
    pause(1100);
    // The run's occurrence is the second its tick read the clock in, so two
    // new occurrences may have come by now: the newest then waits and the
    // other is superseded by it (one missed alert, exit 1). Nothing else may
    // be said: the occurrence is queued behind the live run, never missed.
    let o = s.run(&["tick"]);
    let raised = missed_alerts(&s);
    assert!(
        raised.iter().all(|a| a["reason"] == "superseded"),
        "{raised:?}"
    );
    assert_eq!(alerts(&s).len(), raised.len(), "{:?}", alerts(&s));
    assert_eq!(code(&o), i32::from(!raised.is_empty()), "{}", stderr(&o));
    let waiting = status_job(&s, "q")["queued"].clone();
    assert_eq!(waiting.as_array().unwrap().len(), 1, "{waiting}");
    // kill -9 the tick, its worker and the job: the lease reads dead.
    let record = std::fs::read_to_string(s.env.lock("q")).unwrap();
    let run_id = record
        .split_whitespace()
        .find_map(|f| f.strip_prefix("run="))
        .unwrap()
        .to_owned();
    let job_pids = crate::support::processes_of_run(&run_id);
    let pgid = rustix::process::Pid::from_raw(i32::try_from(first.id()).unwrap()).unwrap();
    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
    let _ = first.wait();
    for p in job_pids {
        crate::support::signal(p, rustix::process::Signal::KILL);
    }
    std::fs::remove_dir_all(file.with_extension("running")).ok();
    std::fs::remove_file(&started).unwrap();
    // The job's own group may still be dying: until it is empty the lease
    // reads orphaned, which a queue tick leaves alone. Wait for dead.
    eventually("the lease to read dead", || {
        crate::support::verdict(&s.env, "q") == "dead"
    });
    // Rewrite the job to be quick, then tick: the queued occurrence runs.
    s.write(&recording_job(
        "q",
        &file,
        &format!("every = \"{every}\"\noverlap = \"queue\"\ncatch_up_window = \"1h\""),
        "",
    ));
    if every == "1s" {
        pause(1100); // A new occurrence is due.
    }
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    let ran = read_lines(&file);
    assert_eq!(ran.len(), 2, "the queued occurrence ran: {ran:?}");
    let queued_at = waiting[0]["occurrence"].as_str().unwrap();
    let history = s.json(&["history", "q", "--json"]);
    assert!(
        history
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["occurrence"] == queued_at && r["verdict"] == "ok"),
        "the occurrence that waited ({queued_at}) did not run: {history}"
    );
    assert!(status_job(&s, "q")["queued"].as_array().unwrap().is_empty());
}

#[test]
fn skip_misses_an_occurrence_that_finds_the_run_in_flight_and_alerts_once() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let started = env.path("started");
    let s = Sched { env };
    let go = s.env.path("go");
    s.write(&recording_job(
        "s",
        &file,
        "every = \"1s\"",
        &format!(
            "touch {}; while [ ! -e {g} ]; do sleep 0.05; done;",
            started.display(),
            g = go.display()
        ),
    ));
    known_this_second(&s, &["s"]);
    let first = s.cmd(&["tick"]).stderr(Stdio::piped()).spawn().unwrap();
    eventually("the first run to start", || started.exists());
    pause(1100);
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("not run"), "{}", stderr(&o));
    std::fs::write(&go, "").unwrap();
    first.wait_with_output().unwrap();
    assert_eq!(read_lines(&file).len(), 1);
    let j = status_job(&s, "s");
    assert!(
        j["missed"]["by_reason"]["busy"].as_u64().unwrap() >= 1,
        "{j}"
    );
}

#[test]
fn a_paused_job_misses_as_paused_shows_paused_and_runs_again_after_resume() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job("p", &file, "every = \"1s\"", ""));
    let o = s.run(&["pause", "p", "--reason", "disk swap"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("paused"), "{}", stdout(&o));
    let o = s.run(&["tick"]);
    assert_eq!(
        read_lines(&file).len(),
        0,
        "a paused job ran: {}",
        stderr(&o)
    );
    let j = status_job(&s, "p");
    assert_eq!(j["state"], "paused");
    assert_eq!(j["paused"]["reason"], "disk swap");
    assert!(j["paused"]["by"].as_str().unwrap().contains('@'));
    pause(1100);
    s.run(&["tick"]);
    let j = status_job(&s, "p");
    assert!(
        j["missed"]["by_reason"]["paused"].as_u64().unwrap() >= 1,
        "{j}"
    );
    let human = stdout(&s.run(&["status", "p"]));
    assert!(
        human.contains("PAUSED") && human.contains("disk swap"),
        "{human}"
    );
    let o = s.run(&["resume", "p"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("resumed"), "{}", stdout(&o));
    pause(1100);
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    assert_eq!(read_lines(&file).len(), 1);
    let o = s.run(&["resume", "p"]);
    assert_eq!(code(&o), 0);
    assert!(stdout(&o).contains("not paused"));
    // An empty reason is no reason: shown as none, not as an empty one.
    let o = s.run(&["pause", "p", "--reason", " "]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains(": ;"), "{}", stdout(&o));
    assert!(status_job(&s, "p")["paused"]["reason"].is_null());
}

#[test]
fn a_pause_with_an_end_lapses_on_its_own_and_bad_pauses_are_refused() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job("p", &file, "every = \"1s\"", ""));
    assert_eq!(code(&s.run(&["pause", "p", "--for", "2s"])), 0);
    s.run(&["tick"]);
    assert_eq!(read_lines(&file).len(), 0);
    // Past the pause's end by more than a period: the newest occurrence
    // came after it.
    pause(3500);
    s.run(&["tick"]);
    assert_eq!(read_lines(&file).len(), 1, "the pause did not lapse");
    for bad in [
        vec!["pause", "p", "--until", "2001-01-01T00:00:00Z"],
        vec!["pause", "p", "--for", "0"],
        vec!["pause", "p", "--for", "soon"],
        vec!["pause", "nope"],
        vec![
            "pause",
            "p",
            "--for",
            "1h",
            "--until",
            "2099-01-01T00:00:00Z",
        ],
        vec!["resume", "nope"],
        // A reason is one line of text: a line break or an escape would
        // fake a line or recolour the terminal of whoever reads `status`.
        vec!["pause", "p", "--reason", "line1\nline2"],
        vec!["pause", "p", "--reason", "\u{1b}[31mred"],
        // Nor a Unicode line separator, nor a direction override, which
        // shows text in another order than it was written.
        vec!["pause", "p", "--reason", "one\u{2028}two"],
        vec!["pause", "p", "--reason", "ok \u{202e}gnp.exe"],
    ] {
        let o = s.run(&bad);
        assert_eq!(code(&o), 2, "{bad:?}: {}", stderr(&o));
        assert!(!stderr(&o).is_empty());
    }
    let st = s.json(&["status", "--json"]);
    assert!(st["jobs"][0]["paused"].is_null(), "{st}");
}

#[test]
fn backfill_runs_a_range_oldest_first_once_and_dry_run_lists_it() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let s = Sched { env };
    s.write(&recording_job("b", &file, "every = \"1h\"", ""));
    let t0 = now();
    let newest = t0.as_second() / 3600 * 3600;
    let from = Timestamp::from_second(newest - 4 * 3600)
        .unwrap()
        .to_string();
    let to = Timestamp::from_second(newest - 3600).unwrap().to_string();
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to, "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(stdout(&o).matches("would run").count(), 4, "{}", stdout(&o));
    assert_eq!(read_lines(&file).len(), 0, "a dry run ran something");
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let ran = read_lines(&file);
    let want: Vec<String> = (0..4)
        .map(|i| {
            Timestamp::from_second(newest - (4 - i) * 3600)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ran, want);
    // Again: nothing runs twice.
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read_lines(&file).len(), 4);
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &to, "--dry-run"]);
    assert_eq!(stdout(&o).matches("already").count(), 4, "{}", stdout(&o));
    // Backwards, garbage, unknown job: exit 2.
    for bad in [
        vec!["backfill", "b", "--from", &to, "--to", &from],
        vec!["backfill", "b", "--from", "yesterday", "--to", &to],
        vec!["backfill", "nope", "--from", &from, "--to", &to],
    ] {
        assert_eq!(code(&s.run(&bad)), 2, "{bad:?}");
    }
}

#[test]
fn backfill_refuses_a_busy_lock_with_skip() {
    let env = crate::support::Env::new();
    let file = env.path("ran");
    let started = env.path("started");
    let s = Sched { env };
    s.write(&recording_job(
        "b",
        &file,
        "every = \"1h\"",
        &format!("touch {}; sleep 3;", started.display()),
    ));
    let run = s.cmd(&["run", "b"]).stdout(Stdio::null()).spawn().unwrap();
    eventually("the run to start", || started.exists());
    let newest = now().as_second() / 3600 * 3600;
    let from = Timestamp::from_second(newest - 2 * 3600)
        .unwrap()
        .to_string();
    let o = s.run(&["backfill", "b", "--from", &from, "--to", &from]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    // Said for people: the holder's times in the one human form, as `run`
    // says them (the job's zone is UTC here).
    let said = stderr(&o);
    assert!(said.contains("not run: busy: held by pid"), "{said}");
    assert!(said.contains(" +00:00, renewed "), "{said}");
    assert!(!said.contains("Z, renewed"), "{said}");
    run.wait_with_output().unwrap();
    assert_eq!(
        read_lines(&file).len(),
        1,
        "the backfill ran beside the run"
    );
}

#[test]
fn jobs_sharing_a_lock_never_overlap_and_jobs_with_their_own_run_side_by_side() {
    let env = crate::support::Env::new();
    let shared = env.path("shared");
    let a_in = env.path("a.in");
    let b_in = env.path("b.in");
    let seen = env.path("seen");
    let s = Sched { env };
    // Shared: each job marks the lock's room busy while it runs.
    let body = |me: &str| {
        format!(
            "mkdir {r} 2>/dev/null || echo OVERLAP >> {f}; echo {me} >> {f}; sleep 0.3; rmdir {r}",
            r = shared.with_extension("room").display(),
            f = shared.display()
        )
    };
    s.write(&format!(
        "[jobs.backup]\nevery = \"1s\"\nlock = \"disk\"\nrun = \"{}\"\n\
         [jobs.vacuum]\nevery = \"1s\"\nlock = \"disk\"\nrun = \"{}\"\n",
        body("backup"),
        body("vacuum")
    ));
    known_this_second(&s, &["backup", "vacuum"]);
    let ticks: Vec<_> = (0..6)
        .map(|i| {
            pause(300 * (i % 2));
            s.cmd(&["tick"]).stderr(Stdio::null()).spawn().unwrap()
        })
        .collect();
    for t in ticks {
        t.wait_with_output().unwrap();
    }
    let ran = read_lines(&shared);
    assert!(!ran.iter().any(|l| l == "OVERLAP"), "{ran:?}");
    assert!(ran.iter().any(|l| l == "backup") || ran.iter().any(|l| l == "vacuum"));
    // Separate locks: each waits to see the other running.
    let wait_for = |other: &Path, me: &Path| {
        format!(
            "touch {me}; i=0; while [ ! -e {other} ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i+1)); \
             done; [ -e {other} ] && echo saw >> {seen}; sleep 0.5",
            me = me.display(),
            other = other.display(),
            seen = seen.display()
        )
    };
    s.write(&format!(
        "[jobs.left]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\nrun = \"{}\"\n\
         [jobs.right]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\nrun = \"{}\"\n",
        wait_for(&b_in, &a_in),
        wait_for(&a_in, &b_in)
    ));
    known_since(&s, &["left", "right"], before_new_year());
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&seen), 2, "the two jobs did not run side by side");
}

#[test]
fn only_the_run_holding_the_lease_settles_the_watermark() {
    let env = crate::support::Env::new();
    let go = env.path("go");
    let started = env.path("started");
    let result = env.path("result");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.inc]\nschedule = \"0 0 1 1 *\"\nrun = \"baton watermark settle inc \
         \\\"$VALUE\\\"; echo $? >> {r}\"\n",
        r = result.display()
    ));
    let with_path = |c: &mut std::process::Command| {
        let dir = Path::new(crate::support::BATON)
            .parent()
            .unwrap()
            .to_owned();
        let path = format!(
            "{}:{}",
            dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        c.env("PATH", path);
    };
    // Settled from a run: `get` prints it.
    let mut c = s.cmd(&["run", "inc"]);
    with_path(&mut c);
    let o = c.env("VALUE", "2026-11-01").output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read_lines(&result), vec!["0"]);
    assert_eq!(
        stdout(&s.run(&["watermark", "get", "inc"])).trim(),
        "2026-11-01"
    );
    let w = s.json(&["watermark", "get", "inc", "--json"]);
    assert_eq!(w["value"], "2026-11-01");
    assert!(w["fence"].as_u64().is_some() && w["run_id"].as_str().is_some());
    // No run: refused, exit 1, nothing changes.
    let o = s.run(&["watermark", "settle", "inc", "x"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let o = s
        .cmd(&["watermark", "settle", "inc", "x"])
        .env("BATON_TOKEN", "0123456789abcdef")
        .output()
        .unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(
        stdout(&s.run(&["watermark", "get", "inc"])).trim(),
        "2026-11-01"
    );
    // A displaced run: its lease is broken while it waits, then it settles.
    s.write(&format!(
        "[jobs.inc]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {st}; while [ ! -e {go} ]; do sleep \
         0.1; done; baton watermark settle inc late; echo $? >> {r}\"\n",
        st = started.display(),
        go = go.display(),
        r = result.display()
    ));
    let mut c = s.cmd(&["run", "inc"]);
    with_path(&mut c);
    let displaced = c
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the run to start", || started.exists());
    let o = s.env.run(&["lock", "break", "inc", "--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::write(&go, "").unwrap();
    let _ = displaced.wait_with_output().unwrap();
    assert_eq!(read_lines(&result).last().map(String::as_str), Some("1"));
    assert_eq!(
        stdout(&s.run(&["watermark", "get", "inc"])).trim(),
        "2026-11-01"
    );
    // Before any settle: nothing, or the default.
    assert_eq!(stdout(&s.run(&["watermark", "get", "other-job"])), "");
}

#[test]
fn a_run_that_crashes_before_settling_leaves_the_window_to_its_retry() {
    let env = crate::support::Env::new();
    let seen = env.path("seen");
    let s = Sched { env };
    let dir = Path::new(crate::support::BATON)
        .parent()
        .unwrap()
        .to_owned();
    // Each run reads the watermark, records it, then settles "$NEXT"
    // unless told to crash first.
    s.write(&format!(
        "[jobs.inc]\nschedule = \"0 0 1 1 *\"\nrun = \"w=$(baton watermark get inc --default \
         start); echo $w >> {seen}; [ -n \\\"$CRASH\\\" ] && kill -9 $$; baton watermark settle \
         inc $NEXT\"\n",
        seen = seen.display()
    ));
    let run = |next: &str, crash: bool| {
        let mut c = s.cmd(&["run", "inc"]);
        c.env(
            "PATH",
            format!("{}:{}", dir.display(), std::env::var("PATH").unwrap()),
        )
        .env("NEXT", next)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        if crash {
            c.env("CRASH", "1");
        }
        c.output().unwrap()
    };
    run("w1", false);
    run("w2", true);
    run("w2", false);
    assert_eq!(read_lines(&seen), vec!["start", "w1", "w1"]);
    assert_eq!(stdout(&s.run(&["watermark", "get", "inc"])).trim(), "w2");
}
