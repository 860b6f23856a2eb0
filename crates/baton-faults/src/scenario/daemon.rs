//! The daemon's write API and its files: a foreign user's change refused,
//! a reload that would drop the token while bound off loopback refused,
//! drop-ins written `0600`, and a job's lock renamed over the API while it
//! runs.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use baton_testkit::client::{self as http, Answer};
use baton_testkit::user::User;

use crate::job::JobDef;
use crate::scenario::common::{self, Local};
use crate::scenario::{Need, Scenario};
use crate::trial::{LOCAL_POLICY, Trial, pause_ms, secs};

const JSON: (&str, &str) = ("Content-Type", "application/json");
const TOKEN: &str = "a-token-of-the-campaign-0123456789";

/// The daemon's scenarios.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "daemon-put-as-other-user",
            what: "a daemon on loopback without a token: PUT, run and tick from user nobody (TCP and the socket) are refused, and nothing runs",
            needs: &[Need::Root],
            cost: 2,
            run: put_as_other_user,
        },
        Scenario {
            name: "reload-drops-token-while-bound",
            what: "a daemon bound to 0.0.0.0 with a token, reloaded with a configuration without one: the token stays required",
            needs: &[Need::Root],
            cost: 2,
            run: reload_drops_token,
        },
        Scenario {
            name: "dropin-permissions",
            what: "a job PUT with a secret in its env: jobs.d/JOB.toml is readable by its owner only",
            needs: &[],
            cost: 2,
            run: dropin_permissions,
        },
        Scenario {
            name: "lock-renamed-by-put",
            what: "a running job's lock changed by PUT, and the daemon's clock ticks: the job never runs beside itself",
            needs: &[],
            cost: 2,
            run: lock_renamed_by_put,
        },
    ]
}

/// A daemon a trial started.
struct Daemon {
    pid: u32,
    addr: SocketAddr,
    socket: Option<PathBuf>,
}

fn start(t: &mut Trial<'_>, config: &Path, listen: &str) -> Result<Daemon, String> {
    let mut c = t.baton(config, &["daemon", "--listen", listen]);
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("failed to start the daemon: {e}"))?;
    let pid = child.id();
    let err = child.stderr.take().ok_or("the daemon has no stderr")?;
    let log = t.path(&format!("daemon-{pid}.err"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(err);
        let mut all = String::new();
        let mut line = String::new();
        let (mut socket, mut sent) = (None, false);
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            all.push_str(&line);
            if let Some(rest) = line.trim().split("listening on unix:").nth(1) {
                socket = rest.split(" (").next().map(PathBuf::from);
            }
            if !sent
                && let Some(rest) = line.trim().split("listening on http://").nth(1)
                && let Some(addr) = rest.split_whitespace().next().and_then(|a| a.parse().ok())
            {
                let _ = tx.send((addr, socket.clone()));
                sent = true;
            }
            line.clear();
            let _ = std::fs::write(&log, &all);
        }
        let _ = std::fs::write(&log, &all);
    });
    t.adopt(child);
    match rx.recv_timeout(secs(30)) {
        Ok((addr, socket)) => Ok(Daemon { pid, addr, socket }),
        Err(_) => Err(format!(
            "the daemon did not start listening: {}",
            std::fs::read_to_string(t.path(&format!("daemon-{pid}.err"))).unwrap_or_default()
        )),
    }
}

fn ok(a: &std::io::Result<Answer>) -> bool {
    a.as_ref().is_ok_and(|a| (200..300).contains(&a.status))
}

fn put_as_other_user(t: &mut Trial<'_>) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("main", 1)]);
    let d = start(t, &l.config, "127.0.0.1:0")?;
    let evil = t.path("evil");
    let body = format!(
        r#"{{"schedule": "* * * * * *", "run": "touch {}"}}"#,
        evil.display()
    );
    let (addr, socket) = (d.addr, d.socket.clone());
    let answers = User::nobody().run(move || {
        let mut out = vec![
            (
                "PUT over TCP",
                http::request(addr, "PUT", "/v1/jobs/evil", &[JSON], &body),
            ),
            (
                "run over TCP",
                http::request(addr, "POST", "/v1/jobs/main/run", &[JSON], "{}"),
            ),
            (
                "tick over TCP",
                http::request(addr, "POST", "/v1/tick", &[JSON], "{}"),
            ),
        ];
        if let Some(s) = socket {
            out.push((
                "PUT over the socket",
                http::request_unix(&s, "PUT", "/v1/jobs/evil", &[JSON], &body),
            ));
        }
        out
    });
    t.injected += answers.len() as u64;
    for (what, a) in &answers {
        if ok(a) {
            t.v.breach(format!("nobody's {what} was accepted"));
        }
    }
    pause_ms(1500);
    if evil.exists() {
        t.v.breach("a job put by nobody ran as root".into());
    }
    if l.config.with_file_name("jobs.d").join("evil.toml").exists() {
        t.v.breach("nobody's job was written to jobs.d/".into());
    }
    stop(t, d.pid);
    common::finish(t, &l);
    Ok(())
}

fn stop(t: &mut Trial<'_>, pid: u32) {
    crate::procs::signal(pid as i32, rustix::process::Signal::TERM);
    let _ = t.wait_for(pid, secs(30));
}

