//! A property test against a brute-force oracle.
//!
//! The oracle shares nothing with the evaluator but jiff's instant-to-civil
//! conversion (`TimeZone::to_datetime`). It holds each random expression as
//! a list of items per field and decides membership from the items
//! themselves, not from the crate's parser. It walks instants one step at a
//! time (a minute for five fields, a second for six) and applies the rules as
//! stated:
//!
//! - wildcard: an instant is an occurrence iff its civil time matches;
//! - fixed: an instant is an occurrence iff its civil time matches and no
//!   earlier instant showed that civil time, or the civil time jumped forward
//!   at this instant (a gap) and some civil time it skipped matches.
//!
//! To know whether a civil time was shown before, the walk starts a margin
//! (longer than any fold in the zones used) before the window it checks.
//! Start instants cluster around the zones' transitions in 2025-2027.

use std::collections::HashSet;
use std::fmt::Write;

use baton_cron::{Kind, Schedule};
use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;

use crate::support::zone;

const ZONES: [&str; 12] = [
    "America/New_York",
    "Europe/London",
    "Europe/Berlin",
    "America/Santiago",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "UTC",
    "Europe/Paris",
    "America/Los_Angeles",
    "Pacific/Chatham",
    "Asia/Tehran",
    "America/St_Johns",
];

/// One item of a field list, as the generator wrote it.
#[derive(Clone, Debug)]
enum Item {
    /// `*` or `*/n`.
    Star(u32),
    /// `v`.
    Value(u32),
    /// `a-b` or `a-b/n`.
    Range(u32, u32, u32),
    /// `a/n`: from `a` to the field's end.
    From(u32, u32),
}

/// A field's bounds for the oracle: numbers allowed, and where `*` and `a/n`
/// end (day-of-week: Saturday, with 7 written only explicitly).
#[derive(Clone, Copy, Debug)]
struct Bounds {
    min: u32,
    max: u32,
    open_end: u32,
}

const SECOND: Bounds = Bounds {
    min: 0,
    max: 59,
    open_end: 59,
};
const MINUTE: Bounds = Bounds {
    min: 0,
    max: 59,
    open_end: 59,
};
const HOUR: Bounds = Bounds {
    min: 0,
    max: 23,
    open_end: 23,
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    open_end: 31,
};
const MONTH: Bounds = Bounds {
    min: 1,
    max: 12,
    open_end: 12,
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 7,
    open_end: 6,
};

#[derive(Clone, Debug)]
struct FieldSpec {
    items: Vec<Item>,
    bounds: Bounds,
    /// Write day-of-week values as names.
    names: bool,
}

impl FieldSpec {
    fn star(&self) -> bool {
        matches!(self.items[0], Item::Star(_))
    }

    fn item_allows(&self, item: &Item, v: u32) -> bool {
        let b = self.bounds;
        match *item {
            Item::Star(n) => (b.min..=b.open_end).contains(&v) && (v - b.min).is_multiple_of(n),
            Item::Value(x) => x == v,
            Item::Range(a, z, n) => (a..=z).contains(&v) && (v - a).is_multiple_of(n),
            Item::From(a, n) => (a..=b.open_end.max(a)).contains(&v) && (v - a).is_multiple_of(n),
        }
    }

    fn allows(&self, v: u32) -> bool {
        self.items.iter().any(|item| {
            self.item_allows(item, v)
                // Day-of-week 7 is Sunday too.
                || (self.bounds.max == 7 && v == 0 && self.item_allows(item, 7))
        })
    }

    fn write(&self, out: &mut String) {
        const DAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];
        let value = |v: u32| {
            if self.names && v < 7 {
                DAYS[v as usize].to_owned()
            } else {
                v.to_string()
            }
        };
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // OK to unwrap: writing to a String cannot fail.
            match *item {
                Item::Star(1) => write!(out, "*"),
                Item::Star(n) => write!(out, "*/{n}"),
                Item::Value(v) => write!(out, "{}", value(v)),
                Item::Range(a, z, 1) => write!(out, "{}-{}", value(a), value(z)),
                Item::Range(a, z, n) => write!(out, "{}-{}/{n}", value(a), value(z)),
                Item::From(a, n) => write!(out, "{}/{n}", value(a)),
            }
            .unwrap();
        }
    }
}

#[derive(Clone, Debug)]
struct Spec {
    second: Option<FieldSpec>,
    minute: FieldSpec,
    hour: FieldSpec,
    dom: FieldSpec,
    month: FieldSpec,
    dow: FieldSpec,
}

impl Spec {
    fn expression(&self) -> String {
        let mut out = String::new();
        let fields = [&self.minute, &self.hour, &self.dom, &self.month, &self.dow];
        for field in self.second.iter().chain(fields) {
            if !out.is_empty() {
                out.push(' ');
            }
            field.write(&mut out);
        }
        out
    }

