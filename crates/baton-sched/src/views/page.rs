//! The status page: what `baton status` knows, as one self-contained HTML5
//! document for a browser (the daemon serves it at `GET /`; `baton __page`
//! prints it).
//!
//! This module owns the page's markup and its inline style; each job's
//! state is the one [`crate::views::job_state`] decided, shown under its word in
//! `data-state` and in the badge. [`render`] is a pure function
//! of what it is given: it reads no clock, no file and no ledger, so tests
//! pin its output. [`read`] gathers what it needs (a [`Status`] and each
//! job's last runs) and calls it; it never writes anything, and a ledger it
//! cannot read shows on the page rather than failing it.
//!
//! Every string from the configuration, the ledger or the lock (job names,
//! messages, holders' hosts, reasons) goes through [`escape`] before it
//! reaches the markup: nothing here may emit a string unescaped. The page
//! needs no JavaScript and loads nothing from elsewhere; it refreshes itself
//! with `<meta http-equiv="refresh">`. Machines find each job by its
//! `data-job` and `data-state` attributes.
//!
//! For a person: the jobs that need attention (an unhealthy state)
//! come first, then the rest, each group by name. Every time on the page is
//! shown in one zone, the scheduler's (the one its heading names), inside a
//! `<time>` element that never wraps, the instants an alert's message names
//! included; long texts (alert messages, a pause's
//! reason) are clamped to a few lines with the whole text in their
//! `title`, and fences are cut with an ellipsis, whole in theirs.
//!
//! The pictures are inline SVG drawn here, never a script: each job's
//! strip of its newest runs and misses ([`strip`]), a timeline of the last
//! 24 hours across every job ([`timeline`]), and on a job's own page
//! ([`job`], `/jobs/JOB`) its durations over time ([`chart`]). Every mark
//! is coloured by its [`marks::Kind`], named in the one legend, says what
//! it is in its `<title>` and links to its run's row on the job's page.

use std::fmt::Write as _;
use std::time::Duration;

use baton_lease::Clock;
use baton_store::words::RunVerdict;
use jiff::Timestamp;

use crate::config::Config;
use crate::units::show_duration;
use crate::views::history::RunView;
use crate::views::status::{JobStatus, Status, relative};

pub mod chart;
pub mod job;
pub mod login;
pub mod marks;
mod recent;
pub mod strip;
mod style;
pub mod timeline;

pub use recent::{RUNS_READ, RecentRuns};

use style::STYLE;

/// Who the page is shown to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Viewer {
    /// Anyone: no login to end (`baton __page`, a daemon without a token,
    /// a caller with the bearer token).
    #[default]
    Anyone,
    /// A browser logged in through `/login`: the page offers to log out.
    LoggedIn,
}

/// How many of each job's runs the page lists.
pub const RUNS_SHOWN: u32 = 5;

/// How often the page reloads itself by default, in seconds.
pub const DEFAULT_REFRESH_SECS: u32 = 5;

/// The jobs of `status` in the page's order: those that need attention
/// (an unhealthy state: `hung`, `unknown`, `overdue`, `failing`,
/// `crashed`) first,
/// then the rest, each group by name.
fn in_page_order(status: &Status) -> Vec<&JobStatus> {
    let mut jobs: Vec<&JobStatus> = status.jobs.iter().collect();
    jobs.sort_by(|a, b| {
        let rank = |j: &JobStatus| j.state.healthy();
        (rank(a), &a.job).cmp(&(rank(b), &b.job))
    });
    jobs
}

/// Reads `config`'s status and each job's last [`RUNS_READ`] runs and
/// missed ranges at the clock's wall time and renders the page, reloading
/// itself every `refresh_secs` seconds (0: never; [`DEFAULT_REFRESH_SECS`]
/// is the usual).
///
/// Nothing is written: a state directory that does not exist yet reads as
/// "never run".
///
/// # Example
///
/// ```ignore
/// let html = page::read(&config, &SystemClock, page::DEFAULT_REFRESH_SECS);
/// ```
pub fn read(config: &Config, clock: &dyn Clock, refresh_secs: u32) -> String {
    read_for(config, clock, refresh_secs, Viewer::Anyone)
}

/// [`read`], for `viewer`.
pub fn read_for(config: &Config, clock: &dyn Clock, refresh_secs: u32, viewer: Viewer) -> String {
    let now = clock.wall();
    let status = crate::views::status::read(config, None, now);
    let runs = RecentRuns::read(config, now, RUNS_READ);
    render_for(&status, &runs, now, refresh_secs, viewer)
}

