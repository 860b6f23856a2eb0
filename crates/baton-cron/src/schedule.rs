//! [`Schedule`]: a parsed cron expression or fixed interval, and the only
//! door to its occurrences.
//!
//! A schedule is immutable once made and cheap to evaluate: each question
//! (`next_after`, `latest_at_or_before`) is answered from the instant and
//! the zone it is given, with no state kept between calls. It never reads
//! the clock; the caller says what "now" is.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::error::ParseError;
use crate::every::{self, Every};
use crate::field::Fields;
use crate::parse::{self, Parsed};
use crate::resolve::{self, Rule};

/// When a job fires: a cron expression evaluated in a time zone, or a fixed
/// interval since the Unix epoch.
///
/// Cron schedules fire at the instants whose wall-clock time in the zone
/// matches, with daylight saving handled as the crate documentation
/// describes: [`Kind::Wildcard`] schedules follow elapsed time, and
/// [`Kind::Fixed`] ones fire once per matching wall-clock time.
///
/// # Example
///
/// ```
/// use baton_cron::{Kind, Schedule};
/// use jiff::{Timestamp, tz::TimeZone};
///
/// let nightly: Schedule = "30 2 * * *".parse()?;
/// assert_eq!(nightly.kind(), Kind::Fixed);
///
/// let tz = TimeZone::get("America/New_York")?;
/// let before: Timestamp = "2026-03-08T05:00:00Z".parse()?;
/// // 02:30 does not exist in New York that night: clocks jump from 02:00 to
/// // 03:00, and the job runs once, at 03:00 EDT.
/// let next = nightly.next_after(before, &tz).unwrap();
/// assert_eq!(next.to_string(), "2026-03-08T07:00:00Z");
/// assert_eq!(nightly.latest_at_or_before(next, &tz), Some(next));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    inner: Inner,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Inner {
    Cron {
        fields: Fields,
        rule: Rule,
        text: String,
    },
    Every(Every),
}

/// How a schedule relates to daylight saving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A cron schedule whose minute and hour fields both name fixed values
    /// (`30 2 * * *`, `0,30 2 * * *`, `0 3 * * 0`): it fires once per
    /// matching wall-clock time, at the first instant that shows it, or just
    /// after the gap that swallowed it.
    Fixed,
    /// A cron schedule whose minute or hour field starts with `*`
    /// (`*/15 * * * *`, `30 * * * *`, `* 2 * * *`): it fires at every
    /// instant whose wall-clock time matches, so not in a gap, and twice
    /// in a fold.
    Wildcard,
    /// A fixed interval since the Unix epoch, blind to zones.
    Every(Duration),
}

impl Schedule {
    /// Parses a cron expression: five fields
    /// `minute hour day-of-month month day-of-week`, six fields with seconds
    /// first `second minute hour day-of-month month day-of-week`, or a macro:
    /// `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`,
    /// `@hourly`. It also reads back the `every:<N>s` form that
    /// [`Schedule::every`] schedules display as.
    ///
    /// # Errors
    ///
    /// A [`ParseError`] naming the offending part: a wrong number of fields,
    /// an unknown macro, a value that is not a number or name, a value out of
    /// range, a backwards range, a step of 0, an unsupported `L`, `W`, `#` or
    /// `?`, or an expression that can never fire.
    pub fn parse(expr: &str) -> Result<Schedule, ParseError> {
        if let Some(period) = expr.trim().strip_prefix(every::PREFIX) {
            return Ok(Schedule {
                inner: Inner::Every(Every::parse(period)?),
            });
        }
        let Parsed { fields, text } = parse::parse(expr)?;
        let rule = if fields.minute.starts_with_star() || fields.hour.starts_with_star() {
            Rule::Wildcard
        } else {
            Rule::Fixed
        };
        Ok(Schedule {
            inner: Inner::Cron { fields, rule, text },
        })
    }

    /// A schedule that fires at whole multiples of `period` since
    /// 1970-01-01T00:00:00Z, in every zone alike.
    ///
    /// # Errors
    ///
    /// When `period` is not a whole number of seconds, is shorter than one
    /// second, or is longer than 366 days.
    pub fn every(period: Duration) -> Result<Schedule, ParseError> {
        Ok(Schedule {
            inner: Inner::Every(Every::new(period)?),
        })
    }

    /// The first occurrence strictly after `t`, as seen in `tz`; `None` when
    /// there is none within about 100 years.
    pub fn next_after(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let after = floor_second(t);
        let found = match &self.inner {
            Inner::Cron { fields, rule, .. } => resolve::next_after(fields, *rule, after, tz),
            Inner::Every(every) => every.next_after(after),
        }?;
        Timestamp::from_second(found).ok()
    }

    /// The latest occurrence at or before `t`, as seen in `tz`; `None` when
    /// there is none within about 100 years.
    pub fn latest_at_or_before(&self, t: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let at = floor_second(t);
        let found = match &self.inner {
            Inner::Cron { fields, rule, .. } => resolve::latest_at_or_before(fields, *rule, at, tz),
            Inner::Every(every) => every.latest_at_or_before(at),
        }?;
        Timestamp::from_second(found).ok()
    }

    /// The occurrences strictly after `t`, in increasing order: each is
    /// [`Schedule::next_after`] the one before.
    pub fn iter_after<'a>(
        &'a self,
        t: Timestamp,
        tz: &'a TimeZone,
    ) -> impl Iterator<Item = Timestamp> + 'a {
        std::iter::successors(self.next_after(t, tz), move |&prev| {
            self.next_after(prev, tz)
        })
    }

    /// Whether the schedule can fire at a second other than 0: it has a
    /// seconds field (six fields), or it is an interval that is not a whole
    /// number of minutes.
    pub fn has_seconds(&self) -> bool {
        match &self.inner {
            Inner::Cron { fields, .. } => fields.has_seconds,
            Inner::Every(every) => every.seconds() % 60 != 0,
        }
    }

    /// Whether the schedule is a fixed-time or wildcard cron schedule, or an
    /// interval.
    pub fn kind(&self) -> Kind {
        match &self.inner {
            Inner::Cron {
                rule: Rule::Fixed, ..
            } => Kind::Fixed,
            Inner::Cron {
                rule: Rule::Wildcard,
                ..
            } => Kind::Wildcard,
            Inner::Every(every) => Kind::Every(every.period()),
        }
    }

    /// The parsed fields of a cron schedule; `None` for an interval.
    pub fn fields(&self) -> Option<&Fields> {
        match &self.inner {
            Inner::Cron { fields, .. } => Some(fields),
            Inner::Every(_) => None,
        }
    }
}

/// The whole second at or before `t`. An occurrence is always a whole
/// second, so it is after `t` exactly when it is after this second, and at
/// or before `t` exactly when it is at or before it.
fn floor_second(t: Timestamp) -> i64 {
    let second = t.as_second();
    if t.subsec_nanosecond() < 0 {
        second - 1
    } else {
        second
    }
}

impl fmt::Display for Schedule {
    /// The expression as written with single spaces between fields (a macro
    /// in lower case), or `every:<N>s` for an interval.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            Inner::Cron { text, .. } => f.write_str(text),
            Inner::Every(every) => write!(f, "{}{}s", every::PREFIX, every.seconds()),
        }
    }
}

impl FromStr for Schedule {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Schedule::parse(s)
    }
}
