//! The HTTP API (JSON, versioned under `/v1`) and its router, built by
//! [`app`] so tests can drive it without a socket.
//!
//! Handlers are thin: they validate the job's name (as the configuration
//! does), read through the scheduler's library off the async thread
//! (`spawn_blocking`, since the ledger is SQLite), and answer with the
//! shapes the CLI prints (`status --json`, `history --json`). Errors are
//! [`ApiError`]s: a status, a stable code and a message.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use baton_sched::engine::run::{Start, Told};
use baton_sched::outcome::Outcome;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::holder::holder_json;
use crate::limits::BODY_BYTES;
use crate::offload::blocking;
use crate::state::Daemon;
use crate::stopping::stopping;

type Shared = State<Arc<Daemon>>;

/// The router.
pub(crate) fn app(d: Arc<Daemon>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/v1/jobs", get(jobs))
        .route("/", get(page))
        .route("/jobs/{job}", get(job_page))
        .route("/login", get(crate::login::show).post(crate::login::login))
        .route("/logout", post(crate::login::logout))
        .route("/metrics", get(metrics))
        .route(
            "/v1/jobs/{job}",
            get(job)
                .put(crate::jobs_api::put)
                .delete(crate::jobs_api::delete),
        )
        .route("/v1/jobs/{job}/runs", get(runs))
        .route("/v1/jobs/{job}/run", post(run_now))
        .route("/v1/jobs/{job}/pause", post(pause))
        .route("/v1/jobs/{job}/resume", post(resume))
        .route("/v1/tick", post(tick))
        .route("/v1/reload", post(reload))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            Arc::clone(&d),
            crate::guard::check,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_BYTES))
        .layer(middleware::from_fn(declared_too_large))
        .layer(middleware::map_response(crate::error::as_json))
        .with_state(d)
}

/// A request whose `Content-Length` is over [`BODY_BYTES`] is refused
/// before a byte of its body is read (or a `100 Continue` asks for it):
/// `413`, which [`crate::error::as_json`] tells the limit.
async fn declared_too_large(
    req: axum::extract::Request,
    next: middleware::Next,
) -> axum::response::Response {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_BYTES as u64) {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    }
    next.run(req).await
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this endpoint does not take that method",
    )
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

/// A job's name from the path: valid, and a job of the configuration.
fn known(d: &Daemon, name: &str) -> Result<Arc<crate::state::Loaded>, ApiError> {
    if !baton_sched::config::valid_name(name) {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_job_name",
            format!("{name:?} is not a job name: [A-Za-z0-9_.-], 1 to 64 characters"),
        ));
    }
    let loaded = d.current();
    if loaded.config.jobs.contains_key(name) {
        Ok(loaded)
    } else {
        Err(ApiError::no_job(name))
    }
}

/// A JSON body (an empty one reads as `{}`); `what` says what it may hold.
fn body<T: for<'de> Deserialize<'de> + Default>(b: &Bytes, what: &str) -> Result<T, ApiError> {
    if b.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    let bad = |detail: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!("the body must be {what}: {detail}"),
        )
    };
    let v: Value = serde_json::from_slice(b).map_err(|e| bad(e.to_string()))?;
    if !v.is_object() {
        return Err(bad("it is not a JSON object".into()));
    }
    serde_json::from_value(v).map_err(|e| bad(e.to_string()))
}

/// A body that must be empty or `{}`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Nothing {}

fn no_body(b: &Bytes) -> Result<(), ApiError> {
    body::<Nothing>(b, "empty or {}").map(|_| ())
}

