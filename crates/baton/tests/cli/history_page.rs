//! The history on the status page and a job's page, in a real browser: a
//! day of runs in the real ledger (of every verdict, with missed ranges and
//! a late start), real runs through the real binary on top (ok, failed,
//! timed out, interrupted, running), the pages printed by `baton __page`
//! and served by the daemon, looked at in headless Chromium at a phone's
//! width and a desktop's, and screenshots checked.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use baton_store::ledger::{Finished, Miss, NewRun, Records};
use baton_store::words::{MissReason, RunVerdict};
use baton_testkit::browser::Browser;
use jiff::{SignedDuration, Timestamp};
use serde_json::json;

use crate::daemon::Daemon;
use crate::sched::Sched;
use crate::support::{BATON, code, eventually, signal, stderr, stdout};

/// Every job of the test, in name order.
const JOBS: [&str; 6] = ["backup", "ingest", "report", "sync", "vacuum", "web"];

/// A schedule that never comes due during a test (29 February), so that
/// the daemon runs nothing of its own.
const NEVER: &str = "0 0 29 2 *";

/// What the ledger holds of a day of `sync` and `backup`, written as the
/// scheduler writes it: runs every two hours of every verdict the binary
/// cannot easily be made to reach (a lost lease, a failed check, a run
/// abandoned), missed ranges between them (one with markup in its
/// detail), and `backup` runs that overlap them, one of them late.
fn seed(state: &Path, now: Timestamp) -> Vec<(String, RunVerdict)> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(state).unwrap();
    std::fs::set_permissions(state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mut l = baton_ledger::Ledger::open(state, now).unwrap();
    l.see_jobs(&["sync", "backup"], now - SignedDuration::from_hours(30))
        .unwrap();
    let verdicts = [
        RunVerdict::Ok,
        RunVerdict::LeaseLost,
        RunVerdict::Ok,
        RunVerdict::CheckFailed,
        RunVerdict::Abandoned,
        RunVerdict::Ok,
        RunVerdict::Ok,
        RunVerdict::LeaseLost,
        RunVerdict::Ok,
        RunVerdict::Ok,
    ];
    let mut seeded = Vec::new();
    let mut n = 0;
    let mut run = |l: &mut baton_ledger::Ledger,
                   job: &str,
                   occ: Timestamp,
                   started: Timestamp,
                   took: SignedDuration,
                   verdict: RunVerdict| {
        n += 1;
        let id = format!("{n:016x}");
        l.begin_run(&NewRun {
            run_id: id.clone(),
            job: job.into(),
            occurrence: Some(occ.as_second()),
            fence: Some(1_000 + n),
            host: "db-1".into(),
            pid: 4000 + u32::try_from(n).unwrap(),
            started,
            backfill: false,
        })
        .unwrap();
        l.finish_run(
            &Finished {
                run_id: id.clone(),
                job: job.into(),
                finished: started + took,
                verdict,
                exit_code: i32::from(verdict != RunVerdict::Ok),
                success: verdict == RunVerdict::Ok,
            },
            1000,
        )
        .unwrap();
        id
    };
    let day = now - SignedDuration::from_hours(22);
    for (i, verdict) in verdicts.iter().enumerate() {
        let i = i64::try_from(i).unwrap();
        let occ = day + SignedDuration::from_hours(2 * i);
        let took = SignedDuration::from_mins(5 + 11 * (i % 5));
        let id = run(&mut l, "sync", occ, occ, took, *verdict);
        seeded.push((id, *verdict));
        if i == 4 || i == 7 {
            let (reason, detail) = if i == 4 {
                (MissReason::Busy, "the lock was held by <b>sync</b> & co")
            } else {
                (MissReason::Paused, "paused for a migration")
            };
            let first = occ + SignedDuration::from_mins(30);
            l.miss(
                &Miss {
                    job: "sync",
                    reason,
                    first: first.as_second(),
                    last: first.as_second() + 1800,
                    count: 2,
                    at_least: false,
                    detail: Some(detail),
                    streak: false,
                },
                first,
            )
            .unwrap();
        }
    }
    for i in 0..7 {
        let occ = day + SignedDuration::from_hours(3 * i) + SignedDuration::from_mins(20);
        // The fourth run waited 25 minutes for its start.
        let late = if i == 3 { 25 } else { 0 };
        run(
            &mut l,
            "backup",
            occ,
            occ + SignedDuration::from_mins(late),
            SignedDuration::from_mins(40),
            RunVerdict::Ok,
        );
    }
    l.checkpoint().unwrap();
    seeded
}

/// A PNG's width and height, from its header.
fn png_size(path: &Path) -> (u32, u32) {
    let png = std::fs::read(path).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is no PNG",
        path.display()
    );
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

