//! Fixed intervals: occurrences at whole multiples of a period since
//! 1970-01-01T00:00:00Z.
//!
//! An interval counts elapsed time, so it ignores time zones and daylight
//! saving entirely: `every:3600s` fires at every UTC hour in every zone, and
//! one hour apart across a fall-back fold. The period is a whole number of
//! seconds from 1 s to 366 days; anything else is refused when the schedule
//! is made.

use std::time::Duration;

use crate::error::{MAX_PERIOD_SECS, ParseError, Reason};

/// The textual form's prefix: `every:<seconds>s`.
pub(crate) const PREFIX: &str = "every:";

/// A validated period, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Every {
    period: i64,
}

impl Every {
    pub(crate) fn new(period: Duration) -> Result<Self, ParseError> {
        let shown = format!("{period:?}");
        let reason = if period.subsec_nanos() != 0 {
            Reason::PeriodFraction
        } else if period.as_secs() == 0 {
            Reason::PeriodTooShort
        } else if period.as_secs() > MAX_PERIOD_SECS {
            Reason::PeriodTooLong
        } else {
            // OK to cast: at most 366 days in seconds.
            return Ok(Self {
                period: period.as_secs() as i64,
            });
        };
        Err(ParseError::new(None, shown, reason))
    }

    /// Parses the text after `every:`, such as `900s`.
    pub(crate) fn parse(text: &str) -> Result<Self, ParseError> {
        let digits = text.strip_suffix('s').unwrap_or("");
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseError::new(None, text, Reason::PeriodNotANumber));
        }
        match digits.parse::<u64>() {
            Ok(secs) => Self::new(Duration::from_secs(secs)),
            Err(_) => Err(ParseError::new(None, text, Reason::PeriodTooLong)),
        }
    }

    pub(crate) fn period(&self) -> Duration {
        // OK to cast: the period is positive.
        Duration::from_secs(self.period as u64)
    }

    pub(crate) fn seconds(&self) -> i64 {
        self.period
    }

    /// The first multiple strictly after `after` (whole seconds, the floor of
    /// the instant: a multiple is after the instant exactly when it is after
    /// its floor).
    pub(crate) fn next_after(&self, after: i64) -> Option<i64> {
        after
            .div_euclid(self.period)
            .checked_add(1)?
            .checked_mul(self.period)
    }

    /// The last multiple at or before `at` (whole seconds, the floor).
    pub(crate) fn latest_at_or_before(&self, at: i64) -> Option<i64> {
        at.div_euclid(self.period).checked_mul(self.period)
    }
}
