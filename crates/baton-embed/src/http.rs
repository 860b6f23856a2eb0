//! The command line's status API and pages for the service's jobs, as an
//! axum [`Router`] the service mounts in its own (feature `http`; `GET
//! /metrics` with feature `prometheus`). Every answer is what `baton
//! status --json`, `baton history JOB --json`, the daemon's page and its
//! metrics give on the same store: the same views (`baton-sched`), read
//! from the ledger, with the jobs the services declared there.
//!
//! This module reads, and with the control routes asks for a run now, a
//! pause or a resume: the run is queued in the ledger for the job's
//! scheduler (whichever replica looks at its queue first runs it), the
//! pause and resume are `baton pause`'s. It never runs a job itself, and
//! it authenticates no one. It is the service's to put it behind its own
//! authentication, as it does its other routes.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use baton_lease::Clock;
use baton_sched::config::Config;

use crate::error::BuildError;

/// What every request reads from: the command line's configuration of the
/// store (no jobs of its own), and the scheduler's clock.
#[derive(Clone)]
struct Views {
    config: Arc<Config>,
    clock: Arc<dyn Clock>,
}

/// The configuration `baton` would use on `store` with no `baton.toml`:
/// its state directory, or its `[store] url`.
pub(crate) fn config_of(store: &crate::Store) -> Result<Config, BuildError> {
    let (text, dir) = store.as_configuration();
    let path = dir.join("baton.toml");
    baton_sched::config::parse(&text, &path, &baton_sched::config::Overrides::default())
        .map_err(|e| BuildError::Http { why: e.to_string() })
}

/// The router of the status API and pages under `prefix` (empty, or
/// `/name`…, never ending in `/`); see [`crate::Scheduler::router_at`].
pub(crate) fn router(config: Config, clock: Arc<dyn Clock>, prefix: &str, control: bool) -> Router {
    let views = Views {
        config: Arc::new(config),
        clock,
    };
    let at = |path: &str| format!("{prefix}{path}");
    let mut router = Router::new()
        .route(&at("/"), get(page))
        .route(&at("/jobs/{job}"), get(job_page))
        .route(&at("/v1/jobs"), get(jobs))
        .route(&at("/v1/jobs/{job}"), get(job))
        .route(&at("/v1/jobs/{job}/runs"), get(runs));
    if !prefix.is_empty() {
        // The page's links are relative: it is shown at `prefix/`.
        let to = at("/");
        router = router.route(
            prefix,
            get(move || async move { axum::response::Redirect::permanent(&to) }),
        );
    }
    if control {
        router = router
            .route(&at("/v1/jobs/{job}/run"), post(run_now))
            .route(&at("/v1/jobs/{job}/pause"), post(pause))
            .route(&at("/v1/jobs/{job}/resume"), post(resume));
    }
    #[cfg(feature = "prometheus")]
    let router = router.route(&at("/metrics"), get(metrics));
    router.with_state(views)
}

/// Whether `prefix` may be given to [`router`]: empty, or `/` then path
/// segments of letters, digits, `-`, `_` and `.` (neither `.` nor `..`),
/// not ending in `/`.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), BuildError> {
    let fine = prefix.is_empty()
        || (prefix.starts_with('/')
            && prefix[1..].split('/').all(|seg| {
                !seg.is_empty()
                    && seg != "."
                    && seg != ".."
                    && seg
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            }));
    if fine {
        Ok(())
    } else {
        Err(BuildError::Http {
            why: format!(
                "the prefix {prefix:?} is not a path: give \"\" or \"/name\" (segments of \
                 letters, digits, '-', '_' and '.', none of them . or .., no '/' at the end)"
            ),
        })
    }
}

/// A JSON error: `{"error": CODE, "message": TEXT}`, as the daemon's.
struct Failure {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = serde_json::json!({ "error": self.code, "message": self.message });
        (self.status, axum::Json(body)).into_response()
    }
}

fn error(status: StatusCode, code: &'static str, message: impl Into<String>) -> Failure {
    Failure {
        status,
        code,
        message: message.into(),
    }
}

