//! The cron parser: text in, [`Fields`] out, or a [`ParseError`] that names
//! the offending part.
//!
//! It accepts five fields (`minute hour day-of-month month day-of-week`), six
//! (with `second` first), or a macro (`@yearly`, `@annually`, `@monthly`,
//! `@weekly`, `@daily`, `@midnight`, `@hourly`). A field is a comma list of
//! `*`, `n`, `a-b`, `*/s`, `a-b/s` and `a/s` (meaning `a` to the field's end,
//! every `s`); month and day-of-week also take three-letter names in any
//! case, inside ranges too. Day-of-week 7 is Sunday, like 0, and `SUN` ending
//! a range (`FRI-SUN`) means 7.
//!
//! Everything that could surprise at run time is refused here instead: values
//! out of range, backwards ranges, steps of 0, Quartz's `L`, `W`, `#` and
//! `?`, and expressions that can never fire (`0 0 30 2 *`). Nothing after
//! parsing ever needs to report an error.

use crate::error::{ParseError, Reason, Unsupported};
use crate::field::{Field, FieldSet, Fields};

/// A parsed cron expression and its normalised text.
#[derive(Clone, Debug)]
pub(crate) struct Parsed {
    pub(crate) fields: Fields,
    pub(crate) text: String,
}

const FIVE: [Field; 5] = [
    Field::Minute,
    Field::Hour,
    Field::DayOfMonth,
    Field::Month,
    Field::DayOfWeek,
];
const SIX: [Field; 6] = [
    Field::Second,
    Field::Minute,
    Field::Hour,
    Field::DayOfMonth,
    Field::Month,
    Field::DayOfWeek,
];

const MACROS: [(&str, &str); 7] = [
    ("@yearly", "0 0 1 1 *"),
    ("@annually", "0 0 1 1 *"),
    ("@monthly", "0 0 1 * *"),
    ("@weekly", "0 0 * * 0"),
    ("@daily", "0 0 * * *"),
    ("@midnight", "0 0 * * *"),
    ("@hourly", "0 * * * *"),
];

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Parses a cron expression or macro.
pub(crate) fn parse(expr: &str) -> Result<Parsed, ParseError> {
    let words: Vec<&str> = expr.split_whitespace().collect();
    let Some(first) = words.first() else {
        return Err(ParseError::new(None, expr, Reason::Empty));
    };
    if first.starts_with('@') {
        let name = first.to_ascii_lowercase();
        let Some((_, body)) = MACROS.iter().find(|(m, _)| *m == name) else {
            return Err(ParseError::new(None, *first, Reason::UnknownMacro));
        };
        if words.len() > 1 {
            return Err(ParseError::new(
                None,
                words.join(" "),
                Reason::MacroNotAlone,
            ));
        }
        let fields = parse_fields(&FIVE, &body.split(' ').collect::<Vec<_>>())?;
        return Ok(Parsed { fields, text: name });
    }
    let order: &[Field] = match words.len() {
        5 => &FIVE,
        6 => &SIX,
        n => return Err(ParseError::new(None, expr.trim(), Reason::FieldCount(n))),
    };
    let fields = parse_fields(order, &words)?;
    Ok(Parsed {
        fields,
        text: words.join(" "),
    })
}

fn parse_fields(order: &[Field], words: &[&str]) -> Result<Fields, ParseError> {
    let mut fields = Fields {
        second: FieldSet::single(0),
        minute: FieldSet::single(0),
        hour: FieldSet::single(0),
        day_of_month: FieldSet::single(1),
        month: FieldSet::single(1),
        day_of_week: FieldSet::single(0),
        has_seconds: order.len() == 6,
    };
    for (&field, word) in order.iter().zip(words) {
        let set = parse_field(field, word)?;
        match field {
            Field::Second => fields.second = set,
            Field::Minute => fields.minute = set,
            Field::Hour => fields.hour = set,
            Field::DayOfMonth => fields.day_of_month = set,
            Field::Month => fields.month = set,
            Field::DayOfWeek => fields.day_of_week = set,
        }
    }
    check_fires(&fields, &words.join(" "))?;
    Ok(fields)
}

