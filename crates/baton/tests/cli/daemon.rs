//! `baton daemon` through the real binary: a real daemon process, real HTTP
//! on loopback and on its Unix socket, real jobs, real signals.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

use baton_testkit::client::{self as http, Answer};
use rustix::process::Signal;

use crate::sched::Sched;
use crate::support::{alive, eventually, pause, signal, stderr};

/// A daemon started on `127.0.0.1:0`; killed (SIGKILL) when dropped. Its
/// API changes things for the daemon's own user over its Unix socket
/// ([`Daemon::post`], [`Daemon::request`]); [`Daemon::get`] and
/// [`Daemon::tcp`] speak TCP, as any local user can.
pub(crate) struct Daemon {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    /// The Unix socket it said it listens on.
    pub(crate) socket: Option<PathBuf>,
    pub(crate) log: Arc<Mutex<String>>,
}

impl Daemon {
    pub(crate) fn start(s: &Sched, extra: &[&str]) -> Self {
        let mut args = vec!["daemon", "--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        Self::start_with(s, &args).unwrap_or_else(|(code, log)| {
            panic!("the daemon did not start (exit {code:?}):\n{log}")
        })
    }

    /// Starts `baton ARGS`; the daemon, or its exit code and stderr.
    pub(crate) fn start_with(s: &Sched, args: &[&str]) -> Result<Self, (Option<i32>, String)> {
        Self::start_cmd(s.cmd(args))
    }

    /// Starts `cmd` (a `baton daemon` command).
    pub(crate) fn start_cmd(mut cmd: std::process::Command) -> Result<Self, (Option<i32>, String)> {
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        // A program the test has just copied may still be open for writing
        // in a child another test thread forked meanwhile (until that child
        // execs): Linux refuses to run it (ETXTBSY) for that moment.
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    crate::support::pause(20);
                }
                spawned => break spawned.unwrap(),
            }
        };
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let log = Arc::new(Mutex::new(String::new()));
        let mut addr = None;
        let mut socket = None;
        let mut line = String::new();
        while err.read_line(&mut line).unwrap_or(0) > 0 {
            log.lock().unwrap().push_str(&line);
            if let Some(rest) = line.trim().split("listening on unix:").nth(1) {
                socket = rest.split(" (").next().map(PathBuf::from);
            }
            if let Some(rest) = line.trim().split("listening on http://").nth(1) {
                addr = rest.split_whitespace().next().and_then(|a| a.parse().ok());
                break;
            }
            line.clear();
        }
        let Some(addr) = addr else {
            let status = child.wait().unwrap();
            return Err((status.code(), log.lock().unwrap().clone()));
        };
        let sink = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut line = String::new();
            while err.read_line(&mut line).unwrap_or(0) > 0 {
                sink.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Ok(Self {
            child,
            addr,
            socket,
            log,
        })
    }

    /// `GET path` over TCP.
    pub(crate) fn get(&self, path: &str) -> Answer {
        http::get(self.addr, path)
    }

    /// `POST path` with a JSON body over the socket, as the daemon's user.
    pub(crate) fn post(&self, path: &str, body: &str) -> Answer {
        self.request("POST", path, &[("Content-Type", "application/json")], body)
    }

    /// A request over the socket, as the daemon's user.
    pub(crate) fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        let socket = self
            .socket
            .as_deref()
            .unwrap_or_else(|| panic!("the daemon named no socket:\n{}", self.log()));
        http::request_unix(socket, method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path} over {}: {e}", socket.display()))
    }

    /// A request over TCP, as any local user may send it.
    pub(crate) fn tcp(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Answer {
        http::request(self.addr, method, path, headers, body).unwrap()
    }

    pub(crate) fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    pub(crate) fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Sends SIGTERM and waits; the exit code.
    pub(crate) fn terminate(mut self) -> Option<i32> {
        signal(self.pid(), Signal::TERM);
        let status = baton_testkit::wait_for_exit(&mut self.child, "the daemon to stop");
        status.code()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            // A test that failed with a daemon running says what the daemon
            // said: a wait that timed out on a loaded machine is otherwise
            // a failure nobody can read.
            eprintln!("the daemon's log:\n{}", self.log());
        }
    }
}

fn lines_of(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The state of lock `name` in the scheduler's state directory, as
/// `baton lock show --json` gives it (`held`, `free`, `absent`, …).
fn lock_state(s: &Sched, name: &str) -> String {
    let o = s.env.run(&["lock", "show", name, "--json"]);
    let j: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("lock show: not JSON ({e}): {}", stderr(&o)));
    j[0]["state"].as_str().unwrap().to_owned()
}

fn duplicates(lines: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    lines
        .iter()
        .filter(|l| !seen.insert(l.as_str()))
        .cloned()
        .collect()
}

#[test]
fn daemon_serves_health_jobs_runs_and_refuses_unknown_jobs() {
    let s = Sched::new(
        "[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"echo hi\"\n[jobs.b]\nschedule = \"0 0 1 1 *\"\nrun = \"exit 3\"\n",
    );
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.get("/healthz").json()["ok"], true);
    let jobs = d.get("/v1/jobs").json();
    let names: Vec<&str> = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["job"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"], "{jobs}");
    let r = d.post("/v1/jobs/a/run", "");
    assert_eq!(r.status, 202, "{}", r.body);
    let run_id = r.json()["run_id"].as_str().unwrap().to_owned();
    eventually("the manual run to finish", || {
        d.get("/v1/jobs/a/runs?limit=5").json()[0]["verdict"] == "ok"
    });
    let runs = d.get("/v1/jobs/a/runs?limit=5").json();
    assert_eq!(runs[0]["run_id"], run_id.as_str());
    assert_eq!(
        d.get("/v1/jobs/a/runs?limit=0").json(),
        serde_json::json!([])
    );
    assert_eq!(runs[0]["manual"], true);
    // The same shape as the CLI's.
    let cli = s.json(&["history", "a", "--json"]);
    assert_eq!(cli[0]["run_id"], runs[0]["run_id"]);
    let one = d.get("/v1/jobs/a").json();
    assert_eq!(one["jobs"].as_array().unwrap().len(), 1, "{one}");
    assert_eq!(one["jobs"][0]["job"], "a");
    let r = d.get("/v1/jobs/nope");
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (404, "no_such_job".into())
    );
    let r = d.get("/v1/jobs/bad%20name");
    assert_eq!(r.json()["error"]["code"], "bad_job_name", "{}", r.body);
    let r = d.get("/v1/nothing");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "not_found");
    // The router's own refusals are JSON with a code too.
    let r = d.request(
        "DELETE",
        "/v1/tick",
        &[("Content-Type", "application/json")],
        "",
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (405, "method_not_allowed".into())
    );
    let r = d.get("/v1/jobs/a/runs?limit=many");
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, "bad_request".into())
    );
    // A number past any integer type lists the most, as any larger N does.
    let r = d.get("/v1/jobs/a/runs?limit=99999999999999999999");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()[0]["run_id"], run_id.as_str());
    let r = d.get("/v1/jobs/a/runs?limit=-1");
    assert_eq!(r.status, 400, "{}", r.body);
    // A job removed since it ran keeps its runs, as `history OLD` shows
    // them; a name no ledger row has is still unknown.
    s.write("[jobs.b]\nschedule = \"0 0 1 1 *\"\nrun = \"exit 3\"\n");
    signal(d.pid(), Signal::HUP);
    eventually("the reload without job a", || {
        d.get("/v1/jobs/a").status == 404
    });
    let r = d.get("/v1/jobs/a/runs");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()[0]["run_id"], run_id.as_str(), "{}", r.body);
    let r = d.get("/v1/jobs/nope/runs");
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(d.terminate(), Some(0));
}

