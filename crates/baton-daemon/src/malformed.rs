//! The API's answer to a request hyper could not parse, sent in place of
//! the one hyper made itself ([`instead`]).
//!
//! hyper refuses such a request before the router sees it, with a status
//! (400, 414 or 431), `content-length: 0` and no body. The answer made
//! here keeps what hyper decided (its status, its version and its date)
//! and carries what every other error of the API does: the JSON of
//! [`ApiError`], `Content-Type: application/json`, and a message saying
//! what was wrong and what to do; and `Connection: close`, since hyper
//! reads nothing more from that connection. A client that opens with
//! HTTP/2's preface is answered in HTTP/2, with a GOAWAY saying HTTP/1.1 is
//! required ([`http1_required`]).
//!
//! What it never does: stand in for anything but such a bodiless answer
//! of hyper's (anything else is sent on as it was), or tell the caller
//! more about the request than what was wrong with it.

use axum::http::StatusCode;

use crate::error::{ApiError, code_of};
use crate::limits::{HEAD_BYTES, MAX_HEADERS, MAX_URI};

/// What the API answers to a request hyper refused with `status`; `why`
/// is hyper's word for what it could not parse.
fn refusal(status: StatusCode, why: &str) -> ApiError {
    let message = match status {
        StatusCode::BAD_REQUEST => format!(
            "the daemon could not read the request as HTTP/1.1 ({why}): send a request line \
             `METHOD /path HTTP/1.1`, then header lines `Name: value`, each line ending in CRLF, \
             and an empty line after the headers"
        ),
        StatusCode::URI_TOO_LONG => format!(
            "the request's URI is longer than {MAX_URI} bytes, the most the daemon reads: \
             shorten its path and query"
        ),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => format!(
            "the request's head is larger than the daemon reads (at most {MAX_HEADERS} header \
             lines, and about {HEAD_BYTES} bytes of request line and headers, as they arrive): \
             send fewer or smaller headers"
        ),
        _ => format!("the daemon could not read the request ({why})"),
    };
    ApiError::new(status, code_of(status), message)
}

/// What the daemon sends a client that opened with HTTP/2's preface
/// (`PRI * HTTP/2.0`, prior knowledge), which hyper refuses without a word:
/// the server's preface (an empty SETTINGS frame) and a GOAWAY that
/// processed no stream, with `HTTP_1_1_REQUIRED` (RFC 9113, 7) and a
/// sentence of debug data: the client is told why in its own protocol
/// (curl says `received GOAWAY, error=13`) rather than meeting a closed
/// connection.
pub(crate) fn http1_required() -> Vec<u8> {
    const SETTINGS: u8 = 0x4;
    const GOAWAY: u8 = 0x7;
    const HTTP_1_1_REQUIRED: u32 = 0xd;
    let said = b"the baton daemon speaks HTTP/1.1 only: send the request over HTTP/1.1";
    let mut payload = Vec::with_capacity(8 + said.len());
    payload.extend_from_slice(&0u32.to_be_bytes());
    payload.extend_from_slice(&HTTP_1_1_REQUIRED.to_be_bytes());
    payload.extend_from_slice(said);
    let frame = |kind: u8, payload: &[u8]| {
        let len = u32::try_from(payload.len()).unwrap_or(0).to_be_bytes();
        let mut f = vec![len[1], len[2], len[3], kind, 0, 0, 0, 0, 0];
        f.extend_from_slice(payload);
        f
    };
    let mut out = frame(SETTINGS, &[]);
    out.extend(frame(GOAWAY, &payload));
    out
}

/// The bytes to send instead of `held`, hyper's own answer to a request
/// it could not parse (`why`, as hyper says it); `None` when `held` is no
/// such answer: one whole head and nothing after it, a 4xx status,
/// `content-length: 0`, no type.
pub(crate) fn instead(held: &[u8], why: &str) -> Option<Vec<u8>> {
    let mut headers = [httparse::EMPTY_HEADER; 8];
    let mut head = httparse::Response::new(&mut headers);
    match head.parse(held) {
        Ok(httparse::Status::Complete(n)) if n == held.len() => {}
        _ => return None,
    }
    let status = head
        .code
        .and_then(|c| StatusCode::from_u16(c).ok())
        .filter(StatusCode::is_client_error)?;
    let header = |name: &str| {
        head.headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case(name))
            .map(|h| h.value)
    };
    let bodiless = header("content-length") == Some(b"0".as_slice())
        && header("content-type").is_none()
        && header("transfer-encoding").is_none();
    if !bodiless {
        return None;
    }
    let date = header("date").and_then(|d| std::str::from_utf8(d).ok());
    let body = serde_json::to_vec(&refusal(status, why).body()).ok()?;
    let mut out = format!(
        "HTTP/1.{} {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n",
        head.version.unwrap_or(1),
        status.as_str(),
        status.canonical_reason().unwrap_or("Error"),
        body.len()
    );
    if let Some(date) = date {
        out.push_str("date: ");
        out.push_str(date);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "Sat, 05 Dec 2026 23:42:14 GMT";

    fn hypers(status: &str) -> Vec<u8> {
        format!(
            "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: 0\r\ndate: {DATE}\r\n\r\n"
        )
        .into_bytes()
    }

    /// The answer's status line, its headers, and its body as JSON.
    fn read(answer: &[u8]) -> (String, Vec<String>, serde_json::Value) {
        let text = std::str::from_utf8(answer).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        let mut lines = head.lines().map(str::to_owned);
        let status = lines.next().unwrap();
        (status, lines.collect(), serde_json::from_str(body).unwrap())
    }

    #[test]
    fn each_of_hypers_refusals_becomes_the_apis_json_with_its_status_and_date() {
        for (status, code, says) in [
            (
                "400 Bad Request",
                "bad_request",
                "(invalid HTTP header parsed)",
            ),
            (
                "414 URI Too Long",
                "uri_too_long",
                "longer than 65534 bytes",
            ),
            (
                "431 Request Header Fields Too Large",
                "headers_too_large",
                "at most 100 header lines, and about 417792 bytes",
            ),
        ] {
            let answer = instead(&hypers(status), "invalid HTTP header parsed").unwrap();
            let (line, headers, body) = read(&answer);
            assert_eq!(line, format!("HTTP/1.1 {status}"));
            let body_len =
                answer.len() - answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap() - 4;
            assert_eq!(
                headers,
                [
                    "content-type: application/json".to_owned(),
                    format!("content-length: {body_len}"),
                    "connection: close".to_owned(),
                    format!("date: {DATE}"),
                ]
            );
            assert_eq!(body["error"]["code"], code);
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(says), "{message}");
            assert_eq!(body.as_object().unwrap().len(), 1, "{body}");
        }
    }

    #[test]
    fn the_version_hyper_answered_in_is_kept() {
        let held = b"HTTP/1.0 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        let (line, headers, _) = read(&instead(held, "invalid URI").unwrap());
        assert_eq!(line, "HTTP/1.0 400 Bad Request");
        assert!(
            !headers.iter().any(|h| h.starts_with("date")),
            "{headers:?}"
        );
    }

    #[test]
    fn nothing_but_a_whole_bodiless_refusal_is_stood_in_for() {
        for held in [
            b"".as_slice(),
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nmore",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            b"{\"ok\":true}",
        ] {
            assert_eq!(
                instead(held, "x"),
                None,
                "{:?}",
                String::from_utf8_lossy(held)
            );
        }
    }
}