fn json_ok(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

/// Serialises `v` as it is declared (its fields in order), not as a map.
fn json_of<T: serde::Serialize>(status: StatusCode, v: &T) -> Response {
    match serde_json::to_vec(v) {
        Ok(bytes) => (
            status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            bytes,
        )
            .into_response(),
        Err(e) => ApiError::internal(e.to_string()).into_response(),
    }
}

async fn healthz(State(d): Shared) -> Response {
    json_ok(
        StatusCode::OK,
        json!({
            "ok": true,
            "stopping": d.stopping.load(std::sync::atomic::Ordering::SeqCst),
            "runs_in_flight": d.flights().len(),
        }),
    )
}

async fn page(
    State(d): Shared,
    logged_in: Option<axum::Extension<crate::guard::LoggedIn>>,
) -> Result<Response, ApiError> {
    let loaded = d.current();
    let clock = Arc::clone(&d.clock);
    let viewer = viewer(logged_in.as_ref());
    let html = blocking(move || {
        baton_sched::views::page::read_for(
            &loaded.config,
            clock.as_ref(),
            baton_sched::views::page::DEFAULT_REFRESH_SECS,
            viewer,
        )
    })
    .await?;
    Ok(axum::response::Html(html).into_response())
}

/// Who a page is shown to: a browser logged in through `/login` is offered
/// to log out.
fn viewer(
    logged_in: Option<&axum::Extension<crate::guard::LoggedIn>>,
) -> baton_sched::views::page::Viewer {
    if logged_in.is_some() {
        baton_sched::views::page::Viewer::LoggedIn
    } else {
        baton_sched::views::page::Viewer::Anyone
    }
}

/// `GET /jobs/{job}`: the job's own page, as the status page is served
/// (the same authentication; the end of its last log only for an
/// authenticated caller); an HTML `404` page for a job the
/// configuration does not have (or a name no job can have).
async fn job_page(
    State(d): Shared,
    Path(name): Path<String>,
    logged_in: Option<axum::Extension<crate::guard::LoggedIn>>,
    anonymous: Option<axum::Extension<crate::guard::Anonymous>>,
) -> Result<Response, ApiError> {
    let loaded = d.current();
    let clock = Arc::clone(&d.clock);
    let viewer = viewer(logged_in.as_ref());
    // A job's output is its user's: its logs are 0600, and a TCP caller
    // without the token may be any local user.
    let log = if anonymous.is_some() {
        baton_sched::views::page::job::Log::Withheld
    } else {
        baton_sched::views::page::job::Log::Shown
    };
    let html = blocking(move || {
        baton_sched::views::page::job::read(
            &loaded.config,
            clock.as_ref(),
            &name,
            baton_sched::views::page::DEFAULT_REFRESH_SECS,
            viewer,
            log,
        )
        .ok_or_else(|| baton_sched::views::page::job::not_found(&name))
    })
    .await?;
    Ok(match html {
        Ok(html) => axum::response::Html(html).into_response(),
        Err(missing) => (StatusCode::NOT_FOUND, axum::response::Html(missing)).into_response(),
    })
}

/// `GET /metrics`: Prometheus's text format 0.0.4, or OpenMetrics when the
/// `Accept` header prefers it (`baton_sched::views::metrics::Format::negotiate`).
async fn metrics(State(d): Shared, headers: axum::http::HeaderMap) -> Result<Response, ApiError> {
    let accept = headers
        .get_all(axum::http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let format = baton_sched::views::metrics::Format::negotiate(
        Some(accept.as_str()).filter(|a| !a.is_empty()),
    );
    let loaded = d.current();
    let clock = Arc::clone(&d.clock);
    let text =
        blocking(move || baton_sched::views::metrics::read(&loaded.config, clock.as_ref(), format))
            .await?
            .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, format.content_type()),
            (axum::http::header::VARY, "Accept"),
        ],
        text,
    )
        .into_response())
}

async fn status_of(d: &Daemon, only: Option<String>) -> Result<Response, ApiError> {
    let loaded = d.current();
    let now = d.decision_now();
    let s =
        blocking(move || baton_sched::views::status::read(&loaded.config, only.as_deref(), now))
            .await?;
    Ok(json_of(StatusCode::OK, &s))
}

async fn jobs(State(d): Shared) -> Result<Response, ApiError> {
    status_of(&d, None).await
}

async fn job(State(d): Shared, Path(name): Path<String>) -> Result<Response, ApiError> {
    known(&d, &name)?;
    status_of(&d, Some(name)).await
}

#[derive(Debug, Deserialize)]
struct Limit {
    /// Read as text: a number past any integer type is still a number,
    /// and lists the most (`MOST_RUNS`).
    limit: Option<String>,
}

/// The most runs `GET /v1/jobs/JOB/runs` lists.
const MOST_RUNS: u32 = 10_000;

/// The `limit` of a runs request: 20 when none, a number capped at
/// [`MOST_RUNS`], anything else refused.
fn limit_of(given: Option<&str>) -> Result<u32, ApiError> {
    match given {
        None => Ok(20),
        Some(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            Ok(s.parse::<u32>().map_or(MOST_RUNS, |n| n.min(MOST_RUNS)))
        }
        Some(s) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_request",
            format!("limit={s:?}: give a whole number (at most {MOST_RUNS} runs are listed)"),
        )),
    }
}

async fn runs(
    State(d): Shared,
    Path(name): Path<String>,
    Query(q): Query<Limit>,
) -> Result<Response, ApiError> {
    // A job renamed or removed since it ran still has its runs, as
    // `baton history OLD` shows them.
    let current = d.current();
    let former =
        baton_sched::config::valid_name(&name) && !current.config.jobs.contains_key(&name) && {
            let (config, job, now) = (Arc::clone(&current), name.clone(), d.decision_now());
            blocking(move || {
                baton_sched::views::history::former_jobs(&config.config, now)
                    .is_ok_and(|f| f.contains(&job))
            })
            .await?
        };
    let loaded = if former { current } else { known(&d, &name)? };
    let limit = limit_of(q.limit.as_deref())?;
    let now = d.decision_now();
    let runs =
        blocking(move || baton_sched::views::history::read(&loaded.config, &name, limit, now))
            .await?
            .map_err(|e| ApiError::internal(e.to_string()))?;
    Ok(json_of(StatusCode::OK, &runs))
}

