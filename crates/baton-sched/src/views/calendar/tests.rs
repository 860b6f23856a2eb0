//! The calendar's instants come from `baton-cron`, whose own tests check
//! them against the zones' rules; these tests check what this module adds:
//! reading what people type, the notes, and the two forms.

use super::*;

/// The zone most tests read their schedules in.
const NY: &str = "America/New_York";

fn zone(name: &str) -> Zone {
    Zone {
        name: name.to_owned(),
        tz: TimeZone::get(name).unwrap(),
    }
}

fn cal(tz: &str, expr: &str, from: &str, count: usize) -> Calendar {
    let schedule = parse_expression(expr).unwrap();
    Calendar::new(expr, schedule, zone(tz), from.parse().unwrap(), count)
}

/// Each occurrence as `local dst`, the local time in RFC 3339.
fn listed(c: &Calendar) -> Vec<String> {
    c.occurrences()
        .iter()
        .map(|o| {
            let dst = o.note.as_ref().map_or("-", |n| n.dst.as_str());
            format!("{} {dst}", rfc3339(&o.local))
        })
        .collect()
}

fn notes(c: &Calendar) -> Vec<String> {
    c.occurrences()
        .iter()
        .filter_map(|o| o.note.as_ref().map(|n| n.text.clone()))
        .collect()
}

#[test]
fn expressions_people_type() {
    let secs = |s: u64| Kind::Every(Duration::from_secs(s));
    for (text, kind) in [
        ("every:15m", secs(900)),
        ("every 15m", secs(900)),
        ("@every 15m", secs(900)),
        ("@every:1h30m", secs(5400)),
        ("EVERY: 90s", secs(90)),
        ("every:900s", secs(900)),
        ("  every:1d  ", secs(86_400)),
        ("30 2 * * *", Kind::Fixed),
        ("0,30 2 * * *", Kind::Fixed),
        ("*/15 * * * *", Kind::Wildcard),
        ("@daily", Kind::Fixed),
        ("0 30 2 * * *", Kind::Fixed),
    ] {
        assert_eq!(parse_expression(text).unwrap().kind(), kind, "{text}");
    }
    assert_eq!(
        parse_expression("every 15m").unwrap().to_string(),
        "every:900s"
    );
    // `everyday` is neither an interval nor a cron expression.
    assert!(matches!(
        parse_expression("everyday"),
        Err(ExpressionError::Schedule(_))
    ));
}

#[test]
fn refusals_name_the_part() {
    for (text, says) in [
        ("61 * * * *", "minute \"61\" is out of range: allowed 0-59"),
        ("0 24 * * *", "hour \"24\" is out of range"),
        ("0 2 * *", "found 4 in \"0 2 * *\""),
        ("", "empty expression"),
        ("@fortnightly", "unknown macro \"@fortnightly\""),
        ("every:15x", "every: \"15x\" is not a duration"),
        ("every", "every: \"\" is not a duration"),
        ("every:0", "is too short"),
        ("every:1.5s", "not a whole number of seconds"),
    ] {
        let err = parse_expression(text).unwrap_err().to_string();
        assert!(err.contains(says), "{text:?}: {err}");
    }
}

// America/New_York: 2026-03-08 02:00 EST jumps to 03:00 EDT (07:00Z);
// 2026-11-01 02:00 EDT goes back to 01:00 EST (06:00Z).

#[test]
fn new_york_fixed_time_in_the_gap_runs_when_the_clocks_jump() {
    let c = cal(NY, "30 2 * * *", "2026-03-07T00:00:00-05:00", 3);
    assert_eq!(
        listed(&c),
        [
            "2026-03-07T02:30:00-05:00 -",
            "2026-03-08T03:00:00-04:00 gap",
            "2026-03-09T02:30:00-04:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "02:30 does not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); \
          it runs when they jump"
        ]
    );
}

