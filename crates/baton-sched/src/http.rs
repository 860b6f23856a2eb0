//! HTTP steps: the request a step sends instead of running a command, and
//! the contract between the scheduler and `baton __http`, the hidden
//! subcommand that sends it.
//!
//! This module owns what an HTTP step may say (an `http://` or `https://`
//! URL, a method that is an HTTP token, an optional body, headers that are
//! valid and none of them `Baton-*`), how the request travels to the
//! sending process ([`REQUEST_ENV`], one JSON object), the headers that
//! name the run ([`RUN_HEADERS`]), and what the sender's exit codes mean
//! ([`HttpExit`]).
//! It never sends anything and never spawns anything: the runner starts
//! `baton __http` as it starts every step, so a step's timeout, kill,
//! output capture, logs and retries apply to an HTTP step unchanged.
//!
//! # Exit codes of `baton __http`
//!
//! | code | meaning | retried |
//! | --- | --- | --- |
//! | 0 | the server answered 2xx | (success) |
//! | 1 | the server answered 5xx, 3xx or another status that is not 2xx | as any failed step |
//! | 2 | the request in [`REQUEST_ENV`] is missing or invalid | never (as exit 2 of any step) |
//! | 7 | no answer: DNS, connection refused or reset, TLS, a broken response | as any failed step |
//! | 22 | the server answered 4xx: the request itself is wrong | never, whatever `retries` says |
//!
//! A step's `timeout` kills the sender as it kills any step (exit 124).

use serde::{Deserialize, Serialize};

/// The hidden subcommand that sends an HTTP step's request.
pub const SUBCOMMAND: &str = "__http";

/// The environment variable that carries the request (one JSON object) to
/// `baton __http`. The environment, not an argument: a header or a body may
/// hold a secret, and a process's environment is readable only by its user.
pub const REQUEST_ENV: &str = "BATON_HTTP_REQUEST";

/// The headers that name the run, each with the variable of the step's
/// environment it is read from. The receiver may refuse a stale writer by
/// its `Baton-Fence`: a run that lost its lease has a smaller fence than the
/// run that took over.
pub const RUN_HEADERS: &[(&str, &str)] = &[
    ("Baton-Job", "BATON_JOB"),
    ("Baton-Occurrence", "BATON_OCCURRENCE"),
    ("Baton-Run-Id", "BATON_RUN_ID"),
    ("Baton-Fence", "BATON_FENCE"),
];

/// How `baton __http` ended: the protocol between an HTTP step and the
/// process that sends its request. The sender exits with
/// [`HttpExit::code`]; the scheduler reads the step's exit code back with
/// [`HttpExit::of_code`]. This is the one place that knows the numbers (the
/// table above).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpExit {
    /// The server answered 2xx (exit 0).
    Ok,
    /// The server answered a status that is neither 2xx nor 4xx (exit 1).
    Failed,
    /// The request it was given is missing or invalid (exit 2).
    Invalid,
    /// No answer: DNS, refused, reset, TLS, a broken response (exit 7).
    Unreachable,
    /// The server answered 4xx (exit 22). Never retried.
    ClientError,
}

impl HttpExit {
    /// The number the sender exits with.
    pub const fn code(self) -> u8 {
        match self {
            Self::Ok => 0,
            Self::Failed => 1,
            Self::Invalid => 2,
            Self::Unreachable => 7,
            Self::ClientError => 22,
        }
    }

    /// What the sender's exit `code` says; `None` for a number it never
    /// exits with (a step killed by its timeout exits 124, say).
    pub fn of_code(code: i32) -> Option<Self> {
        [
            Self::Ok,
            Self::Failed,
            Self::Invalid,
            Self::Unreachable,
            Self::ClientError,
        ]
        .into_iter()
        .find(|e| i32::from(e.code()) == code)
    }
}

