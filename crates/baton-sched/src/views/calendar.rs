//! `baton calendar`: a schedule's next occurrences, each on the zone's wall
//! clock and in UTC, with a note wherever daylight saving moved, skipped or
//! repeated a wall-clock time.
//!
//! This module owns three things: reading the schedule a person types on
//! the command line ([`parse_expression`]: a cron expression, a macro, or an
//! interval such as `every:15m`); listing occurrences and explaining them
//! ([`Calendar`]); and the two ways of showing them, [`render`] for people
//! and [`to_json`] for scripts.
//!
//! Every instant listed comes from [`Schedule::iter_after`], the computation
//! `tick` and `status` use: this module never decides when a schedule fires.
//! Its notes only explain what that computation did, by comparing each
//! occurrence with the zone's transitions and with the wall-clock times the
//! schedule's fields allow (which it asks the same schedule for, in UTC,
//! where every wall-clock time happens exactly once). It never reads the
//! clock (the caller says where to start), never touches files and never
//! prints; the caller builds the time zone.

use std::time::Duration;

use baton_cron::{Kind, Schedule};
use jiff::civil::{Date, DateTime};
use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::{SignedDuration, Timestamp, ZonedDateTime};
use serde::Serialize;

use crate::config::Zone;
use crate::units;

/// How many occurrences `baton calendar` lists unless told otherwise.
pub const DEFAULT_COUNT: u32 = 5;

/// The most occurrences `baton calendar` lists at once.
pub const MAX_COUNT: u32 = 1000;

/// Why the text of a schedule was refused. The message names the part at
/// fault: the field and its value for a cron expression, the period for an
/// interval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpressionError {
    /// Not a cron expression, or a period an interval cannot have.
    #[error("{0}")]
    Schedule(#[from] baton_cron::ParseError),
    /// An interval (`every:15m`) whose period is not a duration.
    #[error("every: {0}")]
    Period(#[source] units::BadDuration),
}

/// Reads a schedule as written on the command line: a cron expression of
/// five or six fields, a macro (`@daily`), or an interval written
/// `every:15m`, `every 15m` or `@every 15m` (any duration `baton.toml`
/// accepts for `every`, such as `90s` or `1h30m`).
///
/// # Errors
///
/// An [`ExpressionError`] naming the field and value at fault, or the
/// period that is not a duration.
///
/// # Example
///
/// ```
/// use baton_cron::Kind;
/// use baton_sched::views::calendar::parse_expression;
///
/// let quarter = parse_expression("every:15m")?;
/// assert_eq!(quarter.kind(), Kind::Every(std::time::Duration::from_secs(900)));
/// let err = parse_expression("61 * * * *").unwrap_err();
/// assert!(err.to_string().starts_with("minute \"61\""), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn parse_expression(text: &str) -> Result<Schedule, ExpressionError> {
    let text = text.trim();
    match interval_period(text) {
        Some(period) => {
            let period = units::parse_duration(period).map_err(ExpressionError::Period)?;
            Ok(Schedule::every(period)?)
        }
        None => Ok(Schedule::parse(text)?),
    }
}

/// The period of `every:P`, `every P` or `@every P` (the word in any case),
/// or `None` when `text` is not an interval.
fn interval_period(text: &str) -> Option<&str> {
    ["@every", "every"].into_iter().find_map(|word| {
        let head = text.get(..word.len())?;
        if !head.eq_ignore_ascii_case(word) {
            return None;
        }
        let rest = &text[word.len()..];
        if rest.is_empty() {
            Some(rest)
        } else if let Some(period) = rest.strip_prefix(':') {
            Some(period.trim())
        } else if rest.starts_with(char::is_whitespace) {
            Some(rest.trim())
        } else {
            None
        }
    })
}

/// What daylight saving did at an occurrence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dst {
    /// Matching wall-clock times the clocks skipped, run once at this
    /// occurrence: the instant the clocks jumped (a fixed schedule).
    Gap,
    /// Matching wall-clock times the clocks skipped before this occurrence,
    /// which did not run (a schedule that follows elapsed time).
    Skipped,
    /// The first of two instants that show this wall-clock time.
    FirstOfTwo,
    /// The second of two instants that show this wall-clock time.
    SecondOfTwo,
}

