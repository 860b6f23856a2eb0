//! The `--json` record: every trial, the rows and the total, as one
//! pretty-printed JSON document.

use crate::results::Campaign;

/// The JSON document for `c`.
pub(crate) fn campaign(c: &Campaign) -> String {
    // OK because the campaign is plain data, which serde_json always renders.
    serde_json::to_string_pretty(c).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")) + "\n"
}
