//! What the scheduler tells the ledger of its jobs when it is built: each
//! job's settings in the command line's own words (the keys of a
//! `[jobs.NAME]` table, as TOML), and who declared it. With that the
//! command line's read commands (`baton status`, `history`, `pause`,
//! `resume`) show and control the service's jobs without a `baton.toml`.
//!
//! This module only writes what the service was given; it never reads a
//! declaration back, nor decides anything from one: the scheduler runs
//! what its builder was given, whatever the ledger says.

use std::fmt::Write as _;
use std::time::Duration;

use crate::quote::quoted as text;

use baton_store::ledger::Declaration;
use jiff::Timestamp;

use crate::plan::Plan;

/// `plan`'s declaration, made by `by` at `now`.
pub(crate) fn declaration(plan: &Plan, by: &str, now: Timestamp) -> Declaration {
    let mut config = String::new();
    let mut key = |k: &str, v: String| {
        let _ = writeln!(config, "{k} = {v}");
    };
    key("schedule", text(&plan.cron));
    key("timezone", text(&plan.zone_name));
    if plan.lock != plan.name {
        key("lock", text(&plan.lock));
    }
    key("retries", plan.retry.attempts.saturating_sub(1).to_string());
    key("backoff", duration(plan.retry.backoff));
    key("backoff_max", duration(plan.retry.backoff_max));
    key("timeout", duration(plan.timeout.unwrap_or(Duration::ZERO)));
    key(
        "max_runtime",
        duration(plan.max_runtime.unwrap_or(Duration::ZERO)),
    );
    if plan.catch_up_window.is_zero() {
        key("catch_up", text("none"));
    } else {
        key("catch_up", text(plan.catch_up.word()));
        key("catch_up_window", duration(plan.catch_up_window));
    }
    key("overlap", text(plan.overlap.word()));
    key("ttl", duration(plan.ttl));
    key("takeover_grace", duration(plan.takeover_grace));
    key("kill_grace", duration(plan.grace));
    if let crate::plan::Work::Command(argv) = &plan.work {
        let argv: Vec<String> = argv.iter().map(|a| text(a)).collect();
        key("run", format!("[{}]", argv.join(", ")));
    }
    Declaration {
        job: plan.name.clone(),
        config,
        by: by.to_owned(),
        declared: now,
    }
}

/// Who declares: this program, host and process, for people reading
/// `baton status`: `billing on host-a (pid 4121)`.
pub(crate) fn by() -> String {
    let program = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "a service".to_owned());
    let uname = rustix::system::uname();
    format!(
        "{program} on {} (pid {})",
        uname.nodename().to_string_lossy(),
        std::process::id()
    )
}

/// `d` as the command line writes a duration: whole milliseconds.
fn duration(d: Duration) -> String {
    text(&format!("{}ms", d.as_millis()))
}
