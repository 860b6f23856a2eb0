//! The renderers pinned by snapshots, and their translations checked
//! against baton's own schedules: a translated schedule, parsed back, fires
//! at exactly the original's instants, or it is refused.

use std::collections::BTreeSet;
use std::path::Path;

use baton_cron::Schedule;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::translate::{self, CronSchedule};
use super::{Artefact, Options, RenderError, Target, render};
use crate::config::{self, Config, Overrides, Source, When, Zone};

const NOW: &str = "2026-01-01T00:00:00Z";

/// The example's jobs in Asia/Kolkata, plus an interval, a job in UTC with
/// both day fields, and a disabled job.
const MIXED: &str = r#"
[scheduler]
state_dir = "state"
timezone = "Asia/Kolkata"
lock = "capture"

[jobs.daily]
schedule = "30 18 * * *"
run = ["bin/capture.sh", "--register-only"]

[jobs.weekly]
schedule = "0 19 * * 6"
run = ["bin/capture.sh", "--days", "7"]

[jobs.quarter]
every = "15m"
timezone = "UTC"
run = "true"

[jobs.payday]
schedule = "0 9 1,15 * 1-5"
timezone = "UTC"
run = "true"

[jobs.old]
schedule = "0 0 * * *"
enabled = false
run = "true"
"#;

fn config(text: &str) -> Config {
    config::parse(
        text,
        Path::new("/srv/checkout/baton.toml"),
        &Overrides::default(),
    )
    .unwrap()
}

fn opts(per_job: bool) -> Options {
    Options {
        bin: "/usr/local/bin/baton".into(),
        config: "/etc/baton/baton.toml".into(),
        config_source: Source::Flag("--config".into()),
        per_job,
        host_zone: "UTC".into(),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        now: NOW.parse().unwrap(),
        environment: [
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("BATON_TOKEN".to_owned(), "secret".to_owned()),
        ]
        .into_iter()
        .collect(),
    }
}

/// The artefacts as one text, each under its name.
fn joined(arts: &[Artefact]) -> String {
    arts.iter()
        .map(|a| format!("==> {} <==\n{}", a.name, a.text))
        .collect::<Vec<_>>()
        .join("\n")
}

fn rendered(target: Target, per_job: bool) -> String {
    joined(&render(target, &config(MIXED), &opts(per_job)).unwrap())
}

#[test]
fn render_cron_default_snapshot() {
    insta::assert_snapshot!("cron_default", rendered(Target::Cron, false));
}

#[test]
fn render_cron_per_job_snapshot() {
    insta::assert_snapshot!("cron_per_job", rendered(Target::Cron, true));
}

#[test]
fn render_systemd_default_snapshot() {
    insta::assert_snapshot!("systemd_default", rendered(Target::Systemd, false));
}

#[test]
fn render_systemd_per_job_snapshot() {
    insta::assert_snapshot!("systemd_per_job", rendered(Target::Systemd, true));
}

#[test]
fn render_github_snapshot() {
    insta::assert_snapshot!("github", rendered(Target::Github, true));
}

#[test]
fn render_github_is_the_same_with_and_without_per_job() {
    assert_eq!(
        rendered(Target::Github, false),
        rendered(Target::Github, true)
    );
}

#[test]
fn render_env_snapshot() {
    insta::assert_snapshot!("env", rendered(Target::Env, false));
}

#[test]
fn render_is_deterministic() {
    for target in [Target::Cron, Target::Systemd, Target::Github, Target::Env] {
        for per_job in [false, true] {
            assert_eq!(rendered(target, per_job), rendered(target, per_job));
        }
    }
}

#[test]
fn render_env_lists_every_scheduler_variable_and_hides_secrets() {
    let text = rendered(Target::Env, false);
    for key in config::env_keys() {
        let name = config::env_name(key);
        assert!(text.contains(&format!("# {name}: ")), "{name} missing");
        assert!(
            !text.contains(&format!("# {name}: [scheduler] {key}: a [scheduler] key")),
            "{name} has no description"
        );
    }
    for name in super::env::names() {
        assert!(text.contains(&format!("# {name}: ")), "{name} missing");
    }
    assert!(!text.contains("secret"), "{text}");
    let text = &render(Target::Env, &config(MIXED), &opts(false)).unwrap()[0].text;
    assert!(text.lines().all(|l| l.is_empty() || l.starts_with('#')));
}

#[test]
fn render_state_dir_beside_the_configuration_follows_it() {
    let text = rendered(Target::Cron, false);
    assert!(
        text.contains("BATON_STATE_DIR=/etc/baton/state\n"),
        "{text}"
    );
    assert!(!text.contains("/srv/checkout"), "{text}");
}

