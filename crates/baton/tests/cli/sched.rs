//! The scheduler through the real binary: `tick`, `run`, `status`,
//! `config`, `history` on real processes, a real ledger and real locks.

use baton_store::ledger::Records;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::{BATON, Env, code, pause, processes_of_run, stderr, stdout};

/// A scheduler set-up: a state directory and a `baton.toml` in a temporary
/// directory.
pub(crate) struct Sched {
    pub(crate) env: Env,
}

impl Sched {
    pub(crate) fn new(toml: &str) -> Self {
        let s = Self { env: Env::new() };
        s.write(toml);
        s
    }

    /// Writes `baton.toml`, with `[scheduler] state_dir` and UTC unless
    /// the text sets them, and `STATE` replaced by the state directory.
    pub(crate) fn write(&self, toml: &str) {
        let text = toml.replace("STATE", self.env.state().to_str().unwrap());
        let text = if text.contains("[scheduler]") {
            text
        } else {
            format!(
                "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{text}",
                self.env.state().to_str().unwrap()
            )
        };
        std::fs::write(self.config(), text).unwrap();
    }

    pub(crate) fn config(&self) -> PathBuf {
        self.env.path("baton.toml")
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BATON);
        c.args(args)
            .env("BATON_CONFIG", self.config())
            .env_remove("BATON_STATE_DIR")
            .env_remove("BATON_ENABLED")
            .current_dir(self.env.tmp.path())
            .stdin(Stdio::null());
        c
    }

    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().unwrap()
    }

    /// `baton store migrate` of the store its configuration names (no
    /// `BATON_STORE_URL` from the environment), which must succeed.
    pub(crate) fn migrate(&self) {
        let o = self
            .cmd(&["store", "migrate"])
            .env_remove("BATON_STORE_URL")
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Runs `args` and waits for it, killing it and failing the test past
    /// `bound`: a process that never ends is a failure, not a hang.
    pub(crate) fn run_within(&self, args: &[&str], bound: std::time::Duration) -> Output {
        let mut child = self
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        for _ in 0..bound.as_millis() / 100 {
            if child.try_wait().unwrap().is_some() {
                return child.wait_with_output().unwrap();
            }
            pause(100);
        }
        let _ = child.kill();
        let o = child.wait_with_output().unwrap();
        panic!(
            "baton {args:?} still ran after {bound:?}: {}{}",
            stdout(&o),
            stderr(&o)
        );
    }

    pub(crate) fn json(&self, args: &[&str]) -> serde_json::Value {
        let o = self.run(args);
        serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {}{}", stdout(&o), stderr(&o)))
    }

    pub(crate) fn envelope(&self) -> String {
        let mut all = String::new();
        if let Ok(d) = std::fs::read_dir(self.env.state().join("logs")) {
            for e in d.filter_map(Result::ok) {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.starts_with("baton_") {
                    all.push_str(&std::fs::read_to_string(e.path()).unwrap());
                }
            }
        }
        all
    }
}

/// The ledger as a scheduler that has known `jobs` since `seen` leaves it,
/// nothing of theirs decided yet: their occurrences after `seen` are theirs
/// to run or to miss. (A job the ledger first sees at a tick waits for its
/// first occurrence after that tick.)
pub(crate) fn known_since(s: &Sched, jobs: &[&str], seen: jiff::Timestamp) {
    use std::os::unix::fs::PermissionsExt;
    let state = s.env.state();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut l = baton_ledger::Ledger::open(&state, seen).unwrap();
    l.see_jobs(jobs, seen).unwrap();
    l.checkpoint().unwrap();
}

/// [`known_since`] the start of this second, for jobs due every second:
/// the next tick finds this second's occurrence theirs to run (and, when it
/// comes within the second, no other). Waits first for a second with time
/// left in it.
pub(crate) fn known_this_second(s: &Sched, jobs: &[&str]) {
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    if now.subsec_nanosecond() > 600_000_000 {
        pause(u64::try_from(1_050 - now.subsec_nanosecond() / 1_000_000).unwrap());
    }
    let second = baton_testkit::wall_seconds();
    known_since(s, jobs, jiff::Timestamp::from_second(second).unwrap());
}

/// [`known_since`] in the PostgreSQL store of `pg` (migrated already).
pub(crate) fn pg_known_since(
    pg: &baton_testkit::pg::PgServer,
    jobs: &[&str],
    seen: jiff::Timestamp,
) {
    let us = seen.as_microsecond();
    for job in jobs {
        pg.sql(&format!(
            "INSERT INTO baton.jobs (job, first_seen) VALUES ('{job}', {us}) \
             ON CONFLICT (job) DO UPDATE SET first_seen = LEAST(baton.jobs.first_seen, {us})"
        ));
    }
}

/// A day before the newest 1 January (UTC): a job known since then has
/// `0 0 1 1 *`'s newest occurrence to run, and no older one.
pub(crate) fn before_new_year() -> jiff::Timestamp {
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    let year = now.to_zoned_datetime(jiff::tz::TimeZone::UTC).year();
    format!("{year}-01-01T00:00:00Z")
        .parse::<jiff::Timestamp>()
        .unwrap()
        - jiff::SignedDuration::from_hours(24)
}

pub(crate) fn lines(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |s| s.lines().count())
}

