//! The configuration's contract: the issue's own example parses to what it
//! says, and every kind of mistake is refused with a message that names the
//! file, line, key, value and what is allowed.

use std::path::Path;
use std::time::Duration;

use super::*;

const EXAMPLE: &str = r#"
[scheduler]                  # every key optional
state_dir = "/var/lib/baton" # default as `baton exec`; $BATON_STATE_DIR overrides
timezone = "Asia/Kolkata"    # IANA; default the system's zone
enabled = true               # the kill switch; BATON_ENABLED=false overrides
alert_command = "/usr/local/bin/page-me"   # string → sh -c, or an argv list; JSON on stdin
# defaults for every job, each overridable per job:
retries = 0                  # extra attempts of a failed step
backoff = "30s"              # first delay; doubles per attempt
backoff_max = "15m"
no_retry_exit_codes = [2]    # deterministic failures: never retried
timeout = "1h"               # per step attempt → exit 124 recorded, group stopped
ttl = "30s"                  # lease renewal, as exec
kill_grace = "10s"
max_runtime = "2h"           # soft: one "overrunning" alert per run, nothing stopped
output_limit = "1MiB"        # captured output kept per step attempt, then a "cut" note

[jobs.backup]                # name: [A-Za-z0-9_.-]{1,64}
schedule = "0 3 * * *"       # 5-field cron (6 with seconds); names, ranges, steps, lists
timezone = "Europe/Berlin"   # else the scheduler's
enabled = true
run = "/usr/local/bin/backup.sh"   # one step: string → /bin/sh -c, list → argv

[jobs.capture]
every = "15m"                # instead of `schedule`: occurrences at whole multiples since 1970-01-01T00:00Z
lock = "capture"             # lock name (default: the job's name)
[[jobs.capture.steps]]       # instead of `run`: steps in order; a step that still fails stops the rest
name = "capture"
run = ["python3", "capture.py", "--days", "7"]
retries = 4
timeout = "3600s"
env = { MAX_CALLS = "1500" }
cwd = "/srv/app"
[[jobs.capture.checks]]      # run after the steps whatever they did; never retried
name = "health"
run = "python3 health.py"
"#;

fn load_text(text: &str) -> Result<Config, ConfigError> {
    parse(text, Path::new("/etc/baton.toml"), &Overrides::default())
}