#[test]
fn new_york_list_of_fixed_times_in_the_gap_runs_once() {
    let c = cal(NY, "0,30 2 * * *", "2026-03-07T00:00:00-05:00", 5);
    assert_eq!(
        listed(&c),
        [
            "2026-03-07T02:00:00-05:00 -",
            "2026-03-07T02:30:00-05:00 -",
            "2026-03-08T03:00:00-04:00 gap",
            "2026-03-09T02:00:00-04:00 -",
            "2026-03-09T02:30:00-04:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "02:00 and 02:30 do not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); \
             they run once, when the clocks jump"
        ]
    );
}

#[test]
fn new_york_fixed_time_in_the_fold_runs_the_first_time() {
    let c = cal(NY, "30 1 * * *", "2026-10-31T12:00:00-04:00", 2);
    assert_eq!(
        listed(&c),
        [
            "2026-11-01T01:30:00-04:00 first-of-two",
            "2026-11-02T01:30:00-05:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "first of two 01:30s on 2026-11-01 (the clocks go back from 02:00 to 01:00); \
          the second does not run"
        ]
    );
}

#[test]
fn wildcards_are_told_what_the_clocks_skipped_and_repeated() {
    let c = cal(NY, "*/15 * * * *", "2026-03-08T01:30:00-05:00", 3);
    assert_eq!(
        listed(&c),
        [
            "2026-03-08T01:45:00-05:00 -",
            "2026-03-08T03:00:00-04:00 skipped",
            "2026-03-08T03:15:00-04:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "02:00, 02:15, 02:30 and 02:45 do not exist on 2026-03-08 (the clocks jump from \
             02:00 to 03:00); skipped, since this schedule follows elapsed time"
        ]
    );

    let c = cal(NY, "30 * * * *", "2026-11-01T00:45:00-04:00", 3);
    assert_eq!(
        listed(&c),
        [
            "2026-11-01T01:30:00-04:00 first-of-two",
            "2026-11-01T01:30:00-05:00 second-of-two",
            "2026-11-01T02:30:00-05:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "first of two 01:30s on 2026-11-01 (the clocks go back from 02:00 to 01:00); \
             the second runs too",
            "second of two 01:30s on 2026-11-01 (the clocks went back from 02:00 to 01:00)",
        ]
    );

    // Every minute of 02:00-02:59 on March 8th: a year later, with the
    // lost hour named once.
    let c = cal(NY, "* 2 8 3 *", "2026-03-07T00:00:00-05:00", 2);
    assert_eq!(
        listed(&c),
        [
            "2027-03-08T02:00:00-05:00 skipped",
            "2027-03-08T02:01:00-05:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "02:00, 02:01 … 02:59 do not exist on 2026-03-08 (the clocks jump from 02:00 to \
             03:00); skipped, since this schedule follows elapsed time"
        ]
    );
}

#[test]
fn intervals_note_repeated_wall_times_only() {
    let c = cal(NY, "every:1h", "2026-03-08T00:30:00-05:00", 3);
    assert_eq!(
        listed(&c),
        [
            "2026-03-08T01:00:00-05:00 -",
            "2026-03-08T03:00:00-04:00 -",
            "2026-03-08T04:00:00-04:00 -",
        ]
    );
    let c = cal(NY, "every 1h", "2026-11-01T00:30:00-04:00", 3);
    assert_eq!(
        listed(&c),
        [
            "2026-11-01T01:00:00-04:00 first-of-two",
            "2026-11-01T01:00:00-05:00 second-of-two",
            "2026-11-01T02:00:00-05:00 -",
        ]
    );
    assert_eq!(
        notes(&c)[0],
        "first of two 01:00s on 2026-11-01 (the clocks go back from 02:00 to 01:00)"
    );
}

