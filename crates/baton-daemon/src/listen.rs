//! The TCP listeners: `listen` (an IP address, or a host name) turned into
//! the addresses the daemon binds, once, when it starts.
//!
//! An IP address binds as written. A host name is resolved here and
//! nowhere else (never at a reload: a new `listen` takes a restart), and
//! the daemon listens on every address it resolves to, each once and all
//! on one port: with port 0 the first bound picks it and the others take
//! the same. An address this host cannot bind at all (`localhost` naming
//! `::1` on a host without IPv6: `EADDRNOTAVAIL`, `EAFNOSUPPORT`) is
//! skipped with a note as long as another one binds; any other failure
//! fails the start. Each resolved address off loopback needs a token, as
//! the same address written as an IP would.

use std::net::SocketAddr;

use baton_sched::config::Listen;
use tokio::net::TcpListener;

/// Why the daemon cannot listen, and how serving ends for it.
pub(crate) struct Refused {
    pub(crate) ending: crate::Ending,
    pub(crate) message: String,
}

fn failed(message: String) -> Refused {
    Refused {
        ending: crate::Ending::Failed,
        message,
    }
}

/// The addresses `listen` names, in the resolver's order, each once.
async fn resolve(listen: &Listen) -> Result<Vec<SocketAddr>, Refused> {
    let (name, port) = match listen {
        Listen::Addr(a) => return Ok(vec![*a]),
        Listen::Host { name, port } => (name.as_str(), *port),
    };
    let found = tokio::net::lookup_host((name, port)).await.map_err(|e| {
        failed(format!(
            "failed to resolve the host name {name} to listen on ({listen}): {e} (give an IP \
             address, such as 127.0.0.1:{port}, with --listen or [daemon] listen)"
        ))
    })?;
    let mut out: Vec<SocketAddr> = Vec::new();
    for a in found {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        return Err(failed(format!(
            "the host name {name} resolves to no address to listen on ({listen})"
        )));
    }
    Ok(out)
}

/// Whether binding failed because this host has no such address at all.
fn unavailable(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::AddrNotAvailable || e.raw_os_error() == Some(libc::EAFNOSUPPORT)
}

/// A listener on every address `listen` names, with `token` the token in
/// force (an address off loopback needs one).
///
/// # Errors
///
/// A name that does not resolve, or an address that cannot be bound
/// ([`crate::Ending::Failed`]); an address off loopback without a token
/// ([`crate::Ending::Unservable`]).
pub(crate) async fn bind(
    listen: &Listen,
    token: Option<&str>,
) -> Result<Vec<TcpListener>, Refused> {
    let addrs = resolve(listen).await?;
    // An IP address was judged with the settings; a name is judged here.
    if let Some(a) = addrs.iter().find(|a| crate::state::exposed(**a, token)) {
        return Err(Refused {
            ending: crate::Ending::Unservable,
            message: format!(
                "refusing to listen on {listen} without a token: it resolves to {a}, off \
                 loopback, and anyone who can reach it could read every job; set [daemon] \
                 token_file (a file holding a secret), or listen on loopback (127.0.0.1)"
            ),
        });
    }
    let named = listen.addr().is_none();
    let mut bound: Vec<TcpListener> = Vec::new();
    let mut skipped = Vec::new();
    for mut a in addrs {
        if let Some(first) = bound.first().and_then(|l| l.local_addr().ok()) {
            a.set_port(first.port());
        }
        match TcpListener::bind(a).await {
            Ok(l) => bound.push(l),
            Err(e) if named && unavailable(&e) => skipped.push(format!("{a} ({e})")),
            Err(e) => {
                return Err(failed(format!(
                    "failed to listen on {a}{}: {e} (choose another with --listen or [daemon] \
                     listen)",
                    if named {
                        format!(", an address of {listen}")
                    } else {
                        String::new()
                    }
                )));
            }
        }
    }
    if bound.is_empty() {
        return Err(failed(format!(
            "failed to listen on {listen}: none of its addresses can be bound on this host: {}",
            skipped.join(", ")
        )));
    }
    for s in &skipped {
        tracing::warn!(
            "not listening on {s}: this host has no such address; {listen} is served on the others"
        );
    }
    Ok(bound)
}