/// Escapes `s` for HTML text and for attribute values in double or single
/// quotes: `&`, `<`, `>`, `"` and `'` become references.
///
/// # Example
///
/// ```
/// assert_eq!(baton_sched::views::page::escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
/// ```
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The page for `status`, with `runs`' newest runs of each job, ages counted
/// from `now`, reloading itself every `refresh_secs` seconds (0: never).
///
/// Pure: the same arguments give the same string.
///
/// # Example
///
/// ```ignore
/// let html = page::render(&status, &RecentRuns::default(), now, 5);
/// assert!(html.contains("data-job=\"backup\""));
/// ```
pub fn render(status: &Status, runs: &RecentRuns, now: Timestamp, refresh_secs: u32) -> String {
    render_for(status, runs, now, refresh_secs, Viewer::Anyone)
}

/// [`render`], for `viewer`: a browser logged in gets a button that logs it
/// out (a form posting to `/logout`).
pub fn render_for(
    status: &Status,
    runs: &RecentRuns,
    now: Timestamp,
    refresh_secs: u32,
    viewer: Viewer,
) -> String {
    let mut out = String::with_capacity(4096 + 2048 * status.jobs.len());
    let zone = page_zone(status);
    head(
        &mut out,
        &format!("baton: {}", health_words(status)),
        refresh_secs,
    );
    let enabled = if status.enabled {
        "enabled"
    } else {
        "disabled"
    };
    out.push_str("<header>\n");
    let _ = writeln!(
        out,
        "<h1 data-enabled=\"{}\">baton: <span class=\"{}\">{enabled}</span>, {}</h1>",
        status.enabled,
        if status.enabled { "ok" } else { "bad" },
        escape(&status.timezone),
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\" data-healthy=\"{}\">{}{}. Read at {}; times in {}; config \
         <code>{}</code>.</p>",
        status.healthy,
        escape(&health_words(status)),
        if status.enabled {
            String::new()
        } else {
            format!(
                "; the kill switch is off ({})",
                escape(&status.enabled_source)
            )
        },
        when(&zone, now, &status.now),
        escape(&status.timezone),
        escape(&status.config),
    );
    if let Some(hold) = status.store.as_ref().and_then(|c| {
        c.hold_words()
            .map(|words| (words, c.held_back_until.clone().unwrap_or_default()))
    }) {
        let _ = writeln!(
            out,
            "<p class=\"bad hold\" data-held-back-until=\"{}\">Store {}</p>",
            escape(&hold.1),
            escape(&crate::times::human_in(&hold.0, &zone)),
        );
    }
    logout(&mut out, viewer);
    out.push_str("</header>\n<main>\n");
    ledger_error(&mut out, runs);
    if status.jobs.is_empty() {
        out.push_str("<p class=\"none\">No jobs are configured.</p>\n");
    } else {
        out.push_str(&marks::legend());
    }
    out.push_str("<div class=\"jobs\">\n");
    let ordered = in_page_order(status);
    for job in &ordered {
        let page = format!("jobs/{}", marks::url_part(&job.job));
        job_card(&mut out, job, runs, &page, true, &zone, now);
    }
    out.push_str("</div>\n");
    unconfigured(&mut out, status, &zone);
    if !status.jobs.is_empty() {
        let rows: Vec<timeline::Row<'_>> = ordered
            .iter()
            .map(|j| {
                let read = runs.runs(&j.job);
                timeline::Row {
                    job: &j.job,
                    runs: read,
                    partial: runs.limit > 0 && read.len() >= runs.limit as usize,
                }
            })
            .collect();
        timeline::timeline(&mut out, &rows, &zone, now);
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The runs in flight of jobs the configuration no longer names, as
/// `status` lists them: a job renamed or removed while it ran still runs.
fn unconfigured(out: &mut String, status: &Status, zone: &jiff::tz::TimeZone) {
    if status.unconfigured_runs.is_empty() {
        return;
    }
    out.push_str(
        "<section class=\"unconfigured\">\n<h2>In flight, of jobs the configuration no longer \
         names</h2>\n<p class=\"meta\">A job renamed or removed while it ran: a run under its \
         new name would run beside it.</p>\n<ul>\n",
    );
    for r in &status.unconfigured_runs {
        let _ = writeln!(
            out,
            "<li data-job=\"{}\" data-run-id=\"{}\"><code>{}</code>: run <code>{}</code>, pid \
             {}, since {}</li>",
            escape(&r.job),
            escape(&r.run_id),
            escape(&r.job),
            escape(&r.run_id),
            r.pid,
            escape(&crate::times::human_in(&r.started, zone)),
        );
    }
    out.push_str("</ul>\n</section>\n");
}

/// The zone every time on a page of `status` is shown in: the
/// scheduler's.
fn page_zone(status: &Status) -> jiff::tz::TimeZone {
    crate::config::keys::zone_named(&status.timezone)
}

/// A page's start, through `<body>`: its `title` (escaped here), the
/// viewport for phones, its reload every `refresh_secs` seconds (0: none)
/// and the style sheet.
fn head(out: &mut String, title: &str, refresh_secs: u32) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    if refresh_secs > 0 {
        let _ = writeln!(
            out,
            "<meta http-equiv=\"refresh\" content=\"{refresh_secs}\">"
        );
    }
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(
        out,
        "<style>\n{STYLE}{}</style>\n</head>\n<body>",
        marks::style()
    );
}

/// The logout button, for a browser that logged in.
fn logout(out: &mut String, viewer: Viewer) {
    if viewer == Viewer::LoggedIn {
        out.push_str(
            "<form class=\"logout\" method=\"post\" action=\"/logout\"><button \
             type=\"submit\">Log out</button></form>\n",
        );
    }
}

/// What a panel of a job's runs, misses or alerts says in place of "none"
/// when the ledger could not be read.
const UNREAD: &str = "<p class=\"unknown\">unknown: the ledger cannot be read</p>\n";

/// The banner that says the ledger could not be read, when it could not.
fn ledger_error(out: &mut String, runs: &RecentRuns) {
    if let Some(e) = &runs.error {
        let _ = writeln!(
            out,
            "<p class=\"banner\" role=\"alert\">The ledger's runs could not be read: {}</p>",
            escape(e)
        );
    }
}

fn health_words(status: &Status) -> String {
    let attention = status.jobs.iter().filter(|j| !j.state.healthy()).count();
    match attention {
        0 => format!("{} job(s), none needs attention", status.jobs.len()),
        n => format!("{n} of {} job(s) need attention", status.jobs.len()),
    }
}

/// `t` (RFC 3339) in `tz` for people, to the second: `2025-01-02 03:04:05
/// +00:00`; `t` itself when it is no timestamp. Not escaped.
fn local(tz: &jiff::tz::TimeZone, t: &str) -> String {
    crate::times::human_in(t, tz)
}

/// `t` in `tz` for people, with its age: `<time datetime="T">2025-01-02
/// 03:04:05 +00:00</time> <span class="age">(3m ago)</span>`, neither of
/// which wraps; `t` as text when it is no timestamp. Already escaped.
fn when(tz: &jiff::tz::TimeZone, now: Timestamp, t: &str) -> String {
    let age = relative(now, t);
    if age.is_empty() {
        return escape(t);
    }
    format!(
        "<time datetime=\"{}\">{}</time> <span class=\"age\">({})</span>",
        escape(t),
        escape(&local(tz, t)),
        escape(&age)
    )
}

/// An instant without its age (an occurrence): `<time>` in `tz`.
fn instant(tz: &jiff::tz::TimeZone, t: &str) -> String {
    if t.parse::<Timestamp>().is_err() {
        return escape(t);
    }
    format!(
        "<time datetime=\"{}\">{}</time>",
        escape(t),
        escape(&local(tz, t))
    )
}

/// A fence: cut with an ellipsis when it is long, whole in its `title`.
fn fence(f: Option<u64>) -> String {
    match f {
        Some(f) => format!("<code class=\"fence\" title=\"fence {f}\">{f}</code>"),
        None => "?".to_owned(),
    }
}

/// A long text, clamped to a few lines, whole in its `title`. Already
/// escaped.
fn clamped(class: &str, text: &str) -> String {
    let t = escape(text);
    format!("<span class=\"{class} clamp\" title=\"{t}\">{t}</span>")
}

/// An alert's message, clamped as [`clamped`], each instant it names in
/// `tz` inside a `<time>` ([`instant`]), as in its `title`. Already
/// escaped.
fn message(tz: &jiff::tz::TimeZone, text: &str) -> String {
    let body: String = crate::times::pieces(text)
        .into_iter()
        .map(|p| match p {
            crate::times::Piece::Text(t) => escape(t),
            crate::times::Piece::Instant(t, _) => instant(tz, t),
        })
        .collect();
    format!(
        "<span class=\"message clamp\" title=\"{}\">{body}</span>",
        escape(&local(tz, text))
    )
}

fn ms(d: u64) -> String {
    show_duration(Duration::from_millis(d))
}

fn verdict_class(v: Option<&str>) -> &'static str {
    match v.map(str::parse) {
        Some(Ok(RunVerdict::Ok)) => "ok",
        // Stopped on purpose (a shutdown, a replacement): no failure.
        Some(Ok(RunVerdict::Interrupted | RunVerdict::Replaced)) | None => "none",
        Some(_) => "bad",
    }
}