#[test]
fn daemon_manual_run_when_busy_is_409_with_the_holder() {
    let s = Sched::new("[jobs.slow]\nschedule = \"0 0 1 1 *\"\nrun = \"sleep 3\"\n");
    let d = Daemon::start(&s, &[]);
    let first = d.post("/v1/jobs/slow/run", "");
    assert_eq!(first.status, 202, "{}", first.body);
    let fence = first.json()["fence"].as_u64().unwrap();
    let second = d.post("/v1/jobs/slow/run", "");
    assert_eq!(second.status, 409, "{}", second.body);
    let j = second.json();
    assert_eq!(j["error"]["code"], "busy");
    assert_eq!(j["holder"]["fence"].as_u64(), Some(fence), "{j}");
    // The holder as `status --json` shows it.
    let st = d.get("/v1/jobs/slow").json();
    assert_eq!(
        st["jobs"][0]["holder"]["run_id"], j["holder"]["run_id"],
        "{st} {j}"
    );
    assert!(j["holder"]["since"].is_string(), "{j}");
    assert_eq!(j["holder"]["verdict"], "live", "{j}");
    assert_eq!(st["jobs"][0]["holder"]["slot"], 1, "{st}");
    assert_eq!(j["holder"]["slot"], 1, "{j}");
    // A reason is one line of text: no control characters.
    let r = d.post(
        "/v1/jobs/slow/pause",
        r#"{"reason": "a\u001b[2Jb\r\nfake"}"#,
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, "bad_body".into())
    );
    let r = d.post("/v1/jobs/slow/pause", r#"{"reason": "a\u2028b"}"#);
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, "bad_body".into())
    );
    // A body that is not a JSON object is refused.
    let r = d.post("/v1/jobs/slow/run", "garbage{");
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, "bad_body".into())
    );
    // A pause that would end in the past says why.
    let r = d.post("/v1/jobs/slow/pause", r#"{"until": "2020-01-01 18:00"}"#);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not in the future"),
        "{}",
        r.body
    );
    // A CLI run meets the same lock.
    let o = s.run(&["run", "slow"]);
    assert_eq!(o.status.code(), Some(1));
}

/// Seed 000's scenario: the daemon's clock, 32 concurrent `POST /v1/tick`
/// and 8 `baton tick` processes for one due occurrence, 20 times: each
/// occurrence runs once.
#[test]
fn daemon_seed000_every_source_at_once_runs_each_occurrence_once() {
    let s = Sched::new("");
    let runs = s.env.path("runs.txt");
    s.write(&format!(
        "[jobs.station]\nschedule = \"*/2 * * * * *\"\nrun = \"echo $BATON_OCCURRENCE >> {}; sleep 0.3\"\n",
        runs.display()
    ));
    let d = Daemon::start(&s, &[]);
    let socket = d.socket.clone().unwrap();
    for _ in 0..20 {
        // Wait for the next even second, then every source at once.
        let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
        let next = (now.as_second() / 2 + 1) * 2;
        let wait = (next * 1000 - now.as_millisecond()).max(0) as u64;
        pause(wait);
        let ticks: Vec<Child> = (0..8)
            .map(|_| {
                s.cmd(&["tick"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let posts: Vec<_> = (0..32)
            .map(|_| {
                let socket = socket.clone();
                std::thread::spawn(move || {
                    http::request_unix(
                        &socket,
                        "POST",
                        "/v1/tick",
                        &[("Content-Type", "application/json")],
                        "",
                    )
                    .unwrap()
                    .status
                })
            })
            .collect();
        for p in posts {
            assert_eq!(p.join().unwrap(), 200);
        }
        for mut t in ticks {
            baton_testkit::wait_for_exit(&mut t, "baton tick");
        }
    }
    eventually("the last run to finish", || {
        d.get("/healthz").json()["runs_in_flight"] == 0
    });
    let all = lines_of(&runs);
    assert!(all.len() >= 20, "too few runs: {all:?}");
    assert!(
        duplicates(&all).is_empty(),
        "an occurrence ran twice: {:?}\n{all:?}",
        duplicates(&all)
    );
}

/// Seed 001's scenario: a run slower than any TTL is never run again by
/// later ticks, and never overlapped.
#[test]
fn daemon_seed001_a_run_slower_than_its_ttl_is_never_rerun() {
    let s = Sched::new("");
    let runs = s.env.path("runs.txt");
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nttl = \"1s\"\nkill_grace = \"1s\"\n\
         [jobs.slow]\nschedule = \"*/3 * * * * *\"\n\
         run = \"echo start $BATON_OCCURRENCE >> {r}; sleep 7; echo end $BATON_OCCURRENCE >> {r}\"\n",
        r = runs.display()
    ));
    let d = Daemon::start(&s, &[]);
    eventually("a run to start", || !lines_of(&runs).is_empty());
    for _ in 0..30 {
        let _ = d.post("/v1/tick", "");
        let _ = s.run(&["tick"]);
        pause(200);
    }
    eventually("the run to end", || {
        lines_of(&runs).iter().any(|l| l.starts_with("end"))
    });
    drop(d);
    let all = lines_of(&runs);
    assert!(duplicates(&all).is_empty(), "{all:?}");
    // Never two at once: every start is followed by its own end.
    let mut open: Option<String> = None;
    for l in &all {
        let (what, occ) = l.split_once(' ').unwrap();
        match what {
            "start" => {
                assert!(open.is_none(), "two runs at once: {all:?}");
                open = Some(occ.to_owned());
            }
            _ => assert_eq!(open.take().as_deref(), Some(occ), "{all:?}"),
        }
    }
}

#[test]
fn daemon_reload_with_a_bad_file_keeps_the_old_jobs_and_alerts() {
    let s = Sched::new("");
    let alerts = s.env.path("alerts.txt");
    let good = format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_command = \"cat >> {}\"\n\
         [jobs.keep]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        alerts.display()
    );
    s.write(&good);
    let d = Daemon::start(&s, &[]);
    std::fs::write(s.config(), "[jobs.keep\nrun = ").unwrap();
    let r = d.post("/v1/reload", "");
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_config");
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("baton.toml"),
        "{}",
        r.body
    );
    eventually("the reload-refused alert", || {
        std::fs::read_to_string(&alerts)
            .unwrap_or_default()
            .contains("reload-refused")
    });
    // SIGHUP too: refused, and the daemon lives on.
    signal(d.pid(), Signal::HUP);
    eventually("the SIGHUP reload to be refused", || {
        d.log().contains("reload (SIGHUP) refused")
    });
    pause(300);
    assert!(alive(d.pid()));
    // Each refusal is said once, not once by the daemon and again by its
    // alert.
    let log = d.log();
    for why in ["POST /v1/reload", "SIGHUP"] {
        let said = format!("reload ({why}) refused");
        assert_eq!(log.matches(&said).count(), 1, "{said}:\n{log}");
    }
    let jobs = d.get("/v1/jobs").json();
    assert_eq!(jobs["jobs"][0]["job"], "keep", "{jobs}");
    assert_eq!(d.post("/v1/jobs/keep/run", "").status, 202);
    // A good file is taken.
    s.write(&good.replace("[jobs.keep]", "[jobs.fresh]"));
    let r = d.post("/v1/reload", "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["jobs"], serde_json::json!(["fresh"]));
    assert_eq!(d.get("/v1/jobs/keep").status, 404);
}

/// A reload that would move `state_dir` is refused: the locks and records
/// of the runs in flight are where they are, and a run under another
/// directory would not see them (the same job would run twice at once).
#[test]
fn daemon_reload_refuses_to_move_the_state_dir() {
    let s = Sched::new("");
    let jobs = "[jobs.keep]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n";
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n{jobs}"
    ));
    let d = Daemon::start(&s, &[]);
    let elsewhere = s.env.path("elsewhere");
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{jobs}",
        elsewhere.display().to_string()
    ));
    let r = d.post("/v1/reload", "");
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_config");
    assert!(r.body.contains("state_dir"), "{}", r.body);
    assert_eq!(d.get("/v1/jobs/keep").status, 200);
    assert!(
        !elsewhere.exists(),
        "nothing was made under the new state_dir"
    );
}

