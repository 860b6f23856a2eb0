//! Durations on the command line: `30s`, `5m`, `1h30m`, `250ms`, ISO 8601
//! (`PT30S`), or a bare number of seconds.

use std::time::Duration;

/// The longest duration accepted: ten years. Longer ones are typos, and
/// refusing them keeps every sum of durations far from overflow.
pub const MAX: Duration = Duration::from_secs(10 * 365 * 86_400);

/// Parses a duration argument. Negative durations, and durations over
/// [`MAX`], are refused.
pub fn parse(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let d = if let Ok(secs) = s.parse::<f64>() {
        Duration::try_from_secs_f64(secs)
            .map_err(|_| format!("{s:?} is not a duration of zero or more"))?
    } else {
        let d: jiff::SignedDuration = s
            .parse()
            .map_err(|e| format!("{s:?} is not a duration such as 30s, 5m or 1h30m ({e})"))?;
        Duration::try_from(d)
            .map_err(|_| format!("{s:?} is negative; a duration must be zero or more"))?
    };
    if d > MAX {
        return Err(format!("{s:?} is longer than ten years"));
    }
    Ok(d)
}

/// A duration for people: `2h5m`, `3.2s`, `250ms`.
pub fn show(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
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
        assert_eq!(parse("PT5M").unwrap(), Duration::from_secs(300));
        assert!(parse("-5s").is_err());
        assert!(parse("-5").is_err());
        assert!(parse("soon").unwrap_err().contains("not a duration"));
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
