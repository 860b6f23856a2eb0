//! The last 24 hours across every job: one row per job, each run a bar from
//! its start to its end (to now while it runs), so that runs at once stand
//! one above the other and a long run is as long as it took.
//!
//! Where a run started more than [`LATE`] after its occurrence, a thin grey
//! line runs from the occurrence to the start: the time it waited (for
//! its lock, behind another run, or for a scheduler that was down), so a
//! long run pushing the next one shows. A row whose runs were read only
//! in part (the page reads each job's newest runs, [`super::strip::STRIP_MARKS`]
//! of them) shades the part of the day it has not read, and says so in
//! its title, rather than showing it empty. Bars are links to the run's
//! row on the job's page and carry a `<title>`; every string is escaped.

use std::fmt::Write as _;

use jiff::{SignedDuration, Timestamp};

use super::escape;
use super::marks::{Kind, at, run_title, url_part};
use crate::views::history::RunView;

/// The window the timeline shows, ending now.
pub const WINDOW: SignedDuration = SignedDuration::from_hours(24);

/// A run that started more than this after its occurrence shows its wait.
pub const LATE: SignedDuration = SignedDuration::from_secs(60);

/// The timeline's width in its own units: one per minute.
const WIDTH: f64 = 1440.0;
/// The narrowest bar, in minutes, so that a run of seconds still shows on
/// a phone (a pixel or two there).
const THINNEST: f64 = 8.0;

/// One job's row: its name, its newest runs (newest first) and whether
/// older runs than these were left unread.
pub(super) struct Row<'a> {
    pub(super) job: &'a str,
    pub(super) runs: &'a [RunView],
    pub(super) partial: bool,
}

/// Where `t` falls in the window ending at `now`, in minutes from its start,
/// clamped to the window.
fn x(t: Timestamp, now: Timestamp) -> f64 {
    let from_start = WINDOW - now.duration_since(t);
    (from_start.as_secs_f64() / 60.0).clamp(0.0, WIDTH)
}

/// Writes the timeline of `rows` ending at `now`, times in `tz`.
pub(super) fn timeline(
    out: &mut String,
    rows: &[Row<'_>],
    tz: &jiff::tz::TimeZone,
    now: Timestamp,
) {
    let start = now - WINDOW;
    out.push_str(
        "<div class=\"timeline\" id=\"timeline\">\n<h2>Last 24 hours</h2>\n<p>Each run is a bar \
         from its start to its end; a thin grey line before a bar is the time it started late \
         (waiting for its lock, or for the scheduler).</p>\n",
    );
    // The scale: the window's start, every six hours, and now.
    out.push_str("<div class=\"tl-scale\"><span></span><div class=\"tl-axis\">");
    for i in 0..=4 {
        let t = start + SignedDuration::from_hours(6 * i);
        let label = if i == 4 {
            "now".to_owned()
        } else {
            t.to_zoned_datetime(tz.clone())
                .strftime("%H:%M")
                .to_string()
        };
        let _ = write!(out, "<span style=\"left:{}%\">{label}</span>", i * 25);
    }
    out.push_str("</div></div>\n");
    for row in rows {
        let page = format!("jobs/{}", url_part(row.job));
        let _ = write!(
            out,
            "<div class=\"tl-row\" data-timeline-job=\"{name}\"><a class=\"tl-name\" \
             href=\"{page}\" title=\"{name}\">{name}</a><svg class=\"tl-bars\" viewBox=\"0 0 \
             {WIDTH} 16\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"the runs of \
             {name} in the last 24 hours\">",
            name = escape(row.job),
            page = escape(&page),
        );
        for h in [360, 720, 1080] {
            let _ = write!(
                out,
                "<line x1=\"{h}\" y1=\"0\" x2=\"{h}\" y2=\"16\" vector-effect=\"non-scaling-stroke\"/>"
            );
        }
        if row.partial
            && let Some(oldest) = row.runs.last().and_then(|r| at(&r.started))
            && oldest > start
        {
            let _ = write!(
                out,
                "<rect class=\"unread\" x=\"0\" y=\"0\" width=\"{:.1}\" height=\"16\"><title>runs \
                 before {} not read: the page reads the newest {} of each job</title></rect>",
                x(oldest, now),
                escape(&crate::times::human(oldest, tz)),
                row.runs.len()
            );
        }
        for r in row.runs {
            bar(out, &page, r, tz, now);
        }
        out.push_str("</svg></div>\n");
    }
    out.push_str("</div>\n");
}

/// One run's bar (and its wait), when any of it falls in the window.
fn bar(out: &mut String, page: &str, r: &RunView, tz: &jiff::tz::TimeZone, now: Timestamp) {
    let Some(started) = at(&r.started) else {
        return;
    };
    let ended = r.finished.as_deref().and_then(at).unwrap_or(now);
    if ended < now - WINDOW || started > now {
        return;
    }
    let kind = Kind::of_run(r);
    let w = (x(ended, now) - x(started, now)).max(THINNEST);
    // A bar made wider than its run still ends by now.
    let x0 = x(started, now).min(WIDTH - w);
    let occurrence = at(&r.occurrence);
    let late = occurrence
        .map(|occ| started.duration_since(occ))
        .filter(|d| *d > LATE);
    let mut title = run_title(r, tz, now);
    if let Some(d) = late {
        let d = std::time::Duration::try_from(d).unwrap_or_default();
        let _ = write!(
            title,
            ", started {} after its occurrence",
            crate::units::show_duration(d)
        );
    }
    let _ = write!(
        out,
        "<a class=\"span\" data-kind=\"{k}\" data-run=\"{id}\" href=\"{page}#run-{frag}\">\
         <title>{title}</title>",
        k = kind.word(),
        id = escape(&r.run_id),
        page = escape(page),
        frag = url_part(&r.run_id),
        title = escape(&title),
    );
    if let (Some(occ), Some(_)) = (occurrence, late) {
        let wx = x(occ, now);
        let _ = write!(
            out,
            "<rect class=\"wait\" x=\"{wx:.1}\" y=\"7\" width=\"{:.1}\" height=\"2\"/>",
            (x0 - wx).max(0.0)
        );
    }
    let _ = write!(
        out,
        "<rect class=\"k-{}\" x=\"{x0:.1}\" y=\"2\" width=\"{w:.1}\" height=\"12\"/></a>",
        kind.word()
    );
}
