//! One answer to "what state is this job in": `status` (upper-cased),
//! `status --json`, the page (`data-state`, from `baton __page` and from
//! the daemon) and the daemon's API show the same word, decided once, and
//! `status` exits 1 for exactly the unhealthy ones. Time that has passed is
//! made with faketime (a tick whose wall clock is behind), not with sleeps.

use std::path::Path;
use std::process::{Output, Stdio};

use jiff::{SignedDuration, Timestamp};
use rustix::process::Signal;

use crate::daemon::Daemon;
use crate::metrics::{Exposition, metrics};
use crate::sched::Sched;
use crate::support::{alive, code, eventually, signal, stderr, stdout, wait_for_file, write_pid};

/// `baton ARGS` with the wall clock moved by `offset` (faketime's `-2400s`);
/// the boot clock is left alone.
pub(crate) fn shifted(s: &Sched, offset: &str, args: &[&str]) -> Output {
    let mut c = crate::support::faketime();
    c.args([
        "-m",
        "--exclude-monotonic",
        "-f",
        offset,
        crate::support::BATON,
    ])
    .args(args)
    .env("BATON_CONFIG", s.config())
    .env_remove("BATON_STATE_DIR")
    .env_remove("BATON_ENABLED")
    .env_remove("BATON_STORE_URL")
    .current_dir(s.env.tmp.path())
    .stdin(Stdio::null());
    c.output().expect("faketime (apt-get install faketime)")
}

/// What `status`, `status --json` and `baton __page` say of one job.
struct Seen {
    /// `status`'s exit code.
    exit: i32,
    /// `status`'s text.
    text: String,
    /// The word after the job's name in its header line, as printed.
    text_word: String,
    /// `status --json`'s exit code.
    json_exit: i32,
    /// The job's object in `status --json`.
    json: serde_json::Value,
    /// `status --json`'s `healthy`.
    healthy: serde_json::Value,
    /// The page's `data-state` for the job.
    page: String,
}

impl Seen {
    /// Every surface says `word` (the text upper-cased), and `status`
    /// exits `exit` both ways.
    fn all(&self, word: &str, exit: i32) {
        assert_eq!(self.text_word, word.to_uppercase(), "{}", self.text);
        assert_eq!(self.json["state"], word, "{}", self.json);
        assert_eq!(self.page, word);
        assert_eq!(self.exit, exit, "{}", self.text);
        assert_eq!(self.json_exit, exit, "{}", self.json);
        assert_eq!(self.healthy, exit == 0, "{}", self.json);
    }
}

