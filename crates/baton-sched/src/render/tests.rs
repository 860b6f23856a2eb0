//! The renderers pinned by snapshots, and their translations checked
//! against baton's own schedules: a translated schedule, parsed back, fires
//! at exactly the original's instants, or it is refused.

use std::collections::BTreeSet;
use std::path::Path;

use baton_cron::Schedule;
use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::cron::cron_in_zone;
use super::github::cron_in_utc;
use super::translate::CronSchedule;
use super::{Artefact, Options, RenderError, Target, render};
use crate::config::{self, Config, Overrides, Source, When, Zone};
use crate::text_asserts::{has, lacks};

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
            ("BATON_TOKEN".to_owned(), "tok-hunter3".to_owned()),
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

/// [`opts`] for `target`: for GitHub, the configuration's path inside the
/// repository.
fn opts_for(target: Target, per_job: bool) -> Options {
    let mut o = opts(per_job);
    if target == Target::Github {
        o.config = "deploy/baton.toml".into();
    }
    o
}

fn rendered(target: Target, per_job: bool) -> String {
    joined(&render(target, &config(MIXED), &opts_for(target, per_job)).unwrap())
}

#[test]
fn render_snapshots() {
    for (name, target, per_job) in [
        ("cron_default", Target::Cron, false),
        ("cron_per_job", Target::Cron, true),
        ("systemd_default", Target::Systemd, false),
        ("systemd_per_job", Target::Systemd, true),
        ("github", Target::Github, true),
        ("env", Target::Env, false),
    ] {
        insta::assert_snapshot!(name, rendered(target, per_job));
    }
}

#[test]
fn render_github_is_the_same_with_and_without_per_job() {
    assert_eq!(
        rendered(Target::Github, false),
        rendered(Target::Github, true)
    );
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
    lacks(&text, "tok-hunter3");
    let text = &render(Target::Env, &config(MIXED), &opts(false)).unwrap()[0].text;
    assert!(text.lines().all(|l| l.is_empty() || l.starts_with('#')));
}

#[test]
fn render_state_dir_beside_the_configuration_follows_it() {
    let text = rendered(Target::Env, false);
    has(&text, "\"/etc/baton/state\"");
    lacks(&text, "/srv/checkout");
}

#[test]
fn render_cron_and_systemd_never_pin_the_state_directory() {
    for target in [Target::Cron, Target::Systemd] {
        for per_job in [false, true] {
            let text = rendered(target, per_job);
            let pinned: Vec<&str> = text
                .lines()
                .filter(|l| !l.starts_with('#') && l.contains("BATON_STATE_DIR"))
                .collect();
            assert!(pinned.is_empty(), "{target} {per_job}: {pinned:?}");
        }
    }
    let c = config(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    );
    let unit = &render(Target::Systemd, &c, &opts(false)).unwrap()[0].text;
    has(unit, "\nStateDirectory=baton\n");
    has(unit, "\nExecReload=/bin/kill -HUP $MAINPID\n");
}