#[test]
fn lord_howe_moves_half_an_hour() {
    // 2026-10-04 02:00 +10:30 jumps to 02:30 +11; 2026-04-05 02:00 +11 goes
    // back to 01:30 +10:30.
    let c = cal(
        "Australia/Lord_Howe",
        "0 2 * * *",
        "2026-10-03T12:00:00+10:30",
        2,
    );
    assert_eq!(
        listed(&c),
        [
            "2026-10-04T02:30:00+11:00 gap",
            "2026-10-05T02:00:00+11:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "02:00 does not exist on 2026-10-04 (the clocks jump from 02:00 to 02:30); \
          it runs when they jump"
        ]
    );
    let c = cal(
        "Australia/Lord_Howe",
        "45 1 * * *",
        "2026-04-04T12:00:00+11:00",
        2,
    );
    assert_eq!(
        listed(&c),
        [
            "2026-04-05T01:45:00+11:00 first-of-two",
            "2026-04-06T01:45:00+10:30 -",
        ]
    );
    assert_eq!(
        notes(&c)[0],
        "first of two 01:45s on 2026-04-05 (the clocks go back from 02:00 to 01:30); \
         the second does not run"
    );
}

#[test]
fn a_midnight_that_does_not_exist() {
    // America/Santiago: 2026-09-06 00:00 -04 jumps to 01:00 -03.
    let c = cal("America/Santiago", "@daily", "2026-09-05T12:00:00-04:00", 2);
    assert_eq!(
        listed(&c),
        [
            "2026-09-06T01:00:00-03:00 gap",
            "2026-09-07T00:00:00-03:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "00:00 does not exist on 2026-09-06 (the clocks jump from 00:00 to 01:00); \
          it runs when they jump"
        ]
    );
}

#[test]
fn a_day_that_never_happened_is_named_with_its_date() {
    // Pacific/Apia went from 2011-12-30 00:00 -10 to 2011-12-31 00:00 +14.
    let c = cal("Pacific/Apia", "0 12 * * *", "2011-12-29T18:00:00-10:00", 1);
    assert_eq!(listed(&c), ["2011-12-31T00:00:00+14:00 gap"]);
    assert_eq!(
        notes(&c),
        [
            "12:00 does not exist on 2011-12-30 (the clocks jump from 00:00 to 2011-12-31 00:00); \
          it runs when they jump"
        ]
    );
}

#[test]
fn a_gap_time_and_the_time_the_clocks_jump_to_are_one_occurrence() {
    let c = cal(NY, "30 2,3 * * *", "2026-03-08T00:00:00-05:00", 2);
    assert_eq!(
        listed(&c),
        [
            "2026-03-08T03:00:00-04:00 gap",
            "2026-03-08T03:30:00-04:00 -",
        ]
    );
    let c = cal(
        "Europe/London",
        "0,30 0-2 * * *",
        "2026-03-29T00:45:00+00:00",
        2,
    );
    assert_eq!(
        listed(&c),
        [
            "2026-03-29T02:00:00+01:00 gap",
            "2026-03-29T02:30:00+01:00 -",
        ]
    );
    assert_eq!(
        notes(&c),
        [
            "01:00 and 01:30 do not exist on 2026-03-29 (the clocks jump from 01:00 to 02:00); \
          they run once, when the clocks jump, together with 02:00"
        ]
    );
}

#[test]
fn six_fields_show_seconds() {
    let c = cal(NY, "15 30 2 * * *", "2026-03-08T00:00:00-05:00", 1);
    assert_eq!(
        notes(&c),
        [
            "02:30:15 does not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); \
          it runs when they jump"
        ]
    );
}

#[test]
fn kolkata_needs_no_notes() {
    let c = cal(
        "Asia/Kolkata",
        "*/15 * * * *",
        "2026-03-08T00:00:00+05:30",
        200,
    );
    assert_eq!(c.occurrences().len(), 200);
    assert!(notes(&c).is_empty());
}

/// Whether `t`, a wall-clock time, is one the schedule's fields allow.
fn allowed(s: &Schedule, t: DateTime) -> bool {
    let at = Offset::UTC.to_timestamp(t).unwrap();
    let before = at.checked_sub(SignedDuration::from_secs(1)).unwrap();
    s.next_after(before, &TimeZone::UTC) == Some(at)
}