impl Dst {
    /// The word `--json` gives: `gap`, `skipped`, `first-of-two` or
    /// `second-of-two`.
    pub fn as_str(self) -> &'static str {
        match self {
            Dst::Gap => "gap",
            Dst::Skipped => "skipped",
            Dst::FirstOfTwo => "first-of-two",
            Dst::SecondOfTwo => "second-of-two",
        }
    }
}

/// A note on an occurrence: what daylight saving did, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// What happened.
    pub dst: Dst,
    /// One line for people, such as `02:30 does not exist on 2026-03-08
    /// (the clocks jump from 02:00 to 03:00); it runs when they jump`.
    pub text: String,
}

/// One occurrence.
#[derive(Debug, Clone, PartialEq)]
pub struct Occurrence {
    /// The instant.
    pub at: Timestamp,
    /// The instant on the zone's wall clock.
    pub local: ZonedDateTime,
    /// What daylight saving did here, if anything.
    pub note: Option<Note>,
}

/// A schedule's occurrences after an instant, in a zone: what
/// `baton calendar` shows.
///
/// The occurrences are strictly increasing and never repeat (the schedule
/// guarantees it). There are fewer than asked for only when the schedule
/// never fires again ([`Calendar::exhausted`]).
///
/// # Example
///
/// ```
/// use baton_sched::views::calendar::{Calendar, Dst, parse_expression};
/// use baton_sched::config::Zone;
///
/// let tz = jiff::tz::TimeZone::get("America/New_York")?;
/// let zone = Zone { name: "America/New_York".into(), tz };
/// let from = "2026-03-08T00:00:00-05:00".parse()?;
/// let nightly = parse_expression("30 2 * * *")?;
/// let cal = Calendar::new("30 2 * * *", nightly, zone, from, 1);
/// let first = &cal.occurrences()[0];
/// // 02:30 does not exist that night: it runs when the clocks jump to 03:00.
/// assert_eq!(first.at.to_string(), "2026-03-08T07:00:00Z");
/// assert_eq!(first.note.as_ref().map(|n| n.dst), Some(Dst::Gap));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
pub struct Calendar {
    expression: String,
    job: Option<String>,
    schedule: Schedule,
    zone: Zone,
    from: Timestamp,
    occurrences: Vec<Occurrence>,
    exhausted: bool,
    jitter: Option<Jitter>,
    /// How many were asked for.
    count: usize,
}

/// A job's jitter, as a calendar lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jitter {
    /// `jitter`: the window.
    pub window: Duration,
    /// Where in it the job starts, after each occurrence.
    pub offset: Duration,
}

/// The first `count` occurrences of `schedule` strictly after `from` in
/// `tz`, each with its note.
fn list(schedule: &Schedule, tz: &TimeZone, from: Timestamp, count: usize) -> Vec<Occurrence> {
    let mut occurrences: Vec<Occurrence> = Vec::with_capacity(count.min(1024));
    let mut previous = from;
    for at in schedule.iter_after(from, tz).take(count) {
        let local = at.to_zoned_datetime(tz.clone());
        let note = note(schedule, tz, previous, &local);
        occurrences.push(Occurrence { at, local, note });
        previous = at;
    }
    occurrences
}

impl Calendar {
    /// The first `count` occurrences of `schedule` strictly after `from`,
    /// as seen in `zone`. `expression` is the schedule as the person wrote
    /// it, shown beside its normalized form.
    pub fn new(
        expression: &str,
        schedule: Schedule,
        zone: Zone,
        from: Timestamp,
        count: usize,
    ) -> Calendar {
        let occurrences = list(&schedule, &zone.tz, from, count);
        Calendar {
            expression: expression.trim().to_owned(),
            job: None,
            jitter: None,
            count,
            exhausted: occurrences.len() < count,
            schedule,
            zone,
            from,
            occurrences,
        }
    }

    /// The same calendar, labelled as job `name`'s.
    pub fn for_job(mut self, name: &str) -> Calendar {
        self.job = Some(name.to_owned());
        self
    }