fn header_word(text: &str, job: &str) -> String {
    let prefix = format!("{job}  ");
    let line = text
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line for {job}:\n{text}"));
    line[prefix.len()..]
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The `data-state` of `job`'s element in `html`.
fn page_state(html: &str, job: &str) -> String {
    let at = html
        .find(&format!("data-job=\"{job}\""))
        .unwrap_or_else(|| panic!("no element for {job}:\n{html}"));
    let tag = &html[at..at + html[at..].find('>').unwrap()];
    let from = tag.find("data-state=\"").unwrap() + "data-state=\"".len();
    tag[from..from + tag[from..].find('"').unwrap()].to_owned()
}

fn seen(s: &Sched, job: &str) -> Seen {
    let o = s.run(&["status"]);
    let text = stdout(&o);
    let j = s.run(&["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&j.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&j), stderr(&j)));
    let json = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["job"] == job)
        .unwrap_or_else(|| panic!("no {job} in {v}"))
        .clone();
    let p = s.run(&["__page", "--refresh", "0"]);
    assert_eq!(code(&p), 0, "{}", stderr(&p));
    Seen {
        exit: code(&o),
        text_word: header_word(&text, job),
        text,
        json_exit: code(&j),
        json,
        healthy: v["healthy"].clone(),
        page: page_state(&stdout(&p), job),
    }
}

/// The state the daemon's API and its page give `job`.
fn daemon_says(d: &Daemon, job: &str) -> (serde_json::Value, String) {
    let api = d.get(&format!("/v1/jobs/{job}"));
    assert_eq!(api.status, 200, "{}", api.body);
    let page = d.get("/");
    assert_eq!(page.status, 200, "{}", page.body);
    (
        api.json()["jobs"][0]["state"].clone(),
        page_state(&page.body, job),
    )
}

/// This host's wall clock now.
fn wall() -> Timestamp {
    Timestamp::from_second(baton_testkit::wall_seconds()).unwrap()
}

/// A daily schedule at `t`'s minute (UTC).
fn daily_at(t: Timestamp) -> String {
    let z = t.to_zoned_datetime(jiff::tz::TimeZone::UTC);
    format!("{} {} * * *", z.minute(), z.hour())
}

#[test]
fn a_new_daily_job_whose_first_run_is_hours_away_is_new_everywhere_and_healthy() {
    let s = Sched::new("");
    let later = wall() + SignedDuration::from_hours(6);
    s.write(&format!(
        "[jobs.nightly]\nschedule = \"{}\"\nrun = \"true\"\n",
        daily_at(later)
    ));
    // Before anything has seen it, and after a tick has (which runs
    // nothing: its last occurrence came 18 h before it existed).
    for when in ["before any tick", "after a tick"] {
        let st = seen(&s, "nightly");
        st.all("new", 0);
        assert!(st.json["overdue"].is_null(), "{when}: {}", st.json);
        assert_eq!(st.json["never_run"], true, "{when}");
        assert!(!st.text.contains("OVERDUE"), "{when}: {}", st.text);
        assert!(st.text.contains("never run"), "{when}: {}", st.text);
        let o = s.run(&["tick"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
}

#[test]
fn an_occurrence_after_the_first_sighting_that_did_not_run_is_overdue_whatever_the_window() {
    let s = Sched::new("");
    // An occurrence half an hour ago, well inside the default one-hour
    // catch-up window; and an every-minute job.
    let due = Timestamp::from_second((wall().as_second() - 1800) / 60 * 60).unwrap();
    s.write(&format!(
        "[jobs.nightly]\nschedule = \"{}\"\nrun = \"true\"\n\
         [jobs.minutely]\nschedule = \"* * * * *\"\nrun = \"true\"\n",
        daily_at(due)
    ));
    // Forty minutes ago a tick saw both jobs (and ran the minutely one);
    // none has come since, as when the crontab line was deleted.
    let o = shifted(&s, "-2400s", &["tick"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let nightly = seen(&s, "nightly");
    nightly.all("overdue", 1);
    assert_eq!(
        nightly.json["overdue"]["occurrence"],
        due.to_string(),
        "{}",
        nightly.json
    );
    assert_eq!(nightly.json["overdue"]["grace_seconds"], 120);
    assert!(
        nightly.text.contains(&format!(
            "OVERDUE       occurrence {} did not start (grace 2m)",
            due.strftime("%Y-%m-%d %H:%M:%S +00:00")
        )),
        "{}",
        nightly.text
    );
    let minutely = seen(&s, "minutely");
    minutely.all("overdue", 1);
    assert!(minutely.json["overdue"]["occurrence"].is_string());
    // A tick now runs what is due (half an hour late is within the
    // window; it says the minutely job's older occurrences were
    // superseded), and both are on schedule.
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("is due now"), "{}", stderr(&o));
    for job in ["nightly", "minutely"] {
        let st = seen(&s, job);
        st.all("ok", 0);
        assert!(st.json["overdue"].is_null(), "{}", st.json);
        assert!(!st.text.contains("OVERDUE"), "{}", st.text);
    }
}

/// Sets `path`'s modification time to `secs` (Unix seconds), as
/// `touch -d` does: its status-change time becomes now.
fn set_modified(path: &Path, secs: i64) {
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(u64::try_from(secs).unwrap());
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

#[test]
fn a_job_no_tick_ever_saw_is_overdue_once_an_occurrence_after_its_file_changed_did_not_start() {
    // Written two days ago, in baton.toml and in a drop-in; no tick, no
    // daemon ever ran (the crontab line was never installed).
    let s = Sched::new("[jobs.minutely]\nschedule = \"* * * * *\"\nrun = \"true\"\n");
    let d = s.env.path("jobs.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("dropped.toml"), "every = \"1h\"\nrun = \"true\"\n").unwrap();
    let two_days_ago = wall().as_second() - 2 * 86_400;
    set_modified(&s.config(), two_days_ago);
    set_modified(&d.join("dropped.toml"), two_days_ago);
    for job in ["minutely", "dropped"] {
        let st = seen(&s, job);
        st.all("overdue", 1);
        assert!(st.json["overdue"]["occurrence"].is_string(), "{}", st.json);
        assert!(st.text.contains("OVERDUE       occurrence "), "{}", st.text);
    }
    let m = Exposition::parse(&metrics(&s, &[]));
    for job in ["minutely", "dropped"] {
        assert_eq!(m.value("baton_job_overdue", &[("baton_job", job)]), 1.0);
        assert_eq!(
            m.value(
                "baton_job_state",
                &[("baton_job", job), ("state", "overdue")]
            ),
            1.0
        );
    }
    // `status` wrote nothing: no state directory, no ledger.
    assert!(
        !s.env.state().exists(),
        "status created the state directory"
    );
    // A tick then sees them first, now, and runs nothing from before: they
    // are new until their next occurrence.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    for job in ["minutely", "dropped"] {
        let st = seen(&s, job);
        st.all("new", 0);
        assert!(st.json["overdue"].is_null(), "{}", st.json);
    }
}

#[test]
fn a_job_no_tick_ever_saw_is_new_while_its_first_occurrence_after_its_file_changed_is_ahead() {
    // Written an hour ago; its daily occurrence came 18 hours ago, before
    // the file, and comes next in 6 hours.
    let s = Sched::new("");
    let later = wall() + SignedDuration::from_hours(6);
    s.write(&format!(
        "[jobs.nightly]\nschedule = \"{}\"\nrun = \"true\"\n",
        daily_at(later)
    ));
    set_modified(&s.config(), wall().as_second() - 3600);
    let st = seen(&s, "nightly");
    st.all("new", 0);
    assert!(st.json["overdue"].is_null(), "{}", st.json);
    let m = Exposition::parse(&metrics(&s, &[]));
    assert_eq!(
        m.value("baton_job_overdue", &[("baton_job", "nightly")]),
        0.0
    );
}

#[test]
fn a_modification_time_in_the_future_does_not_keep_an_unseen_job_new() {
    // The file's time a year ahead (`touch -d`): the job is judged from
    // when the file really changed, so ten minutes on, with no tick, an
    // every-minute job is overdue.
    let s = Sched::new("[jobs.minutely]\nschedule = \"* * * * *\"\nrun = \"true\"\n");
    set_modified(&s.config(), wall().as_second() + 365 * 86_400);
    let st = seen(&s, "minutely");
    st.all("new", 0);
    let o = shifted(&s, "+600s", &["status", "--json"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["state"], "overdue", "{v}");
}

#[test]
fn a_lock_mates_run_does_not_make_the_other_job_running() {
    let s = Sched::new("");
    let marker = s.env.path("a.started");
    s.write(&format!(
        "[jobs.a]\nschedule = \"0 0 1 1 *\"\nlock = \"shared\"\nrun = \"touch {}; exec sleep 60\"\n\
         [jobs.b]\nschedule = \"0 0 1 1 *\"\nlock = \"shared\"\nrun = \"true\"\n",
        marker.display()
    ));
    let mut a = s
        .cmd(&["run", "a"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("a's run to start", || marker.exists());
    seen(&s, "a").all("running", 0);
    let b = seen(&s, "b");
    b.all("new", 0);
    // The lock's holder is shown, and is a's.
    assert_eq!(b.json["holder"]["verdict"], "live", "{}", b.json);
    let d = Daemon::start(&s, &[]);
    assert_eq!(
        daemon_says(&d, "a"),
        (serde_json::json!("running"), "running".into())
    );
    assert_eq!(
        daemon_says(&d, "b"),
        (serde_json::json!("new"), "new".into())
    );
    d.terminate();
    // Once one of b's occurrences has come due and was missed (busy: a
    // holds the lock), b is no longer new, though it never ran, and its
    // grace has not passed.
    s.write(&format!(
        "[jobs.a]\nschedule = \"0 0 1 1 *\"\nlock = \"shared\"\nrun = \"touch {}; exec sleep 60\"\n\
         [jobs.b]\nevery = \"1s\"\nlock = \"shared\"\nrun = \"true\"\n",
        marker.display()
    ));
    s.run(&["tick"]);
    eventually("an occurrence of b to be missed", || {
        s.run(&["tick"]);
        seen(&s, "b").json["missed"]["total"].as_u64() > Some(0)
    });
    let b = seen(&s, "b");
    assert_eq!(b.json["state"], "ok", "{}", b.json);
    assert_eq!(b.page, "ok", "{}", b.json);
    signal(i32::try_from(a.id()).unwrap(), Signal::TERM);
    let _ = baton_testkit::wait_for_exit(&mut a, "a's run to stop");
}

#[test]
fn a_run_killed_with_sigkill_leaves_its_job_crashed_until_a_later_run() {
    let s = Sched::new("");
    let pidfile = s.env.path("pid");
    let go = s.env.path("go");
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = {:?}\n",
        format!(
            "if [ -e {} ]; then exit 0; fi; {}; exec sleep 60",
            go.display(),
            write_pid(&pidfile)
        )
    ));
    let mut first = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    seen(&s, "x").all("running", 0);
    signal(i32::try_from(first.id()).unwrap(), Signal::KILL);
    let _ = first.wait();
    eventually("the job to die with its supervisor", || !alive(job));
    let st = seen(&s, "x");
    st.all("crashed", 1);
    assert_eq!(st.json["crashed"], true, "{}", st.json);
    assert_eq!(st.json["last_run"]["verdict"], "abandoned", "{}", st.json);
    assert!(st.text.contains("CRASHED       run "), "{}", st.text);
    let d = Daemon::start(&s, &[]);
    assert_eq!(
        daemon_says(&d, "x"),
        (serde_json::json!("crashed"), "crashed".into())
    );
    d.terminate();
    // A later run of the job clears it.
    std::fs::write(&go, "").unwrap();
    let o = s.run(&["run", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let st = seen(&s, "x");
    st.all("ok", 0);
    assert_eq!(st.json["crashed"], false, "{}", st.json);
}

/// The `next run` line of `job` in `status`'s text.
fn next_run_line(text: &str, job: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with(&format!("{job}  ")))
        .find(|l| l.trim_start().starts_with("next run"))
        .unwrap_or_else(|| panic!("no next run line of {job}:\n{text}"))
        .to_owned()
}

#[test]
fn a_paused_job_says_until_when_instead_of_a_next_run() {
    let s = Sched::new("[jobs.p]\nschedule = \"* * * * *\"\nrun = \"true\"\n");
    let o = s.run(&["pause", "p", "--for", "2h", "--reason", "disk swap"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let st = seen(&s, "p");
    st.all("paused", 0);
    let line = next_run_line(&st.text, "p");
    assert!(line.contains("paused until "), "{line}");
    assert!(
        line.contains("(in 1h59m") || line.contains("(in 2h"),
        "{line}"
    );
    assert!(!st.text.contains("in 0ms"), "{}", st.text);
    // The next run the JSON gives is the first the pause lets run.
    let until: Timestamp = st.json["paused"]["until"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let next: Timestamp = st.json["next_run"].as_str().unwrap().parse().unwrap();
    assert!(
        next >= until && next < until + SignedDuration::from_mins(1),
        "{}",
        st.json
    );
    // A pause with no end has no next run.
    assert_eq!(code(&s.run(&["resume", "p"])), 0);
    assert_eq!(code(&s.run(&["pause", "p"])), 0);
    let st = seen(&s, "p");
    st.all("paused", 0);
    let line = next_run_line(&st.text, "p");
    assert!(
        line.contains("paused, with no end (baton resume p ends it)"),
        "{line}"
    );
    assert!(st.json["next_run"].is_null(), "{}", st.json);
    assert!(!st.text.contains("in 0ms"), "{}", st.text);
}

/// A JSON field's RFC 3339 instant.
fn instant(v: &serde_json::Value) -> Timestamp {
    v.as_str()
        .unwrap_or_else(|| panic!("not a string: {v}"))
        .parse()
        .unwrap_or_else(|e| panic!("{v} is not RFC 3339: {e}"))
}

/// Whether `text` has a time in RFC 3339's form (`2026-12-01T18:00:00Z`):
/// a day, a `T` and an hour and minute. A bare digit-`T`-digit is not
/// enough, as a temporary directory's random name (`.tmp6T9de2`) has one.
fn has_rfc3339(text: &str) -> bool {
    let digit = |b: u8| b.is_ascii_digit();
    text.as_bytes().windows(9).any(|w| {
        w[0] == b'-'
            && digit(w[1])
            && digit(w[2])
            && w[3] == b'T'
            && digit(w[4])
            && digit(w[5])
            && w[6] == b':'
            && digit(w[7])
            && digit(w[8])
    })
}

#[test]
fn a_temporary_directory_name_is_not_taken_for_a_time() {
    assert!(!has_rfc3339("config /tmp/.tmp6T9de2/baton.toml"));
    assert!(has_rfc3339("alert 2026-12-01T18:00:00Z missed"));
    assert!(has_rfc3339("2026-12-01T18:00:00+05:30"));
}

#[test]
fn status_text_shows_every_time_in_one_form() {
    let s = Sched::new(
        "[jobs.p]\nschedule = \"* * * * *\"\nrun = \"true\"\n\
         [jobs.b]\nschedule = \"* * * * *\"\ntimezone = \"Asia/Kolkata\"\nrun = \"true\"\n",
    );
    // Known since just before this minute: its occurrence is the tick's.
    let minute = Timestamp::from_second(wall().as_second() / 60 * 60 - 1).unwrap();
    crate::sched::known_since(&s, &["p"], minute);
    // b was known ten minutes before any tick: the tick says in an alert
    // what it missed, on b's wall clock, as the text shows every time.
    crate::sched::known_since(&s, &["b"], minute - SignedDuration::from_mins(10));
    let o = s.run(&["tick", "p"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.run(&["tick", "b"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    let said = stderr(&o);
    assert!(said.contains("occurrence(s) missed"), "{said}");
    assert!(
        said.contains(" +05:30 to ") && said.contains(" +05:30 is due now"),
        "{said}"
    );
    assert!(!has_rfc3339(&said), "{said}");
    let o = s.run(&["pause", "p", "--for", "2h"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let st = seen(&s, "p");
    st.all("paused", 0);
    // The tick's occurrence, the pause's end and the first run after it
    // are all on the job's wall clock, as every other time of the text.
    let occurrence = instant(&st.json["last_run"]["occurrence"]);
    assert!(
        st.text.contains(&format!(
            "(occurrence {}, run ",
            occurrence.strftime("%Y-%m-%d %H:%M:%S +00:00")
        )),
        "{}",
        st.text
    );
    let next = instant(&st.json["next_run"]);
    let line = next_run_line(&st.text, "p");
    assert!(
        line.ends_with(&format!(
            ", then {}",
            next.strftime("%Y-%m-%d %H:%M:%S +00:00")
        )),
        "{line}"
    );
    // b's alert: raised, spanning and running on b's wall clock.
    let b = seen(&s, "b");
    let alert = &b.json["recent_alerts"][0];
    assert_eq!(alert["kind"], "missed", "{}", b.json);
    let raised = instant(&alert["time"]);
    let kolkata = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
    let human = |t: Timestamp| {
        t.to_zoned_datetime(kolkata.clone())
            .strftime("%Y-%m-%d %H:%M:%S %:z")
            .to_string()
    };
    let line = st
        .text
        .lines()
        .find(|l| l.contains(" missed: b: "))
        .unwrap_or_else(|| panic!("no alert of b:\n{}", st.text));
    assert!(
        line.starts_with(&format!("  alert         {} missed: b: ", human(raised))),
        "{line}"
    );
    let runs = instant(&b.json["last_run"]["occurrence"]);
    assert!(
        line.ends_with(&format!("; {} is due now", human(runs))),
        "{line}"
    );
    assert!(!has_rfc3339(&st.text), "{}", st.text);
    // JSON keeps RFC 3339, in the alert's fields and in its message alike.
    let message = alert["message"].as_str().unwrap();
    assert!(
        message.ends_with(&format!("; {runs} is due now")),
        "{message}"
    );
}

#[test]
fn a_disabled_job_has_no_next_run_and_a_near_one_is_not_in_0ms() {
    let s = Sched::new(
        "[jobs.off]\nschedule = \"* * * * *\"\nrun = \"true\"\nenabled = false\n\
         [jobs.on]\nschedule = \"* * * * *\"\nrun = \"true\"\n",
    );
    let st = seen(&s, "off");
    st.all("disabled", 0);
    assert_eq!(st.json["next_run"], serde_json::Value::Null, "{}", st.json);
    let text = st.text.split("\non  ").next().unwrap_or_default();
    assert!(
        text.contains("next run      none while disabled"),
        "{}",
        st.text
    );
    // A next run less than a second away reads "in …s" or "just now",
    // never a duration of nothing.
    let on = seen(&s, "on");
    assert!(!on.text.contains("in 0ms"), "{}", on.text);
    assert!(!on.text.contains("(in 0s)"), "{}", on.text);
}

/// A stuck run needs attention whatever else holds: a pause set after it
/// stuck, or a live run on the job's other slot. Each used to hide it
/// (`paused`, `running`, status exit 0, and `BatonJobHung` never fired).
#[test]
fn a_hung_run_is_hung_through_a_pause_and_beside_a_live_slot() {
    let s = Sched::new("");
    let pids = s.env.path("pids");
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\nttl = \"2s\"\nkill_grace = \"500ms\"\n\
         takeover_grace = \"3s\"\n[jobs.x]\nschedule = \"0 0 1 1 *\"\nmax_concurrent = 2\n\
         run = \"echo $$ >> {}; exec sleep 60\"\n",
        pids.display()
    ));
    let spawn = || {
        let mut c = s.cmd(&["run", "x"]);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c.spawn().unwrap()
    };
    let mut first = spawn();
    eventually("the first run's step", || {
        std::fs::read_to_string(&pids).is_ok_and(|p| p.lines().count() == 1)
    });
    // Its supervisor stopped: no renewal; its step dies by its deadline.
    signal(i32::try_from(first.id()).unwrap(), Signal::STOP);
    let mut second = spawn();
    eventually("the second run's step", || {
        std::fs::read_to_string(&pids).is_ok_and(|p| p.lines().count() == 2)
    });
    eventually("the first slot to read hung", || {
        s.json(&["status", "--json"])["jobs"][0]["holders"]
            .as_array()
            .is_some_and(|h| h.iter().any(|h| h["verdict"] == "hung"))
    });
    seen(&s, "x").all("hung", 1);
    let o = s.run(&["pause", "x", "--reason", "maintenance"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let st = seen(&s, "x");
    st.all("hung", 1);
    assert!(st.text.contains("PAUSED"), "{}", st.text);
    let m = Exposition::parse(&metrics(&s, &[]));
    let state = |word| m.value("baton_job_state", &[("baton_job", "x"), ("state", word)]);
    assert_eq!(
        (state("hung"), state("paused"), state("running")),
        (1.0, 0.0, 0.0)
    );
    // Contained, each step dies with its supervisor.
    for run in [&mut first, &mut second] {
        signal(i32::try_from(run.id()).unwrap(), Signal::KILL);
        let _ = run.wait();
    }
}

/// A run past its `max_runtime` has its `overrunning` alert in the ledger
/// while it runs, so `status` shows it beside `running`; it used to reach
/// the ledger only once the run ended, and never when its supervisor was
/// killed first.
#[test]
fn an_overrunning_alert_is_in_the_ledger_while_the_run_goes_on() {
    let s = Sched::new("");
    s.write("[jobs.x]\nschedule = \"0 0 1 1 *\"\nmax_runtime = \"1s\"\nrun = \"sleep 30\"\n");
    let mut run = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let overrunning = |v: &serde_json::Value| {
        v["jobs"][0]["recent_alerts"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a["kind"] == "overrunning"))
    };
    eventually("status to show the overrunning alert", || {
        overrunning(&s.json(&["status", "--json"]))
    });
    let v = s.json(&["status", "--json"]);
    assert_eq!(v["jobs"][0]["state"], "running", "{v}");
    // Killed now, the run leaves its alert recorded.
    signal(i32::try_from(run.id()).unwrap(), Signal::KILL);
    let _ = run.wait();
    let v = s.json(&["status", "--json"]);
    assert!(overrunning(&v), "{v}");
}

/// A ledger that cannot be read (a named pipe at `baton.db`): the job is
/// `unknown`, and nothing it would take the ledger to know is claimed. It
/// used to add "OVERDUE occurrence … did not start" for occurrences that
/// had run.
#[test]
fn an_unread_ledger_claims_no_occurrence_did_not_start() {
    let s = Sched::new("");
    s.write(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"* * * * *\"\nrun = \"true\"\n",
    );
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let db = s.env.state().join("baton.db");
    for suffix in ["-wal", "-shm", ""] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    baton_testkit::mkfifo(&db);
    let o = shifted(&s, "+300s", &["status"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("UNKNOWN"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("did not start"), "{}", stdout(&o));
    let o = shifted(&s, "+300s", &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(v["jobs"][0]["overdue"].is_null(), "{v}");
}

/// A ledger that cannot be read, of a job whose last run failed: `status
/// --json` says `unknown` and exits as the text does, and every fact the
/// ledger keeps is null, never the default it was read as. It used to say
/// `"failing": false` with zero counts, as if the ledger had said the job
/// was fine. The metrics refuse rather than export those facts as 0, and
/// the page says the runs and alerts are unknown rather than "never run".
#[test]
fn an_unread_ledger_leaves_its_facts_null_in_json() {
    let s = Sched::new("");
    s.write(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"false\"\n",
    );
    let o = s.run(&["run", "j"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v = s.json(&["status", "--json"]);
    assert_eq!(v["jobs"][0]["failing"], true, "{v}");
    let db = s.env.state().join("baton.db");
    for suffix in ["-wal", "-shm", ""] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    baton_testkit::mkfifo(&db);
    let text = s.run(&["status"]);
    assert!(stdout(&text).contains("j  UNKNOWN"), "{}", stdout(&text));
    let o = s.run(&["status", "--json"]);
    assert_eq!(code(&o), code(&text), "{}", stderr(&o));
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["healthy"], false, "{v}");
    assert!(v["error"].is_string(), "{v}");
    let j = &v["jobs"][0];
    assert_eq!(j["state"], "unknown", "{v}");
    for unknown in [
        "failing",
        "consecutive_failures",
        "crashed",
        "never_run",
        "missed",
        "queued",
        "recent_alerts",
        "last_run",
        "last_failure",
    ] {
        assert!(j[unknown].is_null(), "{unknown}: {v}");
    }
    assert!(j["steps"][0]["consecutive_failures"].is_null(), "{v}");
    // Nothing the ledger counts is exported as 0.
    let m = s.run(&["__metrics"]);
    assert_ne!(code(&m), 0, "{}", stdout(&m));
    assert!(!stdout(&m).contains("baton_job_failing"), "{}", stdout(&m));
    let page = s.run(&["__page"]);
    assert_eq!(code(&page), 0, "{}", stderr(&page));
    let html = stdout(&page);
    assert!(html.contains("data-state=\"unknown\""), "{html}");
    assert!(!html.contains("never run"), "{html}");
    assert!(!html.contains("no runs yet"), "{html}");
}
