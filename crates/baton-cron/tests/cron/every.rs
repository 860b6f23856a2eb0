//! Fixed intervals: multiples of the period since the Unix epoch, the same in
//! every zone.

use std::time::Duration;

use baton_cron::{Kind, Schedule};
use jiff::{SignedDuration, Timestamp};

use crate::support::{at, case, zone};

fn every(secs: u64) -> Schedule {
    Schedule::every(Duration::from_secs(secs)).unwrap()
}

fn second(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

#[test]
fn aligned_to_the_epoch() {
    let utc = zone("UTC");
    let s = every(7);
    assert_eq!(s.next_after(second(0), &utc), Some(second(7)));
    assert_eq!(s.next_after(second(10), &utc), Some(second(14)));
    assert_eq!(s.latest_at_or_before(second(13), &utc), Some(second(7)));
    // Before the epoch, multiples continue downwards.
    assert_eq!(s.latest_at_or_before(second(-1), &utc), Some(second(-7)));
    assert_eq!(s.next_after(second(-7), &utc), Some(second(0)));
    let half = Timestamp::new(0, -500_000_000).unwrap(); // 0.5 s before the epoch
    assert_eq!(s.next_after(half, &utc), Some(second(0)));
    assert_eq!(s.latest_at_or_before(half, &utc), Some(second(-7)));
    // A quarter of an hour in 2026: on the quarter, whatever the zone.
    let q = every(900);
    let t = at("2026-05-05T10:07:31Z");
    assert_eq!(q.next_after(t, &utc), Some(at("2026-05-05T10:15:00Z")));
    assert_eq!(
        q.latest_at_or_before(t, &utc),
        Some(at("2026-05-05T10:00:00Z"))
    );
}

#[test]
fn next_is_strictly_after_and_latest_includes_the_instant() {
    let utc = zone("UTC");
    let s = every(900);
    let on = at("2026-01-01T00:15:00Z");
    assert_eq!(s.next_after(on, &utc), Some(at("2026-01-01T00:30:00Z")));
    assert_eq!(s.latest_at_or_before(on, &utc), Some(on));
    let just_before = on - SignedDuration::from_nanos(1);
    assert_eq!(s.next_after(just_before, &utc), Some(on));
    assert_eq!(
        s.latest_at_or_before(just_before, &utc),
        Some(at("2026-01-01T00:00:00Z"))
    );
    let just_after = on + SignedDuration::from_nanos(1);
    assert_eq!(s.latest_at_or_before(just_after, &utc), Some(on));
    assert_eq!(
        s.next_after(just_after, &utc),
        Some(at("2026-01-01T00:30:00Z"))
    );
}

#[test]
fn the_same_instants_in_every_zone() {
    let s = every(5400); // 90 minutes
    let t = at("2026-11-01T04:00:00Z");
    let zones = [
        "UTC",
        "America/New_York",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
        "Pacific/Chatham",
    ];
    let runs: Vec<Vec<Timestamp>> = zones
        .iter()
        .map(|z| s.iter_after(t, &zone(z)).take(10).collect())
        .collect();
    for (z, run) in zones.iter().zip(&runs) {
        assert_eq!(run, &runs[0], "{z}");
        assert!(run.iter().all(|t| t.as_second() % 5400 == 0), "{z}");
    }
}

#[test]
fn an_hourly_interval_counts_elapsed_hours_through_the_fold() {
    case(
        "America/New_York",
        "every:3600s",
        "2026-11-01T00:30:00-04:00",
    )
    .fires(&[
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]);
    case(
        "America/New_York",
        "every:3600s",
        "2026-03-08T00:30:00-05:00",
    )
    .fires(&[
        "2026-03-08T01:00:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T04:00:00-04:00",
    ]);
}

#[test]
fn describes_itself() {
    let s = every(900);
    assert_eq!(s.kind(), Kind::Every(Duration::from_secs(900)));
    assert_eq!(s.to_string(), "every:900s");
    assert_eq!("every:900s".parse::<Schedule>().unwrap(), s);
    assert!(s.fields().is_none());
    assert!(!s.has_seconds());
    assert!(every(90).has_seconds());
    assert!(every(1).has_seconds());
    assert!(!every(86_400).has_seconds());
}

#[test]
fn the_longest_period_is_366_days() {
    let utc = zone("UTC");
    let s = every(366 * 86_400);
    let t = at("2026-01-01T00:00:00Z");
    let next = s.next_after(t, &utc).unwrap();
    let latest = s.latest_at_or_before(t, &utc).unwrap();
    assert_eq!(next.as_second() - latest.as_second(), 366 * 86_400);
    assert!(latest <= t && t < next);
}