    /// The same calendar for a job with `jitter` = `window`, which starts
    /// each occurrence `offset` after it ([`crate::jitter`]): the first
    /// occurrences that *start* after the instant it lists from, as many
    /// as it listed. No change when the window is zero.
    pub fn jittered(mut self, window: Duration, offset: Duration) -> Calendar {
        if window.is_zero() {
            return self;
        }
        let asked = self.count;
        let back = SignedDuration::try_from(offset).unwrap_or(SignedDuration::ZERO);
        let from = self.from.checked_sub(back).unwrap_or(self.from);
        self.occurrences = list(&self.schedule, &self.zone.tz, from, asked);
        self.exhausted = self.occurrences.len() < asked;
        self.jitter = Some(Jitter { window, offset });
        self
    }

    /// The jitter, for a job that has one.
    pub fn jitter(&self) -> Option<&Jitter> {
        self.jitter.as_ref()
    }

    /// When the occurrence at `at` starts: it, moved on by the jitter.
    pub fn starts(&self, at: Timestamp) -> Timestamp {
        let offset = self.jitter.as_ref().map_or(Duration::ZERO, |j| j.offset);
        let on = SignedDuration::try_from(offset).unwrap_or(SignedDuration::ZERO);
        at.checked_add(on).unwrap_or(at)
    }

    /// The occurrences, in increasing order.
    pub fn occurrences(&self) -> &[Occurrence] {
        &self.occurrences
    }

    /// Whether the list is short because the schedule never fires again
    /// (within about 100 years, or before [`crate::times::last_instant`]).
    pub fn exhausted(&self) -> bool {
        self.exhausted
    }

    /// The schedule.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The instant the occurrences are after.
    pub fn from(&self) -> Timestamp {
        self.from
    }
}

/// The note for the occurrence at `local`, whose predecessor (or the start)
/// is `previous`: a gap first, then a fold.
fn note(
    schedule: &Schedule,
    tz: &TimeZone,
    previous: Timestamp,
    local: &ZonedDateTime,
) -> Option<Note> {
    gap_note(schedule, tz, previous, local.timestamp()).or_else(|| fold_note(schedule, tz, local))
}

/// A transition of the zone: the wall clock just before it and just after.
#[derive(Debug, Clone, Copy)]
struct Jump {
    at: Timestamp,
    before: Offset,
    after: Offset,
}

impl Jump {
    fn wall_before(&self) -> DateTime {
        self.before.to_datetime(self.at)
    }

    fn wall_after(&self) -> DateTime {
        self.after.to_datetime(self.at)
    }

    /// `from 02:00 to 03:00`, with dates when they differ from `on`.
    fn words(&self, on: Date) -> String {
        format!(
            "from {} to {}",
            clock(self.wall_before(), on, false),
            clock(self.wall_after(), on, false)
        )
    }
}

/// A note for the first gap after `after` and no later than the occurrence
/// `at` (a transition where the clocks jump forward) that swallowed a
/// wall-clock time the schedule allows: run at the jump when the occurrence
/// is the jump and the schedule fixed, else skipped. Intervals allow no
/// wall-clock times, so they never get one.
fn gap_note(schedule: &Schedule, tz: &TimeZone, after: Timestamp, at: Timestamp) -> Option<Note> {
    schedule.fields()?;
    let one = SignedDuration::from_nanos(1);
    for transition in tz.following(after) {
        let t = transition.timestamp();
        if t > at {
            break;
        }
        let jump = Jump {
            at: t,
            before: tz.to_offset(t.checked_sub(one).ok()?),
            after: transition.offset(),
        };
        if jump.after <= jump.before {
            continue;
        }
        let Some(skipped) = matching(schedule, jump.wall_before(), jump.wall_after()) else {
            continue;
        };
        let on = jump.wall_before().date();
        let seconds = schedule.has_seconds();
        let names = skipped.words(on, seconds);
        let verb = if skipped.is_one() { "does" } else { "do" };
        let head = format!(
            "{names} {verb} not exist on {on} (the clocks jump {})",
            jump.words(on)
        );
        return Some(if t == at && schedule.kind() == Kind::Fixed {
            let tail = if skipped.is_one() {
                "it runs when they jump"
            } else {
                "they run once, when the clocks jump"
            };
            // The instant of the jump may show a time of its own that the
            // schedule allows (`30 2,3 * * *`): still one occurrence.
            let landing = jump.wall_after();
            let together = landing
                .checked_add(SignedDuration::from_secs(1))
                .ok()
                .and_then(|end| matching(schedule, landing, end))
                .map(|_| format!(", together with {}", clock(landing, on, seconds)))
                .unwrap_or_default();
            Note {
                dst: Dst::Gap,
                text: format!("{head}; {tail}{together}"),
            }
        } else {
            Note {
                dst: Dst::Skipped,
                text: format!("{head}; skipped, since this schedule follows elapsed time"),
            }
        });
    }
    None
}

