//! Why a schedule was refused. Every refusal happens when the schedule is
//! parsed (never when it is evaluated), and every message is one line that
//! quotes the offending part and says what is allowed, so it can be shown to
//! the person who wrote the crontab as it is.

use std::fmt;

use crate::field::Field;

/// A schedule that cannot be used: bad syntax, a value out of range, a
/// feature baton does not support, or an expression that can never fire.
///
/// [`ParseError::field`] and [`ParseError::value`] name the offending part
/// for callers that format their own messages; `Display` gives the whole
/// message on one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", Message(self))]
pub struct ParseError {
    field: Option<Field>,
    value: String,
    reason: Reason,
}

impl ParseError {
    /// The field at fault, when the fault lies in one field.
    pub fn field(&self) -> Option<Field> {
        self.field
    }

    /// The offending text: the list item of a field, the macro, the period,
    /// or the whole expression when the fault is in how the fields combine.
    pub fn value(&self) -> &str {
        &self.value
    }

    pub(crate) fn new(field: Option<Field>, value: impl Into<String>, reason: Reason) -> Self {
        Self {
            field,
            value: value.into(),
            reason,
        }
    }

    pub(crate) fn in_field(field: Field, value: &str, reason: Reason) -> Self {
        Self::new(Some(field), value, reason)
    }
}

/// What is wrong; [`Message`] turns it into words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    /// Nothing but whitespace.
    Empty,
    /// Neither 5 nor 6 fields.
    FieldCount(usize),
    /// `@something` that is not a known macro.
    UnknownMacro,
    /// A macro followed by more text.
    MacroNotAlone,
    /// A list with an empty item (`1,,2`, `5,`).
    EmptyItem,
    /// A token that is neither a number nor a name of this field. `token` is
    /// the token when it is only part of the item.
    NotAValue { token: Option<String> },
    /// Numbers outside the field's range, as written. `whole` when the item
    /// is exactly the one number.
    OutOfRange { numbers: Vec<String>, whole: bool },
    /// A step of 0.
    StepZero,
    /// A step larger than the field is wide.
    StepTooLarge,
    /// A step that is not a number.
    StepNotANumber,
    /// `a-b` with `a > b`.
    Backwards { start: u32, end: u32 },
    /// Quartz-style `L`, `W`, `#` or `?`.
    Unsupported(Unsupported),
    /// A day-of-month that no allowed month has, with day-of-month and
    /// day-of-week combined by "both".
    NeverFires { months: Vec<u32>, days: Vec<u32> },
    /// An `every` period that is not whole seconds.
    PeriodFraction,
    /// An `every` period below one second.
    PeriodTooShort,
    /// An `every` period above 366 days.
    PeriodTooLong,
    /// `every:` text that is not `<N>s`.
    PeriodNotANumber,
}

/// A Quartz-cron feature that baton refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unsupported {
    Last,
    Weekday,
    Nth,
    Question,
}

/// The longest `every` period, in seconds: 366 days.
pub(crate) const MAX_PERIOD_SECS: u64 = 366 * 86_400;

const FIELDS_HELP: &str = "expected 5 fields (minute hour day-of-month month day-of-week) \
                           or 6 (second minute hour day-of-month month day-of-week)";
const MACROS: &str = "@yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly";

/// Renders a [`ParseError`]. Values are quoted with `{:?}`, so a control
/// character in the input cannot break the message over two lines.
struct Message<'a>(&'a ParseError);

