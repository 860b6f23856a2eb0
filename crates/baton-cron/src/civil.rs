//! Matching in civil (wall-clock) time, with no time zone in sight.
//!
//! A civil time is counted here as seconds since 1970-01-01T00:00:00 on the
//! wall clock (the proleptic Gregorian calendar, days of exactly 86,400
//! seconds). [`Matcher::next`] and [`Matcher::prev`] find the nearest civil
//! second that the fields allow, by skipping whole months, days, hours and
//! minutes that cannot match rather than walking second by second; each
//! call costs a few dozen bitset operations, plus one step per day in a
//! month whose days are restricted. Which instants those civil times become
//! is decided in `resolve.rs`, never here.

use crate::field::Fields;

pub(crate) const DAY: i64 = 86_400;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `days` after 1970-01-01, as (year, month, day).
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // OK because the casts below take values known to be in 1..=31 and 1..=12.
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

pub(crate) fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// 0 for Sunday through 6 for Saturday.
pub(crate) fn weekday(days: i64) -> u32 {
    // 1970-01-01 was a Thursday. OK to cast: rem_euclid(7) is in 0..7.
    (days + 4).rem_euclid(7) as u32
}

/// A civil time split into its fields, for stepping through the calendar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parts {
    year: i64,
    month: u32,
    day: u32,
    hour: u32,
    minute: u32,
    second: u32,
}

impl Parts {
    fn of(civil: i64) -> Self {
        let (year, month, day) = civil_from_days(civil.div_euclid(DAY));
        // OK to cast: the second of the day is in 0..86_400.
        let sod = civil.rem_euclid(DAY) as u32;
        Self {
            year,
            month,
            day,
            hour: sod / 3600,
            minute: sod / 60 % 60,
            second: sod % 60,
        }
    }

    fn days(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day)
    }

    fn civil(&self) -> i64 {
        self.days() * DAY + i64::from(self.hour * 3600 + self.minute * 60 + self.second)
    }

    fn start_of_day(&mut self) {
        (self.hour, self.minute, self.second) = (0, 0, 0);
    }

    fn end_of_day(&mut self) {
        (self.hour, self.minute, self.second) = (23, 59, 59);
    }

    fn next_month(&mut self) {
        if self.month == 12 {
            (self.year, self.month) = (self.year + 1, 1);
        } else {
            self.month += 1;
        }
        self.day = 1;
        self.start_of_day();
    }

    fn prev_month(&mut self) {
        if self.month == 1 {
            (self.year, self.month) = (self.year - 1, 12);
        } else {
            self.month -= 1;
        }
        self.day = days_in_month(self.year, self.month);
        self.end_of_day();
    }
}

/// Finds civil times allowed by a set of fields.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matcher<'a> {
    fields: &'a Fields,
}

impl<'a> Matcher<'a> {
    pub(crate) fn new(fields: &'a Fields) -> Self {
        Self { fields }
    }

    /// The first matching civil second at or after `from`, if there is one
    /// before `limit`.
    pub(crate) fn next(&self, from: i64, limit: i64) -> Option<i64> {
        let f = self.fields;
        let mut p = Parts::of(from);
        let limit_year = Parts::of(limit).year;
        loop {
            if p.year > limit_year {
                return None;
            }
            if !f.month.has(p.month) {
                match f.month.next_at_or_after(p.month) {
                    Some(m) => p.month = m,
                    None => {
                        p.year += 1;
                        // A month set is never empty: the fallback is unused.
                        p.month = f.month.next_at_or_after(1).unwrap_or(1);
                    }
                }
                p.day = 1;
                p.start_of_day();
                continue;
            }
            if p.day > days_in_month(p.year, p.month) {
                p.next_month();
                continue;
            }
            if !f.day_matches(p.month, p.day, weekday(p.days())) {
                p.day += 1;
                p.start_of_day();
                continue;
            }
            match f.hour.next_at_or_after(p.hour) {
                None => {
                    p.day += 1;
                    p.start_of_day();
                    continue;
                }
                Some(h) if h != p.hour => (p.hour, p.minute, p.second) = (h, 0, 0),
                Some(_) => {}
            }
            match f.minute.next_at_or_after(p.minute) {
                None => {
                    (p.hour, p.minute, p.second) = (p.hour + 1, 0, 0);
                    continue;
                }
                Some(m) if m != p.minute => (p.minute, p.second) = (m, 0),
                Some(_) => {}
            }
            match f.second.next_at_or_after(p.second) {
                None => {
                    (p.minute, p.second) = (p.minute + 1, 0);
                    continue;
                }
                Some(s) => p.second = s,
            }
            let civil = p.civil();
            return (civil < limit).then_some(civil);
        }
    }

