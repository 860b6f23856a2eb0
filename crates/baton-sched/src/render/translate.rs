//! What every translation of a job's schedule into a target's terms
//! speaks: why one is refused ([`Untranslatable`]), and a schedule's cron
//! fields as text ([`CronFields`], [`CronSchedule`]). The translations are
//! the targets' own: cron lines in the job's zone
//! ([`super::cron::cron_in_zone`]) or in UTC
//! ([`super::github::cron_in_utc`]), and systemd `OnCalendar=`
//! expressions ([`super::systemd`]).
//!
//! A translation either fires at exactly the instants baton's own schedule
//! does, or it is refused with the reason; it never approximates. What can
//! be refused, and why:
//!
//! - a schedule that fires at a second other than 0 (six fields, or an
//!   interval that is not whole minutes), for cron, whose unit is a minute;
//! - an interval (`every`) that does not divide a day: its instants are
//!   whole multiples of the interval since 1970-01-01 UTC, a pattern no
//!   daily cron or calendar line repeats;
//! - for cron read in UTC (GitHub Actions' default zone), a zone whose
//!   offset changes so that no UTC line fires at baton's instants all year
//!   (`super::utc`: the refusal names the first date it would differ), or
//!   a conversion that moves a restricted day-of-month or month across
//!   midnight;
//! - for cron, systemd and GitHub's `timezone` read in a zone, a schedule
//!   that fires where a clock change skips or repeats the time on a day it
//!   runs, and that the target would run at another instant than baton
//!   there (`super::dst`), whatever the zone, the host's included.
//!
//! Intervals are blind to zones, so they are always rendered in UTC.

use std::collections::{BTreeMap, BTreeSet};

use baton_cron::{FieldSet, Fields};

use super::changes::hm;
use crate::config::{When, Zone};