/// A note for a wall-clock time that the zone shows twice.
fn fold_note(schedule: &Schedule, tz: &TimeZone, local: &ZonedDateTime) -> Option<Note> {
    let AmbiguousOffset::Fold { before, after } =
        tz.to_ambiguous_timestamp(local.datetime()).offset()
    else {
        return None;
    };
    let at = local.timestamp();
    let (dst, transition) = if local.offset() == before {
        (Dst::FirstOfTwo, tz.following(at).next()?)
    } else if local.offset() == after {
        let just_after = at.checked_add(SignedDuration::from_nanos(1)).ok()?;
        (Dst::SecondOfTwo, tz.preceding(just_after).next()?)
    } else {
        return None;
    };
    let jump = Jump {
        at: transition.timestamp(),
        before,
        after,
    };
    let on = local.date();
    let time = clock(local.datetime(), on, schedule.has_seconds());
    let text = match dst {
        Dst::FirstOfTwo => {
            let tail = match schedule.kind() {
                Kind::Fixed => "; the second does not run",
                Kind::Wildcard => "; the second runs too",
                Kind::Every(_) => "",
            };
            format!(
                "first of two {time}s on {on} (the clocks go back {}){tail}",
                jump.words(on)
            )
        }
        _ => format!(
            "second of two {time}s on {on} (the clocks went back {})",
            jump.words(on)
        ),
    };
    Some(Note { dst, text })
}

/// Wall-clock times a schedule allows inside a gap: the first ones, and the
/// last when there are many.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Skipped {
    first: Vec<DateTime>,
    last: Option<DateTime>,
}

/// Listed in full up to this many; beyond, the first two and the last.
const LISTED: usize = 4;

impl Skipped {
    fn is_one(&self) -> bool {
        self.first.len() == 1 && self.last.is_none()
    }

    /// `02:30`, `02:00 and 02:30`, `02:00, 02:15, 02:30 and 02:45`, or
    /// `02:00, 02:01 … 02:59`.
    fn words(&self, on: Date, seconds: bool) -> String {
        let shown: Vec<String> = self.first.iter().map(|&t| clock(t, on, seconds)).collect();
        match (&self.last, shown.as_slice()) {
            (Some(last), [a, b, ..]) => format!("{a}, {b} … {}", clock(*last, on, seconds)),
            (_, [one]) => one.clone(),
            (_, [init @ .., last]) => format!("{} and {last}", init.join(", ")),
            (_, []) => String::new(),
        }
    }
}

/// The wall-clock times in `[start, end)` that the schedule's fields allow.
/// They are found by asking the schedule itself in UTC, where every
/// wall-clock time happens exactly once, so its occurrences there are
/// exactly the times its fields allow.
fn matching(schedule: &Schedule, start: DateTime, end: DateTime) -> Option<Skipped> {
    let utc = |dt: DateTime| Offset::UTC.to_timestamp(dt).ok();
    let (lo, hi) = (utc(start)?, utc(end)?);
    let before = lo.checked_sub(SignedDuration::from_secs(1)).ok()?;
    let found: Vec<DateTime> = schedule
        .iter_after(before, &TimeZone::UTC)
        .take_while(|&t| t < hi)
        .take(LISTED + 1)
        .map(|t| Offset::UTC.to_datetime(t))
        .collect();
    if found.is_empty() {
        return None;
    }
    if found.len() <= LISTED {
        return Some(Skipped {
            first: found,
            last: None,
        });
    }
    let last = hi
        .checked_sub(SignedDuration::from_secs(1))
        .ok()
        .and_then(|t| schedule.latest_at_or_before(t, &TimeZone::UTC))
        .map(|t| Offset::UTC.to_datetime(t));
    Some(Skipped {
        first: found[..2].to_vec(),
        last,
    })
}