/// `target/`, where cargo put the binary under test.
fn target_dir() -> PathBuf {
    // OK because the binary is `<target>/<profile>/baton`.
    PathBuf::from(BATON)
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .to_owned()
}

/// Checks that the page open in `b` fits a viewport `width` wide: the
/// document is no wider, and no element reaches past it.
fn fits(b: &mut Browser, width: u32, what: &str) {
    let scroll = b.eval("document.documentElement.scrollWidth");
    assert!(
        scroll.as_u64().is_some_and(|w| w <= u64::from(width)),
        "{what} overflows {width} px: scrollWidth {scroll}"
    );
    let widest = b.eval(
        "Math.max(...[...document.querySelectorAll('body *')]\
         .map(e => e.getBoundingClientRect().right))",
    );
    assert!(
        widest.as_f64().is_some_and(|w| w <= f64::from(width)),
        "{what}: an element reaches past {width} px: {widest}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('script').length"),
        json!(0),
        "{what} holds a script"
    );
    // Nothing is loaded from elsewhere: no resource but the page itself.
    assert_eq!(
        b.eval("performance.getEntriesByType('resource').length"),
        json!(0),
        "{what} loads something"
    );
}

/// The screenshots the README shows, refreshed on request only
/// (`BATON_UPDATE_SCREENSHOTS`), so a test run leaves the source tree alone.
const IN_README: [&str; 2] = ["history-desktop", "job-page-phone"];

/// Takes a screenshot of the page open in `b` (viewport `width` wide) to
/// `target/NAME.png` and checks its size: the viewport's width, the
/// document's height. With `BATON_UPDATE_SCREENSHOTS`, copies those the
/// README shows to `docs/`.
fn screenshot(b: &mut Browser, width: u32, name: &str) {
    let shot = target_dir().join(format!("{name}.png"));
    b.screenshot(&shot);
    let height = b.eval("document.documentElement.scrollHeight");
    let (w, h) = png_size(&shot);
    assert_eq!(w, width, "{name}.png is {w} px wide");
    let height = height.as_u64().unwrap();
    assert!(
        u64::from(h).abs_diff(height) <= 1,
        "{name}.png is {h} px high, the page {height}"
    );
    if std::env::var_os("BATON_UPDATE_SCREENSHOTS").is_some() && IN_README.contains(&name) {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(&shot, docs.join(format!("{name}.png"))).unwrap();
    }
}