/// Why a schedule has no faithful translation for a target: the `why` of a
/// [`super::Refusal`]. Each names the schedule as people read it
/// (`` `30 2 * * *` ``, `` `every 15m` ``) and, where it matters, the zone.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Untranslatable {
    /// It fires at seconds other than 0, and the target's unit is a minute.
    #[error("{0} fires at seconds other than 0, and cron's smallest unit is a minute")]
    SubMinute(String),
    /// It is neither a cron schedule nor an interval.
    #[error("{0} is neither cron nor an interval")]
    NotCron(String),
    /// An interval that does not divide a day.
    #[error(
        "{0} does not divide a day: it fires at whole multiples of the interval since \
         1970-01-01 UTC, a pattern that no daily cron or calendar line repeats"
    )]
    NotDaily(String),
    /// In UTC, some times fall on another day, and the day fields cannot
    /// move with them.
    #[error(
        "in UTC some of {schedule}'s times in {zone} fall on another day, and its \
         day-of-month or month field cannot move with them"
    )]
    DayMoves {
        /// The schedule.
        schedule: String,
        /// The zone.
        zone: String,
    },
    /// A field starting with `*` that is not `*` or `*/N`.
    #[error(
        "{0} has a field that starts with `*` but is not `*` or `*/N`, which this \
         translation does not write"
    )]
    StarForm(String),
    /// The target would fire at another instant than baton where the
    /// zone's clocks change.
    #[error("{schedule} fires at {at} in {zone}, and {change} there: {why}")]
    ClockChange {
        /// The schedule.
        schedule: String,
        /// The time of day (or the first of several) the change touches.
        at: String,
        /// The zone.
        zone: String,
        /// The change, described.
        change: String,
        /// How the target and baton differ there.
        why: Mismatch,
    },
    /// No UTC cron line was tried.
    #[error("{0} has no UTC cron line")]
    NoUtcLine(String),
    /// The zone's offset has seconds.
    #[error("{zone}'s offset from UTC ({offset}) is not a whole number of minutes")]
    OffsetSeconds {
        /// The zone.
        zone: String,
        /// Its offset.
        offset: jiff::tz::Offset,
    },
    /// The UTC lines for the zone's offset fire at another instant than
    /// baton on some date.
    #[error(
        "{zone}'s offset from UTC changes, and no UTC cron line fires at {schedule}'s \
         instants all year: {lines} (its times at UTC{offset}) first differs on {date}, \
         when {}",
        difference(*.baton_fires, *.local, *.utc, .zone)
    )]
    Differs {
        /// The zone.
        zone: String,
        /// The schedule.
        schedule: String,
        /// The candidate lines, each in backquotes.
        lines: String,
        /// The offset they were converted at.
        offset: jiff::tz::Offset,
        /// The zone's date where they first differ.
        date: jiff::civil::Date,
        /// Whether baton fires then (and the lines do not), or the reverse.
        baton_fires: bool,
        /// The zone's wall clock then.
        local: jiff::civil::DateTime,
        /// UTC's then.
        utc: jiff::civil::DateTime,
    },
    /// A systemd calendar in UTC cannot carry seconds other than 0.
    #[error("{0} fires at seconds other than 0, and UTC lines are found for whole minutes only")]
    UtcSeconds(String),
    /// A UTC line that does not parse back.
    #[error("the UTC line `{line}` does not read back: {source}")]
    Unreadable {
        /// The line.
        line: String,
        /// What the parser said.
        #[source]
        source: baton_cron::ParseError,
    },
    /// A UTC line that parses back as something other than cron.
    #[error("the UTC line `{0}` is not cron")]
    NotCronLine(String),
    /// An interval under a minute that does not divide one.
    #[error("{0} does not divide a minute, so no calendar expression repeats it")]
    NotMinutely(String),
    /// An interval over a minute that is not whole minutes.
    #[error(
        "{0} is not a whole number of minutes, so its seconds change from one occurrence to \
         the next"
    )]
    PartMinutes(String),
    /// More often than GitHub Actions runs a schedule, as an interval.
    #[error("{schedule} runs every {secs} seconds, and {GITHUB_SHORTEST}")]
    EveryTooOften {
        /// The schedule.
        schedule: String,
        /// Its interval, in seconds.
        secs: i64,
    },
    /// Two times closer than GitHub Actions' shortest interval.
    #[error(
        "{schedule} runs {gap} minute(s) apart (at {first} and {second}), and {GITHUB_SHORTEST}"
    )]
    TooClose {
        /// The schedule.
        schedule: String,
        /// The minutes between them.
        gap: i32,
        /// The first time, `HH:MM`.
        first: String,
        /// The second time, `HH:MM`.
        second: String,
    },
    /// Neither in the zone nor in UTC, for systemd.
    #[error("{in_zone}; and in UTC, {utc}")]
    Neither {
        /// Why not in the zone.
        in_zone: Box<Untranslatable>,
        /// Why not in UTC.
        utc: Box<Untranslatable>,
    },
    /// Neither with `timezone` nor in UTC, for GitHub Actions.
    #[error("with `timezone: {zone}`, {in_zone}; and in UTC, {utc}")]
    NeitherGithub {
        /// The zone.
        zone: String,
        /// Why not with `timezone`.
        in_zone: Box<Untranslatable>,
        /// Why not in UTC.
        utc: Box<Untranslatable>,
    },
}

/// Which fires, and when, where a UTC line and baton first differ.
fn difference(
    baton_fires: bool,
    local: jiff::civil::DateTime,
    utc: jiff::civil::DateTime,
    zone: &str,
) -> String {
    let (local, utc) = (super::changes::hm(local), super::changes::hm(utc));
    if baton_fires {
        format!("baton runs it at {local} in {zone} ({utc} UTC) and the UTC line does not")
    } else {
        format!("the UTC line fires at {utc} UTC ({local} in {zone}) and baton does not")
    }
}

