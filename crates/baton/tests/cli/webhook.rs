//! Alert webhooks through the real binary: `baton run` and `baton tick`
//! post each alert to a real receiver on 127.0.0.1 that succeeds, fails
//! and stalls; the body, the signature, the retries, the bound, and the
//! other surfaces that still get every alert. And the configuration's
//! refusals of a bad URL or a secret file that cannot be trusted.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use baton_testkit::http::{Answer, Seen, TestServer};
use hmac::{KeyInit, Mac};

use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

const SECRET: &str = "hook-secret-0123456789";

/// A scheduler whose one job, `nightly`, fails (exit 3), with its alerts
/// posted to `url` (signed with [`SECRET`]) and given to an alert command
/// that appends them to `alerts.jsonl`; `extra` goes in `[scheduler]`.
fn failing(url: &str, extra: &str) -> Sched {
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         alert_webhook = \"{url}\"\nalert_webhook_secret_file = \"hook.key\"\n\
         alert_command = \"cat >> alerts.jsonl\"\n{extra}\
         [jobs.nightly]\nevery = \"1h\"\nrun = \"exit 3\"\n"
    ));
    secret(&s.env.path("hook.key"), SECRET, 0o600);
    s
}

fn secret(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, format!("{text}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Whether `seen` carries a `Baton-Signature` made with `secret` over its
/// `Baton-Timestamp` and its body, as the README says a receiver checks it.
fn signed_with(seen: &Seen, secret: &str) -> bool {
    let (Some(ts), Some(sig)) = (
        seen.header("Baton-Timestamp"),
        seen.header("Baton-Signature"),
    ) else {
        return false;
    };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{ts}.{}", seen.body).as_bytes());
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    sig == format!("sha256={hex}")
}

fn lines_of(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Well past the 10 s a delivery may take, so a slow machine never fails
/// the test; a process that waited for a stalled receiver forever would.
const BOUND: Duration = Duration::from_secs(90);

#[test]
fn a_run_posts_its_alert_as_signed_json_with_a_text() {
    let server = TestServer::start(&[Answer::Status(200)]);
    let s = failing(&server.url("/hook/s3cret-path"), "");
    let o = s.run(&["run", "nightly"]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("alert webhook"), "{}", stderr(&o));
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let r = &seen[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/hook/s3cret-path");
    assert_eq!(r.header("Content-Type"), Some("application/json"));
    assert_eq!(r.header("Baton-Alert-Test"), None);
    let body: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["job"], "nightly");
    assert_eq!(body["kind"], "step-failed", "{body:#}");
    assert_eq!(body["status"], 3, "{body:#}");
    let text = body["text"].as_str().unwrap();
    assert!(
        text.starts_with("baton nightly: step-failed: ") && !text.contains('\n'),
        "{text}"
    );
    // The same alert the alert command got, field for field, and the run's.
    let mut given = lines_of(&s.env.path("alerts.jsonl"));
    assert_eq!(given.len(), 1, "{given:?}");
    let mut posted = body.clone();
    posted.as_object_mut().unwrap().remove("text");
    assert_eq!(posted, given.remove(0));
    let h = s.json(&["history", "nightly", "--json"]);
    assert_eq!(body["run_id"], h[0]["run_id"]);
    // Signed with the secret over the timestamp and the exact body; any
    // other secret or body does not verify.
    assert!(signed_with(r, SECRET), "{r:?}");
    assert!(!signed_with(r, "another-secret"), "{r:?}");
    let mut tampered = r.clone();
    tampered.body = tampered.body.replace("nightly", "nightlz");
    assert!(!signed_with(&tampered, SECRET));
}

#[test]
fn a_receiver_that_fails_twice_gets_the_alert_on_the_third_attempt() {
    let server = TestServer::start(&[
        Answer::Status(500),
        Answer::Status(503),
        Answer::Status(200),
        Answer::Status(500),
    ]);
    let s = failing(&server.url("/hook"), "");
    let o = s.run(&["run", "nightly"]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    let seen = server.requests();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.iter().all(|r| r.body == seen[0].body), "{seen:?}");
    assert!(seen.iter().all(|r| signed_with(r, SECRET)), "{seen:?}");
    assert!(!stderr(&o).contains("alert webhook"), "{}", stderr(&o));
    assert!(!s.envelope().contains("alert webhook"), "{}", s.envelope());
}

#[test]
fn a_4xx_is_not_retried_and_is_said() {
    let server = TestServer::start(&[Answer::Status(404), Answer::Status(200)]);
    let s = failing(&server.url("/gone"), "");
    let o = s.run(&["run", "nightly"]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(server.requests().len(), 1);
    let err = stderr(&o);
    let said = format!(
        "the alert webhook {} failed: the receiver answered 404",
        server.url("/…")
    );
    assert!(err.contains(&said), "{err}");
    assert!(s.envelope().contains(&said), "{}", s.envelope());
    // The path, which may be the webhook's credential, is never shown.
    assert!(!err.contains("/gone") && !s.envelope().contains("/gone"));
}

#[test]
fn a_stalled_receiver_delays_nothing_and_loses_no_alert() {
    let server = TestServer::start(&[Answer::Silent]);
    let s = failing(&server.url("/stall"), "");
    let o = s.run_within(&["run", "nightly"], BOUND);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    // The run started and ended.
    let h = s.json(&["history", "nightly", "--json"]);
    assert_eq!(h[0]["verdict"], "failed", "{h:#}");
    // The alert reached every other surface.
    assert_eq!(lines_of(&s.env.path("alerts.jsonl")).len(), 1);
    let logged = lines_of(&s.env.state().join("logs").join("alerts.log"));
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["kind"], "step-failed");
    assert!(s.envelope().contains("ALERT step-failed"));
    // It was tried, more than once, and its failure is said.
    assert!(server.requests().len() >= 2, "{:?}", server.requests());
    let err = stderr(&o);
    assert!(
        err.contains("the alert webhook") && err.contains("no 2xx answer after"),
        "{err}"
    );
    assert!(s.envelope().contains("WARNING the alert webhook"));
}

#[test]
fn a_tick_starts_its_runs_before_it_posts_what_its_decision_raised() {
    let server = TestServer::start(&[Answer::Silent]);
    // Known since five hours ago, caught up `latest`: this hour's occurrence
    // runs, and the decision raises a `missed` alert for the four before.
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         alert_webhook = \"{}\"\n\
         [jobs.hourly]\nevery = \"1h\"\ncatch_up_window = \"1d\"\n\
         run = \"if grep -qs 'alert webhook' STATE/logs/baton_*.log; then echo late; \
         else echo early; fi > marker\"\n",
        server.url("/stall")
    ));
    let now = baton_testkit::wall_seconds();
    let seen = jiff::Timestamp::from_second(now - now % 3600 - 5 * 3600 + 60).unwrap();
    crate::sched::known_since(&s, &["hourly"], seen);
    let o = s.run_within(&["tick"], BOUND);
    assert_ne!(code(&o), 2, "{}", stderr(&o));
    let logged = lines_of(&s.env.state().join("logs").join("alerts.log"));
    assert!(
        logged.iter().any(|a| a["kind"] == "missed"),
        "{logged:?}: {}",
        stderr(&o)
    );
    // The run started while the delivery was still trying.
    assert_eq!(
        std::fs::read_to_string(s.env.path("marker"))
            .unwrap()
            .trim(),
        "early"
    );
    let h = s.json(&["history", "hourly", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h:#}");
    // And it was posted, and its failure said once it gave up.
    let posted = server.requests();
    assert!(
        posted
            .iter()
            .any(|r| r.body.contains("\"kind\":\"missed\"")),
        "{posted:?}"
    );
    assert!(stderr(&o).contains("the alert webhook"), "{}", stderr(&o));
    assert!(s.envelope().contains("WARNING the alert webhook"));
}

#[test]
fn a_jobs_own_webhook_replaces_the_schedulers() {
    let scheduler = TestServer::start(&[Answer::Status(200)]);
    let own = TestServer::start(&[Answer::Status(200)]);
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_webhook = \"{}\"\n\
         [jobs.mine]\nevery = \"1h\"\nrun = \"exit 4\"\nalert_webhook = \"{}\"\n\
         [jobs.theirs]\nevery = \"1h\"\nrun = \"exit 5\"\n\
         [jobs.quiet]\nevery = \"1h\"\nrun = \"exit 6\"\nalert_webhook = \"\"\n",
        scheduler.url("/all"),
        own.url("/mine")
    ));
    assert_ne!(code(&s.run(&["run", "mine"])), 0);
    assert_ne!(code(&s.run(&["run", "theirs"])), 0);
    // `alert_webhook = ""` turns the scheduler's off for one job.
    let quiet = s.run(&["run", "quiet"]);
    assert_ne!(code(&quiet), 0);
    assert!(stderr(&quiet).contains("quiet"), "{}", stderr(&quiet));
    let jobs = |server: &TestServer| -> Vec<String> {
        server
            .requests()
            .iter()
            .map(|r| serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["job"].to_string())
            .collect()
    };
    assert_eq!(jobs(&own), ["\"mine\""]);
    assert_eq!(jobs(&scheduler), ["\"theirs\""]);
    // Unsigned without a secret file.
    assert_eq!(own.requests()[0].header("Baton-Signature"), None);
    assert!(own.requests()[0].header("Baton-Timestamp").is_some());
    // `baton config` shows each with its source, and never the path.
    let c = s.json(&["config", "--json"]);
    let text = c.to_string();
    assert!(!text.contains("/mine") && !text.contains("/all"), "{text}");
    let o = s.run(&["config"]);
    let out = stdout(&o);
    assert!(out.contains("alert_webhook"), "{out}");
    assert!(out.contains(&own.url("/…")), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("alert_webhook = none") && l.contains("baton.toml")),
        "{out}"
    );
}

