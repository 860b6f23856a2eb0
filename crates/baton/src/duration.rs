//! Durations on the command line: a number of seconds (`30`, `0.25`), or
//! numbers with units, combined (`250ms`, `30s`, `15m`, `2h`, `1d`,
//! `1h30m`). ISO 8601 (`PT30S`) is accepted too.

use std::time::Duration;

/// The longest duration accepted: ten years. Longer ones are typos, and
/// refusing them keeps every sum of durations far from overflow.
pub const MAX: Duration = Duration::from_secs(10 * 365 * 86_400);

/// The syntax, for help texts and error messages.
pub const SYNTAX: &str =
    "a number of seconds (30, 0.5) or numbers with units ms, s, m, h, d (250ms, 15m, 1h30m)";

/// Parses a duration. Negative durations, and durations over [`MAX`], are
/// refused.
pub fn parse(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let bad = || format!("{t:?} is not a duration: use {SYNTAX}");
    let d = if let Ok(secs) = t.parse::<f64>() {
        if t.starts_with('-') {
            return Err(format!("{t:?} is negative: a duration is zero or more"));
        }
        Duration::try_from_secs_f64(secs).map_err(|_| bad())?
    } else if t.starts_with(['P', 'p']) {
        let d: jiff::SignedDuration = t.parse().map_err(|_| bad())?;
        Duration::try_from(d)
            .map_err(|_| format!("{t:?} is negative: a duration is zero or more"))?
    } else {
        units(t).ok_or_else(|| {
            if t.starts_with('-') {
                format!("{t:?} is negative: a duration is zero or more")
            } else {
                bad()
            }
        })?
    };
    if d > MAX {
        return Err(format!("{t:?} is longer than ten years"));
    }
    Ok(d)
}

/// `1h30m`, `250ms`, `1.5s`: numbers each followed by a unit.
fn units(s: &str) -> Option<Duration> {
    let mut rest = s;
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
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

/// A duration for people: `2h5m`, `3.2s`, `250ms`.
pub fn show(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 86_400 && secs.is_multiple_of(3600) {
        format!("{}d{}h", secs / 86_400, (secs % 86_400) / 3600)
    } else if secs >= 3600 {
        format!("{}h{}m", secs / 3600, (secs % 3600) / 60)
    } else if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else if secs >= 1 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_people_write() {
        assert_eq!(parse("30").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("0.25").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse("1d").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse("PT5M").unwrap(), Duration::from_secs(300));
        assert_eq!(parse("0ms").unwrap(), Duration::ZERO);
        assert!(parse("-5s").unwrap_err().contains("negative"));
        assert!(parse("-5").unwrap_err().contains("negative"));
        let e = parse("soon").unwrap_err();
        assert!(e.contains("not a duration") && e.contains("1h30m"), "{e}");
        assert!(!e.contains("jiff"), "{e}");
        assert!(!e.contains("Span"), "{e}");
        assert!(parse("5x").is_err());
        assert!(parse("s").is_err());
        assert!(parse("1e30").is_err());
        assert!(parse("NaN").is_err());
        assert!(parse("100000h").unwrap_err().contains("ten years"));
    }

    #[test]
    fn shown_for_people() {
        assert_eq!(show(Duration::from_millis(250)), "250ms");
        assert_eq!(show(Duration::from_millis(3200)), "3.2s");
        assert_eq!(show(Duration::from_secs(125)), "2m5s");
        assert_eq!(show(Duration::from_secs(7500)), "2h5m");
    }
}
