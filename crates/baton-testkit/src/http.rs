//! A small HTTP server for tests of HTTP steps: a real socket on
//! `127.0.0.1`, one thread, one request per connection. It records every
//! request (method, path, headers, body) before it answers, and answers
//! from a script of statuses; [`Answer::Silent`] reads the request and
//! never answers, for timeouts. It serves tests only: it understands just
//! enough HTTP/1.1 for one request with a `Content-Length` body.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the server does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Answers with this status and a short body.
    Status(u16),
    /// Reads the request and never answers (the connection stays open).
    Silent,
}

/// One request as the server received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `POST`.
    pub method: String,
    /// `/hook?x=1`.
    pub path: String,
    /// Every header, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Seen {
    /// The value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running test server. Dropping it stops it.
pub struct TestServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    /// Starts a server that answers the n-th request with `script[n]`, and
    /// every request past the script with its last answer.
    ///
    /// # Panics
    ///
    /// When no socket can be bound on `127.0.0.1`, or the script is empty.
    pub fn start(script: &[Answer]) -> Self {
        assert!(!script.is_empty(), "a server needs at least one answer");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local_addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script = script.to_vec();
        let (seen2, stop2) = (Arc::clone(&seen), Arc::clone(&stop));
        std::thread::spawn(move || {
            // Silent connections are kept here, open, until the server stops.
            let mut held: Vec<TcpStream> = Vec::new();
            for (n, conn) in listener.incoming().enumerate() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                let answer = script[n.min(script.len() - 1)];
                if let Some(stream) = serve(stream, answer, &seen2) {
                    held.push(stream);
                }
            }
        });
        Self { addr, seen, stop }
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .expect("the server thread never panics")
            .clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// A URL on `127.0.0.1` where nothing listens: a port that was just bound
/// and released.
pub fn closed_url(path: &str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local_addr");
    drop(listener);
    format!("http://{addr}{path}")
}

/// Reads one request, records it and answers; returns the stream to keep
/// open for a silent answer.
fn serve(stream: TcpStream, answer: Answer, seen: &Mutex<Vec<Seen>>) -> Option<TcpStream> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).ok()? == 0 {
            break;
        }
        let h = h.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let length = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    seen.lock().expect("poisoned").push(Seen {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let mut stream = reader.into_inner();
    match answer {
        Answer::Silent => Some(stream),
        Answer::Status(code) => {
            let text = format!("answer {code}");
            let _ = write!(
                stream,
                "HTTP/1.1 {code} Test\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.flush();
            None
        }
    }
}
