//! One connection to the API, from its first byte to its close
//! ([`serve`]): hyper's HTTP/1 under the router, with the limits it reads
//! requests by, and the API's JSON in place of the bodiless answer hyper
//! makes itself to a request it cannot parse.
//!
//! hyper writes that answer through [`Held`], which holds it back; when
//! hyper stops and says it stopped on a request it could not parse, the
//! JSON of [`crate::malformed`] goes out instead, then the connection is
//! closed: its write side first, and what the client still sends of the
//! refused request is read and dropped for a while ([`LINGER`], at most
//! [`LINGER_BYTES`]), so that closing does not reset the connection and
//! lose the answer before the client reads it. Any other end sends what
//! was held as it was and closes.
//!
//! At the daemon's stop the exchange in hand may go on for [`STOP_WAIT`],
//! then the connection is closed; a handler already called runs to its end
//! on its own task ([`crate::exchange`]).
//!
//! What it never does: read a request past the limits of
//! [`crate::limits`] (hyper's own, named there), stand in for an answer the
//! router made, or wait on a client after its answer longer than
//! [`LINGER`].

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::watch;

use crate::exchange::{Exchanges, Routed};
use crate::held::Held;
use crate::limits::{HEAD_BYTES, MAX_HEADERS};
use crate::peer::Peer;

/// How long, at most, an exchange in hand at the daemon's stop may go on
/// (a request still arriving, an answer still being read) before its
/// connection is closed.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(1);

/// How long, at most, the rest of a refused request is read after the
/// answer, before the connection is closed.
pub(crate) const LINGER: Duration = Duration::from_secs(2);
/// How much of it is read, at most.
pub(crate) const LINGER_BYTES: usize = 1 << 20;

/// The HTTP/1 server, as every connection is served.
fn http1() -> hyper::server::conn::http1::Builder {
    let mut b = hyper::server::conn::http1::Builder::new();
    // OK because HEAD_BYTES is above hyper's minimum, 8192, the only value
    // that makes this panic.
    b.max_buf_size(HEAD_BYTES).max_headers(MAX_HEADERS);
    // A client that shuts its write side once its request is sent (`socat`,
    // `nc -N`) still reads the answer.
    b.half_close(true);
    b
}

/// Serves `router` on `io`, a connection of `peer`, until the client or
/// hyper ends it; once `stop` holds `true`, hyper finishes the exchange in
/// hand and ends it.
pub(crate) async fn serve<I>(
    io: I,
    peer: Peer,
    router: axum::Router,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let exchanges = Arc::new(Exchanges::default());
    let held = Held::new(io, Arc::clone(&exchanges));
    let mut conn =
        http1().serve_connection(TokioIo::new(held), Routed::new(router, peer, exchanges));
    let mut stopped = std::pin::pin!(stop.wait_for(|s| *s));
    let mut stopping = false;
    let mut cut = std::pin::pin!(tokio::time::sleep(Duration::MAX));
    let ended = std::future::poll_fn(|cx| {
        // A stop (or a server gone) lets the exchange in hand finish, for
        // STOP_WAIT at most.
        if !stopping && stopped.as_mut().poll(cx).is_ready() {
            stopping = true;
            std::pin::Pin::new(&mut conn).graceful_shutdown();
            cut.as_mut().reset(tokio::time::Instant::now() + STOP_WAIT);
        }
        if stopping && cut.as_mut().poll(cx).is_ready() {
            return std::task::Poll::Ready(None);
        }
        conn.poll_without_shutdown(cx).map(Some)
    })
    .await;
    // Cut at the stop: a request still arriving is dropped unanswered (its
    // handler, when one started, runs to its end on its own task).
    let Some(ended) = ended else { return };
    let (mut io, held) = conn.into_parts().io.into_inner().into_parts();
    let answer = match &ended {
        Err(e) if e.is_parse_version_h2() => Some(crate::malformed::http1_required()),
        Err(e) if e.is_parse() => crate::malformed::instead(&held, &e.to_string()),
        _ => None,
    };
    match answer {
        Some(answer) => {
            let _ = tokio::time::timeout(LINGER, refuse(&mut io, &answer)).await;
        }
        None => {
            let _ = io.write_all(&held).await;
            let _ = io.shutdown().await;
        }
    }
}

