//! Who may call the API, checked before any handler runs.
//!
//! - With a token (`token_file`), every endpoint but `/healthz` needs
//!   `Authorization: Bearer TOKEN`, compared in constant time; the token is
//!   never logged or echoed.
//! - A mutation (POST, PUT, DELETE) needs `Content-Type: application/json`
//!   (a cross-site HTML form cannot send it without a preflight the daemon
//!   never grants) and refuses an `Origin` other than the daemon's own and
//!   `Sec-Fetch-Site: cross-site`.
//! - A daemon listening on loopback answers only requests whose `Host`
//!   names loopback, so a page on another site cannot reach it through DNS
//!   rebinding.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::ApiError;
use crate::state::Daemon;

fn header_str(h: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

/// Whether `host` (a `Host` header) names a loopback address.
fn loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether `origin` is the daemon's own (same host and port as `host`).
fn same_origin(origin: &str, host: Option<&str>) -> bool {
    let Some(host) = host else { return false };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

fn bearer_ok(h: &HeaderMap, token: &str) -> bool {
    // The scheme's name is case-insensitive (RFC 9110, 11.1).
    let Some(given) = header_str(h, header::AUTHORIZATION).and_then(|v| {
        let (scheme, rest) = v.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
    }) else {
        return false;
    };
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

fn refuse(status: StatusCode, code: &'static str, message: &str) -> Response {
    ApiError::new(status, code, message).into_response()
}

/// The middleware.
pub(crate) async fn check(State(d): State<Arc<Daemon>>, req: Request, next: Next) -> Response {
    let h = req.headers();
    let host = header_str(h, header::HOST);
    // An absolute-form request names its host in the URI too.
    let uri_host = req.uri().authority().map(|a| a.as_str());
    if d.bound.ip().is_loopback()
        && (!host.is_some_and(loopback_host) || uri_host.is_some_and(|a| !loopback_host(a)))
    {
        return refuse(
            StatusCode::FORBIDDEN,
            "foreign_host",
            "this daemon listens on loopback and answers only requests for a loopback host",
        );
    }
    let settings = d.settings();
    if let Some(token) = &settings.token
        && req.uri().path() != "/healthz"
        && !bearer_ok(h, token)
    {
        let mut r = refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this endpoint needs `Authorization: Bearer TOKEN` (the token in [daemon] token_file)",
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        return r;
    }
    let mutation = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::DELETE | Method::PATCH
    );
    if mutation {
        let json = header_str(h, header::CONTENT_TYPE).is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
        });
        if !json {
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
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        assert!(loopback_host("127.0.0.1:8677"));
        assert!(loopback_host("localhost:1"));
        assert!(loopback_host("[::1]:8677"));
        assert!(loopback_host("127.0.0.1"));
        assert!(!loopback_host("evil.example:8677"));
        assert!(!loopback_host("10.0.0.1:8677"));
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