/// Runs `read` on the configuration with the declared jobs, on a blocking
/// thread (the stores' calls block).
async fn with_jobs<T: Send + 'static>(
    v: &Views,
    read: impl FnOnce(&Config, &dyn Clock) -> T + Send + 'static,
) -> Result<T, Failure> {
    let v = v.clone();
    tokio::task::spawn_blocking(move || {
        let now = v.clock.wall();
        let config = baton_sched::views::declared::with_declared(&v.config, now)
            .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, "ledger", e.to_string()))?;
        Ok(read(&config, v.clock.as_ref()))
    })
    .await
    .map_err(|e| error(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?
}

fn not_found(job: &str) -> Failure {
    error(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no job named {job:?}"),
    )
}

async fn jobs(State(v): State<Views>) -> Result<Response, Failure> {
    let s = with_jobs(&v, |c, clock| {
        baton_sched::views::status::read(c, None, clock.wall())
    });
    Ok(axum::Json(s.await?).into_response())
}

async fn job(State(v): State<Views>, Path(name): Path<String>) -> Result<Response, Failure> {
    let read = with_jobs(&v, move |c, clock| {
        c.jobs
            .contains_key(&name)
            .then(|| baton_sched::views::status::read(c, Some(&name), clock.wall()))
            .ok_or(name)
    });
    match read.await? {
        Ok(s) => Ok(axum::Json(s).into_response()),
        Err(name) => Err(not_found(&name)),
    }
}

/// `?limit=N` of `GET /v1/jobs/{job}/runs`.
#[derive(serde::Deserialize)]
struct Limit {
    limit: Option<u32>,
}

async fn runs(
    State(v): State<Views>,
    Path(name): Path<String>,
    Query(q): Query<Limit>,
) -> Result<Response, Failure> {
    let limit = q.limit.unwrap_or(20).min(10_000);
    let read = with_jobs(&v, move |c, clock| {
        if !c.jobs.contains_key(&name) {
            return Err(not_found(&name));
        }
        baton_sched::views::history::read(c, &name, limit, clock.wall())
            .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, "ledger", e.to_string()))
    });
    Ok(axum::Json(read.await??).into_response())
}

async fn page(State(v): State<Views>) -> Result<Response, Failure> {
    let read = with_jobs(&v, |c, clock| {
        baton_sched::views::page::read(c, clock, baton_sched::views::page::DEFAULT_REFRESH_SECS)
    });
    Ok(Html(read.await?).into_response())
}

async fn job_page(State(v): State<Views>, Path(name): Path<String>) -> Result<Response, Failure> {
    let read = with_jobs(&v, move |c, clock| {
        baton_sched::views::page::job::read(
            c,
            clock,
            &name,
            baton_sched::views::page::DEFAULT_REFRESH_SECS,
            baton_sched::views::page::Viewer::Anyone,
            baton_sched::views::page::job::Log::Shown,
        )
        .ok_or_else(|| baton_sched::views::page::job::not_found(&name))
    });
    Ok(match read.await? {
        Ok(html) => Html(html).into_response(),
        Err(missing) => (StatusCode::NOT_FOUND, Html(missing)).into_response(),
    })
}

/// `GET /metrics`: Prometheus's text format, or OpenMetrics when the
/// `Accept` header prefers it, as the daemon's.
#[cfg(feature = "prometheus")]
async fn metrics(
    State(v): State<Views>,
    headers: axum::http::HeaderMap,
) -> Result<Response, Failure> {
    let accept: Vec<&str> = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .collect();
    let accept = accept.join(",");
    let format = baton_sched::views::metrics::Format::negotiate(
        Some(accept.as_str()).filter(|a| !a.is_empty()),
    );
    let read = with_jobs(&v, move |c, clock| {
        baton_sched::views::metrics::read(c, clock, format)
    });
    let text = read
        .await?
        .map_err(|e| error(StatusCode::SERVICE_UNAVAILABLE, "metrics", e.to_string()))?;
    Ok((
        [(axum::http::header::CONTENT_TYPE, format.content_type())],
        text,
    )
        .into_response())
}

/// Runs `act` on the configuration with the declared jobs, for job `name`
/// (a `404` when there is none), on a blocking thread; answers as the
/// daemon does: `{"ok": true, "message": …}`, or `422` `refused`.
async fn control(
    v: &Views,
    name: String,
    act: impl FnOnce(
        &Config,
        &str,
        Arc<dyn Clock>,
        &mut String,
    ) -> Result<baton_sched::outcome::Outcome, Failure>
    + Send
    + 'static,
) -> Result<Response, Failure> {
    let clock = Arc::clone(&v.clock);
    let done = with_jobs(v, move |c, _| {
        if !c.jobs.contains_key(&name) {
            return Err(not_found(&name));
        }
        let mut out = String::new();
        let outcome = act(c, &name, clock, &mut out)?;
        Ok((outcome, out))
    });
    let (outcome, text) = done.await??;
    match outcome {
        baton_sched::outcome::Outcome::Done => Ok(axum::Json(
            serde_json::json!({ "ok": true, "message": text.trim_end() }),
        )
        .into_response()),
        _ => Err(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "refused",
            if text.is_empty() {
                "refused (the service's log says why)".to_owned()
            } else {
                text.trim_end().to_owned()
            },
        )),
    }
}

