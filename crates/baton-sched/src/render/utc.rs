//! A schedule read in a zone as cron lines read in UTC, kept only where they
//! fire at baton's instants: the one place that decides whether a UTC line
//! can stand for a zone whose offset changes.
//!
//! Candidates are the schedule's times converted at each offset the zone
//! has in the years ahead (the offset now first). A candidate is compared
//! with baton's own evaluation in the zone, instant by instant, around each
//! offset change of the next [`changes::HORIZON`] (two days either side)
//! and over every stretch between changes where the zone's offset gives
//! other lines; where the offset gives the same lines, they fire as baton
//! does by construction. So `* * * * *` and `*/3 * * * *` in Europe/Berlin
//! are the same lines in UTC all year, `0 9 * 7 *` there is `0 7 * 7 *`
//! (July is always summer time), and `0 9 * * *` has no UTC line: the
//! refusal names the first date a candidate runs at another instant.

use baton_cron::{Fields, Schedule};
use jiff::tz::{Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};

use super::changes::{self, OffsetChange};
use super::translate::{CronFields, Untranslatable, lines_at, shown};
use crate::config::{When, Zone};

/// The first instant where a candidate and baton part.
struct Difference {
    at: Timestamp,
    /// Whether baton fires at `at` (and the lines do not), or the reverse.
    baton_fires: bool,
}

/// `f` (the fields of `when`, read in `zone`) as UTC cron lines that fire
/// at baton's instants after `now`.
///
/// # Errors
///
/// Why none do: the first candidate's reason (the offset now), naming the
/// date it would first run at another instant.
pub(crate) fn lines(
    when: &When,
    f: &Fields,
    zone: &Zone,
    now: Timestamp,
) -> Result<Vec<CronFields>, Untranslatable> {
    let changes: Vec<OffsetChange> = changes::offset_changes(zone, now).collect();
    let mut offsets = vec![zone.tz.to_offset(now)];
    for c in &changes {
        if !offsets.contains(&c.after) {
            offsets.push(c.after);
        }
    }
    let mut first_reason = None;
    for offset in offsets {
        let reason = match candidate(when, f, zone, offset) {
            Err(why) => why,
            Ok(lines) => match first_difference(&lines, when, f, zone, now, &changes) {
                None => return Ok(lines),
                Some(d) => differs(when, zone, offset, &lines, &d),
            },
        };
        first_reason.get_or_insert(reason);
    }
    Err(first_reason.unwrap_or_else(|| Untranslatable::NoUtcLine(shown(when))))
}

/// The lines for a zone at `offset` all year.
fn candidate(
    when: &When,
    f: &Fields,
    zone: &Zone,
    offset: Offset,
) -> Result<Vec<CronFields>, Untranslatable> {
    let secs = offset.seconds();
    if secs % 60 != 0 {
        return Err(Untranslatable::OffsetSeconds {
            zone: zone.name.clone(),
            offset,
        });
    }
    lines_at(when, f, zone, secs / 60)
}

/// The first instant after `now`, over the years [`changes::HORIZON`]
/// spans, where `lines` and baton fire differently; `None` when they never
/// do.
fn first_difference(
    lines: &[CronFields],
    when: &When,
    f: &Fields,
    zone: &Zone,
    now: Timestamp,
    changes: &[OffsetChange],
) -> Option<Difference> {
    let day = SignedDuration::from_hours(24);
    let add = |t: Timestamp, d: SignedDuration| t.checked_add(d).unwrap_or(Timestamp::MAX);
    let sub = |t: Timestamp, d: SignedDuration| t.checked_sub(d).unwrap_or(Timestamp::MIN);
    let mut windows = vec![(now, add(now, day * 14))];
    for c in changes {
        windows.push((sub(c.at, day * 2).max(now), add(c.at, day * 2)));
    }
    // The stretches between changes (the last one a year long) whose
    // offset gives other lines than the candidate.
    let mut start = now;
    let mut offset = zone.tz.to_offset(now);
    for i in 0..=changes.len() {
        let end = match changes.get(i) {
            Some(c) => c.at,
            None if changes.is_empty() => start,
            None => add(start, day * 366),
        };
        if candidate(when, f, zone, offset).ok().as_deref() != Some(lines) {
            windows.push((start, end));
        }
        if let Some(c) = changes.get(i) {
            start = c.at;
            offset = c.after;
        }
    }
    windows.sort_by_key(|w| w.0);
    let parsed: Vec<Schedule> = lines
        .iter()
        .filter_map(|l| Schedule::parse(&l.to_string()).ok())
        .collect();
    let mut covered = now;
    for (from, to) in windows {
        let from = from.max(covered);
        if from >= to {
            continue;
        }
        if let Some(d) = compare(&parsed, when, &zone.tz, from, to) {
            return Some(d);
        }
        covered = to;
    }
    None
}

/// The first instant in `[from, to)` where baton (`when` in `tz`) and the
/// UTC `lines` fire differently.
fn compare(
    lines: &[Schedule],
    when: &When,
    tz: &TimeZone,
    from: Timestamp,
    to: Timestamp,
) -> Option<Difference> {
    let before = from
        .checked_sub(SignedDuration::from_secs(1))
        .unwrap_or(from);
    let mut baton = when
        .schedule
        .iter_after(before, tz)
        .take_while(|t| *t < to)
        .peekable();
    let utc = TimeZone::UTC;
    let mut theirs: Vec<_> = lines
        .iter()
        .map(|s| {
            s.iter_after(before, &utc)
                .take_while(|t| *t < to)
                .peekable()
        })
        .collect();
    loop {
        let line_next = theirs.iter_mut().filter_map(|i| i.peek().copied()).min();
        let baton_next = baton.peek().copied();
        match (baton_next, line_next) {
            (None, None) => return None,
            (Some(b), Some(l)) if b == l => {
                baton.next();
                for i in &mut theirs {
                    if i.peek() == Some(&l) {
                        i.next();
                    }
                }
            }
            (Some(b), Some(l)) => {
                return Some(Difference {
                    at: b.min(l),
                    baton_fires: b < l,
                });
            }
            (Some(b), None) => {
                return Some(Difference {
                    at: b,
                    baton_fires: true,
                });
            }
            (None, Some(l)) => {
                return Some(Difference {
                    at: l,
                    baton_fires: false,
                });
            }
        }
    }
}

/// Why the candidate at `offset` is refused, naming the date.
fn differs(
    when: &When,
    zone: &Zone,
    offset: Offset,
    lines: &[CronFields],
    d: &Difference,
) -> Untranslatable {
    let local = zone.tz.to_datetime(d.at);
    let utc = TimeZone::UTC.to_datetime(d.at);
    let shown_lines = lines
        .iter()
        .map(|l| format!("`{l}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Untranslatable::Differs {
        zone: zone.name.clone(),
        schedule: shown(when),
        lines: shown_lines,
        offset,
        date: local.date(),
        baton_fires: d.baton_fires,
        local,
        utc,
    }
}
