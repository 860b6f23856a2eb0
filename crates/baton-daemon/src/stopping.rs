//! The refusal of a change once the daemon's stop began (`503
//! stopping`), checked by each handler that changes what runs or what is
//! configured.
//!
//! What it never does: stop anything itself, or refuse a read.

use axum::http::StatusCode;

use crate::error::ApiError;
use crate::state::Daemon;

/// Refuses a change once the daemon's stop began (`503 stopping`): a run,
/// a tick, a job written or removed, a reload, a pause or a resume. What
/// was accepted before it is made whole.
pub(crate) fn stopping(d: &Daemon) -> Result<(), ApiError> {
    if d.stopping.load(std::sync::atomic::Ordering::SeqCst) {
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "stopping",
            "the daemon is shutting down",
        ))
    } else {
        Ok(())
    }
}