#[test]
fn a_bad_webhook_url_or_an_untrusted_secret_file_is_refused_before_anything_runs() {
    let refused = |s: &Sched, needles: &[&str]| {
        for args in [&["run", "nightly"][..], &["tick"], &["config"]] {
            let o = s.run(args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            let err = stderr(&o);
            for n in needles {
                assert!(err.contains(n), "{args:?}: {n:?} not in {err}");
            }
        }
        assert!(!s.env.state().exists(), "the state directory was created");
    };
    let s = failing("ftp://hooks.example/x", "");
    refused(&s, &["alert_webhook", "http:// or https://"]);
    let s = failing("https://", "");
    refused(&s, &["alert_webhook", "with a host"]);
    for port in ["0", "65536", "99999"] {
        let s = failing(&format!("http://127.0.0.1:{port}/hook"), "");
        refused(
            &s,
            &["alert_webhook", "the port must be a number from 1 to 65535"],
        );
    }
    let s = failing("http://127.0.0.1:9/hook", "");
    let key = s.env.path("hook.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    refused(&s, &["alert_webhook_secret_file", "chmod 600"]);
    std::fs::remove_file(&key).unwrap();
    refused(&s, &["alert_webhook_secret_file", "failed to open"]);
    secret(&s.env.path("real.key"), SECRET, 0o600);
    std::os::unix::fs::symlink(s.env.path("real.key"), &key).unwrap();
    refused(&s, &["alert_webhook_secret_file", "a symbolic link"]);
    std::fs::remove_file(&key).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &key,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    refused(&s, &["alert_webhook_secret_file", "a named pipe"]);
    std::fs::remove_file(&key).unwrap();
    secret(&key, "  ", 0o600);
    refused(&s, &["alert_webhook_secret_file", "is empty"]);
    // Once the file is right, the same configuration runs.
    secret(&key, SECRET, 0o600);
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn the_daemon_posts_its_decisions_and_its_runs_alerts_and_waits_for_neither() {
    use crate::support::eventually;
    let stalled = TestServer::start(&[Answer::Silent]);
    let up = TestServer::start(&[Answer::Status(200)]);
    // `hourly`'s decision raises a `missed` alert to a receiver that
    // stalls; `broken`'s run fails, and its alert goes to one that answers.
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         alert_webhook = \"{}\"\n\
         [jobs.hourly]\nevery = \"1h\"\ncatch_up_window = \"1d\"\n\
         run = \"if grep -qs 'alert webhook' STATE/logs/baton_*.log; then echo late; \
         else echo early; fi > marker\"\n\
         [jobs.broken]\nschedule = \"0 0 1 1 *\"\nrun = \"exit 6\"\nalert_webhook = \"{}\"\n",
        stalled.url("/stall"),
        up.url("/up")
    ));
    let now = baton_testkit::wall_seconds();
    let seen = jiff::Timestamp::from_second(now - now % 3600 - 5 * 3600 + 60).unwrap();
    crate::sched::known_since(&s, &["hourly"], seen);
    let d = crate::daemon::Daemon::start(&s, &[]);
    eventually("the hourly run", || s.env.path("marker").exists());
    eventually("the marker written", || {
        !std::fs::read_to_string(s.env.path("marker"))
            .unwrap_or_default()
            .is_empty()
    });
    assert_eq!(
        std::fs::read_to_string(s.env.path("marker"))
            .unwrap()
            .trim(),
        "early"
    );
    eventually("the missed alert posted", || {
        stalled
            .requests()
            .iter()
            .any(|r| r.body.contains("\"kind\":\"missed\""))
    });
    eventually("the stalled delivery said", || {
        d.log().contains("the alert webhook") && s.envelope().contains("WARNING the alert webhook")
    });
    // A run by the API: its worker posts its alert.
    assert_eq!(d.post("/v1/jobs/broken/run", "").status, 202);
    eventually("the run's alert", || {
        up.requests()
            .iter()
            .any(|r| r.body.contains("\"kind\":\"step-failed\""))
    });
    let body: serde_json::Value = serde_json::from_str(&up.requests()[0].body).unwrap();
    assert_eq!(body["job"], "broken");
    assert!(body["text"].as_str().unwrap().starts_with("baton broken: "));
}

#[test]
fn two_hosts_on_one_store_post_each_runs_alert_once() {
    let pg = baton_testkit::pg::PgServer::start();
    let receiver = TestServer::start(&[Answer::Status(200)]);
    let dir = tempfile::tempdir().unwrap();
    let configs = crate::sched::two_hosts_on(
        dir.path(),
        &pg,
        &format!("alert_webhook = \"{}\"\n", receiver.url("/hook")),
        "[jobs.flaky]\nschedule = \"*/2 * * * * *\"\nrun = \"exit 3\"\n",
    );
    let tickers: Vec<_> = configs
        .iter()
        .map(|config| {
            let config = config.clone();
            std::thread::spawn(move || {
                for _ in 0..16 {
                    let _ = crate::support::baton_on(&config, &["tick"])
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .status();
                    crate::support::pause(500);
                }
            })
        })
        .collect();
    for t in tickers {
        t.join().unwrap();
    }
    let failed: Vec<String> = receiver
        .requests()
        .iter()
        .map(|r| serde_json::from_str::<serde_json::Value>(&r.body).unwrap())
        .filter(|v| v["job"] == "flaky" && v["kind"] == "step-failed")
        .map(|v| v["occurrence"].to_string())
        .collect();
    let once: std::collections::BTreeSet<&String> = failed.iter().collect();
    assert!(once.len() >= 2, "too few runs alerted: {failed:?}");
    assert_eq!(
        once.len(),
        failed.len(),
        "an alert posted twice: {failed:?}"
    );
}