    /// The last matching civil second at or before `from`, if there is one
    /// at or after `limit`.
    pub(crate) fn prev(&self, from: i64, limit: i64) -> Option<i64> {
        let f = self.fields;
        let mut p = Parts::of(from);
        let limit_year = Parts::of(limit).year;
        loop {
            if p.year < limit_year {
                return None;
            }
            if !f.month.has(p.month) {
                match f.month.prev_at_or_before(p.month) {
                    Some(m) => p.month = m,
                    None => {
                        p.year -= 1;
                        // A month set is never empty: the fallback is unused.
                        p.month = f.month.prev_at_or_before(12).unwrap_or(12);
                    }
                }
                p.day = days_in_month(p.year, p.month);
                p.end_of_day();
                continue;
            }
            if p.day == 0 {
                p.prev_month();
                continue;
            }
            if !f.day_matches(p.month, p.day, weekday(p.days())) {
                p.day -= 1;
                p.end_of_day();
                continue;
            }
            match f.hour.prev_at_or_before(p.hour) {
                None => {
                    p.day -= 1;
                    p.end_of_day();
                    continue;
                }
                Some(h) if h != p.hour => (p.hour, p.minute, p.second) = (h, 59, 59),
                Some(_) => {}
            }
            match f.minute.prev_at_or_before(p.minute) {
                None if p.hour == 0 => {
                    p.day -= 1;
                    p.end_of_day();
                    continue;
                }
                None => {
                    (p.hour, p.minute, p.second) = (p.hour - 1, 59, 59);
                    continue;
                }
                Some(m) if m != p.minute => (p.minute, p.second) = (m, 59),
                Some(_) => {}
            }
            match f.second.prev_at_or_before(p.second) {
                None if p.minute == 0 && p.hour == 0 => {
                    p.day -= 1;
                    p.end_of_day();
                    continue;
                }
                None if p.minute == 0 => {
                    (p.hour, p.minute, p.second) = (p.hour - 1, 59, 59);
                    continue;
                }
                None => {
                    (p.minute, p.second) = (p.minute - 1, 59);
                    continue;
                }
                Some(s) => p.second = s,
            }
            let civil = p.civil();
            return (civil >= limit).then_some(civil);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    #[test]
    fn days_round_trip_over_four_centuries() {
        let mut days = days_from_civil(1900, 1, 1);
        for year in 1900..2300 {
            for month in 1..=12 {
                for day in 1..=days_in_month(year, month) {
                    assert_eq!(days_from_civil(year, month, day), days);
                    assert_eq!(civil_from_days(days), (year, month, day));
                    days += 1;
                }
            }
        }
    }

    #[test]
    fn known_weekdays() {
        assert_eq!(weekday(0), 4); // 1970-01-01, a Thursday
        assert_eq!(weekday(days_from_civil(2026, 3, 8)), 0); // a Sunday
        assert_eq!(weekday(days_from_civil(2000, 2, 29)), 2); // a Tuesday
        assert_eq!(weekday(days_from_civil(1969, 12, 31)), 3); // a Wednesday
    }

    fn civil(y: i64, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> i64 {
        days_from_civil(y, mo, d) * DAY + i64::from(h * 3600 + mi * 60 + s)
    }

    #[test]
    fn next_and_prev_agree_with_a_walk() {
        // Walks a few days minute by minute (second by second for the
        // six-field expression) and checks both searches at every point.
        for (expr, step) in [
            ("*/7 1-3 * * *", 60),
            ("0 0 29 2 *", 60),
            ("15 23 * * 1-5", 60),
            ("0 12 1,15 * MON", 60),
            ("*/20 59 23 * * *", 1),
        ] {
            let parsed = parse(expr).unwrap();
            let m = Matcher::new(&parsed.fields);
            let f = &parsed.fields;
            let matches = |c: i64| {
                let p = Parts::of(c);
                f.day_matches(p.month, p.day, weekday(p.days()))
                    && f.hour.has(p.hour)
                    && f.minute.has(p.minute)
                    && f.second.has(p.second)
            };
            let start = civil(2028, 2, 27, 22, 0, 0);
            let end = start + if step == 1 { 3 * 3600 } else { 4 * DAY };
            let all: Vec<i64> = (start..end).step_by(step).filter(|&c| matches(c)).collect();
            let far = 10 * 366 * DAY;
            for c in (start..end).step_by(step) {
                let next = all.iter().copied().find(|&x| x >= c);
                if let Some(n) = next {
                    assert_eq!(m.next(c, c + far), Some(n), "{expr} next from {c}");
                }
                let prev = all.iter().rev().copied().find(|&x| x <= c);
                if let Some(p) = prev {
                    assert_eq!(m.prev(c, c - far), Some(p), "{expr} prev from {c}");
                }
            }
        }
    }

    #[test]
    fn leap_day_is_found_years_ahead_and_behind() {
        let parsed = parse("0 0 29 2 *").unwrap();
        let m = Matcher::new(&parsed.fields);
        let from = civil(2025, 3, 1, 0, 0, 0);
        assert_eq!(
            m.next(from, from + 10 * 366 * DAY),
            Some(civil(2028, 2, 29, 0, 0, 0))
        );
        assert_eq!(
            m.prev(from, from - 10 * 366 * DAY),
            Some(civil(2024, 2, 29, 0, 0, 0))
        );
        assert_eq!(m.next(from, civil(2028, 2, 29, 0, 0, 0)), None);
    }
}