/// A wall-clock time in a note: `02:30` (`02:30:15` with seconds), with its
/// date when it is not on `on`.
fn clock(t: DateTime, on: Date, seconds: bool) -> String {
    let time = if seconds || t.second() != 0 {
        format!("{:02}:{:02}:{:02}", t.hour(), t.minute(), t.second())
    } else {
        format!("{:02}:{:02}", t.hour(), t.minute())
    };
    if t.date() == on {
        time
    } else {
        format!("{} {time}", t.date())
    }
}

/// Formats with strftime. Every format here uses only fields a
/// `ZonedDateTime` has, so the fallback (jiff's own form) is never taken.
fn strf(z: &ZonedDateTime, format: &str) -> String {
    jiff::fmt::strtime::format(format, z).unwrap_or_else(|_| z.to_string())
}

/// The local form in `--json`: RFC 3339 with the zone's offset (rounded to
/// the minute where the zone's has seconds: [`crate::times::rfc3339`]).
fn rfc3339(z: &ZonedDateTime) -> String {
    crate::times::rfc3339_zoned(z)
}

/// The local form for people: `Sun 2026-03-08 03:00:00 EDT -04:00`.
fn wall(z: &ZonedDateTime) -> String {
    strf(z, "%a %Y-%m-%d %H:%M:%S %Z %:z")
}

/// An instant in UTC, to the second: `2026-03-08T07:00:00Z`.
fn utc(t: Timestamp) -> String {
    strf(&t.to_zoned_datetime(TimeZone::UTC), "%Y-%m-%dT%H:%M:%SZ")
}

/// The word for a kind in `--json`: `fixed`, `wildcard` or `every`.
fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Fixed => "fixed",
        Kind::Wildcard => "wildcard",
        Kind::Every(_) => "every",
    }
}

/// The kind for people.
fn kind_words(kind: Kind) -> String {
    match kind {
        Kind::Fixed => "fixed wall-clock time (a time the clocks skip runs when they jump; \
                        a time they repeat runs once)"
            .to_owned(),
        Kind::Wildcard => "follows elapsed time (nothing runs for times the clocks skip; \
                           times they repeat run again)"
            .to_owned(),
        Kind::Every(period) => format!(
            "interval of {}, counted from 1970-01-01T00:00:00Z (the same in every zone)",
            units::show_duration(period)
        ),
    }
}

/// How long from `from` to `at`, for people, rounded up to the second:
/// `2h30m`.
fn ahead(from: Timestamp, at: Timestamp) -> String {
    let d = Duration::try_from(at.duration_since(from)).unwrap_or_default();
    let secs = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    units::show_duration(Duration::from_secs(secs))
}

/// The human form, modelled on `systemd-analyze calendar --iterations`: a
/// header (the job, the expression and its normalized form, its kind, the
/// zone, the start), then one line per occurrence (its number, the wall
/// clock with the zone's abbreviation and offset, the UTC instant, and for
/// the first how far it is from the start), each note on a line of its own
/// below its occurrence.
pub fn render(c: &Calendar) -> String {
    let mut out = String::new();
    let mut field = |label: &str, value: &str| out.push_str(&format!("{label:>10}: {value}\n"));
    if let Some(job) = &c.job {
        field("Job", job);
    }
    field("Expression", &c.expression);
    let normalized = c.schedule.to_string();
    if normalized != c.expression {
        field("Normalized", &normalized);
    }
    field("Kind", &kind_words(c.schedule.kind()));
    field("Zone", &c.zone.name);
    if let Some(j) = &c.jitter {
        field(
            "Jitter",
            &format!(
                "{}: starts {} after each occurrence",
                units::show_duration(j.window),
                crate::jitter::show(j.offset)
            ),
        );
    }
    let start = c.from.to_zoned_datetime(c.zone.tz.clone());
    field("From", &format!("{} ({})", wall(&start), utc(c.from)));
    out.push('\n');

    let number_width = c.occurrences.len().to_string().len();
    let walls: Vec<String> = c.occurrences.iter().map(|o| wall(&o.local)).collect();
    let wall_width = walls.iter().map(|w| w.chars().count()).max().unwrap_or(0);
    for (i, (o, w)) in c.occurrences.iter().zip(&walls).enumerate() {
        let mut line = format!("{:>number_width$}  {w:<wall_width$}  {}", i + 1, utc(o.at));
        let starts = c.starts(o.at);
        if c.jitter.is_some() {
            let local = starts.to_zoned_datetime(c.zone.tz.clone());
            line.push_str(&format!("  starts {}", strf(&local, "%H:%M:%S")));
        }
        if i == 0 {
            line.push_str(&format!("  in {}", ahead(c.from, starts)));
        }
        out.push_str(&line);
        out.push('\n');
        if let Some(n) = &o.note {
            out.push_str(&format!("{:number_width$}  {}\n", "", n.text));
        }
    }
    if c.exhausted {
        let what = if c.occurrences.is_empty() {
            "No occurrences"
        } else {
            "No further occurrences"
        };
        out.push_str(&format!(
            "{what}: the schedule does not fire again within about 100 years \
             (or before {}, the last instant baton computes).\n",
            utc(crate::times::last_instant())
        ));
    }
    out
}

