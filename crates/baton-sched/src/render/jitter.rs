//! A job with `jitter` as a per-job entry: the schedule moved on by the
//! job's offset, so that the target starts `baton tick JOB` when the
//! occurrence starts ([`crate::config::Job::starts_at`]), not when it is
//! scheduled (a tick then would find it not yet due, and nothing would run
//! until the next entry). No target's own randomised delay is used
//! (`RandomizedDelaySec=` draws its own offset, which baton's hosts would
//! not share).
//!
//! The moved schedule is written as a cron expression with the offset's
//! seconds, minutes and hours added to the fields, and then proved: over a
//! year of occurrences from the render's instant, it must fire exactly at
//! each start and nowhere else, in the job's zone. Where the offset carries
//! different minutes into different hours, crosses midnight under a
//! restricted day, the schedule is an interval, or the proof fails (a
//! clock change), the job is refused with the reason; nothing is
//! approximated.

use std::borrow::Cow;

use jiff::{SignedDuration, Timestamp};

use crate::config::{Job, When};

/// How many occurrences, at most, the proof compares.
const PROOF_WALK: usize = 5_000;

/// Why no calendar line fires at a jittered job's starts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("its jitter starts each occurrence {} after it, and {why}", crate::jitter::show(*.offset))]
pub struct Unmovable {
    /// The job's offset.
    pub offset: std::time::Duration,
    /// What stops the schedule from moving by it.
    pub why: Stuck,
}

/// What stops a schedule from moving by a job's offset ([`Unmovable`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stuck {
    /// `every = …`.
    #[error("an interval cannot be moved as a calendar line: write it as a cron schedule")]
    Interval,
    /// Not a cron schedule.
    #[error("the schedule is not cron")]
    NotCron,
    /// It fires at seconds other than 0 already.
    #[error("the schedule already fires at seconds other than 0")]
    Seconds,
    /// Its minutes would carry into different hours.
    #[error("its minutes would move into different hours")]
    Minutes,
    /// Its hours would carry into different days.
    #[error("its hours would move into different days")]
    Hours,
    /// It would cross midnight under restricted days.
    #[error("it would cross midnight, and the schedule's days cannot move with it")]
    Midnight,
    /// The schedule's text has no five or six fields.
    #[error("`{0}` has no fields to move")]
    NoFields(String),
    /// The moved text did not parse.
    #[error("the moved schedule `{text}` does not read: {error}")]
    Unreadable {
        /// The moved schedule.
        text: String,
        /// The parser's words.
        error: String,
    },
    /// The moved schedule misses a start (a clock change).
    #[error(
        "the moved schedule `{text}` would not fire at its start at {at} (a clock change), so no \
         entry fires at the starts"
    )]
    Misses {
        /// The moved schedule.
        text: String,
        /// The first start it would not fire at.
        at: Timestamp,
    },
}

/// `job` as its entry must fire: itself without jitter, else a copy whose
/// schedule fires at each occurrence's start.
///
/// # Errors
///
/// Why no cron expression fires at the starts, for a refusal.
pub fn entry_job(job: &Job, now: Timestamp) -> Result<Cow<'_, Job>, Unmovable> {
    let offset = job.start_offset();
    if offset.is_zero() {
        return Ok(Cow::Borrowed(job));
    }
    let why = |why: Stuck| Unmovable { offset, why };
    let text = moved(&job.when.value, offset.as_secs()).map_err(why)?;
    let schedule = baton_cron::Schedule::parse(&text).map_err(|e| {
        why(Stuck::Unreadable {
            text: text.clone(),
            error: e.to_string(),
        })
    })?;
    prove(job, &schedule, now).map_err(|at| {
        why(Stuck::Misses {
            text: text.clone(),
            at,
        })
    })?;
    let mut moved = job.clone();
    moved.when.value = When {
        text,
        key: "schedule",
        schedule,
    };
    Ok(Cow::Owned(moved))
}

/// `when`'s cron fields with `secs` added, as a six-field expression. A
/// field that does not move is kept as written (so `*/5` or `*` keep
/// the schedule's kind: [`baton_cron::Kind`]), and an hour field that moves
/// to every hour is written `*`.
fn moved(when: &When, secs: u64) -> Result<String, Stuck> {
    let s = &when.schedule;
    if let baton_cron::Kind::Every(_) = s.kind() {
        return Err(Stuck::Interval);
    }
    let Some(f) = s.fields() else {
        return Err(Stuck::NotCron);
    };
    if f.second().is_some_and(|sec| sec.values().any(|v| v != 0)) {
        return Err(Stuck::Seconds);
    }
    let [minute_text, hour_text, dom, month, dow] = written(s)?;
    let (second, minutes) = (secs % 60, secs / 60);
    let (minute, hour_carry) = if minutes == 0 {
        (minute_text, 0)
    } else {
        carried(f.minute().values(), minutes % 60, 60)
            .map(|(m, c)| (m, c + minutes / 60))
            .ok_or(Stuck::Minutes)?
    };
    let (hour, day_carry) = if hour_carry == 0 {
        (hour_text, 0)
    } else {
        carried(f.hour().values(), hour_carry, 24)
            .map(|(h, c)| {
                if h == ALL_HOURS {
                    ("*".to_owned(), c)
                } else {
                    (h, c)
                }
            })
            .ok_or(Stuck::Hours)?
    };
    let full = |set: &baton_cron::FieldSet, lo: u8, hi: u8| super::translate::is_full(set, lo, hi);
    if day_carry != 0
        && !(full(f.day_of_month(), 1, 31) && full(f.month(), 1, 12) && full(f.day_of_week(), 0, 6))
    {
        return Err(Stuck::Midnight);
    }
    Ok(format!("{second} {minute} {hour} {dom} {month} {dow}"))
}

