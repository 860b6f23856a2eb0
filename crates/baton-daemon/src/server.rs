//! Serving the API on a listener until the stop ([`spawn`]): each
//! connection it admits is served on a task of its own
//! ([`crate::connection`]), knowing its caller ([`Caller`]).
//!
//! At the stop it accepts no more, tells every connection to finish the
//! exchange in hand, and ends once they all have; the daemon bounds that
//! wait. What it never does: read or write a connection itself, or serve
//! one its listener did not admit (the cap of [`crate::capped`] decides).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::serve::Listener;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::peer::Caller;
use crate::state::Daemon;

/// Serves the API on `listener` until the stop, on a task of its own; the
/// task ends when every connection has.
pub(crate) fn spawn<L>(mut listener: L, d: &Arc<Daemon>) -> JoinHandle<()>
where
    L: Listener,
    L::Io: Caller + AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let router = crate::api::app(Arc::clone(d));
    let d = Arc::clone(d);
    tokio::spawn(async move {
        let (stop, stopped) = watch::channel(false);
        let mut open = JoinSet::new();
        let mut stop_requested = std::pin::pin!(d.stop_requested.notified());
        stop_requested.as_mut().enable();
        // Enabled first: a stop from here on is not missed.
        if !d.stopping.load(Ordering::SeqCst) {
            loop {
                tokio::select! {
                    () = &mut stop_requested => break,
                    (io, _) = listener.accept() => {
                        let peer = io.peer();
                        open.spawn(crate::connection::serve(io, peer, router.clone(), stopped.clone()));
                    }
                    Some(_) = open.join_next(), if !open.is_empty() => {}
                }
            }
        }
        drop(listener);
        stop.send_replace(true);
        while open.join_next().await.is_some() {}
    })
}
