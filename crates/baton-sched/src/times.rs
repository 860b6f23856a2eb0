//! Instants as text, one form per surface: RFC 3339 for machines (`--json`,
//! the API), and one form for people (`2026-12-01 21:24:51 +01:00`, on the
//! job's wall clock), and reading the RFC 3339 a person types.
//!
//! A message that names instants (an alert's, a warning's) is written
//! once, with each instant in RFC 3339 UTC, and kept so: in the ledger, in
//! `alerts.log`, to the alert command and in every JSON document, where it
//! sits beside the same instants as fields. A surface for people shows it
//! through [`human_in`], which writes each of those instants in the human
//! form on that surface's wall clock (`status` and stderr the job's, the
//! page its own): the message cannot be written in one zone for all, as
//! `status` and the page show it in different ones.
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

/// `text` for people: each RFC 3339 instant in it (the whole text, or
/// one a message names, as [`utc`] writes them) in the human form on
/// `tz`'s wall clock ([`human`]); the rest as it is.
///
/// ```
/// # use baton_sched::times::human_in;
/// let tz = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
/// assert_eq!(
///     human_in("b: 2026-12-02T23:30:00Z runs now", &tz),
///     "b: 2026-12-03 05:00:00 +05:30 runs now"
/// );
/// ```
pub fn human_in(text: &str, tz: &TimeZone) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Instant(_, at) => out.push_str(&human(at, tz)),
        }
    }
    out
}

/// A part of a text cut at the RFC 3339 instants in it ([`pieces`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Words between instants.
    Text(&'a str),
    /// An instant, as written and as read.
    Instant(&'a str, Timestamp),
}

/// `text` cut at each RFC 3339 instant in it (`2026-12-02T23:30:00Z`, with
/// fractional seconds or a numeric offset too), in order. An instant must
/// stand apart from letters and digits on both sides; what looks like one
/// but is no instant (`2026-13-01T00:00:00Z`) stays text.
pub fn pieces(text: &str) -> Vec<Piece<'_>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        let apart = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let found = apart
            .then(|| instant_at(bytes, i))
            .flatten()
            // OK to slice: the instant's bytes are ASCII, so its ends are
            // character boundaries.
            .and_then(|end| text[i..end].parse::<Timestamp>().ok().map(|t| (end, t)));
        match found {
            Some((end, at)) => {
                if start < i {
                    out.push(Piece::Text(&text[start..i]));
                }
                out.push(Piece::Instant(&text[i..end], at));
                start = end;
                i = end;
            }
            None => i += 1,
        }
    }
    if start < bytes.len() {
        out.push(Piece::Text(&text[start..]));
    }
    out
}

/// The end of the RFC 3339 instant that starts at `i` in `b`, by its shape
/// (`dddd-dd-ddTdd:dd:dd`, an optional `.d…`, then `Z` or `±dd:dd`), when
/// one does and no letter or digit follows it.
fn instant_at(b: &[u8], i: usize) -> Option<usize> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let fits = |at: usize, shape: &[u8]| {
        b.get(at..at + shape.len()).is_some_and(|got| {
            got.iter().zip(shape).all(|(&c, &s)| {
                if s == b'd' {
                    c.is_ascii_digit()
                } else {
                    c == s
                }
            })
        })
    };
    if !fits(i, SHAPE) {
        return None;
    }
    let mut end = i + SHAPE.len();
    if b.get(end) == Some(&b'.') && b.get(end + 1).is_some_and(u8::is_ascii_digit) {
        end += 1;
        while b.get(end).is_some_and(u8::is_ascii_digit) {
            end += 1;
        }
    }
    end = match b.get(end) {
        Some(b'Z') => end + 1,
        Some(b'+' | b'-') if fits(end + 1, b"dd:dd") => end + 6,
        _ => return None,
    };
    (!b.get(end).is_some_and(u8::is_ascii_alphanumeric)).then_some(end)
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
pub fn parse_rfc3339(text: &str) -> Result<Timestamp, BadTime> {
    let t = text.trim();
    match t.parse::<Timestamp>() {
        Ok(at) => {
            check_offset(t)?;
            Ok(at)
        }
        // A date and time that are well formed but beyond jiff's range.
        Err(_) if has_offset(t) => Err(BadTime::AfterLast(t.to_owned())),
        Err(source) => Err(BadTime::NotRfc3339 {
            text: t.to_owned(),
            source,
        }),
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

/// Why a text is not an RFC 3339 instant baton reads ([`parse_rfc3339`]);
/// each names the text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BadTime {
    /// Well formed, but after the last instant baton computes.
    #[error(
        "{0:?} is after the last instant baton computes, {last} (the last one every zone \
         can show as a date of the year 9999)",
        last = last_instant()
    )]
    AfterLast(String),
    /// Not an RFC 3339 date and time.
    #[error("{text:?} is not an RFC 3339 time ({source})")]
    NotRfc3339 {
        /// The text.
        text: String,
        /// What the parser said.
        #[source]
        source: jiff::Error,
    },
    /// An offset beyond RFC 3339's `-23:59` to `+23:59`.
    #[error("{text:?} has the offset {offset}, beyond RFC 3339's -23:59 to +23:59")]
    OffsetRange {
        /// The text.
        text: String,
        /// The offset it gives.
        offset: String,
    },
    /// An offset with seconds.
    #[error(
        "{0:?} has an offset with seconds, which RFC 3339 cannot write: give it in \
         hours and minutes, or the instant in UTC with Z"
    )]
    OffsetSeconds(String),
}

