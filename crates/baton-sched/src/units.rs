//! Durations and sizes as people write them, on the command line and in
//! `baton.toml`: a number of seconds (`30`, `0.5`), or numbers with units
//! `ms`, `s`, `m`, `h`, `d`, combined (`250ms`, `15m`, `1h30m`, `1d`);
//! sizes in bytes or with `KiB`, `MiB`, `GiB` (`512KiB`, `1MiB`), or `KB`,
//! `MB`, `GB` in powers of ten. ISO 8601 durations (`PT30S`) are accepted
//! too. This module parses and shows; it never decides what a value means.

use std::time::Duration;

/// The longest duration accepted: ten years ([`baton_runner::MAX_DURATION`]).
pub const MAX_DURATION: Duration = baton_runner::MAX_DURATION;

/// The duration syntax, for help texts and error messages.
pub const DURATION_SYNTAX: &str =
    "a number of seconds (30, 0.5) or numbers with units ms, s, m, h, d (250ms, 15m, 1h30m, 1d)";

/// The size syntax, for error messages.
pub const SIZE_SYNTAX: &str =
    "a number of bytes, or with a unit: 512KiB, 1MiB, 1GiB (or KB, MB, GB)";

/// The instant syntax, for help texts and error messages.
pub const INSTANT_SYNTAX: &str = "RFC 3339 (2026-12-01T18:00:00+05:30, or with Z), or a date \
     and time in the job's zone (2026-12-01T18:00, 2026-12-01 18:00:00, 2026-12-01)";

/// Why a text is not an instant ([`parse_instant`]); each names the text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BadInstant {
    /// An RFC 3339 instant baton does not read.
    #[error(transparent)]
    Rfc3339(#[from] crate::times::BadTime),
    /// Neither RFC 3339 nor a civil date and time.
    #[error("{0:?} is not a time: use {INSTANT_SYNTAX}")]
    Syntax(String),
    /// A civil date and time the zone cannot place.
    #[error("{text:?} is not a time in this zone: {source}")]
    Zone {
        /// The text.
        text: String,
        /// What jiff said.
        #[source]
        source: jiff::Error,
    },
    /// A time in the zone's last gap, with no instant after it.
    #[error("{0:?} is not a time in this zone")]
    NoInstantAfter(String),
}

/// Why a text is not a duration ([`parse_duration`]); each names the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadDuration {
    /// Not a duration's syntax.
    #[error("{0:?} is not a duration: use {DURATION_SYNTAX}")]
    Syntax(String),
    /// A negative duration.
    #[error("{0:?} is negative: a duration is zero or more")]
    Negative(String),
    /// Longer than [`MAX_DURATION`].
    #[error("{0:?} is longer than ten years")]
    TooLong(String),
}

/// Why a text is not a size ([`parse_size`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a size: use {SIZE_SYNTAX}")]
pub struct BadSize(String);

/// Parses an instant: RFC 3339 with an offset (within ±23:59, without
/// seconds: [`crate::times::parse_rfc3339`]), or a civil date and time
/// read in `tz` (a time in a gap or a fold is resolved as jiff's
/// `compatible` rule does: later in a gap, earlier in a fold).
///
/// # Errors
///
/// [`BadInstant`], naming the text.
pub fn parse_instant(s: &str, tz: &jiff::tz::TimeZone) -> Result<jiff::Timestamp, BadInstant> {
    let t = s.trim();
    if crate::times::has_offset(t) {
        return Ok(crate::times::parse_rfc3339(t)?);
    }
    let civil = t.parse::<jiff::civil::DateTime>().ok().or_else(|| {
        t.parse::<jiff::civil::Date>()
            .ok()
            .map(|d| d.to_datetime(jiff::civil::Time::midnight()))
    });
    let Some(dt) = civil else {
        return Err(BadInstant::Syntax(t.to_owned()));
    };
    let amb = tz.to_ambiguous_timestamp(dt);
    let gap = matches!(amb.offset(), jiff::tz::AmbiguousOffset::Gap { .. });
    let at = amb.earlier().map_err(|source| BadInstant::Zone {
        text: t.to_owned(),
        source,
    })?;
    if !gap {
        // A time that occurs twice (a fall-back day) is its first one.
        return Ok(at);
    }
    // A time the zone skips (a spring-forward day) is the first instant
    // after the gap, as a schedule's fixed time that day is.
    tz.following(at)
        .next()
        .map(|tr| tr.timestamp())
        .ok_or_else(|| BadInstant::NoInstantAfter(t.to_owned()))
}

/// Parses a duration. Negative durations, and durations over
/// [`MAX_DURATION`], are refused.
///
/// # Errors
///
/// [`BadDuration`], which says what is allowed.
pub fn parse_duration(s: &str) -> Result<Duration, BadDuration> {
    let t = s.trim();
    let bad = || BadDuration::Syntax(t.to_owned());
    let negative = || BadDuration::Negative(t.to_owned());
    let d = if let Ok(secs) = t.parse::<f64>() {
        if t.starts_with('-') {
            return Err(negative());
        }
        Duration::try_from_secs_f64(secs).map_err(|_| bad())?
    } else if t.starts_with(['P', 'p']) {
        let d: jiff::SignedDuration = t.parse().map_err(|_| bad())?;
        Duration::try_from(d).map_err(|_| negative())?
    } else {
        with_units(t).ok_or_else(|| {
            if t.starts_with('-') {
                negative()
            } else {
                bad()
            }
        })?
    };
    if d > MAX_DURATION {
        return Err(BadDuration::TooLong(t.to_owned()));
    }
    Ok(d)
}