#[test]
fn render_github_workflows_are_yaml_with_a_schedule_and_a_run() {
    let mut c = config(MIXED);
    // A zone whose offset changes, at a time no change touches: rendered
    // in the zone, with `timezone`.
    let berlin = config(
        "[scheduler]\ntimezone = \"Europe/Berlin\"\nlock = \"capture\"\n\
         [jobs.berlin]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    );
    c.jobs.extend(berlin.jobs);
    let arts = render(Target::Github, &c, &opts_for(Target::Github, true)).unwrap();
    assert_eq!(arts.len(), 5, "one workflow per enabled job");
    for a in arts {
        let docs = yaml_rust2::YamlLoader::load_from_str(&a.text)
            .unwrap_or_else(|e| panic!("{}: not YAML: {e}\n{}", a.name, a.text));
        let doc = &docs[0];
        let on = &doc["on"];
        assert!(!on["workflow_dispatch"].is_badvalue(), "{}", a.name);
        let crons = on["schedule"].as_vec().unwrap();
        assert!(!crons.is_empty());
        let job = a.name.trim_start_matches("baton-").trim_end_matches(".yml");
        for entry in crons {
            let keys: Vec<&str> = entry
                .as_hash()
                .unwrap()
                .keys()
                .map(|k| k.as_str().unwrap())
                .collect();
            let line = entry["cron"].as_str().unwrap();
            Schedule::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            if job == "berlin" {
                assert_eq!(keys, ["cron", "timezone"], "{}", a.text);
                assert_eq!(entry["timezone"].as_str(), Some("Europe/Berlin"));
                assert_eq!(line, "0 9 * * *");
            } else {
                assert_eq!(keys, ["cron"], "{}", a.text);
            }
        }
        let steps = doc["jobs"]["run"]["steps"].as_vec().unwrap();
        assert_eq!(steps.len(), 2, "{}", a.text);
        assert_eq!(steps[0]["uses"].as_str(), Some("actions/checkout@v4"));
        let config = r#""${{ github.workspace }}"/deploy/baton.toml"#;
        assert_eq!(
            steps[1]["run"].as_str().unwrap(),
            format!("/usr/local/bin/baton run --config {config} -- {job}")
        );
        assert!(steps[1]["if"].is_badvalue(), "{}", a.text);
        assert_eq!(
            steps[1]["env"]["BATON_STATE_DIR"].as_str(),
            Some("${{ runner.temp }}/baton-state")
        );
        // Every job here takes the lock "capture".
        assert_eq!(
            doc["concurrency"]["group"].as_str(),
            Some("baton-lock-capture")
        );
        // The comment names the runner the workflow runs on, and how to
        // put baton there.
        let runs_on = doc["jobs"]["run"]["runs-on"].as_str().unwrap();
        let comment: String = a
            .text
            .lines()
            .take_while(|l| l.starts_with('#'))
            .map(|l| format!("{}\n", l.trim_start_matches('#').trim()))
            .collect();
        has(
            &comment,
            &format!("runs on GitHub's {runs_on}, which has no baton"),
        );
        has(
            &comment,
            "add a step before baton's that puts the binary at",
        );
        has(&comment, "set `runs-on: self-hosted`");
    }
}

fn refusals(text: &str, target: Target, per_job: bool) -> Vec<(String, String)> {
    match render(target, &config(text), &opts_for(target, per_job)) {
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
fn render_github_refuses_what_it_would_run_at_other_instants_naming_the_date() {
    let r = refusals(
        r#"
[scheduler]
state_dir = "/var/lib/baton"
timezone = "America/New_York"
[jobs.fold]
schedule = "30 1 * * *"
run = "true"
[jobs.gap]
schedule = "0,30 2 * * *"
run = "true"
[jobs.skipped]
schedule = "30 2 * * *"
run = "true"
[jobs.tuesday]
schedule = "30 2 * * 2"
run = "true"
[jobs.monthly]
schedule = "30 2 1 * *"
timezone = "Asia/Kolkata"
run = "true"
"#,
        Target::Github,
        true,
    );
    let jobs: Vec<&str> = r.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(jobs, ["fold", "gap"]);
    let fold = &r[0].1;
    has(fold, "on 2026-11-01 the clocks go back");
    has(fold, "does not document");
    has(fold, "first differs on 2026-03-09");
    has(fold, "baton render cron");
    let gap = &r[1].1;
    has(gap, "on 2026-03-08 the clocks go forward");
}

#[test]
fn render_github_refuses_schedules_more_frequent_than_every_five_minutes() {
    let now: Timestamp = NOW.parse().unwrap();
    let utc = zone("UTC");
    for (key, text) in [
        ("every", "1m"),
        ("every", "4m"),
        ("schedule", "* * * * *"),
        ("schedule", "*/2 * * * *"),
        ("schedule", "0,4 9 * * *"),
        // 23:58, then 00:01 the next day.
        ("schedule", "1,58 0,23 * * *"),
        ("schedule", "1,58 0,23 * * 1,2"),
    ] {
        let w = when(key, text);
        let why = super::github::schedule(&w, &utc, now)
            .map(|s| s.lines)
            .expect_err(text)
            .to_string();
        assert!(
            why.contains("at most once every 5 minutes"),
            "{text}: {why}"
        );
    }
    for (key, text) in [
        ("every", "5m"),
        ("schedule", "*/5 * * * *"),
        ("schedule", "0,5 9 * * *"),
        // 23:58 and 00:01 never on two days in a row.
        ("schedule", "1,58 0,23 * * 1"),
    ] {
        let w = when(key, text);
        super::github::schedule(&w, &utc, now).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    let r = refusals(
        "[scheduler]\ntimezone = \"Europe/Berlin\"\n[jobs.minutely]\nschedule = \"* * * * *\"\n\
         run = \"true\"\n",
        Target::Github,
        true,
    );
    has(&r[0].1, "at most once every 5 minutes");
}

#[test]
fn render_github_keeps_wildcard_schedules_in_utc_where_the_zone_changes() {
    let now: Timestamp = NOW.parse().unwrap();
    for (text, z, want) in [
        ("*/15 * * * *", "Europe/Berlin", "*/15 * * * *"),
        ("*/5 * * * *", "America/New_York", "*/5 * * * *"),
        ("0 * * * *", "Europe/Berlin", "0 * * * *"),
        ("15 * * * *", "America/New_York", "15 * * * *"),
        ("0 9 * 7 *", "Europe/Berlin", "0 7 * 7 *"),
    ] {
        let w = when("schedule", text);
        let s = super::github::schedule(&w, &zone(z), now)
            .unwrap_or_else(|e| panic!("{text} in {z}: {e}"));
        assert_eq!(s.zone, "UTC", "{text} in {z}");
        let lines: Vec<String> = s.lines.iter().map(ToString::to_string).collect();
        assert_eq!(lines, [want], "{text} in {z}");
    }
    // Weekdays move across midnight in UTC by an offset that changes: no
    // UTC line, but no change falls on a weekday in New York.
    let w = when("schedule", "15 * * * 1-5");
    let s = super::github::schedule(&w, &zone("America/New_York"), now).unwrap();
    assert_eq!(s.zone, "America/New_York");
}

/// The UTC lines, where they are rendered, fire at baton's instants at
/// every instant of the two years ahead: a brute-force check of the
/// windowed comparison.
#[test]
fn render_cron_lines_in_utc_fire_as_baton_does_for_two_years_or_are_refused() {
    let now: Timestamp = NOW.parse().unwrap();
    let to = now
        .checked_add(jiff::SignedDuration::from_hours(24 * 731))
        .unwrap();
    let mut kept = 0;
    for z in DST_ZONES {
        let tz = TimeZone::get(z).unwrap();
        for text in [
            "*/20 * * * *",
            "0 * * * *",
            "30 * * * *",
            "0 9 * * *",
            "0 9 * 7 *",
            "0 9 * 1 *",
            "45 * * * 1-5",
            "0 */2 * * *",
            "0 0 1 * *",
            "0 12 * 6-8 1",
        ] {
            let w = when("schedule", text);
            let Ok(s) = cron_in_utc(&w, &zone(z), now) else {
                continue;
            };
            kept += 1;
            let mut got = BTreeSet::new();
            for l in &s.lines {
                let p = Schedule::parse(&l.to_string()).unwrap();
                got.extend(p.iter_after(now, &TimeZone::UTC).take_while(|t| *t < to));
            }
            let want: BTreeSet<Timestamp> = w
                .schedule
                .iter_after(now, &tz)
                .take_while(|t| *t < to)
                .collect();
            assert!(got == want, "{text} in {z}: {s:?}");
        }
    }
    assert!(kept >= 30, "only {kept} kept");
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
    has(&r[0].1, "smallest unit is a minute");
    has(&r[2].1, "does not divide a day");
    has(&r[2].1, "default form");
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
    // A fixed time in a fold runs once, the first time, in both: kept. A
    // wildcard schedule runs its repeated times twice, as a UTC calendar
    // fires through them: kept, in UTC.
    let jobs: Vec<&str> = r.iter().map(|(j, _)| j.as_str()).collect();
    assert_eq!(jobs, ["gap"]);
    has(&r[0].1, "02:30");
    has(&r[0].1, "on 2026-03-08 the clocks go forward");
    // Nor does a UTC line fire at 02:30 New York all year.
    assert!(
        r[0].1.contains("and in UTC, ") && r[0].1.contains("first differs on 2026-03-08"),
        "{}",
        r[0].1
    );
}

#[test]
fn render_systemd_per_job_writes_in_utc_what_only_utc_fires_as_baton() {
    let o = opts(true);
    for (z, text, want) in [
        (
            "America/New_York",
            "*/15 * * * *",
            vec!["*-*-* *:00,15,30,45:00 UTC"],
        ),
        ("Europe/Berlin", "* * * * *", vec!["*-*-* *:*:00 UTC"]),
        ("Europe/Berlin", "0 * * * * *", vec!["*-*-* *:*:00 UTC"]),
        ("Europe/Berlin", "30 * * * *", vec!["*-*-* *:30:00 UTC"]),
    ] {
        let got = super::systemd::on_calendar(&when("schedule", text), &zone(z), &o)
            .map_err(|e| e.to_string());
        assert_eq!(
            got,
            Ok(want.iter().map(|s| s.to_string()).collect()),
            "{text} in {z}"
        );
    }
    // Seconds other than 0 are not looked for in UTC: refused, saying so.
    let why = super::systemd::on_calendar(
        &when("schedule", "30 * * * * *"),
        &zone("Europe/Berlin"),
        &o,
    )
    .unwrap_err()
    .to_string();
    has(&why, "the clocks go back");
    has(&why, "seconds other than 0");
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
    has(&units[0].text, "StateDirectory=baton\n");
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
    let now: Timestamp = NOW.parse().unwrap();
    let mut translated = 0;
    for z in ["UTC", "Asia/Kolkata", "America/New_York", "Europe/Berlin"] {
        for text in CRONS {
            let w = when("schedule", text);
            let Ok(s) = cron_in_zone(&w, &zone(z), now) else {
                continue;
            };
            translated += 1;
            let tz = TimeZone::get(z).unwrap();
            let want: Vec<_> = w.schedule.iter_after(from, &tz).take(300).collect();
            assert_eq!(lines_after(&s, from, 300), want, "{text} in {z}: {s:?}");
        }
    }
    assert!(translated >= 36, "only {translated} translated");
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
            let Ok(s) = cron_in_utc(&w, &zone(z), now) else {
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
        let s = cron_in_zone(&w, &zone("Europe/Berlin"), NOW.parse().unwrap()).unwrap();
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
            cron_in_zone(&w, &zone("UTC"), NOW.parse().unwrap()).is_err(),
            "every {text}"
        );
    }
}

/// The instants in `[from, to)` at which a cron that matches the zone's
/// clock each minute (cronie with `CRON_TZ=`, or any cron in the host's
/// zone without its own daylight saving handling) fires `line`.
fn cronie_fires(line: &str, zone: &str, from: Timestamp, to: Timestamp) -> BTreeSet<Timestamp> {
    let parsed = Schedule::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    let f = parsed.fields().unwrap();
    let tz = TimeZone::get(zone).unwrap();
    let mut out = BTreeSet::new();
    let mut t = from;
    while t < to {
        let local = tz.to_datetime(t);
        // OK to cast: each is within its field's range.
        let day_of_month = f.day_of_month().contains(local.day() as u8);
        let day_of_week = f
            .day_of_week()
            .contains(local.weekday().to_sunday_zero_offset() as u8);
        let day = if f.days_match_either() {
            day_of_month || day_of_week
        } else {
            day_of_month && day_of_week
        };
        if day
            && f.minute().contains(local.minute() as u8)
            && f.hour().contains(local.hour() as u8)
            && f.month().contains(local.month() as u8)
        {
            out.insert(t);
        }
        t = t.checked_add(jiff::SignedDuration::from_mins(1)).unwrap();
    }
    out
}

/// Zones with daylight saving: an hour at 02:00 (New York, Berlin), at
/// 00:00 (Santiago, Havana at 01:00), a half hour (Lord Howe), southern
/// (Sydney); and zones without.
const DST_ZONES: &[&str] = &[
    "America/New_York",
    "Europe/Berlin",
    "America/Santiago",
    "America/Havana",
    "Australia/Lord_Howe",
    "Australia/Sydney",
    "Asia/Kolkata",
    "UTC",
];

#[test]
fn render_cron_per_job_fires_as_baton_does_on_daylight_saving_days_or_is_refused() {
    let now: Timestamp = NOW.parse().unwrap();
    let crons = [
        "30 2 * * *",
        "30 2 * * 0",
        "15 2 * * *",
        "30 1 * * *",
        "59 1 * * *",
        "0 0 * * *",
        "30 0 * * *",
        "*/15 * * * *",
        "0 * * * *",
        "0 9 * * *",
        "0 3 * * *",
        "45 2 * * 1-5",
        "0 4 1 * *",
    ];
    let mut translated = 0;
    for z in DST_ZONES {
        let tz = TimeZone::get(z).unwrap();
        // Every offset change of the next six years, and a quiet day.
        let mut days: Vec<Timestamp> = tz.following(now).take(12).map(|t| t.timestamp()).collect();
        days.push("2026-06-10T12:00:00Z".parse().unwrap());
        for text in crons {
            let w = when("schedule", text);
            let Ok(s) = cron_in_zone(&w, &zone(z), now) else {
                continue;
            };
            translated += 1;
            for &day in &days {
                let from = day
                    .checked_sub(jiff::SignedDuration::from_hours(36))
                    .unwrap();
                let to = day
                    .checked_add(jiff::SignedDuration::from_hours(36))
                    .unwrap();
                let want: BTreeSet<Timestamp> = w
                    .schedule
                    .iter_after(
                        from.checked_sub(jiff::SignedDuration::from_secs(1))
                            .unwrap(),
                        &tz,
                    )
                    .take_while(|t| *t < to)
                    .collect();
                let mut got = BTreeSet::new();
                for l in &s.lines {
                    got.extend(cronie_fires(&l.to_string(), &s.zone, from, to));
                }
                // Every instant baton runs, and besides them only a
                // repeated wall time fired a second time (a cron that
                // matches the zone's clock each minute does), whose
                // `baton tick -- JOB` finds the occurrence decided.
                assert!(
                    want.is_subset(&got),
                    "{text} in {z} around {day}: {s:?}: {got:?} misses {want:?}"
                );
                for extra in got.difference(&want) {
                    let wall = tz.to_datetime(*extra);
                    assert!(
                        want.iter().any(|w| w < extra && tz.to_datetime(*w) == wall),
                        "{text} in {z} around {day}: {s:?} fires at {extra}, where baton \
                         runs nothing: {got:?} against {want:?}"
                    );
                }
            }
        }
    }
    assert!(translated >= 40, "only {translated} translated");
}

#[test]
fn render_cron_per_job_refuses_times_the_zone_skips_or_repeats_in_any_zone() {
    let now: Timestamp = NOW.parse().unwrap();
    for (text, z, date) in [
        ("30 2 * * *", "America/New_York", "2026-03-08"),
        ("30 2 * * 0", "America/New_York", "2026-03-08"),
        ("30 2 * * *", "Europe/Berlin", "2026-03-29"),
        ("15 2 * * *", "Australia/Lord_Howe", "2026-10-04"),
        // Only the day of the change: 2027-03-14 is its first Sunday the 14th.
        ("30 2 14 * *", "America/New_York", "2027-03-14"),
    ] {
        let why = cron_in_zone(&when("schedule", text), &zone(z), now)
            .expect_err(&format!("{text} in {z}"))
            .to_string();
        has(&why, &format!("on {date} the clocks go"));
        has(&why, z);
    }
    // Times no change meets on a day the schedule fires, wildcard
    // schedules, which cron fires by the clock as baton does, and a fixed
    // time the clocks repeat: a cron that fires it twice runs `baton tick
    // -- JOB` twice, and the second finds the occurrence decided.
    for (text, z) in [
        ("30 1 * * *", "America/New_York"),
        ("30 2 25 10 *", "Europe/Berlin"),
        ("30 2 * * 2", "America/New_York"),
        ("30 2 * * 1-6", "America/New_York"),
        ("30 1 * 1-6 *", "America/New_York"),
        ("*/15 * * * *", "America/New_York"),
        ("30 * * * *", "Australia/Lord_Howe"),
    ] {
        cron_in_zone(&when("schedule", text), &zone(z), now)
            .unwrap_or_else(|e| panic!("{text} in {z}: {e}"));
    }
    // The host's own zone is refused too: crons handle its changes each in
    // their own way.
    let mut o = opts(true);
    o.host_zone = "America/New_York".into();
    let c = config(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"America/New_York\"\n\
         [jobs.gap]\nschedule = \"30 2 * * *\"\nrun = \"true\"\n",
    );
    match render(Target::Cron, &c, &o) {
        Err(RenderError::Refused(r)) => {
            assert_eq!(r[0].job, "gap");
            assert!(r[0].to_string().contains("default form"), "{}", r[0]);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn render_cron_per_job_puts_the_hosts_zone_first_without_cron_tz() {
    let c = config(
        r#"
[scheduler]
state_dir = "/var/lib/baton"
timezone = "Asia/Kolkata"
[jobs.a_tokyo]
schedule = "0 9 * * *"
timezone = "Asia/Tokyo"
run = "true"
[jobs.b_interval]
every = "1h"
run = "true"
[jobs.c_host]
schedule = "0 9 * * *"
run = "true"
"#,
    );
    let mut o = opts(true);
    o.host_zone = "Asia/Kolkata".into();
    let text = &render(Target::Cron, &c, &o).unwrap()[0].text;
    let host = text.find("-- c_host").unwrap();
    let first_tz = text.find("\nCRON_TZ=").unwrap();
    assert!(host < first_tz, "{text}");
    has(text, "CRON_TZ=Asia/Tokyo\n");
    has(text, "CRON_TZ=UTC\n");
    lacks(text, "CRON_TZ=Asia/Kolkata");
    has(text, "cronie does; Debian's default");

    // Every job in the host's zone: no CRON_TZ=, and no word of it.
    let c = config(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"Asia/Kolkata\"\n\
         [jobs.x]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    );
    let text = &render(Target::Cron, &c, &o).unwrap()[0].text;
    lacks(text, "CRON_TZ");
}

#[test]
fn render_github_takes_zones_without_daylight_saving_in_utc_and_others_with_their_zone() {
    let now: Timestamp = NOW.parse().unwrap();
    let w = when("schedule", "0 9 * * 1-5");
    for z in [
        "Asia/Dubai",
        "Asia/Singapore",
        "Asia/Kathmandu",
        "Asia/Tehran",
        "America/Sao_Paulo",
        "America/Argentina/Buenos_Aires",
        "Pacific/Kiritimati",
        "Asia/Kolkata",
        "Asia/Tokyo",
    ] {
        let s = cron_in_utc(&w, &zone(z), now).unwrap_or_else(|e| panic!("{z} refused: {e}"));
        let tz = TimeZone::get(z).unwrap();
        let from: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let want: Vec<_> = w.schedule.iter_after(from, &tz).take(300).collect();
        assert_eq!(lines_after(&s, from, 300), want, "{z}: {s:?}");
    }
    for z in [
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
        "America/Santiago",
        "Australia/Sydney",
    ] {
        let why = cron_in_utc(&w, &zone(z), now).expect_err(z).to_string();
        has(&why, "offset from UTC changes");
        has(&why, "first differs on 2026-");
        // GitHub reads it in the zone itself: 09:00 meets no change.
        let s = super::github::schedule(&w, &zone(z), now).unwrap();
        assert_eq!(s.zone, z);
        assert_eq!(s.lines[0].to_string(), "0 9 * * 1-5");
    }
}

#[test]
fn render_names_that_start_with_a_dash_follow_a_double_dash() {
    let c = config(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"UTC\"\n\
         [jobs.\"-a\"]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n\
         [jobs.\"--help\"]\nevery = \"1h\"\nrun = \"true\"\n",
    );
    for target in [Target::Cron, Target::Systemd, Target::Github] {
        let text = joined(&render(target, &c, &opts_for(target, true)).unwrap());
        for name in ["-a", "--help"] {
            let after_dashes =
                text.contains(&format!(" -- {name}\n")) || text.contains(&format!(" -- {name}'\n"));
            assert!(after_dashes, "{target}: {text}");
            for line in text
                .lines()
                .filter(|l| !l.trim_start().starts_with("- name:"))
            {
                assert!(!line.contains(&format!("tick {name}")), "{target}: {line}");
            }
        }
    }
}

#[test]
fn render_systemd_escapes_each_directive_by_its_own_rules() {
    let weird = r#"/srv/we ird%d$HOME'x"q\b"#;
    let c = config(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 9 * * *\"\nrun = \"true\"\n",
    );
    let mut o = opts(true);
    o.bin = "/opt/my bin%d$HOME/baton".into();
    o.config = format!("{weird}/baton.toml").into();
    let mut c = c;
    c.settings.state_dir.value = format!("{weird}/state").into();
    let arts = render(Target::Systemd, &c, &o).unwrap();
    let service = &arts[0].text;
    let exec = r#""/opt/my bin%%d$HOME/baton" tick --config "/srv/we ird%%d$$HOME'x\"q\\b/baton.toml" -- j"#;
    has(service, &format!("\nExecStart={exec}\n"));
    lacks(service, "BATON_STATE_DIR");
    has(service, "Description=baton: job j of /srv/we ird%%d$HOME");
}

#[test]
fn render_systemd_intervals_that_divide_a_day_are_valid_calendar_forms() {
    for secs in (1..=86_400u64).filter(|s| 86_400 % s == 0) {
        let w = When {
            text: format!("{secs}s"),
            key: "every",
            schedule: Schedule::every(std::time::Duration::from_secs(secs)).unwrap(),
        };
        let Ok(specs) = super::systemd::on_calendar(&w, &zone("UTC"), &opts(true)) else {
            continue;
        };
        for spec in specs {
            assert!(
                !spec.contains("/60") && !spec.contains("/24"),
                "every {secs}s: {spec}"
            );
        }
    }
}

#[test]
fn render_env_hides_every_secret() {
    let mut o = opts(false);
    o.environment.insert(
        crate::http::REQUEST_ENV.to_owned(),
        "Authorization: Bearer hunter2".to_owned(),
    );
    let text = &render(Target::Env, &config(MIXED), &o).unwrap()[0].text;
    lacks(text, "hunter2");
    lacks(text, "tok-hunter3");
    has(text, "# BATON_HTTP_REQUEST: ");
    for name in [
        "BATON_TOKEN",
        "BATON_HTTP_REQUEST",
        "BATON_STORE_URL",
        "BATON_API_KEY",
    ] {
        assert!(super::env::is_secret(name), "{name}");
    }
    for name in ["PATH", "BATON_HISTORY_KEEP", "BATON_STATE_DIR", "TZ"] {
        assert!(!super::env::is_secret(name), "{name}");
    }
}

#[test]
fn render_owns_only_its_own_artefact_names() {
    use super::owns;
    assert!(owns(Target::Cron, "baton.cron"));
    assert!(owns(Target::Systemd, "baton.service"));
    assert!(owns(Target::Systemd, "baton-old.service"));
    assert!(owns(Target::Systemd, "baton-old.timer"));
    assert!(owns(Target::Github, "baton-old.yml"));
    assert!(owns(Target::Env, "baton.env"));
    for (target, name) in [
        (Target::Systemd, "baton.cron"),
        (Target::Systemd, "other.timer"),
        (Target::Systemd, "baton-.timer"),
        (Target::Github, "ci.yml"),
        (Target::Cron, "baton.cron.bak"),
        (Target::Env, "baton.service"),
    ] {
        assert!(!owns(target, name), "{target} {name}");
    }
}

#[test]
fn render_env_hides_the_store_url_and_the_pg_password() {
    let c = config("[store]\nurl = \"postgres://baton:s3cret@db.example/baton\"\n");
    let mut o = opts(false);
    o.environment.insert("PGPASSWORD".into(), "hunter2".into());
    o.environment.insert("PGHOST".into(), "db.example".into());
    let text = &render(Target::Env, &c, &o).unwrap()[0].text;
    lacks(text, "s3cret");
    lacks(text, "hunter2");
    assert!(
        text.contains("# BATON_STORE_URL: [store] url: ")
            && text.contains("set, not shown (from /etc/baton/baton.toml:2)"),
        "{text}"
    );
    has(text, "db.example (from the environment)");
}

#[test]
fn render_systemd_refuses_a_state_directory_with_a_double_quote() {
    for dir in ["/var/lib/baton \"prod\"", "/var/lib/a\"b"] {
        let c = config(&format!("[scheduler]\nstate_dir = {dir:?}\n"));
        let got = render(Target::Systemd, &c, &opts(false));
        let Err(RenderError::Path { what, why, .. }) = got else {
            panic!("{dir}: not refused: {got:?}");
        };
        assert_eq!(what, "the state directory");
        assert!(why.contains("double quote"), "{why}");
    }
    // A path with `..`, which systemd ignores as not normalized.
    for dir in ["/var/lib/../lib/baton", "/srv/x/../state"] {
        let c = config(&format!("[scheduler]\nstate_dir = {dir:?}\n"));
        let got = render(Target::Systemd, &c, &opts(false));
        let Err(RenderError::Path { why, .. }) = got else {
            panic!("{dir}: not refused: {got:?}");
        };
        assert!(why.contains("not normalized"), "{why}");
    }
    // A quote of the other kind, a space, `%`: written, quoted; and a
    // double quote outside /var/lib, where ReadWritePaths= takes it escaped.
    let c = config("[scheduler]\nstate_dir = \"/var/lib/it's 100%\"\n");
    let unit = &render(Target::Systemd, &c, &opts(false)).unwrap()[0].text;
    has(unit, "StateDirectory=\"it's 100%%\"");
    let c = config("[scheduler]\nstate_dir = \"/srv/a\\\"b\"\n");
    let unit = &render(Target::Systemd, &c, &opts(false)).unwrap()[0].text;
    has(unit, "ReadWritePaths=\"-/srv/a\\\"b\"");
}

#[test]
fn render_env_is_all_comments_whatever_the_environment_holds() {
    let c = config("");
    let mut o = opts(false);
    o.environment
        .insert("PGHOST".into(), "db\nBATON_ENABLED=false\r\u{1b}[2J".into());
    o.environment
        .insert("TZ".into(), "UTC\nrm -rf /tmp/x".into());
    o.environment
        .insert("HOME".into(), "/root\u{2028}INJ=1\u{2029}X=2".into());
    o.config = "/etc/baton\nBATON_X=1/baton.toml".into();
    let text = &render(Target::Env, &c, &o).unwrap()[0].text;
    for line in text.split(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}']) {
        assert!(
            line.is_empty() || line.starts_with('#'),
            "{line:?} in:\n{text}"
        );
    }
    has(
        text,
        "db\\nBATON_ENABLED=false\\r\\u{1b}[2J (from the environment)",
    );
}

#[test]
fn render_per_job_refuses_a_zone_the_configuration_does_not_write() {
    // No `timezone` anywhere: the job's zone is this machine's, and the
    // machine running the entry may be in another.
    let c = config("[jobs.j]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n");
    for target in [Target::Cron, Target::Systemd, Target::Github] {
        let got = render(target, &c, &opts_for(target, true));
        let Err(RenderError::Refused(r)) = got else {
            panic!("{target}: not refused: {got:?}");
        };
        assert!(
            r[0].why.contains("not written in the configuration"),
            "{}",
            r[0]
        );
    }
    // The default forms decide on the host itself: rendered.
    assert!(render(Target::Cron, &c, &opts(false)).is_ok());
}

#[test]
fn render_cron_per_job_refuses_cron_tz_on_a_host_whose_zone_changes() {
    let c = config(
        "[scheduler]\ntimezone = \"Asia/Kolkata\"\n[jobs.k]\nschedule = \"0 12 * * *\"\nrun = \"true\"\n",
    );
    let mut o = opts(true);
    o.host_zone = "America/New_York".into();
    let Err(RenderError::Refused(r)) = render(Target::Cron, &c, &o) else {
        panic!("rendered CRON_TZ= on a host with daylight saving");
    };
    assert!(r[0].why.contains("changes its offset"), "{}", r[0]);
    // A host in UTC: fine.
    o.host_zone = "UTC".into();
    let text = &render(Target::Cron, &c, &o).unwrap()[0].text;
    has(text, "CRON_TZ=Asia/Kolkata\n");
}

#[test]
fn render_systemd_writes_weekdays_from_monday_and_either_day_as_two_lines() {
    let utc = zone("UTC");
    let o = opts(true);
    for (text, want) in [
        ("30 9 * * 0-2", &["Mon,Tue,Sun *-*-* 09:30:00 UTC"][..]),
        ("30 9 * * 5,6,0", &["Fri..Sun *-*-* 09:30:00 UTC"][..]),
        ("30 9 * * 6,0,1", &["Mon,Sat,Sun *-*-* 09:30:00 UTC"][..]),
        ("30 9 * * 1-5", &["Mon..Fri *-*-* 09:30:00 UTC"][..]),
        (
            "30 9 1 * 0-2",
            &["Mon,Tue,Sun *-*-* 09:30:00 UTC", "*-*-01 09:30:00 UTC"][..],
        ),
        // Either day field, one of them every day: every day.
        ("30 9 1 * 0-6", &["*-*-* 09:30:00 UTC"][..]),
        ("30 9 1-31 * 1", &["*-*-* 09:30:00 UTC"][..]),
        // Both must match when one starts with `*`.
        (
            "30 9 */2 * 0",
            &["Sun *-*-01,03,05,07,09,11,13,15,17,19,21,23,25,27,29,31 09:30:00 UTC"][..],
        ),
    ] {
        let got = super::systemd::on_calendar(&when("schedule", text), &utc, &o).unwrap();
        assert_eq!(got, want, "{text}");
    }
}

/// The daemon's unit for a configuration at `/etc/baton/baton.toml`.
fn daemon_unit(text: &str) -> String {
    let c = config::parse(
        text,
        Path::new("/etc/baton/baton.toml"),
        &Overrides::default(),
    )
    .unwrap();
    render(Target::Systemd, &c, &opts(false)).unwrap()[0]
        .text
        .clone()
}

/// The lines of `unit` that set `key`, values only.
fn settings<'a>(unit: &'a str, key: &str) -> Vec<&'a str> {
    let prefix = format!("{key}=");
    unit.lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect()
}

#[test]
fn render_systemd_daemon_runs_as_baton_and_may_write_only_what_it_writes() {
    // The package's layout: StateDirectory= makes the directory baton's.
    let unit = daemon_unit("[scheduler]\nstate_dir = \"/var/lib/baton\"\n");
    assert_eq!(settings(&unit, "User"), ["baton"]);
    assert_eq!(settings(&unit, "Group"), ["baton"]);
    assert_eq!(settings(&unit, "StateDirectory"), ["baton"]);
    assert_eq!(settings(&unit, "StateDirectoryMode"), ["0700"]);
    assert_eq!(settings(&unit, "ReadWritePaths"), ["-/etc/baton/jobs.d"]);
    assert_eq!(settings(&unit, "ProtectSystem"), ["strict"]);
    assert_eq!(settings(&unit, "NoNewPrivileges"), ["yes"]);
    assert_eq!(settings(&unit, "RestrictNamespaces"), ["user pid"]);
    assert!(settings(&unit, "SupplementaryGroups").is_empty(), "{unit}");
    assert!(settings(&unit, "RuntimeDirectory").is_empty(), "{unit}");

    // The default socket, in the state directory, for a group: the group
    // may pass through the directory (search only) to reach it.
    let unit = daemon_unit(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\n[daemon]\nsocket_group = \"adm\"\n",
    );
    assert_eq!(settings(&unit, "StateDirectoryMode"), ["0711"]);
    assert_eq!(settings(&unit, "SupplementaryGroups"), ["adm"]);

    // A state directory elsewhere, and a socket under /run for a group.
    let unit = daemon_unit(
        "[scheduler]\nstate_dir = \"/srv/baton state\"\n\
         [daemon]\nsocket = \"/run/baton/api.sock\"\nsocket_group = \"adm\"\n",
    );
    assert!(settings(&unit, "StateDirectory").is_empty(), "{unit}");
    assert_eq!(
        settings(&unit, "ReadWritePaths"),
        ["\"-/srv/baton state\"", "-/etc/baton/jobs.d"]
    );
    assert_eq!(settings(&unit, "RuntimeDirectory"), ["baton"]);
    assert_eq!(settings(&unit, "SupplementaryGroups"), ["adm"]);

    // A socket in neither: its directory is made writable.
    let unit = daemon_unit(
        "[scheduler]\nstate_dir = \"/var/lib/baton\"\n\
         [daemon]\nsocket = \"/srv/api/daemon.sock\"\n",
    );
    assert_eq!(
        settings(&unit, "ReadWritePaths"),
        ["-/srv/api", "-/etc/baton/jobs.d"]
    );
}

#[test]
fn render_github_refuses_a_path_github_would_read_as_an_expression() {
    let c = config(MIXED);
    for (what, config, bin) in [
        (
            "the configuration",
            "x${{ secrets.GITHUB_TOKEN }}/baton.toml",
            "/usr/bin/baton",
        ),
        (
            "the binary",
            "deploy/baton.toml",
            "/opt/${{ github.token }}/baton",
        ),
    ] {
        let mut o = opts_for(Target::Github, true);
        o.config = config.into();
        o.bin = bin.into();
        let got = render(Target::Github, &c, &o);
        let Err(RenderError::Path {
            what: named, why, ..
        }) = got
        else {
            panic!("{config} {bin}: not refused: {got:?}");
        };
        assert_eq!(named, what);
        assert!(why.contains("expression"), "{why}");
    }
}
