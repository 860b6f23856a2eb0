//! The daemon's HTTP API never panics, whatever requests it is sent, and
//! answers every error as JSON with one of the README's stable codes.
//!
//! Each input is a fresh daemon (its configuration, token file, drop-in and
//! state directory in a temporary directory, its clock stopped at one
//! instant) driven in-process through its router, as a TCP caller on
//! loopback, by up to eight requests separated by lines `%%%`. A request is
//! written as HTTP/1.1 is: `METHOD TARGET`, header lines, an empty line, the
//! body. The configuration has a token, so a request with
//! `Authorization: Bearer fuzz-token-0123456789abcdef` reaches the handlers
//! that change things, and every other request must be refused but
//! `GET /healthz`'s. No request can start a job: the router's worker
//! binary does not exist (see `baton_daemon::fuzzing`).
#![no_main]

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request, Uri, header};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tower::ServiceExt as _;

const TOKEN: &str = "fuzz-token-0123456789abcdef";

const CONFIG: &str = r#"[scheduler]
state_dir = "state"
timezone = "UTC"
catch_up = "all"
catch_up_window = "2h"

[daemon]
token_file = "token"

[jobs.report]
schedule = "*/15 * * * *"
run = "true"

[jobs.backup]
every = "1h"
lock = "nightly"
[[jobs.backup.steps]]
name = "dump"
run = ["true"]
[[jobs.backup.checks]]
name = "check"
run = "true"
"#;

const DROPIN: &str = "every = \"5m\"\nrun = \"true\"\n";

/// The codes the README's error table lists.
const CODES: &[&str] = &[
    "bad_request",
    "bad_job_name",
    "bad_body",
    "unauthorized",
    "read_only",
    "foreign_peer",
    "foreign_origin",
    "foreign_host",
    "no_such_job",
    "not_found",
    "method_not_allowed",
    "busy",
    "disabled",
    "job_disabled",
    "defined_in_config",
    "too_large",
    "uri_too_long",
    "content_type",
    "invalid_config",
    "invalid_job",
    "refused",
    "headers_too_large",
    "internal",
    "unusable_state",
    "stopping",
];

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    })
}

/// One request as the input writes it; `None` when its method or target
/// is not one HTTP can carry (the server would refuse it before the
/// router).
fn request(text: &[u8]) -> Option<Request<Body>> {
    let (head, body) = match text.windows(2).position(|w| w == b"\n\n") {
        Some(i) => (&text[..i], &text[i + 2..]),
        None => (text, &b""[..]),
    };
    let mut lines = head.split(|&b| b == b'\n');
    let first = lines.next()?;
    let mut words = first.split(|&b| b == b' ').filter(|w| !w.is_empty());
    let method = Method::from_bytes(words.next()?).ok()?;
    let uri = Uri::try_from(words.next()?).ok()?;
    let mut req = Request::builder().method(method).uri(uri);
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value)) {
            req = req.header(n, v);
        }
    }
    req.body(Body::from(body.to_vec())).ok()
}

fn requests(data: &[u8]) -> Vec<Request<Body>> {
    let mut out = Vec::new();
    let mut rest = data;
    while out.len() < 8 {
        let (one, more) = match rest.windows(5).position(|w| w == b"\n%%%\n") {
            Some(i) => (&rest[..i], Some(&rest[i + 5..])),
            None => (rest, None),
        };
        out.extend(request(one));
        match more {
            Some(m) => rest = m,
            None => break,
        }
    }
    out
}

/// What the test knows of a request before it is sent.
struct Sent {
    method: Method,
    target: String,
    path: String,
    /// It carries the token, as the README says a caller sends it.
    authenticated: bool,
}

impl Sent {
    fn of(req: &Request<Body>) -> Self {
        let authenticated = req
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .is_some_and(|(scheme, token)| {
                scheme.eq_ignore_ascii_case("bearer") && token.trim() == TOKEN
            });
        Self {
            method: req.method().clone(),
            target: req.uri().to_string(),
            path: req.uri().path().to_owned(),
            authenticated,
        }
    }
}

async fn check(sent: &Sent, resp: axum::response::Response) {
    let Sent {
        method,
        target,
        path,
        authenticated,
    } = sent;
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("a body the router made can be read");
    let what = format!(
        "{method} {target} -> {status} {content_type}: {}",
        String::from_utf8_lossy(&bytes)
    );
    if !authenticated && path != "/healthz" {
        assert!(
            status.is_client_error(),
            "answered without the token: {what}"
        );
    }
    let api = path.starts_with("/v1/") || path == "/healthz";
    if status.is_success() && api {
        assert!(
            content_type.starts_with("application/json"),
            "an answer that is not JSON: {what}"
        );
        if !bytes.is_empty() || *method != Method::HEAD {
            serde_json::from_slice::<Value>(&bytes).unwrap_or_else(|e| panic!("{e}: {what}"));
        }
    }
    if !(status.is_client_error() || status.is_server_error()) {
        return;
    }
    assert!(
        content_type.starts_with("application/json"),
        "an error that is not JSON: {what}"
    );
    if *method == Method::HEAD && bytes.is_empty() {
        return;
    }
    let v: Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}: {what}"));
    let code = v["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("no code: {what}"));
    assert!(
        CODES.contains(&code),
        "a code the README does not list: {what}"
    );
    assert!(v["error"]["message"].is_string(), "no message: {what}");
    if code == "internal" {
        // The one internal error a request may meet here: the run it asked
        // for cannot start (the worker binary does not exist).
        let message = v["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("failed to start /dev/null/baton __run"),
            "an internal error: {what}"
        );
    }
}

fn serve(data: &[u8]) {
    let reqs = requests(data);
    if reqs.is_empty() {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("baton.toml");
    std::fs::write(&path, CONFIG).expect("write baton.toml");
    write_private(&dir.path().join("token"), TOKEN);
    std::fs::create_dir(dir.path().join("jobs.d")).expect("create jobs.d");
    write_private(&dir.path().join("jobs.d/web.toml"), DROPIN);
    let wall = "2026-06-01T12:00:00Z".parse().expect("an instant");
    let clock = Arc::new(baton_lease::ManualClock::new(
        wall,
        Duration::from_secs(86_400),
    ));
    let app = baton_daemon::fuzzing::app_for(&path, clock).expect("the daemon serves");
    runtime().block_on(async {
        for req in reqs {
            let sent = Sent::of(&req);
            let resp = match app.clone().oneshot(req).await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            check(&sent, resp).await;
        }
    });
}

fn write_private(path: &std::path::Path, text: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .expect("create a private file");
    f.write_all(text.as_bytes()).expect("write a private file");
}

fuzz_target!(|data: &[u8]| {
    serve(data);
});
