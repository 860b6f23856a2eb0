//! From matching wall-clock times to instants: the daylight-saving rules.
//!
//! A zone's timeline is cut by its transitions into segments of constant UTC
//! offset. Inside a segment, civil time is the instant plus the offset, so
//! the first (or last) matching civil time in the segment's civil range gives
//! the first (or last) candidate instant in it directly. Every rule is then a
//! statement about segments:
//!
//! - **Wildcard**: every instant whose civil time matches is an occurrence.
//!   A gap shows no civil time, so nothing fires in it; a fold shows its civil
//!   times twice, in two segments, so both fire.
//! - **Fixed**: a civil time fires once, at the earliest instant that shows
//!   it. After a fold, the civil times the earlier segments already showed
//!   (below the *high-water mark*) are skipped. At a gap, when some skipped
//!   civil time matches, the transition instant itself fires, once however
//!   many matching times the gap swallowed.
//!
//! Offsets and transitions come from jiff; calendar arithmetic and matching
//! from `civil.rs`. Instants and civil times are whole seconds here: an
//! occurrence is always a whole second because every offset jiff knows is.
//! The search gives up beyond [`HORIZON`] and answers `None`.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::civil::{DAY, Matcher};
use crate::field::Fields;

/// How far from the given instant a search looks: 100 years of 366 days.
pub(crate) const HORIZON: i64 = 100 * 366 * DAY;

/// A bound on how far apart two UTC offsets can be (jiff allows ±25:59:59).
/// A segment that ended this long before another cannot have shown any of
/// its civil times.
const MAX_OFFSET_SPAN: i64 = 2 * 26 * 3600;

/// Which daylight-saving rule a cron schedule follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    Fixed,
    Wildcard,
}

/// The zone, queried in whole seconds.
struct Zone<'a>(&'a TimeZone);

impl Zone<'_> {
    fn offset(&self, at: i64) -> Option<i64> {
        let ts = Timestamp::from_second(at).ok()?;
        Some(i64::from(self.0.to_offset(ts).seconds()))
    }

    /// The first transition strictly after `at`.
    fn next_transition(&self, at: i64) -> Option<i64> {
        let ts = Timestamp::from_second(at).ok()?;
        self.0
            .following(ts)
            .next()
            .map(|t| t.timestamp().as_second())
    }

    /// The last transition at or before `at`.
    fn prev_transition(&self, at: i64) -> Option<i64> {
        let ts = Timestamp::from_second(at.checked_add(1)?).ok()?;
        self.0
            .preceding(ts)
            .next()
            .map(|t| t.timestamp().as_second())
    }

    /// The civil time just past the latest one shown by any instant before
    /// the segment that starts at transition `start`. A civil time below it
    /// in this segment is shown for the second time (the zone fell back).
    fn high_water(&self, start: i64) -> Option<i64> {
        let mut mark = start + self.offset(start - 1)?;
        let mut at = start;
        while let Some(earlier) = self.prev_transition(at - 1) {
            if earlier < start - MAX_OFFSET_SPAN {
                break;
            }
            mark = mark.max(earlier + self.offset(earlier - 1)?);
            at = earlier;
        }
        Some(mark)
    }
}

/// Remembers the last search, so that walking several segments towards an
/// occurrence far away searches the calendar once.
struct Memo {
    query: i64,
    found: Option<i64>,
}

/// The first occurrence strictly after the instant `after` (whole seconds).
pub(crate) fn next_after(fields: &Fields, rule: Rule, after: i64, tz: &TimeZone) -> Option<i64> {
    let zone = Zone(tz);
    let matcher = Matcher::new(fields);
    let horizon = after.checked_add(HORIZON)?;
    // Civil times run at most a day or so ahead of instants.
    let civil_limit = horizon + MAX_OFFSET_SPAN;
    let mut memo: Option<Memo> = None;
    let mut search = |from: i64| -> Option<i64> {
        if let Some(m) = &memo
            && m.query <= from
            && m.found.is_none_or(|f| from <= f)
        {
            return m.found;
        }
        let found = matcher.next(from, civil_limit);
        memo = Some(Memo { query: from, found });
        found
    };

    let mut lo = after + 1;
    // A gap that starts exactly at `lo` was never crossed by the walk below
    // (it crosses transitions at the end of a segment): its swallowed fixed
    // times fire at the transition, which is after `after`.
    if rule == Rule::Fixed && zone.prev_transition(lo) == Some(lo) {
        let (before, now) = (zone.offset(lo - 1)?, zone.offset(lo)?);
        if now > before {
            let first = search((lo + before).max(zone.high_water(lo)?));
            if first.is_some_and(|c| c < lo + now) {
                return Some(lo);
            }
        }
    }
    while lo <= horizon {
        let offset = zone.offset(lo)?;
        let end = zone.next_transition(lo);
        let mut from = lo + offset;
        if rule == Rule::Fixed
            && let Some(start) = zone.prev_transition(lo)
        {
            from = from.max(zone.high_water(start)?);
        }
        let found = search(from);
        let Some(end) = end else {
            return found.map(|c| c - offset);
        };
        if let Some(c) = found
            && c < end + offset
        {
            return Some(c - offset);
        }
        if rule == Rule::Fixed {
            let after_offset = zone.offset(end)?;
            if after_offset > offset {
                // A gap: the civil times [end + offset, end + after_offset)
                // never show. If the first match from the gap's start is one
                // of them, it fires at the transition.
                let first = search(from.max(end + offset));
                if first.is_some_and(|c| c < end + after_offset) {
                    return Some(end);
                }
            }
        }
        lo = end;
    }
    None
}

/// The last occurrence at or before the instant `at` (whole seconds).
pub(crate) fn latest_at_or_before(
    fields: &Fields,
    rule: Rule,
    at: i64,
    tz: &TimeZone,
) -> Option<i64> {
    let zone = Zone(tz);
    let matcher = Matcher::new(fields);
    let horizon = at.checked_sub(HORIZON)?;
    let civil_limit = horizon - MAX_OFFSET_SPAN;
    let mut memo: Option<Memo> = None;
    let mut search = |from: i64| -> Option<i64> {
        if let Some(m) = &memo
            && from <= m.query
            && m.found.is_none_or(|f| f <= from)
        {
            return m.found;
        }
        let found = matcher.prev(from, civil_limit);
        memo = Some(Memo { query: from, found });
        found
    };

    let mut hi = at;
    while hi >= horizon {
        let offset = zone.offset(hi)?;
        let start = zone.prev_transition(hi);
        let found = search(hi + offset);
        let Some(start) = start else {
            return found.map(|c| c - offset);
        };
        let mut floor = start + offset;
        if rule == Rule::Fixed {
            floor = floor.max(zone.high_water(start)?);
        }
        if let Some(c) = found
            && c >= floor
        {
            return Some(c - offset);
        }
        if rule == Rule::Fixed {
            let before_offset = zone.offset(start - 1)?;
            if before_offset < offset {
                // A gap: the civil times [start + before_offset, start + offset)
                // never show; a match among them fires at `start`.
                let last = search(start + offset - 1);
                if last.is_some_and(|c| c >= start + before_offset) {
                    return Some(start);
                }
            }
        }
        hi = start - 1;
    }
    None
}
