//! Listeners that keep at most a fixed number of connections open at once
//! ([`Capped`]): a connection past the cap is closed as soon as it is
//! accepted, before a byte of it is read.
//!
//! Every local user can reach the TCP port, loopback included, and a
//! connection holds a descriptor from the moment it is accepted, before any
//! token is checked. Without a cap, a user holding a thousand idle
//! connections took every descriptor the daemon had, and with them every
//! pipe and process its runs need: the schedule stopped. With one, such a
//! user can keep the API busy while they hold them; the clock, the runs and
//! the socket's callers go on.
//!
//! What it never does: read from a connection, or close one it admitted
//! (its driver does, `connection`, when its caller or the server is done).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most TCP connections open at once, across every address.
pub(crate) const TCP_CONNECTIONS: usize = 256;
/// The most connections on the Unix socket open at once.
pub(crate) const SOCKET_CONNECTIONS: usize = 64;

/// `inner`, admitting a connection only while one of `open`'s permits is
/// free; the connection holds it until it is dropped.
pub(crate) struct Capped<L> {
    inner: L,
    open: Arc<Semaphore>,
}

impl<L> Capped<L> {
    /// `inner`, sharing the cap `open` with the listeners given it too.
    pub(crate) fn new(inner: L, open: Arc<Semaphore>) -> Self {
        Self { inner, open }
    }
}

/// An admitted connection and its place under the cap.
pub(crate) struct Admitted<I> {
    /// The connection.
    pub(crate) io: I,
    _permit: OwnedSemaphorePermit,
}

impl<L: Listener> Listener for Capped<L> {
    type Io = Admitted<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (io, addr) = self.inner.accept().await;
            if let Ok(permit) = Arc::clone(&self.open).try_acquire_owned() {
                return (
                    Admitted {
                        io,
                        _permit: permit,
                    },
                    addr,
                );
            }
            // Past the cap: closed unread.
            drop(io);
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Admitted<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Admitted<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
