//! What a run or a missed range is on the page's pictures: its [`Kind`],
//! the colour of each kind, the legend that names them, and the words a
//! mark's `<title>` says on hover (or a long press).
//!
//! A kind is a run's verdict, told apart further where a person needs it:
//! a run that failed because its last attempt ran past its timeout is
//! `timeout`, a run with no end yet is `running`, and a missed range is
//! `missed`. A verdict this baton does not know (a newer one wrote it) is
//! drawn as `failed`, its own word kept in the title: nothing is shown as
//! a success that is not one. Every colour is in the legend, and no mark
//! says what it is by its colour alone: its title names its kind.

use std::fmt::Write as _;

use baton_store::ledger::MissedRow;
use baton_store::words::{AttemptOutcome, RunVerdict};
use jiff::Timestamp;

use crate::views::history::RunView;

/// What a mark shows, and its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Every step and check succeeded.
    Ok,
    /// A step failed.
    Failed,
    /// The steps succeeded and a check failed.
    CheckFailed,
    /// It failed because its last attempt ran past its timeout.
    Timeout,
    /// Its lease was lost while it ran.
    LeaseLost,
    /// A graceful shutdown stopped it.
    Interrupted,
    /// Its process died before it recorded an end.
    Abandoned,
    /// A later run of its job replaced it (`overlap = "replace"`).
    Replaced,
    /// It has no end yet.
    Running,
    /// Occurrences that did not run (a missed range).
    Missed,
}

impl Kind {
    /// Every kind, in the legend's order.
    pub const ALL: [Kind; 10] = [
        Kind::Ok,
        Kind::Failed,
        Kind::CheckFailed,
        Kind::Timeout,
        Kind::LeaseLost,
        Kind::Interrupted,
        Kind::Abandoned,
        Kind::Replaced,
        Kind::Running,
        Kind::Missed,
    ];

    /// Its word, as the legend, the titles and `data-kind` say it.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Ok => "ok",
            Kind::Failed => "failed",
            Kind::CheckFailed => "check-failed",
            Kind::Timeout => "timeout",
            Kind::LeaseLost => "lease-lost",
            Kind::Interrupted => "interrupted",
            Kind::Abandoned => "abandoned",
            Kind::Replaced => "replaced",
            Kind::Running => "running",
            Kind::Missed => "missed",
        }
    }

    /// Its colour (the missed range's is in the style sheet: it is drawn
    /// hollow, with a dashed edge).
    fn colour(self) -> Option<&'static str> {
        match self {
            Kind::Ok => Some("#2da44e"),
            Kind::Failed => Some("#cf222e"),
            Kind::CheckFailed => Some("#fb8f44"),
            Kind::Timeout => Some("#9a6700"),
            Kind::LeaseLost => Some("#8250df"),
            Kind::Interrupted => Some("#6e7781"),
            Kind::Abandoned => Some("#1b1f24"),
            Kind::Replaced => Some("#bf3989"),
            Kind::Running => Some("#1f6feb"),
            Kind::Missed => None,
        }
    }

    /// The kind of run `r`.
    pub fn of_run(r: &RunView) -> Kind {
        let Some(verdict) = r.verdict.as_deref() else {
            return Kind::Running;
        };
        let timed_out = r
            .attempts
            .last()
            .is_some_and(|a| a.outcome.parse() == Ok(AttemptOutcome::Timeout));
        match verdict.parse::<RunVerdict>() {
            Ok(RunVerdict::Ok) => Kind::Ok,
            Ok(RunVerdict::Failed | RunVerdict::CheckFailed) if timed_out => Kind::Timeout,
            Ok(RunVerdict::Failed) | Err(_) => Kind::Failed,
            Ok(RunVerdict::CheckFailed) => Kind::CheckFailed,
            Ok(RunVerdict::LeaseLost) => Kind::LeaseLost,
            Ok(RunVerdict::Interrupted) => Kind::Interrupted,
            Ok(RunVerdict::Abandoned) => Kind::Abandoned,
            Ok(RunVerdict::Replaced) => Kind::Replaced,
        }
    }
}

/// The rules that colour each kind: `fill` for a mark in a picture,
/// `background` for a swatch in the legend or a table.
pub(super) fn style() -> String {
    let mut out = String::new();
    for k in Kind::ALL {
        if let Some(c) = k.colour() {
            let _ = writeln!(out, ".k-{}{{fill:{c};background:{c}}}", k.word());
        }
    }
    out
}