/// The request an HTTP step sends. Valid once it exists: [`HttpRequest::new`]
/// checks every part, and the sender checks again what it decodes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpRequest {
    /// `http://…` or `https://…`.
    pub url: String,
    /// An HTTP token, in upper case (`POST` unless set).
    pub method: String,
    /// The body, if any.
    pub body: Option<String>,
    /// Extra headers, in the order written; none is `Baton-*`.
    pub headers: Vec<(String, String)>,
}

/// Why an HTTP step's request cannot be sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidHttp {
    /// The URL is not an absolute `http://` or `https://` URL with a host.
    #[error("= {0:?}: expected an http:// or https:// URL with a host")]
    Url(String),
    /// A port that is not a number from 1 to 65535.
    #[error("= {0:?}: the port must be a number from 1 to 65535")]
    Port(String),
    /// The method is not an HTTP token.
    #[error("= {0:?}: expected an HTTP method such as \"POST\", \"PUT\" or \"GET\"")]
    Method(String),
    /// `CONNECT` opens a tunnel; it sends no request.
    #[error("= \"CONNECT\": a step cannot open a tunnel; use another method")]
    Connect,
    /// `HEAD` with a body.
    #[error("a HEAD request has no body: remove body, or use another method")]
    BodyWithHead,
    /// A header name that is not an HTTP token.
    #[error("{0:?} is not a valid header name (letters, digits and !#$%&'*+-.^_`|~)")]
    HeaderName(String),
    /// A header value with a control character, or surrounding whitespace.
    #[error(
        "= {1:?}: a header value may not hold control characters (such as a newline) or start \
         or end with whitespace"
    )]
    HeaderValue(String, String),
    /// A header baton sets itself.
    #[error(
        "{0:?}: Baton-* headers are baton's own (it sends Baton-Job, Baton-Occurrence, Baton-Run-Id and Baton-Fence); choose another name"
    )]
    Reserved(String),
    /// A header that frames the body, which the sender does itself.
    #[error("{0:?}: the body's framing is set by baton; remove it")]
    Framing(String),
    /// Two headers of the same name.
    #[error("{0:?} is given twice")]
    Duplicate(String),
}

/// Why a text is not a request [`HttpRequest::encode`] wrote.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UndecodableHttp {
    /// The text is not such a request's JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// The request is not valid.
    #[error(transparent)]
    Invalid(#[from] InvalidHttp),
}

impl HttpRequest {
    /// A checked request; `method` is upper-cased.
    ///
    /// # Errors
    ///
    /// The first part that is not valid, as [`InvalidHttp`].
    ///
    /// # Example
    ///
    /// ```
    /// use baton_sched::http::HttpRequest;
    /// let r = HttpRequest::new("https://example.invalid/hook", "post", None, vec![]).unwrap();
    /// assert_eq!(r.method, "POST");
    /// assert!(HttpRequest::new("ftp://example.invalid/", "POST", None, vec![]).is_err());
    /// ```
    pub fn new(
        url: &str,
        method: &str,
        body: Option<String>,
        headers: Vec<(String, String)>,
    ) -> Result<Self, InvalidHttp> {
        check_url(url)?;
        let method = check_method(method)?;
        if method == "HEAD" && body.is_some() {
            return Err(InvalidHttp::BodyWithHead);
        }
        let mut seen: Vec<String> = Vec::new();
        for (name, value) in &headers {
            check_header(name, value)?;
            let lower = name.to_ascii_lowercase();
            if seen.contains(&lower) {
                return Err(InvalidHttp::Duplicate(name.clone()));
            }
            seen.push(lower);
        }
        Ok(Self {
            url: url.to_owned(),
            method,
            body,
            headers,
        })
    }