/// Sends `answer`, closes the write side, and reads what the client still
/// sends, up to [`LINGER_BYTES`], until it closes its side.
async fn refuse<I: AsyncRead + AsyncWrite + Unpin>(io: &mut I, answer: &[u8]) {
    if io.write_all(answer).await.is_err() || io.shutdown().await.is_err() {
        return;
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut left = LINGER_BYTES;
    while left > 0 {
        match io.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::routing::get;
    use tokio::io::DuplexStream;

    use super::*;

    /// A connection to a router of two routes: `/` answers `hello`, and
    /// `/stream` a body of three chunks (no length known ahead).
    fn connect() -> (
        DuplexStream,
        watch::Sender<bool>,
        tokio::task::JoinHandle<()>,
    ) {
        let router = axum::Router::new()
            .route("/", get(|| async { "hello" }))
            .route(
                "/stream",
                get(|| async { axum::body::Body::new(Chunks(vec!["three", "two ", "one "])) }),
            );
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (stop, stopped) = watch::channel(false);
        let served = tokio::spawn(serve(ours, Peer::Tcp, router, stopped));
        (theirs, stop, served)
    }

    /// A body of chunks, the last first, whose length is not known ahead.
    struct Chunks(Vec<&'static str>);

    impl hyper::body::Body for Chunks {
        type Data = axum::body::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
            let next = self.0.pop();
            std::task::Poll::Ready(next.map(|c| Ok(hyper::body::Frame::data(c.into()))))
        }
    }

    /// What the daemon sends for `raw` (written from another task, as a
    /// client would), read until it closes.
    async fn exchange(raw: &[u8]) -> String {
        let (theirs, _stop, served) = connect();
        let (mut r, mut w) = tokio::io::split(theirs);
        let raw = raw.to_vec();
        let writer = tokio::spawn(async move {
            let _ = w.write_all(&raw).await;
            w
        });
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        // The client closes too, which ends the daemon's linger.
        drop(r.unsplit(writer.await.unwrap()));
        served.await.unwrap();
        String::from_utf8(out).unwrap()
    }

    fn json_error(answer: &str) -> (u16, serde_json::Value) {
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains("\r\ncontent-type: application/json\r\n"),
            "{head}"
        );
        assert!(head.contains("\r\nconnection: close\r\n"), "{head}");
        assert!(
            head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())),
            "{head}"
        );
        let status = head[9..12].parse().unwrap();
        (status, serde_json::from_str(body).unwrap())
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_request_hyper_cannot_parse_is_answered_with_the_apis_json() {
        let answer = exchange(b"GET / HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n").await;
        let (status, body) = json_error(&answer);
        assert_eq!(status, 400);
        assert_eq!(body["error"]["code"], "bad_request");
    }

    /// An HTTP/2 client (`curl --http2-prior-knowledge`) is told, in its
    /// own protocol, to use HTTP/1.1: the server's SETTINGS, then a GOAWAY
    /// with `HTTP_1_1_REQUIRED`; before, the connection closed unanswered.
    #[tokio::test(flavor = "current_thread")]
    async fn an_http2_client_is_told_to_use_http1_in_http2() {
        let (theirs, _stop, served) = connect();
        let (mut r, mut w) = tokio::io::split(theirs);
        let writer = tokio::spawn(async move {
            let _ = w.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await;
            // A client's own SETTINGS, empty.
            let _ = w.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await;
            w
        });
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        drop(r.unsplit(writer.await.unwrap()));
        served.await.unwrap();
        // SETTINGS (type 4) on stream 0, empty.
        assert_eq!(out[..9], [0, 0, 0, 4, 0, 0, 0, 0, 0], "{out:?}");
        let goaway = &out[9..];
        let len =
            usize::from(goaway[0]) << 16 | usize::from(goaway[1]) << 8 | usize::from(goaway[2]);
        assert_eq!(goaway.len(), 9 + len, "{out:?}");
        assert_eq!(goaway[3], 7, "a GOAWAY frame");
        assert_eq!(goaway[5..9], [0, 0, 0, 0], "on stream 0");
        assert_eq!(goaway[9..13], [0, 0, 0, 0], "no stream was processed");
        assert_eq!(goaway[13..17], [0, 0, 0, 0x0d], "HTTP_1_1_REQUIRED");
        let said = std::str::from_utf8(&goaway[17..]).unwrap();
        assert!(said.contains("HTTP/1.1"), "{said}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_head_past_the_limit_is_answered_after_the_rest_is_read() {
        // Far past HEAD_BYTES: the client's write of it all completes, so
        // it reads the answer rather than a reset.
        let pad: String = (0..600)
            .map(|i| format!("X-Pad-{i}: {}\r\n", "p".repeat(1000)))
            .collect();
        let raw = format!("GET / HTTP/1.1\r\nHost: x\r\n{pad}\r\n");
        let (status, body) = json_error(&exchange(raw.as_bytes()).await);
        assert_eq!(status, 431);
        assert_eq!(body["error"]["code"], "headers_too_large");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn answers_kept_alive_go_out_as_the_router_made_them() {
        let answer = exchange(
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET /stream HTTP/1.1\r\nHost: x\r\n\r\n\
              GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        let heads: Vec<&str> = answer.matches("HTTP/1.1 200 OK").collect();
        assert_eq!(heads.len(), 3, "{answer}");
        assert!(answer.contains("\r\n\r\nhello"), "{answer}");
        assert!(answer.contains("transfer-encoding: chunked"), "{answer}");
        assert!(
            answer.contains("4\r\none \r\n4\r\ntwo \r\n5\r\nthree\r\n0\r\n\r\n"),
            "{answer}"
        );
        assert!(answer.ends_with("\r\n\r\nhello"), "{answer}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_malformed_request_after_a_streamed_answer_is_answered_in_json() {
        let answer = exchange(
            b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\nbad\r\n\r\n",
        )
        .await;
        let (first, second) = answer.split_once("0\r\n\r\n").unwrap();
        assert!(first.ends_with("5\r\nthree\r\n"), "{answer}");
        let (status, body) = json_error(second);
        assert_eq!(
            (status, &body["error"]["code"]),
            (400, &serde_json::json!("bad_request"))
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_stop_cuts_a_request_still_arriving() {
        let (mut theirs, stop, served) = connect();
        theirs
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Half: ")
            .await
            .unwrap();
        tokio::task::yield_now().await;
        stop.send_replace(true);
        // Never sent whole: without the cut it would wait for ever.
        tokio::time::timeout(Duration::from_secs(60), served)
            .await
            .expect("the connection ends at the stop")
            .unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_handler_cut_off_from_its_client_runs_to_its_end() {
        let done = Arc::new(tokio::sync::Notify::new());
        let began = Arc::new(tokio::sync::Notify::new());
        let (b, d) = (Arc::clone(&began), Arc::clone(&done));
        let router = axum::Router::new().route(
            "/slow",
            get(move || async move {
                b.notify_one();
                // Longer than the connection is let live after the stop.
                tokio::time::sleep(STOP_WAIT * 3).await;
                d.notify_one();
                "done"
            }),
        );
        let (ours, mut theirs) = tokio::io::duplex(1 << 16);
        let (stop, stopped) = watch::channel(false);
        let served = tokio::spawn(serve(ours, Peer::Tcp, router, stopped));
        theirs
            .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        began.notified().await;
        stop.send_replace(true);
        served.await.unwrap();
        // The connection is gone, its answer never sent; the handler ends.
        tokio::time::timeout(Duration::from_secs(60), done.notified())
            .await
            .expect("the handler ran to its end");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_client_that_half_closes_reads_its_answer() {
        let (theirs, _stop, served) = connect();
        let (mut r, mut w) = tokio::io::split(theirs);
        w.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        w.shutdown().await.unwrap();
        let mut out = Vec::new();
        r.read_to_end(&mut out).await.unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
        assert!(out.ends_with("\r\n\r\nhello"), "{out}");
        drop(r.unsplit(w));
        served.await.unwrap();
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_stop_ends_an_idle_connection() {
        let (mut theirs, stop, served) = connect();
        theirs
            .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let mut buf = vec![0u8; 1024];
        let n = theirs.read(&mut buf).await.unwrap();
        assert!(buf[..n].ends_with(b"hello"));
        stop.send_replace(true);
        served.await.unwrap();
        assert_eq!(theirs.read(&mut buf).await.unwrap(), 0);
    }
}