/// How a target fires a schedule at a clock change, where baton fires it
/// otherwise: the `why` of [`Untranslatable::ClockChange`]. `jump` is the
/// wall-clock time the change jumps to, shown as `HH:MM`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Mismatch {
    /// A fixed time in a gap, under cron.
    #[error(
        "baton runs a skipped time once, at {}, while a cron that matches the zone's clock \
         each minute (cronie under CRON_TZ=) never runs it",
        hm(*.jump)
    )]
    CronSkipped {
        /// Where the clocks jump to.
        jump: jiff::civil::DateTime,
    },
    /// A fixed time in a gap, under systemd.
    #[error(
        "baton runs a skipped time once, at {}, and systemd's OnCalendar= does not run it \
         then",
        hm(*.jump)
    )]
    SystemdSkipped {
        /// Where the clocks jump to.
        jump: jiff::civil::DateTime,
    },
    /// A wildcard time in a gap whose shift systemd versions differ on.
    #[error(
        "baton does not run the times the clocks skip, and whether systemd runs them later, \
         shifted by the gap, differs between its versions"
    )]
    SystemdShifted,
    /// A wildcard time in a fold, under systemd.
    #[error(
        "baton runs a wildcard schedule's repeated times twice, and systemd's OnCalendar= once"
    )]
    SystemdRepeated,
    /// A time in a fold, under GitHub Actions.
    #[error(
        "GitHub Actions does not document how it runs a schedule at the times the clocks repeat"
    )]
    GithubRepeated,
    /// A wildcard time in a gap, under GitHub Actions.
    #[error(
        "baton does not run the times the clocks skip, and GitHub Actions moves them to {}",
        hm(*.jump)
    )]
    GithubMoved {
        /// Where the clocks jump to.
        jump: jiff::civil::DateTime,
    },
    /// Several fixed times in a gap, or one where the jump fires too, under
    /// GitHub Actions.
    #[error(
        "GitHub Actions moves each skipped time to {}, and does not document whether it \
         then runs once, as baton does, or once per time",
        hm(*.jump)
    )]
    GithubMovedMany {
        /// Where the clocks jump to.
        jump: jiff::civil::DateTime,
    },
}

/// What GitHub Actions does with runs closer than 5 minutes.
const GITHUB_SHORTEST: &str =
    "GitHub Actions runs a schedule at most once every 5 minutes, and would drop the runs between";

/// One cron line's five fields, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronFields {
    /// Minutes.
    pub minute: String,
    /// Hours.
    pub hour: String,
    /// Days of the month.
    pub day_of_month: String,
    /// Months.
    pub month: String,
    /// Days of the week (0 is Sunday).
    pub day_of_week: String,
}

impl std::fmt::Display for CronFields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {} {} {}",
            self.minute, self.hour, self.day_of_month, self.month, self.day_of_week
        )
    }
}

/// A schedule as cron lines: their union fires at the schedule's instants,
/// read in `zone`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    /// The zone the lines are read in (an IANA name).
    pub zone: String,
    /// The lines, at least one.
    pub lines: Vec<CronFields>,
}

/// `when`'s fields as UTC cron lines, for a zone `offset_min` minutes
/// ahead of UTC all year.
///
/// # Errors
///
/// When some of its times fall on another day in UTC and its day-of-month
/// or month field cannot move with them.
pub(crate) fn lines_at(
    when: &When,
    f: &Fields,
    zone: &Zone,
    offset_min: i32,
) -> Result<Vec<CronFields>, Untranslatable> {
    // Every local (hour, minute) as a UTC (day shift, hour, minute).
    let mut pairs = BTreeSet::new();
    for h in f.hour().values() {
        for m in f.minute().values() {
            let t = i32::from(h) * 60 + i32::from(m) - offset_min;
            let day = t.div_euclid(1440);
            let t = t.rem_euclid(1440);
            // OK to cast: within a day.
            pairs.insert((day, (t / 60) as u8, (t % 60) as u8));
        }
    }
    let days_free = is_full(f.day_of_month(), 1, 31)
        && is_full(f.month(), 1, 12)
        && is_full(f.day_of_week(), 0, 6);
    let shifted = pairs.iter().any(|&(d, _, _)| d != 0);
    if days_free {
        pairs = pairs.into_iter().map(|(_, h, m)| (0, h, m)).collect();
    } else if shifted && !(is_full(f.day_of_month(), 1, 31) && is_full(f.month(), 1, 12)) {
        return Err(Untranslatable::DayMoves {
            schedule: shown(when),
            zone: zone.name.clone(),
        });
    }
    let same = same_fields(when, f)?;
    Ok(group(&pairs)
        .into_iter()
        .map(|(day, hours, minutes)| {
            let day_of_week = if day == 0 || is_full(f.day_of_week(), 0, 6) {
                same.day_of_week.clone()
            } else {
                let moved: Vec<u8> = f
                    .day_of_week()
                    .values()
                    // OK to cast: a weekday plus or minus one, in 0..=6.
                    .map(|w| (i32::from(w) + day).rem_euclid(7) as u8)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                list(&moved, "-")
            };
            CronFields {
                minute: generated(&minutes, 0, 59),
                hour: generated(&hours, 0, 23),
                day_of_month: same.day_of_month.clone(),
                month: same.month.clone(),
                day_of_week,
            }
        })
        .collect())
}