/// Every hour, as [`carried`] lists them.
const ALL_HOURS: &str = "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23";

/// `values` each moved on by `by` modulo `modulus`, as a list, and the one
/// carry they all share; `None` when they carry differently.
fn carried(values: impl Iterator<Item = u8>, by: u64, modulus: u64) -> Option<(String, u64)> {
    let mut carry = None;
    let mut moved = Vec::new();
    for v in values {
        let sum = u64::from(v) + by;
        if *carry.get_or_insert(sum / modulus) != sum / modulus {
            return None;
        }
        moved.push(sum % modulus);
    }
    moved.sort_unstable();
    let list: Vec<String> = moved.iter().map(u64::to_string).collect();
    Some((list.join(","), carry.unwrap_or(0)))
}

/// The minute, hour, day-of-month, month and day-of-week fields as written
/// (a macro's as it stands for).
fn written(schedule: &baton_cron::Schedule) -> Result<[String; 5], Stuck> {
    let text = schedule.to_string();
    let macro_fields = match text.as_str() {
        "@yearly" | "@annually" => Some("0 0 1 1 *"),
        "@monthly" => Some("0 0 1 * *"),
        "@weekly" => Some("0 0 * * 0"),
        "@daily" | "@midnight" => Some("0 0 * * *"),
        "@hourly" => Some("0 * * * *"),
        _ => None,
    };
    let all: Vec<&str> = macro_fields.unwrap_or(&text).split_whitespace().collect();
    let five: Vec<String> = match all.len() {
        5 => all.iter().map(|f| (*f).to_owned()).collect(),
        6 => all[1..].iter().map(|f| (*f).to_owned()).collect(),
        _ => return Err(Stuck::NoFields(text)),
    };
    five.try_into().map_err(|_| Stuck::NoFields(text))
}

/// Whether `moved` fires, from `now` for a year of `job`'s occurrences,
/// exactly at their starts; else the first start where it does not.
fn prove(job: &Job, moved: &baton_cron::Schedule, now: Timestamp) -> Result<(), Timestamp> {
    let tz = &job.timezone.value.tz;
    let year = now
        .checked_add(SignedDuration::from_hours(366 * 24))
        .unwrap_or(Timestamp::MAX);
    let starts = job
        .when
        .value
        .schedule
        .iter_after(now, tz)
        .map(|t| job.starts_at(t))
        .take_while(|&t| t <= year)
        .take(PROOF_WALK);
    let mut fires = moved.iter_after(job.starts_at(now), tz);
    for start in starts {
        if fires.next() != Some(start) {
            return Err(start);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, parse};

    fn job(zone: &str, when: &str, jitter: &str) -> Job {
        let text = format!(
            "[scheduler]\nstate_dir = \"/tmp/x\"\ntimezone = \"{zone}\"\n\
             [jobs.report]\nrun = \"true\"\n{when}\njitter = \"{jitter}\"\n"
        );
        let c = parse(
            &text,
            std::path::Path::new("/tmp/b.toml"),
            &Overrides::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        (*c.jobs["report"]).clone()
    }

    fn now() -> Timestamp {
        "2026-12-03T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn a_moved_schedule_fires_at_every_start() {
        for (zone, when, jitter) in [
            ("UTC", "schedule = \"*/5 * * * *\"", "5m"),
            ("UTC", "schedule = \"30 2 * * *\"", "1h"),
            ("Europe/Berlin", "schedule = \"0 9 * * 1-5\"", "1h"),
            ("UTC", "schedule = \"@hourly\"", "1h"),
        ] {
            let j = job(zone, when, jitter);
            let moved = entry_job(&j, now()).unwrap_or_else(|e| panic!("{when}: {e}"));
            assert!(matches!(moved, Cow::Owned(_)), "{when}");
            let tz = &j.timezone.value.tz;
            let fires: Vec<_> = moved
                .when
                .value
                .schedule
                .iter_after(now(), tz)
                .take(50)
                .collect();
            let starts: Vec<_> = j
                .when
                .value
                .schedule
                .iter_after(j.due_clock(now()), tz)
                .take(50)
                .map(|t| j.starts_at(t))
                .collect();
            assert_eq!(
                fires[..40],
                starts[..40],
                "{when} moved to {}",
                moved.when.value.text
            );
        }
    }

    #[test]
    fn what_no_calendar_line_can_fire_at_is_refused_with_the_reason() {
        let iv = job("UTC", "every = \"15m\"", "15m");
        assert!(entry_job(&iv, now()).unwrap_err().why == Stuck::Interval);
        let late = job("UTC", "schedule = \"50 23 * * 1\"", "1h");
        if late.start_offset().as_secs() >= 600 {
            assert!(entry_job(&late, now()).unwrap_err().why == Stuck::Midnight);
        }
        let none = job("UTC", "schedule = \"*/5 * * * *\"", "0");
        assert!(matches!(entry_job(&none, now()), Ok(Cow::Borrowed(_))));
    }
}