/// The legend: every kind's swatch and word.
pub(super) fn legend() -> String {
    let mut out = String::from("<ul class=\"legend\" aria-label=\"what the colours mean\">");
    for k in Kind::ALL {
        let w = k.word();
        let _ = write!(
            out,
            "<li><span class=\"swatch k-{w}\"></span>{}</li>",
            legend_words(k)
        );
    }
    out.push_str("</ul>\n");
    out
}

fn legend_words(k: Kind) -> &'static str {
    match k {
        Kind::Missed => "missed (with its reason)",
        k => k.word(),
    }
}

/// A timestamp in RFC 3339, as the views keep them.
pub(super) fn at(t: &str) -> Option<Timestamp> {
    t.parse().ok()
}

/// How long `r` ran, in milliseconds: until it finished, or until `now`
/// while it has no end. A run whose duration is unknown (`abandoned`) is
/// drawn until it was found so.
pub(super) fn run_ms(r: &RunView, now: Timestamp) -> u64 {
    r.duration_ms.unwrap_or_else(|| {
        let end = r.finished.as_deref().and_then(at).unwrap_or(now);
        at(&r.started).map_or(0, |s| {
            u64::try_from(end.duration_since(s).as_millis()).unwrap_or(0)
        })
    })
}

/// Whether `r` ended without a known length (`abandoned`: its `duration_ms`
/// is null, as how long it ran is unknown).
pub(super) fn unknown_length(r: &RunView) -> bool {
    r.duration_ms.is_none() && r.verdict.is_some()
}

/// The title of run `r`: its kind (and its verdict's own word when that
/// differs), when it started in `tz`, how long it ran and its id. Not
/// escaped.
pub(super) fn run_title(r: &RunView, tz: &jiff::tz::TimeZone, now: Timestamp) -> String {
    let kind = Kind::of_run(r);
    let mut t = kind.word().to_owned();
    if let Some(v) = r.verdict.as_deref()
        && v != kind.word()
    {
        let _ = write!(t, " (verdict {v})");
    }
    let started = crate::times::human_in(&r.started, tz);
    let took = crate::units::show_duration(std::time::Duration::from_millis(run_ms(r, now)));
    match kind {
        Kind::Running => {
            let _ = write!(t, ", started {started}, {took} so far");
        }
        // Abandoned: how long it ran is unknown; what is known is when it
        // was found so.
        _ if unknown_length(r) => {
            let _ = write!(
                t,
                ", started {started}, how long it ran unknown (found so {took} after its start)"
            );
        }
        _ => {
            let _ = write!(t, ", started {started}, took {took}");
        }
    }
    if r.manual {
        t.push_str(", manual");
    }
    let _ = write!(t, ", run {}", r.run_id);
    t
}

/// The title of missed range `m`: how many occurrences, from when to when
/// in `tz`, and why. Not escaped.
pub(super) fn miss_title(m: &MissedRow, tz: &jiff::tz::TimeZone) -> String {
    let show = |s: i64| {
        Timestamp::from_second(s).map_or_else(|_| s.to_string(), |t| crate::times::human(t, tz))
    };
    let count = if m.at_least {
        format!("at least {}", m.count)
    } else {
        m.count.to_string()
    };
    let span = if m.first == m.last {
        show(m.first)
    } else {
        format!("{} to {}", show(m.first), show(m.last))
    };
    let mut t = format!("missed: {count} occurrence(s), {span}: {}", m.reason);
    if let Some(d) = miss_detail(m, tz) {
        let _ = write!(t, " ({d})");
    }
    t
}

/// What missed range `m` says of why, for people: without the reason it
/// may begin with (shown beside it already), its instants in `tz`. Not
/// escaped.
pub(super) fn miss_detail(m: &MissedRow, tz: &jiff::tz::TimeZone) -> Option<String> {
    let d = m.detail.as_deref()?;
    let reason = m.reason.to_string();
    let d = d
        .strip_prefix(reason.as_str())
        .and_then(|rest| rest.strip_prefix(": "))
        .unwrap_or(d);
    Some(crate::times::human_in(d, tz))
}

/// When missed range `m` is placed in time: its last occurrence.
pub(super) fn miss_at(m: &MissedRow) -> Option<Timestamp> {
    Timestamp::from_second(m.last).ok()
}

/// `s` for a URL's path segment or fragment: every byte but ASCII letters,
/// digits, `-` and `_` percent-encoded.
pub(super) fn url_part(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}