#[test]
fn every_note_explains_a_wall_time_the_fields_do_not_show() {
    // Around each of 2026's transitions in zones with whole-hour,
    // half-hour, midnight and no transitions: an occurrence at a wall-clock
    // time its fields do not allow is always noted as run at the jump, and
    // nothing comes out of order or twice.
    let year: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    let day = SignedDuration::from_hours(24);
    let mut gaps = 0;
    for tz in [
        "America/New_York",
        "Europe/London",
        "Europe/Berlin",
        "America/Santiago",
        "Australia/Lord_Howe",
        "Asia/Kolkata",
    ] {
        let mut starts: Vec<Timestamp> = zone(tz)
            .tz
            .following(year)
            .take_while(|t| t.timestamp() < year + SignedDuration::from_hours(366 * 24))
            .map(|t| t.timestamp() - day)
            .collect();
        starts.push(year);
        for expr in [
            "30 2 * * *",
            "0,30 0-2 * * *",
            "30 1 * * *",
            "0 0 * * *",
            "*/15 * * * *",
            "0 * * * *",
        ] {
            for &from in &starts {
                let c = Calendar::new(expr, parse_expression(expr).unwrap(), zone(tz), from, 250);
                let mut previous = from;
                for o in c.occurrences() {
                    assert!(o.at > previous, "{tz} {expr}: {} out of order", o.at);
                    previous = o.at;
                    let shown = allowed(c.schedule(), o.local.datetime());
                    let dst = o.note.as_ref().map(|n| n.dst);
                    let what = format!("{tz} {expr}: {} {dst:?}", rfc3339(&o.local));
                    if !shown {
                        assert_eq!(dst, Some(Dst::Gap), "{what}");
                    }
                    if dst == Some(Dst::Gap) {
                        gaps += 1;
                        assert_eq!(c.schedule().kind(), Kind::Fixed, "{what}");
                        let before = o.at.checked_sub(SignedDuration::from_secs(1)).unwrap();
                        let jump = c.zone.tz.following(before).next().unwrap();
                        assert_eq!(jump.timestamp(), o.at, "{what}: not at a jump");
                    }
                }
            }
        }
    }
    // Nine pairs of a zone and a fixed schedule have a time in a 2026 gap
    // (two each in New York, London, Berlin and Santiago, one in Lord
    // Howe), each seen at least from the day before the gap.
    assert!(gaps >= 9, "only {gaps} gaps seen");
}

#[test]
fn a_schedule_that_never_fires_again_says_so() {
    let c = cal("UTC", "0 0 1 1 *", "9998-06-01T00:00:00Z", 3);
    assert_eq!(listed(&c), ["9999-01-01T00:00:00+00:00 -"]);
    assert!(c.exhausted());
    assert!(
        render(&c).ends_with(
            "No further occurrences: the schedule does not fire again within about 100 years \
             (or before 9999-12-30T22:00:00Z, the last instant baton computes).\n"
        ),
        "{}",
        render(&c)
    );
    assert!(to_json(&c).exhausted);

    let none = cal("UTC", "0 0 1 1 *", "9999-06-01T00:00:00Z", 3);
    assert!(none.occurrences().is_empty() && none.exhausted());
    assert!(render(&none).contains("\nNo occurrences: "));

    let enough = cal("UTC", "0 0 1 1 *", "9998-06-01T00:00:00Z", 1);
    assert!(!enough.exhausted());
}

#[test]
fn the_human_form() {
    let c = cal(NY, "30 2 * * *", "2026-03-07T00:00:00-05:00", 3);
    assert_eq!(
        render(&c),
        "\
Expression: 30 2 * * *
      Kind: fixed wall-clock time (a time the clocks skip runs when they jump; a time they repeat runs once)
      Zone: America/New_York
      From: Sat 2026-03-07 00:00:00 EST -05:00 (2026-03-07T05:00:00Z)

1  Sat 2026-03-07 02:30:00 EST -05:00  2026-03-07T07:30:00Z  in 2h30m
2  Sun 2026-03-08 03:00:00 EDT -04:00  2026-03-08T07:00:00Z
   02:30 does not exist on 2026-03-08 (the clocks jump from 02:00 to 03:00); it runs when they jump
3  Mon 2026-03-09 02:30:00 EDT -04:00  2026-03-09T06:30:00Z
"
    );
}