/// The `--json` form of a calendar. Its field names are a contract: they
/// are documented in the README and only ever added to.
#[derive(Debug, Clone, Serialize)]
pub struct CalendarJson {
    /// The schedule as written (for `--job`, as `baton.toml` has it:
    /// `0 3 * * *`, or `every 15m`).
    pub expression: String,
    /// The schedule normalized: single spaces, a macro in lower case, an
    /// interval as `every:<seconds>s`.
    pub normalized: String,
    /// `fixed`, `wildcard` or `every`.
    pub kind: &'static str,
    /// The zone's IANA name.
    pub zone: String,
    /// The job, for `--job`; else null.
    pub job: Option<String>,
    /// The instant the occurrences are after, in the zone (RFC 3339).
    pub from: String,
    /// Whether fewer occurrences than asked for are listed because the
    /// schedule never fires again.
    pub exhausted: bool,
    /// The occurrences, in increasing order.
    pub occurrences: Vec<OccurrenceJson>,
    /// For `--job` with `jitter`: how long after each occurrence the job
    /// starts, in seconds; else null.
    pub jitter_offset_seconds: Option<u64>,
}

/// One occurrence in `--json`.
#[derive(Debug, Clone, Serialize)]
pub struct OccurrenceJson {
    /// On the zone's wall clock, RFC 3339 with the offset:
    /// `2026-03-08T03:00:00-04:00`. Where the zone's offset has seconds
    /// (local mean time, before 1912 in most zones), the nearest whole
    /// minute, with the wall clock shifted to the same instant
    /// ([`crate::times::rfc3339`]).
    pub local: String,
    /// In UTC: `2026-03-08T07:00:00Z`.
    pub utc: String,
    /// The zone's exact offset then: `-04:00` (`+00:19:32` for a local mean
    /// time, which `local` rounds to the minute).
    pub offset: String,
    /// The zone's abbreviation then: `EDT` (some zones have only numeric
    /// ones, such as `-03`).
    pub abbreviation: String,
    /// What daylight saving did: `gap`, `skipped`, `first-of-two`,
    /// `second-of-two`, or null.
    pub dst: Option<&'static str>,
    /// The same in words, as the human form shows it, or null.
    pub note: Option<String>,
    /// When it starts, in UTC: the occurrence itself, or for a job with
    /// `jitter`, the occurrence moved on by its offset.
    pub starts: String,
}

/// The `--json` form.
pub fn to_json(c: &Calendar) -> CalendarJson {
    CalendarJson {
        expression: c.expression.clone(),
        normalized: c.schedule.to_string(),
        kind: kind_word(c.schedule.kind()),
        zone: c.zone.name.clone(),
        job: c.job.clone(),
        from: rfc3339(&c.from.to_zoned_datetime(c.zone.tz.clone())),
        exhausted: c.exhausted,
        occurrences: c
            .occurrences
            .iter()
            .map(|o| OccurrenceJson {
                local: rfc3339(&o.local),
                utc: utc(o.at),
                offset: strf(&o.local, "%:z"),
                abbreviation: strf(&o.local, "%Z"),
                dst: o.note.as_ref().map(|n| n.dst.as_str()),
                note: o.note.as_ref().map(|n| n.text.clone()),
                starts: utc(c.starts(o.at)),
            })
            .collect(),
        jitter_offset_seconds: c.jitter.map(|j| j.offset.as_secs()),
    }
}

#[cfg(test)]
mod tests;
