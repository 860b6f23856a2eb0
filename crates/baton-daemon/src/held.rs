//! A connection as hyper writes to it, holding back the answer hyper makes
//! of its own accord ([`Held`]).
//!
//! hyper answers a request it cannot parse (a header line that is no
//! header, a URI or a head past what it reads) itself, before the router
//! sees it: a status, `content-length: 0` and no body, then it stops. That
//! is the only thing it can write while it is quiet: when every request
//! that entered the router has its answer done with ([`Exchanges`]) and
//! hyper has flushed since. [`Held`] keeps a write made then back instead
//! of sending it, and the connection's driver ([`crate::connection`]),
//! told by hyper why it stopped, sends the API's JSON in its place.
//!
//! What it never does: reorder, change or lose a byte the router's
//! answers are made of. Anything held that was not hyper's own answer
//! goes out first, as it was, as soon as hyper reads or writes again, or
//! when the driver ends the connection; more than [`HOLD_MAX`] bytes are
//! never held (hyper's own answer is a status line and two headers).

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::exchange::Exchanges;

/// The most bytes held back: far more than hyper's own answer (a status
/// line, `connection`, `content-length` and `date`).
pub(crate) const HOLD_MAX: usize = 1024;

/// `io`, holding back what hyper writes while it is quiet.
pub(crate) struct Held<I> {
    io: I,
    exchanges: Arc<Exchanges>,
    /// How many requests had entered the router when hyper last flushed
    /// with every answer done with; `None` when one was out then, or when
    /// hyper wrote since. A write is held only while the count is still
    /// this one and settled: no request entered since.
    quiet_at: Option<usize>,
    held: Vec<u8>,
    /// How much of `held` went out (it is being sent on).
    sent: usize,
}

impl<I> Held<I> {
    /// `io`, with the requests of its connection counted in `exchanges`.
    pub(crate) fn new(io: I, exchanges: Arc<Exchanges>) -> Self {
        Self {
            io,
            exchanges,
            // Nothing was written yet: as quiet as after a flush.
            quiet_at: Some(0),
            held: Vec::new(),
            sent: 0,
        }
    }

    fn quiet(&self) -> bool {
        self.quiet_at.is_some() && self.exchanges.settled() == self.quiet_at
    }

    /// The connection, and what is held back of it that has not gone out
    /// (empty when nothing is).
    pub(crate) fn into_parts(mut self) -> (I, Vec<u8>) {
        let rest = self.held.split_off(self.sent);
        (self.io, rest)
    }
}

impl<I: AsyncWrite + Unpin> Held<I> {
    /// Sends what is held on, first: hyper reads or writes again, so it was
    /// no answer of its own.
    fn poll_release(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.sent < self.held.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.held[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.held.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }

    /// Whether a write of `len` bytes is held back rather than sent.
    fn holds(&mut self, len: usize) -> bool {
        if self.quiet() && self.sent == 0 && self.held.len() + len <= HOLD_MAX {
            return true;
        }
        self.quiet_at = None;
        false
    }
}

impl<I: AsyncRead + AsyncWrite + Unpin> AsyncRead for Held<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Held<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.holds(buf.len()) {
            self.held.extend_from_slice(buf);
            return Poll::Ready(Ok(buf.len()));
        }
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let len = bufs.iter().map(|b| b.len()).sum();
        if self.holds(len) {
            for b in bufs {
                self.held.extend_from_slice(b);
            }
            return Poll::Ready(Ok(len));
        }
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    /// Flushes what went out; what is held stays held. hyper flushes once
    /// its buffer is empty: with every answer done with, it is quiet from
    /// here.
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(Pin::new(&mut self.io).poll_flush(cx))?;
        self.quiet_at = self.exchanges.settled();
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        ready!(self.poll_release(cx))?;
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    fn held() -> (Held<DuplexStream>, DuplexStream, Arc<Exchanges>) {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        let exchanges = Arc::new(Exchanges::default());
        (Held::new(ours, Arc::clone(&exchanges)), theirs, exchanges)
    }

    /// Everything the other end can read now, without waiting.
    async fn arrived(theirs: &mut DuplexStream) -> Vec<u8> {
        let mut out = vec![0u8; 64 * 1024];
        let n = tokio::time::timeout(std::time::Duration::ZERO, theirs.read(&mut out))
            .await
            .map_or(0, |r| r.unwrap());
        out.truncate(n);
        out
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_write_before_any_request_is_held_and_handed_back() {
        let (mut h, mut theirs, _) = held();
        h.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            .await
            .unwrap();
        h.flush().await.unwrap();
        assert_eq!(arrived(&mut theirs).await, b"");
        let (_, rest) = h.into_parts();
        assert_eq!(rest, b"HTTP/1.1 400 Bad Request\r\n\r\n");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn what_is_held_goes_out_first_when_hyper_reads_again() {
        let (mut h, mut theirs, _) = held();
        h.write_all(b"held").await.unwrap();
        theirs.write_all(b"next").await.unwrap();
        let mut buf = [0u8; 4];
        h.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"next");
        assert_eq!(arrived(&mut theirs).await, b"held");
        assert!(h.into_parts().1.is_empty());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_of_the_routers_goes_out_at_once_to_its_last_byte() {
        let (mut h, mut theirs, exchanges) = held();
        let open = exchanges.begin();
        h.write_all(b"HTTP/1.1 200 OK\r\n").await.unwrap();
        // The body is done with before hyper writes its end.
        drop(open);
        h.write_all(b"content-length: 0\r\n\r\n").await.unwrap();
        h.flush().await.unwrap();
        assert_eq!(
            arrived(&mut theirs).await,
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"
        );
        // Quiet again after the flush: the next write is held.
        h.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(arrived(&mut theirs).await, b"");
        assert_eq!(h.into_parts().1, b"HTTP/1.1 400 Bad Request\r\n\r\n");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_request_that_entered_since_the_flush_ends_the_quiet() {
        let (mut h, mut theirs, exchanges) = held();
        h.flush().await.unwrap();
        // In and out of the router before hyper wrote a byte of its answer.
        drop(exchanges.begin());
        h.write_all(b"answer").await.unwrap();
        assert_eq!(arrived(&mut theirs).await, b"answer");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn more_than_hold_max_is_never_held_and_keeps_its_order() {
        let (mut h, mut theirs, _) = held();
        h.write_all(b"first ").await.unwrap();
        let big = vec![b'x'; HOLD_MAX];
        h.write_all(&big).await.unwrap();
        let mut want = b"first ".to_vec();
        want.extend_from_slice(&big);
        assert_eq!(arrived(&mut theirs).await, want);
        assert!(h.into_parts().1.is_empty());
    }
}