fn error(text: &str) -> String {
    match load_text(text) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn assert_names(msg: &str, needles: &[&str]) {
    assert!(!msg.contains('\n'), "more than one line: {msg}");
    for n in needles {
        assert!(msg.contains(n), "{msg:?} lacks {n:?}");
    }
}

#[test]
fn the_example_means_what_it_says() {
    let c = load_text(EXAMPLE).unwrap();
    let s = &c.settings;
    assert_eq!(s.timezone.value.name, "Asia/Kolkata");
    assert_eq!(s.timezone.provenance(), "/etc/baton.toml:4");
    assert_eq!(
        s.alert_command.value,
        Some(Command::Shell("/usr/local/bin/page-me".into()))
    );
    assert_eq!(s.policy.timeout.value, Some(Duration::from_secs(3600)));
    assert_eq!(s.policy.output_limit.value, 1 << 20);
    let backup = &c.jobs["backup"];
    assert_eq!(backup.when.value.text, "0 3 * * *");
    assert_eq!(backup.timezone.value.name, "Europe/Berlin");
    assert_eq!(backup.lock.value, "backup");
    assert_eq!(backup.steps.len(), 1);
    assert_eq!(backup.steps[0].name, "backup");
    assert_eq!(
        backup.policy.retries.provenance(),
        "[scheduler] /etc/baton.toml:8"
    );
    let capture = &c.jobs["capture"];
    assert_eq!(capture.when.value.key, "every");
    assert_eq!(capture.timezone.value.name, "Asia/Kolkata");
    assert!(capture.timezone.inherited);
    let step = &capture.steps[0];
    assert_eq!(step.retries.value, 4);
    assert_eq!(step.timeout.value, Some(Duration::from_secs(3600)));
    assert_eq!(step.env, vec![("MAX_CALLS".to_owned(), "1500".to_owned())]);
    assert_eq!(step.cwd.as_deref(), Some(Path::new("/srv/app")));
    assert_eq!(
        step.action.value,
        Action::Command(Command::Argv(vec![
            "python3".into(),
            "capture.py".into(),
            "--days".into(),
            "7".into()
        ]))
    );
    let check = &capture.checks[0];
    assert_eq!(check.kind, StepKind::Check);
    assert_eq!(check.retries.value, 0);
}

#[test]
fn defaults_apply_when_nothing_is_said() {
    let c = load_text("[jobs.a]\nevery = 60\nrun = \"true\"\n").unwrap();
    let p = &c.settings.policy;
    assert_eq!(p.retries.value, 0);
    assert_eq!(p.backoff.value, Duration::from_secs(30));
    assert_eq!(p.backoff_max.value, Duration::from_secs(900));
    assert_eq!(p.no_retry_exit_codes.value, vec![2]);
    assert_eq!(p.ttl.value, Duration::from_secs(30));
    assert_eq!(p.kill_grace.value, Duration::from_secs(10));
    assert_eq!(p.catch_up_window.value, Duration::from_secs(3600));
    assert_eq!(c.settings.history_keep.value, 1000);
    assert_eq!(p.retries.provenance(), "default");
    assert!(c.settings.enabled.value);
}

#[test]
fn the_environment_overrides_scheduler_keys_and_says_so() {
    let mut over = Overrides::default();
    over.env.insert("retries".into(), "3".into());
    over.env.insert("enabled".into(), "false".into());
    let c = parse("[scheduler]\nretries = 1\n", Path::new("/b.toml"), &over).unwrap();
    assert_eq!(c.settings.policy.retries.value, 3);
    assert_eq!(c.settings.policy.retries.provenance(), "BATON_RETRIES");
    assert!(!c.enabled());
    over.env.insert("timeout".into(), "soon".into());
    let e = parse("", Path::new("/b.toml"), &over)
        .unwrap_err()
        .to_string();
    assert_names(&e, &["BATON_TIMEOUT", "\"soon\"", "not a duration"]);
}

#[test]
fn unknown_keys_are_named_with_a_suggestion() {
    let e = error("[jobs.a]\nevery = \"1m\"\nrun = \"true\"\nretires = 3\n");
    assert_names(
        &e,
        &[
            "/etc/baton.toml:4",
            "jobs.a.retires",
            "unknown key",
            "did you mean retries",
        ],
    );
    let e = error("[scheduler]\nstate = \"/x\"\n");
    assert_names(&e, &["/etc/baton.toml:2", "scheduler.state", "unknown key"]);
    let e = error("[sched]\n");
    assert_names(&e, &["sched", "unknown key"]);
}

#[test]
fn wrong_types_and_bad_values_are_named() {
    let e = error("[scheduler]\nretries = \"three\"\n");
    assert_names(
        &e,
        &[":2", "scheduler.retries", "\"three\"", "whole number"],
    );
    let e = error("[scheduler]\ntimeout = \"1 hour\"\n");
    assert_names(&e, &[":2", "scheduler.timeout", "\"1 hour\"", "1h30m"]);
    let e = error("[scheduler]\noutput_limit = \"lots\"\n");
    assert_names(&e, &["scheduler.output_limit", "\"lots\"", "MiB"]);
    let e = error("[scheduler]\ntimezone = \"Asia/Kolkatta\"\n");
    assert_names(
        &e,
        &["scheduler.timezone", "Asia/Kolkatta", "unknown time zone"],
    );
    let e = error("[scheduler]\nenabled = \"no\"\n");
    assert_names(&e, &["scheduler.enabled", "true or false"]);
    let e = error("[scheduler]\nno_retry_exit_codes = [2, 300]\n");
    assert_names(&e, &["no_retry_exit_codes", "0 to 255"]);
}

#[test]
fn a_bad_cron_names_the_part() {
    let e = error("[jobs.a]\nschedule = \"61 3 * * *\"\nrun = \"true\"\n");
    assert_names(
        &e,
        &[":2", "jobs.a.schedule", "\"61 3 * * *\"", "minute", "61"],
    );
    let e = error("[jobs.a]\nschedule = \"0 3 * *\"\nrun = \"true\"\n");
    assert_names(&e, &["jobs.a.schedule", "found 4"]);
}

#[test]
fn a_job_needs_exactly_one_schedule_and_one_way_to_run() {
    let e = error("[jobs.a]\nschedule = \"0 3 * * *\"\nevery = \"1h\"\nrun = \"true\"\n");
    assert_names(&e, &["jobs.a", "both schedule and every"]);
    let e = error("[jobs.a]\nrun = \"true\"\n");
    assert_names(
        &e,
        &["/etc/baton.toml:1", "jobs.a", "neither schedule nor every"],
    );
    let e = error("[jobs.a]\nevery = \"1h\"\nrun = \"true\"\n[[jobs.a.steps]]\nrun = \"x\"\n");
    assert_names(&e, &["jobs.a", "both run and steps"]);
    let e = error("[jobs.a]\nevery = \"1h\"\n");
    assert_names(&e, &["jobs.a", "neither run nor steps"]);
}

#[test]
fn a_check_is_never_retried() {
    let e = error(
        "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\n[[jobs.a.checks]]\nname = \"h\"\nrun = \"true\"\nretries = 2\n",
    );
    assert_names(
        &e,
        &[
            "/etc/baton.toml:7",
            "jobs.a.checks[0].retries",
            "never retried",
        ],
    );
}

#[test]
fn names_and_combinations_are_checked() {
    let e = error("[jobs.\"bad name\"]\nevery = \"1h\"\nrun = \"true\"\n");
    assert_names(&e, &["not a job name"]);
    let e = error("[jobs.a]\nevery = \"1h\"\nlock = \"a/b\"\nrun = \"true\"\n");
    assert_names(&e, &["jobs.a.lock", "lock name"]);
    let e = error(
        "[jobs.a]\nevery = \"1h\"\n[[jobs.a.steps]]\nname = \"x\"\nrun = \"1\"\n[[jobs.a.steps]]\nname = \"x\"\nrun = \"2\"\n",
    );
    assert_names(&e, &["jobs.a", "unique"]);
    let e = error("[jobs.a]\nevery = \"1h\"\nrun = \"\"\n");
    assert_names(&e, &["jobs.a.run", "empty"]);
    let e = error("[jobs.a]\nevery = \"1h\"\nrun = []\n");
    assert_names(&e, &["jobs.a.run"]);
    let e = error("[jobs.a]\nevery = \"0s\"\nrun = \"true\"\n");
    assert_names(&e, &["jobs.a.every", "longer than zero"]);
}

#[test]
fn a_kill_grace_too_long_for_the_takeover_grace_is_refused() {
    let e = error("[scheduler]\nkill_grace = \"1m\"\n");
    assert_names(&e, &[":2", "kill_grace", "takeover_grace"]);
    let e = error("[jobs.a]\nevery = \"1h\"\nkill_grace = \"40s\"\nrun = \"true\"\n");
    assert_names(&e, &[":3", "jobs.a.kill_grace"]);
}

#[test]
fn toml_that_does_not_parse_names_its_line() {
    let e = error("[jobs.a]\nevery = \n");
    assert_names(&e, &["/etc/baton.toml:2", "not valid TOML"]);
}

#[test]
fn a_relative_state_dir_in_the_file_is_the_files_own() {
    let c = parse(
        "[scheduler]\nstate_dir = \"state\"\n",
        Path::new("/srv/app/baton.toml"),
        &Overrides::default(),
    )
    .unwrap();
    assert_eq!(c.settings.state_dir.value, Path::new("/srv/app/state"));
    let mut over = Overrides::default();
    over.env.insert("state_dir".into(), "rel".into());
    let e = parse("", Path::new("/b.toml"), &over)
        .unwrap_err()
        .to_string();
    assert_names(&e, &["BATON_STATE_DIR", "relative"]);
}

#[test]
fn integers_are_seconds_and_sizes_bytes() {
    let c = load_text("[scheduler]\ntimeout = 90\noutput_limit = 4096\n").unwrap();
    assert_eq!(
        c.settings.policy.timeout.value,
        Some(Duration::from_secs(90))
    );
    assert_eq!(c.settings.policy.output_limit.value, 4096);
    let c = load_text("[scheduler]\ntimeout = 0\n").unwrap();
    assert_eq!(c.settings.policy.timeout.value, None);
}
