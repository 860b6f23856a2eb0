//! Hand-checked daylight-saving cases.
//!
//! Every expected instant below was worked out from the zone's rules, not
//! from this crate: the transitions were read with `zdump -v ZONE | grep 2026`
//! and are quoted above each group, and each instant is written with the
//! offset the zone has at that moment (the [`Case`](crate::support::Case)
//! builder checks the offsets against the zone, then the instants against
//! the schedule, in both directions).

use crate::support::case;

// America/New_York, EST -05:00 / EDT -04:00.
//   Sun Mar  8 06:59:59 2026 UT = 01:59:59 EST; 07:00:00 UT = 03:00:00 EDT
//   Sun Nov  1 05:59:59 2026 UT = 01:59:59 EDT; 06:00:00 UT = 01:00:00 EST
// So 2026-03-08 02:00-02:59 never shows, and 2026-11-01 01:00-01:59 shows
// twice: from 05:00Z as EDT, from 06:00Z as EST.

#[test]
fn new_york_fixed_time_in_the_gap_fires_when_the_clocks_jump() {
    case(
        "America/New_York",
        "30 2 * * *",
        "2026-03-07T00:00:00-05:00",
    )
    .fires(&[
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]);
}

#[test]
fn new_york_fixed_time_after_the_fold_fires_once() {
    case(
        "America/New_York",
        "30 2 * * *",
        "2026-10-31T00:00:00-04:00",
    )
    .fires(&[
        "2026-10-31T02:30:00-04:00",
        "2026-11-01T02:30:00-05:00",
        "2026-11-02T02:30:00-05:00",
    ]);
}

#[test]
fn new_york_fixed_time_in_the_fold_fires_the_first_time() {
    case(
        "America/New_York",
        "30 1 * * *",
        "2026-10-31T00:00:00-04:00",
    )
    .fires(&[
        "2026-10-31T01:30:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:30:00-05:00",
    ]);
    // Asked from inside the second pass, before and after 01:30 EST: the
    // repeated 01:30 is not an occurrence.
    for after in ["2026-11-01T01:15:00-05:00", "2026-11-01T01:45:00-05:00"] {
        case("America/New_York", "30 1 * * *", after).fires(&["2026-11-02T01:30:00-05:00"]);
    }
    // 01:30 exists once on the gap day.
    case(
        "America/New_York",
        "30 1 * * *",
        "2026-03-07T00:00:00-05:00",
    )
    .fires(&[
        "2026-03-07T01:30:00-05:00",
        "2026-03-08T01:30:00-05:00",
        "2026-03-09T01:30:00-04:00",
    ]);
}