/// Refuses day-of-month and month sets that share no real date when the day
/// fields combine by "both" (either starts with `*`). Every date that exists
/// falls on each weekday within 28 years (February 29 within 40, when a
/// century year skips its leap day), so a schedule that passes fires within
/// the evaluator's 100-year horizon. With "either", day-of-week alone fires
/// every week.
fn check_fires(fields: &Fields, text: &str) -> Result<(), ParseError> {
    if fields.days_match_either() {
        return Ok(());
    }
    const LONGEST: [u8; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let months: Vec<u32> = fields.month.values().map(u32::from).collect();
    let days: Vec<u32> = fields.day_of_month.values().map(u32::from).collect();
    let fires = months.iter().any(|&m| {
        days.iter()
            .any(|&d| d <= u32::from(LONGEST[m as usize - 1]))
    });
    if fires {
        return Ok(());
    }
    Err(ParseError::new(
        Some(Field::DayOfMonth),
        text,
        Reason::NeverFires { months, days },
    ))
}

fn parse_field(field: Field, text: &str) -> Result<FieldSet, ParseError> {
    let mut set = FieldSet::empty(text.starts_with('*'));
    for item in text.split(',') {
        if item.is_empty() {
            return Err(ParseError::in_field(field, text, Reason::EmptyItem));
        }
        parse_item(field, item, &mut set)?;
    }
    // Every item inserts at least its start value.
    debug_assert!(!set.is_empty());
    Ok(set)
}

/// One number or name as written.
struct Token<'a> {
    text: &'a str,
    /// `None` when the digits overflow; that is out of range too.
    value: Option<u64>,
    name: bool,
}

fn parse_item(field: Field, item: &str, set: &mut FieldSet) -> Result<(), ParseError> {
    let unsupported = |what| ParseError::in_field(field, item, Reason::Unsupported(what));
    if item.contains('?') {
        return Err(unsupported(Unsupported::Question));
    }
    if item.contains('#') {
        return Err(unsupported(Unsupported::Nth));
    }
    let (range, step) = match item.split_once('/') {
        Some((range, step)) => (range, Some(parse_step(field, item, step)?)),
        None => (item, None),
    };
    let (start, end) = if range == "*" {
        (field.min(), field.open_end())
    } else {
        let (a, b) = match range.split_once('-') {
            Some((a, b)) => (token(field, item, a)?, Some(token(field, item, b)?)),
            None => (token(field, item, range)?, None),
        };
        let bad: Vec<String> = std::iter::once(&a)
            .chain(b.as_ref())
            .filter(|t| {
                t.value
                    .is_none_or(|v| v < u64::from(field.min()) || v > u64::from(field.max()))
            })
            .map(|t| t.text.to_owned())
            .collect();
        if !bad.is_empty() {
            let whole = b.is_none() && step.is_none();
            return Err(ParseError::in_field(
                field,
                item,
                Reason::OutOfRange {
                    numbers: bad,
                    whole,
                },
            ));
        }
        // Both values are known and fit in a u32: out-of-range and overflowing
        // ones were refused above, so the `0` fallbacks are never taken.
        let start = a.value.map_or(0, |v| v as u32);
        match b {
            Some(b) => {
                let mut end = b.value.map_or(0, |v| v as u32);
                if field == Field::DayOfWeek && b.name && end == 0 && start > 0 {
                    end = 7;
                }
                if start > end {
                    return Err(ParseError::in_field(
                        field,
                        item,
                        Reason::Backwards { start, end },
                    ));
                }
                (start, end)
            }
            None if step.is_some() => (start, field.open_end().max(start)),
            None => (start, start),
        }
    };
    let step = step.unwrap_or(1);
    let mut v = start;
    while v <= end {
        set.insert(if field == Field::DayOfWeek && v == 7 {
            0
        } else {
            v
        });
        v += step;
    }
    Ok(())
}

fn parse_step(field: Field, item: &str, text: &str) -> Result<u32, ParseError> {
    let reason = if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        Reason::StepNotANumber
    } else {
        match text.parse::<u64>() {
            Ok(0) => Reason::StepZero,
            Ok(n) if n <= u64::from(field.width()) => return Ok(n as u32),
            _ => Reason::StepTooLarge,
        }
    };
    Err(ParseError::in_field(field, item, reason))
}

fn token<'a>(field: Field, item: &str, text: &'a str) -> Result<Token<'a>, ParseError> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Token {
            text,
            value: text.parse().ok(),
            name: false,
        });
    }
    let names: &[&str] = match field {
        Field::Month => &MONTHS,
        Field::DayOfWeek => &WEEKDAYS,
        _ => &[],
    };
    let upper = text.to_ascii_uppercase();
    if let Some(i) = names.iter().position(|n| *n == upper) {
        let offset = u64::from(field.min());
        return Ok(Token {
            text,
            value: Some(i as u64 + offset),
            name: true,
        });
    }
    if matches!(field, Field::DayOfMonth | Field::DayOfWeek) {
        let letters = upper.trim_start_matches(|c: char| c.is_ascii_digit());
        let what = match letters {
            "L" | "LW" => Some(Unsupported::Last),
            "W" => Some(Unsupported::Weekday),
            _ => None,
        };
        if let Some(what) = what {
            return Err(ParseError::in_field(field, item, Reason::Unsupported(what)));
        }
    }
    let token = (text != item).then(|| text.to_owned());
    Err(ParseError::in_field(
        field,
        item,
        Reason::NotAValue { token },
    ))
}