/// Job `j`'s card: its facts, its strip of `runs`' newest runs and misses
/// (linking to its page at `page`), its recent runs as a list when
/// `list_runs`, and its recent alerts.
fn job_card(
    out: &mut String,
    j: &JobStatus,
    runs: &RecentRuns,
    page: &str,
    list_runs: bool,
    tz: &jiff::tz::TimeZone,
    now: Timestamp,
) {
    let recent = runs.runs(&j.job);
    let state = j.state;
    let name = escape(&j.job);
    let _ = writeln!(
        out,
        "<section class=\"job\" data-job=\"{name}\" data-state=\"{}\">",
        state.word()
    );
    let title = if page.is_empty() {
        name.clone()
    } else {
        format!("<a href=\"{}\">{name}</a>", escape(page))
    };
    let _ = writeln!(
        out,
        "<h2><span class=\"name\">{title}</span> <span class=\"badge\">{}</span></h2>",
        state.word()
    );
    out.push_str("<dl>\n");
    let _ = writeln!(
        out,
        "<dt>schedule</dt><dd><code>{}</code> ({}), lock <code>{}</code></dd>",
        escape(&j.schedule),
        escape(&j.timezone),
        escape(&j.lock)
    );
    if !j.enabled {
        out.push_str("<dt>enabled</dt><dd class=\"bad\">no: this job is disabled</dd>\n");
    }
    out.push_str("<dt>last run</dt>");
    match &j.last_run {
        // Nothing the ledger keeps is known when it cannot be read.
        None if j.never_run.is_none() => {
            out.push_str("<dd class=\"last-run unknown\">unknown: the ledger cannot be read</dd>\n")
        }
        None => out.push_str("<dd class=\"last-run none\">never run</dd>\n"),
        Some(r) => {
            let verdict = r.verdict.as_deref();
            let _ = writeln!(
                out,
                "<dd class=\"last-run\"><span class=\"{}\">{}</span>{}, {} {}</dd>",
                verdict_class(verdict),
                escape(verdict.unwrap_or("running")),
                r.duration_ms
                    .map(|d| format!(" in {}", escape(&ms(d))))
                    .unwrap_or_default(),
                // Which end of the run the time is, as `status` names its
                // start.
                if r.finished.is_some() {
                    "ended"
                } else {
                    "started"
                },
                when(tz, now, r.finished.as_deref().unwrap_or(&r.started)),
            );
        }
    }
    out.push_str("<dt>next run</dt>");
    match &j.next_run {
        Some(n) => {
            let jitter = match (&j.next_occurrence, j.jitter_offset_seconds) {
                (Some(o), Some(secs)) => format!(
                    " <span class=\"jitter\">for occurrence {}, jitter offset {}</span>",
                    instant(tz, o),
                    escape(&crate::jitter::show(Duration::from_secs(secs)))
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "<dd class=\"next-run\">{}{jitter}</dd>",
                when(tz, now, n)
            );
        }
        // As `status` says it: a pause with no end has no next run.
        None if j.paused.as_ref().is_some_and(|p| p.until.is_none()) => {
            let _ = writeln!(
                out,
                "<dd class=\"next-run none\">paused, with no end (baton resume {} ends it)</dd>",
                escape(&j.job)
            );
        }
        None => out.push_str("<dd class=\"next-run none\">none</dd>\n"),
    }
    // With slots (`max_concurrent`), one line per held slot.
    let slotted = j.max_concurrent > 1 || j.holders.iter().any(|h| h.slot > j.max_concurrent);
    if slotted {
        let _ = writeln!(
            out,
            "<dt>slots</dt><dd class=\"slots\">{} of {} held</dd>",
            j.holders.len(),
            j.max_concurrent
        );
    }
    let shown: Vec<&crate::views::status::HolderStatus> = if slotted {
        j.holders.iter().collect()
    } else {
        j.holder.iter().collect()
    };
    for h in shown {
        let slot = if slotted {
            format!("slot {}, ", h.slot)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<dt>holder</dt><dd class=\"holder\" data-verdict=\"{}\">{slot}{}: pid {} on {}, \
             fence {}{}</dd>",
            escape(h.verdict),
            escape(h.verdict),
            h.pid.map_or("?".into(), |p| p.to_string()),
            escape(h.host.as_deref().unwrap_or("?")),
            fence(h.fence),
            h.since
                .as_deref()
                .map(|s| format!(", since {}", when(tz, now, s)))
                .unwrap_or_default(),
        );
    }
    if let Some(p) = &j.paused {
        let _ = writeln!(
            out,
            "<dt>paused</dt><dd class=\"pause\">since {} by {}{}{}</dd>",
            when(tz, now, &p.since),
            escape(&p.by),
            p.until
                .as_deref()
                .map(|u| format!(", until {}", when(tz, now, u)))
                .unwrap_or_default(),
            p.reason
                .as_deref()
                .map(|r| format!(": {}", clamped("reason", r)))
                .unwrap_or_default(),
        );
    }
    if let Some(o) = &j.overdue {
        let _ = writeln!(
            out,
            "<dt>overdue</dt><dd class=\"bad\">occurrence {} did not start (grace {})</dd>",
            instant(tz, &o.occurrence),
            escape(&show_duration(Duration::from_secs(o.grace_seconds)))
        );
    }
    if let (Some(true), Some(failures)) = (j.failing, j.consecutive_failures) {
        let _ = writeln!(
            out,
            "<dt>failing</dt><dd class=\"bad\">{failures} run(s) in a row failed</dd>"
        );
    }
    out.push_str("</dl>\n");
    let _ = writeln!(out, "<h3>Last {} runs and misses</h3>", strip::STRIP_MARKS);
    if runs.unread(&j.job) {
        out.push_str(UNREAD);
        if list_runs {
            out.push_str("<h3>Recent runs</h3>\n");
            out.push_str(UNREAD);
        }
    } else {
        strip::strip(out, &j.job, page, recent, runs.misses(&j.job), tz, now);
        if list_runs {
            recent_runs(out, recent, tz, now);
        }
    }
    out.push_str("<h3>Recent alerts</h3>\n");
    match j.recent_alerts.as_deref() {
        None => out.push_str(UNREAD),
        Some([]) => out.push_str("<p class=\"alerts none\">none</p>\n"),
        Some(alerts) => {
            out.push_str("<ul class=\"alerts\">\n");
            for a in alerts {
                let _ = writeln!(
                    out,
                    "<li><span class=\"bad\">{}</span> {}: {}</li>",
                    escape(&a.kind),
                    when(tz, now, &a.time),
                    message(tz, &a.message),
                );
            }
            out.push_str("</ul>\n");
        }
    }
    out.push_str("</section>\n");
}

/// The newest [`RUNS_SHOWN`] of `recent` as a list, in words.
fn recent_runs(out: &mut String, recent: &[RunView], tz: &jiff::tz::TimeZone, now: Timestamp) {
    out.push_str("<h3>Recent runs</h3>\n");
    if recent.is_empty() {
        out.push_str("<p class=\"runs none\">none</p>\n");
        return;
    }
    out.push_str("<ol class=\"runs\">\n");
    for r in recent.iter().take(RUNS_SHOWN as usize) {
        let verdict = r.verdict.as_deref();
        let _ = writeln!(
            out,
            "<li data-run=\"{}\"><span class=\"{}\">{}</span>{}, {}, {}, fence {}</li>",
            escape(&r.run_id),
            verdict_class(verdict),
            escape(verdict.unwrap_or("running")),
            r.duration_ms
                .map(|d| format!(" in {}", escape(&ms(d))))
                .unwrap_or_default(),
            if r.manual {
                "manual".to_owned()
            } else {
                format!("occurrence {}", instant(tz, &r.occurrence))
            },
            when(tz, now, &r.started),
            fence(r.fence),
        );
    }
    out.push_str("</ol>\n");
}

#[cfg(test)]
mod tests;