/// `1h30m`, `250ms`, `1.5s`: numbers each followed by a unit.
fn with_units(s: &str) -> Option<Duration> {
    if s.is_empty() {
        return None;
    }
    let mut rest = s;
    let mut total = 0f64;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ms" => 0.001,
            "s" | "sec" | "secs" => 1.0,
            "m" | "min" | "mins" => 60.0,
            "h" | "hr" | "hrs" => 3600.0,
            "d" | "day" | "days" => 86_400.0,
            _ => return None,
        };
        rest = &rest[unit_end..];
        total += n * scale;
    }
    Duration::try_from_secs_f64(total).ok()
}

/// A duration for people: `2h5m`, `3.2s`, `250ms`, `1d`.
pub fn show_duration(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 86_400 && secs.is_multiple_of(3600) {
        let (days, hours) = (secs / 86_400, (secs % 86_400) / 3600);
        if hours == 0 {
            format!("{days}d")
        } else {
            format!("{days}d{hours}h")
        }
    } else if secs >= 3600 {
        let (h, m) = (secs / 3600, (secs % 3600) / 60);
        if m == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{m}m")
        }
    } else if secs >= 60 {
        let (m, s) = (secs / 60, secs % 60);
        if s == 0 && d.subsec_nanos() == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{s}s")
        }
    } else if secs >= 1 {
        if d.subsec_millis() == 0 {
            format!("{secs}s")
        } else {
            format!("{:.1}s", d.as_secs_f64())
        }
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Parses a size in bytes.
///
/// # Errors
///
/// [`BadSize`], which says what is allowed.
pub fn parse_size(s: &str) -> Result<u64, BadSize> {
    let t = s.trim();
    let bad = || BadSize(t.to_owned());
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    if split == 0 {
        return Err(bad());
    }
    let n: u64 = t[..split].parse().map_err(|_| bad())?;
    let scale: u64 = match t[split..].trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        _ => return Err(bad()),
    };
    n.checked_mul(scale).ok_or_else(bad)
}

/// A size for people: `1MiB`, `512KiB`, `300B`.
pub fn show_size(n: u64) -> String {
    for (unit, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if n >= scale && n.is_multiple_of(scale) {
            return format!("{}{unit}", n / scale);
        }
    }
    format!("{n}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_times_in_a_gap_or_a_fold_mean_what_schedules_mean() {
        let ny = jiff::tz::TimeZone::get("America/New_York").unwrap();
        // 02:30 does not exist on 2026-03-08: the first instant after the
        // gap, 03:00 EDT.
        assert_eq!(
            parse_instant("2026-03-08 02:30", &ny).unwrap().to_string(),
            "2026-03-08T07:00:00Z"
        );
        // 01:30 happens twice on 2026-11-01: the first one, EDT.
        assert_eq!(
            parse_instant("2026-11-01 01:30", &ny).unwrap().to_string(),
            "2026-11-01T05:30:00Z"
        );
        assert_eq!(
            parse_instant("2026-07-01 12:00", &ny).unwrap().to_string(),
            "2026-07-01T16:00:00Z"
        );
    }

    #[test]
    fn durations_people_write() {
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("0.25").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("15m").unwrap(), Duration::from_secs(900));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("3600s").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("PT5M").unwrap(), Duration::from_secs(300));
        let e = |text| parse_duration(text).unwrap_err().to_string();
        assert!(e("-5s").contains("negative"));
        let e = e("1 hour");
        assert!(e.contains("not a duration") && e.contains("1h30m"), "{e}");
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("").is_err());
        assert!(
            parse_duration("100000h")
                .unwrap_err()
                .to_string()
                .contains("ten years")
        );
    }

    #[test]
    fn durations_shown_for_people() {
        assert_eq!(show_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(show_duration(Duration::from_millis(3200)), "3.2s");
        assert_eq!(show_duration(Duration::from_secs(30)), "30s");
        assert_eq!(show_duration(Duration::from_secs(900)), "15m");
        assert_eq!(show_duration(Duration::from_secs(125)), "2m5s");
        assert_eq!(show_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(show_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(show_duration(Duration::from_secs(86_400)), "1d");
        for d in ["30s", "15m", "2h", "1d", "1h30m", "250ms"] {
            assert_eq!(show_duration(parse_duration(d).unwrap()), d);
        }
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512KiB").unwrap(), 512 * 1024);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert_eq!(parse_size("2MB").unwrap(), 2_000_000);
        assert!(parse_size("1 lot").is_err());
        assert!(parse_size("MiB").is_err());
        assert_eq!(show_size(1 << 20), "1MiB");
        assert_eq!(show_size(300), "300B");
    }
}
