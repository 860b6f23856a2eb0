//! The cron parser never panics, and every schedule it accepts is
//! consistent wherever it is asked, in every zone of the system's database
//! and at any fixed offset: `next_after(t)` is after `t`,
//! `latest_at_or_before(t)` is not, each answer is an occurrence (its own
//! latest, at a wall-clock time the fields allow, or, for a fixed schedule,
//! at the end of a gap), nothing fires between the two, and the schedule
//! reads back from its display.
//!
//! An input is the expression (as `schedule =` or `every:<N>s` would give
//! it), then a line break, then bytes that choose the zones and instants.
#![no_main]

use std::sync::OnceLock;

use baton_cron::{Kind, Schedule};
use jiff::tz::{Offset, TimeZone};
use jiff::{SignedDuration, Timestamp};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;

/// Less than the search's horizon (100 years of 366 days): two occurrences
/// this far apart may each be found from the other, or not.
const NEAR: i64 = 100 * 365 * 86_400;

/// Zones whose rules are unusual come first: an input that runs out of
/// bytes asks them.
const FIRST: [&str; 12] = [
    "America/New_York",
    "Australia/Lord_Howe",
    "Europe/Dublin",
    "Africa/Casablanca",
    "Antarctica/Troll",
    "Pacific/Apia",
    "Pacific/Chatham",
    "America/Santiago",
    "Asia/Tehran",
    "America/St_Johns",
    "Pacific/Kiritimati",
    "UTC",
];

/// The zones of the system's database (which the configuration takes by
/// name), the unusual ones first.
fn zone_names() -> &'static [String] {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut rest: Vec<String> = jiff::tz::db()
            .available()
            .map(|n| n.to_string())
            .filter(|n| !FIRST.contains(&n.as_str()))
            .collect();
        rest.sort();
        FIRST.iter().map(|n| (*n).to_owned()).chain(rest).collect()
    })
}

fn zone(u: &mut Unstructured<'_>) -> Result<(String, TimeZone)> {
    let names = zone_names();
    if u.int_in_range(0..=7u8)? == 7 {
        let secs = u.int_in_range(-93_599..=93_599)?;
        let offset = Offset::from_seconds(secs).unwrap_or(Offset::UTC);
        return Ok((format!("fixed {offset}"), TimeZone::fixed(offset)));
    }
    let name = u.choose(names)?;
    Ok((name.clone(), TimeZone::get(name).unwrap_or(TimeZone::UTC)))
}

