//! One job's page (`GET /jobs/JOB`; `baton __page --job JOB` prints it):
//! its card as the status page shows it, its durations over time
//! ([`super::chart`]), its runs as a table, its missed ranges with their
//! reasons, and the end of its last run's output log.
//!
//! It keeps the status page's rules (see [`super`]): [`render`] is pure,
//! [`read`] gathers and writes nothing, every string is escaped, no
//! script, nothing from elsewhere, every time in the scheduler's zone.
//! Each run's row is `#run-ID` and each missed range's `#missed-ID`, the
//! targets of the pictures' links; the row a link points at is
//! highlighted. The log is read as every log is
//! ([`crate::state::logs::Logs::tail`]): a log that is not a file baton
//! writes is never read, and the page says why instead.

use std::fmt::Write as _;
use std::time::Duration;

use baton_lease::Clock;
use baton_store::ledger::MissedRow;
use jiff::Timestamp;

use super::marks::{Kind, miss_title};
use super::{
    RecentRuns, UNREAD, Viewer, escape, fence, head, instant, job_card, ledger_error, logout, ms,
    page_zone, when,
};
use crate::config::Config;
use crate::state::logs::Tail;
use crate::units::show_duration;
use crate::views::history::RunView;
use crate::views::status::Status;

/// How many of the job's runs (and missed ranges) its page reads.
pub const JOB_RUNS: u32 = 100;

/// How many lines of the last log its page shows at most.
pub const LOG_LINES: usize = 50;

/// The end of the job's last log, as its page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LastLog {
    /// The job has no run.
    None,
    /// No log names run `0`: it is gone (pruned), or the run started no
    /// step.
    NotFound(String),
    /// What was read, for run `run`.
    Read {
        /// The run whose output it is.
        run: String,
        /// The log's end.
        tail: Tail,
    },
    /// Why it could not be read.
    Failed(String),
    /// Not shown to this caller: a job's output may hold what its logs'
    /// mode (0600) keeps from other users, and the caller was not
    /// authenticated (a daemon's TCP caller without its token may be any
    /// local user).
    Withheld,
}

/// Whether a job's page shows the end of its last log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Log {
    /// Shown: the caller may read the job's logs.
    Shown,
    /// Withheld ([`LastLog::Withheld`]).
    Withheld,
}

/// Reads job `job` of `config` at the clock's wall time and renders its
/// page, reloading itself every `refresh_secs` seconds (0: never); `None`
/// when `config` has no such job.
///
/// Nothing is written: a state directory that does not exist yet reads as
/// "never run".
pub fn read(
    config: &Config,
    clock: &dyn Clock,
    job: &str,
    refresh_secs: u32,
    viewer: Viewer,
    shown: Log,
) -> Option<String> {
    if !config.jobs.contains_key(job) {
        return None;
    }
    let now = clock.wall();
    let status = crate::views::status::read(config, Some(job), now);
    let runs = RecentRuns::read_of(config, now, JOB_RUNS, Some(job));
    let log = match shown {
        Log::Shown => last_log(config, job, runs.runs(job)),
        Log::Withheld => LastLog::Withheld,
    };
    Some(render(&status, job, &runs, &log, now, refresh_secs, viewer))
}

/// The end of the output of `runs`' newest run (newest first, as read),
/// from the log of the day its last attempt started.
fn last_log(config: &Config, job: &str, runs: &[RunView]) -> LastLog {
    let Some(last) = runs.first() else {
        return LastLog::None;
    };
    let started = last
        .attempts
        .last()
        .map_or(last.started.as_str(), |a| a.started.as_str());
    let Ok(at) = started.parse::<Timestamp>() else {
        return LastLog::None;
    };
    let logs = crate::state::logs::Logs::new(
        &config.settings.state_dir.value,
        config.settings.timezone.value.tz.clone(),
    );
    match logs.tail(job, at, &last.run_id, LOG_LINES) {
        Ok(Some(tail)) => LastLog::Read {
            run: last.run_id.clone(),
            tail,
        },
        Ok(None) => LastLog::NotFound(last.run_id.clone()),
        Err(e) => LastLog::Failed(e.to_string()),
    }
}