/// `POST /v1/jobs/{job}/pause`, as the daemon's: empty, or a JSON object
/// with `until`, `for` and `reason`, each optional.
async fn pause(
    State(v): State<Views>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Failure> {
    let asked: baton_sched::ops::pause::Request = if body.iter().all(u8::is_ascii_whitespace) {
        baton_sched::ops::pause::Request::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            error(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!(
                    "the body must be empty or a JSON object with \"until\" (a time), \"for\" \
                     (a duration) and \"reason\", each optional: {e}"
                ),
            )
        })?
    };
    let now = v.clock.wall();
    control(&v, name, move |c, job, clock, out| {
        let tz = c
            .jobs
            .get(job)
            .map_or(jiff::tz::TimeZone::UTC, |j| j.timezone.value.tz.clone());
        let until = asked.until(&tz, now).map_err(|e| match e {
            baton_sched::ops::pause::Refused::Bad(m) => {
                error(StatusCode::BAD_REQUEST, "bad_body", m)
            }
            baton_sched::ops::pause::Refused::Past(m) => {
                error(StatusCode::UNPROCESSABLE_ENTITY, "refused", m)
            }
        })?;
        Ok(baton_sched::ops::pause::pause(
            c,
            job,
            until,
            asked.reason.as_deref(),
            "http",
            clock,
            out,
        ))
    })
    .await
}

/// `POST /v1/jobs/{job}/resume`, as the daemon's.
async fn resume(
    State(v): State<Views>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Failure> {
    let empty = body.iter().all(u8::is_ascii_whitespace)
        || serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&body)
            .is_ok_and(|m| m.is_empty());
    if !empty {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "bad_body",
            "the body must be empty or {}",
        ));
    }
    control(&v, name, |c, job, clock, out| {
        Ok(baton_sched::ops::pause::resume(c, job, clock, out))
    })
    .await
}

/// `POST /v1/jobs/{job}/run`: a run of the job now, asked through the
/// ledger. The body is empty. The run is queued as an occurrence at this
/// second, marked as asked for ([`baton_store::ledger::RUN_DETAIL`]); the
/// job's scheduler, on whichever replica looks at its queue first (every
/// 2 s, and before each release), runs it once under the job's lock, a
/// paused job once resumed. `202` with `{"job", "occurrence", "queued":
/// true}`; `409` `decided` when that second of the job is decided already
/// (its scheduled occurrence, or another request), with its decision.
async fn run_now(
    State(v): State<Views>,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> Result<Response, Failure> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "bad_body",
            "the body must be empty",
        ));
    }
    let asked = with_jobs(&v, move |c, clock| {
        if !c.jobs.contains_key(&name) {
            return Err(not_found(&name));
        }
        let now = clock.wall();
        let unreadable = |e: &dyn std::fmt::Display| {
            error(StatusCode::SERVICE_UNAVAILABLE, "ledger", e.to_string())
        };
        let mut ledger = match baton_sched::store::existing_records(c, now) {
            Some(Ok(l)) => l,
            Some(Err(e)) => return Err(unreadable(&e)),
            None => return Err(unreadable(&"the store has no ledger")),
        };
        let at = now.as_second();
        match ledger.request_run(&name, at, "http", now) {
            Ok(baton_store::ledger::Requested::Queued) => Ok((name, at)),
            Ok(baton_store::ledger::Requested::Decided(d)) => Err(error(
                StatusCode::CONFLICT,
                "decided",
                format!(
                    "not queued: {name} at {} is {} already{}",
                    jiff::Timestamp::from_second(at).unwrap_or(now),
                    d.decision.as_str(),
                    d.run_id.map(|r| format!(" (run {r})")).unwrap_or_default()
                ),
            )),
            Err(e) => Err(unreadable(&e)),
        }
    });
    let (name, at) = asked.await??;
    let occurrence = jiff::Timestamp::from_second(at)
        .map(|t| t.to_string())
        .unwrap_or_default();
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(serde_json::json!({ "job": name, "occurrence": occurrence, "queued": true })),
    )
        .into_response())
}
