//! `baton status`, `baton store status`, the daemon's API and the status
//! page after a failover: a real asynchronous standby promoted once the
//! primary is killed, reached through a URL naming both servers.
//!
//! What must hold: before the failover none says anything is held back
//! (`held_back_until` null); after it, each says grants are held back
//! until the same instant (text, `--json`, `GET /v1/jobs`, the page), the
//! very one a `baton run` refused in the meantime names; once that instant
//! has passed, none says anything of it and the run is granted.

use std::path::{Path, PathBuf};
use std::process::Output;

use baton_lease::Clock as _;
use baton_testkit::replica::{Mode, Replicated};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

use crate::daemon::Daemon;
use crate::support::{code, eventually, stderr, stdout};

/// TTL plus takeover grace: 12 s, the hold after the switch (long enough
/// for every surface to be asked within it on a loaded machine).
const POLICY: &str = "ttl = \"6s\"\nkill_grace = \"1s\"\ntakeover_grace = \"6s\"\n";
const HOLD: SignedDuration = SignedDuration::from_secs(12);

fn config(dir: &Path, url: &str) -> PathBuf {
    let file = dir.join("baton.toml");
    std::fs::write(
        &file,
        format!(
            "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{POLICY}\n\
             [store]\nurl = {url:?}\n\n\
             [jobs.nightly]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n",
            dir.join("state").display()
        ),
    )
    .unwrap();
    file
}

fn baton(config: &Path, args: &[&str]) -> Output {
    crate::support::baton_on(config, args).output().unwrap()
}

fn both(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// `held_back_until` of `baton status --json` (under `store`) and of
/// `baton store status --json`, with both texts.
fn holds(config: &Path) -> (Option<String>, Option<String>, String, String) {
    let json = |args: &[&str], at: &dyn Fn(&serde_json::Value) -> serde_json::Value| {
        let o = baton(config, args);
        assert!(code(&o) <= 1, "{args:?}: {}", both(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}: {}", both(&o)));
        let field = at(&v);
        assert!(
            field.is_null() || field.is_string(),
            "{args:?}: held_back_until is null or a time: {v}"
        );
        field.as_str().map(str::to_owned)
    };
    let status = json(&["status", "--json"], &|v| {
        v["store"]
            .get("held_back_until")
            .cloned()
            .unwrap_or_else(|| panic!("status --json has store.held_back_until: {v}"))
    });
    let store = json(&["store", "status", "--json"], &|v| {
        v.get("held_back_until")
            .cloned()
            .unwrap_or_else(|| panic!("store status --json has held_back_until: {v}"))
    });
    let text = stdout(&baton(config, &["status"]));
    let store_text = stdout(&baton(config, &["store", "status"]));
    (status, store, text, store_text)
}

/// `store.held_back_until` of the daemon's `GET /v1/jobs`, and the page's
/// hold line (its `data-held-back-until`, and its words), if any.
fn daemon_and_page(config: &Path, daemon: &Daemon) -> (Option<String>, Option<(String, String)>) {
    let a = daemon.get("/v1/jobs");
    assert_eq!(a.status, 200, "{}", a.body);
    let v: serde_json::Value = serde_json::from_str(&a.body).unwrap();
    let api = v["store"]["held_back_until"].as_str().map(str::to_owned);
    let page = stdout(&baton(config, &["__page", "--refresh", "0"]));
    let line = page
        .lines()
        .find(|l| l.contains("data-held-back-until"))
        .map(|l| {
            let until = l
                .split("data-held-back-until=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .unwrap_or_default()
                .to_owned();
            (until, l.to_owned())
        });
    (api, line)
}

#[test]
fn status_says_until_when_a_new_primary_holds_leases_back() {
    let pair = Replicated::start(Mode::Asynchronous);
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), &pair.url());
    let o = baton(&config, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let o = baton(&config, &["run", "nightly"]);
    assert_eq!(code(&o), 0, "{}", both(&o));

    let (status, store, text, store_text) = holds(&config);
    assert_eq!((status, store), (None, None), "{text}\n{store_text}");
    assert!(!text.contains("held back"), "{text}");
    assert!(!store_text.contains("held back"), "{store_text}");
    let daemon = Daemon::start_cmd(crate::support::baton_on(
        &config,
        &["daemon", "--listen", "127.0.0.1:0"],
    ))
    .unwrap_or_else(|(code, log)| panic!("the daemon did not start (exit {code:?}):\n{log}"));
    let (api, page) = daemon_and_page(&config, &daemon);
    assert_eq!(api, None, "GET /v1/jobs says nothing is held back");
    assert_eq!(page, None, "the page says nothing is held back");

    // The primary crashes; the standby is promoted and found by the URL.
    pair.caught_up();
    pair.primary().kill();
    pair.promote();
    let promoted = baton_lease::SystemClock.wall();

    // A run meets the new primary first: refused, naming until when.
    let mut refused = None;
    eventually("a run to be answered by the new primary", || {
        let o = baton(&config, &["run", "nightly"]);
        if stderr(&o).contains("the store's server changed") {
            refused = Some(both(&o));
        }
        refused.is_some() || code(&o) == 0
    });
    let refused = refused.expect("the first run after the promotion is held back");
    let (status, store, text, store_text) = holds(&config);
    let until = status.clone().unwrap_or_else(|| panic!("no hold: {text}"));
    assert_eq!(store.as_deref(), Some(until.as_str()), "{store_text}");
    let at: Timestamp = until.parse().expect("RFC 3339");
    // Texts show instants on the scheduler's wall clock (UTC here), to the
    // second.
    let shown = jiff::fmt::strtime::format(
        "%Y-%m-%d %H:%M:%S %:z",
        &at.to_zoned_datetime(TimeZone::UTC),
    )
    .unwrap();
    assert!(
        refused.contains(&format!("until {shown}")),
        "the run was refused until the instant status shows ({shown}): {refused}"
    );
    assert!(
        at > promoted && at <= promoted + HOLD + SignedDuration::from_secs(5),
        "held back for TTL plus grace after the promotion at {promoted}: {at}"
    );
    let line = format!(
        "held back until {shown} (new primary: leases granted after every old holder's TTL \
         and grace)"
    );
    assert!(text.contains(&line), "{text}");
    assert!(store_text.contains(&line), "{store_text}");
    assert_eq!(code(&baton(&config, &["store", "status"])), 0);
    // The daemon's API and its page say the same, while it lasts.
    let (api, page) = daemon_and_page(&config, &daemon);
    if baton_lease::SystemClock.wall() < at {
        assert_eq!(api.as_deref(), Some(until.as_str()), "GET /v1/jobs");
        let (page_until, page_line) = page.expect("the page's hold line");
        assert_eq!(page_until, until, "{page_line}");
        assert!(
            page_line.contains(&format!("held back until {shown}")),
            "{page_line}"
        );
    }

    // Once the hold is over nothing is said of it, and the run is granted.
    eventually("the hold to end", || {
        baton_lease::SystemClock.wall() > at + SignedDuration::from_millis(200)
    });
    let (status, store, text, store_text) = holds(&config);
    assert_eq!((status, store), (None, None), "{text}\n{store_text}");
    assert!(!text.contains("held back"), "{text}");
    assert_eq!(daemon_and_page(&config, &daemon), (None, None));
    let o = baton(&config, &["run", "nightly"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
}
