//! Requests `baton daemon` cannot read as HTTP at all (a broken header
//! line, a URI or a head past what it reads) are answered as every other
//! error of its API is: JSON, `{"error": {"code", "message"}}`, with the
//! status that says what was wrong, and then the connection is closed.
//! Sent as raw bytes, over TCP and over the socket.

use baton_testkit::client::{self as http, Answer};

use crate::daemon::Daemon;
use crate::sched::Sched;

fn daemon() -> (Sched, Daemon) {
    let s = Sched::new("[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n");
    let d = Daemon::start(&s, &[]);
    (s, d)
}

/// What the daemon sent back for `raw`, over TCP (`false`) or its socket.
fn send(d: &Daemon, socket: bool, raw: &[u8]) -> Vec<u8> {
    if socket {
        let path = d.socket.as_deref().expect("the daemon names its socket");
        http::raw_unix(path, raw).unwrap()
    } else {
        http::raw(d.addr, raw).unwrap()
    }
}

/// The one answer in `raw`: nothing may follow it.
fn only(raw: &[u8]) -> Answer {
    let (a, rest) = Answer::parse(raw);
    assert!(
        rest.is_empty(),
        "more after the answer: {:?}",
        String::from_utf8_lossy(rest)
    );
    a
}

/// `a` is a JSON error of `status` with `code`, says what to do (`hint`),
/// and tells the client the connection closes.
fn assert_json_error(what: &str, a: &Answer, status: u16, code: &str, hint: &str) {
    assert_eq!(a.status, status, "{what}: {a:?}");
    assert_eq!(
        a.header("content-type"),
        Some("application/json"),
        "{what}: {a:?}"
    );
    assert_eq!(a.header("connection"), Some("close"), "{what}: {a:?}");
    let j = a.json();
    assert_eq!(j["error"]["code"], code, "{what}: {}", a.body);
    let message = j["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(hint), "{what}: {message}");
    assert_eq!(
        a.header("content-length"),
        Some(a.body.len().to_string().as_str()),
        "{what}: {a:?}"
    );
}

fn head_with(line: &str, headers: &str) -> Vec<u8> {
    format!("{line}\r\nHost: localhost\r\n{headers}\r\n").into_bytes()
}

/// A header line without a colon, a 70 kB URI, a 500 kB header block and
/// 101 headers each get their status (400, 414, 431) with a JSON body that
/// names the problem and the way out, over TCP and over the socket alike.
#[test]
fn daemon_answers_requests_it_cannot_parse_in_json() {
    let (_s, d) = daemon();
    let long_uri = format!("GET /v1/jobs?x={} HTTP/1.1", "a".repeat(70_000));
    let big_block: String = (0..500)
        .map(|i| format!("X-Pad-{i}: {}\r\n", "b".repeat(1000)))
        .collect();
    let many: String = (0..101).map(|i| format!("X-H{i}: v\r\n")).collect();
    let cases: [(&str, Vec<u8>, u16, &str, &str); 6] = [
        (
            "a header line without a colon",
            head_with("GET /v1/jobs HTTP/1.1", "this is not a header\r\n"),
            400,
            "bad_request",
            "Name: value",
        ),
        (
            "a method that is no token",
            head_with("G(T /v1/jobs HTTP/1.1", ""),
            400,
            "bad_request",
            "METHOD /path HTTP/1.1",
        ),
        (
            "a Content-Length that is no number",
            head_with("POST /v1/tick HTTP/1.1", "Content-Length: abc\r\n"),
            400,
            "bad_request",
            "content-length",
        ),
        (
            "a 70 kB URI",
            head_with(&long_uri, ""),
            414,
            "uri_too_long",
            "65534 bytes",
        ),
        (
            "a 500 kB header block",
            head_with("GET /v1/jobs HTTP/1.1", &big_block),
            431,
            "headers_too_large",
            "fewer or smaller headers",
        ),
        (
            "101 headers",
            head_with("GET /v1/jobs HTTP/1.1", &many),
            431,
            "headers_too_large",
            "100 header",
        ),
    ];
    for (what, raw, status, code, hint) in &cases {
        for socket in [false, true] {
            let what = format!("{what} over {}", if socket { "the socket" } else { "TCP" });
            let a = only(&send(&d, socket, raw));
            assert_json_error(&what, &a, *status, code, hint);
        }
    }
    // Nothing of it reached a handler, and the daemon serves on.
    assert_eq!(d.get("/healthz").status, 200);
    assert_eq!(d.request("GET", "/v1/jobs", &[], "").status, 200);
}

/// On a kept-alive connection, a good request's answer goes out whole and
/// as it was, and a malformed one after it is answered in JSON.
#[test]
fn daemon_answers_a_malformed_request_after_a_good_one_on_one_connection() {
    let (_s, d) = daemon();
    let mut raw = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n".to_vec();
    raw.extend_from_slice(&head_with("GET /v1/jobs HTTP/1.1", "bad header\r\n"));
    for socket in [false, true] {
        let out = send(&d, socket, &raw);
        let (first, rest) = Answer::parse(&out);
        assert_eq!(first.status, 200, "{:?}", String::from_utf8_lossy(&out));
        assert_eq!(first.json()["ok"], true);
        assert_eq!(first.header("connection"), None, "{first:?}");
        let second = only(rest);
        assert_json_error("the second request", &second, 400, "bad_request", "CRLF");
    }
}

/// Well-formed requests on one connection are answered as they always were
/// (nothing held back, nothing added): three in a row, then the client's
/// own close.
#[test]
fn daemon_answers_well_formed_requests_kept_alive_as_before() {
    let (_s, d) = daemon();
    let one = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n";
    let mut raw = one.repeat(2);
    raw.extend_from_slice(
        b"GET /v1/nothing HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
    );
    for socket in [false, true] {
        let out = send(&d, socket, &raw);
        let (a, rest) = Answer::parse(&out);
        let (b, rest) = Answer::parse(rest);
        let c = only(rest);
        assert_eq!((a.status, b.status), (200, 200));
        assert_eq!(a.body, b.body);
        assert_eq!(c.status, 404);
        assert_eq!(c.json()["error"]["code"], "not_found");
    }
}

/// A body past what the daemon reads (2 MiB) is `413 too_large`, and the
/// message says the limit.
#[test]
fn daemon_answers_a_body_past_the_limit_with_the_limit() {
    let (_s, d) = daemon();
    let body = " ".repeat(3 << 20);
    let mut raw = format!(
        "POST /v1/tick HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    raw.extend_from_slice(body.as_bytes());
    let a = Answer::parse(&send(&d, true, &raw)).0;
    assert_eq!(a.status, 413, "{a:?}");
    assert_eq!(a.header("content-type"), Some("application/json"));
    let j = a.json();
    assert_eq!(j["error"]["code"], "too_large");
    let message = j["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("2097152 bytes"), "{message}");
    // Declared over the limit: refused on its head, the body never asked
    // for (no `100 Continue`) nor waited for.
    let head = "POST /v1/tick HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                Expect: 100-continue\r\nContent-Length: 3145728\r\n\r\n";
    let answer = send(&d, false, head.as_bytes());
    assert!(
        answer.starts_with(b"HTTP/1.1 413 "),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
    assert_eq!(
        Answer::parse(&answer).0.json()["error"]["code"],
        "too_large"
    );
}
