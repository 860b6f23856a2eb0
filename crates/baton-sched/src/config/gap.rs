//! A schedule's shortest gap: the shortest time between two of its
//! occurrences, over a year of them. It is what a job's `jitter` must fit
//! in, so that an occurrence always starts before the next one is
//! scheduled; the reader refuses a longer window, naming the gap.
//!
//! This module owns only the walk over the occurrences. It must never read
//! a clock or a file (the walk starts where its caller says) nor decide
//! what a gap allows: that is the reader's rule.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// How far the schedule's walk goes to find its shortest gap.
const GAP_WALK: usize = 20_000;

/// The shortest time between two consecutive occurrences of `schedule` in
/// `tz`, among the first occurrences after `from` (a year of them, at most
/// 20,000); `None` for a schedule with fewer than two.
pub(super) fn shortest_gap(
    schedule: &baton_cron::Schedule,
    tz: &jiff::tz::TimeZone,
    from: Timestamp,
) -> Option<Duration> {
    let year = from
        .checked_add(SignedDuration::from_hours(366 * 24))
        .ok()?;
    let mut previous: Option<Timestamp> = None;
    let mut shortest: Option<Duration> = None;
    for t in schedule
        .iter_after(from, tz)
        .take(GAP_WALK)
        .take_while(|&t| t <= year)
    {
        if let Some(p) = previous {
            let gap = Duration::try_from(t.duration_since(p)).unwrap_or_default();
            shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
        }
        previous = Some(t);
    }
    shortest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortest_gap_is_found_over_a_year() {
        let tz = jiff::tz::TimeZone::UTC;
        let from: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let every5 = baton_cron::Schedule::parse("*/5 * * * *").unwrap();
        assert_eq!(
            shortest_gap(&every5, &tz, from),
            Some(Duration::from_secs(300))
        );
        let odd = baton_cron::Schedule::parse("0 3,4 * * *").unwrap();
        assert_eq!(
            shortest_gap(&odd, &tz, from),
            Some(Duration::from_secs(3600))
        );
        let once = baton_cron::Schedule::parse("0 0 29 2 *").unwrap();
        assert_eq!(shortest_gap(&once, &tz, from), None);
    }
}