async fn tick(State(d): Shared, b: Bytes) -> Result<Response, ApiError> {
    no_body(&b)?;
    stopping(&d)?;
    match crate::tick::tick(&d, "http").await {
        Some(Ok(t)) => Ok(json_of(StatusCode::OK, &t)),
        Some(Err(e)) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "unusable_state",
            format!("nothing was decided: {e}"),
        )),
        None => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "stopping",
            "the daemon is shutting down",
        )),
    }
}

async fn run_now(
    State(d): Shared,
    Path(name): Path<String>,
    b: Bytes,
) -> Result<Response, ApiError> {
    let loaded = known(&d, &name)?;
    no_body(&b)?;
    stopping(&d)?;
    if !loaded.config.enabled() {
        let from = &loaded.config.settings.enabled.source;
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "disabled",
            format!("not run: the kill switch is off (enabled = false, {from})"),
        ));
    }
    if loaded
        .config
        .jobs
        .get(&name)
        .is_some_and(|j| !j.enabled.value)
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "job_disabled",
            format!("not run: the job {name} is disabled (enabled = false)"),
        ));
    }
    let permit = Arc::clone(&d.slots)
        .acquire_owned()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let told = crate::worker::start(&d, &loaded, &name, Start::Manual, permit).await;
    match told {
        Some(Ok(Told::Started { run_id, fence })) => Ok(json_ok(
            StatusCode::ACCEPTED,
            json!({"job": name, "occurrence": "manual", "run_id": run_id, "fence": fence}),
        )),
        Some(Ok(Told::Running { holder } | Told::Missed { holder, .. })) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "busy",
            format!("not run: the lock of {name} is held"),
        )
        .with(
            "holder",
            holder
                .as_ref()
                .map_or(Value::Null, |h| holder_json(h, "live")),
        )),
        Some(Ok(other)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "not_run",
            format!(
                "not run: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ),
        )),
        Some(Err(e)) => Err(ApiError::internal(e.to_string())),
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            "busy",
            "not run: a run of this job is starting",
        )),
    }
}

async fn pause(State(d): Shared, Path(name): Path<String>, b: Bytes) -> Result<Response, ApiError> {
    let loaded = known(&d, &name)?;
    stopping(&d)?;
    let p: baton_sched::ops::pause::Request = body(
        &b,
        "empty or a JSON object with \"until\" (a time), \"for\" (a duration) and \"reason\", \
         each optional",
    )?;
    let job_tz = loaded
        .config
        .jobs
        .get(&name)
        .map_or(jiff::tz::TimeZone::UTC, |j| j.timezone.value.tz.clone());
    let until = p.until(&job_tz, d.decision_now()).map_err(|e| match e {
        baton_sched::ops::pause::Refused::Bad(m) => {
            ApiError::new(StatusCode::BAD_REQUEST, "bad_body", m)
        }
        baton_sched::ops::pause::Refused::Past(m) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "refused", m)
        }
    })?;
    let clock = Arc::clone(&d.clock);
    let (outcome, text) = blocking(move || {
        let mut out = String::new();
        let outcome = baton_sched::ops::pause::pause(
            &loaded.config,
            &name,
            until,
            p.reason.as_deref(),
            "http",
            clock,
            &mut out,
        );
        (outcome, out)
    })
    .await?;
    answer(outcome, text)
}

fn answer(outcome: Outcome, text: String) -> Result<Response, ApiError> {
    match outcome {
        Outcome::Done => Ok(json_ok(
            StatusCode::OK,
            json!({"ok": true, "message": text.trim_end()}),
        )),
        Outcome::Failed | Outcome::Unable => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "refused",
            if text.is_empty() {
                "refused (the daemon's log says why)".to_owned()
            } else {
                text.trim_end().to_owned()
            },
        )),
    }
}

async fn resume(
    State(d): Shared,
    Path(name): Path<String>,
    b: Bytes,
) -> Result<Response, ApiError> {
    let loaded = known(&d, &name)?;
    no_body(&b)?;
    stopping(&d)?;
    let clock = Arc::clone(&d.clock);
    let (outcome, text) = blocking(move || {
        let mut out = String::new();
        let outcome = baton_sched::ops::pause::resume(&loaded.config, &name, clock, &mut out);
        (outcome, out)
    })
    .await?;
    answer(outcome, text)
}

async fn reload(State(d): Shared, b: Bytes) -> Result<Response, ApiError> {
    no_body(&b)?;
    stopping(&d)?;
    let done = d.reload("POST /v1/reload").await?;
    Ok(json_ok(
        StatusCode::OK,
        json!({"ok": true, "jobs": done.jobs, "notes": done.notes}),
    ))
}