/// Refuses an offset beyond ±23:59 or with seconds in `t` (which parses).
fn check_offset(t: &str) -> Result<(), BadTime> {
    let Ok(pieces) = PARSER.parse_pieces(t) else {
        return Ok(());
    };
    let Some(PiecesOffset::Numeric(n)) = pieces.offset() else {
        return Ok(());
    };
    let s = n.offset().seconds();
    if s.abs() > MAX_OFFSET_SECONDS {
        return Err(BadTime::OffsetRange {
            text: t.to_owned(),
            offset: Offset::from_seconds(s).map_or_else(|_| s.to_string(), |o| o.to_string()),
        });
    }
    if s % 60 != 0 {
        return Err(BadTime::OffsetSeconds(t.to_owned()));
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
    fn the_instants_a_text_names_are_shown_on_the_wall_clock_and_the_rest_kept() {
        let tz = TimeZone::get("Asia/Kolkata").unwrap();
        assert_eq!(
            human_in(
                "b: 2 missed (2026-12-01T07:30:00Z to 2026-12-02T22:30:00.25Z); \
                 2026-12-02T23:30:00-01:00 runs now",
                &tz
            ),
            "b: 2 missed (2026-12-01 13:00:00 +05:30 to 2026-12-03 04:00:00 +05:30); \
             2026-12-03 06:00:00 +05:30 runs now"
        );
        assert_eq!(
            human_in("2026-12-01T07:30:00Z", &tz),
            "2026-12-01 13:00:00 +05:30"
        );
        // Not instants: out of range, glued to a word, cut short, or no
        // offset; and words around them in any script are kept whole.
        for kept in [
            "2026-13-01T00:00:00Z",
            "x2026-12-01T07:30:00Z",
            "2026-12-01T07:30:00Zulu",
            "2026-12-01T07:30:00",
            "2026-12-01T07:30",
            "2026-12-01T07:30:00+05",
            "manual",
            "",
            "élan ✓ 2026",
        ] {
            assert_eq!(human_in(kept, &tz), kept);
        }
        assert_eq!(
            human_in("«2026-12-01T07:30:00Z»", &TimeZone::UTC),
            "«2026-12-01 07:30:00 +00:00»"
        );
    }

    #[test]
    fn offsets_rfc_3339_cannot_have_are_refused() {
        assert!(parse_rfc3339("2026-01-01T00:00:00+25:00").is_err());
        assert!(parse_rfc3339("2026-01-01T00:00:00-24:00").is_err());
        assert!(parse_rfc3339("2026-01-01T00:00:00+00:19:32").is_err());
        assert!(parse_rfc3339("2026-01-01T00:00:00+23:59").is_ok());
        assert!(parse_rfc3339("2026-01-01T00:00:00Z").is_ok());
        let e = parse_rfc3339("9999-12-31T00:00:00Z")
            .unwrap_err()
            .to_string();
        assert!(e.contains("last instant"), "{e}");
    }
}
