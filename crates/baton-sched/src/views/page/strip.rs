//! A job's strip: its newest [`STRIP_MARKS`] runs and missed ranges as one
//! inline SVG, oldest on the left, one mark each, coloured by its
//! [`Kind`], a run's height growing with its duration.
//!
//! Heights grow with the square root of a run's duration against the
//! longest run shown, from a floor every run reaches: a run ten times
//! shorter than the longest still shows, and the title says the exact
//! duration. A missed range is a hollow mark of the strip's whole height,
//! since it has no duration. Each mark is a link to its row on the job's
//! page (`#run-ID`, `#missed-ID`), its hit area the strip's whole height,
//! so a tap on a phone finds it; its `<title>` says what it is on hover.
//! Every string is escaped here, as on the rest of the page.

use std::fmt::Write as _;

use baton_store::ledger::MissedRow;
use jiff::Timestamp;

use super::escape;
use super::marks::{Kind, at, miss_at, miss_title, run_ms, run_title, url_part};
use crate::views::history::RunView;

/// How many marks a strip shows at most.
pub const STRIP_MARKS: usize = 50;

/// A mark's width in the strip's own units, its gap included.
const SLOT: usize = 10;
/// The strip's height in its own units.
const HEIGHT: f64 = 48.0;
/// The height of a run's mark that took no time.
const FLOOR: f64 = 6.0;

/// One mark: a run, or a missed range.
enum Entry<'a> {
    Run(&'a RunView),
    Miss(&'a MissedRow),
}

/// The marks of `runs` and `misses` (each newest first, as the ledger
/// gives them) in the strip's order: the newest [`STRIP_MARKS`], oldest
/// first. An entry whose time cannot be read is left out.
fn entries<'a>(runs: &'a [RunView], misses: &'a [MissedRow]) -> Vec<(Timestamp, Entry<'a>)> {
    let mut all: Vec<(Timestamp, Entry<'a>)> = runs
        .iter()
        .filter_map(|r| Some((at(&r.started)?, Entry::Run(r))))
        .chain(
            misses
                .iter()
                .filter_map(|m| Some((miss_at(m)?, Entry::Miss(m)))),
        )
        .collect();
    all.sort_by_key(|(t, _)| *t);
    let cut = all.len().saturating_sub(STRIP_MARKS);
    all.drain(..cut);
    all
}

/// Writes the strip of `job` to `out`: its marks link to `page` (the job's
/// page, relative to where the strip is shown; empty on the job's page
/// itself), times in `tz`, a running run's duration counted to `now`.
pub(super) fn strip(
    out: &mut String,
    job: &str,
    page: &str,
    runs: &[RunView],
    misses: &[MissedRow],
    tz: &jiff::tz::TimeZone,
    now: Timestamp,
) {
    let marks = entries(runs, misses);
    if marks.is_empty() {
        out.push_str("<p class=\"strip-none none\">no runs yet</p>\n");
        return;
    }
    let longest = marks
        .iter()
        .filter_map(|(_, e)| match e {
            Entry::Run(r) => Some(run_ms(r, now)),
            Entry::Miss(_) => None,
        })
        .max()
        .unwrap_or(0);
    let width = STRIP_MARKS * SLOT;
    let _ = write!(
        out,
        "<svg class=\"strip\" viewBox=\"0 0 {width} {HEIGHT}\" preserveAspectRatio=\"none\" \
         role=\"img\" aria-label=\"the last {} runs and misses of {}\">",
        marks.len(),
        escape(job)
    );
    let page = escape(page);
    let first = STRIP_MARKS - marks.len();
    for (i, (_, e)) in marks.iter().enumerate() {
        let x = (first + i) * SLOT;
        let bar_x = x + 1;
        let bar_w = SLOT - 2;
        match e {
            Entry::Run(r) => {
                let kind = Kind::of_run(r);
                let h = height(run_ms(r, now), longest);
                let _ = write!(
                    out,
                    "<a class=\"mark\" data-kind=\"{k}\" data-run=\"{id}\" href=\"{page}#run-{frag}\">\
                     <title>{title}</title><rect class=\"hit\" x=\"{x}\" y=\"0\" width=\"{SLOT}\" \
                     height=\"{HEIGHT}\"/><rect class=\"bar k-{k}\" x=\"{bar_x}\" y=\"{y:.1}\" \
                     width=\"{bar_w}\" height=\"{h:.1}\"/></a>",
                    k = kind.word(),
                    id = escape(&r.run_id),
                    frag = url_part(&r.run_id),
                    title = escape(&run_title(r, tz, now)),
                    y = HEIGHT - h,
                );
            }
            Entry::Miss(m) => {
                let _ = write!(
                    out,
                    "<a class=\"mark\" data-kind=\"missed\" data-reason=\"{reason}\" \
                     href=\"{page}#missed-{id}\"><title>{title}</title><rect class=\"hit\" \
                     x=\"{x}\" y=\"0\" width=\"{SLOT}\" height=\"{HEIGHT}\"/><rect class=\"bar \
                     k-missed\" x=\"{bar_x}.5\" y=\"0.5\" width=\"{w}\" height=\"{h}\" \
                     vector-effect=\"non-scaling-stroke\"/></a>",
                    reason = escape(&m.reason.to_string()),
                    id = m.id,
                    title = escape(&miss_title(m, tz)),
                    w = bar_w - 1,
                    h = HEIGHT - 1.0,
                );
            }
        }
    }
    out.push_str("</svg>\n");
}

/// A run's height for `ms` against the `longest` shown: the floor, and the
/// rest of the strip by the square root of their ratio.
fn height(ms: u64, longest: u64) -> f64 {
    if longest == 0 {
        return FLOOR;
    }
    // Durations are far below 2^52 ms, where f64 is exact.
    let ratio = (ms as f64 / longest as f64).clamp(0.0, 1.0);
    FLOOR + (HEIGHT - FLOOR) * ratio.sqrt()
}