/// What a schedule is to a target that writes cron lines, before the
/// target's own rule for cron fields: an interval, already its lines, or
/// the fields the target translates its own way.
pub(crate) enum CronShape<'w> {
    /// An interval that divides a day, as UTC cron lines.
    Lines(CronSchedule),
    /// Cron fields, at whole minutes.
    Fields(&'w Fields),
}

/// `when` as a cron-line target first sees it: seconds are refused (a cron
/// line has none), an interval becomes its lines, and cron fields are
/// handed back.
///
/// # Errors
///
/// A schedule with seconds, an interval that does not divide a day, or one
/// that is neither an interval nor cron fields.
pub(crate) fn cron_shape(when: &When) -> Result<CronShape<'_>, Untranslatable> {
    let s = &when.schedule;
    if s.has_seconds() {
        return Err(sub_minute(when));
    }
    match (s.kind(), s.fields()) {
        (baton_cron::Kind::Every(p), _) => every_lines(when, p.as_secs()).map(CronShape::Lines),
        (_, Some(f)) => Ok(CronShape::Fields(f)),
        (_, None) => Err(Untranslatable::NotCron(shown(when))),
    }
}

/// An interval of `secs` (whole minutes) as UTC cron lines.
fn every_lines(when: &When, secs: u64) -> Result<CronSchedule, Untranslatable> {
    if 86_400 % secs != 0 {
        return Err(not_daily(when));
    }
    Ok(CronSchedule {
        zone: "UTC".into(),
        lines: day_times(secs / 60)
            .into_iter()
            .map(|(hours, minutes)| CronFields {
                minute: generated(&minutes, 0, 59),
                hour: generated(&hours, 0, 23),
                day_of_month: "*".into(),
                month: "*".into(),
                day_of_week: "*".into(),
            })
            .collect(),
    })
}

/// The times of a UTC day of an interval of `step` minutes that divides a
/// day, as (hours, minutes) products.
pub(crate) fn day_times(step: u64) -> Vec<(Vec<u8>, Vec<u8>)> {
    let pairs: BTreeSet<(i32, u8, u8)> = (0..1440u64)
        .step_by(usize::try_from(step).unwrap_or(1440))
        // OK to cast: within a day.
        .map(|t| (0, (t / 60) as u8, (t % 60) as u8))
        .collect();
    group(&pairs)
        .into_iter()
        .map(|(_, hours, minutes)| (hours, minutes))
        .collect()
}

/// (day, hour, minute) triples as the fewest (day, hours, minutes)
/// products this grouping finds: minutes sharing the same hours share a
/// line.
fn group(pairs: &BTreeSet<(i32, u8, u8)>) -> Vec<(i32, Vec<u8>, Vec<u8>)> {
    let mut hours_of: BTreeMap<(i32, u8), Vec<u8>> = BTreeMap::new();
    for &(d, h, m) in pairs {
        hours_of.entry((d, m)).or_default().push(h);
    }
    let mut minutes_of: BTreeMap<(i32, Vec<u8>), Vec<u8>> = BTreeMap::new();
    for ((d, m), hours) in hours_of {
        minutes_of.entry((d, hours)).or_default().push(m);
    }
    let mut out: Vec<_> = minutes_of
        .into_iter()
        .map(|((d, hours), minutes)| (d, hours, minutes))
        .collect();
    out.sort_by(|a, b| (a.0, &a.1, &a.2).cmp(&(b.0, &b.1, &b.2)));
    out
}

