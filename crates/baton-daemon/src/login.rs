//! `GET /login`, `POST /login` and `POST /logout`: a browser's way in to a
//! daemon with a token, since a browser cannot send `Authorization:
//! Bearer`.
//!
//! `POST /login` takes the form's `token`, compares it with the token in
//! force in constant time, and on a match opens a session
//! ([`crate::session`]) and sets its cookie (`HttpOnly; SameSite=Strict;
//! Path=/`, and `Secure` behind an https proxy), redirecting to the page; a
//! wrong token is `401` with the form again and no cookie. `POST /logout`
//! ends the session and unsets the cookie. A daemon without a token has
//! nothing to log in to: each of them redirects to the page.
//!
//! The guard lets these three through without authentication and without
//! `Content-Type: application/json` (an HTML form cannot send it), but
//! refuses a cross-site `POST` to them as to any other (`Origin`,
//! `Sec-Fetch-Site`). What a session opens is the guard's decision: reads.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::state::Daemon;

/// A redirect to `to` (`303 See Other`, so a `POST` becomes a `GET`).
fn see_other(to: &'static str) -> Response {
    (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static(to))],
    )
        .into_response()
}

/// The form, with `status` and `problem`; never cached.
fn form(status: StatusCode, problem: Option<&str>) -> Response {
    let mut r = (
        status,
        Html(baton_sched::views::page::login::render(
            problem,
            crate::session::LIFETIME,
        )),
    )
        .into_response();
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn logged_in(d: &Daemon, h: &HeaderMap) -> bool {
    crate::session::cookie(h).is_some_and(|c| d.sessions.valid(c, d.clock.boot()))
}

/// `GET /login`: the form, or the page for a browser already logged in.
pub(crate) async fn show(State(d): State<Arc<Daemon>>, h: HeaderMap) -> Response {
    if d.settings().token.is_none() || logged_in(&d, &h) {
        return see_other("/");
    }
    form(StatusCode::OK, None)
}

/// The form's `token` field, if the body is a form that has one.
fn token_of(body: &[u8]) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.trim().to_owned())
}

/// `POST /login`: a session for the right token.
pub(crate) async fn login(State(d): State<Arc<Daemon>>, h: HeaderMap, body: Bytes) -> Response {
    let Some(token) = d.settings().token.clone() else {
        return see_other("/");
    };
    let Some(given) = token_of(&body).filter(|t| !t.is_empty()) else {
        return form(
            StatusCode::BAD_REQUEST,
            Some("Type the token: the contents of [daemon] token_file."),
        );
    };
    if !crate::guard::token_matches(&given, &token) {
        let mut r = form(
            StatusCode::UNAUTHORIZED,
            Some("That is not the token in [daemon] token_file."),
        );
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        return r;
    }
    let id = match d.sessions.open(d.clock.boot()) {
        Ok(id) => id,
        Err(e) => {
            return form(
                StatusCode::INTERNAL_SERVER_ERROR,
                Some(&format!("failed to open a session: {e}")),
            );
        }
    };
    // A reload that changed the token since it was compared ends the
    // sessions after it swaps: check again, so this one cannot outlive it.
    if d.settings().token.as_deref() != Some(token.as_str()) {
        d.sessions.close(&id);
        return form(
            StatusCode::UNAUTHORIZED,
            Some("The token changed while you logged in: log in with the new one."),
        );
    }
    let mut r = see_other("/");
    r.headers_mut()
        .insert(header::SET_COOKIE, crate::session::set(&id, &h));
    r
}

/// `POST /logout`: the session ends and the browser forgets its cookie.
pub(crate) async fn logout(State(d): State<Arc<Daemon>>, h: HeaderMap) -> Response {
    if let Some(c) = crate::session::cookie(&h) {
        d.sessions.close(c);
    }
    let mut r = see_other(if d.settings().token.is_some() {
        "/login"
    } else {
        "/"
    });
    r.headers_mut()
        .insert(header::SET_COOKIE, crate::session::unset(&h));
    r
}