fn instant(u: &mut Unstructured<'_>, tz: &TimeZone) -> Result<Timestamp> {
    let (min, max) = (Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    let second = match u.int_in_range(0..=3u8)? {
        // Around now.
        0 => u.int_in_range(1_600_000_000..=2_000_000_000i64)?,
        // Near a transition of the zone, from 1900 to 2100.
        1 | 2 => {
            let from = u.int_in_range(-2_208_988_800..=4_102_444_800i64)?;
            let base = Timestamp::from_second(from).unwrap_or(Timestamp::UNIX_EPOCH);
            let at = tz
                .following(base)
                .next()
                .map_or(from, |t| t.timestamp().as_second());
            at.saturating_add(u.int_in_range(-7_200..=7_200)?)
        }
        // Anywhere jiff can say.
        _ => u.int_in_range(min..=max)?,
    }
    .clamp(min, max);
    let t = Timestamp::from_second(second).unwrap_or(Timestamp::UNIX_EPOCH);
    let nanos = if u.int_in_range(0..=3u8)? == 3 {
        u.int_in_range(-999_999_999..=999_999_999i64)?
    } else {
        0
    };
    Ok(t.checked_add(SignedDuration::from_nanos(nanos))
        .unwrap_or(t))
}

/// Whether `t` shows, in `tz`, a wall-clock time `s`'s fields allow.
fn matches(s: &Schedule, t: Timestamp, tz: &TimeZone) -> bool {
    let Some(f) = s.fields() else { return true };
    let dt = tz.to_datetime(t);
    let to_u8 = |v: i8| u8::try_from(v).unwrap_or(u8::MAX);
    let second = match f.second() {
        Some(set) => set.contains(to_u8(dt.second())),
        None => dt.second() == 0,
    };
    let weekday = to_u8(dt.weekday().to_sunday_zero_offset());
    let dom = f.day_of_month().contains(to_u8(dt.day()));
    let dow = f.day_of_week().contains(weekday);
    let day = if f.days_match_either() {
        dom || dow
    } else {
        dom && dow
    };
    second
        && f.minute().contains(to_u8(dt.minute()))
        && f.hour().contains(to_u8(dt.hour()))
        && f.month().contains(to_u8(dt.month()))
        && day
}

/// Whether the clocks jumped forward at `t` in `tz`.
fn gap_ends_at(t: Timestamp, tz: &TimeZone) -> bool {
    let before = t - SignedDuration::from_secs(1);
    tz.to_offset(before) < tz.to_offset(t)
}

/// `t` is an occurrence of `s` in `tz`, by the fields and by the schedule
/// itself.
fn occurrence(s: &Schedule, t: Timestamp, tz: &TimeZone, what: &str) {
    assert_eq!(
        t.subsec_nanosecond(),
        0,
        "{what}: {t} is not a whole second"
    );
    assert_eq!(
        s.latest_at_or_before(t, tz),
        Some(t),
        "{what}: {t} is not its own latest occurrence"
    );
    match s.kind() {
        Kind::Wildcard => assert!(matches(s, t, tz), "{what}: {t} does not match"),
        Kind::Fixed => assert!(
            matches(s, t, tz) || gap_ends_at(t, tz),
            "{what}: {t} neither matches nor ends a gap"
        ),
        Kind::Every(p) => {
            let secs = i64::try_from(p.as_secs()).unwrap_or(i64::MAX);
            assert_eq!(t.as_second().rem_euclid(secs), 0, "{what}: {t}");
        }
    }
}

fn check(s: &Schedule, t: Timestamp, tz: &TimeZone, zone: &str) {
    let what = format!("{s} in {zone} at {t}");
    let next = s.next_after(t, tz);
    let latest = s.latest_at_or_before(t, tz);
    if let Some(n) = next {
        assert!(n > t, "{what}: next_after gave {n}");
        occurrence(s, n, tz, &what);
        // Nothing between `t` and `n`.
        let before = s.latest_at_or_before(n - SignedDuration::from_secs(1), tz);
        assert!(
            before.is_none_or(|b| b <= t),
            "{what}: {before:?} lies between it and next_after {n}"
        );
        if let Some(n2) = s.next_after(n, tz) {
            assert!(n2 > n, "{what}: after {n} comes {n2}");
        }
    }
    if let Some(l) = latest {
        assert!(l <= t, "{what}: latest_at_or_before gave {l}");
        occurrence(s, l, tz, &what);
        match (s.next_after(l, tz), next) {
            (Some(a), Some(n)) => assert_eq!(a, n, "{what}: after the latest {l}"),
            (Some(a), None) => panic!("{what}: nothing after it, but {a} after the latest {l}"),
            (None, Some(n)) => assert!(
                n.as_second() - l.as_second() >= NEAR,
                "{what}: nothing after the latest {l}, but {n} after it"
            ),
            (None, None) => {}
        }
    }
}

fn run(data: &[u8]) -> Result<()> {
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(data.len());
    let expr = String::from_utf8_lossy(&data[..split]);
    let Ok(s) = Schedule::parse(&expr) else {
        return Ok(());
    };
    let shown = s.to_string();
    assert_eq!(
        Schedule::parse(&shown).ok().as_ref(),
        Some(&s),
        "{expr:?} displays as {shown:?}, which reads back otherwise"
    );
    let mut u = Unstructured::new(data.get(split + 1..).unwrap_or_default());
    for _ in 0..2 {
        let (name, tz) = zone(&mut u)?;
        for _ in 0..3 {
            let t = instant(&mut u, &tz)?;
            check(&s, t, &tz, &name);
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
