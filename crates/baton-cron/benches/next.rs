//! The cost of `next_after`: what the scheduler pays per job per tick (its
//! budget is 20 µs a job, for 10,000 jobs).
//!
//! Each schedule is asked from 256 instants spread over 2026 (so the gap
//! and fold days are among them), in America/New_York and in UTC, against
//! a floor measured in the same run: the two zone lookups any zone-aware
//! evaluator makes per answer (the offset at the instant and the next
//! transition after it).
//!
//! ```sh
//! cargo bench -p baton-cron --bench next
//! ```

#![allow(clippy::unwrap_used)] // A benchmark that cannot set up should stop.

use std::hint::black_box;
use std::time::Duration;

use baton_cron::Schedule;
use criterion::Criterion;
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// 256 instants through 2026, 34 h 13 min 17 s apart, so they fall at all
/// times of day.
fn instants() -> Vec<Timestamp> {
    let start = "2026-01-01T00:00:00Z"
        .parse::<Timestamp>()
        .unwrap()
        .as_second();
    (0..256)
        .map(|i| Timestamp::from_second(start + i * 123_197).unwrap())
        .collect()
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    let at = instants();
    let zones = [
        (
            "America/New_York",
            TimeZone::get("America/New_York").unwrap(),
        ),
        ("UTC", TimeZone::UTC),
    ];

    let mut g = c.benchmark_group("next_after");
    for expr in ["*/15 * * * *", "30 2 * * *", "0 3 * * 0", "every:900s"] {
        let schedule: Schedule = expr.parse().unwrap();
        for (name, tz) in &zones {
            let mut i = 0;
            g.bench_function(format!("{expr} / {name}"), |b| {
                b.iter(|| {
                    i = (i + 1) % at.len();
                    black_box(schedule.next_after(black_box(at[i]), tz))
                });
            });
        }
    }
    for (name, tz) in &zones {
        let mut i = 0;
        g.bench_function(format!("floor: zone lookups / {name}"), |b| {
            b.iter(|| {
                i = (i + 1) % at.len();
                let t = black_box(at[i]);
                black_box((
                    tz.to_offset(t),
                    tz.following(t).next().map(|t| t.timestamp()),
                ))
            });
        });
    }
    g.finish();

    let mut g = c.benchmark_group("latest_at_or_before");
    for expr in ["*/15 * * * *", "30 2 * * *"] {
        let schedule: Schedule = expr.parse().unwrap();
        let (name, tz) = &zones[0];
        let mut i = 0;
        g.bench_function(format!("{expr} / {name}"), |b| {
            b.iter(|| {
                i = (i + 1) % at.len();
                black_box(schedule.latest_at_or_before(black_box(at[i]), tz))
            });
        });
    }
    g.finish();
    c.final_summary();
}
