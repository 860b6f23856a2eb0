use super::*;
use crate::text_asserts::{has, lacks};
use crate::views::history::RunView;
use crate::views::job_state::JobState;
use crate::views::status::{
    AlertSummary, HolderStatus, JobStatus, MissedStatus, Overdue, PauseStatus, RunSummary, Status,
};
use baton_store::ledger::MissedRow;

const NOW: &str = "2025-06-01T12:00:00Z";

pub(super) fn now() -> Timestamp {
    NOW.parse().unwrap()
}

pub(super) fn job(name: &str) -> JobStatus {
    JobStatus {
        declared_by: None,
        job: name.into(),
        enabled: true,
        in_flight: false,
        run_started: None,
        overrunning: false,
        state: JobState::Ok,
        schedule: "*/5 * * * *".into(),
        timezone: "UTC".into(),
        lock: name.into(),
        next_run: Some("2025-06-01T12:05:00+00:00".into()),
        next_run_in_seconds: Some(300),
        next_occurrence: None,
        jitter_offset_seconds: None,
        last_run: Some(RunSummary {
            run_id: format!("{name}-1"),
            occurrence: "2025-06-01T11:55:00Z".into(),
            started: "2025-06-01T11:55:00Z".into(),
            finished: Some("2025-06-01T11:57:00Z".into()),
            verdict: Some("ok".into()),
            duration_ms: Some(120_000),
            exit_code: Some(0),
        }),
        last_attempt: Some("2025-06-01T11:55:00Z".into()),
        last_success: Some("2025-06-01T11:57:00Z".into()),
        last_failure: None,
        consecutive_failures: Some(0),
        steps: Vec::new(),
        holder: None,
        max_concurrent: 1,
        holders: Vec::new(),
        never_run: Some(false),
        overdue: None,
        failing: Some(false),
        crashed: Some(false),
        paused: None,
        missed: Some(MissedStatus::default()),
        queued: Some(Vec::new()),
        watermark: None,
        recent_alerts: Some(Vec::new()),
        log: format!("/state/logs/{name}.log"),
    }
}

pub(super) fn status(jobs: Vec<JobStatus>) -> Status {
    Status {
        config: "/etc/baton.toml".into(),
        enabled: true,
        enabled_source: "default".into(),
        timezone: "Europe/Paris".into(),
        state_dir: "/state".into(),
        logs: "/state/logs".into(),
        now: NOW.into(),
        healthy: true,
        jobs,
        unconfigured_runs: Vec::new(),
        store: None,
        error: None,
        ledger_newer: false,
    }
}

/// The page of `jobs`, without runs, refreshed every 5 seconds.
fn page(jobs: Vec<JobStatus>) -> String {
    render(&status(jobs), &RecentRuns::default(), now(), 5)
}

fn alert(time: &str, kind: &str, message: &str) -> AlertSummary {
    AlertSummary {
        time: time.into(),
        kind: kind.into(),
        message: message.into(),
    }
}

fn holder(verdict: &'static str) -> HolderStatus {
    HolderStatus {
        pid: Some(4242),
        host: Some("db-1".into()),
        fence: Some(17),
        run_id: Some("r-17".into()),
        since: Some("2025-06-01T11:59:00Z".into()),
        verdict,
        slot: 1,
    }
}

fn pause() -> PauseStatus {
    PauseStatus {
        since: "2025-06-01T10:00:00Z".into(),
        until: None,
        reason: Some("migration".into()),
        by: "ops@db-1".into(),
    }
}

fn overdue() -> Overdue {
    Overdue {
        occurrence: "2025-06-01T10:00:00Z".into(),
        grace_seconds: 120,
    }
}

