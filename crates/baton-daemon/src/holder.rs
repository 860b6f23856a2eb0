//! A lock's holder as the API shows it: the keys and order of `status
//! --json`, and `renewed` besides, with the verdict the lock reached of it.
//! The run-now answer and a tick's skipped or missed starts show it alike.
//!
//! What it never does: read the lock or judge the holder itself; the
//! verdict is the caller's.

use serde_json::Value;

/// A lock's holder as `status --json` shows it (the same keys, in the same
/// order, and `renewed` besides).
#[derive(serde::Serialize)]
struct HolderOut<'h> {
    pid: Option<u32>,
    host: Option<&'h str>,
    fence: Option<u64>,
    run_id: Option<&'h str>,
    since: Option<&'h str>,
    verdict: &'h str,
    slot: Option<u32>,
    renewed: Option<&'h str>,
}

/// A lock's holder as `status --json` shows it; `verdict` is what the lock
/// decided of it (`live`, `hung`, `orphaned`); `slot` null when the holder
/// holds another lock than the job's (its guard named it).
pub(crate) fn holder_json(h: &baton_sched::engine::alerts::HolderInfo, verdict: &str) -> Value {
    serde_json::to_value(HolderOut {
        pid: h.pid,
        host: h.host.as_deref(),
        fence: h.fence,
        run_id: h.run.as_deref(),
        since: h.acquired.as_deref(),
        verdict,
        slot: h.slot,
        renewed: h.renewed.as_deref(),
    })
    .unwrap_or(Value::Null)
}
