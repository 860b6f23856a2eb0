//! A small HTTP/1.1 client for tests that speak to a real daemon over
//! loopback or its Unix socket: one request per connection (`Connection:
//! close`), the whole answer read, nothing hidden (status, headers and body
//! as sent).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::Path;

use crate::PATIENCE;

/// An answer.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Answer {
    /// The body as JSON; panics with the body when it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `method path` to `addr` with `headers` and `body`. A JSON body
/// gets no Content-Type unless `headers` gives one.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Answer> {
    let mut s = TcpStream::connect_timeout(&addr, PATIENCE)?;
    s.set_read_timeout(Some(PATIENCE))?;
    exchange(&mut s, &addr.to_string(), method, path, headers, body)
}

/// Sends `method path` over the Unix socket at `socket` (with `Host:
/// localhost` unless `headers` gives one), as [`request`] does over TCP.
/// Connecting is refused as the kernel refuses it (`PermissionDenied` for
/// a socket this thread's user may not write).
pub fn request_unix(
    socket: &Path,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Answer> {
    let mut s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(PATIENCE))?;
    exchange(&mut s, "localhost", method, path, headers, body)
}

fn exchange(
    s: &mut (impl Read + Write),
    host: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> std::io::Result<Answer> {
    let mut req = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {host}\r\n"));
    }
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes())?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    Ok(Answer::parse(&raw).0)
}

impl Answer {
    /// The first answer in `raw` (what a connection sent back) and the bytes
    /// after it: its body is as long as its `Content-Length` says, or
    /// chunked, or the rest when it says neither.
    pub fn parse(raw: &[u8]) -> (Self, &[u8]) {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(raw.len(), |i| i + 4);
        let head = String::from_utf8_lossy(&raw[..end]);
        let mut lines = head.lines();
        let status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let rest = &raw[end..];
        let chunked = headers
            .iter()
            .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
        let length = headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok());
        let (body, after) = if chunked {
            (dechunk(&String::from_utf8_lossy(rest)), &rest[rest.len()..])
        } else if let Some(n) = length.filter(|n| *n <= rest.len()) {
            (String::from_utf8_lossy(&rest[..n]).into_owned(), &rest[n..])
        } else {
            (
                String::from_utf8_lossy(rest).into_owned(),
                &rest[rest.len()..],
            )
        };
        (
            Self {
                status,
                headers,
                body,
            },
            after,
        )
    }
}

/// Sends `raw` to `addr` as it is, however malformed, and reads until the
/// daemon closes the connection: all it sent back. The bytes are written
/// from another thread, so an answer sent before the daemon read them all
/// is read, not lost to a write that blocks.
pub fn raw(addr: SocketAddr, raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let s = TcpStream::connect_timeout(&addr, PATIENCE)?;
    s.set_read_timeout(Some(PATIENCE))?;
    let w = s.try_clone()?;
    send_raw(s, w, raw)
}

/// [`raw`] over the Unix socket at `socket`.
pub fn raw_unix(socket: &Path, raw: &[u8]) -> std::io::Result<Vec<u8>> {
    let s = UnixStream::connect(socket)?;
    s.set_read_timeout(Some(PATIENCE))?;
    let w = s.try_clone()?;
    send_raw(s, w, raw)
}

fn send_raw(
    mut r: impl Read,
    mut w: impl Write + Send + 'static,
    raw: &[u8],
) -> std::io::Result<Vec<u8>> {
    let bytes = raw.to_vec();
    // A write the daemon cut short (it answered and closed) is no failure:
    // what it answered is read below.
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(&bytes);
    });
    let mut out = Vec::new();
    let read = r.read_to_end(&mut out);
    let _ = writer.join();
    match read {
        Ok(_) => Ok(out),
        // Reset after an answer: the answer is what counts.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !out.is_empty() => Ok(out),
        Err(e) => Err(e),
    }
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// `GET path`.
pub fn get(addr: SocketAddr, path: &str) -> Answer {
    request(addr, "GET", path, &[], "").unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

/// `POST path` with a JSON body and its Content-Type.
pub fn post(addr: SocketAddr, path: &str, body: &str) -> Answer {
    request(
        addr,
        "POST",
        path,
        &[("Content-Type", "application/json")],
        body,
    )
    .unwrap_or_else(|e| panic!("POST {path}: {e}"))
}
