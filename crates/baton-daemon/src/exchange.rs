//! The router as hyper calls it on one connection ([`Routed`]), counting
//! the requests in it ([`Exchanges`]): how many entered, and whether an
//! answer of one of them is still out (in the router, or its body not yet
//! all handed to hyper). [`crate::held`] reads the count to tell a write
//! of the router's answers from the one answer hyper writes of its own
//! accord (to a request it could not parse, when none is out).
//!
//! Each request is given its caller as `ConnectInfo` ([`Peer`]), which
//! the guard reads, and is handled on a task of its own, which runs to its
//! end even when the client goes away before the answer. What it never
//! does: change a request or an answer;
//! a body is handed on frame by frame, with its size and its end as the
//! router gave them, so hyper frames it as before.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::connect_info::ConnectInfo;
use axum::response::IntoResponse;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::{Request, Response};
use hyper_util::service::TowerToHyperService;

use crate::peer::Peer;

/// The requests of one connection: how many entered the router, and how
/// many of their answers are done with (dropped by hyper, or never made).
#[derive(Debug, Default)]
pub(crate) struct Exchanges {
    started: AtomicUsize,
    finished: AtomicUsize,
}

impl Exchanges {
    /// A request enters the router; it is out until the [`Open`] is
    /// dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> Open {
        self.started.fetch_add(1, Ordering::SeqCst);
        Open(Arc::clone(self))
    }

    /// How many requests entered the router, when every answer to them is
    /// done with; `None` while one is out.
    pub(crate) fn settled(&self) -> Option<usize> {
        let finished = self.finished.load(Ordering::SeqCst);
        let started = self.started.load(Ordering::SeqCst);
        (started == finished).then_some(started)
    }
}

/// A request in the router, or its answer's body in hyper's hands:
/// dropping it ends the exchange.
#[derive(Debug)]
pub(crate) struct Open(Arc<Exchanges>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.finished.fetch_add(1, Ordering::SeqCst);
    }
}

/// The router, as hyper calls it on a connection of `peer`.
#[derive(Clone)]
pub(crate) struct Routed {
    router: TowerToHyperService<axum::Router>,
    peer: Peer,
    exchanges: Arc<Exchanges>,
}

impl Routed {
    /// `router` for a connection of `peer`, counted in `exchanges`.
    pub(crate) fn new(router: axum::Router, peer: Peer, exchanges: Arc<Exchanges>) -> Self {
        Self {
            router: TowerToHyperService::new(router),
            peer,
            exchanges,
        }
    }
}

impl hyper::service::Service<Request<Incoming>> for Routed {
    type Response = Response<Answer>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        req.extensions_mut().insert(ConnectInfo(self.peer.clone()));
        let open = self.exchanges.begin();
        // On a task of its own: hyper drops this future when its client
        // closes or half-closes the connection, and a handler dropped
        // between its write and its reload (a `PUT` of a job) would leave
        // the files and the configuration in force apart. The task runs to
        // its end whoever still waits for its answer.
        let handled = tokio::spawn(self.router.call(req));
        Box::pin(async move {
            let r = match handled.await {
                Ok(r) => r?,
                Err(e) => crate::error::ApiError::internal(format!(
                    "the request's handler stopped before it answered ({e}); what it was asked \
                     may or may not have been done: read it back before asking again"
                ))
                .into_response(),
            };
            Ok(r.map(|body| Answer { body, _open: open }))
        })
    }
}

/// An answer's body, handed on as the router made it; the exchange ends
/// when hyper drops it.
pub(crate) struct Answer {
    body: Body,
    _open: Open,
}

impl hyper::body::Body for Answer {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exchange_is_out_until_its_answer_is_dropped() {
        let e = Arc::new(Exchanges::default());
        assert_eq!(e.settled(), Some(0));
        let first = e.begin();
        assert_eq!(e.settled(), None);
        let second = e.begin();
        drop(first);
        assert_eq!(e.settled(), None);
        drop(second);
        assert_eq!(e.settled(), Some(2));
    }
}