    fn wildcard(&self) -> bool {
        self.minute.star() || self.hour.star()
    }

    fn matches(&self, c: DateTime) -> bool {
        let second = c.second() as u32;
        let second_ok = match &self.second {
            Some(f) => f.allows(second),
            None => second == 0,
        };
        let dom = self.dom.allows(c.day() as u32);
        let dow = self.dow.allows(c.weekday().to_sunday_zero_offset() as u32);
        let day_ok = if self.dom.star() || self.dow.star() {
            dom && dow
        } else {
            dom || dow
        };
        second_ok
            && self.minute.allows(c.minute() as u32)
            && self.hour.allows(c.hour() as u32)
            && self.month.allows(c.month() as u32)
            && day_ok
    }
}

/// The occurrences in `[from, to]`, walking from `from - margin` in steps of
/// `step` seconds.
fn oracle(spec: &Spec, tz: &TimeZone, from: i64, to: i64, step: i64, margin: i64) -> Vec<i64> {
    let step_civil = SignedDuration::from_secs(step);
    let mut seen: HashSet<DateTime> = HashSet::new();
    let mut previous: Option<DateTime> = None;
    let mut out = Vec::new();
    let mut u = (from - margin).div_euclid(step) * step;
    while u <= to {
        let civil = tz.to_datetime(Timestamp::from_second(u).unwrap());
        let occurs = if spec.wildcard() {
            spec.matches(civil)
        } else {
            let first = seen.insert(civil);
            let mut occurs = first && spec.matches(civil);
            if let Some(previous) = previous {
                // A gap: the civil time jumped by more than one step.
                let mut skipped = previous + step_civil;
                while !occurs && skipped < civil {
                    occurs = spec.matches(skipped);
                    skipped += step_civil;
                }
            }
            occurs
        };
        if occurs && u >= from {
            out.push(u);
        }
        previous = Some(civil);
        u += step;
    }
    out
}

// Generators. Hours and minutes lean towards the small values where gaps and
// folds happen (and 23, for Santiago's midnight), days and months towards *.

fn step(width: u32) -> impl Strategy<Value = u32> {
    prop_oneof![3 => Just(1u32), 2 => 2..=4u32, 1 => 1..=width]
}

fn value_in(b: Bounds, favourites: &'static [u32]) -> BoxedStrategy<u32> {
    if favourites.is_empty() {
        (b.min..=b.max).boxed()
    } else {
        prop_oneof![3 => proptest::sample::select(favourites), 1 => b.min..=b.max].boxed()
    }
}

fn item(b: Bounds, favourites: &'static [u32]) -> impl Strategy<Value = Item> {
    let width = b.open_end - b.min + 1;
    let v = move || value_in(b, favourites);
    prop_oneof![
        3 => v().prop_map(Item::Value),
        2 => (v(), v(), step(width)).prop_map(|(a, z, n)| Item::Range(a.min(z), a.max(z), n)),
        1 => (v(), step(width)).prop_map(|(a, n)| Item::From(a, n)),
    ]
}

fn field(
    b: Bounds,
    favourites: &'static [u32],
    star_weight: u32,
    names: bool,
) -> impl Strategy<Value = FieldSpec> {
    let width = b.open_end - b.min + 1;
    let star = (
        step(width),
        proptest::collection::vec(item(b, favourites), 0..=2),
    )
        .prop_map(|(n, mut rest)| {
            rest.insert(0, Item::Star(n));
            rest
        });
    let list = proptest::collection::vec(item(b, favourites), 1..=3);
    let items = prop_oneof![star_weight => star, 2 => list];
    (items, any::<bool>()).prop_map(move |(items, name)| FieldSpec {
        items,
        bounds: b,
        names: names && name,
    })
}

fn spec(with_seconds: bool) -> impl Strategy<Value = Spec> {
    let second = if with_seconds {
        field(SECOND, &[0, 1, 30, 59], 3, false)
            .prop_map(Some)
            .boxed()
    } else {
        Just(None).boxed()
    };
    (
        second,
        field(MINUTE, &[0, 1, 15, 29, 30, 31, 44, 45, 59], 1, false),
        field(HOUR, &[0, 1, 2, 3, 22, 23], 1, false),
        field(DOM, &[], 10, false),
        field(MONTH, &[3, 4, 9, 10, 11], 10, false),
        field(DOW, &[0, 6, 7], 6, true),
    )
        .prop_map(|(second, minute, hour, dom, month, dow)| Spec {
            second,
            minute,
            hour,
            dom,
            month,
            dow,
        })
}

/// The zones' transitions in 2025-2027, in seconds.
fn transitions(tz: &TimeZone) -> Vec<i64> {
    let start: Timestamp = "2025-01-01T00:00:00Z".parse().unwrap();
    let end: Timestamp = "2028-01-01T00:00:00Z".parse().unwrap();
    tz.following(start)
        .map(|t| t.timestamp())
        .take_while(|&t| t < end)
        .map(Timestamp::as_second)
        .collect()
}