/// A job due now, that appends a line to `counter`: one occurrence a year,
/// caught up for 400 days, so the same occurrence stays due through a test
/// whatever the minute (a minute's schedule would bring a new occurrence
/// when a test crosses a minute). Due to a ledger that knows the job since
/// before that occurrence ([`known_since`], [`before_new_year`]): a job
/// first seen by a tick waits for its next occurrence.
fn counting_job(counter: &Path, extra: &str) -> String {
    format!(
        "[jobs.count]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo ran >> {}{extra}\"\n",
        counter.display()
    )
}

#[test]
fn sixteen_ticks_at_once_run_one_occurrence_once() {
    for trial in 0..50 {
        let env = Env::new();
        let counter = env.path("counter");
        let s = Sched { env };
        s.write(&counting_job(&counter, "; sleep 0.2"));
        known_since(&s, &["count"], before_new_year());
        let ticks: Vec<_> = (0..16)
            .map(|_| {
                s.cmd(&["tick"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for t in ticks {
            let o = t.wait_with_output().unwrap();
            assert_eq!(code(&o), 0, "trial {trial}: {}", stderr(&o));
            assert_eq!(stderr(&o), "", "trial {trial}: a tick spoke");
        }
        assert_eq!(
            lines(&counter),
            1,
            "trial {trial}: the occurrence ran {} times",
            lines(&counter)
        );
        // Once the first run is over, another tick still leaves it at once.
        assert_eq!(code(&s.run(&["tick"])), 0);
        assert_eq!(
            lines(&counter),
            1,
            "trial {trial}: re-run after it finished"
        );
    }
}

#[test]
fn a_tick_while_the_run_goes_on_never_runs_it_beside_itself() {
    let env = Env::new();
    let marker = env.path("running");
    let counter = env.path("counter");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.slow]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo ran >> {c}; touch {m}; sleep 3\"\n",
        c = counter.display(),
        m = marker.display()
    ));
    known_since(&s, &["slow"], before_new_year());
    let first = s.cmd(&["tick"]).spawn().unwrap();
    crate::support::eventually("the run to start", || marker.exists());
    for _ in 0..5 {
        let o = s.run(&["tick"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        assert_eq!(stderr(&o), "", "a tick of the running occurrence spoke");
    }
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(lines(&counter), 1);
}

#[test]
fn retries_grow_their_delay_and_stop_on_success() {
    let env = Env::new();
    let tries = env.path("tries");
    let s = Sched { env };
    // Fails twice, then succeeds.
    s.write(&format!(
        "[jobs.flaky]\nevery = \"1h\"\nretries = 3\nbackoff = \"200ms\"\nrun = \"echo x >> {t}; [ $(wc -l < {t}) -ge 3 ]\"\n",
        t = tries.display()
    ));
    let o = s.run(&["run", "flaky"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&tries), 3);
    let log = s.envelope();
    assert!(log.contains("retry 1 of 3 in 200ms"), "{log}");
    assert!(log.contains("retry 2 of 3 in 400ms"), "{log}");
    let h = s.json(&["history", "flaky", "--json"]);
    let attempts = h[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts[2]["outcome"], "ok");
    assert_eq!(attempts[0]["exit_code"], 1);
    assert_eq!(h[0]["verdict"], "ok");
}

/// A failed attempt is in the ledger while its retry waits (the last
/// attempt of a run may wait for the run's end; this one must not).
#[test]
fn a_failed_attempt_is_recorded_before_its_retry_waits() {
    let env = Env::new();
    let s = Sched { env };
    s.write("[jobs.wait]\nevery = \"1h\"\nretries = 1\nbackoff = \"60s\"\nrun = \"exit 3\"\n");
    let mut child = s.cmd(&["run", "wait"]).spawn().unwrap();
    crate::support::eventually("the failed attempt in the ledger during the wait", || {
        let o = s.run(&["history", "wait", "--json"]);
        let h: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        h[0]["attempts"].as_array().is_some_and(|a| a.len() == 1)
    });
    let h = s.json(&["history", "wait", "--json"]);
    assert!(h[0]["finished"].is_null(), "the run still waits: {h}");
    assert_eq!(h[0]["attempts"][0]["exit_code"], 3, "{h}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn exit_2_is_never_retried() {
    let env = Env::new();
    let tries = env.path("tries");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.usage]\nevery = \"1h\"\nretries = 3\nbackoff = \"100ms\"\nrun = \"echo x >> {}; exit 2\"\n",
        tries.display()
    ));
    let o = s.run(&["run", "usage"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(lines(&tries), 1);
    assert!(stderr(&o).contains("never retried"), "{}", stderr(&o));
}

#[test]
fn a_failed_step_skips_the_rest_and_the_check_still_runs() {
    let env = Env::new();
    let later = env.path("later");
    let checked = env.path("checked");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.pipe]\nevery = \"1h\"\n\
         [[jobs.pipe.steps]]\nname = \"first\"\nrun = \"exit 5\"\n\
         [[jobs.pipe.steps]]\nname = \"second\"\nrun = \"touch {}\"\n\
         [[jobs.pipe.checks]]\nname = \"health\"\nrun = \"touch {}; exit 1\"\n",
        later.display(),
        checked.display()
    ));
    let o = s.run(&["run", "pipe"]);
    assert_eq!(code(&o), 1);
    assert!(!later.exists(), "a step after a failed one ran");
    assert!(checked.exists(), "the check did not run");
    let h = s.json(&["history", "pipe", "--json"]);
    let a = h[0]["attempts"].as_array().unwrap();
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a[0]["step"], "first");
    assert_eq!(a[0]["exit_code"], 5);
    assert_eq!(a[1]["step"], "health");
    assert_eq!(a[1]["kind"], "check");
    assert_eq!(a[1]["outcome"], "failed");
    assert_eq!(h[0]["verdict"], "failed");
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
    let kinds: Vec<String> = alerts
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["step-failed", "check-failed"]);
}