#[test]
fn render_github_workflows_are_yaml_with_a_schedule_and_a_tick() {
    let arts = render(Target::Github, &config(MIXED), &opts(true)).unwrap();
    assert_eq!(arts.len(), 4, "one workflow per enabled job");
    for a in arts {
        let docs = yaml_rust2::YamlLoader::load_from_str(&a.text)
            .unwrap_or_else(|e| panic!("{}: not YAML: {e}\n{}", a.name, a.text));
        let doc = &docs[0];
        let on = &doc["on"];
        assert!(!on["workflow_dispatch"].is_badvalue(), "{}", a.name);
        let crons = on["schedule"].as_vec().unwrap();
        assert!(!crons.is_empty());
        for c in crons {
            let line = c["cron"].as_str().unwrap();
            Schedule::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        let job = a.name.trim_start_matches("baton-").trim_end_matches(".yml");
        let steps = doc["jobs"]["tick"]["steps"].as_vec().unwrap();
        assert_eq!(steps[0]["uses"].as_str(), Some("actions/checkout@v4"));
        let run = steps[1]["run"].as_str().unwrap();
        assert_eq!(
            run,
            format!("/usr/local/bin/baton tick {job} --config /etc/baton/baton.toml")
        );
        // Every job of MIXED takes [scheduler] lock = "capture".
        assert_eq!(
            doc["concurrency"]["group"].as_str(),
            Some("baton-lock-capture")
        );
    }
}

fn refusals(text: &str, target: Target, per_job: bool) -> Vec<(String, String)> {
    match render(target, &config(text), &opts(per_job)) {
        Err(RenderError::Refused(r)) => {
            assert!(r.iter().all(|x| x.target == target));
            r.into_iter()
                .map(|x| (x.job.clone(), x.to_string()))
                .collect()
        }
        other => panic!("expected refusals, got {other:?}"),
    }
}

#[test]
fn render_github_refuses_daylight_saving_and_moving_days() {
    let r = refusals(
        r#"
[scheduler]
state_dir = "/var/lib/baton"
timezone = "Europe/Berlin"
[jobs.berlin]
schedule = "0 9 * * *"
run = "true"
[jobs.monthly]
schedule = "30 2 1 * *"
timezone = "Asia/Kolkata"
run = "true"
[jobs.fine]
schedule = "30 2 * * 1"
timezone = "Asia/Kolkata"
run = "true"
"#,
        Target::Github,
        true,
    );
    let jobs: Vec<&str> = r.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(jobs, ["berlin", "monthly"]);
    assert!(
        r[0].1.contains("Europe/Berlin observes daylight saving"),
        "{}",
        r[0].1
    );
    assert!(r[0].1.contains("UTC only"), "{}", r[0].1);
    assert!(r[0].1.contains("baton render cron"), "{}", r[0].1);
    assert!(r[1].1.contains("day-of-month"), "{}", r[1].1);
}

#[test]
fn render_cron_per_job_refuses_sub_minute_and_intervals_that_do_not_divide_a_day() {
    let r = refusals(
        r#"
[scheduler]
state_dir = "/var/lib/baton"
timezone = "UTC"
[jobs.seconds]
schedule = "*/10 * * * * *"
run = "true"
[jobs.sevens]
every = "7m"
run = "true"
[jobs.ninety]
every = "90s"
run = "true"
[jobs.fine]
every = "45m"
run = "true"
"#,
        Target::Cron,
        true,
    );
    let jobs: Vec<&str> = r.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(jobs, ["ninety", "seconds", "sevens"]);
    assert!(r[0].1.contains("smallest unit is a minute"), "{}", r[0].1);
    assert!(r[2].1.contains("does not divide a day"), "{}", r[2].1);
    assert!(r[2].1.contains("default form"), "{}", r[2].1);
}

#[test]
fn render_systemd_per_job_refuses_times_the_zone_skips_or_repeats() {
    let r = refusals(
        r#"
[scheduler]
state_dir = "/var/lib/baton"
timezone = "America/New_York"
[jobs.gap]
schedule = "30 2 * * *"
run = "true"
[jobs.fold]
schedule = "15 1 * * *"
run = "true"
[jobs.quarter]
schedule = "*/15 * * * *"
run = "true"
[jobs.fine]
schedule = "0 9 * * *"
run = "true"
[jobs.seconds]
every = "30s"
run = "true"
"#,
        Target::Systemd,
        true,
    );
    let jobs: Vec<&str> = r.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(jobs, ["fold", "gap", "quarter"]);
    assert!(r[1].1.contains("02:30"), "{}", r[1].1);
}

#[test]
fn render_default_forms_never_refuse() {
    let text = r#"
[scheduler]
state_dir = "/var/lib/baton"
timezone = "Europe/Berlin"
[jobs.gap]
schedule = "30 2 * * *"
run = "true"
[jobs.seconds]
schedule = "*/10 * * * * *"
run = "true"
[jobs.sevens]
every = "7m"
run = "true"
"#;
    let c = config(text);
    render(Target::Cron, &c, &opts(false)).unwrap();
    let units = render(Target::Systemd, &c, &opts(false)).unwrap();
    assert!(
        units[0].text.contains("StateDirectory=baton\n"),
        "{}",
        units[0].text
    );
}

/// The union of `lines`' occurrences in their zone, after `from`.
fn lines_after(s: &CronSchedule, from: Timestamp, n: usize) -> Vec<Timestamp> {
    let tz = TimeZone::get(&s.zone).unwrap();
    let mut all = BTreeSet::new();
    for l in &s.lines {
        let parsed = Schedule::parse(&l.to_string()).unwrap_or_else(|e| panic!("{l}: {e}"));
        all.extend(parsed.iter_after(from, &tz).take(n));
    }
    all.into_iter().take(n).collect()
}

fn when(key: &'static str, text: &str) -> When {
    let schedule = if key == "every" {
        let d = crate::units::parse_duration(text).unwrap();
        Schedule::every(d).unwrap()
    } else {
        Schedule::parse(text).unwrap()
    };
    When {
        text: text.to_owned(),
        key,
        schedule,
    }
}

fn zone(name: &str) -> Zone {
    Zone {
        name: name.to_owned(),
        tz: TimeZone::get(name).unwrap(),
    }
}

const CRONS: &[&str] = &[
    "30 18 * * *",
    "0 19 * * 6",
    "*/15 * * * *",
    "0,30 2 * * *",
    "5 4 1,15 * 1-5",
    "0 0 */2 * *",
    "0 3 * * */2",
    "10 22 * 1,7 *",
    "@daily",
    "59 23 31 12 *",
    "0 0-6/2 * * 0",
];

#[test]
fn render_cron_lines_in_the_zone_fire_as_the_schedule_does() {
    let from: Timestamp = "2026-02-20T00:00:00Z".parse().unwrap();
    for z in ["UTC", "Asia/Kolkata", "America/New_York", "Europe/Berlin"] {
        for text in CRONS {
            let w = when("schedule", text);
            let s = translate::cron_in_zone(&w, &zone(z)).unwrap();
            let tz = TimeZone::get(z).unwrap();
            let want: Vec<_> = w.schedule.iter_after(from, &tz).take(300).collect();
            assert_eq!(lines_after(&s, from, 300), want, "{text} in {z}: {s:?}");
        }
    }
}

#[test]
fn render_cron_lines_in_utc_fire_as_the_schedule_does_or_are_refused() {
    let from: Timestamp = "2026-02-20T00:00:00Z".parse().unwrap();
    let now: Timestamp = NOW.parse().unwrap();
    let mut translated = 0;
    for z in [
        "UTC",
        "Asia/Kolkata",
        "Asia/Kathmandu",
        "Etc/GMT+10",
        "Asia/Tokyo",
    ] {
        for text in CRONS {
            let w = when("schedule", text);
            let Ok(s) = translate::cron_in_utc(&w, &zone(z), now) else {
                continue;
            };
            translated += 1;
            assert_eq!(s.zone, "UTC");
            let tz = TimeZone::get(z).unwrap();
            let want: Vec<_> = w.schedule.iter_after(from, &tz).take(300).collect();
            assert_eq!(lines_after(&s, from, 300), want, "{text} in {z}: {s:?}");
        }
    }
    assert!(translated >= 35, "only {translated} translated");
}

#[test]
fn render_intervals_that_divide_a_day_fire_as_the_interval_does() {
    let from: Timestamp = "2026-02-20T00:00:00Z".parse().unwrap();
    for text in ["1m", "15m", "45m", "90m", "2h", "8h", "1d", "20m"] {
        let w = when("every", text);
        let s = translate::cron_in_zone(&w, &zone("Europe/Berlin")).unwrap();
        assert_eq!(s.zone, "UTC");
        let want: Vec<_> = w
            .schedule
            .iter_after(from, &TimeZone::UTC)
            .take(300)
            .collect();
        assert_eq!(lines_after(&s, from, 300), want, "every {text}: {s:?}");
    }
    for text in ["7m", "5h", "2d", "30s"] {
        let w = when("every", text);
        assert!(
            translate::cron_in_zone(&w, &zone("UTC")).is_err(),
            "every {text}"
        );
    }
}
