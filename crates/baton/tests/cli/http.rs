//! HTTP steps through the real binary: `baton run` and `baton tick` send
//! real requests to a real server on 127.0.0.1, through `baton __http`
//! under the runner, with the run's `Baton-*` headers, retries, timeouts
//! and the exit codes the README documents.

use baton_testkit::http::{Answer, TestServer, closed_url};

use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// The job's log files, all of them.
fn job_log(s: &Sched, job: &str) -> String {
    let mut all = String::new();
    if let Ok(d) = std::fs::read_dir(s.env.state().join("logs")) {
        for e in d.filter_map(Result::ok) {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&format!("{job}_")) {
                all.push_str(&std::fs::read_to_string(e.path()).unwrap());
            }
        }
    }
    all
}

#[test]
fn an_http_step_sends_its_request_and_names_the_run() {
    let server = TestServer::start(&[Answer::Status(204)]);
    // One occurrence a year, caught up for 400 days: due at every tick of
    // the test, whatever the minute.
    let s = Sched::new(&format!(
        "[jobs.ping]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         http = {{ url = \"{}\", method = \"put\", body = \"hello\", \
         headers = {{ X-Token = \"s3cret\", Content-Type = \"text/plain\" }} }}\n",
        server.url("/hook?from=baton")
    ));
    crate::sched::known_since(&s, &["ping"], crate::sched::before_new_year());
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let seen = server.requests();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let r = &seen[0];
    assert_eq!(r.method, "PUT");
    assert_eq!(r.path, "/hook?from=baton");
    assert_eq!(r.body, "hello");
    assert_eq!(r.header("X-Token"), Some("s3cret"));
    assert_eq!(r.header("Content-Type"), Some("text/plain"));
    let h = s.json(&["history", "ping", "--json"]);
    assert_eq!(h[0]["verdict"], "ok");
    assert_eq!(r.header("Baton-Job"), Some("ping"));
    assert_eq!(r.header("Baton-Run-Id"), h[0]["run_id"].as_str());
    assert_eq!(r.header("Baton-Occurrence"), h[0]["occurrence"].as_str());
    let fence = h[0]["fence"].as_u64().unwrap().to_string();
    assert_eq!(r.header("Baton-Fence"), Some(fence.as_str()));
    let log = job_log(&s, "ping");
    assert!(log.contains("HTTP 204 No Content"), "{log}");
}