    /// The request as [`REQUEST_ENV`] carries it.
    pub fn encode(&self) -> String {
        // OK because a struct of strings always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The request [`HttpRequest::encode`] wrote, checked again.
    ///
    /// # Errors
    ///
    /// [`UndecodableHttp`]: text that is not such a request, or a request
    /// that is not valid.
    pub fn decode(text: &str) -> Result<Self, UndecodableHttp> {
        let r: Self = serde_json::from_str(text)?;
        Ok(Self::new(&r.url, &r.method, r.body, r.headers)?)
    }

    /// The TOML that writes it: `{ url = "…", method = "POST", … }`.
    pub fn to_toml(&self) -> String {
        let mut parts = vec![
            format!("url = {:?}", self.url),
            format!("method = {:?}", self.method),
        ];
        if let Some(b) = &self.body {
            parts.push(format!("body = {b:?}"));
        }
        if !self.headers.is_empty() {
            let h: Vec<String> = self
                .headers
                .iter()
                .map(|(k, v)| format!("{} = {v:?}", toml_key(k)))
                .collect();
            parts.push(format!("headers = {{ {} }}", h.join(", ")));
        }
        format!("{{ {} }}", parts.join(", "))
    }
}

impl std::fmt::Display for HttpRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.url)
    }
}

fn toml_key(k: &str) -> String {
    if !k.is_empty()
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        k.to_owned()
    } else {
        format!("{k:?}")
    }
}

/// An HTTP token character (RFC 9110, section 5.6.2).
fn tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(tchar)
}

/// Checks that `url` is an absolute `http://` or `https://` URL with a
/// host, and no control character or space.
pub(crate) fn check_url(url: &str) -> Result<(), InvalidHttp> {
    let bad = || InvalidHttp::Url(url.to_owned());
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("http://")
        .or_else(|| lower.strip_prefix("https://"))
        .ok_or_else(bad)?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    let host = if host.starts_with('[') {
        host.split_inclusive(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    if host.is_empty() || host == "[]" {
        return Err(bad());
    }
    if url.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(bad());
    }
    if !port_ok(url) {
        return Err(InvalidHttp::Port(url.to_owned()));
    }
    Ok(())
}

/// Whether the port of `url` (an `http://` or `https://` URL with a
/// host), if it names one, is a number from 1 to 65535: one past it names
/// no port any server listens on, and `0` none a client can reach.
pub(crate) fn port_ok(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let port = match host.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':'),
        None => host.split_once(':').map(|(_, p)| p),
    };
    port.is_none_or(|p| {
        p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok_and(|n| n > 0)
    })
}

fn check_method(method: &str) -> Result<String, InvalidHttp> {
    if !token(method) {
        return Err(InvalidHttp::Method(method.to_owned()));
    }
    let m = method.to_ascii_uppercase();
    if m == "CONNECT" {
        return Err(InvalidHttp::Connect);
    }
    Ok(m)
}

