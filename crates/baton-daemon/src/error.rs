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

    /// Its body: `{"error": {"code", "message"}}`, and what the code needs.
    pub(crate) fn body(self) -> Value {
        let mut body = json!({"error": {"code": self.code, "message": self.message}});
        if let Some((k, v)) = self.extra {
            body[k] = v;
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status;
        (status, axum::Json(self.body())).into_response()
    }
}

/// The code of an error no handler named, after its status.
pub(crate) fn code_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad_request",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::URI_TOO_LONG => "uri_too_long",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "content_type",
        StatusCode::UNPROCESSABLE_ENTITY => "unprocessable",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => "headers_too_large",
        _ if status.is_client_error() => "bad_request",
        _ => "internal",
    }
}

/// Every error the router answers itself (a path that does not decode, a
/// query that does not parse, a body too large) as JSON too, with a code
/// named after its status; a body too large is told the limit. An HTML
/// answer (the login form's) is left as it is.
pub(crate) async fn as_json(r: Response) -> Response {
    let status = r.status();
    // The login form answers a wrong token with itself, as HTML, on purpose.
    let as_sent = r
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if !(status.is_client_error() || status.is_server_error()) || as_sent {
        return r;
    }
    let code = code_of(status);
    let body = axum::body::to_bytes(r.into_body(), 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let message = if status == StatusCode::PAYLOAD_TOO_LARGE {
        format!(
            "the request body is larger than {} bytes, the most the daemon reads: send a smaller \
             one (a job's table or a pause takes a few hundred)",
            crate::limits::BODY_BYTES
        )
    } else if body.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        body
    };
    ApiError::new(status, code, message).into_response()
}