#[test]
fn escape_replaces_all_five_characters() {
    assert_eq!(
        escape(r#"<a href="x">Tom & 'Jerry'</a>"#),
        "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
    );
    assert_eq!(escape("plain: ünïcode"), "plain: ünïcode");
    assert_eq!(escape("&amp;"), "&amp;amp;");
}

#[test]
fn every_job_has_one_element_with_its_states_word_and_each_word_a_colour() {
    let jobs: Vec<JobStatus> = JobState::ALL
        .iter()
        .map(|&st| JobStatus {
            declared_by: None,
            state: st,
            ..job(&format!("{}-one", st.word()))
        })
        .collect();
    let s = status(jobs);
    let html = render(&s, &RecentRuns::default(), now(), 5);
    for st in JobState::ALL {
        let w = st.word();
        let tag = format!("<section class=\"job\" data-job=\"{w}-one\" data-state=\"{w}\">");
        assert_eq!(html.matches(&tag).count(), 1, "{tag} in:\n{html}");
        let badge = format!("<span class=\"badge\">{w}</span>");
        assert_eq!(html.matches(&badge).count(), 1, "{badge} in:\n{html}");
        for rule in [
            format!(".job[data-state={w}]{{border-left-color:"),
            format!(".job[data-state={w}] .badge{{background:"),
        ] {
            assert_eq!(html.matches(&rule).count(), 1, "{rule}");
        }
    }
    assert_eq!(html.matches("<section").count(), JobState::ALL.len());
    assert_eq!(html.matches("</section>").count(), JobState::ALL.len());
}

#[test]
fn the_header_counts_the_jobs_that_are_not_healthy() {
    let mut crashed = job("c");
    crashed.state = JobState::Crashed;
    let mut hung = job("h");
    hung.state = JobState::Hung;
    let mut new = job("n");
    new.state = JobState::New;
    let html = page(vec![crashed, hung, new, job("ok")]);
    has(&html, "2 of 4 job(s) need attention");
    let html = page(vec![job("ok")]);
    has(&html, "1 job(s), none needs attention");
}

#[test]
fn the_page_is_a_self_refreshing_html5_document_for_phones() {
    let html = render(&status(vec![job("a")]), &RecentRuns::default(), now(), 7);
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(html.ends_with("</html>\n"));
    has(&html, "<meta charset=\"utf-8\">");
    has(
        &html,
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">",
    );
    has(&html, "<meta http-equiv=\"refresh\" content=\"7\">");
    has(&html, "overflow-wrap:anywhere");
    assert!(!html.contains("<script"), "no JavaScript");
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "no external assets"
    );
    let html = render(&status(vec![job("a")]), &RecentRuns::default(), now(), 0);
    assert!(!html.contains("http-equiv"), "0 turns the refresh off");
}

#[test]
fn the_heading_says_whether_jobs_may_run_and_the_zone() {
    let mut s = status(vec![job("a")]);
    let html = render(&s, &RecentRuns::default(), now(), 5);
    has(
        &html,
        "<h1 data-enabled=\"true\">baton: <span class=\"ok\">enabled</span>, Europe/Paris</h1>",
    );
    s.enabled = false;
    s.enabled_source = "BATON_ENABLED=0 (environment)".into();
    let html = render(&s, &RecentRuns::default(), now(), 5);
    has(
        &html,
        "<h1 data-enabled=\"false\">baton: <span class=\"bad\">disabled</span>",
    );
    has(
        &html,
        "the kill switch is off (BATON_ENABLED=0 (environment))",
    );
}

#[test]
fn every_string_is_escaped() {
    let evil = "<b>\"x\" & 'y'</b>";
    let mut j = job(evil);
    j.schedule = evil.into();
    j.lock = evil.into();
    j.holder = Some(HolderStatus {
        host: Some(evil.into()),
        ..holder("live")
    });
    j.paused = Some(PauseStatus {
        reason: Some(evil.into()),
        by: evil.into(),
        ..pause()
    });
    j.recent_alerts = Some(vec![alert(NOW, evil, evil)]);
    if let Some(r) = &mut j.last_run {
        r.verdict = Some(evil.into());
    }
    let mut s = status(vec![j]);
    s.config = evil.into();
    s.timezone = evil.into();
    let mut runs = RecentRuns {
        error: Some(evil.into()),
        ..RecentRuns::default()
    };
    runs.by_job.insert(evil.into(), vec![run(evil, Some(evil))]);
    let html = render(&s, &runs, now(), 5);
    lacks(&html, "<b>");
    lacks(&html, "'y'");
    let escaped = "&lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;";
    // Name (twice), schedule, lock, verdict, host, by, reason, alert kind and
    // message, config, zone, ledger error, run id and verdict of the run.
    assert!(html.matches(escaped).count() >= 15, "{html}");
    has(&html, &format!("data-job=\"{escaped}\""));
}