fn check_header(name: &str, value: &str) -> Result<(), InvalidHttp> {
    if !token(name) {
        return Err(InvalidHttp::HeaderName(name.to_owned()));
    }
    let lower = name.to_ascii_lowercase();
    if lower.starts_with("baton-") {
        return Err(InvalidHttp::Reserved(name.to_owned()));
    }
    if lower == "content-length" || lower == "transfer-encoding" {
        return Err(InvalidHttp::Framing(name.to_owned()));
    }
    let control = value.chars().any(|c| c.is_control() && c != '\t');
    let padded = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    if control || padded {
        return Err(InvalidHttp::HeaderValue(name.to_owned(), value.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(url: &str, method: &str, headers: &[(&str, &str)]) -> Result<HttpRequest, InvalidHttp> {
        let h = headers
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        HttpRequest::new(url, method, None, h)
    }

    #[test]
    fn the_exit_codes_are_the_table_and_read_back() {
        let table = [
            (HttpExit::Ok, 0),
            (HttpExit::Failed, 1),
            (HttpExit::Invalid, 2),
            (HttpExit::Unreachable, 7),
            (HttpExit::ClientError, 22),
        ];
        for (e, code) in table {
            assert_eq!(e.code(), code);
            assert_eq!(HttpExit::of_code(i32::from(code)), Some(e));
        }
        assert_eq!(HttpExit::of_code(124), None);
        assert_eq!(HttpExit::of_code(-1), None);
    }

    #[test]
    fn urls_are_http_or_https_with_a_host() {
        for ok in [
            "http://127.0.0.1:8080/x",
            "https://example.invalid",
            "HTTPS://example.invalid/a?b#c",
            "http://user:pw@[::1]:80/",
        ] {
            assert!(req(ok, "POST", &[]).is_ok(), "{ok}");
        }
        for bad in [
            "ftp://example.invalid/",
            "example.invalid/hook",
            "http://",
            "http:///path",
            "http://:80/",
            "http://a b/",
            "http://example.invalid/\n",
        ] {
            assert_eq!(
                req(bad, "POST", &[]),
                Err(InvalidHttp::Url(bad.into())),
                "{bad}"
            );
        }
        for bad in [
            "http://127.0.0.1:99999/hook",
            "http://127.0.0.1:0/",
            "https://h:65536",
            "http://h:port/",
            "http://user:pw@[::1]:x/",
        ] {
            assert_eq!(
                req(bad, "POST", &[]),
                Err(InvalidHttp::Port(bad.into())),
                "{bad}"
            );
        }
        assert!(req("http://h:65535/", "POST", &[]).is_ok());
        assert!(req("http://user:p:w@h/", "POST", &[]).is_ok());
    }

    #[test]
    fn methods_are_tokens_in_upper_case() {
        assert_eq!(req("http://h/", "patch", &[]).unwrap().method, "PATCH");
        assert_eq!(req("http://h/", "PURGE", &[]).unwrap().method, "PURGE");
        for bad in ["", "GET POST", "PO\nST", "(GET)"] {
            assert!(
                matches!(req("http://h/", bad, &[]), Err(InvalidHttp::Method(_))),
                "{bad:?}"
            );
        }
        assert_eq!(req("http://h/", "connect", &[]), Err(InvalidHttp::Connect));
        assert_eq!(
            HttpRequest::new("http://h/", "HEAD", Some("x".into()), vec![]),
            Err(InvalidHttp::BodyWithHead)
        );
    }

    #[test]
    fn headers_are_valid_and_never_batons_own() {
        assert!(req("http://h/", "POST", &[("X-Token", "a b\tc")]).is_ok());
        assert!(matches!(
            req("http://h/", "POST", &[("baton-fence", "9")]),
            Err(InvalidHttp::Reserved(_))
        ));
        assert!(matches!(
            req("http://h/", "POST", &[("X Bad", "v")]),
            Err(InvalidHttp::HeaderName(_))
        ));
        assert!(matches!(
            req("http://h/", "POST", &[("X", "a\r\nInjected: 1")]),
            Err(InvalidHttp::HeaderValue(..))
        ));
        assert!(matches!(
            req("http://h/", "POST", &[("X", " padded")]),
            Err(InvalidHttp::HeaderValue(..))
        ));
        assert!(matches!(
            req("http://h/", "POST", &[("Content-Length", "3")]),
            Err(InvalidHttp::Framing(_))
        ));
        assert!(matches!(
            req("http://h/", "POST", &[("X-A", "1"), ("x-a", "2")]),
            Err(InvalidHttp::Duplicate(_))
        ));
    }

    #[test]
    fn a_request_survives_its_encoding() {
        let r = HttpRequest::new(
            "https://h/x",
            "put",
            Some("{\"a\": 1}".into()),
            vec![("X-Token".into(), "s3cret".into())],
        )
        .unwrap();
        assert_eq!(HttpRequest::decode(&r.encode()).unwrap(), r);
        assert!(HttpRequest::decode("{}").is_err());
        assert!(
            HttpRequest::decode(
                r#"{"url":"http://h/","method":"POST","body":null,"headers":[["Baton-Fence","1"]]}"#
            )
            .is_err()
        );
    }
}
