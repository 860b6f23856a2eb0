//! The API's one error type: a status, a stable code and a message, sent
//! as JSON (`{"error": {"code", "message"}}`, plus what the code needs,
//! such as the holder of a busy lock). It never carries internals the
//! caller did not send (no stack, no token).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An API error.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    extra: Option<(&'static str, Value)>,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            extra: None,
        }
    }

    pub(crate) fn with(mut self, key: &'static str, value: Value) -> Self {
        self.extra = Some((key, value));
        self
    }

    pub(crate) fn no_job(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "no_such_job",
            format!("no job named {name:?}"),
        )
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": {"code": self.code, "message": self.message}});
        if let Some((k, v)) = self.extra {
            body[k] = v;
        }
        (self.status, axum::Json(body)).into_response()
    }
}
