//! A zone's clock changes in the years ahead, and which wall-clock times of a
//! cron schedule each change skips or repeats: what every per-job
//! translation judges daylight saving by.
//!
//! Away from a change, a cron, a systemd timer, GitHub Actions and baton read
//! the same wall clock and fire at the same instants. They part only at the
//! wall-clock times a change skips (clocks go forward) or repeats (clocks go
//! back), and only on the days the schedule fires there: `30 2 * * 2` in
//! New York never meets a change, which falls on Sundays. So a translation
//! asks [`touched`] which of the schedule's times fall in each change's
//! window over the next [`HORIZON`] changes, and decides by the target's
//! rules whether it fires there as baton does; the first change where it
//! does not is the date a refusal names.
//!
//! Nothing here decides for a target: it only finds the times.

use baton_cron::Fields;
use jiff::civil::DateTime;
use jiff::tz::Offset;
use jiff::{SignedDuration, Timestamp};

use crate::config::Zone;

/// How many of a zone's transitions after `now` are looked at: six years
/// of twice-yearly changes, more than any daylight saving rule repeats in.
pub(crate) const HORIZON: usize = 12;

/// The longest window looked at, in minutes: a change that skips or
/// repeats more than a day of wall-clock time is judged by its first day.
const LONGEST_WINDOW: i64 = 1441;

/// A transition after which a zone's offset from UTC differs from the one
/// before it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OffsetChange {
    /// When.
    pub(crate) at: Timestamp,
    /// The offset before.
    pub(crate) before: Offset,
    /// The offset after.
    pub(crate) after: Offset,
}

impl OffsetChange {
    /// Whether the clocks go forward (wall-clock times are skipped), rather
    /// than back (they are repeated).
    pub(crate) fn skips(&self) -> bool {
        self.after > self.before
    }

    /// How much wall-clock time is skipped or repeated.
    pub(crate) fn size(&self) -> SignedDuration {
        SignedDuration::from_secs(
            (i64::from(self.after.seconds()) - i64::from(self.before.seconds())).abs(),
        )
    }

    /// The window of wall-clock times skipped or repeated: from the change
    /// read with the smaller offset, up to (not including) the change read
    /// with the larger. Its end is the wall-clock time the clocks show
    /// right after a forward change.
    pub(crate) fn window(&self) -> (DateTime, DateTime) {
        let (lo, hi) = if self.skips() {
            (self.before, self.after)
        } else {
            (self.after, self.before)
        };
        (lo.to_datetime(self.at), hi.to_datetime(self.at))
    }

    /// The change in words: `on 2026-03-08 the clocks go forward from 02:00
    /// to 03:00`.
    pub(crate) fn describe(&self) -> String {
        let (lo, hi) = self.window();
        let (from, to) = if self.skips() { (lo, hi) } else { (hi, lo) };
        format!(
            "on {} the clocks go {} from {} to {}",
            self.before.to_datetime(self.at).date(),
            if self.skips() { "forward" } else { "back" },
            hm(from),
            hm(to),
        )
    }
}

/// The transitions of `zone` among the next [`HORIZON`] after `now` that
/// change its offset from UTC. A transition that keeps the offset (a new
/// abbreviation, or the end of a zone file's table, such as
/// 2038-01-19T03:14:07Z where a zone without daylight saving passes to its
/// POSIX rule) is no change: clocks neither skip nor repeat there.
pub(crate) fn offset_changes(zone: &Zone, now: Timestamp) -> impl Iterator<Item = OffsetChange> {
    zone.tz.following(now).take(HORIZON).filter_map(|t| {
        let at = t.timestamp();
        let after = t.offset();
        let before_at = at.checked_sub(SignedDuration::from_secs(1)).ok()?;
        let before = zone.tz.to_offset(before_at);
        (before != after).then_some(OffsetChange { at, before, after })
    })
}

/// The wall-clock minutes of `change`'s window at which `f` fires (its
/// minute, hour, day and month fields match; a seconds field fires within
/// the minute), in order.
pub(crate) fn touched(f: &Fields, change: &OffsetChange) -> Vec<DateTime> {
    let (lo, hi) = change.window();
    let mut out = Vec::new();
    // The window's ends are whole minutes in every zone today; a start
    // between two minutes is looked at from the minute it falls in.
    let Ok(mut t) = lo.with().second(0).subsec_nanosecond(0).build() else {
        return out;
    };
    let mut n = 0;
    while t < hi && n < LONGEST_WINDOW {
        if matches(f, t) {
            out.push(t);
        }
        let Ok(next) = t.checked_add(SignedDuration::from_mins(1)) else {
            break;
        };
        t = next;
        n += 1;
    }
    out
}

/// Whether the wall-clock minute `t` is one of `f`'s: minute, hour, month,
/// and the day by Vixie cron's rule (either day field, when neither starts
/// with `*`; else both).
pub(crate) fn matches(f: &Fields, t: DateTime) -> bool {
    // OK to cast: each is within its field's range (0-59, 0-23, 1-31, 1-12, 0-6).
    let minute = t.minute() as u8;
    let hour = t.hour() as u8;
    let day = t.day() as u8;
    let month = t.month() as u8;
    let weekday = t.weekday().to_sunday_zero_offset() as u8;
    if !(f.minute().contains(minute) && f.hour().contains(hour) && f.month().contains(month)) {
        return false;
    }
    let dom = f.day_of_month().contains(day);
    let dow = f.day_of_week().contains(weekday);
    if f.days_match_either() {
        dom || dow
    } else {
        dom && dow
    }
}

/// `HH:MM`.
pub(crate) fn hm(t: DateTime) -> String {
    format!("{:02}:{:02}", t.hour(), t.minute())
}