#[test]
fn a_5xx_is_retried_and_a_later_2xx_succeeds() {
    let server = TestServer::start(&[Answer::Status(500), Answer::Status(200)]);
    let s = Sched::new(&format!(
        "[jobs.hook]\nevery = \"1h\"\n\
         [[jobs.hook.steps]]\nname = \"prepare\"\nrun = \"true\"\n\
         [[jobs.hook.steps]]\nname = \"notify\"\nretries = 1\nbackoff = \"0s\"\n\
         http = {{ url = \"{}\", body = \"{{\\\"done\\\": true}}\" }}\n",
        server.url("/notify")
    ));
    let o = s.run(&["run", "hook"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.iter().all(|r| r.method == "POST"));
    assert_eq!(seen[1].body, "{\"done\": true}");
    let h = s.json(&["history", "hook", "--json"]);
    let a = h[0]["attempts"].as_array().unwrap();
    assert_eq!(a.len(), 3, "{a:?}");
    assert_eq!(a[1]["step"], "notify");
    assert_eq!(a[1]["exit_code"], 1);
    assert_eq!(a[1]["outcome"], "failed");
    assert_eq!(a[2]["attempt"], 2);
    assert_eq!(a[2]["outcome"], "ok");
    assert_eq!(h[0]["verdict"], "ok");
    let log = job_log(&s, "hook");
    assert!(
        log.contains("HTTP 500 Internal Server Error: answer 500"),
        "{log}"
    );
}

#[test]
fn a_4xx_is_never_retried() {
    let server = TestServer::start(&[Answer::Status(404)]);
    let s = Sched::new(&format!(
        "[jobs.gone]\nevery = \"1h\"\nretries = 3\nbackoff = \"0s\"\n\
         no_retry_exit_codes = []\nhttp = {{ url = \"{}\" }}\n",
        server.url("/missing")
    ));
    let o = s.run(&["run", "gone"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(server.requests().len(), 1);
    let h = s.json(&["history", "gone", "--json"]);
    let a = h[0]["attempts"].as_array().unwrap();
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0]["exit_code"], 22);
    assert_eq!(h[0]["verdict"], "failed");
    assert_eq!(h[0]["exit_code"], 22);
    assert!(
        stderr(&o).contains("the server answered 4xx, a client error, which is never retried"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_refused_connection_is_retried_then_fails() {
    let s = Sched::new(&format!(
        "[jobs.down]\nevery = \"1h\"\nretries = 1\nbackoff = \"0s\"\nhttp = {{ url = \"{}\" }}\n",
        closed_url("/hook")
    ));
    let o = s.run(&["run", "down"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let h = s.json(&["history", "down", "--json"]);
    let a = h[0]["attempts"].as_array().unwrap();
    assert_eq!(a.len(), 2, "{a:?}");
    assert!(a.iter().all(|a| a["exit_code"] == 7), "{a:?}");
    assert_eq!(h[0]["verdict"], "failed");
    assert!(
        job_log(&s, "down").contains("failed to send POST"),
        "{}",
        job_log(&s, "down")
    );
}

#[test]
fn a_server_that_never_answers_is_stopped_by_the_timeout() {
    let server = TestServer::start(&[Answer::Silent]);
    let s = Sched::new(&format!(
        "[jobs.hang]\nevery = \"1h\"\ntimeout = \"1s\"\nhttp = {{ url = \"{}\" }}\n",
        server.url("/slow")
    ));
    let o = s.run(&["run", "hang"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_eq!(server.requests().len(), 1);
    let h = s.json(&["history", "hang", "--json"]);
    assert_eq!(h[0]["attempts"][0]["outcome"], "timeout");
    assert_eq!(h[0]["exit_code"], 124);
    assert!(stderr(&o).contains("timed out"), "{}", stderr(&o));
}

#[test]
fn config_shows_an_http_step() {
    let s = Sched::new(
        "[jobs.ping]\nevery = \"1h\"\nrun = \"true\"\n\
         [[jobs.ping.checks]]\nname = \"alive\"\n\
         http = { url = \"https://example.invalid/up\", method = \"get\", headers = { Accept = \"text/plain\" } }\n",
    );
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(
            "http = { url = \"https://example.invalid/up\", method = \"GET\", \
             headers = { Accept = \"text/plain\" } }"
        ),
        "{text}"
    );
    assert!(text.contains("baton.toml:9"), "{text}");
    let j = s.json(&["config", "--json"]);
    let check = &j["jobs"]["ping"]["checks"][0];
    assert_eq!(check["name"], "alive");
    assert_eq!(check["http"]["value"]["url"], "https://example.invalid/up");
    assert_eq!(check["http"]["value"]["method"], "GET");
    assert_eq!(check["http"]["value"]["body"], serde_json::Value::Null);
    assert_eq!(check["http"]["value"]["headers"]["Accept"], "text/plain");
    assert!(check.get("run").is_none(), "{check}");
}

#[test]
fn config_refuses_a_bad_http_step() {
    let cases: &[(&str, &str)] = &[
        (
            "[jobs.j]\nevery = \"1h\"\nrun = \"true\"\nhttp = { url = \"http://h/\" }\n",
            "baton.toml:7: jobs.j: has both run and http",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\n[[jobs.j.steps]]\nname = \"s\"\nrun = \"true\"\n\
             http = { url = \"http://h/\" }\n",
            "baton.toml:9: jobs.j.steps[0]: has both run and http",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\n[[jobs.j.steps]]\nname = \"s\"\n",
            "baton.toml:6: jobs.j.steps[0]: has neither run nor http",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { url = \"ftp://h/x\" }\n",
            "baton.toml:6: jobs.j.http.url: = \"ftp://h/x\": expected an http:// or https:// URL",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { url = \"http://h:70000/x\" }\n",
            "baton.toml:6: jobs.j.http.url: = \"http://h:70000/x\": the port must be a number from 1 to 65535",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { url = \"http://h/\", method = \"PO ST\" }\n",
            "baton.toml:6: jobs.j.http.method: = \"PO ST\": expected an HTTP method",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { method = \"POST\" }\n",
            "baton.toml:6: jobs.j.http: has no url",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { url = \"http://h/\", headers = { Baton-Fence = \"1\" } }\n",
            "jobs.j.http.headers.Baton-Fence: \"Baton-Fence\": Baton-* headers are baton's own",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { url = \"http://h/\", headers = { X-A = \"a\\nb\" } }\n",
            "jobs.j.http.headers.X-A: = \"a\\nb\": a header value may not hold control characters",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = { url = \"http://h/\", timeout = \"1s\" }\n",
            "jobs.j.http.timeout: unknown key",
        ),
        (
            "[jobs.j]\nevery = \"1h\"\nhttp = \"http://h/\"\n",
            "jobs.j.http: is a string, expected a table",
        ),
    ];
    for (toml, expected) in cases {
        let s = Sched::new(toml);
        let o = s.run(&["config"]);
        assert_eq!(code(&o), 2, "{toml}: {}", stdout(&o));
        assert!(
            stderr(&o).contains(expected),
            "{toml}\nexpected: {expected}\ngot: {}",
            stderr(&o)
        );
    }
}

#[test]
fn the_http_subcommand_is_hidden_and_refuses_to_run_by_hand() {
    let s = Sched::new("[jobs.j]\nevery = \"1h\"\nrun = \"true\"\n");
    let help = stdout(&s.run(&["--help"]));
    assert!(!help.contains("__http"), "{help}");
    let o = s
        .cmd(&["__http"])
        .env_remove("BATON_HTTP_REQUEST")
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("BATON_HTTP_REQUEST is not set"),
        "{}",
        stderr(&o)
    );
}
