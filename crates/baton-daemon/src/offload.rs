//! Work a handler cannot do on the async thread (the ledger is SQLite,
//! the configuration is files) runs off it, on the runtime's blocking pool
//! ([`blocking`]); a task that fails there (it panicked or was cancelled) is answered as the
//! API's internal error.
//!
//! What it never does: decide anything of the work it runs, or let a
//! failed task go unanswered.

use crate::error::ApiError;

/// Runs `f` off the async thread.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the request failed: {e}")))
}