#[test]
fn new_york_list_of_fixed_times_in_the_gap_fires_once_and_keeps_the_day() {
    case(
        "America/New_York",
        "0,30 2 * * *",
        "2026-03-07T00:00:00-05:00",
    )
    .fires(&[
        "2026-03-07T02:00:00-05:00",
        "2026-03-07T02:30:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-09T02:00:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]);
    case(
        "America/New_York",
        "0,30 1 * * *",
        "2026-11-01T00:00:00-04:00",
    )
    .fires(&[
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-02T01:00:00-05:00",
    ]);
    // A gap time and the time the clocks jump to are the same instant: one
    // occurrence.
    case(
        "America/New_York",
        "30 2,3 * * *",
        "2026-03-08T00:00:00-05:00",
    )
    .fires(&[
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T03:30:00-04:00",
        "2026-03-09T02:30:00-04:00",
    ]);
    case(
        "America/New_York",
        "0 2,3 * * *",
        "2026-03-08T00:00:00-05:00",
    )
    .fires(&["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"]);
}

#[test]
fn new_york_every_quarter_hour_through_the_gap_and_the_fold() {
    case(
        "America/New_York",
        "*/15 * * * *",
        "2026-03-08T01:30:00-05:00",
    )
    .fires(&[
        "2026-03-08T01:45:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T03:15:00-04:00",
    ]);
    case(
        "America/New_York",
        "*/15 * * * *",
        "2026-11-01T00:45:00-04:00",
    )
    .fires(&[
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:15:00-04:00",
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:45:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:15:00-05:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-01T01:45:00-05:00",
        "2026-11-01T02:00:00-05:00",
    ]);
}

#[test]
fn new_york_hourly_through_the_gap_and_the_fold() {
    case("America/New_York", "0 * * * *", "2026-03-08T00:30:00-05:00").fires(&[
        "2026-03-08T01:00:00-05:00",
        "2026-03-08T03:00:00-04:00",
        "2026-03-08T04:00:00-04:00",
    ]);
    case("America/New_York", "0 * * * *", "2026-11-01T00:30:00-04:00").fires(&[
        "2026-11-01T01:00:00-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T02:00:00-05:00",
        "2026-11-01T03:00:00-05:00",
    ]);
    case(
        "America/New_York",
        "30 * * * *",
        "2026-11-01T01:00:00-04:00",
    )
    .fires(&[
        "2026-11-01T01:30:00-04:00",
        "2026-11-01T01:30:00-05:00",
        "2026-11-01T02:30:00-05:00",
    ]);
}

#[test]
fn new_york_wildcards_skip_the_gap() {
    // Every minute of hour 2: the gap day has no hour 2 at all.
    case("America/New_York", "* 2 * * *", "2026-03-07T02:58:00-05:00").fires(&[
        "2026-03-07T02:59:00-05:00",
        "2026-03-09T02:00:00-04:00",
        "2026-03-09T02:01:00-04:00",
    ]);
    // Every other hour: 02:00 does not exist, 04:00 is next.
    case(
        "America/New_York",
        "0 */2 * * *",
        "2026-03-08T00:30:00-05:00",
    )
    .fires(&["2026-03-08T04:00:00-04:00", "2026-03-08T06:00:00-04:00"]);
}

#[test]
fn new_york_seconds_through_the_fold() {
    case(
        "America/New_York",
        "*/20 * * * * *",
        "2026-11-01T01:59:30-04:00",
    )
    .fires(&[
        "2026-11-01T01:59:40-04:00",
        "2026-11-01T01:00:00-05:00",
        "2026-11-01T01:00:20-05:00",
        "2026-11-01T01:00:40-05:00",
    ]);
    case(
        "America/New_York",
        "0 30 2 * * *",
        "2026-03-08T00:00:00-05:00",
    )
    .fires(&["2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"]);
}

// Europe/London, GMT +00:00 / BST +01:00.
//   Sun Mar 29 00:59:59 2026 UT = 00:59:59 GMT; 01:00:00 UT = 02:00:00 BST
//   Sun Oct 25 00:59:59 2026 UT = 01:59:59 BST; 01:00:00 UT = 01:00:00 GMT

#[test]
fn london_midnight_across_the_gap() {
    case("Europe/London", "0 0 * * *", "2026-03-28T00:00:00+00:00").fires(&[
        "2026-03-29T00:00:00+00:00",
        "2026-03-30T00:00:00+01:00",
        "2026-03-31T00:00:00+01:00",
    ]);
    case("Europe/London", "0 0 * * *", "2026-10-24T12:00:00+01:00")
        .fires(&["2026-10-25T00:00:00+01:00", "2026-10-26T00:00:00+00:00"]);
}

#[test]
fn london_half_past_one_in_the_gap_and_the_fold() {
    case("Europe/London", "30 1 * * *", "2026-03-28T00:00:00+00:00").fires(&[
        "2026-03-28T01:30:00+00:00",
        "2026-03-29T02:00:00+01:00",
        "2026-03-30T01:30:00+01:00",
    ]);
    case("Europe/London", "30 1 * * *", "2026-10-24T12:00:00+01:00")
        .fires(&["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"]);
}

// Europe/Berlin, CET +01:00 / CEST +02:00.
//   Sun Mar 29 00:59:59 2026 UT = 01:59:59 CET;  01:00:00 UT = 03:00:00 CEST
//   Sun Oct 25 00:59:59 2026 UT = 02:59:59 CEST; 01:00:00 UT = 02:00:00 CET

#[test]
fn berlin_weekly_on_the_gap_sunday() {
    case("Europe/Berlin", "30 2 * * 0", "2026-03-21T00:00:00+01:00").fires(&[
        "2026-03-22T02:30:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-04-05T02:30:00+02:00",
    ]);
    case("Europe/Berlin", "30 2 * * SUN", "2026-10-24T00:00:00+02:00")
        .fires(&["2026-10-25T02:30:00+02:00", "2026-11-01T02:30:00+01:00"]);
}

// America/Santiago, -04:00 / -03:00 (summer).
//   Sun Apr  5 02:59:59 2026 UT = Sat Apr  4 23:59:59 -03; 03:00:00 UT = Sat Apr  4 23:00:00 -04
//   Sun Sep  6 03:59:59 2026 UT = Sat Sep  5 23:59:59 -04; 04:00:00 UT = Sun Sep  6 01:00:00 -03
// So midnight 2026-09-06 never shows, and 2026-04-04 23:00-23:59 shows twice.

#[test]
fn santiago_midnight_that_does_not_exist() {
    case("America/Santiago", "0 0 * * *", "2026-09-04T12:00:00-04:00").fires(&[
        "2026-09-05T00:00:00-04:00",
        "2026-09-06T01:00:00-03:00",
        "2026-09-07T00:00:00-03:00",
    ]);
    case("America/Santiago", "@daily", "2026-09-05T12:00:00-04:00")
        .fires(&["2026-09-06T01:00:00-03:00", "2026-09-07T00:00:00-03:00"]);
    case("America/Santiago", "0 * * * *", "2026-09-05T22:30:00-04:00").fires(&[
        "2026-09-05T23:00:00-04:00",
        "2026-09-06T01:00:00-03:00",
        "2026-09-06T02:00:00-03:00",
    ]);
}

#[test]
fn santiago_fold_before_midnight() {
    case("America/Santiago", "0 0 * * *", "2026-04-03T12:00:00-03:00").fires(&[
        "2026-04-04T00:00:00-03:00",
        "2026-04-05T00:00:00-04:00",
        "2026-04-06T00:00:00-04:00",
    ]);
    case(
        "America/Santiago",
        "0 23 * * *",
        "2026-04-03T12:00:00-03:00",
    )
    .fires(&[
        "2026-04-03T23:00:00-03:00",
        "2026-04-04T23:00:00-03:00",
        "2026-04-05T23:00:00-04:00",
    ]);
    case("America/Santiago", "0 * * * *", "2026-04-04T21:30:00-03:00").fires(&[
        "2026-04-04T22:00:00-03:00",
        "2026-04-04T23:00:00-03:00",
        "2026-04-04T23:00:00-04:00",
        "2026-04-05T00:00:00-04:00",
    ]);
}

// Australia/Lord_Howe, +10:30 / +11:00 (summer): half-hour shifts.
//   Sat Apr  4 14:59:59 2026 UT = Sun Apr  5 01:59:59 +11;   15:00:00 UT = 01:30:00 +1030
//   Sat Oct  3 15:29:59 2026 UT = Sun Oct  4 01:59:59 +1030; 15:30:00 UT = 02:30:00 +11
// So 2026-04-05 01:30-01:59 shows twice, and 2026-10-04 02:00-02:29 never.

#[test]
fn lord_howe_half_hour_fold() {
    case(
        "Australia/Lord_Howe",
        "30 1 * * *",
        "2026-04-04T00:00:00+11:00",
    )
    .fires(&[
        "2026-04-04T01:30:00+11:00",
        "2026-04-05T01:30:00+11:00",
        "2026-04-06T01:30:00+10:30",
    ]);
    case(
        "Australia/Lord_Howe",
        "*/15 * * * *",
        "2026-04-05T01:10:00+11:00",
    )
    .fires(&[
        "2026-04-05T01:15:00+11:00",
        "2026-04-05T01:30:00+11:00",
        "2026-04-05T01:45:00+11:00",
        "2026-04-05T01:30:00+10:30",
        "2026-04-05T01:45:00+10:30",
        "2026-04-05T02:00:00+10:30",
    ]);
    case(
        "Australia/Lord_Howe",
        "0 2 * * *",
        "2026-04-04T12:00:00+11:00",
    )
    .fires(&["2026-04-05T02:00:00+10:30", "2026-04-06T02:00:00+10:30"]);
}

#[test]
fn lord_howe_half_hour_gap() {
    case(
        "Australia/Lord_Howe",
        "0 2 * * *",
        "2026-10-03T00:00:00+10:30",
    )
    .fires(&[
        "2026-10-03T02:00:00+10:30",
        "2026-10-04T02:30:00+11:00",
        "2026-10-05T02:00:00+11:00",
    ]);
    case(
        "Australia/Lord_Howe",
        "0,15,30 2 * * *",
        "2026-10-04T00:00:00+10:30",
    )
    .fires(&[
        "2026-10-04T02:30:00+11:00",
        "2026-10-05T02:00:00+11:00",
        "2026-10-05T02:15:00+11:00",
    ]);
    case(
        "Australia/Lord_Howe",
        "*/15 * * * *",
        "2026-10-04T01:40:00+10:30",
    )
    .fires(&[
        "2026-10-04T01:45:00+10:30",
        "2026-10-04T02:30:00+11:00",
        "2026-10-04T02:45:00+11:00",
    ]);
}

// Asia/Kolkata, +05:30 all year: no transitions.

#[test]
fn kolkata_has_no_daylight_saving() {
    case("Asia/Kolkata", "0 9 * * *", "2026-03-08T00:00:00+05:30")
        .fires(&["2026-03-08T09:00:00+05:30", "2026-03-09T09:00:00+05:30"]);
    case("Asia/Kolkata", "*/15 * * * *", "2026-11-01T00:07:00+05:30").fires(&[
        "2026-11-01T00:15:00+05:30",
        "2026-11-01T00:30:00+05:30",
        "2026-11-01T00:45:00+05:30",
        "2026-11-01T01:00:00+05:30",
    ]);
}

// UTC: the day fields, with no zone rules in the way. February 2026 has
// Fridays on the 6th, 13th, 20th and 27th; in 2026 the first Friday that
// falls on a 1st, 11th, 21st or 31st is May 1st, the next July 31st.

#[test]
fn days_match_either_field_unless_one_starts_with_star() {
    case("UTC", "0 0 10 * FRI", "2026-02-01T00:00:00+00:00").fires(&[
        "2026-02-06T00:00:00+00:00",
        "2026-02-10T00:00:00+00:00",
        "2026-02-13T00:00:00+00:00",
        "2026-02-20T00:00:00+00:00",
        "2026-02-27T00:00:00+00:00",
        "2026-03-06T00:00:00+00:00",
        "2026-03-10T00:00:00+00:00",
    ]);
    case("UTC", "0 0 */10 * FRI", "2026-01-01T00:00:00+00:00")
        .fires(&["2026-05-01T00:00:00+00:00", "2026-07-31T00:00:00+00:00"]);
    case("UTC", "0 0 29 2 *", "2026-01-01T00:00:00+00:00")
        .fires(&["2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00"]);
}

// Pacific/Apia skipped a whole day when it moved across the date line:
//   Fri Dec 30 09:59:59 2011 UT = Thu Dec 29 23:59:59 2011 -10
//   Fri Dec 30 10:00:00 2011 UT = Sat Dec 31 00:00:00 2011 +14
// Friday 2011-12-30 never happened there.

#[test]
fn apia_a_day_that_never_happened() {
    case("Pacific/Apia", "0 12 * * *", "2011-12-29T00:00:00-10:00").fires(&[
        "2011-12-29T12:00:00-10:00",
        "2011-12-31T00:00:00+14:00",
        "2011-12-31T12:00:00+14:00",
    ]);
    case("Pacific/Apia", "0 12 * * FRI", "2011-12-29T00:00:00-10:00")
        .fires(&["2011-12-31T00:00:00+14:00", "2012-01-06T12:00:00+14:00"]);
    case("Pacific/Apia", "0 */12 * * *", "2011-12-29T00:00:00-10:00").fires(&[
        "2011-12-29T12:00:00-10:00",
        "2011-12-31T00:00:00+14:00",
        "2011-12-31T12:00:00+14:00",
    ]);
}

/// Asked for the next occurrence from the last second before the gap (or
/// from the transition itself), a fixed time the gap swallowed still fires
/// at the transition: the walk starts on the gap, it does not cross it.
#[test]
fn new_york_fixed_time_in_the_gap_from_the_second_before_the_jump() {
    use jiff::Timestamp;
    let tz = jiff::tz::TimeZone::get("America/New_York").unwrap();
    let s = baton_cron::Schedule::parse("30 2 * * *").unwrap();
    for from in ["2026-03-08T06:59:59Z", "2026-03-08T06:30:00Z"] {
        let at: Timestamp = from.parse().unwrap();
        assert_eq!(
            s.next_after(at, &tz).unwrap().to_string(),
            "2026-03-08T07:00:00Z",
            "from {from}"
        );
    }
    let at: Timestamp = "2026-03-08T07:00:00Z".parse().unwrap();
    assert_eq!(
        s.next_after(at, &tz).unwrap().to_string(),
        "2026-03-09T06:30:00Z"
    );
    // Lord Howe's half-hour gap (02:00 -> 02:30 on 2026-10-04, +10:30 to +11).
    let lh = jiff::tz::TimeZone::get("Australia/Lord_Howe").unwrap();
    let s = baton_cron::Schedule::parse("15 2 * * *").unwrap();
    let at: Timestamp = "2026-10-03T15:29:59Z".parse().unwrap();
    assert_eq!(
        s.next_after(at, &lh).unwrap().to_string(),
        "2026-10-03T15:30:00Z"
    );
}
