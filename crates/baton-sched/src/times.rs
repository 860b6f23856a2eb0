//! Instants as text, one form per surface: RFC 3339 for machines (`--json`,
//! the API), and one form for people (`2026-12-01 21:24:51 +01:00`, on the
//! job's wall clock), and reading the RFC 3339 a person types.
//!
//! RFC 3339 offsets are hours and minutes, at most 23:59 either way. A
//! zone's offset before its standard time (local mean time, before 1912 in
//! most zones: Amsterdam's `+00:19:32`) has seconds: there the instant is
//! written with the nearest whole-minute offset and the wall clock shifted
//! to match (`1900-01-01T12:00:28+00:20` for noon at `+00:19:32`), as RFC
//! 3339's own example of Amsterdam in 1937 does (§5.8), so that a reader
//! gets the exact instant. The human form shows the zone's exact offset.
//! Nothing here reads the clock.

use jiff::fmt::temporal::{DateTimeParser, PiecesOffset};
use jiff::tz::{Offset, TimeZone};
use jiff::{Timestamp, ZonedDateTime};

/// The largest offset RFC 3339 can write: 23:59.
const MAX_OFFSET_SECONDS: i32 = 23 * 3600 + 59 * 60;

/// The form for people: `2026-12-01 21:24:51 +01:00`, on `tz`'s wall
/// clock, to the second.
pub fn human(t: Timestamp, tz: &TimeZone) -> String {
    let z = t.to_zoned_datetime(tz.clone());
    jiff::fmt::strtime::format("%Y-%m-%d %H:%M:%S %:z", &z).unwrap_or_else(|_| z.to_string())
}

/// RFC 3339 on `tz`'s wall clock, with fractional seconds when there are
/// any: `2026-12-01T21:24:51+01:00`. An offset with seconds is rounded to
/// the nearest minute (half a minute away from zero) and the wall clock
/// shifted with it: the instant is exact.
pub fn rfc3339(t: Timestamp, tz: &TimeZone) -> String {
    let offset = tz.to_offset(t);
    let s = offset.seconds();
    let whole = s.signum() * ((s.abs() + 30) / 60 * 60);
    let shown = Offset::from_seconds(whole).unwrap_or(offset);
    let z = t.to_zoned_datetime(TimeZone::fixed(shown));
    jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%S%.f%:z", &z).unwrap_or_else(|_| utc(t))
}

/// RFC 3339 in UTC, as the ledger keeps instants:
/// `2026-12-01T20:24:51.399704Z`.
pub fn utc(t: Timestamp) -> String {
    t.to_string()
}

/// Reads an RFC 3339 instant with its offset (`2026-03-08T00:00:00-05:00`,
/// or with `Z`), refusing offsets RFC 3339 cannot have: beyond ±23:59, or
/// with seconds.
///
/// # Errors
///
/// Why the text is not such an instant, naming it.
pub fn parse_rfc3339(text: &str) -> Result<Timestamp, String> {
    let t = text.trim();
    match t.parse::<Timestamp>() {
        Ok(at) => {
            check_offset(t)?;
            Ok(at)
        }
        // A date and time that are well formed but beyond jiff's range.
        Err(_) if has_offset(t) => Err(format!(
            "{t:?} is after the last instant baton computes, {} (the last one every zone \
             can show as a date of the year 9999)",
            last_instant()
        )),
        Err(e) => Err(format!("{t:?} is not an RFC 3339 time ({e})")),
    }
}

/// Whether `t` is a date and time with an offset (`Z` included), well
/// formed whether or not it is in range.
pub fn has_offset(t: &str) -> bool {
    PARSER
        .parse_pieces(t.trim())
        .is_ok_and(|p| p.offset().is_some())
}

/// The last whole second baton computes: `9999-12-30T22:00:00Z` (jiff's
/// range, so that every zone, up to ±25:59:59, still shows a date of the
/// year 9999).
pub fn last_instant() -> Timestamp {
    Timestamp::from_second(Timestamp::MAX.as_second()).unwrap_or(Timestamp::MAX)
}

static PARSER: DateTimeParser = DateTimeParser::new();

/// Refuses an offset beyond ±23:59 or with seconds in `t` (which parses).
fn check_offset(t: &str) -> Result<(), String> {
    let Ok(pieces) = PARSER.parse_pieces(t) else {
        return Ok(());
    };
    let Some(PiecesOffset::Numeric(n)) = pieces.offset() else {
        return Ok(());
    };
    let s = n.offset().seconds();
    if s.abs() > MAX_OFFSET_SECONDS {
        return Err(format!(
            "{t:?} has the offset {}, beyond RFC 3339's -23:59 to +23:59",
            Offset::from_seconds(s).map_or_else(|_| s.to_string(), |o| o.to_string())
        ));
    }
    if s % 60 != 0 {
        return Err(format!(
            "{t:?} has an offset with seconds, which RFC 3339 cannot write: give it in \
             hours and minutes, or the instant in UTC with Z"
        ));
    }
    Ok(())
}

/// A zoned time's RFC 3339 form ([`rfc3339`]).
pub fn rfc3339_zoned(z: &ZonedDateTime) -> String {
    rfc3339(z.timestamp(), z.time_zone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_with_seconds_is_rounded_and_the_instant_kept() {
        let tz = TimeZone::get("Europe/Amsterdam").unwrap();
        let noon: Timestamp = "1900-01-01T11:40:28Z".parse().unwrap();
        let text = rfc3339(noon, &tz);
        assert_eq!(text, "1900-01-01T12:00:28+00:20");
        assert_eq!(text.parse::<Timestamp>().unwrap(), noon);
        assert_eq!(human(noon, &tz), "1900-01-01 12:00:00 +00:19:32");
        let now: Timestamp = "2026-12-01T20:24:51.5Z".parse().unwrap();
        assert_eq!(rfc3339(now, &tz), "2026-12-01T21:24:51.5+01:00");
    }

    #[test]
    fn offsets_rfc_3339_cannot_have_are_refused() {
        assert!(parse_rfc3339("2026-01-01T00:00:00+25:00").is_err());
        assert!(parse_rfc3339("2026-01-01T00:00:00-24:00").is_err());
        assert!(parse_rfc3339("2026-01-01T00:00:00+00:19:32").is_err());
        assert!(parse_rfc3339("2026-01-01T00:00:00+23:59").is_ok());
        assert!(parse_rfc3339("2026-01-01T00:00:00Z").is_ok());
        let e = parse_rfc3339("9999-12-31T00:00:00Z").unwrap_err();
        assert!(e.contains("last instant"), "{e}");
    }
}