#[test]
fn daemon_put_and_delete_jobs_as_dropins_that_survive_a_restart() {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let put = |body: &str| {
        d.request(
            "PUT",
            "/v1/jobs/added",
            &[("Content-Type", "application/json")],
            body,
        )
    };
    let r = put(r#"{"schedule": "not cron", "run": "true"}"#);
    assert_eq!(r.status, 422, "{}", r.body);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("schedule"),
        "{}",
        r.body
    );
    assert!(!s.env.path("jobs.d/added.toml").exists());
    let r = put(r#"{"schedule": "0 0 1 1 *", "run": "echo added"}"#);
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(s.env.path("jobs.d/added.toml").exists());
    assert_eq!(d.get("/v1/jobs/added").status, 200);
    assert_eq!(
        put(r#"{"schedule": "0 0 2 1 *", "run": "echo again"}"#).status,
        200
    );
    // A hidden file would never be read: refused.
    let r = d.request(
        "PUT",
        "/v1/jobs/.hidden",
        &[("Content-Type", "application/json")],
        r#"{"every": "1h", "run": "true"}"#,
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (400, "bad_job_name".into())
    );
    assert!(!s.env.path("jobs.d/.hidden.toml").exists());
    // A job of baton.toml is not replaced over HTTP.
    let r = d.request(
        "PUT",
        "/v1/jobs/main",
        &[("Content-Type", "application/json")],
        r#"{"every": "1h", "run": "true"}"#,
    );
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(d.terminate(), Some(0));
    // Restarted, and the CLI: the drop-in is there.
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.get("/v1/jobs/added").status, 200);
    let cfg = s.run(&["config"]);
    assert!(String::from_utf8_lossy(&cfg.stdout).contains("jobs.d/added.toml"));
    let r = d.request(
        "DELETE",
        "/v1/jobs/added",
        &[("Content-Type", "application/json")],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(d.get("/v1/jobs/added").status, 404);
    assert!(!s.env.path("jobs.d/added.toml").exists());
}

/// A refused `PUT` names the job's key in the request, not a line of the
/// drop-in it would have written (which does not exist); a mistake in
/// another file keeps that file's name and line.
#[test]
fn daemon_put_refusals_name_the_key_of_the_request() {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let put = |name: &str, body: &str| {
        d.request(
            "PUT",
            &format!("/v1/jobs/{name}"),
            &[("Content-Type", "application/json")],
            body,
        )
    };
    for (body, says) in [
        (
            r#"{"schedule": "0 0 1 1 *", "run": "true", "retires": 3}"#,
            "PUT /v1/jobs/dropin: key `retires`: unknown key (did you mean retries?)",
        ),
        (
            r#"{"schedule": "nope", "run": "true"}"#,
            "PUT /v1/jobs/dropin: key `schedule`: ",
        ),
        (
            r#"{"every": "1h"}"#,
            "PUT /v1/jobs/dropin: has neither run nor steps",
        ),
    ] {
        let r = put("dropin", body);
        assert_eq!(r.status, 422, "{}", r.body);
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.starts_with(says), "{body}: {message}");
        assert!(!message.contains("jobs.d/"), "{body}: {message}");
    }
    assert!(!s.env.path("jobs.d").exists());
    // A broken drop-in already there is named by its file and line.
    std::fs::create_dir(s.env.path("jobs.d")).unwrap();
    std::fs::write(
        s.env.path("jobs.d/other.toml"),
        "every = \"1h\"\nrun = \"true\"\nbogus = 1\n",
    )
    .unwrap();
    let r = put("dropin", r#"{"every": "1h", "run": "true"}"#);
    assert_eq!(r.status, 422, "{}", r.body);
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("jobs.d/other.toml:3"), "{message}");
}

/// `DELETE` without a body needs no `Content-Type` (a browser never sends
/// a `DELETE` to another site without a preflight); one with a body still
/// says what it is.
#[test]
fn daemon_deletes_without_a_body_need_no_content_type() {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let json = [("Content-Type", "application/json")];
    for name in ["a", "b"] {
        let r = d.request(
            "PUT",
            &format!("/v1/jobs/{name}"),
            &json,
            r#"{"every": "1h", "run": "true"}"#,
        );
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let r = d.request("DELETE", "/v1/jobs/a", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!s.env.path("jobs.d/a.toml").exists());
    assert_eq!(d.get("/v1/jobs/a").status, 404);
    let r = d.request("DELETE", "/v1/jobs/b", &[], "{}");
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (415, "content_type".into()),
        "{}",
        r.body
    );
    assert!(s.env.path("jobs.d/b.toml").exists());
}

/// A `POST` without a body needs no `Content-Type` either; one with a
/// body, or one that names another type (as an HTML form does, even
/// empty), still does, and another site's `Origin` is refused all the
/// same.
#[test]
fn daemon_posts_without_a_body_need_no_content_type() {
    let s = Sched::new("");
    let ran = s.env.path("ran");
    s.write(&format!(
        "[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"echo ran >> {}\"\n",
        ran.display()
    ));
    let d = Daemon::start(&s, &[]);
    let r = d.request("POST", "/v1/jobs/main/run", &[], "");
    assert_eq!(r.status, 202, "{}", r.body);
    eventually("the run to finish", || {
        d.get("/v1/jobs/main/runs").json()[0]["verdict"] == "ok"
    });
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
    let r = d.request("POST", "/v1/tick", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    for (headers, body) in [
        (&[][..], "{}"),
        (
            &[("Content-Type", "application/x-www-form-urlencoded")][..],
            "",
        ),
        (&[("Content-Type", "text/plain")][..], ""),
    ] {
        let r = d.request("POST", "/v1/jobs/main/run", headers, body);
        assert_eq!(
            (r.status, r.json()["error"]["code"].clone()),
            (415, "content_type".into()),
            "{headers:?} {body:?}: {}",
            r.body
        );
    }
    let r = d.request(
        "POST",
        "/v1/jobs/main/run",
        &[("Origin", "http://evil.example")],
        "",
    );
    assert_eq!(
        (r.status, r.json()["error"]["code"].clone()),
        (403, "foreign_origin".into()),
        "{}",
        r.body
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
}

/// `--listen` and `[daemon] listen` take a host name: the daemon listens on
/// what it resolves to. A name that does not resolve, or that is not a
/// name, is refused with what to write instead.
#[test]
fn daemon_listens_on_a_host_name() {
    let s = Sched::new("[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start_with(&s, &["daemon", "--listen", "localhost:0"])
        .unwrap_or_else(|(code, log)| panic!("exit {code:?}:\n{log}"));
    assert!(d.addr.ip().is_loopback(), "{}", d.addr);
    assert!(d.log().contains("(localhost:0; config "), "{}", d.log());
    let r = d.tcp(
        "GET",
        "/v1/jobs",
        &[("Host", &format!("localhost:{}", d.addr.port()))],
        "",
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(d.post("/v1/tick", "").status, 200);
    drop(d);
    // In the file too.
    s.write(
        "[daemon]\nlisten = \"localhost:0\"\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
    );
    let d = Daemon::start_with(&s, &["daemon"])
        .unwrap_or_else(|(code, log)| panic!("exit {code:?}:\n{log}"));
    assert!(d.addr.ip().is_loopback(), "{}", d.addr);
    assert_eq!(d.get("/healthz").status, 200);
    drop(d);
    // A name that resolves to nothing (`.invalid` never does): exit 125.
    let o = s.run(&["daemon", "--listen", "no-such-host.invalid:0"]);
    assert_eq!(o.status.code(), Some(125), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("failed to resolve the host name no-such-host.invalid"),
        "{err}"
    );
    assert!(err.contains("127.0.0.1:0"), "{err}");
    // Not an address at all: a usage error naming the forms.
    let o = s.run(&["daemon", "--listen", "localhost"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("HOST:PORT"), "{}", stderr(&o));
}

#[test]
fn daemon_off_loopback_needs_a_token_and_then_every_endpoint_but_health_does() {
    let s = Sched::new("[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let refused = Daemon::start_with(&s, &["daemon", "--listen", "0.0.0.0:0"]);
    let (code, log) = refused.err().expect("started without a token");
    assert_eq!(code, Some(2), "{log}");
    assert!(log.contains("token_file"), "{log}");
    let token = s.env.path("token");
    std::fs::write(&token, "s3cret-token\n").unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    s.write(&format!(
        "[daemon]\ntoken_file = {:?}\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        token.display().to_string()
    ));
    let d = Daemon::start_with(&s, &["daemon", "--listen", "0.0.0.0:0"]).unwrap();
    let addr: SocketAddr = format!("127.0.0.1:{}", d.addr.port()).parse().unwrap();
    let get = |h: &[(&str, &str)]| {
        http::request(addr, "GET", "/v1/jobs", h, "")
            .unwrap()
            .status
    };
    assert_eq!(get(&[]), 401);
    assert_eq!(get(&[("Authorization", "Bearer wrong")]), 401);
    assert_eq!(get(&[("Authorization", "Bearer s3cret-token")]), 200);
    assert_eq!(
        http::request(addr, "GET", "/healthz", &[], "")
            .unwrap()
            .status,
        200
    );
    assert!(!d.log().contains("s3cret-token"));
}

/// What a page on another site can make a browser send, to a daemon whose
/// TCP API takes changes (a token): refused before anything runs.
#[test]
fn daemon_refuses_a_forged_cross_site_post() {
    let s = Sched::new("");
    let runs = s.env.path("runs.txt");
    let token = s.env.path("token");
    std::fs::write(&token, "s3cret-token-of-16\n").unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    s.write(&format!(
        "[daemon]\ntoken_file = {:?}\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"echo ran >> {}\"\n",
        token.display().to_string(),
        runs.display()
    ));
    let d = Daemon::start(&s, &[]);
    let auth = ("Authorization", "Bearer s3cret-token-of-16");
    // What an HTML form on another site can send.
    let form = d.tcp(
        "POST",
        "/v1/jobs/a/run",
        &[
            auth,
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Origin", "http://evil.example"),
        ],
        "x=1",
    );
    assert_eq!(form.status, 415, "{}", form.body);
    let text = d.tcp(
        "POST",
        "/v1/jobs/a/run",
        &[auth, ("Content-Type", "text/plain")],
        "{}",
    );
    assert_eq!(text.status, 415, "{}", text.body);
    let origin = d.tcp(
        "POST",
        "/v1/jobs/a/run",
        &[
            auth,
            ("Content-Type", "application/json"),
            ("Origin", "http://evil.example"),
        ],
        "",
    );
    assert_eq!(origin.status, 403, "{}", origin.body);
    assert_eq!(origin.json()["error"]["code"], "foreign_origin");
    let rebinding = d.tcp(
        "POST",
        "/v1/jobs/a/run",
        &[
            auth,
            ("Content-Type", "application/json"),
            ("Host", "evil.example:8677"),
        ],
        "",
    );
    assert_eq!(rebinding.status, 403, "{}", rebinding.body);
    pause(300);
    assert!(lines_of(&runs).is_empty(), "a forged request ran the job");
    // The daemon's own origin is fine.
    let own = format!("http://{}", d.addr);
    let ok = d.tcp(
        "POST",
        "/v1/jobs/a/run",
        &[
            auth,
            ("Content-Type", "application/json"),
            ("Origin", own.as_str()),
        ],
        "",
    );
    assert_eq!(ok.status, 202, "{}", ok.body);
}

#[test]
fn daemon_sigterm_lets_a_run_finish_within_the_grace() {
    let s = Sched::new(
        "[daemon]\nshutdown_grace = \"30s\"\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"sleep 2\"\n",
    );
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    assert_eq!(d.terminate(), Some(0));
    assert_eq!(s.json(&["history", "a", "--json"])[0]["verdict"], "ok");
}

#[test]
fn daemon_sigterm_past_the_grace_stops_the_whole_tree_then_releases() {
    // The job and its detached descendant ignore SIGTERM: only the stop a
    // lost lease makes (SIGKILL after the kill grace) ends them.
    let s = Sched::new("");
    let pidfile = s.env.path("grandchild.pid");
    s.write(&format!(
        "[daemon]\nshutdown_grace = \"1s\"\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nkill_grace = \"1s\"\n\
         run = \"trap '' TERM; setsid sh -c 'read -r p _ < /proc/self/stat; echo $p > {p}; exec \
         sleep 60' & sleep 60\"\n",
        p = pidfile.display()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    let gc: i32 = crate::support::wait_for_file(&pidfile)
        .trim()
        .parse()
        .unwrap();
    assert!(alive(gc));
    assert_eq!(d.terminate(), Some(0));
    assert!(!alive(gc), "a detached descendant outlived the shutdown");
    assert_eq!(lock_state(&s, "a"), "free");
    assert_eq!(
        s.json(&["history", "a", "--json"])[0]["verdict"],
        "interrupted"
    );
}

/// The `baton __run` worker the daemon `daemon` started.
fn worker_of(daemon: i32) -> i32 {
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent's pid is the second field after the command's name.
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        let parent = stat[close + 2..]
            .split(' ')
            .nth(1)
            .and_then(|p| p.parse::<i32>().ok());
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if parent == Some(daemon) && String::from_utf8_lossy(&cmdline).contains("__run") {
            return pid;
        }
    }
    panic!("no baton __run worker of the daemon {daemon}");
}

/// A worker stopped by a signal when the daemon is told to stop: it is
/// continued, so it stops its run and the daemon's shutdown ends (it waited
/// forever for a worker that could not act on its SIGTERM).
#[test]
fn daemon_sigterm_ends_with_a_stopped_worker() {
    let s = Sched::new("");
    let pidfile = s.env.path("job.pid");
    s.write(&format!(
        "[daemon]\nshutdown_grace = \"1s\"\n[jobs.a]\nschedule = \"0 0 1 1 *\"\nkill_grace = \"1s\"\n\
         run = \"echo $$ > {p}; exec sleep 60\"\n",
        p = pidfile.display()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    crate::support::wait_for_file(&pidfile);
    let worker = worker_of(d.pid());
    signal(worker, Signal::STOP);
    assert_eq!(d.terminate(), Some(0));
    assert!(!alive(worker), "the worker outlived the shutdown");
    assert_eq!(lock_state(&s, "a"), "free");
    assert_eq!(
        s.json(&["history", "a", "--json"])[0]["verdict"],
        "interrupted"
    );
}

/// A daemon stopped for an upgrade: the run its SIGTERM stops is
/// `interrupted`, which is no failure: the job's failures, last failure and
/// last success stay as they were, nothing alerts, and `status` stays green.
#[test]
fn daemon_sigterm_interrupts_a_run_without_failing_the_job() {
    let s = Sched::new("");
    let slow = s.env.path("slow");
    let started = s.env.path("started");
    s.write(&format!(
        "[daemon]\nshutdown_grace = \"1s\"\n[jobs.a]\nschedule = \"0 0 1 1 *\"\n\
         run = \"if [ -e {sl} ]; then touch {st}; sleep 60; fi\"\n",
        sl = slow.display(),
        st = started.display()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    eventually("the first run to end", || {
        d.get("/v1/jobs/a/runs").json()[0]["verdict"] == "ok"
    });
    let counters = |j: &serde_json::Value| {
        (
            j["consecutive_failures"].clone(),
            j["last_failure"].clone(),
            j["last_success"].clone(),
        )
    };
    let ok = counters(&s.json(&["status", "a", "--json"])["jobs"][0]);
    std::fs::write(&slow, "").unwrap();
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    eventually("the slow run to start", || started.exists());
    assert_eq!(d.terminate(), Some(0));
    let h = s.json(&["history", "a", "--json"]);
    assert_eq!(h[0]["verdict"], "interrupted", "{h}");
    let st = s.run(&["status", "a", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(counters(j), ok, "{j}");
    assert_eq!(ok.0, 0);
    assert_ne!(j["state"], "failing", "{j}");
    assert_eq!(st.status.code(), Some(0), "{v}");
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap_or_default();
    assert!(!alerts.contains("failed\""), "{alerts}");
}

/// A run stopped by a signal is no success: a job that failed before it is
/// failing still, on `status` and in the metrics.
#[test]
fn an_interrupted_run_leaves_a_failing_job_failing() {
    let s = Sched::new("");
    let (slow, started) = (s.env.path("slow"), s.env.path("started"));
    s.write(&format!(
        "[jobs.f]\nschedule = \"0 0 1 1 *\"\n\
         run = \"if [ -e {sl} ]; then touch {st}; sleep 60; else exit 3; fi\"\n",
        sl = slow.display(),
        st = started.display()
    ));
    assert_eq!(s.run(&["run", "f"]).status.code(), Some(1), "a failed run");
    std::fs::write(&slow, "").unwrap();
    let run = s
        .cmd(&["run", "f"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the slow run to start", || started.exists());
    signal(i32::try_from(run.id()).unwrap(), Signal::TERM);
    let o = run.wait_with_output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", stderr(&o));
    let h = s.json(&["history", "f", "--json"]);
    assert_eq!(h[0]["verdict"], "interrupted", "{h}");
    let st = s.run(&["status", "f", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    let j = &v["jobs"][0];
    assert_eq!(j["failing"], true, "{j}");
    assert_eq!(j["state"], "failing", "{j}");
    assert_eq!(st.status.code(), Some(1), "{v}");
    let metrics = String::from_utf8_lossy(&s.run(&["__metrics"]).stdout).into_owned();
    assert!(
        metrics.contains("baton_job_failing{baton_job=\"f\"} 1"),
        "{metrics}"
    );
}

/// A daemon whose job `a`'s run, started over its socket, has written
/// `start` to `runs.txt` and lasts until the test creates `go`, when it
/// writes `end`: the scheduler, the daemon, and the two paths.
fn daemon_running_a_gated_run() -> (Sched, Daemon, PathBuf, PathBuf) {
    let s = Sched::new("");
    let runs = s.env.path("runs.txt");
    let go = s.env.path("go");
    s.write(&format!(
        "[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"echo start >> {r}; while [ ! -e {g} ]; do \
         sleep 0.05; done; echo end >> {r}\"\n",
        r = runs.display(),
        g = go.display()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    eventually("the run to start", || !lines_of(&runs).is_empty());
    (s, d, runs, go)
}

#[test]
fn daemon_kill9_mid_run_never_doubles_it_and_a_restart_carries_on() {
    // The first run is still in flight when the second daemon is asked,
    // however slow its start.
    let (s, d, runs, go) = daemon_running_a_gated_run();
    signal(d.pid(), Signal::KILL);
    drop(d);
    let d = Daemon::start(&s, &[]);
    let r = d.post("/v1/jobs/a/run", "");
    assert_eq!(r.status, 409, "the run was doubled: {}", r.body);
    std::fs::write(&go, "").unwrap();
    eventually("the first run to end", || lines_of(&runs).len() == 2);
    assert_eq!(lines_of(&runs), ["start", "end"]);
    // Its worker records the verdict and releases after the job's last line.
    eventually("the lease to be free", || lock_state(&s, "a") == "free");
    assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
    eventually("the second run to end", || lines_of(&runs).len() == 4);
}

/// A daemon killed while one of its runs is stopped (SIGSTOP): the kernel
/// sends the run's orphaned process group SIGHUP and SIGCONT, and the run
/// goes on to its own end and records it, as every run of a killed daemon
/// does, rather than stopping as interrupted.
#[test]
fn daemon_kill9_while_its_run_is_stopped_leaves_the_run_to_its_end() {
    let (s, d, runs, go) = daemon_running_a_gated_run();
    let status = s.run(&["status", "a", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let worker = i32::try_from(v["jobs"][0]["holder"]["pid"].as_i64().unwrap()).unwrap();
    signal(worker, Signal::STOP);
    signal(d.pid(), Signal::KILL);
    drop(d);
    signal(worker, Signal::CONT);
    std::fs::write(&go, "").unwrap();
    eventually("the run to end", || lines_of(&runs).len() == 2);
    assert_eq!(lines_of(&runs), ["start", "end"]);
    eventually("the run's end to be recorded", || {
        let h = s.run(&["history", "a", "--json"]);
        let v: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap_or_default();
        v[0]["verdict"].as_str().is_some_and(|w| w != "running")
    });
    let h = s.run(&["history", "a", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&h.stdout).unwrap();
    assert_eq!(v[0]["verdict"], "ok", "{v:#}");
}

/// `--log-format json`: every line on the daemon's stderr, its own and
/// those of the runs it starts, is one JSON object with a timestamp, a
/// level, a message and a target; a failed run's alert is a warning.
#[test]
fn daemon_log_format_json_writes_every_line_as_a_json_object() {
    let s = Sched::new("[jobs.bad]\nschedule = \"0 0 1 1 *\"\nrun = \"exit 3\"\n");
    let d = Daemon::start(&s, &["--log-format", "json"]);
    assert_eq!(d.post("/v1/jobs/bad/run", "").status, 202);
    eventually("the failed run's alert", || {
        d.log()
            .lines()
            .any(|l| l.contains("WARN") && l.contains("bad"))
    });
    let log = Arc::clone(&d.log);
    assert_eq!(d.terminate(), Some(0));
    eventually("the daemon's last line", || {
        log.lock().unwrap().contains("stopped")
    });
    let text = log.lock().unwrap().clone();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}\n{text}")))
        .collect();
    for l in &lines {
        for key in ["timestamp", "level", "message", "target"] {
            assert!(l[key].is_string(), "no {key}: {l}\n{text}");
        }
    }
    let said = |level: &str, target: &str, message: &str| {
        lines.iter().any(|l| {
            l["level"] == level
                && l["target"].as_str().unwrap().starts_with(target)
                && l["message"].as_str().unwrap().contains(message)
        })
    };
    assert!(
        said("INFO", "baton_daemon", "listening on http://"),
        "{text}"
    );
    assert!(said("WARN", "baton_sched", "bad"), "{text}");
    assert!(said("INFO", "baton_daemon", "stopped"), "{text}");
    // The default stays plain lines.
    let d = Daemon::start(&s, &[]);
    assert!(
        d.log().starts_with("baton daemon: listening on "),
        "{}",
        d.log()
    );
}

#[test]
fn daemon_metrics_count_what_ran_in_the_format_asked_for() {
    let s = Sched::new("");
    let (marker, go) = (s.env.path("slow.started"), s.env.path("slow.go"));
    // The slow run goes on until the metrics have shown it running.
    s.write(&format!(
        "[jobs.good]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n\
         [jobs.bad]\nschedule = \"0 0 1 1 *\"\nrun = \"exit 3\"\n\
         [jobs.slow]\nschedule = \"0 0 1 1 *\"\n\
         run = \"touch {}; while [ ! -e {} ]; do sleep 0.05; done\"\n",
        marker.display(),
        go.display()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/good/run", "").status, 202);
    assert_eq!(d.post("/v1/jobs/bad/run", "").status, 202);
    assert_eq!(d.post("/v1/jobs/slow/run", "").status, 202);
    eventually("the slow run to start", || marker.exists());
    eventually("the short runs to end", || {
        d.get("/v1/jobs/bad/runs").json()[0]["verdict"] == "failed"
            && d.get("/v1/jobs/good/runs").json()[0]["verdict"] == "ok"
    });
    // Prometheus's text format 0.0.4 by default and for text/plain.
    let r = d.get("/metrics");
    assert_eq!(r.status, 200);
    let text = "text/plain; version=0.0.4; charset=utf-8";
    assert_eq!(r.header("content-type"), Some(text), "{:?}", r.headers);
    assert_eq!(r.header("vary"), Some("Accept"), "{:?}", r.headers);
    let m = crate::metrics::Exposition::parse(&r.body);
    let runs = |m: &crate::metrics::Exposition, job: &str, verdict: &str| {
        m.value(
            "baton_job_runs_total",
            &[("baton_job", job), ("verdict", verdict)],
        )
    };
    assert_eq!(runs(&m, "good", "ok"), 1.0);
    assert_eq!(runs(&m, "bad", "failed"), 1.0);
    assert_eq!(m.value("baton_job_running", &[("baton_job", "slow")]), 1.0);
    assert_eq!(m.value("baton_job_running", &[("baton_job", "good")]), 0.0);
    let state = |m: &crate::metrics::Exposition, job: &str, st: &str| {
        m.value("baton_job_state", &[("baton_job", job), ("state", st)])
    };
    assert_eq!(state(&m, "slow", "running"), 1.0);
    std::fs::write(&go, "go\n").unwrap();
    assert_eq!(state(&m, "bad", "failing"), 1.0);
    assert!(
        m.value(
            "baton_job_last_success_timestamp_seconds",
            &[("baton_job", "good")]
        ) > 1.7e9
    );
    let get = |accept: &str| d.tcp("GET", "/metrics", &[("Accept", accept)], "");
    let r = get("text/plain");
    assert_eq!(r.header("content-type"), Some(text));
    crate::metrics::Exposition::parse(&r.body);
    // OpenMetrics when the header prefers it, as Prometheus's does.
    let open = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    let prometheus = "application/openmetrics-text;version=1.0.0,\
                      application/openmetrics-text;version=0.0.1;q=0.75,\
                      text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    for accept in [prometheus, "application/openmetrics-text"] {
        let r = get(accept);
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some(open), "{accept}");
        let m = crate::metrics::Exposition::parse_openmetrics(&r.body);
        assert_eq!(runs(&m, "bad", "failed"), 1.0);
    }
    // q-values are honoured.
    let r = get("application/openmetrics-text;q=0.2, text/plain;q=0.9");
    assert_eq!(r.header("content-type"), Some(text));
    let r = get("text/plain;q=0, */*");
    assert_eq!(r.header("content-type"), Some(open));
    assert!(m.value("process_resident_memory_bytes", &[]) > 0.0);
}

/// The status page in a real browser, served by the daemon: every job with
/// its state, a run followed from running to its verdict by the page's own
/// refresh, and a phone-width viewport without overflow.
#[test]
fn daemon_status_page_follows_a_run_in_a_real_browser() {
    let s = Sched::new("");
    let (marker, go) = (s.env.path("work.started"), s.env.path("work.go"));
    // The run goes on until the page has shown it running.
    s.write(&format!(
        "[jobs.work]\nschedule = \"0 0 1 1 *\"\n\
         run = \"touch {}; while [ ! -e {} ]; do sleep 0.05; done\"\n\
         [jobs.other]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        marker.display(),
        go.display()
    ));
    let d = Daemon::start(&s, &[]);
    assert_eq!(d.post("/v1/jobs/other/run", "").status, 202);
    assert_eq!(d.post("/v1/jobs/work/run", "").status, 202);
    eventually("the run to start", || marker.exists());
    let mut b = baton_testkit::browser::Browser::launch();
    b.set_viewport(1000, 800, false);
    b.open(&format!("http://{}/", d.addr));
    let state = |b: &mut baton_testkit::browser::Browser, job: &str| {
        b.eval(&format!(
            "(document.querySelector('[data-job={job}]') || {{}}).dataset?.state || null"
        ))
    };
    assert_eq!(state(&mut b, "work"), "running");
    assert_ne!(state(&mut b, "other"), serde_json::Value::Null);
    // A mark the page's own reload wipes out.
    b.eval("window.stillTheSameLoad = true");
    std::fs::write(&go, "go\n").unwrap();
    let mut seen = String::new();
    for _ in 0..150 {
        pause(200);
        let s = state(&mut b, "work");
        seen = s.to_string();
        if s != "running" && s != serde_json::Value::Null {
            break;
        }
    }
    assert_eq!(
        b.eval("window.stillTheSameLoad === true"),
        false,
        "the page did not refresh itself"
    );
    assert_eq!(seen, "\"ok\"", "the run's end did not show: {seen}");
    let last = b.eval("document.querySelector('[data-job=work] .last-run').textContent");
    assert!(last.as_str().unwrap().contains("ok"), "{last}");
    b.set_viewport(375, 740, true);
    let width = b.eval("document.documentElement.scrollWidth");
    assert!(width.as_u64().is_some_and(|w| w <= 375), "{width}");
}

/// `Type=notify`: READY=1 once listening, WATCHDOG=1 when asked, STOPPING=1
/// at SIGTERM.
#[test]
fn daemon_speaks_systemds_notify_protocol() {
    let s = Sched::new("[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let sock_path = s.env.path("notify.sock");
    let sock = std::os::unix::net::UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let mut cmd = s.cmd(&["daemon", "--listen", "127.0.0.1:0"]);
    cmd.env("NOTIFY_SOCKET", &sock_path)
        .env("WATCHDOG_USEC", "200000")
        .env_remove("WATCHDOG_PID");
    let d = Daemon::start_cmd(cmd).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while !(got.iter().any(|m| m == "READY=1") && got.iter().any(|m| m == "WATCHDOG=1")) {
        let n = sock.recv(&mut buf).expect("a notification");
        got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
    }
    assert_eq!(
        got.iter().find(|m| *m != "WATCHDOG=1").map(String::as_str),
        Some("READY=1")
    );
    assert_eq!(d.terminate(), Some(0));
    loop {
        let n = sock.recv(&mut buf).expect("STOPPING=1");
        if &buf[..n] == b"STOPPING=1" {
            break;
        }
    }
}

/// A job added over HTTP is decided at once, as any tick would decide it:
/// the daemon's clock, asleep until the next occurrence of the jobs it knew
/// (a year away), wakes for the new job's first occurrence after it was
/// added, a few seconds away. (Its occurrence before it was added is
/// neither run nor missed: `first_seen.rs`.)
#[test]
fn daemon_decides_a_new_configuration_at_once() {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let added = baton_testkit::wall_seconds();
    let r = d.request(
        "PUT",
        "/v1/jobs/often",
        &[("Content-Type", "application/json")],
        r#"{"every": "3s", "run": "true"}"#,
    );
    assert_eq!(r.status, 201, "{}", r.body);
    for _ in 0..150 {
        let runs = d.get("/v1/jobs/often/runs").json();
        if runs[0]["verdict"] == "ok" {
            let occ: jiff::Timestamp = runs[0]["occurrence"].as_str().unwrap().parse().unwrap();
            assert!(
                occ.as_second() >= added,
                "{occ} is before the job was added"
            );
            return;
        }
        pause(100);
    }
    panic!(
        "the clock did not run the new job's occurrence: {}\n{}",
        d.get("/v1/jobs/often").body,
        d.log()
    );
}

/// An HTTP step in a run the daemon starts: the receiving service sees the
/// run's job, occurrence, run id and fence, as from `tick` and `run`.
#[test]
fn daemon_runs_an_http_step_that_names_its_run() {
    use baton_testkit::http::{Answer as Reply, TestServer};
    let server = TestServer::start(&[Reply::Status(200)]);
    let s = Sched::new(&format!(
        "[jobs.dispatch]\nschedule = \"0 0 1 1 *\"\nhttp = {{ url = \"{}\", body = \"go\" }}\n",
        server.url("/hook")
    ));
    let d = Daemon::start(&s, &[]);
    let r = d.post("/v1/jobs/dispatch/run", "");
    assert_eq!(r.status, 202, "{}", r.body);
    let started = r.json();
    eventually("the step's request", || !server.requests().is_empty());
    eventually("the run to finish", || {
        d.get("/v1/jobs/dispatch/runs").json()[0]["verdict"] == "ok"
    });
    let seen = &server.requests()[0];
    assert_eq!(seen.header("baton-job"), Some("dispatch"));
    assert_eq!(seen.header("baton-occurrence"), Some("manual"));
    assert_eq!(
        seen.header("baton-run-id"),
        started["run_id"].as_str(),
        "{started}"
    );
    assert_eq!(
        seen.header("baton-fence").map(str::to_owned),
        started["fence"].as_u64().map(|f| f.to_string())
    );
}

/// `max_parallel` bounds the daemon's workers: a start beyond it waits for
/// a free slot and runs then, never beside the others, and is not lost.
#[test]
fn daemon_starts_beyond_max_parallel_wait_for_a_slot() {
    let s = Sched::new("");
    let log = s.env.path("log.txt");
    let run = format!(
        "echo start >> {l}; sleep 1; echo end >> {l}",
        l = log.display()
    );
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nmax_parallel = 1\n\
         [jobs.a]\nevery = \"1h\"\nrun = \"{run}\"\n[jobs.b]\nevery = \"1h\"\nrun = \"{run}\"\n"
    ));
    // The start tick finds both of this hour's occurrences due (to a ledger
    // that knows the jobs from before them).
    let hour = baton_testkit::wall_seconds() / 3600 * 3600;
    crate::sched::known_since(
        &s,
        &["a", "b"],
        jiff::Timestamp::from_second(hour - 1).unwrap(),
    );
    let d = Daemon::start(&s, &[]);
    eventually("both runs to end", || lines_of(&log).len() == 4);
    assert_eq!(
        lines_of(&log),
        ["start", "end", "start", "end"],
        "two workers at once"
    );
    // The second job's end is recorded after its command wrote its last
    // line: wait for the record, not the line.
    for job in ["a", "b"] {
        eventually("the run's end to be recorded", || {
            d.get(&format!("/v1/jobs/{job}/runs")).json()[0]["verdict"] == "ok"
        });
    }
}

/// Idle TCP connections past the daemon's cap are closed as soon as they
/// are accepted, so a local user holding hundreds of them (before any
/// token is asked for) cannot take the descriptors the runs need: with 320
/// descriptors and 400 connections held, an every-second job keeps
/// running and the socket keeps answering.
#[test]
fn daemon_a_flood_of_idle_connections_never_stops_the_schedule() {
    use std::io::Read;
    let s = Sched::new("");
    let counter = s.env.path("counter");
    s.write(&format!(
        "[jobs.count]\nevery = \"1s\"\nrun = \"echo ran >> {}\"\n",
        counter.display()
    ));
    let inner = s.cmd(&["daemon", "--listen", "127.0.0.1:0"]);
    let cmd = crate::support::wrapped(&inner, &["prlimit", "--nofile=320:320", "--"]);
    let d = Daemon::start_cmd(cmd).unwrap_or_else(|(code, log)| panic!("exit {code:?}: {log}"));
    eventually("the job to run", || crate::sched::lines(&counter) >= 1);
    let mut held = Vec::new();
    for _ in 0..400 {
        held.push(std::net::TcpStream::connect(d.addr).unwrap());
    }
    // Those past the cap are closed unread: a read ends at once.
    let mut closed = 0;
    for c in &mut held {
        c.set_read_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        if matches!(c.read(&mut [0u8; 1]), Ok(0)) {
            closed += 1;
        }
    }
    assert!(closed >= 400 - 256, "{closed} of 400 closed");
    let before = crate::sched::lines(&counter);
    eventually("the job to run twice more", || {
        crate::sched::lines(&counter) >= before + 2
    });
    // The socket's callers are served beside the full TCP port.
    assert_eq!(d.request("GET", "/v1/jobs", &[], "").status, 200);
    assert!(!d.log().contains("Too many open files"), "{}", d.log());
    drop(held);
}

/// A client that shuts its write side once its request is sent (`socat`,
/// `nc -N`) still reads the answer; one that goes away before the answer
/// still has its change made whole: the drop-in written and the daemon's
/// configuration reloaded, never one without the other.
#[test]
fn daemon_changes_asked_by_a_client_that_closes_are_made_whole() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let socket = d.socket.clone().expect("the daemon names its socket");
    let send = |head: &str, body: &str| {
        let mut c = UnixStream::connect(&socket).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        write!(
            c,
            "{head} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        c
    };
    for i in 0..5 {
        let name = format!("half{i}");
        let body = r#"{"schedule": "0 0 1 1 *", "run": "true"}"#;
        let mut c = send(&format!("PUT /v1/jobs/{name}"), body);
        c.shutdown(std::net::Shutdown::Write).unwrap();
        let mut answer = String::new();
        let _ = c.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 201"),
            "PUT {name} then a half-close: {answer:?}"
        );
        assert_eq!(d.get(&format!("/v1/jobs/{name}")).status, 200);
        // Asked, and gone before the answer.
        drop(send(&format!("DELETE /v1/jobs/{name}"), ""));
        let file = s.env.path(&format!("jobs.d/{name}.toml"));
        baton_testkit::eventually(
            &format!("DELETE {name}, the client gone: the file gone and the job out of force"),
            || !file.exists() && d.get(&format!("/v1/jobs/{name}")).status == 404,
        );
    }
}

/// A change whose request is still arriving when the daemon's stop begins
/// (SIGTERM) is refused as a run and a tick are then, `503 stopping`, and
/// nothing is written; before, the `PUT`'s drop-in was written and
/// reloaded by a daemon on its way out.
#[test]
fn daemon_refuses_a_change_that_arrives_after_its_stop_began() {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixStream;
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    let socket = d.socket.clone().expect("the daemon names its socket");
    let body = r#"{"schedule": "0 0 1 1 *", "run": "true"}"#;
    let mut c = UnixStream::connect(&socket).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    // The head, and a wait for `100 Continue`: the request is in hand, its
    // handler reading the body.
    write!(
        c,
        "PUT /v1/jobs/late HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Expect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .unwrap();
    let mut go_on = [0u8; 25];
    c.read_exact(&mut go_on).unwrap();
    assert_eq!(&go_on, b"HTTP/1.1 100 Continue\r\n\r\n");
    signal(d.pid(), Signal::TERM);
    baton_testkit::eventually("the daemon to begin its stop", || {
        d.log().contains("stopping: no more ticks or requests")
    });
    // The body arrives after the stop began, within the while the exchange
    // in hand is let finish.
    c.write_all(body.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = c.read_to_string(&mut answer);
    let a = Answer::parse(answer.as_bytes()).0;
    assert_eq!(a.status, 503, "{answer:?}\n{}", d.log());
    assert_eq!(a.json()["error"]["code"], "stopping", "{answer:?}");
    assert!(
        !s.env.path("jobs.d/late.toml").exists(),
        "written during the stop"
    );
    assert!(!d.log().contains("PUT /v1/jobs"), "{}", d.log());
}

/// `baton.db` removed (or renamed away) under a daemon with no run in
/// flight: the daemon's own next tick says the ledger was lost
/// (`ledger-corrupt`), where before it opened a fresh one without a word
/// and every job turned `NEW`, a paused one running again, `status`
/// exiting 0.
#[test]
fn daemon_says_a_ledger_removed_under_it_was_lost() {
    for how in ["rm", "mv"] {
        let s = Sched::new("");
        let alerts = s.env.path("alerts.txt");
        s.write(&format!(
            "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_command = \"cat >> {}\"\n\
             [jobs.keep]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
            alerts.display()
        ));
        let d = Daemon::start(&s, &[]);
        assert_eq!(d.post("/v1/tick", "").status, 200);
        let db = s.env.state().join("baton.db");
        assert!(db.exists());
        for suffix in ["-wal", "-shm", ""] {
            let from = format!("{}{suffix}", db.display());
            if how == "rm" {
                let _ = std::fs::remove_file(&from);
            } else {
                let _ = std::fs::rename(&from, format!("{}.kept{suffix}", db.display()));
            }
        }
        assert_eq!(d.post("/v1/tick", "").status, 200);
        eventually("the daemon to alert the lost ledger", || {
            std::fs::read_to_string(&alerts)
                .unwrap_or_default()
                .contains("ledger was lost")
        });
        let said = std::fs::read_to_string(&alerts).unwrap_or_default();
        assert!(said.contains("ledger-corrupt"), "{how}: {said}");
    }
}

/// A daemon out of file descriptors cannot make the worker of a due
/// occurrence: the occurrence is recorded missed `start-failed`, with a
/// `missed` alert that says so, and once descriptors are there again the
/// next occurrences run. It used to leave the occurrence undecided, for the
/// next tick to record it `superseded`, as if a later one had run instead.
#[test]
fn daemon_out_of_descriptors_records_what_it_could_not_start() {
    use rustix::process::{Pid, Resource, Rlimit, getrlimit, prlimit};
    let s = Sched::new("");
    let counter = s.env.path("counter");
    s.write(&format!(
        "[jobs.count]\nevery = \"2s\"\nrun = \"echo ran >> {}\"\n",
        counter.display()
    ));
    let d = Daemon::start(&s, &[]);
    eventually("the job to run", || crate::sched::lines(&counter) >= 1);
    let pid = Pid::from_raw(i32::try_from(d.child.id()).unwrap());
    // Below every descriptor it has open: it keeps those, and gets no more.
    // Its hard limit is ours (inherited), kept, so the soft one comes back.
    let starved = Rlimit {
        current: Some(3),
        maximum: getrlimit(Resource::Nofile).maximum,
    };
    let limit = prlimit(pid, Resource::Nofile, starved).unwrap();
    let missed = |reason: &str| {
        s.json(&["status", "--json", "count"])["jobs"][0]["missed"]["by_reason"][reason]
            .as_u64()
            .unwrap_or(0)
    };
    eventually("an occurrence to be recorded start-failed", || {
        missed("start-failed") >= 1
    });
    prlimit(pid, Resource::Nofile, limit).unwrap();
    let v = s.json(&["status", "--json", "count"]);
    let alerts = v["jobs"][0]["recent_alerts"].as_array().unwrap();
    assert!(
        alerts.iter().any(|a| a["kind"] == "missed"
            && a["message"]
                .as_str()
                .is_some_and(|m| m.contains("start-failed") && m.contains("could not be started"))),
        "{v}"
    );
    let before = crate::sched::lines(&counter);
    eventually("the job to run again", || {
        crate::sched::lines(&counter) > before
    });
    assert_eq!(missed("superseded"), 0, "{}", d.log());
}
