//! The parsed fields of a cron expression: for each of second, minute, hour,
//! day-of-month, month and day-of-week, the set of values it allows and
//! whether it was written starting with `*`.
//!
//! A [`FieldSet`] is a bitset, so matching a value and finding the next or
//! previous allowed value are single instructions; the evaluator in
//! `civil.rs` relies on that. Day-of-week values are stored as 0-6 with
//! Sunday as 0: the parser folds 7 into 0, so nothing downstream ever sees a
//! 7. Sets are never empty: the parser refuses an expression that allows no
//! value in some field.

use std::fmt;

/// One field of a cron expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    /// Seconds, 0-59 (the first of six fields; absent from five-field expressions).
    Second,
    /// Minutes, 0-59.
    Minute,
    /// Hours, 0-23.
    Hour,
    /// Day of the month, 1-31.
    DayOfMonth,
    /// Month, 1-12 or JAN-DEC.
    Month,
    /// Day of the week, 0-7 (0 and 7 are Sunday) or SUN-SAT.
    DayOfWeek,
}

impl Field {
    /// The field's name as it appears in messages: `second`, `minute`,
    /// `hour`, `day-of-month`, `month`, `day-of-week`.
    pub fn name(self) -> &'static str {
        match self {
            Field::Second => "second",
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day-of-month",
            Field::Month => "month",
            Field::DayOfWeek => "day-of-week",
        }
    }

    /// What a value of this field may be, as written in messages.
    pub(crate) fn allowed(self) -> &'static str {
        match self {
            Field::Second | Field::Minute => "0-59",
            Field::Hour => "0-23",
            Field::DayOfMonth => "1-31",
            Field::Month => "1-12 or JAN-DEC",
            Field::DayOfWeek => "0-7 (0 and 7 are Sunday) or SUN-SAT",
        }
    }

    /// The smallest value a number in this field may have.
    pub(crate) fn min(self) -> u32 {
        match self {
            Field::DayOfMonth | Field::Month => 1,
            _ => 0,
        }
    }

    /// The largest value a number in this field may have (7 for day-of-week,
    /// which the parser folds into 0).
    pub(crate) fn max(self) -> u32 {
        match self {
            Field::Second | Field::Minute => 59,
            Field::Hour => 23,
            Field::DayOfMonth => 31,
            Field::Month => 12,
            Field::DayOfWeek => 7,
        }
    }

    /// The last value an open-ended `*` or `a/n` runs to. For day-of-week
    /// that is 6 (Saturday): `1/2` is Monday, Wednesday and Friday, and
    /// Sunday only when written (`0` or `7`).
    pub(crate) fn open_end(self) -> u32 {
        match self {
            Field::DayOfWeek => 6,
            other => other.max(),
        }
    }

    /// How many values the field spans; also the largest step it accepts.
    pub(crate) fn width(self) -> u32 {
        self.open_end() - self.min() + 1
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The values one field allows, and whether it was written starting with `*`.
///
/// Whether a field starts with `*` matters beyond its values: it decides how
/// day-of-month and day-of-week combine, and whether a schedule is
/// [`Kind::Wildcard`](crate::Kind::Wildcard). `*/1` and `0-59` allow the same
/// minutes, but only the first starts with `*`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldSet {
    bits: u64,
    star: bool,
}

impl FieldSet {
    pub(crate) const fn empty(star: bool) -> Self {
        Self { bits: 0, star }
    }

    pub(crate) const fn single(value: u32) -> Self {
        Self {
            bits: 1 << value,
            star: false,
        }
    }

