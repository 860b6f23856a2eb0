//! `baton pause` and `baton resume`: a job's pause, recorded in the ledger
//! (since when, until when, why, who) for `tick` to honour and `status` to
//! show. A pause never stops a run in flight and never touches the lock: it
//! decides what happens to the occurrences that come while it lasts
//! (missed, reason `paused`). Pausing a paused job replaces its pause;
//! resuming a job that is not paused says so and succeeds.

use std::sync::Arc;

use baton_lease::Clock;
use jiff::Timestamp;

use crate::config::Config;
use crate::run::{CANNOT, OK};
use crate::surfaces::Surfaces;

/// How long a pause lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Until `baton resume`.
    Resumed,
    /// Until this instant.
    At(Timestamp),
}

fn local(config: &Config, job: &str, t: Timestamp) -> String {
    let tz = config.jobs.get(job).map_or_else(
        || config.settings.timezone.value.tz.clone(),
        |j| j.timezone.value.tz.clone(),
    );
    t.to_zoned_datetime(tz)
        .strftime("%Y-%m-%d %H:%M:%S %Z (%:z)")
        .to_string()
}

fn open(config: &Config, verb: &str, clock: Arc<dyn Clock>) -> Option<Surfaces> {
    if let Err(e) = crate::state_dir::locks_dir(&config.settings.state_dir.value) {
        crate::say::line(format_args!("{verb}: {e}"));
        return None;
    }
    Some(Surfaces::open(config, clock))
}

/// `baton pause JOB`: returns the exit code; what happened is said on
/// stdout (`out`).
pub fn pause(
    config: &Config,
    job: &str,
    until: Until,
    reason: Option<&str>,
    who: &str,
    clock: Arc<dyn Clock>,
    out: &mut String,
) -> u8 {
    let now = clock.wall();
    if let Until::At(t) = until
        && t <= now
    {
        crate::say::line(format_args!(
            "pause: {} is not in the future (now is {}): give a later --until, or --for",
            local(config, job, t),
            local(config, job, now)
        ));
        return CANNOT;
    }
    let Some(mut s) = open(config, "pause", clock) else {
        return CANNOT;
    };
    let before = s
        .ledger(|l| l.pauses(job, 1))
        .unwrap_or_default()
        .into_iter()
        .find(|p| p.active(now));
    let until_at = match until {
        Until::Resumed => None,
        Until::At(t) => Some(t),
    };
    let done = s.ledger(|l| l.pause(job, until_at, reason, who, now));
    s.finish();
    let Some(row) = done else {
        return CANNOT;
    };
    if let Some(b) = before {
        out.push_str(&format!(
            "{job}: the pause since {} (by {}) is replaced\n",
            local(config, job, b.since),
            b.who
        ));
    }
    out.push_str(&format!(
        "{job}: paused {}{}; its occurrences are missed (reason \"paused\") meanwhile; a run in \
         flight goes on\n",
        match row.until {
            Some(u) => format!("until {}", local(config, job, u)),
            None => "until `baton resume`".into(),
        },
        row.reason.map(|r| format!(": {r}")).unwrap_or_default()
    ));
    OK
}

/// `baton resume JOB`: returns the exit code.
pub fn resume(config: &Config, job: &str, clock: Arc<dyn Clock>, out: &mut String) -> u8 {
    let now = clock.wall();
    let Some(mut s) = open(config, "resume", clock) else {
        return CANNOT;
    };
    let ended = s.ledger(|l| l.resume(job, now));
    s.finish();
    match ended {
        None => CANNOT,
        Some(None) => {
            out.push_str(&format!("{job}: not paused; nothing to resume\n"));
            OK
        }
        Some(Some(p)) => {
            out.push_str(&format!(
                "{job}: resumed (paused since {} by {}{}); the next occurrence runs as scheduled\n",
                local(config, job, p.since),
                p.who,
                p.reason.map(|r| format!(": {r}")).unwrap_or_default()
            ));
            OK
        }
    }
}