#[test]
fn the_history_shows_every_job_and_verdict_in_a_real_browser_on_a_phone_and_a_desktop() {
    let s = Sched::new("");
    let started = s.env.path("ingest.started");
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"Europe/Paris\"\n\
         [jobs.backup]\nschedule = \"{NEVER}\"\nrun = \"echo copied\"\n\
         [jobs.sync]\nschedule = \"{NEVER}\"\nrun = \"true\"\n\
         [jobs.report]\nschedule = \"{NEVER}\"\n\
         run = \"echo '<script>alert(1)</script> & more'; exit 3\"\n\
         [jobs.vacuum]\nschedule = \"{NEVER}\"\ntimeout = \"1s\"\nrun = \"sleep 30\"\n\
         [jobs.ingest]\nschedule = \"{NEVER}\"\nrun = \"touch {}; sleep 60\"\n\
         [jobs.web]\nschedule = \"{NEVER}\"\nrun = \"true\"\n",
        started.display()
    ));
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    let seeded = seed(&s.env.state(), now);

    // Real runs: ok, failed, timed out, interrupted, and one left running.
    assert_eq!(code(&s.run(&["run", "backup"])), 0);
    let o = s.run(&["run", "report"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let o = s.run(&["run", "vacuum"]);
    assert_ne!(code(&o), 0, "a run past its timeout fails: {}", stderr(&o));
    let ingest = |s: &Sched| {
        let child = s
            .cmd(&["run", "ingest"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        eventually("the ingest run to start", || started.exists());
        std::fs::remove_file(&started).unwrap();
        child
    };
    let mut first = ingest(&s);
    signal(first.id() as i32, rustix::process::Signal::TERM);
    let _ = baton_testkit::wait_for_exit(&mut first, "the interrupted run to stop");
    let mut running = ingest(&s);

    let site = s.env.path("site");
    std::fs::create_dir_all(&site).unwrap();
    let print = |args: &[&str], file: &str| {
        let o = s.run(args);
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        let path = site.join(file);
        std::fs::write(&path, stdout(&o)).unwrap();
        format!("file://{}", path.display())
    };
    let home = print(&["__page", "--refresh", "0"], "index.html");
    let sync = print(&["__page", "--refresh", "0", "--job", "sync"], "sync.html");
    let report = print(
        &["__page", "--refresh", "0", "--job", "report"],
        "report.html",
    );
    let o = s.run(&["__page", "--job", "nope"]);
    assert_eq!(code(&o), 2, "an unknown job is a usage error");
    assert!(
        stderr(&o).contains("no job named \"nope\"") && stderr(&o).contains("sync"),
        "{}",
        stderr(&o)
    );

    let mut b = Browser::launch();
    for (width, height, mobile, name) in [(390, 844, true, "phone"), (1280, 900, false, "desktop")]
    {
        b.set_viewport(width, height, mobile);
        b.open(&home);
        fits(&mut b, width, &format!("the status page on a {name}"));
        // Every job has its card, its strip and its row in the timeline.
        let cards =
            b.eval("[...document.querySelectorAll('[data-job]')].map(e => e.dataset.job).sort()");
        assert_eq!(cards, json!(JOBS), "{name}");
        let rows = b.eval(
            "[...document.querySelectorAll('[data-timeline-job]')].map(e => e.dataset.timelineJob).sort()",
        );
        assert_eq!(rows, json!(JOBS), "{name}");
        let visible = b.eval(
            "[...document.querySelectorAll('[data-timeline-job] .tl-bars, [data-job] .strip')]\
             .filter(e => e.getBoundingClientRect().width < 100).length",
        );
        assert_eq!(visible, json!(0), "{name}: a picture too narrow to read");
        // Each strip holds its runs and misses, one mark each, each titled.
        let marks = b.eval(
            "Object.fromEntries([...document.querySelectorAll('[data-job]')].map(e => \
             [e.dataset.job, [...e.querySelectorAll('.strip a.mark')].map(a => a.dataset.kind)]))",
        );
        assert_eq!(
            marks["sync"].as_array().unwrap().len(),
            seeded.len() + 2,
            "{marks}"
        );
        assert_eq!(marks["backup"].as_array().unwrap().len(), 8, "{marks}");
        assert_eq!(marks["report"], json!(["failed"]));
        assert_eq!(marks["vacuum"], json!(["timeout"]));
        assert_eq!(marks["ingest"], json!(["interrupted", "running"]));
        assert_eq!(marks["web"], json!([]));
        let kinds: std::collections::BTreeSet<&str> = marks
            .as_object()
            .unwrap()
            .values()
            .flat_map(|v| v.as_array().unwrap().iter().map(|k| k.as_str().unwrap()))
            .collect();
        let every = [
            "abandoned",
            "check-failed",
            "failed",
            "interrupted",
            "lease-lost",
            "missed",
            "ok",
            "running",
            "timeout",
        ];
        assert_eq!(kinds.into_iter().collect::<Vec<_>>(), every, "{name}");
        let untitled = b.eval(
            "[...document.querySelectorAll('a.mark, a.span')]\
             .filter(a => !(a.querySelector('title')?.textContent ?? '')).length",
        );
        assert_eq!(untitled, json!(0));
        // Each kind has its own colour, as the legend shows it.
        let fills = b.eval(
            "Object.fromEntries([...document.querySelectorAll('.strip a.mark .bar')]\
             .map(r => [r.closest('a').dataset.kind, getComputedStyle(r).fill]))",
        );
        let distinct: std::collections::BTreeSet<&str> = fills
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(distinct.len(), every.len(), "{fills}");
        // A missed range says why in its title, its markup as text.
        let busy = b.eval(
            "document.querySelector('[data-job=sync] a.mark[data-reason=busy] title').textContent",
        );
        let busy = busy.as_str().unwrap();
        assert!(
            busy.contains("busy (the lock was held by <b>sync</b> & co)"),
            "{busy}"
        );
        // A longer run's mark is taller.
        let heights = b.eval(
            "[...document.querySelectorAll('[data-job=sync] a.mark[data-kind=ok] .bar')]\
             .map(r => r.getBoundingClientRect().height)",
        );
        let heights: Vec<f64> = heights
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_f64().unwrap())
            .collect();
        let (low, high) = heights
            .iter()
            .fold((f64::MAX, 0.0_f64), |(l, h), x| (l.min(*x), h.max(*x)));
        assert!(high > low * 1.5, "{name}: {heights:?}");
        // The late backup shows its wait; sync and backup overlap in time.
        assert_eq!(
            b.eval("document.querySelectorAll('[data-timeline-job=backup] rect.wait').length"),
            json!(1)
        );
        let overlap = b.eval(
            "(() => { const spans = j => [...document.querySelectorAll(\
             `[data-timeline-job=${j}] a.span rect:not(.wait)`)].map(r => r.getBoundingClientRect()); \
             const s = spans('sync'), k = spans('backup'); \
             return s.some(a => k.some(c => a.left < c.right && c.left < a.right)); })()",
        );
        assert_eq!(overlap, json!(true), "{name}: no overlap drawn");
        screenshot(&mut b, width, &format!("history-{name}"));

        b.open(&sync);
        fits(&mut b, width, &format!("sync's page on a {name}"));
        let rows = b.eval("[...document.querySelectorAll('table.runs tbody tr')].map(r => r.id)");
        let want: Vec<String> = seeded
            .iter()
            .rev()
            .map(|(id, _)| format!("run-{id}"))
            .collect();
        assert_eq!(rows, json!(want), "{name}");
        assert_eq!(
            b.eval("document.querySelectorAll('table.misses tbody tr').length"),
            json!(2)
        );
        let reasons = b.eval(
            "[...document.querySelectorAll('table.misses tbody tr')].map(r => r.dataset.reason)",
        );
        assert_eq!(reasons, json!(["paused", "busy"]));
        // An abandoned run's length is unknown: it has no point.
        assert_eq!(
            b.eval("document.querySelectorAll('svg.chart a.point').length"),
            json!(
                seeded
                    .iter()
                    .filter(|(_, v)| *v != RunVerdict::Abandoned)
                    .count()
            )
        );
        // Every time is in the scheduler's zone.
        let times = b.eval("[...document.querySelectorAll('time')].map(t => t.textContent)");
        for t in times.as_array().unwrap() {
            let t = t.as_str().unwrap();
            assert!(t.ends_with(" +01:00") || t.ends_with(" +02:00"), "{t}");
        }
        // A tap on a mark finds its row on the same page.
        let (lost, _) = seeded
            .iter()
            .find(|(_, v)| *v == RunVerdict::LeaseLost)
            .unwrap();
        let at = b.eval(&format!(
            "(() => {{ const r = document.querySelector('.strip a.mark[data-run=\"{lost}\"] .hit'); \
             r.scrollIntoView({{block: 'center'}}); const b = r.getBoundingClientRect(); \
             return [b.left + b.width / 2, b.top + b.height / 2]; }})()"
        ));
        b.click(at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
        eventually("the tapped run's row to be the target", || {
            b.eval("document.querySelector(':target')?.id ?? null") == json!(format!("run-{lost}"))
        });
        screenshot(&mut b, width, &format!("job-page-{name}"));

        b.open(&report);
        fits(&mut b, width, &format!("report's page on a {name}"));
        let log = b.eval("document.querySelector('pre.log').textContent");
        assert!(
            log.as_str()
                .unwrap()
                .contains("<script>alert(1)</script> & more"),
            "{log}"
        );
    }

    // Served: `/jobs/JOB` as the page is, a job that is not there a 404
    // page, and a tap on the status page's mark opens the job's page at
    // its row.
    let d = Daemon::start(&s, &[]);
    let r = d.get("/jobs/sync");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    );
    assert!(
        r.body.contains("<section class=\"job\" data-job=\"sync\""),
        "{}",
        r.body
    );
    let r = d.get("/jobs/nope");
    assert_eq!(r.status, 404);
    assert!(
        r.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    );
    assert!(
        r.body.contains("No job named <code>nope</code>"),
        "{}",
        r.body
    );
    let r = d.get("/jobs/%3Cb%3E");
    assert_eq!(r.status, 404);
    assert!(r.body.contains("<code>&lt;b&gt;</code>"), "{}", r.body);
    b.set_viewport(390, 844, true);
    b.open(&format!("http://{}/", d.addr));
    let (abandoned, _) = seeded
        .iter()
        .find(|(_, v)| *v == RunVerdict::Abandoned)
        .unwrap();
    let at = b.eval(&format!(
        "(() => {{ const r = document.querySelector('[data-job=sync] .strip a.mark[data-run=\"{abandoned}\"] .hit'); \
         r.scrollIntoView({{block: 'center'}}); const b = r.getBoundingClientRect(); \
         return [b.left + b.width / 2, b.top + b.height / 2]; }})()"
    ));
    b.click_to_load(at[0].as_f64().unwrap(), at[1].as_f64().unwrap());
    assert_eq!(b.eval("location.pathname"), json!("/jobs/sync"));
    assert_eq!(b.eval("location.hash"), json!(format!("#run-{abandoned}")));
    assert_eq!(
        b.eval("document.querySelector(':target')?.dataset.kind ?? null"),
        json!("abandoned")
    );
    drop(b);
    assert_eq!(d.terminate(), Some(0));

    signal(running.id() as i32, rustix::process::Signal::TERM);
    let _ = baton_testkit::wait_for_exit(&mut running, "the running ingest to stop");
}
