//! The ends of jiff's range: no panic, and `None` where nothing can be said.

use std::time::Duration;

use baton_cron::Schedule;
use jiff::Timestamp;

use crate::support::zone;

#[test]
fn nothing_after_the_last_instant_or_before_the_first() {
    let schedules = [
        Schedule::parse("*/15 * * * *").unwrap(),
        Schedule::parse("30 2 * * *").unwrap(),
        Schedule::parse("0 0 29 2 *").unwrap(),
        Schedule::every(Duration::from_secs(900)).unwrap(),
    ];
    for tz in [
        zone("UTC"),
        zone("America/New_York"),
        zone("Australia/Lord_Howe"),
    ] {
        for s in &schedules {
            assert_eq!(s.next_after(Timestamp::MAX, &tz), None, "{s}");
            assert_eq!(s.latest_at_or_before(Timestamp::MIN, &tz), None, "{s}");
            // Close to the ends, answers are still in range or none.
            let near_end = Timestamp::MAX - jiff::SignedDuration::from_hours(24 * 40);
            if let Some(t) = s.next_after(near_end, &tz) {
                assert!(t > near_end, "{s}");
            }
            let near_start = Timestamp::MIN + jiff::SignedDuration::from_hours(24 * 40);
            if let Some(t) = s.latest_at_or_before(near_start, &tz) {
                assert!(t <= near_start, "{s}");
            }
        }
    }
}
