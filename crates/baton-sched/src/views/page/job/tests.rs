use std::path::PathBuf;

use super::*;
use crate::text_asserts::{has, lacks};
use crate::views::page::tests::{attempt, job, miss, now, status, timed};
use baton_store::words::MissReason;

fn runs() -> RecentRuns {
    let mut timeout = timed("t1", Some("failed"), "2025-06-01T10:00:00Z", 30_000);
    timeout.attempts = vec![attempt("timeout")];
    let mut runs = RecentRuns {
        limit: JOB_RUNS,
        ..RecentRuns::default()
    };
    runs.by_job.insert(
        "a".into(),
        vec![
            timed("r3", Some("ok"), "2025-06-01T11:00:00Z", 120_000),
            timeout,
            timed("r1", Some("lease-lost"), "2025-06-01T09:00:00Z", 60_000),
        ],
    );
    runs.missed.insert(
        "a".into(),
        vec![miss(4, MissReason::Paused, "2025-06-01T08:00:00Z")],
    );
    runs
}

fn tail(lines: &[&str]) -> LastLog {
    LastLog::Read {
        run: "r3".into(),
        tail: Tail {
            path: PathBuf::from("/state/logs/a_2025_06_01.log"),
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
            cut: false,
        },
    }
}

fn page_of(runs: &RecentRuns, log: &LastLog) -> String {
    render(
        &status(vec![job("a")]),
        "a",
        runs,
        log,
        now(),
        5,
        Viewer::Anyone,
    )
}

#[test]
fn a_jobs_page_has_its_card_chart_runs_misses_and_log() {
    let html = page_of(&runs(), &tail(&["=== start", "copied 3 files"]));
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    has(&html, "<title>baton: a, ok</title>");
    has(&html, "<a href=\"../\">All jobs</a>");
    assert_eq!(
        html.matches("<section class=\"job\" data-job=\"a\"")
            .count(),
        1
    );
    // The strip links to rows of this page; the card lists no runs in words.
    has(&html, "href=\"#run-r3\"><title>ok, started");
    lacks(&html, "<ol class=\"runs\">");
    has(&html, "<h2>Runs <span class=\"none\">(3)</span></h2>");
    // One row per run, newest first, each the target of its marks' links.
    let rows: Vec<&str> = html
        .split("<tr id=\"run-")
        .skip(1)
        .map(|r| r.split('"').next().unwrap())
        .collect();
    assert_eq!(rows, ["r3", "t1", "r1"]);
    has(&html, "data-kind=\"timeout\" title=\"run t1\"");
    has(
        &html,
        "<td data-label=\"verdict\"><span><span class=\"swatch k-timeout\"></span>failed (timeout)</span></td>",
    );
    has(
        &html,
        "<details><summary>1</summary><ul><li>step main attempt 1: timeout (signal 15, 1s)</li></ul></details>",
    );
    has(&html, "<td data-label=\"duration\"><span>2m</span></td>");
    // The chart: a point per run, each linked to its row.
    assert_eq!(html.matches("<a class=\"point\"").count(), 3);
    has(&html, "<span>top line: 2m, middle line: 1m</span>");
    // The misses, with their reasons.
    has(&html, "<tr id=\"missed-4\" data-reason=\"paused\"");
    has(
        &html,
        "<span class=\"swatch k-missed\"></span>paused: the lock was held</span></td>",
    );
    // The log, whole.
    has(
        &html,
        "The output of run <code>r3</code>, from <code>/state/logs/a_2025_06_01.log</code>:",
    );
    has(
        &html,
        "<pre class=\"log\">=== start\ncopied 3 files\n</pre>",
    );
    lacks(&html, "<script");
    assert_eq!(
        html,
        page_of(&runs(), &tail(&["=== start", "copied 3 files"])),
        "pure"
    );
}

#[test]
fn a_log_is_escaped_and_its_control_characters_replaced() {
    let html = page_of(
        &runs(),
        &tail(&["<script>alert(1)</script>", "\u{1b}[31mred"]),
    );
    lacks(&html, "<script");
    has(
        &html,
        "&lt;script&gt;alert(1)&lt;/script&gt;\n\u{fffd}[31mred\n",
    );
    let cut = LastLog::Read {
        run: "r3".into(),
        tail: Tail {
            path: PathBuf::from("/l"),
            lines: vec!["x".into(); 50],
            cut: true,
        },
    };
    has(
        &page_of(&runs(), &cut),
        "The last 50 lines of the output of run",
    );
    let failed = LastLog::Failed("/state/logs/a.log is a symbolic link <b>".into());
    has(
        &page_of(&runs(), &failed),
        "The log could not be read: /state/logs/a.log is a symbolic link &lt;b&gt;</p>",
    );
    has(
        &page_of(&RecentRuns::default(), &LastLog::None),
        "no log of a run",
    );
    has(
        &page_of(&runs(), &LastLog::NotFound("r<1>".into())),
        "no output of run <code>r&lt;1&gt;</code> in the newest 256 KiB of the job's logs",
    );
}

#[test]
fn a_job_without_runs_says_so_in_every_part() {
    let html = page_of(&RecentRuns::default(), &LastLog::None);
    has(&html, "<p class=\"runs none\">none</p>");
    has(&html, "<p class=\"misses none\">none</p>");
    has(&html, "<p class=\"strip-none none\">no runs yet</p>");
    has(
        &html,
        "<div class=\"panel durations\">\n<h2>Duration over time</h2>\n<p class=\"none\">no runs yet</p>",
    );
}

#[test]
fn an_unknown_job_gets_a_page_that_says_so_escaped() {
    let html = render(
        &status(vec![job("a")]),
        "<b>nope</b>",
        &RecentRuns::default(),
        &LastLog::None,
        now(),
        5,
        Viewer::Anyone,
    );
    assert_eq!(html, not_found("<b>nope</b>"));
    has(
        &html,
        "<h1>No job named <code>&lt;b&gt;nope&lt;/b&gt;</code></h1>",
    );
    lacks(&html, "<b>");
    lacks(&html, "http-equiv");
}