#[test]
fn a_timed_out_step_records_124_and_its_whole_tree_is_gone() {
    let env = Env::new();
    let s = Sched { env };
    s.write(
        "[jobs.hang]\nevery = \"1h\"\ntimeout = \"500ms\"\nkill_grace = \"300ms\"\n\
         run = \"trap '' TERM; setsid sh -c 'trap \\\"\\\" TERM; sleep 60' & sleep 60\"\n",
    );
    let o = s.run(&["run", "hang"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let h = s.json(&["history", "hang", "--json"]);
    let run_id = h[0]["run_id"].as_str().unwrap().to_owned();
    assert_eq!(h[0]["attempts"][0]["outcome"], "timeout");
    assert_eq!(h[0]["exit_code"], 124);
    assert!(
        processes_of_run(&run_id).is_empty(),
        "the step's tree outlived it"
    );
    assert!(stderr(&o).contains("timed out"), "{}", stderr(&o));
}

#[test]
fn the_kill_switch_touches_nothing() {
    let env = Env::new();
    let counter = env.path("counter");
    let s = Sched { env };
    s.write(&counting_job(&counter, ""));
    let o = s
        .cmd(&["tick"])
        .env("BATON_ENABLED", "false")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !s.env.state().exists(),
        "the kill switch created the state directory"
    );
    assert_eq!(lines(&counter), 0);
    let o = s
        .cmd(&["run", "count"])
        .env("BATON_ENABLED", "false")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0);
    assert!(stderr(&o).contains("kill switch"), "{}", stderr(&o));
    assert!(!s.env.state().exists());
    // The same from the file.
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\nenabled = false\n{}",
        s.env.state().to_str().unwrap(),
        counting_job(&counter, "")
    ));
    assert_eq!(code(&s.run(&["tick"])), 0);
    assert!(!s.env.state().exists());
    // Every surface says the job does not run: `enabled` too.
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["state"], "disabled", "{st}");
    assert_eq!(st["jobs"][0]["enabled"], false, "{st}");
    let metrics = stdout(&s.run(&["__metrics"]));
    assert!(
        metrics.contains("baton_job_enabled{baton_job=\"count\"} 0"),
        "{metrics}"
    );
}

#[test]
fn configuration_errors_exit_2_name_the_key_and_create_nothing() {
    let cases = [
        (
            "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\nretires = 3\n",
            "jobs.a.retires",
        ),
        (
            "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\nretries = \"three\"\n",
            "jobs.a.retries",
        ),
        (
            "[jobs.a]\nevery = \"1 hour\"\nrun = \"true\"\n",
            "jobs.a.every",
        ),
        (
            "[jobs.a]\nschedule = \"61 * * * *\"\nrun = \"true\"\n",
            "jobs.a.schedule",
        ),
        (
            "[jobs.a]\nschedule = \"0 3 * * *\"\ntimezone = \"Mars/Olympus\"\nrun = \"true\"\n",
            "jobs.a.timezone",
        ),
        (
            "[jobs.a]\nschedule = \"0 3 * * *\"\nevery = \"1h\"\nrun = \"true\"\n",
            "both schedule and every",
        ),
        ("[jobs.a]\nrun = \"true\"\n", "neither schedule nor every"),
        (
            "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\n[[jobs.a.steps]]\nrun = \"x\"\n",
            "both run and steps",
        ),
        ("[jobs.a]\nevery = \"1h\"\n", "neither run nor steps"),
        (
            "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\n[[jobs.a.checks]]\nrun = \"x\"\nretries = 1\n",
            "checks[0].retries",
        ),
    ];
    for (toml, needle) in cases {
        let s = Sched::new(toml);
        for cmd in [&["tick"][..], &["run", "a"], &["status"], &["config"]] {
            let o = s.run(cmd);
            assert_eq!(code(&o), 2, "{cmd:?} {toml:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(err.contains(needle), "{cmd:?}: {err:?} lacks {needle:?}");
            assert!(
                err.contains("baton.toml:"),
                "{err:?} names no file and line"
            );
            assert_eq!(err.lines().count(), 1, "{err:?}");
        }
        assert!(!s.env.state().exists(), "{toml:?}: something was created");
    }
    // No configuration at all.
    let env = Env::new();
    let o = Command::new(BATON)
        .args(["tick"])
        .env_remove("BATON_CONFIG")
        .current_dir(env.tmp.path())
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("baton.toml"), "{}", stderr(&o));
}