/// A start instant: near a transition (from `before` seconds before to
/// `after` seconds after it) most of the time, else anywhere in
/// 2025-2027; plus a fraction of a second now and then.
fn start(tz: &TimeZone, pick: (bool, usize, f64, u32, bool), before: i64, after: i64) -> Timestamp {
    let (near, which, position, nanos, fraction) = pick;
    let list = transitions(tz);
    // 2025-01-01 to 2027-12-31.
    let (lo, hi) = if near && !list.is_empty() {
        let t = list[which % list.len()];
        (t - before, t + after)
    } else {
        (1_735_689_600, 1_830_297_600)
    };
    let second = lo + ((hi - lo) as f64 * position) as i64;
    let nanos = if fraction { nanos as i32 } else { 0 };
    Timestamp::new(second, nanos).unwrap()
}

fn pick() -> impl Strategy<Value = (bool, usize, f64, u32, bool)> {
    (
        prop::bool::weighted(0.85),
        any::<usize>(),
        0.0..1.0f64,
        1..1_000_000_000u32,
        any::<bool>(),
    )
}

/// Compares the schedule with the oracle over the window `[t, t + window]`.
fn check(spec: &Spec, tz_name: &str, t: Timestamp, step: i64, window: i64, margin: i64) {
    let expr = spec.expression();
    let schedule = match Schedule::parse(&expr) {
        Ok(s) => s,
        // A day-of-month no allowed month has; the parser refuses it.
        Err(e) if e.to_string().contains("never fires") => return,
        Err(e) => panic!("{expr:?} should parse: {e}"),
    };
    let kind = if spec.wildcard() {
        Kind::Wildcard
    } else {
        Kind::Fixed
    };
    assert_eq!(schedule.kind(), kind, "{expr}");
    let tz = zone(tz_name);
    let what = format!("{expr:?} in {tz_name} from {t}");
    let shown = |s: Option<i64>| {
        s.map_or("none".to_owned(), |s| {
            Timestamp::from_second(s)
                .unwrap()
                .to_zoned_datetime(tz.clone())
                .to_string()
        })
    };

    let from = t.as_second() - i64::from(t.subsec_nanosecond() < 0);
    let to = from + window;
    let expected = oracle(spec, &tz, from, to, step, margin);

    // next_after, 20 times over.
    let after: Vec<i64> = expected.iter().copied().filter(|&e| e > from).collect();
    let mut cursor = t;
    for i in 0..20 {
        let got = schedule.next_after(cursor, &tz).map(Timestamp::as_second);
        match got {
            Some(g) if g <= to => {
                assert_eq!(
                    shown(got),
                    shown(after.get(i).copied()),
                    "{what}: next #{i}"
                );
                cursor = Timestamp::from_second(g).unwrap();
            }
            _ => {
                assert_eq!(
                    i,
                    after.len(),
                    "{what}: next #{i} is {}, past the window, but the oracle has {}",
                    shown(got),
                    shown(after.get(i).copied()),
                );
                break;
            }
        }
    }

    // latest_at_or_before at the start, at each occurrence, just before each,
    // and at a spread of points in the window.
    let mut probes = vec![from, to];
    for &e in expected.iter().take(30) {
        probes.extend([e, e - 1]);
    }
    probes.extend((1..16).map(|k| from + window * k / 16));
    for x in probes.into_iter().filter(|&x| x >= from && x <= to) {
        let got = schedule
            .latest_at_or_before(Timestamp::from_second(x).unwrap(), &tz)
            .map(Timestamp::as_second);
        match expected.iter().copied().rfind(|&e| e <= x) {
            Some(e) => assert_eq!(
                shown(got),
                shown(Some(e)),
                "{what}: latest at or before {x}"
            ),
            None => assert!(
                got.is_none_or(|g| g < from),
                "{what}: latest at or before {} is {}, but the oracle has none since {}",
                shown(Some(x)),
                shown(got),
                shown(Some(from)),
            ),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    /// Five fields, minute by minute over two days.
    #[test]
    fn minutes_agree_with_the_oracle(
        spec in spec(false),
        z in 0..ZONES.len(),
        pick in pick(),
    ) {
        let tz = zone(ZONES[z]);
        let t = start(&tz, pick, 30 * 3600, 2 * 3600);
        check(&spec, ZONES[z], t, 60, 2 * 86_400, 3 * 3600);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Six fields, second by second over three hours.
    #[test]
    fn seconds_agree_with_the_oracle(
        spec in spec(true),
        z in 0..ZONES.len(),
        pick in pick(),
    ) {
        let tz = zone(ZONES[z]);
        let t = start(&tz, pick, 2 * 3600, 3600);
        check(&spec, ZONES[z], t, 1, 3 * 3600, 2 * 3600);
    }
}