/// The page of job `job` of `status` (read for it alone), with `runs`' runs
/// and missed ranges of it and its `log`, ages counted from `now`.
///
/// Pure: the same arguments give the same string.
pub fn render(
    status: &Status,
    job: &str,
    runs: &RecentRuns,
    log: &LastLog,
    now: Timestamp,
    refresh_secs: u32,
    viewer: Viewer,
) -> String {
    let Some(j) = status.jobs.iter().find(|j| j.job == job) else {
        return not_found(job);
    };
    let zone = page_zone(status);
    let mut out = String::with_capacity(16 * 1024);
    head(
        &mut out,
        &format!("baton: {job}, {}", j.state.word()),
        refresh_secs,
    );
    out.push_str("<header>\n<nav class=\"back\"><a href=\"../\">All jobs</a></nav>\n");
    let _ = writeln!(
        out,
        "<h1>baton: {}</h1>\n<p class=\"meta\">Read at {}; times in {}; config <code>{}</code>.</p>",
        escape(job),
        when(&zone, now, &status.now),
        escape(&status.timezone),
        escape(&status.config),
    );
    logout(&mut out, viewer);
    out.push_str("</header>\n<main>\n");
    ledger_error(&mut out, runs);
    out.push_str(&super::marks::legend());
    job_card(&mut out, j, runs, "", false, &zone, now);
    let shown = runs.runs(job);
    if runs.unread(job) {
        for panel in ["Duration over time", "Runs", "Missed occurrences"] {
            let _ = write!(
                out,
                "<div class=\"panel\">\n<h2>{panel}</h2>\n{UNREAD}</div>\n"
            );
        }
    } else {
        out.push_str("<div class=\"panel durations\">\n<h2>Duration over time</h2>\n");
        super::chart::chart(&mut out, shown, &zone, now);
        out.push_str("</div>\n");
        runs_table(&mut out, shown, &zone, now);
        misses_table(&mut out, runs.misses(job), &zone);
    }
    last_log_panel(&mut out, log);
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The page for a job that does not exist: what the daemon answers, with
/// `404`, for `/jobs/JOB`.
pub fn not_found(job: &str) -> String {
    let mut out = String::with_capacity(4096);
    head(&mut out, "baton: no such job", 0);
    let _ = writeln!(
        out,
        "<header>\n<nav class=\"back\"><a href=\"../\">All jobs</a></nav>\n<h1>No job named \
         <code>{}</code></h1>\n</header>\n<main>\n<p>The configuration has no such job; the \
         status page lists every job there is.</p>\n</main>\n</body>\n</html>",
        escape(job)
    );
    out
}

/// The runs as a table, one row each (`#run-ID`), newest first.
fn runs_table(out: &mut String, runs: &[RunView], tz: &jiff::tz::TimeZone, now: Timestamp) {
    let count = if runs.len() >= JOB_RUNS as usize {
        format!("the newest {}", runs.len())
    } else {
        runs.len().to_string()
    };
    let _ = writeln!(
        out,
        "<div class=\"panel\">\n<h2>Runs <span class=\"none\">({count})</span></h2>"
    );
    if runs.is_empty() {
        out.push_str("<p class=\"runs none\">none</p>\n</div>\n");
        return;
    }
    out.push_str(
        "<table class=\"runs\"><thead><tr><th>occurrence</th><th>started</th><th>duration</th>\
         <th>verdict</th><th>attempts</th><th>fence</th><th>host</th></tr></thead><tbody>\n",
    );
    for r in runs {
        let kind = Kind::of_run(r);
        let verdict = r.verdict.as_deref().unwrap_or("running");
        let _ = writeln!(
            out,
            "<tr id=\"run-{id}\" data-run=\"{id}\" data-kind=\"{k}\" title=\"run {id}\">\
             <td data-label=\"occurrence\"><span>{occ}</span></td><td data-label=\"started\"><span>{started}</span></td>\
             <td data-label=\"duration\"><span>{took}</span></td><td data-label=\"verdict\"><span>\
             <span class=\"swatch k-{k}\"></span>{verdict}{also}</span></td>\
             <td data-label=\"attempts\"><span>{attempts}</span></td><td data-label=\"fence\"><span>{fence}</span></td>\
             <td data-label=\"host\"><span>{host}</span></td></tr>",
            id = escape(&r.run_id),
            k = kind.word(),
            occ = if r.manual {
                "manual".to_owned()
            } else {
                instant(tz, &r.occurrence)
            },
            started = when(tz, now, &r.started),
            took = match (r.duration_ms, &r.verdict) {
                (Some(d), _) => escape(&ms(d)),
                // Ended, how long after its start unknown (`abandoned`).
                (None, Some(_)) => "unknown".to_owned(),
                (None, None) => "running".to_owned(),
            },
            verdict = escape(verdict),
            also = if kind.word() == verdict {
                String::new()
            } else {
                format!(" ({})", kind.word())
            },
            attempts = attempts(r),
            fence = fence(r.fence),
            host = escape(r.host.as_deref().unwrap_or("?")),
        );
    }
    out.push_str("</tbody></table>\n</div>\n");
}

/// A run's attempts: their count, each one's outcome behind it
/// (`<details>`, which opens without a script).
fn attempts(r: &RunView) -> String {
    if r.attempts.is_empty() {
        return "0".to_owned();
    }
    let mut out = format!("<details><summary>{}</summary><ul>", r.attempts.len());
    for a in &r.attempts {
        let how = match (a.exit_code, a.signal) {
            (_, Some(s)) => format!("signal {s}"),
            (Some(c), None) => format!("exit {c}"),
            (None, None) => "no exit status".into(),
        };
        let _ = write!(
            out,
            "<li>{} {} attempt {}: {} ({how}, {})</li>",
            escape(&a.kind),
            escape(&a.step),
            a.attempt,
            escape(&a.outcome),
            escape(&show_duration(Duration::from_millis(a.duration_ms)))
        );
    }
    out.push_str("</ul></details>");
    out
}

/// The missed ranges, newest first, each with its reason (`#missed-ID`).
fn misses_table(out: &mut String, misses: &[MissedRow], tz: &jiff::tz::TimeZone) {
    out.push_str("<div class=\"panel\">\n<h2>Missed occurrences</h2>\n");
    if misses.is_empty() {
        out.push_str("<p class=\"misses none\">none</p>\n</div>\n");
        return;
    }
    out.push_str(
        "<table class=\"misses\"><thead><tr><th>occurrences</th><th>count</th><th>reason</th>\
         <th>recorded</th></tr></thead><tbody>\n",
    );
    let at = |s: i64| {
        Timestamp::from_second(s).map_or_else(|_| s.to_string(), |t| instant(tz, &t.to_string()))
    };
    for m in misses {
        let span = if m.first == m.last {
            at(m.first)
        } else {
            format!("{} to {}", at(m.first), at(m.last))
        };
        let _ = writeln!(
            out,
            "<tr id=\"missed-{id}\" data-reason=\"{reason}\" title=\"{title}\"><td \
             data-label=\"occurrences\"><span>{span}</span></td><td data-label=\"count\"><span>{at_least}{count}</span></td>\
             <td data-label=\"reason\"><span><span class=\"swatch k-missed\"></span>{reason}{detail}</span></td>\
             <td data-label=\"recorded\"><span>{recorded}</span></td></tr>",
            id = m.id,
            reason = escape(&m.reason.to_string()),
            title = escape(&miss_title(m, tz)),
            at_least = if m.at_least { "at least " } else { "" },
            count = m.count,
            detail = super::marks::miss_detail(m, tz)
                .map(|d| format!(": {}", escape(&d)))
                .unwrap_or_default(),
            recorded = instant(tz, &m.decided.to_string()),
        );
    }
    out.push_str("</tbody></table>\n</div>\n");
}

/// The end of the last run's output.
fn last_log_panel(out: &mut String, log: &LastLog) {
    out.push_str("<div class=\"panel log\">\n<h2>Last log</h2>\n");
    match log {
        LastLog::None => out.push_str("<p class=\"none\">no log of a run</p>\n"),
        LastLog::NotFound(run) => {
            let _ = writeln!(
                out,
                "<p class=\"none\">no output of run <code>{}</code> in the newest {} KiB of \
                 the job's logs (they were pruned, other runs' output came after it, or the \
                 run started no step)</p>",
                escape(run),
                crate::state::logs::TAIL_BYTES / 1024
            );
        }
        LastLog::Withheld => out.push_str(
            "<p class=\"none\">A job's output is shown only to a caller the daemon trusts: \
             over its socket, or with its token ([daemon] token_file).</p>\n",
        ),
        LastLog::Failed(e) => {
            let _ = writeln!(
                out,
                "<p class=\"banner\" role=\"alert\">The log could not be read: {}</p>",
                escape(e)
            );
        }
        LastLog::Read { run, tail } => {
            let _ = writeln!(
                out,
                "<p class=\"meta\">{} output of run <code>{}</code>, from <code>{}</code>:</p>",
                if tail.cut {
                    format!("The last {} lines of the", tail.lines.len())
                } else {
                    "The".to_owned()
                },
                escape(run),
                escape(&tail.path.display().to_string()),
            );
            out.push_str("<pre class=\"log\">");
            for line in &tail.lines {
                // A control character (a terminal's colour codes) is no
                // text a page can show.
                let shown: String = line
                    .chars()
                    .map(|c| {
                        if c.is_control() && c != '\t' {
                            '\u{FFFD}'
                        } else {
                            c
                        }
                    })
                    .collect();
                out.push_str(&escape(&shown));
                out.push('\n');
            }
            out.push_str("</pre>\n");
        }
    }
    out.push_str("</div>\n");
}

#[cfg(test)]
mod tests;
