//! Shared helpers: zones by name, instants from RFC 3339 text, and the
//! [`Case`] builder for the daylight-saving table.

use baton_cron::Schedule;
use jiff::Timestamp;
use jiff::tz::TimeZone;

pub fn zone(name: &str) -> TimeZone {
    TimeZone::get(name).unwrap_or_else(|e| panic!("time zone {name}: {e}"))
}

/// An instant from RFC 3339 text with an offset, such as
/// `2026-03-08T03:00:00-04:00`.
pub fn at(text: &str) -> Timestamp {
    text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The UTC offset written at the end of RFC 3339 text, in seconds.
fn written_offset(text: &str) -> i32 {
    if text.ends_with('Z') {
        return 0;
    }
    let tail = &text[text.len() - 6..];
    let sign = if tail.starts_with('-') { -1 } else { 1 };
    let hours: i32 = tail[1..3].parse().unwrap();
    let minutes: i32 = tail[4..6].parse().unwrap();
    sign * (hours * 3600 + minutes * 60)
}

/// One row of the daylight-saving table: a schedule in a zone, the instant
/// to start after, and the occurrences that must follow, in order.
pub struct Case {
    zone_name: &'static str,
    zone: TimeZone,
    schedule: Schedule,
    after: Timestamp,
}

pub fn case(zone_name: &'static str, expr: &str, after: &str) -> Case {
    Case {
        zone_name,
        zone: zone(zone_name),
        schedule: expr.parse().unwrap(),
        after: at(after),
    }
}

impl Case {
    /// Asserts that the occurrences strictly after the start are exactly
    /// `expected` (then possibly more), and that `latest_at_or_before`
    /// agrees: each expected instant is its own latest occurrence, one second
    /// before it the previous one is, and nothing lies between the start and
    /// the first expected instant.
    ///
    /// Each expected instant is written with the offset the zone has then;
    /// that offset is checked against the zone too, so a slip in the table
    /// shows up as a slip, not as a bug in the evaluator.
    pub fn fires(self, expected: &[&str]) {
        let Case {
            zone_name,
            zone,
            schedule,
            after,
        } = self;
        let what = format!("{schedule} in {zone_name} after {after}");
        let want: Vec<Timestamp> = expected.iter().map(|s| at(s)).collect();
        for (text, t) in expected.iter().zip(&want) {
            let offset = zone.to_offset(*t).seconds();
            assert_eq!(
                offset,
                written_offset(text),
                "{what}: the table's offset for {text}"
            );
        }
        assert!(
            want.windows(2).all(|w| w[0] < w[1]),
            "{what}: the table is not increasing"
        );

        let shown = |t: Option<Timestamp>| {
            t.map_or("none".to_owned(), |t| {
                t.to_zoned_datetime(zone.clone()).to_string()
            })
        };
        let got: Vec<Timestamp> = schedule.iter_after(after, &zone).take(want.len()).collect();
        assert_eq!(
            got.iter().map(|&t| shown(Some(t))).collect::<Vec<_>>(),
            want.iter().map(|&t| shown(Some(t))).collect::<Vec<_>>(),
            "{what}: next_after"
        );

        let before_first =
            schedule.latest_at_or_before(want[0] - jiff::SignedDuration::from_secs(1), &zone);
        assert!(
            before_first.is_none_or(|t| t <= after),
            "{what}: latest_at_or_before just before {} is {}, after the start",
            shown(Some(want[0])),
            shown(before_first),
        );
        for (i, &t) in want.iter().enumerate() {
            let latest = schedule.latest_at_or_before(t, &zone);
            assert_eq!(
                shown(latest),
                shown(Some(t)),
                "{what}: latest_at_or_before itself"
            );
            if let Some(&next) = want.get(i + 1) {
                let just_before = next - jiff::SignedDuration::from_secs(1);
                let latest = schedule.latest_at_or_before(just_before, &zone);
                assert_eq!(
                    shown(latest),
                    shown(Some(t)),
                    "{what}: latest_at_or_before one second before {}",
                    shown(Some(next)),
                );
            }
        }
    }
}
