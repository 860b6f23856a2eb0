//! Jobs over HTTP (the station's `create`): `PUT /v1/jobs/{job}` with the
//! job's table as JSON, `DELETE /v1/jobs/{job}`. Each is a drop-in file,
//! `jobs.d/JOB.toml` beside `baton.toml`, which every command reads.
//!
//! The whole configuration is validated with the change in it before
//! anything is written (an invalid job is refused with the message `baton
//! config` gives, and nothing changes), its `[daemon]` settings as a reload
//! judges them; the file is then written (0600) by
//! [`baton_sched::config::dropin`] (a unique temporary file, fsync, rename,
//! fsync of the directory) and the configuration reloaded. Changes and
//! reloads run one at a time. A job defined in `baton.toml` itself cannot
//! be replaced or deleted here. Once the daemon's stop began, nothing is
//! written: a change is refused as a run is (`503 stopping`).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use baton_sched::config::{ConfigError, Source, dropin};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::offload::blocking;
use crate::state::Daemon;

fn valid(name: &str) -> Result<(), ApiError> {
    if name.starts_with('.') {
        // `jobs.d/.NAME.toml` would be a hidden file, which is never read.
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_job_name",
            format!("{name:?}: a job managed over HTTP may not start with '.'"),
        ))
    } else if baton_sched::config::valid_name(name) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_job_name",
            format!("{name:?} is not a job name: [A-Za-z0-9_.-], 1 to 64 characters"),
        ))
    }
}

/// Refuses a job that `baton.toml` itself defines.
fn not_in_main(d: &Daemon, name: &str) -> Result<(), ApiError> {
    let loaded = d.current();
    let Some(job) = loaded.config.jobs.get(name) else {
        return Ok(());
    };
    let own = dropin::path(&d.opts.config_path, name);
    match &job.source {
        Source::File { path, .. } if **path == *own => Ok(()),
        _ => Err(ApiError::new(
            StatusCode::CONFLICT,
            "defined_in_config",
            format!(
                "the job {name} is defined in {}, not in jobs.d/: edit that file instead",
                d.opts.config_path.display()
            ),
        )),
    }
}

/// A refusal of the job `name`'s table as the request's: the drop-in it
/// would be is never written, so a mistake in it is named by the job's key
/// (`PUT /v1/jobs/NAME: key `run`: …`), not by a line of `dropin`, a file
/// that does not exist. A mistake elsewhere (`baton.toml`, another drop-in)
/// keeps its file and line.
fn in_request(e: ConfigError, dropin: &std::path::Path, name: &str) -> String {
    let ConfigError::Invalid { at, key, message } = &e else {
        return e.to_string();
    };
    let in_dropin = at
        .strip_prefix(&*dropin.to_string_lossy())
        .is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix(':')
                    .is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_digit()))
        });
    if !in_dropin {
        return e.to_string();
    }
    let job = format!("jobs.{name}");
    let key = match key.strip_prefix(&job) {
        Some("") => return format!("PUT /v1/jobs/{name}: {message}"),
        Some(rest) => rest.strip_prefix('.').unwrap_or(rest),
        None => key,
    };
    format!("PUT /v1/jobs/{name}: key `{key}`: {message}")
}

/// `[daemon]` settings a reload would refuse: nothing is written.
fn refused_settings(e: baton_sched::config::ConfigError) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "invalid_config",
        format!(
            "the configuration's [daemon] settings cannot be put in force, so nothing was written: {e}"
        ),
    )
}

pub(crate) async fn put(
    State(d): State<Arc<Daemon>>,
    Path(name): Path<String>,
    b: Bytes,
) -> Result<Response, ApiError> {
    valid(&name)?;
    let table: Value = serde_json::from_slice(&b).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!("the body must be the job's table as a JSON object: {e}"),
        )
    })?;
    let _one = d.reloading.lock().await;
    // Checked with the change's turn in hand: one that waited for it while
    // the stop began is refused too.
    crate::stopping::stopping(&d)?;
    not_in_main(&d, &name)?;
    let existed = d.current().config.jobs.contains_key(&name);
    let (path, over, n) = (d.opts.config_path.clone(), d.over.clone(), name.clone());
    let in_force = Arc::clone(&d);
    let written = blocking(move || {
        // The files as they are must be valid first: a broken baton.toml is
        // not this job's fault.
        baton_sched::config::load(&path, &over).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_config",
                format!("the configuration is invalid as it is, so no job can be added: {e}"),
            )
        })?;
        let text = dropin::job_toml(&n, &table).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_job",
                e.to_string(),
            )
        })?;
        let with = dropin::check_put(&path, &over, &n, &text).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_job",
                in_request(e, &dropin::path(&path, &n), &n),
            )
        })?;
        in_force.settings_for(&with).map_err(refused_settings)?;
        dropin::write(&path, &n, &text).map_err(|e| ApiError::internal(e.to_string()))
    })
    .await??;
    d.reload_locked("PUT /v1/jobs").await?;
    let status = if existed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    Ok((
        status,
        axum::Json(json!({"ok": true, "job": name, "file": written.display().to_string(), "created": !existed})),
    )
        .into_response())
}

pub(crate) async fn delete(
    State(d): State<Arc<Daemon>>,
    Path(name): Path<String>,
) -> Result<Response, ApiError> {
    valid(&name)?;
    let _one = d.reloading.lock().await;
    crate::stopping::stopping(&d)?;
    not_in_main(&d, &name)?;
    let (path, over, n) = (d.opts.config_path.clone(), d.over.clone(), name.clone());
    let in_force = Arc::clone(&d);
    let removed = blocking(move || {
        if !dropin::path(&path, &n).exists() {
            return Ok(false);
        }
        let without = dropin::check_delete(&path, &over, &n).map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_config",
                e.to_string(),
            )
        })?;
        in_force.settings_for(&without).map_err(refused_settings)?;
        dropin::delete(&path, &n).map_err(|e| ApiError::internal(e.to_string()))
    })
    .await??;
    if !removed {
        return Err(ApiError::no_job(&name));
    }
    d.reload_locked("DELETE /v1/jobs").await?;
    Ok((
        StatusCode::OK,
        axum::Json(json!({"ok": true, "job": name, "deleted": true})),
    )
        .into_response())
}
