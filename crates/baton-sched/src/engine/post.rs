//! One body POSTed to a URL within a bound, retried with a backoff: what
//! the alert webhook ([`super::webhook`]) and the trace export
//! ([`super::trace`]) both send. This module owns the HTTP client's
//! settings and what an answer means; the callers own the body, the
//! headers and the [`Patience`].
//!
//! A post never takes longer than its [`Patience::bound`] in all: at most
//! [`Patience::attempts`] attempts, each cut at [`Patience::attempt`] (or
//! what is left of the bound), retried after a backoff that starts at
//! [`Patience::backoff`] and doubles, on no answer (refused, reset, timed
//! out) and on 5xx and 429; any other status that is not 2xx is the
//! receiver saying the request is wrong, and is not retried. Redirects are
//! not followed. Time is read and slept through a [`Clock`], and nothing
//! here says anything: a failure is a [`PostError`], for the caller to say.

use std::time::Duration;

use baton_lease::Clock;

/// Less than this left of the bound: no attempt is started.
const LEAST_ATTEMPT: Duration = Duration::from_millis(200);

/// How long one post may take, and how often it is tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Patience {
    /// The longest the whole post may take, its retries included.
    pub bound: Duration,
    /// The most attempts.
    pub attempts: u32,
    /// The longest one attempt may take (less when less of the bound is
    /// left).
    pub attempt: Duration,
    /// The wait before the first retry; it doubles for each one after.
    pub backoff: Duration,
}

/// Why a post failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PostError {
    /// A status that says the request itself is wrong.
    #[error("the receiver answered {status}, which is not retried (only 5xx and 429 are)")]
    Refused {
        /// The status.
        status: u16,
    },
    /// The request could not be made at all.
    #[error("the request cannot be made: {0}")]
    Unsendable(String),
    /// No 2xx within the attempts and the bound.
    #[error(
        "no 2xx answer after {attempts} attempt(s) within {}s; the last: {last}",
        within.as_secs()
    )]
    GaveUp {
        /// The attempts made.
        attempts: u32,
        /// The bound they were made within.
        within: Duration,
        /// What the last one got.
        last: String,
    },
}

/// What one attempt got.
enum Attempt {
    Delivered,
    Refused(u16),
    Unsendable(String),
    Retry(String),
}

/// POSTs `body` with `headers` to `url`, retrying as the module says
/// within `patience`; the attempts it took.
///
/// # Errors
///
/// [`PostError`]: a status that is not retried, a request that cannot be
/// made, or no 2xx within the attempts and the bound.
pub fn post(
    url: &str,
    headers: &[(&str, String)],
    body: &[u8],
    patience: Patience,
    clock: &dyn Clock,
) -> Result<u32, PostError> {
    let began = clock.boot();
    let left = || {
        patience
            .bound
            .saturating_sub(clock.boot().saturating_sub(began))
    };
    let mut backoff = patience.backoff;
    let mut last = String::new();
    let mut made = 0;
    while made < patience.attempts && left() >= LEAST_ATTEMPT {
        made += 1;
        let timeout = left().min(patience.attempt);
        match attempt(url, headers, body, timeout) {
            Attempt::Delivered => return Ok(made),
            Attempt::Refused(status) => return Err(PostError::Refused { status }),
            Attempt::Unsendable(why) => return Err(PostError::Unsendable(why)),
            Attempt::Retry(why) => last = why,
        }
        if made == patience.attempts || backoff + LEAST_ATTEMPT > left() {
            break;
        }
        clock.sleep(backoff);
        backoff *= 2;
    }
    Err(PostError::GaveUp {
        attempts: made,
        within: patience.bound,
        last,
    })
}

/// One post of `body` with `headers` to `url`, cut at `timeout`.
fn attempt(url: &str, headers: &[(&str, String)], body: &[u8], timeout: Duration) -> Attempt {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .user_agent(format!("baton/{}", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let mut request = agent.post(url);
    for (name, value) in headers {
        request = request.header(*name, value);
    }
    match request.send(body) {
        Ok(answer) => {
            let status = answer.status();
            if status.is_success() {
                Attempt::Delivered
            } else if status.is_server_error() || status.as_u16() == 429 {
                Attempt::Retry(format!("the receiver answered {}", status.as_u16()))
            } else {
                Attempt::Refused(status.as_u16())
            }
        }
        Err(ureq::Error::Timeout(_)) => {
            Attempt::Retry(format!("no answer within {}ms", timeout.as_millis()))
        }
        Err(e @ (ureq::Error::BadUri(_) | ureq::Error::Http(_))) => {
            Attempt::Unsendable(e.to_string())
        }
        Err(e) => Attempt::Retry(e.to_string()),
    }
}
