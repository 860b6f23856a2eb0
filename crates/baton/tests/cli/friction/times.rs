//! Times written one way per surface: RFC 3339 in `--json` (offsets in
//! hours and minutes, within ±23:59), one form for people; and the end of
//! the range baton computes, the year 9999, said as it is.

use serde_json::Value;

use crate::support::{Env, code, stderr, stdout};

fn calendar(args: &[&str]) -> std::process::Output {
    let mut all = vec!["calendar"];
    all.extend_from_slice(args);
    Env::new().run(&all)
}

fn calendar_json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.push("--json");
    let o = calendar(&all);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Whether `t` is RFC 3339's date-time: a full date, a time to the
/// second (fractions allowed), and `Z` or an offset of hours 00-23 and
/// minutes 00-59 (no seconds).
pub(crate) fn is_rfc3339(t: &str) -> bool {
    let b = t.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    if b.len() < 20
        || !digits(0..4)
        || b[4] != b'-'
        || !digits(5..7)
        || b[7] != b'-'
        || !digits(8..10)
        || !matches!(b[10], b'T' | b't')
        || !digits(11..13)
        || b[13] != b':'
        || !digits(14..16)
        || b[16] != b':'
        || !digits(17..19)
    {
        return false;
    }
    let mut rest = &t[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    if rest == "Z" || rest == "z" {
        return true;
    }
    let o = rest.as_bytes();
    o.len() == 6
        && matches!(o[0], b'+' | b'-')
        && o[3] == b':'
        && rest[1..3].parse::<u32>().is_ok_and(|h| h <= 23)
        && rest[4..6].parse::<u32>().is_ok_and(|m| m <= 59)
}

fn instant(t: &str) -> i64 {
    t.parse::<jiff::Timestamp>().unwrap().as_second()
}

#[test]
fn calendar_json_before_1912_is_rfc_3339_and_the_same_instant() {
    // Amsterdam kept local mean time, +00:19:32, until 1937.
    let v = calendar_json(&[
        "0 12 * * *",
        "--tz",
        "Europe/Amsterdam",
        "--from",
        "1900-01-01T00:00:00Z",
        "--count",
        "2",
    ]);
    let from = v["from"].as_str().unwrap();
    assert!(is_rfc3339(from), "from: {from}");
    assert_eq!(instant(from), instant("1900-01-01T00:00:00Z"));
    for o in v["occurrences"].as_array().unwrap() {
        let local = o["local"].as_str().unwrap();
        let utc = o["utc"].as_str().unwrap();
        assert!(is_rfc3339(local), "local: {local}");
        assert!(is_rfc3339(utc), "utc: {utc}");
        assert_eq!(instant(local), instant(utc), "{o}");
        assert_eq!(o["offset"], "+00:19:32", "the exact offset is kept: {o}");
    }
    assert_eq!(v["occurrences"][0]["local"], "1900-01-01T12:00:28+00:20");
}

#[test]
fn an_offset_beyond_23_59_or_with_seconds_is_refused() {
    for from in [
        "2026-01-01T00:00:00+25:00",
        "2026-01-01T00:00:00-24:00",
        "2026-01-01T00:00:00+00:19:32",
    ] {
        let o = calendar(&["0 12 * * *", "--tz", "UTC", "--from", from]);
        assert_eq!(code(&o), 2, "{from}: {}", stdout(&o));
        assert!(stderr(&o).contains("--from"), "{from}: {}", stderr(&o));
        assert!(stdout(&o).is_empty(), "{from}: {}", stdout(&o));
    }
    let o = calendar(&["0 12 * * *", "--from", "2026-01-01T00:00:00+23:59"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

#[test]
fn the_last_day_of_the_year_9999_neither_panics_nor_misprints() {
    // The last day baton can compute ends at 9999-12-30T22:00:00Z: a
    // later --from is refused, naming the limit.
    let o = calendar(&[
        "0 12 * * *",
        "--tz",
        "UTC",
        "--from",
        "9999-12-31T00:00:00Z",
    ]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("9999-12-30T22:00:00Z"),
        "{}",
        stderr(&o)
    );
    // Up to the limit, every schedule lists what there is, and the end
    // is said as the limit, not as "the year 10000".
    for (tz, expr) in [
        ("UTC", "0 12 * * *"),
        ("Pacific/Kiritimati", "0 12 * * *"),
        ("Pacific/Pago_Pago", "0 12 * * *"),
        ("UTC", "* * * * *"),
        ("UTC", "every 15m"),
        ("America/New_York", "59 23 31 12 *"),
    ] {
        let args = [
            expr,
            "--tz",
            tz,
            "--from",
            "9999-12-30T20:00:00Z",
            "--count",
            "1000",
        ];
        let o = calendar(&args);
        assert_eq!(code(&o), 0, "{tz} {expr}: {}", stderr(&o));
        let text = stdout(&o);
        assert!(
            text.contains("No further occurrences") || text.contains("No occurrences"),
            "{tz} {expr}: {text}"
        );
        assert!(
            text.contains("before 9999-12-30T22:00:00Z") && !text.contains("10000"),
            "{tz} {expr}: {text}"
        );
        let v = calendar_json(&args);
        let occ = v["occurrences"].as_array().unwrap();
        for o in occ {
            let (local, utc) = (o["local"].as_str().unwrap(), o["utc"].as_str().unwrap());
            assert!(is_rfc3339(local) && is_rfc3339(utc), "{o}");
            assert_eq!(instant(local), instant(utc), "{o}");
            assert!(utc <= "9999-12-30T22:00:00Z", "{o}");
        }
    }
    // Kiritimati is 14 hours ahead: its 9999-12-31 noon is listed.
    let v = calendar_json(&[
        "0 12 * * *",
        "--tz",
        "Pacific/Kiritimati",
        "--from",
        "9999-12-30T00:00:00Z",
    ]);
    assert_eq!(v["occurrences"][0]["local"], "9999-12-31T12:00:00+14:00");
    assert_eq!(v["exhausted"], true);
}