#[test]
fn status_reads_new_then_on_schedule_then_overdue() {
    let env = Env::new();
    let s = Sched { env };
    s.write("[jobs.hourly]\nevery = \"1h\"\nrun = \"true\"\n");
    // A job nothing has run yet, whose first occurrence has not come due.
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("hourly  NEW  "), "{}", stdout(&o));
    assert!(stdout(&o).contains("never run"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("OVERDUE"), "{}", stdout(&o));
    // Known since just before this hour's occurrence, the tick runs it
    // (its window is an hour).
    let hour = baton_testkit::wall_seconds() / 3600 * 3600;
    known_since(
        &s,
        &["hourly"],
        jiff::Timestamp::from_second(hour - 1).unwrap(),
    );
    assert_eq!(code(&s.run(&["tick"])), 0);
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    let v = s.json(&["status", "--json"]);
    assert_eq!(v["healthy"], true);
    let job = &v["jobs"][0];
    assert_eq!(job["job"], "hourly");
    assert_eq!(job["state"], "ok");
    assert_eq!(job["last_run"]["verdict"], "ok");
    assert!(job["next_run"].as_str().is_some());
    // A job due every minute, ticked ten minutes ago and then left alone:
    // its next occurrences go by unstarted, and it is overdue although its
    // catch-up window (an hour) has not passed.
    s.write("[jobs.often]\nschedule = \"* * * * *\"\nrun = \"true\"\n");
    let o = crate::states::shifted(&s, "-600s", &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stdout(&o).contains("often  OVERDUE  "), "{}", stdout(&o));
    let v = s.json(&["status", "--json"]);
    assert_eq!(v["jobs"][0]["state"], "overdue", "{v}");
    assert!(
        v["jobs"][0]["overdue"]["occurrence"].as_str().is_some(),
        "{v}"
    );
}

#[test]
fn config_shows_every_value_and_its_source() {
    let s = Sched::new("[jobs.a]\nevery = \"15m\"\nretries = 2\nrun = \"true\"\n");
    let o = s
        .cmd(&["config"])
        .env("BATON_BACKOFF", "5s")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("# default"), "{text}");
    assert!(text.contains("baton.toml:5"), "{text}");
    assert!(text.contains("BATON_BACKOFF"), "{text}");
    let v: serde_json::Value = serde_json::from_slice(
        &s.cmd(&["config", "--json"])
            .env("BATON_BACKOFF", "5s")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(v["scheduler"]["backoff"]["value"], "5s");
    assert_eq!(v["scheduler"]["backoff"]["source"], "BATON_BACKOFF");
    assert_eq!(v["jobs"]["a"]["retries"]["value"], 2);
    assert!(
        v["jobs"]["a"]["backoff"]["source"]
            .as_str()
            .unwrap()
            .starts_with("[scheduler]")
    );
}

#[test]
fn steps_see_their_run_in_the_environment() {
    let env = Env::new();
    let out = env.path("env");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.e]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n[[jobs.e.steps]]\nname = \"dump\"\nrun = \"env | grep ^BATON_ | sort > {}\"\nenv = {{ EXTRA = \"1\" }}\n",
        out.display()
    ));
    known_since(&s, &["e"], before_new_year());
    assert_eq!(code(&s.run(&["tick"])), 0);
    let text = std::fs::read_to_string(&out).unwrap();
    for key in [
        "BATON_JOB=e",
        "BATON_OCCURRENCE=20",
        "BATON_RUN_ID=",
        "BATON_FENCE=",
        "BATON_TOKEN=",
        "BATON_LOCK=",
        "BATON_STEP=dump",
        "BATON_ATTEMPT=1",
    ] {
        assert!(text.contains(key), "{text} lacks {key}");
    }
    assert!(
        text.contains("BATON_OCCURRENCE=") && text.contains(":00Z"),
        "{text}"
    );
    let o = s.run(&["run", "e"]);
    assert_eq!(code(&o), 0);
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .contains("BATON_OCCURRENCE=manual")
    );
}

#[test]
fn a_manual_run_never_bypasses_the_lock() {
    let env = Env::new();
    let marker = env.path("running");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.j]\nevery = \"1h\"\nrun = \"touch {}; sleep 3\"\n",
        marker.display()
    ));
    let first = s.cmd(&["run", "j"]).stdout(Stdio::null()).spawn().unwrap();
    crate::support::eventually("the first run", || marker.exists());
    let o = s.run(&["run", "j"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("busy"), "{}", stderr(&o));
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
    let a: serde_json::Value = serde_json::from_str(alerts.lines().last().unwrap()).unwrap();
    assert_eq!(a["kind"], "busy");
    assert_eq!(a["job"], "j");
    assert_eq!(a["occurrence"], "manual");
    assert!(a["holder"]["pid"].as_u64().is_some());
    let out = first.wait_with_output().unwrap();
    assert!(out.status.success());
}

