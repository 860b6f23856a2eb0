//! The status page in a real browser: real runs through the real binary,
//! the page from `baton __page`, opened from a file in headless Chromium
//! and checked through its DOM, at a desktop and a phone's width.

use std::path::PathBuf;
use std::process::Stdio;

use baton_testkit::browser::Browser;
use serde_json::json;

use crate::daemon::Daemon;
use crate::sched::Sched;
use crate::support::{BATON, code, eventually, signal, stderr, stdout};

/// `target/`, where cargo put the binary under test (so CARGO_TARGET_DIR
/// is honoured).
fn target_dir() -> PathBuf {
    let bin = PathBuf::from(BATON);
    // OK because the binary is `<target>/<profile>/baton`.
    bin.parent().and_then(|p| p.parent()).unwrap().to_owned()
}

const REASON: &str = "<b>disk swap</b> & \"ops\" 'tuesday'";

#[test]
fn the_status_page_shows_every_job_in_a_real_browser_and_fits_a_phone() {
    let s = Sched::new("");
    let marker = s.env.path("slow.started");
    // The page's zone (the scheduler's) is not UTC, and one job has another.
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"Asia/Kolkata\"\n\
         [jobs.backup]\nevery = \"1h\"\ntimezone = \"America/New_York\"\nrun = \"echo copied\"\n\
         [jobs.report]\nevery = \"1h\"\nrun = \"echo '<no & such \\\"file\\\">' >&2; exit 3\"\n\
         [jobs.vacuum]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n\
         [jobs.ingest]\nevery = \"15m\"\nrun = \"touch {}; sleep 60\"\n",
        marker.display()
    ));
    let o = s.run(&["run", "backup"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.run(&["run", "report"]);
    assert_eq!(code(&o), 1, "a failing run exits 1: {}", stderr(&o));
    let o = s.run(&["run", "vacuum"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = s.run(&["pause", "vacuum", "--reason", REASON]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let mut slow = s
        .cmd(&["run", "ingest"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the ingest run to start", || marker.exists());

    let o = s.run(&["__page", "--refresh", "3600"]);
    signal(slow.id() as i32, rustix::process::Signal::TERM);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let html = stdout(&o);
    let page = s.env.path("status.html");
    std::fs::write(&page, &html).unwrap();

    let mut b = Browser::launch();
    b.set_viewport(1100, 900, false);
    b.open(&format!("file://{}", page.display()));

    let states = b.eval(
        "Object.fromEntries([...document.querySelectorAll('[data-job]')]\
         .map(e => [e.dataset.job, e.dataset.state]))",
    );
    assert_eq!(
        states,
        json!({"backup": "ok", "report": "failing", "vacuum": "paused", "ingest": "running"}),
        "{html}"
    );
    // The job that needs attention comes first, then the rest by name.
    let order = b.eval("[...document.querySelectorAll('[data-job]')].map(e => e.dataset.job)");
    assert_eq!(
        order,
        json!(["report", "backup", "ingest", "vacuum"]),
        "{html}"
    );
    let heading = b.eval("document.querySelector('h1').textContent");
    assert_eq!(heading, json!("baton: enabled, Asia/Kolkata"));
    // Every time on the page is in the heading's zone.
    let times = b.eval("[...document.querySelectorAll('time')].map(t => t.textContent)");
    let times = times.as_array().unwrap();
    assert!(times.len() >= 8, "{times:?}");
    for t in times {
        assert!(
            t.as_str().unwrap().ends_with(" +05:30"),
            "{t} is not in Asia/Kolkata: {times:?}"
        );
    }
    assert_eq!(
        b.eval("document.querySelector('meta[http-equiv=refresh]').content"),
        json!("3600")
    );
    let holder = b.eval("document.querySelector('[data-job=ingest] .holder').textContent");
    let holder = holder.as_str().unwrap_or_default();
    assert!(
        holder.starts_with(&format!("live: pid {} on ", slow.id())) && holder.contains("fence "),
        "{holder}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('[data-job=backup] .holder').length"),
        json!(0),
        "only a running job shows a holder"
    );
    // The pause's reason arrives as text, not as markup.
    let pause = b.eval("document.querySelector('[data-job=vacuum] .pause').textContent");
    assert!(
        pause.as_str().unwrap_or_default().contains(REASON),
        "{pause}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('main b').length"),
        json!(0)
    );
    let last = b.eval("document.querySelector('[data-job=report] .last-run').textContent");
    assert!(
        last.as_str().unwrap_or_default().starts_with("failed"),
        "{last}"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('[data-job=report] .runs li').length"),
        json!(1)
    );
    let alerts = b.eval("document.querySelector('[data-job=report] .alerts').textContent");
    assert!(
        alerts.as_str().unwrap_or_default().contains("failed"),
        "{alerts}"
    );
    // An alert's text is clamped, whole in its title.
    let message = b.eval(
        "(m => [m.title, m.textContent, getComputedStyle(m).webkitLineClamp])\
         (document.querySelector('[data-job=report] .alerts .message'))",
    );
    assert_eq!(message[0], message[1], "{message}");
    assert_eq!(message[2], json!("3"), "{message}");

    b.set_viewport(375, 740, true);
    let width = b.eval("document.documentElement.scrollWidth");
    assert!(
        width.as_u64().is_some_and(|w| w <= 375),
        "the page overflows a 375 px phone: scrollWidth {width}"
    );
    let widest = b.eval(
        "Math.max(...[...document.querySelectorAll('body *')]\
         .map(e => e.getBoundingClientRect().right))",
    );
    assert!(
        widest.as_f64().is_some_and(|w| w <= 375.0),
        "an element reaches past 375 px: {widest}"
    );
    // No time breaks across lines: each is one box on one line.
    let broken = b.eval(
        "[...document.querySelectorAll('time')]\
         .filter(t => t.getClientRects().length !== 1).map(t => t.textContent)",
    );
    assert_eq!(broken, json!([]), "times broken across lines at 375 px");
    let shot = target_dir().join("status-page.png");
    b.screenshot(&shot);
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    // The README's picture is refreshed on request only, so a test run
    // leaves the source tree alone.
    if std::env::var_os("BATON_UPDATE_SCREENSHOTS").is_some() {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(&shot, docs.join("status-page.png")).unwrap();
    }
    drop(b);

    let _ = baton_testkit::wait_for_exit(&mut slow, "the ingest run to stop");
}

/// A daemon with a token, in a real browser: the page sends it to the login
/// form; the form's token opens the page through an `HttpOnly` cookie the
/// page's scripts cannot read; logging out closes it again.
#[test]
fn a_browser_logs_in_to_a_daemon_with_a_token_and_out() {
    let s = Sched::new("");
    let token = "browser-token-of-24-chars";
    let file = s.env.path("token");
    std::fs::write(&file, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    s.write(&format!(
        "[daemon]\ntoken_file = {:?}\n[jobs.main]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        file.display().to_string()
    ));
    let d = Daemon::start(&s, &[]);
    let base = format!("http://{}", d.addr);
    let mut b = Browser::launch();
    b.open(&format!("{base}/"));
    assert_eq!(b.eval("location.pathname"), json!("/login"));
    assert_eq!(
        b.eval("document.querySelectorAll('form[action=\"/login\"] input[name=token][type=password]').length"),
        json!(1)
    );
    // What the form sends, with a wrong token, then the right one.
    let submit = |b: &mut Browser, value: &str| {
        b.eval(&format!(
            "(async () => {{ const f = document.querySelector('form'); \
             f.querySelector('input[name=token]').value = {value:?}; \
             const r = await fetch(f.action, {{method: 'POST', \
             body: new URLSearchParams(new FormData(f))}}); \
             return [r.status, new URL(r.url).pathname]; }})()"
        ))
    };
    assert_eq!(submit(&mut b, "wrong"), json!([401, "/login"]));
    b.open(&format!("{base}/"));
    assert_eq!(b.eval("location.pathname"), json!("/login"));
    assert_eq!(submit(&mut b, token), json!([200, "/"]));
    assert_eq!(
        b.eval("document.cookie"),
        json!(""),
        "the cookie is not HttpOnly"
    );
    b.open(&format!("{base}/"));
    assert_eq!(b.eval("location.pathname"), json!("/"));
    assert_eq!(
        b.eval("document.querySelector('[data-job]').dataset.job"),
        json!("main")
    );
    // A change from the page's own origin, with the cookie, is refused.
    let status = b.eval(
        "fetch('/v1/jobs/main/run', {method: 'POST', headers: \
         {'Content-Type': 'application/json'}, body: '{}'}).then(r => r.status)",
    );
    assert_eq!(status, json!(401));
    // The page's button logs out.
    let after = b.eval(
        "fetch(document.querySelector('form[action=\"/logout\"]').action, {method: 'POST'})\
         .then(r => new URL(r.url).pathname)",
    );
    assert_eq!(after, json!("/login"));
    b.open(&format!("{base}/"));
    assert_eq!(b.eval("location.pathname"), json!("/login"));
}