#[test]
fn the_human_form_of_a_job_and_an_interval() {
    let c = cal(
        "Asia/Kolkata",
        "every 15m",
        "2026-03-08T00:07:30.5+05:30",
        10,
    )
    .for_job("report");
    let text = render(&c);
    assert!(
        text.starts_with(
            "       Job: report
Expression: every 15m
Normalized: every:900s
      Kind: interval of 15m, counted from 1970-01-01T00:00:00Z (the same in every zone)
      Zone: Asia/Kolkata
      From: Sun 2026-03-08 00:07:30 IST +05:30 (2026-03-07T18:37:30Z)

 1  Sun 2026-03-08 00:15:00 IST +05:30  2026-03-07T18:45:00Z  in 7m30s
 2  Sun 2026-03-08 00:30:00 IST +05:30  2026-03-07T19:00:00Z
"
        ),
        "{text}"
    );
    assert!(text.ends_with("10  Sun 2026-03-08 02:30:00 IST +05:30  2026-03-07T21:00:00Z\n"));
}

#[test]
fn the_json_form() {
    let c = cal(NY, "0,30  2 * * *", "2026-03-08T00:00:00-05:00", 2);
    let json = serde_json::to_value(to_json(&c)).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "expression": "0,30  2 * * *",
            "normalized": "0,30 2 * * *",
            "kind": "fixed",
            "zone": "America/New_York",
            "job": null,
            "from": "2026-03-08T00:00:00-05:00",
            "exhausted": false,
            "occurrences": [
                {
                    "local": "2026-03-08T03:00:00-04:00",
                    "utc": "2026-03-08T07:00:00Z",
                    "offset": "-04:00",
                    "abbreviation": "EDT",
                    "dst": "gap",
                    "note": "02:00 and 02:30 do not exist on 2026-03-08 (the clocks jump from \
                             02:00 to 03:00); they run once, when the clocks jump",
                    "starts": "2026-03-08T07:00:00Z",
                },
                {
                    "local": "2026-03-09T02:00:00-04:00",
                    "utc": "2026-03-09T06:00:00Z",
                    "offset": "-04:00",
                    "abbreviation": "EDT",
                    "dst": null,
                    "note": null,
                    "starts": "2026-03-09T06:00:00Z",
                },
            ],
            "jitter_offset_seconds": null,
        })
    );
    let every = to_json(&cal("UTC", "every:15m", "2026-03-08T00:00:00.25Z", 1).for_job("j"));
    assert_eq!(every.kind, "every");
    assert_eq!(every.job.as_deref(), Some("j"));
    assert_eq!(every.from, "2026-03-08T00:00:00.25+00:00");
}

#[test]
fn a_job_with_jitter_lists_what_starts_after_the_instant_with_its_start() {
    // Every 15 minutes, starting 7m after each: from 00:10, the 00:00
    // occurrence (starting 00:07) has started and the 00:15 one (starting
    // 00:22) is the first listed; and the first "in" is to its start.
    let c = cal("UTC", "*/15 * * * *", "2026-03-08T00:10:00Z", 2)
        .for_job("j")
        .jittered(Duration::from_secs(900), Duration::from_secs(420));
    let text = render(&c);
    assert!(
        text.contains("    Jitter: 15m: starts 7m after each occurrence\n"),
        "{text}"
    );
    assert!(
        text.contains(
            "1  Sun 2026-03-08 00:15:00 UTC +00:00  2026-03-08T00:15:00Z  starts 00:22:00  in 12m\n"
        ),
        "{text}"
    );
    let json = to_json(&c);
    assert_eq!(json.jitter_offset_seconds, Some(420));
    assert_eq!(json.occurrences[0].utc, "2026-03-08T00:15:00Z");
    assert_eq!(json.occurrences[0].starts, "2026-03-08T00:22:00Z");
    // From 00:05, before the 00:00 occurrence starts, it is listed first.
    let early = cal("UTC", "*/15 * * * *", "2026-03-08T00:05:00Z", 1)
        .jittered(Duration::from_secs(900), Duration::from_secs(420));
    assert_eq!(to_json(&early).occurrences[0].utc, "2026-03-08T00:00:00Z");
}
