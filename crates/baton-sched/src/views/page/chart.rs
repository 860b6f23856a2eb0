//! A job's durations over time, for its page: one point per run at its
//! start (left to right, oldest to newest) and its duration (from zero at
//! the bottom to the longest shown at the top), coloured by its
//! [`Kind`], joined by a line so that a trend shows. A run whose length is
//! unknown (abandoned) has none.
//!
//! The picture keeps its proportions and holds no text: its scale (the
//! top and middle lines' durations, the first and last start) is written
//! in HTML around it, so it reads on a phone as on a desktop. Each point
//! links to its run's row (`#run-ID`) and says what it is in its
//! `<title>`; every string is escaped.

use std::fmt::Write as _;
use std::time::Duration;

use jiff::Timestamp;

use super::marks::{Kind, at, run_ms, run_title, unknown_length, url_part};
use super::{escape, instant};
use crate::units::show_duration;
use crate::views::history::RunView;

const WIDTH: f64 = 600.0;
const HEIGHT: f64 = 200.0;
/// Room kept around the plot so that a point on its edge shows whole.
const PAD: f64 = 8.0;

/// Writes the chart of `runs` (newest first, as the ledger gives them),
/// times in `tz`, a running run's duration counted to `now`.
pub(super) fn chart(out: &mut String, runs: &[RunView], tz: &jiff::tz::TimeZone, now: Timestamp) {
    // A run whose length is unknown (abandoned) has no point: the time
    // until it was found so is not how long it ran.
    let mut points: Vec<(Timestamp, u64, &RunView)> = runs
        .iter()
        .filter(|r| !unknown_length(r))
        .filter_map(|r| Some((at(&r.started)?, run_ms(r, now), r)))
        .collect();
    if points.is_empty() {
        out.push_str("<p class=\"none\">no runs yet</p>\n");
        return;
    }
    points.sort_by_key(|(t, _, _)| *t);
    let longest = points
        .iter()
        .map(|(_, ms, _)| *ms)
        .max()
        .unwrap_or(0)
        .max(1);
    let (first, last) = (points[0].0, points[points.len() - 1].0);
    let span = last.duration_since(first).as_secs_f64();
    let px = |t: Timestamp| {
        if span <= 0.0 {
            WIDTH / 2.0
        } else {
            PAD + (WIDTH - 2.0 * PAD) * t.duration_since(first).as_secs_f64() / span
        }
    };
    // Durations are far below 2^52 ms, where f64 is exact.
    let py = |ms: u64| HEIGHT - PAD - (HEIGHT - 2.0 * PAD) * (ms as f64 / longest as f64);
    let _ = writeln!(
        out,
        "<div class=\"axis\"><span>top line: {}, middle line: {}</span></div>",
        escape(&show_duration(Duration::from_millis(longest))),
        escape(&show_duration(Duration::from_millis(longest / 2)))
    );
    let _ = write!(
        out,
        "<svg class=\"chart\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" \
         aria-label=\"the duration of each of {} runs over time\">",
        points.len()
    );
    for ms in [longest, longest / 2, 0] {
        let y = py(ms);
        let _ = write!(
            out,
            "<line x1=\"0\" y1=\"{y:.1}\" x2=\"{WIDTH}\" y2=\"{y:.1}\"/>"
        );
    }
    out.push_str("<polyline points=\"");
    for (t, ms, _) in &points {
        let _ = write!(out, "{:.1},{:.1} ", px(*t), py(*ms));
    }
    out.push_str("\"/>");
    for (t, ms, r) in &points {
        let kind = Kind::of_run(r);
        let _ = write!(
            out,
            "<a class=\"point\" data-kind=\"{k}\" data-run=\"{id}\" href=\"#run-{frag}\"><title>{title}</title>\
             <circle class=\"k-{k}\" cx=\"{cx:.1}\" cy=\"{cy:.1}\" r=\"5\"/></a>",
            k = kind.word(),
            id = escape(&r.run_id),
            frag = url_part(&r.run_id),
            title = escape(&run_title(r, tz, now)),
            cx = px(*t),
            cy = py(*ms),
        );
    }
    out.push_str("</svg>\n");
    let _ = writeln!(
        out,
        "<div class=\"axis\"><span>from {}</span><span>to {}</span></div>",
        instant(tz, &first.to_string()),
        instant(tz, &last.to_string())
    );
}