fn reload_drops_token(t: &mut Trial<'_>) -> Result<(), String> {
    let token = t.path("token");
    std::fs::write(&token, TOKEN)
        .and_then(|()| std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)))
        .map_err(|e| format!("failed to write {}: {e}", token.display()))?;
    let state = t.path("state");
    let jobs = vec![JobDef::every_second("main", 1)];
    let with = format!("[daemon]\ntoken_file = {:?}\n", token.display());
    let config = t.config("baton", &state, None, LOCAL_POLICY, &jobs, &with);
    let d = start(t, &config, "0.0.0.0:0")?;
    let port = d.addr.port();
    let loopback: SocketAddr = format!("127.0.0.1:{port}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    // The edit: no token any more.
    let _ = t.config("baton", &state, None, LOCAL_POLICY, &jobs, "");
    let auth = format!("Bearer {TOKEN}");
    let reload = http::request(
        loopback,
        "POST",
        "/v1/reload",
        &[JSON, ("Authorization", &auth)],
        "{}",
    );
    if t.rng.range(0, 1) == 0 {
        crate::procs::signal(d.pid as i32, rustix::process::Signal::HUP);
    }
    pause_ms(500);
    t.injected += 1;
    let evil = t.path("evil");
    let body = format!(
        r#"{{"schedule": "* * * * * *", "run": "touch {}"}}"#,
        evil.display()
    );
    let put =
        User::nobody().run(move || http::request(loopback, "PUT", "/v1/jobs/evil", &[JSON], &body));
    if ok(&put) {
        t.v.breach(format!(
            "after a reload without token_file (answered {}), an unauthenticated PUT was accepted",
            reload.map(|a| a.status).unwrap_or(0)
        ));
    }
    pause_ms(1500);
    if evil.exists() {
        t.v.breach("an unauthenticated job ran as root".into());
    }
    stop(t, d.pid);
    let l = Local {
        state,
        config,
        jobs,
    };
    common::finish(t, &l);
    Ok(())
}

fn dropin_permissions(t: &mut Trial<'_>) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("main", 1)]);
    let d = start(t, &l.config, "127.0.0.1:0")?;
    let Some(socket) = d.socket.clone() else {
        return Err("the daemon named no socket".into());
    };
    let body = format!(
        r#"{{"schedule": "0 0 1 1 *", "run": "{} 1 0", "env": {{"API_SECRET": "s3cret"}}}}"#,
        t.script().display()
    );
    let a = http::request_unix(&socket, "PUT", "/v1/jobs/secret", &[JSON], &body);
    t.injected += 1;
    if !ok(&a) {
        t.broken.push(format!(
            "the daemon's user could not PUT a job: {:?}",
            a.map(|a| a.status)
        ));
    }
    let file = l.config.with_file_name("jobs.d").join("secret.toml");
    match std::fs::metadata(&file) {
        Ok(m) if m.permissions().mode() & 0o077 != 0 => t.v.breach(format!(
            "jobs.d/secret.toml, holding a secret, is mode {:o}",
            m.permissions().mode() & 0o7777
        )),
        Ok(_) => {}
        Err(e) => t
            .broken
            .push(format!("failed to read {}: {e}", file.display())),
    }
    stop(t, d.pid);
    common::finish(t, &l);
    Ok(())
}

fn lock_renamed_by_put(t: &mut Trial<'_>) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("main", 1)]);
    let d = start(t, &l.config, "127.0.0.1:0")?;
    let Some(socket) = d.socket.clone() else {
        return Err("the daemon named no socket".into());
    };
    let script = t.script();
    let body = |lock: &str, beats: u32| {
        format!(
            r#"{{"schedule": "* * * * * *", "run": "{} {beats} 0", "lock": "{lock}", "env": {{"FAULTS_LOCK": "{lock}"}}}}"#,
            script.display()
        )
    };
    let a = http::request_unix(
        &socket,
        "PUT",
        "/v1/jobs/moving",
        &[JSON],
        &body("first", 30),
    );
    if !ok(&a) {
        t.broken.push(format!(
            "PUT of the job was refused: {:?}",
            a.map(|a| a.status)
        ));
    }
    let events = t.events();
    let started = t.until(secs(20), |_| {
        crate::evidence::runs(&events)
            .iter()
            .any(|s| s.job == "moving")
    });
    if !started {
        t.broken.push("the daemon never ran the job".into());
    }
    pause_ms(t.rng.range(0, 1000));
    let b = http::request_unix(
        &socket,
        "PUT",
        "/v1/jobs/moving",
        &[JSON],
        &body("second", 5),
    );
    t.injected += 1;
    if !ok(&b) {
        t.broken.push(format!(
            "the second PUT was refused: {:?}",
            b.map(|a| a.status)
        ));
    }
    pause_ms(t.rng.range(2500, 4000));
    stop(t, d.pid);
    t.quiesce(secs(20), &[]);
    let mut jobs = l.jobs.clone();
    jobs.push(JobDef::every_second("moving", 5));
    let all = Local { jobs, ..l };
    common::judge_local(t, &all);
    Ok(())
}