    pub(crate) fn insert(&mut self, value: u32) {
        debug_assert!(value < 64);
        self.bits |= 1 << value;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// The allowed values, in ascending order. Day-of-week values are 0-6,
    /// Sunday being 0.
    pub fn values(&self) -> impl Iterator<Item = u8> + use<> {
        let mut bits = self.bits;
        std::iter::from_fn(move || {
            if bits == 0 {
                return None;
            }
            let v = bits.trailing_zeros();
            bits &= bits - 1;
            // OK because a set holds values below 64.
            Some(v as u8)
        })
    }

    /// Whether `value` is allowed.
    pub fn contains(&self, value: u8) -> bool {
        value < 64 && self.bits & (1 << value) != 0
    }

    /// Whether the field was written starting with `*` (`*`, `*/5`, `*/5,7`).
    pub fn starts_with_star(&self) -> bool {
        self.star
    }

    /// The smallest allowed value at or after `from`.
    #[inline]
    pub(crate) fn next_at_or_after(&self, from: u32) -> Option<u32> {
        if from >= 64 {
            return None;
        }
        let rest = self.bits & (!0u64 << from);
        (rest != 0).then(|| rest.trailing_zeros())
    }

    /// The largest allowed value at or before `from`.
    #[inline]
    pub(crate) fn prev_at_or_before(&self, from: u32) -> Option<u32> {
        let rest = if from >= 63 {
            self.bits
        } else {
            self.bits & ((1u64 << (from + 1)) - 1)
        };
        (rest != 0).then(|| 63 - rest.leading_zeros())
    }

    #[inline]
    pub(crate) fn has(&self, value: u32) -> bool {
        value < 64 && self.bits & (1 << value) != 0
    }
}

/// The parsed fields of a cron schedule, for renderers that translate it
/// (to systemd `OnCalendar=`, or to cron in another zone).
///
/// Days match as in Vixie cron: when day-of-month or day-of-week starts with
/// `*`, a day matches when both fields allow it; otherwise when either does.
/// [`Fields::days_match_either`] says which.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fields {
    pub(crate) second: FieldSet,
    pub(crate) minute: FieldSet,
    pub(crate) hour: FieldSet,
    pub(crate) day_of_month: FieldSet,
    pub(crate) month: FieldSet,
    pub(crate) day_of_week: FieldSet,
    pub(crate) has_seconds: bool,
}

impl Fields {
    /// The seconds field, or `None` for a five-field expression (which fires
    /// at second 0).
    pub fn second(&self) -> Option<&FieldSet> {
        self.has_seconds.then_some(&self.second)
    }

    /// The minutes field.
    pub fn minute(&self) -> &FieldSet {
        &self.minute
    }

    /// The hours field.
    pub fn hour(&self) -> &FieldSet {
        &self.hour
    }

    /// The day-of-month field.
    pub fn day_of_month(&self) -> &FieldSet {
        &self.day_of_month
    }

    /// The month field (1-12).
    pub fn month(&self) -> &FieldSet {
        &self.month
    }

    /// The day-of-week field (0-6, Sunday being 0).
    pub fn day_of_week(&self) -> &FieldSet {
        &self.day_of_week
    }

    /// Whether a day matches when either day field allows it (neither starts
    /// with `*`), rather than when both do.
    pub fn days_match_either(&self) -> bool {
        !self.day_of_month.star && !self.day_of_week.star
    }

    /// Whether the civil date matches the day fields; `weekday` is 0-6 from
    /// Sunday.
    #[inline]
    pub(crate) fn day_matches(&self, month: u32, day: u32, weekday: u32) -> bool {
        if !self.month.has(month) {
            return false;
        }
        let dom = self.day_of_month.has(day);
        let dow = self.day_of_week.has(weekday);
        if self.days_match_either() {
            dom || dow
        } else {
            dom && dow
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_and_previous_values() {
        let mut set = FieldSet::empty(false);
        for v in [0, 5, 59] {
            set.insert(v);
        }
        assert_eq!(set.next_at_or_after(0), Some(0));
        assert_eq!(set.next_at_or_after(1), Some(5));
        assert_eq!(set.next_at_or_after(6), Some(59));
        assert_eq!(set.next_at_or_after(60), None);
        assert_eq!(set.next_at_or_after(64), None);
        assert_eq!(set.prev_at_or_before(63), Some(59));
        assert_eq!(set.prev_at_or_before(58), Some(5));
        assert_eq!(set.prev_at_or_before(4), Some(0));
        assert_eq!(set.values().collect::<Vec<_>>(), vec![0, 5, 59]);
        assert!(set.contains(59) && !set.contains(58) && !set.contains(200));
    }

    #[test]
    fn nothing_before_the_smallest_value() {
        let set = FieldSet::single(3);
        assert_eq!(set.prev_at_or_before(2), None);
        assert_eq!(set.next_at_or_after(4), None);
    }
}