pub(super) fn run(id: &str, verdict: Option<&str>) -> RunView {
    RunView {
        run_id: id.into(),
        job: "a".into(),
        occurrence: "2025-06-01T11:50:00Z".into(),
        manual: false,
        fence: Some(3),
        host: Some("db-1".into()),
        pid: Some(9),
        started: "2025-06-01T11:50:00Z".into(),
        finished: verdict.map(|_| "2025-06-01T11:50:03Z".into()),
        duration_ms: verdict.map(|_| 3000),
        verdict: verdict.map(str::to_owned),
        exit_code: verdict.map(|_| 0),
        attempts: Vec::new(),
    }
}

#[test]
fn a_card_shows_last_run_next_run_holder_runs_and_alerts() {
    let mut j = job("a");
    j.holder = Some(holder("live"));
    j.recent_alerts = Some(vec![alert("2025-06-01T11:58:00Z", "failed", "exit 3")]);
    let mut runs = RecentRuns::default();
    runs.by_job.insert(
        "a".into(),
        (0..8).map(|i| run(&format!("r{i}"), Some("ok"))).collect(),
    );
    let html = render(&status(vec![j]), &runs, now(), 5);
    has(
        &html,
        "<dd class=\"last-run\"><span class=\"ok\">ok</span> in 2m, ended <time \
             datetime=\"2025-06-01T11:57:00Z\">2025-06-01 13:57:00 +02:00</time> <span \
             class=\"age\">(3m ago)</span></dd>",
    );
    has(&html, "<span class=\"age\">(in 5m)</span>");
    has(
        &html,
        "live: pid 4242 on db-1, fence <code class=\"fence\" title=\"fence 17\">17</code>, \
             since",
    );
    assert_eq!(html.matches("<li data-run=").count(), RUNS_SHOWN as usize);
    has(&html, "failed</span> <time");
    has(
        &html,
        ": <span class=\"message clamp\" title=\"exit 3\">exit 3</span></li>",
    );
}

#[test]
fn a_card_of_a_job_with_slots_shows_each_slot_s_holder() {
    let mut j = job("a");
    j.max_concurrent = 3;
    j.holders = vec![
        HolderStatus {
            slot: 1,
            ..holder("live")
        },
        HolderStatus {
            slot: 3,
            pid: Some(77),
            ..holder("hung")
        },
    ];
    j.holder = j.holders.first().cloned();
    let html = render(&status(vec![j]), &RecentRuns::default(), now(), 5);
    has(&html, "<dd class=\"slots\">2 of 3 held</dd>");
    has(&html, "slot 1, live: pid 4242 on db-1");
    has(&html, "slot 3, hung: pid 77 on db-1");
    assert_eq!(html.matches("<dt>holder</dt>").count(), 2, "{html}");
}

#[test]
fn a_job_without_runs_says_so() {
    let mut j = job("fresh");
    j.last_run = None;
    j.never_run = Some(true);
    j.next_run = None;
    let html = page(vec![j]);
    has(&html, "<dd class=\"last-run none\">never run</dd>");
    has(&html, "<dd class=\"next-run none\">none</dd>");
    has(&html, "<p class=\"runs none\">none</p>");
    has(&html, "<p class=\"alerts none\">none</p>");
}

/// A ledger that cannot be read: nothing it keeps is shown as "never run"
/// or "none"; the job's runs, misses and alerts are unknown, and so is
/// whether it is failing.
#[test]
fn a_ledger_that_cannot_be_read_leaves_what_it_keeps_unknown() {
    let mut j = job("x");
    j.state = JobState::Unknown;
    j.last_run = None;
    j.never_run = None;
    j.failing = None;
    j.consecutive_failures = None;
    j.crashed = None;
    j.missed = None;
    j.queued = None;
    j.recent_alerts = None;
    let mut s = status(vec![j]);
    s.error = Some("refusing to open the ledger".into());
    let runs = RecentRuns {
        error: s.error.clone(),
        ..RecentRuns::default()
    };
    let html = render(&s, &runs, now(), 5);
    has(
        &html,
        "<dd class=\"last-run unknown\">unknown: the ledger cannot be read</dd>",
    );
    assert_eq!(html.matches(UNREAD).count(), 3, "{html}");
    for none in [
        "never run",
        "no runs yet",
        "class=\"runs none\"",
        "class=\"alerts none\"",
    ] {
        lacks(&html, none);
    }
    let page = job::render(
        &s,
        "x",
        &runs,
        &job::LastLog::None,
        now(),
        5,
        Viewer::Anyone,
    );
    assert_eq!(page.matches(UNREAD).count(), 5, "{page}");
    lacks(&page, "no runs yet");
}

