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
use crate::engine::surfaces::Surfaces;
use crate::outcome::Outcome;

/// A pause asked over HTTP (the daemon's `POST /v1/jobs/JOB/pause`, and a
/// service's router): a JSON object with `until` (an instant: RFC 3339, or
/// a local time in the job's zone), `for` (a duration: `90m`) and
/// `reason`, each optional; none of them means until resumed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// An instant.
    pub until: Option<String>,
    /// A duration.
    #[serde(rename = "for")]
    pub for_: Option<String>,
    /// Why, for people.
    pub reason: Option<String>,
}

/// Why a [`Request`] cannot be honoured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// It says something that cannot be read (HTTP 400).
    #[error("{0}")]
    Bad(String),
    /// It can be read, and would end at once (HTTP 422).
    #[error("{0}")]
    Past(String),
}

impl Request {
    /// How long the pause lasts, read in `tz` (the job's zone) at `now`.
    ///
    /// # Errors
    ///
    /// [`Refused::Bad`] for both `until` and `for`, a time or duration that
    /// cannot be read, or a reason with control characters;
    /// [`Refused::Past`] for an end not after `now`.
    pub fn until(&self, tz: &jiff::tz::TimeZone, now: Timestamp) -> Result<Until, Refused> {
        let until = match (&self.until, &self.for_) {
            (Some(_), Some(_)) => {
                return Err(Refused::Bad("give \"until\" or \"for\", not both".into()));
            }
            (Some(u), None) => Until::At(
                crate::units::parse_instant(u, tz)
                    .map_err(|e| Refused::Bad(format!("until: {e}")))?,
            ),
            (None, Some(f)) => {
                let dur = crate::units::parse_duration(f)
                    .map_err(|e| Refused::Bad(format!("for: {e}")))?;
                let span = jiff::SignedDuration::try_from(dur)
                    .map_err(|e| Refused::Bad(format!("for: {e}")))?;
                Until::At(
                    now.checked_add(span)
                        .map_err(|e| Refused::Bad(format!("for: {e}")))?,
                )
            }
            (None, None) => Until::Resumed,
        };
        if self.reason.as_deref().is_some_and(unshowable) {
            return Err(Refused::Bad(format!("reason: {UNSHOWABLE}")));
        }
        if let Until::At(t) = until
            && t <= now
        {
            return Err(Refused::Past(format!(
                "the pause would end at {t}, which is not in the future (now is {now})"
            )));
        }
        Ok(until)
    }
}

/// How long a pause lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// Until `baton resume`.
    Resumed,
    /// Until this instant.
    At(Timestamp),
}

fn local(config: &Config, job: &str, t: Timestamp) -> String {
    crate::times::human(t, config.zone_of(job))
}

fn open(config: &Config, verb: &str, clock: Arc<dyn Clock>) -> Option<Surfaces> {
    if let Err(e) = crate::state::state_dir::locks_dir(&config.settings.state_dir.value) {
        crate::say::line(format_args!("{verb}: {e}"));
        return None;
    }
    Some(Surfaces::open(config, clock))
}

/// A pause, as `pause --json` and `resume --json` print it: times in RFC
/// 3339 on the job's wall clock.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PauseView {
    /// When it began.
    pub since: String,
    /// When it lapses on its own; null for a pause until `baton resume`.
    pub until: Option<String>,
    /// Why, as given.
    pub reason: Option<String>,
    /// Who paused the job.
    pub by: String,
    /// The row's times, for the human form.
    #[serde(skip)]
    at: (Timestamp, Option<Timestamp>),
}

impl PauseView {
    fn of(config: &Config, job: &str, p: &baton_store::ledger::PauseRow) -> Self {
        let tz = config.zone_of(job);
        Self {
            since: crate::times::rfc3339(p.since, tz),
            until: p.until.map(|u| crate::times::rfc3339(u, tz)),
            reason: p.reason.clone(),
            by: p.who.clone(),
            at: (p.since, p.until),
        }
    }
}

/// What `baton pause` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Paused {
    /// The job.
    pub job: String,
    /// The pause now in force.
    pub pause: PauseView,
    /// The pause it replaced, if one was in force.
    pub replaced: Option<PauseView>,
}

/// What `baton resume` did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Resumed {
    /// The job.
    pub job: String,
    /// Whether a pause was in force (and ended now).
    pub resumed: bool,
    /// The pause that ended, or null.
    pub pause: Option<PauseView>,
}

/// `baton pause JOB`: returns the outcome; what happened is said on
/// stdout (`out`), as [`render_paused`] says it.
pub fn pause(
    config: &Config,
    job: &str,
    until: Until,
    reason: Option<&str>,
    who: &str,
    clock: Arc<dyn Clock>,
    out: &mut String,
) -> Outcome {
    match pause_job(config, job, until, reason, who, clock) {
        Ok(p) => {
            out.push_str(&render_paused(config, &p));
            Outcome::Done
        }
        Err(outcome) => outcome,
    }
}

