//! Who may call the API, checked before any handler runs.
//!
//! - A caller is authenticated by the bearer token (`token_file`:
//!   `Authorization: Bearer TOKEN`, compared in constant time, never logged
//!   or echoed), or by being on the Unix socket as a user the daemon trusts
//!   ([`crate::peer::Trust`]: its own, root, or a member of `socket_group`).
//!   A TCP connection says nothing about its caller: loopback is reachable
//!   by every local user.
//! - With a token, every endpoint but `/healthz` and the login's
//!   (`/login`, `/logout`) needs authentication; a browser that asks for
//!   a page (`GET /` or `GET /jobs/JOB`, `Accept: text/html`) without it
//!   is sent to `/login`. Without a token, an unauthenticated caller may only read
//!   (`GET`, `HEAD`): anything else is refused, `403 read_only` over TCP,
//!   `403 foreign_peer` over the socket, before any handler sees it.
//! - An unauthenticated read is answered without what only the job's own
//!   user may read: a job's page withholds the end of its last log (the
//!   logs are 0600), marked by [`Anonymous`].
//! - A browser's session cookie ([`crate::session`], opened by `POST
//!   /login` with the token) authenticates reads only: the page, `/metrics`
//!   and the API's `GET`s. A change with the cookie and no bearer token is
//!   refused as unauthenticated, whatever else it sends, so the cookie can
//!   never be the way a forged request changes anything.
//! - A mutation with a body needs `Content-Type: application/json` (a
//!   cross-site HTML form cannot send it without a preflight the daemon
//!   never grants). One without a body needs none when it names no type
//!   (there is nothing to type; an HTML form always names one), and a
//!   `DELETE` without a body none at all (a browser never sends `DELETE` to
//!   another site without a preflight); nor do the login's forms. A page
//!   on another site can make a browser send a bodiless `POST` with no
//!   type, but never with a credential that changes anything (the bearer
//!   token; the session cookie reads only), and it carries the site's
//!   `Origin`: every mutation, these too, refuses an `Origin` other than
//!   the daemon's own and `Sec-Fetch-Site: cross-site`.
//! - A daemon listening on loopback answers TCP requests only when their
//!   `Host` names loopback exactly (`localhost`, a loopback IP, or the host
//!   name it was told to listen on; at most a numeric port), so a page on
//!   another site cannot reach it through DNS rebinding; a request with two
//!   `Host` headers is refused.
//!
//! A request without connection information (a router driven in a test,
//! without a socket) is judged as a TCP caller's.

use std::sync::Arc;

use axum::extract::connect_info::ConnectInfo;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use baton_sched::config::Listen;
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::peer::Peer;
use crate::state::Daemon;

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Whether `host` (a `Host` header, or a URI's authority) names a loopback
/// address: `localhost` or a loopback IP, with at most a numeric port.
fn loopback_host(host: &str) -> bool {
    let (name, port) = if let Some(rest) = host.strip_prefix('[') {
        let Some((inside, after)) = rest.split_once(']') else {
            return false;
        };
        if inside.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => (inside, None),
            _ => match after.strip_prefix(':') {
                Some(p) => (inside, Some(p)),
                None => return false,
            },
        }
    } else {
        match host.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (host, None),
        }
    };
    let port_ok = port.is_none_or(|p| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
    });
    port_ok
        && (name.eq_ignore_ascii_case("localhost")
            || name
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback()))
}

/// Whether `host` (a `Host` header) is `name`, the host name the daemon was
/// told to listen on, with at most a numeric port: the operator chose that
/// name, so a page on another site cannot be behind it (a host name that
/// resolves to `127.0.1.1`, as Debian maps the machine's own).
fn named_host(host: &str, name: &str) -> bool {
    let (h, port) = match host.rsplit_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (host, None),
    };
    let port_ok = port.is_none_or(|p| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
    });
    let bare = |n: &str| n.strip_suffix('.').unwrap_or(n).to_ascii_lowercase();
    port_ok && !h.is_empty() && bare(h) == bare(name)
}

/// Whether `origin` is the daemon's own (same host and port as `host`).
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