#[test]
fn twenty_processes_writing_the_ledger_at_once_lose_nothing() {
    let env = Env::new();
    let s = Sched { env };
    let mut toml = String::new();
    for i in 0..20 {
        toml.push_str(&format!("[jobs.j{i}]\nevery = \"1h\"\nrun = \"true\"\n"));
    }
    s.write(&toml);
    let procs: Vec<_> = (0..20)
        .map(|i| {
            let script =
                format!("for n in $(seq 50); do {BATON} run j{i} >/dev/null || exit 1; done");
            Command::new("sh")
                .args(["-c", &script])
                .env("BATON_CONFIG", s.config())
                .stdin(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut p in procs {
        assert!(p.wait().unwrap().success());
    }
    let mut total = 0;
    for i in 0..20 {
        let h = s.json(&["history", &format!("j{i}"), "--limit", "100", "--json"]);
        let n = h.as_array().unwrap().len();
        assert_eq!(n, 50, "j{i} has {n} runs");
        total += n;
    }
    assert_eq!(total, 1000);
}

#[test]
fn a_corrupt_ledger_is_moved_aside_reported_and_the_next_tick_works() {
    for damage in ["garbage", "truncate"] {
        let env = Env::new();
        let counter = env.path("counter");
        let s = Sched { env };
        s.write("[jobs.first]\nevery = \"1h\"\nrun = \"true\"\n");
        assert_eq!(code(&s.run(&["run", "first"])), 0);
        let db = s.env.state().join("baton.db");
        // The run ended with a checkpoint: the file itself holds the ledger.
        assert!(std::fs::metadata(&db).unwrap().len() > 4096, "{damage}");
        match damage {
            "garbage" => std::fs::write(&db, vec![0x5au8; 8192]).unwrap(),
            _ => {
                let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
                f.set_len(4096).unwrap();
            }
        }
        let _ = std::fs::remove_file(s.env.state().join("baton.db-wal"));
        s.write(&counting_job(&counter, ""));
        let o = s.run(&["tick"]);
        assert!(stderr(&o).contains("ledger"), "{damage}: {}", stderr(&o));
        // The fresh ledger sees the job now: like a fresh state directory,
        // it runs nothing for the past (the lock's claims guard what ran
        // under the lost one).
        assert_eq!(lines(&counter), 0, "{damage}: {}", stderr(&o));
        let o = s.run(&["run", "count"]);
        assert_eq!(code(&o), 0, "{damage}: {}", stderr(&o));
        assert_eq!(lines(&counter), 1, "{damage}: {}", stderr(&o));
        let aside: Vec<_> = std::fs::read_dir(s.env.state())
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                n.starts_with("baton.db.corrupt-") && !n.ends_with("-wal") && !n.ends_with("-shm")
            })
            .collect();
        assert_eq!(aside.len(), 1, "{damage}");
        let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
        assert!(alerts.contains("ledger-corrupt"), "{damage}: {alerts}");
        let h = s.json(&["history", "count", "--json"]);
        assert_eq!(h.as_array().unwrap().len(), 1, "{damage}");
    }
}

/// A read (`status`, `history`) that is first to find the ledger corrupt
/// moves it aside as a tick would, and alerts it as a tick would: it used
/// to reset the ledger without a word, and the tick after it found a
/// sound, empty ledger and said nothing either.
#[test]
fn a_corrupt_ledger_a_read_finds_first_is_alerted() {
    for read in [
        &["status"][..],
        &["history", "first"],
        &["status", "--json"],
    ] {
        let env = Env::new();
        let s = Sched { env };
        s.write("[jobs.first]\nevery = \"1h\"\nrun = \"true\"\n");
        assert_eq!(code(&s.run(&["run", "first"])), 0);
        let db = s.env.state().join("baton.db");
        std::fs::write(&db, vec![0x5au8; 8192]).unwrap();
        let _ = std::fs::remove_file(s.env.state().join("baton.db-wal"));
        let o = s.run(read);
        assert!(
            stderr(&o).contains("the ledger was corrupt"),
            "{read:?}: {}",
            stderr(&o)
        );
        let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
        assert_eq!(
            alerts.matches("ledger-corrupt").count(),
            1,
            "{read:?}: {alerts}"
        );
        // Once: the tick after it finds the fresh ledger sound.
        let o = s.run(&["tick"]);
        assert!(!stderr(&o).contains("corrupt"), "{read:?}: {}", stderr(&o));
        let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
        assert_eq!(alerts.matches("ledger-corrupt").count(), 1, "{alerts}");
    }
}

#[test]
fn a_stopped_tick_says_so_once_and_leaves_what_it_did_not_start_to_the_next() {
    let env = Env::new();
    let started = env.path("started");
    let s = Sched { env };
    // One occurrence a year, caught up for 400 days: the same occurrence
    // stays due through the test, whatever the minute.
    let mut toml = String::from(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nmax_parallel = 2\n\
         catch_up_window = \"400d\"\n",
    );
    for i in 0..40 {
        toml.push_str(&format!(
            "[jobs.j{i}]\nschedule = \"0 0 1 1 *\"\nrun = \"echo j{i} >> {}; sleep 30\"\n",
            started.display()
        ));
    }
    s.write(&toml);
    let names: Vec<String> = (0..40).map(|i| format!("j{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    known_since(&s, &names, before_new_year());
    let mut tick = s.cmd(&["tick"]).stderr(Stdio::piped()).spawn().unwrap();
    crate::support::eventually("two runs to start", || lines(&started) >= 2);
    crate::support::signal(
        i32::try_from(tick.id()).unwrap(),
        rustix::process::Signal::TERM,
    );
    baton_testkit::wait_for_exit(&mut tick, "the stopped tick");
    let o = tick.wait_with_output().unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line, not one per job: {err}");
    assert!(
        err.contains("stopped by signal 15") && err.contains("38 due job(s) not started"),
        "{err}"
    );
    assert_eq!(lines(&started), 2, "nothing started after the stop");
    // The jobs it did not start are still due: the next tick starts them
    // (two at a time), and it is stopped the same way.
    let mut next = s.cmd(&["tick"]).stderr(Stdio::piped()).spawn().unwrap();
    crate::support::eventually("the next tick to start more", || lines(&started) >= 4);
    crate::support::signal(
        i32::try_from(next.id()).unwrap(),
        rustix::process::Signal::TERM,
    );
    baton_testkit::wait_for_exit(&mut next, "the next tick");
    let text = std::fs::read_to_string(&started).unwrap();
    let mut names: Vec<&str> = text.lines().collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(
        names.len(),
        4,
        "the stopped runs are not started twice: {text}"
    );
}

#[test]
fn lock_commands_find_a_schedulers_locks_through_its_config() {
    let env = Env::new();
    let counter = env.path("counter");
    let s = Sched { env };
    s.write(&counting_job(&counter, ""));
    assert_eq!(code(&s.run(&["run", "count"])), 0);
    let config = s.config();
    let o = s.run(&[
        "lock",
        "show",
        "count",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("free"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains(s.env.state().to_str().unwrap()),
        "{}",
        stdout(&o)
    );
    let o = s.run(&[
        "lock",
        "break",
        "count",
        "--config",
        "/nonexistent/baton.toml",
    ]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

fn alert_kinds(s: &Sched) -> Vec<String> {
    std::fs::read_to_string(s.env.state().join("logs/alerts.log"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The job's failures, last failure and last success, as `status --json`
/// gives them.
fn counters(s: &Sched, job: &str) -> (u64, serde_json::Value, serde_json::Value) {
    let j = &s.json(&["status", job, "--json"])["jobs"][0];
    (
        j["consecutive_failures"].as_u64().unwrap(),
        j["last_failure"].clone(),
        j["last_success"].clone(),
    )
}

#[test]
fn a_run_stopped_by_a_signal_to_its_run_or_tick_is_interrupted_not_a_failure() {
    let env = Env::new();
    let slow = env.path("slow");
    let started = env.path("started");
    let s = Sched { env };
    // Slow only once `slow` exists. The mark is the shell's own (no child
    // process) and the shell then becomes the sleep: a signal passed to the
    // job once the mark exists reaches either the shell with nothing in the
    // foreground, or the sleep. (A shell that gets SIGINT while a child of
    // its own, a `touch`, ends normally goes on, as shells do; the run would
    // then rightly wait for the rest of its job.)
    s.write(&format!(
        "[jobs.count]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"if [ -e {sl} ]; then : > {st}; exec sleep 60; fi\"\n",
        sl = slow.display(),
        st = started.display()
    ));
    known_since(&s, &["count"], before_new_year());
    assert_eq!(code(&s.run(&["run", "count"])), 0);
    let ok = counters(&s, "count");
    assert_eq!((ok.0, &ok.1), (0, &serde_json::Value::Null));
    std::fs::write(&slow, "").unwrap();
    // `baton run` told to stop (SIGTERM), and a tick (SIGINT).
    for (args, sig) in [
        (&["run", "count"][..], rustix::process::Signal::TERM),
        (&["tick"][..], rustix::process::Signal::INT),
    ] {
        let _ = std::fs::remove_file(&started);
        let mut child = s
            .cmd(args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        crate::support::eventually("the run to start", || started.exists());
        crate::support::signal(i32::try_from(child.id()).unwrap(), sig);
        baton_testkit::wait_for_exit(&mut child, "the stopped run");
        let h = s.json(&["history", "count", "--json"]);
        assert_eq!(h[0]["verdict"], "interrupted", "{args:?}: {h}");
        assert_eq!(counters(&s, "count"), ok, "{args:?}");
    }
    let st = s.run(&["status", "count", "--json"]);
    assert_eq!(code(&st), 0, "{}", stdout(&st));
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_ne!(v["jobs"][0]["state"], "failing", "{v}");
    let kinds = alert_kinds(&s);
    assert!(
        !kinds.iter().any(|k| k.ends_with("failed")),
        "a failure was alerted: {kinds:?}"
    );
}

/// SIGUSR1, SIGUSR2 and SIGALRM are the job's (reopen a log, say how far it
/// got). Sent to `baton run`, each reaches the running step and stops
/// nothing: the run ends as its command does, recorded `ok`. Sent to a
/// tick, whose workers run the jobs, it ends neither the tick nor its run.
/// Their default action ended baton, and the run was left unsupervised and
/// recorded `abandoned` by the next one.
#[test]
fn signals_meant_for_the_job_stop_neither_its_run_nor_its_tick() {
    let env = Env::new();
    let (got, started, go) = (env.path("got"), env.path("started"), env.path("go"));
    let s = Sched { env };
    // The signal goes to the step's group, as at a terminal: the `sleep`
    // of the moment dies of it, and the shell's trap runs.
    for (sig, name) in [
        (rustix::process::Signal::USR1, "USR1"),
        (rustix::process::Signal::USR2, "USR2"),
        (rustix::process::Signal::ALARM, "ALRM"),
    ] {
        let _ = std::fs::remove_file(&got);
        let _ = std::fs::remove_file(&started);
        s.write(&format!(
            "[jobs.j]\nschedule = \"0 0 1 1 *\"\n\
             run = \"trap 'echo {name} > {g}' {name}; : > {st}; while [ ! -s {g} ]; do sleep 0.05; \
             done; true\"\n",
            g = got.display(),
            st = started.display()
        ));
        let mut child = s
            .cmd(&["run", "j"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        crate::support::eventually("the run to start", || started.exists());
        crate::support::signal(i32::try_from(child.id()).unwrap(), sig);
        let status = baton_testkit::wait_for_exit(&mut child, "the run");
        let o = child.wait_with_output().unwrap();
        assert_eq!(
            status.code(),
            Some(0),
            "SIG{name}: {status:?} {}",
            stderr(&o)
        );
        assert_eq!(std::fs::read_to_string(&got).unwrap(), format!("{name}\n"));
        let h = s.json(&["history", "j", "--json"]);
        assert_eq!(h[0]["verdict"], "ok", "SIG{name}: {h}");
    }
    // A tick: its worker runs the job; the signal goes to the tick itself.
    s.write(&format!(
        "[jobs.t]\nschedule = \"* * * * *\"\n\
         run = \": > {st}; while [ ! -e {go} ]; do sleep 0.05; done\"\n",
        st = started.display(),
        go = go.display()
    ));
    let seen = baton_testkit::wall_seconds() - 180;
    known_since(&s, &["t"], jiff::Timestamp::from_second(seen).unwrap());
    let _ = std::fs::remove_file(&started);
    let mut tick = s
        .cmd(&["tick"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::support::eventually("the run to start", || started.exists());
    let pid = i32::try_from(tick.id()).unwrap();
    crate::support::signal(pid, rustix::process::Signal::USR1);
    crate::support::signal(pid, rustix::process::Signal::USR2);
    crate::support::signal(pid, rustix::process::Signal::ALARM);
    pause(300);
    std::fs::write(&go, "").unwrap();
    let status = baton_testkit::wait_for_exit(&mut tick, "the tick");
    let o = tick.wait_with_output().unwrap();
    // Its own exit code (1 for the minutes it says were missed since), not
    // death by the signal.
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        None,
        "{status:?} {}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("abandoned"), "{}", stderr(&o));
    let h = s.json(&["history", "t", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h}");
}

/// A step that catches the signal and ends normally has succeeded, and
/// nothing starts after it: the next step is not run and the run is
/// `interrupted`; a job whose only step so ended is `ok`; one whose step
/// then failed is not retried.
#[test]
fn a_signal_a_step_catches_lets_it_end_and_starts_nothing_after_it() {
    let env = Env::new();
    let started = env.path("started");
    let got = env.path("got");
    let second = env.path("second");
    let s = Sched { env };
    // The trap is set before the mark, and the step ends only once the
    // signal passed on has reached it (whatever the machine's load, the
    // next step could only start after the signal).
    let catching = format!(
        "trap ': > {g}' INT TERM; : > {st}; while [ ! -e {g} ]; do sleep 0.05; done; true",
        g = got.display(),
        st = started.display()
    );
    s.write(&format!(
        "[jobs.two]\nevery = \"1h\"\n[[jobs.two.steps]]\nname = \"first\"\nrun = \"{catching}\"\n\
         [[jobs.two.steps]]\nname = \"second\"\nrun = \": > {}\"\n\
         [jobs.one]\nevery = \"1h\"\nrun = \"{catching}\"\n\
         [jobs.retried]\nevery = \"1h\"\nretries = 2\nbackoff = \"1s\"\n\
         run = \"{catching}; exit 3\"\n",
        second.display()
    ));
    for (job, verdict, first) in [
        ("two", "interrupted", "ok"),
        ("one", "ok", "ok"),
        ("retried", "interrupted", "interrupted"),
    ] {
        let _ = std::fs::remove_file(&started);
        let _ = std::fs::remove_file(&got);
        let mut child = s
            .cmd(&["run", job])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        crate::support::eventually("the step to start", || started.exists());
        crate::support::signal(
            i32::try_from(child.id()).unwrap(),
            rustix::process::Signal::TERM,
        );
        let status = baton_testkit::wait_for_exit(&mut child, "the signalled run");
        assert_eq!(status.success(), verdict == "ok", "{job}: {status:?}");
        let h = s.json(&["history", job, "--json"]);
        assert_eq!(h[0]["verdict"], verdict, "{job}: {h}");
        assert_eq!(h[0]["attempts"][0]["outcome"], first, "{job}: {h}");
    }
    assert!(!second.exists(), "a step started after the signal");
    let h = s.json(&["history", "two", "--json"]);
    assert_eq!(h[0]["attempts"][1]["step"], "second", "{h}");
    assert_eq!(h[0]["attempts"][1]["outcome"], "interrupted", "{h}");
    let h = s.json(&["history", "retried", "--json"]);
    assert_eq!(
        h[0]["attempts"].as_array().map(Vec::len),
        Some(1),
        "a retry started after the signal: {h}"
    );
}

#[test]
fn a_step_that_cannot_start_is_a_failed_attempt_in_its_own_line() {
    let s = Sched::new(
        "[jobs.j]\nevery = \"1h\"\n[[jobs.j.steps]]\nname = \"ghost\"\n\
         run = [\"/nonexistent/baton-test-command\"]\n",
    );
    let o = s.run(&["run", "j"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("command not found"), "{}", stderr(&o));
    let j = &s.json(&["status", "j", "--json"])["jobs"][0];
    let step = &j["steps"][0];
    assert_eq!(step["step"], "ghost", "{j}");
    assert!(step["last_attempt"].is_string(), "{step}");
    assert!(step["last_failure"].is_string(), "{step}");
    assert_eq!(step["consecutive_failures"], 1, "{step}");
    let text = stdout(&s.run(&["status", "j"]));
    let line = text
        .lines()
        .find(|l| l.contains("ghost"))
        .unwrap_or_else(|| panic!("no line for the step: {text}"));
    assert!(!line.contains("last attempt never"), "{line}");
    assert!(!line.contains("last failure never"), "{line}");
    let h = s.json(&["history", "j", "--json"]);
    assert_eq!(h[0]["verdict"], "failed", "{h}");
    assert_eq!(h[0]["attempts"][0]["exit_code"], 127, "{h}");
}

#[test]
fn jobs_run_in_the_configuration_files_directory_unless_cwd_says_otherwise() {
    let env = Env::new();
    let out = env.path("where");
    let s = Sched { env };
    // A script beside baton.toml, named relative to it, as the README's
    // `run = "python3 health.py"` is.
    std::fs::write(s.env.path("here.sh"), format!("pwd >> {}\n", out.display())).unwrap();
    std::fs::create_dir(s.env.path("sub")).unwrap();
    std::fs::write(
        s.env.path("sub/here.sh"),
        format!("echo sub $(pwd) >> {}\n", out.display()),
    )
    .unwrap();
    s.write(
        "[jobs.count]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\nrun = \"sh here.sh\"\n\
         [jobs.elsewhere]\nevery = \"1h\"\ncwd = \"sub\"\nrun = \"sh here.sh\"\n",
    );
    known_since(&s, &["count"], before_new_year());
    let dir = std::fs::canonicalize(s.env.tmp.path()).unwrap();
    // Called from another directory: the tick, a run by hand, the daemon.
    let o = s.cmd(&["tick", "count"]).current_dir("/").output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.cmd(&["run", "count"]).current_dir("/").output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut daemon = s.cmd(&["daemon", "--listen", "127.0.0.1:0"]);
    daemon.current_dir("/");
    let d = crate::daemon::Daemon::start_cmd(daemon).unwrap();
    assert_eq!(d.post("/v1/jobs/count/run", "").status, 202);
    crate::support::eventually("the daemon's run", || lines(&out) == 3);
    let o = s
        .cmd(&["run", "elsewhere"])
        .current_dir("/")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let here = dir.display().to_string();
    assert_eq!(
        crate::policies::read_lines(&out),
        [
            here.clone(),
            here.clone(),
            here.clone(),
            format!("sub {here}/sub")
        ]
    );
    assert_eq!(d.terminate(), Some(0));
}

#[test]
fn output_limit_keeps_the_start_and_the_end_and_says_what_was_cut() {
    let s = Sched::new(
        "[jobs.loud]\nevery = \"1h\"\noutput_limit = \"1KiB\"\n\
         run = \"echo usage: loud; for i in $(seq 1 2000); do echo filler $i; done; \
         echo the error at the end >&2; exit 3\"\n",
    );
    let o = s.run(&["run", "loud"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let logs = s.env.state().join("logs");
    let log = std::fs::read_dir(&logs)
        .unwrap()
        .filter_map(Result::ok)
        .find(|e| e.file_name().to_string_lossy().starts_with("loud_"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .unwrap_or_else(|| panic!("no log of the job in {}", logs.display()));
    assert!(log.contains("usage: loud\n"), "{log}");
    assert!(log.contains("filler 1\n"), "{log}");
    assert!(log.contains("filler 2000\nthe error at the end\n"), "{log}");
    assert!(!log.contains("filler 1000\n"), "the middle was kept: {log}");
    let note = log
        .lines()
        .find(|l| l.contains("bytes cut"))
        .unwrap_or_else(|| panic!("no note of the cut: {log}"));
    assert!(note.contains("output_limit = 1KiB"), "{note}");
    // All but the limit's worth was cut (and the rest of the line the end
    // starts in, at most one filler line).
    let total: usize = 12
        + (1..=2000)
            .map(|i| format!("filler {i}\n").len())
            .sum::<usize>()
        + 21;
    let cut: usize = note
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap();
    assert!(
        total - 1024 <= cut && cut <= total - 1024 + 12,
        "{cut} of {total}: {note}"
    );
}

/// Two hosts' configurations (`a.toml`, `b.toml` in `dir`, each with its own
/// state directory) on the one PostgreSQL store of `pg`, migrated: the
/// `[scheduler]` table has `scheduler` added (lines ending in `\n`, or
/// empty), and `jobs` follows the `[store]` table.
pub(crate) fn two_hosts_on(
    dir: &Path,
    pg: &baton_testkit::pg::PgServer,
    scheduler: &str,
    jobs: &str,
) -> Vec<PathBuf> {
    let configs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|host| {
            let file = dir.join(format!("{host}.toml"));
            let state = dir.join(format!("state-{host}"));
            std::fs::write(
                &file,
                format!(
                    "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{scheduler}\
                     [store]\nurl = {:?}\n{jobs}",
                    state.display(),
                    pg.url()
                ),
            )
            .unwrap();
            file
        })
        .collect();
    let o = crate::support::baton_on(&configs[0], &["store", "migrate"])
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    configs
}