#[test]
fn rendering_is_pure() {
    let s = status(vec![job("a"), job("b")]);
    let runs = RecentRuns::default();
    assert_eq!(render(&s, &runs, now(), 5), render(&s, &runs, now(), 5));
}

#[test]
fn an_overdue_card_names_the_occurrence_that_did_not_start() {
    let mut j = job("late");
    j.state = JobState::Overdue;
    j.overdue = Some(overdue());
    let html = page(vec![j]);
    has(
        &html,
        "<dt>overdue</dt><dd class=\"bad\">occurrence <time datetime=\"2025-06-01T10:00:00Z\">2025-06-01 12:00:00 +02:00</time> did not start (grace 2m)</dd>",
    );
}

#[test]
fn jobs_that_need_attention_come_first_then_the_rest_each_by_name() {
    let mut zfail = job("z-failing");
    zfail.failing = Some(true);
    zfail.state = JobState::Failing;
    let mut late = job("m-late");
    late.overdue = Some(overdue());
    late.state = JobState::Overdue;
    let mut paused = job("b-paused");
    paused.paused = Some(pause());
    paused.state = JobState::Paused;
    let s = status(vec![job("a-ok"), paused, late, job("y-ok"), zfail]);
    let html = render(&s, &RecentRuns::default(), now(), 5);
    let order: Vec<&str> = html
        .split("<section class=\"job\" data-job=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap())
        .collect();
    assert_eq!(order, ["m-late", "z-failing", "a-ok", "b-paused", "y-ok"]);
    has(&html, "<title>baton: 2 of 5 job(s) need attention</title>");
}

#[test]
fn every_time_is_in_the_pages_zone() {
    let mut j = job("a");
    j.timezone = "America/New_York".into();
    j.holder = Some(holder("live"));
    j.paused = Some(PauseStatus {
        until: Some("2025-06-01T14:00:00Z".into()),
        ..pause()
    });
    j.overdue = Some(overdue());
    // An alert's message names instants as the ledger keeps them, in UTC.
    j.recent_alerts = Some(vec![alert(
        "2025-06-01T11:58:00Z",
        "missed",
        "a: 3 occurrence(s) missed: 3 superseded by a later occurrence \
                  (2025-06-01T09:00:00Z to 2025-06-01T10:00:00Z); 2025-06-01T11:00:00Z runs now",
    )]);
    let mut runs = RecentRuns::default();
    runs.by_job.insert("a".into(), vec![run("r1", Some("ok"))]);
    let html = render(&status(vec![j]), &runs, now(), 5);
    let times: Vec<&str> = html
        .split("<time ")
        .skip(1)
        .map(|rest| rest.split('>').nth(1).unwrap().trim_end_matches("</time"))
        .collect();
    // Read at, last run, next run, holder since, pause since and until,
    // overdue occurrence, the run's occurrence and start, the alert and the
    // three instants its message names.
    assert_eq!(times.len(), 13, "{times:?}\n{html}");
    for t in &times {
        assert!(
            t.ends_with(" +02:00"),
            "{t} is not in Europe/Paris:\n{html}"
        );
    }
    has(&html, ">2025-06-01 12:00:00 +02:00</time> did not start");
    has(&html, "times in Europe/Paris");
    // The message's whole text, in its title, too.
    has(
        &html,
        "title=\"a: 3 occurrence(s) missed: 3 superseded by a later occurrence \
             (2025-06-01 11:00:00 +02:00 to 2025-06-01 12:00:00 +02:00); \
             2025-06-01 13:00:00 +02:00 runs now\"",
    );
    has(
        &html,
        "<time datetime=\"2025-06-01T11:00:00Z\">2025-06-01 13:00:00 +02:00</time> runs now",
    );
    // The job's own zone is still named beside its schedule.
    has(&html, "(America/New_York)");
}

#[test]
fn long_texts_are_clamped_with_the_whole_text_in_their_title() {
    let long = format!("exit 3: {}", "no-such-file-".repeat(40));
    let mut j = job("a");
    j.recent_alerts = Some(vec![alert("2025-06-01T11:58:00Z", "failed", &long)]);
    j.paused = Some(PauseStatus {
        reason: Some(long.clone()),
        ..pause()
    });
    let mut runs = RecentRuns::default();
    let mut r = run("r1", Some("ok"));
    r.fence = Some(u64::MAX);
    runs.by_job.insert("a".into(), vec![r]);
    let html = render(&status(vec![j]), &runs, now(), 5);
    has(
        &html,
        &format!("<span class=\"message clamp\" title=\"{long}\">{long}</span>"),
    );
    has(
        &html,
        &format!("<span class=\"reason clamp\" title=\"{long}\">{long}</span>"),
    );
    let max = u64::MAX;
    has(
        &html,
        &format!("<code class=\"fence\" title=\"fence {max}\">{max}</code>"),
    );
    has(&html, "-webkit-line-clamp:3");
    has(&html, "time,.age{white-space:nowrap}");
}

#[test]
fn only_a_logged_in_browser_is_offered_a_logout() {
    let s = status(vec![job("a")]);
    let runs = RecentRuns::default();
    let logout = "<form class=\"logout\" method=\"post\" action=\"/logout\">";
    assert!(!render(&s, &runs, now(), 5).contains(logout));
    let html = render_for(&s, &runs, now(), 5, Viewer::LoggedIn);
    assert_eq!(html.matches(logout).count(), 1, "{html}");
    lacks(&html, "<script");
}

pub(super) fn timed(id: &str, verdict: Option<&str>, started: &str, ms: u64) -> RunView {
    let start: Timestamp = started.parse().unwrap();
    RunView {
        started: start.to_string(),
        occurrence: start.to_string(),
        finished: verdict
            .map(|_| (start + jiff::SignedDuration::from_millis(ms as i64)).to_string()),
        duration_ms: verdict.map(|_| ms),
        ..run(id, verdict)
    }
}

pub(super) fn attempt(outcome: &str) -> crate::views::history::AttemptView {
    crate::views::history::AttemptView {
        step: "main".into(),
        kind: "step".into(),
        attempt: 1,
        started: "2025-06-01T11:50:00Z".into(),
        duration_ms: 1000,
        exit_code: None,
        signal: Some(15),
        outcome: outcome.into(),
    }
}

pub(super) fn miss(id: i64, reason: baton_store::words::MissReason, last: &str) -> MissedRow {
    let last: Timestamp = last.parse().unwrap();
    MissedRow {
        id,
        job: "a".into(),
        reason,
        first: last.as_second() - 600,
        last: last.as_second(),
        count: 3,
        at_least: false,
        decided: last,
        updated: last,
        detail: Some("the lock was held".into()),
    }
}

/// The `data-kind` of every strip mark of `job`, in order.
fn strip_kinds(html: &str, job: &str) -> Vec<String> {
    let card = html
        .split(&format!("data-job=\"{job}\""))
        .nth(1)
        .unwrap()
        .split("</section>")
        .next()
        .unwrap();
    let strip = card.split("<svg class=\"strip\"").nth(1).unwrap_or("");
    strip
        .split("<a class=\"mark\" data-kind=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().to_owned())
        .collect()
}

#[test]
fn a_run_is_marked_by_its_verdict_and_a_timeout_by_its_last_attempt() {
    use marks::Kind;
    let kind = |v: Option<&str>, outcomes: &[&str]| {
        let mut r = run("r", v);
        r.attempts = outcomes.iter().map(|o| attempt(o)).collect();
        Kind::of_run(&r)
    };
    assert_eq!(kind(Some("ok"), &["ok"]), Kind::Ok);
    assert_eq!(kind(Some("failed"), &["failed"]), Kind::Failed);
    assert_eq!(kind(Some("failed"), &["failed", "timeout"]), Kind::Timeout);
    assert_eq!(kind(Some("failed"), &["timeout", "failed"]), Kind::Failed);
    assert_eq!(
        kind(Some("check-failed"), &["ok", "failed"]),
        Kind::CheckFailed
    );
    assert_eq!(kind(Some("lease-lost"), &[]), Kind::LeaseLost);
    assert_eq!(kind(Some("interrupted"), &[]), Kind::Interrupted);
    assert_eq!(kind(Some("abandoned"), &[]), Kind::Abandoned);
    assert_eq!(kind(Some("replaced"), &["replaced"]), Kind::Replaced);
    assert_eq!(kind(None, &[]), Kind::Running);
    // A verdict from a newer baton is no success.
    assert_eq!(kind(Some("vanished"), &[]), Kind::Failed);
    // Every kind has its colour rule and its place in the legend.
    let html = page(vec![job("a")]);
    for k in Kind::ALL {
        let w = k.word();
        assert_eq!(
            html.matches(&format!("<span class=\"swatch k-{w}\"></span>"))
                .count(),
            1,
            "{w} in the legend"
        );
        assert!(html.contains(&format!(".k-{w}{{")), "no colour for {w}");
    }
}

#[test]
fn a_strip_shows_the_newest_fifty_runs_and_misses_oldest_first_each_linked_and_titled() {
    let mut runs = RecentRuns::default();
    // 60 runs a minute apart, newest first as the ledger gives them.
    let rs: Vec<RunView> = (0..60)
        .rev()
        .map(|i| {
            let t = now() - jiff::SignedDuration::from_mins(120 - i);
            timed(
                &format!("r{i}"),
                Some("ok"),
                &t.to_string(),
                1000 * (i as u64 + 1),
            )
        })
        .collect();
    runs.by_job.insert("a".into(), rs);
    runs.missed.insert(
        "a".into(),
        vec![miss(
            7,
            baton_store::words::MissReason::Busy,
            "2025-06-01T11:59:00Z",
        )],
    );
    let html = render(&status(vec![job("a")]), &runs, now(), 5);
    let kinds = strip_kinds(&html, "a");
    assert_eq!(kinds.len(), strip::STRIP_MARKS, "{html}");
    // The miss is the newest mark: the right-most.
    assert_eq!(kinds.last().map(String::as_str), Some("missed"));
    assert!(kinds[..49].iter().all(|k| k == "ok"));
    // The oldest 11 runs are left out, the newest kept, oldest first.
    let card = html.split("id=\"timeline\"").next().unwrap();
    lacks(card, "data-run=\"r10\" href");
    let first = card.find("data-run=\"r11\" href").unwrap();
    let last = card.find("data-run=\"r59\" href").unwrap();
    assert!(first < last);
    has(
        &html,
        "href=\"jobs/a#run-r59\"><title>ok, started 2025-06-01 12:59:00 +02:00, took 1m, run r59</title>",
    );
    has(
        &html,
        "href=\"jobs/a#missed-7\"><title>missed: 3 occurrence(s), 2025-06-01 13:49:00 +02:00 to \
         2025-06-01 13:59:00 +02:00: busy (the lock was held)</title>",
    );
    has(&html, "data-kind=\"missed\" data-reason=\"busy\"");
    // The longest run reaches the top; a shorter one is lower, above the floor.
    has(
        &html,
        "class=\"bar k-ok\" x=\"481\" y=\"0.0\" width=\"8\" height=\"48.0\"",
    );
}

#[test]
fn a_strip_colours_every_verdict_and_a_running_run() {
    let mut runs = RecentRuns::default();
    let mut timeout = timed("t", Some("failed"), "2025-06-01T11:00:00Z", 5000);
    timeout.attempts = vec![attempt("timeout")];
    runs.by_job.insert(
        "a".into(),
        vec![
            timed("run", None, "2025-06-01T11:59:00Z", 0),
            timed("int", Some("interrupted"), "2025-06-01T11:50:00Z", 1000),
            timed("lost", Some("lease-lost"), "2025-06-01T11:40:00Z", 1000),
            timeout,
            timed("bad", Some("failed"), "2025-06-01T10:00:00Z", 1000),
            timed("good", Some("ok"), "2025-06-01T09:00:00Z", 1000),
        ],
    );
    let html = render(&status(vec![job("a")]), &runs, now(), 5);
    assert_eq!(
        strip_kinds(&html, "a"),
        [
            "ok",
            "failed",
            "timeout",
            "lease-lost",
            "interrupted",
            "running"
        ]
    );
    has(
        &html,
        "<title>running, started 2025-06-01 13:59:00 +02:00, 1m so far, run run</title>",
    );
    has(&html, "<title>timeout (verdict failed), started");
}

#[test]
fn a_job_without_runs_has_an_empty_strip_and_an_empty_row_in_the_timeline() {
    let html = page(vec![job("a"), job("b")]);
    assert_eq!(
        html.matches("<p class=\"strip-none none\">no runs yet</p>")
            .count(),
        2
    );
    assert_eq!(html.matches("<div class=\"tl-row\"").count(), 2);
    has(&html, "data-timeline-job=\"a\"");
    has(&html, "data-timeline-job=\"b\"");
}

#[test]
fn the_timeline_draws_each_run_of_the_last_day_where_it_ran_and_its_wait() {
    let mut runs = RecentRuns {
        limit: 3,
        ..RecentRuns::default()
    };
    // Twelve hours ago for an hour: minute 720 of 1440, 60 wide.
    let mut late = timed("late", Some("ok"), "2025-06-01T00:00:00Z", 3_600_000);
    late.occurrence = "2025-05-31T23:50:00Z".into();
    runs.by_job.insert(
        "a".into(),
        vec![
            timed("short", Some("failed"), "2025-06-01T11:00:00Z", 1000),
            late,
            timed("old", Some("ok"), "2025-05-30T00:00:00Z", 1000),
        ],
    );
    runs.by_job.insert(
        "b".into(),
        vec![
            timed("b2", Some("ok"), "2025-06-01T11:59:58Z", 1000),
            timed("b1", None, "2025-06-01T11:30:00Z", 0),
        ],
    );
    let html = render(&status(vec![job("a"), job("b")]), &runs, now(), 5);
    let timeline = html.split("id=\"timeline\"").nth(1).unwrap();
    has(
        timeline,
        "data-run=\"late\" href=\"jobs/a#run-late\"><title>ok, started 2025-06-01 02:00:00 +02:00, \
         took 1h, run late, started 10m after its occurrence</title>\
         <rect class=\"wait\" x=\"710.0\" y=\"7\" width=\"10.0\" height=\"2\"/>\
         <rect class=\"k-ok\" x=\"720.0\" y=\"2\" width=\"60.0\" height=\"12\"/></a>",
    );
    // A run of a second is still drawn, at its least width, and one that
    // just ended still ends by now.
    has(
        timeline,
        "<rect class=\"k-ok\" x=\"1432.0\" y=\"2\" width=\"8.0\" height=\"12\"/>",
    );
    has(
        timeline,
        "<rect class=\"k-failed\" x=\"1380.0\" y=\"2\" width=\"8.0\" height=\"12\"/>",
    );
    // A run older than the day is not; a running one reaches now.
    lacks(timeline, "data-run=\"old\"");
    has(
        timeline,
        "<rect class=\"k-running\" x=\"1410.0\" y=\"2\" width=\"30.0\" height=\"12\"/>",
    );
    // Job a's read reached its limit: the part before its oldest run read
    // is shaded, not shown as empty; b's was whole.
    assert_eq!(
        timeline.matches("class=\"unread\"").count(),
        0,
        "its oldest run is older than the day"
    );
    runs.by_job.get_mut("a").unwrap().pop();
    runs.by_job.get_mut("b").unwrap().pop();
    runs.limit = 2;
    let html = render(&status(vec![job("a"), job("b")]), &runs, now(), 5);
    has(
        &html,
        "<rect class=\"unread\" x=\"0\" y=\"0\" width=\"720.0\" height=\"16\"><title>runs before \
         2025-06-01 02:00:00 +02:00 not read: the page reads the newest 2 of each job</title></rect>",
    );
    assert_eq!(html.matches("class=\"unread\"").count(), 1);
}

#[test]
fn a_job_named_like_markup_injects_nothing_into_the_pictures() {
    let evil = "<script>alert('x')</script>";
    let mut runs = RecentRuns::default();
    let mut r = timed(evil, Some(evil), "2025-06-01T11:00:00Z", 1000);
    r.attempts = vec![attempt(evil)];
    r.host = Some(evil.into());
    runs.by_job.insert(evil.into(), vec![r]);
    let mut m = miss(
        1,
        baton_store::words::MissReason::Paused,
        "2025-06-01T11:30:00Z",
    );
    m.detail = Some(evil.into());
    runs.missed.insert(evil.into(), vec![m]);
    let html = render(&status(vec![job(evil)]), &runs, now(), 5);
    lacks(&html, "<script");
    has(
        &html,
        "href=\"jobs/%3Cscript%3Ealert%28%27x%27%29%3C%2Fscript%3E#run-%3Cscript",
    );
    has(
        &html,
        "data-timeline-job=\"&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;\"",
    );
}

#[test]
fn a_missed_ranges_detail_drops_its_reason_and_shows_its_instants_in_the_pages_zone() {
    let mut m = miss(
        1,
        baton_store::words::MissReason::Busy,
        "2026-12-05T08:50:00Z",
    );
    m.detail = Some(
        "busy: held by pid 7 on h, run r, fence 3, since 2026-12-05T08:47:40.457455Z, renewed \
         2026-12-05T08:49:59Z"
            .into(),
    );
    let tz = jiff::tz::TimeZone::get("Asia/Kolkata").unwrap();
    let d = super::marks::miss_detail(&m, &tz).unwrap();
    assert!(d.starts_with("held by pid 7"), "{d}");
    has(
        &d,
        "since 2026-12-05 14:17:40 +05:30, renewed 2026-12-05 14:19:59 +05:30",
    );
    lacks(&d, "08:47");
    let title = super::marks::miss_title(&m, &tz);
    lacks(&title, "busy: busy");
    lacks(&title, "T08:47");
}

#[test]
fn runs_stopped_on_purpose_are_not_coloured_as_failures() {
    assert_eq!(verdict_class(Some("ok")), "ok");
    for v in ["failed", "check-failed", "lease-lost", "abandoned"] {
        assert_eq!(verdict_class(Some(v)), "bad", "{v}");
    }
    for v in [Some("interrupted"), Some("replaced"), None] {
        assert_eq!(verdict_class(v), "none", "{v:?}");
    }
}

/// An abandoned run's length is unknown (its `duration_ms` is null): its
/// title says so, with when it was found, never "took", and the durations
/// chart leaves it out rather than plotting the time until it was found.
#[test]
fn an_abandoned_runs_length_is_unknown_on_the_page() {
    let tz = jiff::tz::TimeZone::UTC;
    let mut lost = run("lost", Some("abandoned"));
    lost.finished = Some("2025-06-01T11:50:20Z".into());
    lost.duration_ms = None;
    lost.exit_code = None;
    let title = marks::run_title(&lost, &tz, now());
    assert!(title.contains("how long it ran unknown"), "{title}");
    assert!(title.contains("found so 20s after its start"), "{title}");
    assert!(!title.contains("took"), "{title}");
    let mut ok = run("ok", Some("ok"));
    ok.started = "2025-06-01T11:40:00Z".into();
    let mut out = String::new();
    chart::chart(&mut out, &[lost, ok], &tz, now());
    assert!(out.contains("top line: 3s"), "{out}");
    assert!(out.contains("the duration of each of 1 runs"), "{out}");
    assert!(!out.contains("run lost"), "{out}");
}

#[test]
fn a_pause_with_no_end_is_the_next_run_as_status_says_it() {
    let mut j = job("a");
    j.next_run = None;
    j.paused = Some(pause());
    j.state = JobState::Paused;
    let html = render(&status(vec![j]), &RecentRuns::default(), now(), 5);
    has(
        &html,
        "<dd class=\"next-run none\">paused, with no end (baton resume a ends it)</dd>",
    );
    let mut j = job("b");
    j.next_run = None;
    let html = render(&status(vec![j]), &RecentRuns::default(), now(), 5);
    has(&html, "<dd class=\"next-run none\">none</dd>");
}

/// A run of a job removed from the configuration while it ran is on the
/// page, as `status` lists it.
#[test]
fn a_run_of_a_job_the_configuration_no_longer_names_is_on_the_page() {
    let mut st = status(Vec::new());
    st.unconfigured_runs = vec![crate::views::status::UnconfiguredRun {
        job: "gone<b>".into(),
        run_id: "r-9".into(),
        pid: 4343,
        started: "2025-06-01T11:59:00Z".into(),
    }];
    let html = render(&st, &RecentRuns::default(), now(), 5);
    has(&html, "jobs the configuration no longer names");
    has(&html, "data-run-id=\"r-9\"");
    has(
        &html,
        "<code>gone&lt;b&gt;</code>: run <code>r-9</code>, pid 4343",
    );
    lacks(&html, "gone<b>");
    // Without such a run, nothing of it.
    lacks(&page(Vec::new()), "no longer");
}