/// Whether `given` is `token`, compared in constant time (but for their
/// lengths).
pub(crate) fn token_matches(given: &str, token: &str) -> bool {
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

fn bearer_ok(h: &HeaderMap, token: &str) -> bool {
    // The scheme's name is case-insensitive (RFC 9110, 11.1).
    let Some(given) = header_str(h, header::AUTHORIZATION).and_then(|v| {
        let (scheme, rest) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    }) else {
        return false;
    };
    token_matches(given, token)
}

/// Whether the request has no body: no `Transfer-Encoding`, and no
/// `Content-Length` or `Content-Length: 0`.
fn bodiless(h: &HeaderMap) -> bool {
    !h.contains_key(header::TRANSFER_ENCODING)
        && h.get_all(header::CONTENT_LENGTH)
            .iter()
            .all(|v| v.to_str().is_ok_and(|v| v.trim() == "0"))
}

/// Whether the caller is a browser that wants a page (`Accept` names
/// `text/html`).
fn wants_html(h: &HeaderMap) -> bool {
    header_str(h, header::ACCEPT).is_some_and(|v| {
        v.split(',').any(|t| {
            t.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/html"))
        })
    })
}

/// A browser logged in (its session cookie names an open session).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LoggedIn;

/// A caller who is not authenticated (a read over TCP without the token,
/// or over the socket by a user the daemon does not trust): what only the
/// job's own user may read (its output) is withheld from it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Anonymous;

fn refuse(status: StatusCode, code: &'static str, message: &str) -> Response {
    ApiError::new(status, code, message).into_response()
}

/// The middleware.
pub(crate) async fn check(State(d): State<Arc<Daemon>>, req: Request, next: Next) -> Response {
    let peer = req
        .extensions()
        .get::<ConnectInfo<Peer>>()
        .map_or(Peer::Tcp, |c| c.0.clone());
    let h = req.headers();
    if h.get_all(header::HOST).iter().nth(1).is_some() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "bad_request",
            "a request names one host: it has more than one `Host` header",
        );
    }
    let host = header_str(h, header::HOST);
    // An absolute-form request names its host in the URI too.
    let uri_host = req.uri().authority().map(|a| a.as_str());
    let own = |h: &str| {
        loopback_host(h)
            || matches!(&d.started_with.0, Listen::Host { name, .. } if named_host(h, name))
    };
    if matches!(peer, Peer::Tcp)
        && d.loopback_only()
        && (!host.is_some_and(own) || uri_host.is_some_and(|a| !own(a)))
    {
        return refuse(
            StatusCode::FORBIDDEN,
            "foreign_host",
            "this daemon listens on loopback and answers only requests for a loopback host",
        );
    }
    let settings = d.settings();
    let path = req.uri().path();
    let login = matches!(path, "/login" | "/logout");
    let reads = matches!(*req.method(), Method::GET | Method::HEAD);
    let trusted_peer = matches!(&peer, Peer::Socket(Some(c)) if d.trust.admits(c));
    let bearer = settings.token.as_ref().is_some_and(|t| bearer_ok(h, t));
    let cookie = settings.token.is_some()
        && !bearer
        && crate::session::cookie(h).is_some_and(|c| d.sessions.valid(c, d.clock.boot()));
    let authenticated = trusted_peer || bearer || (cookie && reads);
    if settings.token.is_some() && !authenticated && path != "/healthz" && !login {
        if reads && (path == "/" || path.starts_with("/jobs/")) && wants_html(h) {
            return (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, header::HeaderValue::from_static("/login"))],
            )
                .into_response();
        }
        let mut r = refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            if cookie {
                "a browser's login reads only: a change needs `Authorization: Bearer TOKEN` (the \
                 token in [daemon] token_file), or the daemon's socket"
            } else {
                "this endpoint needs `Authorization: Bearer TOKEN` (the token in [daemon] \
                 token_file); a browser logs in at /login"
            },
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    if !reads && !authenticated && !login {
        return match &peer {
            Peer::Tcp => refuse(
                StatusCode::FORBIDDEN,
                "read_only",
                &format!(
                    "this daemon's TCP API is read-only: it has no [daemon] token_file, and a TCP \
                     caller may be any local user; change things over its socket {} (as {}), or \
                     set token_file and send `Authorization: Bearer TOKEN`",
                    d.socket.display(),
                    d.trust.describe()
                ),
            ),
            Peer::Socket(c) => refuse(
                StatusCode::FORBIDDEN,
                "foreign_peer",
                &format!(
                    "refused: {} may not change anything through this daemon; only {} may \
                     ([daemon] socket_group names a group whose members may)",
                    c.as_ref().map_or_else(
                        || "a caller whose credentials could not be read".to_owned(),
                        |c| format!("uid {} (gid {})", c.uid, c.gid)
                    ),
                    d.trust.describe()
                ),
            ),
        };
    }
    if !reads {
        let json = header_str(h, header::CONTENT_TYPE).is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
        let untyped = !h.contains_key(header::CONTENT_TYPE);
        let exempt = login || (bodiless(h) && (untyped || *req.method() == Method::DELETE));
        if !json && !exempt {
            return refuse(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "content_type",
                "a request that changes something needs `Content-Type: application/json`",
            );
        }
        if let Some(origin) = header_str(h, header::ORIGIN)
            && !same_origin(origin, host)
        {
            return refuse(
                StatusCode::FORBIDDEN,
                "foreign_origin",
                "refused: the request comes from another site (Origin)",
            );
        }
        if header_str(h, header::HeaderName::from_static("sec-fetch-site"))
            .is_some_and(|v| v.eq_ignore_ascii_case("cross-site"))
        {
            return refuse(
                StatusCode::FORBIDDEN,
                "foreign_origin",
                "refused: the request comes from another site (Sec-Fetch-Site)",
            );
        }
    }
    let mut req = req;
    if cookie && authenticated && !trusted_peer {
        req.extensions_mut().insert(LoggedIn);
    }
    if !authenticated {
        req.extensions_mut().insert(Anonymous);
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        assert!(loopback_host("127.0.0.1:8677"));
        assert!(loopback_host("localhost:1"));
        assert!(loopback_host("LocalHost"));
        assert!(loopback_host("[::1]:8677"));
        assert!(loopback_host("[::1]"));
        assert!(loopback_host("127.0.0.1"));
        assert!(loopback_host("127.1.2.3:65535"));
        assert!(!loopback_host("evil.example:8677"));
        assert!(!loopback_host("10.0.0.1:8677"));
    }

    #[test]
    fn a_host_that_only_starts_like_loopback_is_not_loopback() {
        for host in [
            "127.0.0.1:evil.com",
            "localhost:evil.com",
            "127.0.0.1:80:80",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "127.0.0.1:+80",
            "127.0.0.1 :80",
            "::1",
            "::1:8677",
            "[::1]evil",
            "[::1]:evil",
            "[::1",
            "[127.0.0.1]:80",
            "[localhost]",
            "localhost.evil.com",
            "127.0.0.1.evil.com",
            "127.0.0.1@evil.com",
            "",
        ] {
            assert!(!loopback_host(host), "{host:?} taken for loopback");
        }
    }

    #[test]
    fn the_name_listened_on_is_its_own_host() {
        for host in ["myhost", "MyHost:8677", "myhost.:1", "myhost:65535"] {
            assert!(named_host(host, "myhost"), "{host}");
        }
        for host in [
            "myhost:evil.com",
            "myhost:80:80",
            "myhost:",
            "myhost:65536",
            "myhost.evil.com",
            "evil.myhost",
            ":80",
            "",
        ] {
            assert!(!named_host(host, "myhost"), "{host:?} taken for myhost");
        }
    }

    #[test]
    fn origins() {
        assert!(same_origin("http://127.0.0.1:8677", Some("127.0.0.1:8677")));
        assert!(!same_origin("http://evil.example", Some("127.0.0.1:8677")));
        assert!(!same_origin("null", Some("127.0.0.1:8677")));
    }

    #[test]
    fn bearer_is_exact() {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer s3cret".parse().unwrap());
        assert!(bearer_ok(&h, "s3cret"));
        assert!(!bearer_ok(&h, "s3cre"));
        assert!(!bearer_ok(&h, "s3crets"));
        h.insert(header::AUTHORIZATION, "Basic s3cret".parse().unwrap());
        assert!(!bearer_ok(&h, "s3cret"));
        h.insert(header::AUTHORIZATION, "bearer s3cret".parse().unwrap());
        assert!(bearer_ok(&h, "s3cret"));
    }
}