/// The fields as written, in canonical text. A field written starting with
/// `*` is written so again (`*` or `*/N`): whether it does decides how the
/// day fields combine and how daylight saving is met.
pub(crate) fn same_fields(when: &When, f: &Fields) -> Result<CronFields, Untranslatable> {
    let one = |set: &FieldSet, lo: u8, hi: u8| {
        field(set, lo, hi).ok_or_else(|| Untranslatable::StarForm(shown(when)))
    };
    Ok(CronFields {
        minute: one(f.minute(), 0, 59)?,
        hour: one(f.hour(), 0, 23)?,
        day_of_month: one(f.day_of_month(), 1, 31)?,
        month: one(f.month(), 1, 12)?,
        day_of_week: one(f.day_of_week(), 0, 6)?,
    })
}

/// A field's text, keeping whether it starts with `*`; `None` for a `*`
/// field that is neither `*` nor `*/N` from its lowest value.
fn field(set: &FieldSet, lo: u8, hi: u8) -> Option<String> {
    let values: Vec<u8> = set.values().collect();
    if set.starts_with_star() {
        match values[..] {
            // `*/N` with N past the range: only the lowest value.
            [only] if only == lo && lo < hi => Some(format!("*/{}", hi - lo + 1)),
            _ => star_form(&values, lo, hi),
        }
    } else {
        Some(list(&values, "-"))
    }
}

/// A field made by a conversion to UTC, where `*` changes nothing (UTC has
/// no daylight saving): the shortest of `*`, `*/N` and a list.
fn generated(values: &[u8], lo: u8, hi: u8) -> String {
    star_form(values, lo, hi).unwrap_or_else(|| list(values, "-"))
}

/// `*` for every value from `lo` to `hi`, `*/N` for every Nth from `lo`.
fn star_form(values: &[u8], lo: u8, hi: u8) -> Option<String> {
    let step = match values {
        [first, second, ..] if *first == lo => second - first,
        [only] if *only == lo && lo == hi => 1,
        _ => return None,
    };
    let expected: Vec<u8> = (lo..=hi).step_by(usize::from(step)).collect();
    if expected != values {
        return None;
    }
    Some(if step == 1 {
        "*".into()
    } else {
        format!("*/{step}")
    })
}

/// Values as a comma list, runs of three or more as ranges joined by `dash`
/// (`-` for cron, `..` for systemd).
pub(crate) fn list(values: &[u8], dash: &str) -> String {
    list_with(values, dash, |v| format!("{v}"))
}

/// As [`list`], each value written by `name`.
pub(crate) fn list_with(values: &[u8], dash: &str, name: impl Fn(u8) -> String) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < values.len() {
        let mut j = i;
        while j + 1 < values.len() && values[j + 1] == values[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{}{dash}{}", name(values[i]), name(values[j])));
        } else {
            parts.extend(values[i..=j].iter().map(|&v| name(v)));
        }
        i = j + 1;
    }
    parts.join(",")
}

/// Whether the set holds every value from `lo` to `hi`.
pub(crate) fn is_full(set: &FieldSet, lo: u8, hi: u8) -> bool {
    (lo..=hi).all(|v| set.contains(v))
}

/// The schedule as people read it: `30 2 * * *`, or `every 15m`.
pub(crate) fn shown(when: &When) -> String {
    if when.key == "every" {
        format!("`every {}`", when.text)
    } else {
        format!("`{}`", when.text)
    }
}

fn sub_minute(when: &When) -> Untranslatable {
    Untranslatable::SubMinute(shown(when))
}

pub(crate) fn not_daily(when: &When) -> Untranslatable {
    Untranslatable::NotDaily(shown(when))
}
