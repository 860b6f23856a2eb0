//! `baton __http`: sends one HTTP step's request and says how it went, in
//! its exit code and in one line of output, which the runner captures into
//! the step's log. The contract (where the request comes from, the
//! `Baton-*` headers, what each exit code means) is
//! [`baton_sched::http`]'s:
//!
//! | exit | when |
//! | --- | --- |
//! | 0 | 2xx |
//! | 1 | 5xx, 3xx or any other status that is not 2xx or 4xx |
//! | 2 | `$BATON_HTTP_REQUEST` is missing or not a valid request |
//! | 7 | no answer: DNS, refused, reset, TLS, a broken response |
//! | 22 | 4xx: never retried by the scheduler |
//!
//! Only the runner starts it, as a step, so the step's timeout, kill,
//! output capture and retries apply to it: it never retries, waits or
//! times out by itself, and never reads the clock. It follows redirects for
//! GET only: a request that changes something is never sent again to
//! another place.

use std::io::Read;

use baton_sched::engine::trace::TraceParent;
use baton_sched::http::{self, HttpRequest};
use ureq::http as h;

use baton_sched::http::HttpExit;

use crate::exit::Exit;

/// How much of the response body is read, in bytes.
const READ_AT_MOST: u64 = 4096;
/// How much of it is shown, in characters.
const SHOWN: usize = 200;
/// Redirects a GET follows.
const GET_REDIRECTS: u32 = 5;

/// Sends the request in `$BATON_HTTP_REQUEST`.
pub fn run() -> Exit {
    let Some(text) = std::env::var_os(http::REQUEST_ENV) else {
        say!(
            "baton __http: {} is not set: this command sends an HTTP step's request, \
             and only the scheduler runs it",
            http::REQUEST_ENV
        );
        return Exit::Http(HttpExit::Invalid);
    };
    let request = match HttpRequest::decode(&text.to_string_lossy()) {
        Ok(r) => r,
        Err(e) => {
            say!(
                "baton __http: {} is not a valid request: {e}",
                http::REQUEST_ENV
            );
            return Exit::Http(HttpExit::Invalid);
        }
    };
    let mut run_headers: Vec<(&str, String)> = http::RUN_HEADERS
        .iter()
        .filter_map(|(header, var)| Some((*header, std::env::var(var).ok()?)))
        .collect();
    // A traced attempt's context goes on as W3C's header, so that the
    // server's spans join the run's trace; a request that sets its own
    // keeps it.
    let own = request
        .headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("traceparent"));
    if let Some(p) = TraceParent::from_env()
        && !own
    {
        run_headers.push(("traceparent", p.to_string()));
    }
    match send(&request, &run_headers) {
        Ok((status, body)) => {
            let reason = status.canonical_reason().unwrap_or("");
            outln!("HTTP {} {reason}: {}", status.as_u16(), shown(&body));
            Exit::Http(verdict(status))
        }
        Err(Failure::Request(e)) => {
            say!("baton __http: cannot send {request}: {e}");
            Exit::Http(HttpExit::Invalid)
        }
        Err(Failure::Unreachable(e)) => {
            say!("baton __http: failed to send {request}: {e}");
            Exit::Http(HttpExit::Unreachable)
        }
    }
}

/// What an answer's status means.
fn verdict(status: h::StatusCode) -> HttpExit {
    if status.is_success() {
        HttpExit::Ok
    } else if status.is_client_error() {
        HttpExit::ClientError
    } else {
        HttpExit::Failed
    }
}

/// Why no status came back.
enum Failure {
    /// The request itself cannot be built (a URL the client cannot use).
    Request(String),
    /// The server could not be reached, or its answer was broken.
    Unreachable(ureq::Error),
}

/// Sends `r` with the run's headers; returns the status and the start of
/// the body.
fn send(
    r: &HttpRequest,
    run_headers: &[(&str, String)],
) -> Result<(h::StatusCode, Vec<u8>), Failure> {
    let redirects = if r.method == "GET" { GET_REDIRECTS } else { 0 };
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .allow_non_standard_methods(true)
        .max_redirects(redirects)
        .user_agent(format!("baton/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let method =
        h::Method::from_bytes(r.method.as_bytes()).map_err(|e| Failure::Request(e.to_string()))?;
    let mut builder = h::Request::builder().method(method).uri(&r.url);
    for (name, value) in &r.headers {
        builder = builder.header(name, value);
    }
    for (name, value) in run_headers {
        builder = builder.header(*name, value);
    }
    let answer = match &r.body {
        Some(body) => builder
            .body(body.clone())
            .map_err(|e| Failure::Request(e.to_string()))
            .and_then(|req| agent.run(req).map_err(classify)),
        None => builder
            .body(())
            .map_err(|e| Failure::Request(e.to_string()))
            .and_then(|req| agent.run(req).map_err(classify)),
    };
    let mut response = answer?;
    let mut body = Vec::new();
    // A body cut short still leaves the status to judge by.
    let _ = response
        .body_mut()
        .as_reader()
        .take(READ_AT_MOST)
        .read_to_end(&mut body);
    Ok((response.status(), body))
}

/// Sorts the client's error: a request it could not build, or no usable
/// answer.
fn classify(e: ureq::Error) -> Failure {
    match e {
        ureq::Error::BadUri(_) | ureq::Error::Http(_) => Failure::Request(e.to_string()),
        other => Failure::Unreachable(other),
    }
}

/// The start of a body, on one line.
fn shown(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text
        .chars()
        .take(SHOWN)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > SHOWN || body.len() as u64 >= READ_AT_MOST {
        out.push('…');
    }
    let out = out.trim().to_owned();
    if out.is_empty() {
        "(empty body)".into()
    } else {
        out
    }
}