impl fmt::Display for Message<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ParseError {
            field,
            value,
            reason,
        } = self.0;
        let name = field.map_or("schedule", Field::name);
        let allowed = field.map_or("", |f| f.allowed());
        let width = field.map_or(0, |f| f.width());
        match reason {
            Reason::Empty => write!(
                f,
                "empty expression: {FIELDS_HELP}, or a macro such as @daily"
            ),
            Reason::FieldCount(n) => write!(f, "{FIELDS_HELP}, found {n} in {value:?}"),
            Reason::UnknownMacro => write!(f, "unknown macro {value:?}: use {MACROS}"),
            Reason::MacroNotAlone => {
                write!(
                    f,
                    "{value:?}: a macro stands alone, with no fields after it"
                )
            }
            Reason::EmptyItem => write!(f, "{name} {value:?} has an empty list item"),
            Reason::NotAValue { token: None } => {
                write!(f, "{name} {value:?} is not a value: use {allowed}")
            }
            Reason::NotAValue { token: Some(token) } => {
                write!(
                    f,
                    "{name} {value:?}: {token:?} is not a value: use {allowed}"
                )
            }
            Reason::OutOfRange { whole: true, .. } => {
                write!(f, "{name} {value:?} is out of range: allowed {allowed}")
            }
            Reason::OutOfRange {
                numbers,
                whole: false,
            } => {
                let verb = if numbers.len() == 1 { "is" } else { "are" };
                let numbers = join(numbers.iter(), " and ");
                write!(
                    f,
                    "{name} {value:?}: {numbers} {verb} out of range: allowed {allowed}"
                )
            }
            Reason::StepZero => write!(f, "step {value:?} in {name}: a step must be at least 1"),
            Reason::StepTooLarge => {
                write!(
                    f,
                    "step {value:?} in {name}: a step must be at most {width}"
                )
            }
            Reason::StepNotANumber => {
                write!(
                    f,
                    "step {value:?} in {name}: a step must be a whole number from 1 to {width}"
                )
            }
            Reason::Backwards { start, end } => write!(
                f,
                "{name} {value:?}: the range starts after it ends ({start} > {end}); \
                 write the smaller value first, or a list such as {start}-{last},{first}-{end} \
                 for a range that wraps around",
                last = field.map_or(0, |f| f.open_end()),
                first = field.map_or(0, |f| f.min()),
            ),
            Reason::Unsupported(what) => {
                let what = match what {
                    Unsupported::Last => "L (last) is not supported",
                    Unsupported::Weekday => "W (nearest weekday) is not supported",
                    Unsupported::Nth => "# (nth weekday of the month) is not supported",
                    Unsupported::Question => "? is not supported: use *",
                };
                write!(f, "{name} {value:?}: {what}")
            }
            Reason::NeverFires { months, days } => {
                let verb = if months.len() == 1 { "has" } else { "have" };
                let months = join(months.iter().map(|&m| MONTH_NAMES[m as usize - 1]), " and ");
                let days = join(days.iter().map(|&d| ordinal(d)), " or ");
                write!(f, "{value:?} never fires: {months} never {verb} a {days}")
            }
            Reason::PeriodFraction => {
                write!(f, "every period {value} is not a whole number of seconds")
            }
            Reason::PeriodTooShort => {
                write!(
                    f,
                    "every period {value} is too short: it must be at least 1s"
                )
            }
            Reason::PeriodTooLong => write!(
                f,
                "every period {value} is too long: it must be at most 366 days ({MAX_PERIOD_SECS}s)"
            ),
            Reason::PeriodNotANumber => write!(
                f,
                "every period {value:?} is not a value: write every:<seconds>s, such as every:900s"
            ),
        }
    }
}

const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// Joins items as `a, b and c` (with `last` as the final separator).
fn join<S: AsRef<str>>(items: impl Iterator<Item = S>, last: &str) -> String {
    let items: Vec<S> = items.collect();
    let mut out = String::new();
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(if i + 1 == items.len() { last } else { ", " });
        }
        out.push_str(item.as_ref());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 29, 30, 31]
            .into_iter()
            .map(ordinal)
            .collect();
        let want = [
            "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "29th",
            "30th", "31st",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn joins_with_commas_and_a_last_word() {
        assert_eq!(join(["a"].into_iter(), " and "), "a");
        assert_eq!(join(["a", "b"].into_iter(), " and "), "a and b");
        assert_eq!(join(["a", "b", "c"].into_iter(), " or "), "a, b or c");
    }
}