/// `baton pause JOB`: what was done, or the outcome after saying why
/// nothing was.
pub fn pause_job(
    config: &Config,
    job: &str,
    until: Until,
    reason: Option<&str>,
    who: &str,
    clock: Arc<dyn Clock>,
) -> Result<Paused, Outcome> {
    let now = clock.wall();
    if let Until::At(t) = until
        && t <= now
    {
        crate::say::line(format_args!(
            "pause: {} is not in the future (now is {}): give a later --until, or --for",
            local(config, job, t),
            local(config, job, now)
        ));
        return Err(Outcome::Unable);
    }
    if reason.is_some_and(unshowable) {
        crate::say::line(format_args!(
            "pause: --reason: {UNSHOWABLE}; nothing was paused"
        ));
        return Err(Outcome::Unable);
    }
    let Some(mut s) = open(config, "pause", clock) else {
        return Err(Outcome::Unable);
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
    // An empty reason (`--reason ''`, `"reason": ""`) is no reason.
    let reason = reason.filter(|r| !r.trim().is_empty());
    let done = s.ledger(|l| l.pause(job, until_at, reason, who, now));
    s.finish();
    let row = done.ok_or(Outcome::Unable)?;
    Ok(Paused {
        job: job.to_owned(),
        pause: PauseView::of(config, job, &row),
        replaced: before.map(|b| PauseView::of(config, job, &b)),
    })
}

/// What [`pause`] did, for people.
pub fn render_paused(config: &Config, p: &Paused) -> String {
    let job = &p.job;
    let mut out = String::new();
    if let Some(b) = &p.replaced {
        out.push_str(&format!(
            "{job}: the pause since {} (by {}) is replaced\n",
            local(config, job, b.at.0),
            b.by
        ));
    }
    out.push_str(&format!(
        "{job}: paused {}{}; its occurrences are missed (reason \"paused\") meanwhile; a run in \
         flight goes on\n",
        match p.pause.at.1 {
            Some(u) => format!("until {}", local(config, job, u)),
            None => "until `baton resume`".into(),
        },
        p.pause
            .reason
            .as_ref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default()
    ));
    out
}

/// `baton resume JOB`: returns the outcome; what happened is said on
/// stdout (`out`), as [`render_resumed`] says it.
pub fn resume(config: &Config, job: &str, clock: Arc<dyn Clock>, out: &mut String) -> Outcome {
    match resume_job(config, job, clock) {
        Ok(r) => {
            out.push_str(&render_resumed(config, &r));
            Outcome::Done
        }
        Err(outcome) => outcome,
    }
}

/// `baton resume JOB`: what was done, or the outcome after saying why
/// nothing was.
pub fn resume_job(config: &Config, job: &str, clock: Arc<dyn Clock>) -> Result<Resumed, Outcome> {
    let now = clock.wall();
    let Some(mut s) = open(config, "resume", clock) else {
        return Err(Outcome::Unable);
    };
    let ended = s.ledger(|l| l.resume(job, now));
    s.finish();
    let ended = ended.ok_or(Outcome::Unable)?;
    Ok(Resumed {
        job: job.to_owned(),
        resumed: ended.is_some(),
        pause: ended.map(|p| PauseView::of(config, job, &p)),
    })
}

/// What [`resume`] did, for people.
pub fn render_resumed(config: &Config, r: &Resumed) -> String {
    let job = &r.job;
    match &r.pause {
        None => format!("{job}: not paused; nothing to resume\n"),
        Some(p) => format!(
            "{job}: resumed (paused since {} by {}{}); the next occurrence runs as scheduled\n",
            local(config, job, p.at.0),
            p.by,
            p.reason
                .as_ref()
                .map(|r| format!(": {r}"))
                .unwrap_or_default()
        ),
    }
}

/// Why a reason is refused ([`unshowable`]).
const UNSHOWABLE: &str = "control characters (line breaks, escapes) and the Unicode line \
                          separators and direction overrides are not allowed in a reason";

/// Whether a pause's reason holds a character that would not show as
/// itself where `status` and `pause` print it as it is: a control
/// character (a line break could fake a line, an escape recolour a
/// terminal), a Unicode line or paragraph separator (another line), or a
/// direction mark, embedding, override or isolate (text shown in another
/// order than written).
fn unshowable(reason: &str) -> bool {
    reason.chars().any(|c| {
        c.is_control()
            || matches!(
                c,
                '\u{2028}' | '\u{2029}' | '\u{200E}' | '\u{200F}' | '\u{061C}'
                    | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
            )
    })
}
