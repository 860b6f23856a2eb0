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
fn a_variables_exit_codes_are_read_bare_or_as_the_file_writes_them() {
    let codes = |text: &str| {
        let mut over = Overrides::default();
        over.env.insert("no_retry_exit_codes".into(), text.into());
        parse("", Path::new("/b.toml"), &over).map(|c| c.settings.policy.no_retry_exit_codes.value)
    };
    assert_eq!(codes("3,4").unwrap(), vec![3, 4]);
    assert_eq!(codes("[2]").unwrap(), vec![2]);
    assert_eq!(codes(" [3, 4] ").unwrap(), vec![3, 4]);
    assert_eq!(codes("[]").unwrap(), Vec::<i32>::new());
    for bad in ["[3,4", "[300]", "[[2]]", "two"] {
        let e = codes(bad).unwrap_err().to_string();
        assert_names(&e, &["BATON_NO_RETRY_EXIT_CODES", "0 to 255"]);
    }
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
fn a_suggestion_is_the_closest_key_with_a_swap_counting_as_one_edit() {
    // Two letters swapped: `run`, one edit away, not `env`, two.
    let e = error("[jobs.a]\nevery = \"1m\"\nrnu = \"true\"\n");
    assert_names(&e, &["jobs.a.rnu", "did you mean run?"]);
    let e = error("[jobs.a]\nevery = \"1m\"\nrun = \"true\"\ntimeuot = \"1s\"\n");
    assert_names(&e, &["jobs.a.timeuot", "did you mean timeout?"]);
    // Nothing close: no suggestion rather than a far one.
    let e = error("[jobs.a]\nevery = \"1m\"\nrun = \"true\"\nxyz = 1\n");
    assert!(!e.to_string().contains("did you mean"), "{e}");
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
    // An empty directory is never read as the configuration's own.
    let e = error("[scheduler]\nstate_dir = \"\"\n");
    assert_names(&e, &[":2", "scheduler.state_dir", "is empty"]);
    let e = error("[jobs.a]\nschedule = \"* * * * *\"\nrun = \"true\"\ncwd = \"\"\n");
    assert_names(&e, &[":4", "jobs.a.cwd", "is empty"]);
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

// ---- [store] -----------------------------------------------------------

#[test]
fn config_without_store_has_none() {
    let c = load_text("").unwrap();
    assert_eq!(c.store, None);
    let shown = crate::views::show::to_json(&c);
    assert_eq!(shown["store"], serde_json::Value::Null);
    assert!(!crate::views::show::render(&c).contains("[store]"));
}

#[test]
fn config_store_url_and_password_file_carry_their_source() {
    let c = load_text(
        "[store]\nurl = \"postgresql://baton@db.example:5433/baton\"\npassword_file = \"pg.pw\"\n",
    )
    .unwrap();
    let st = c.store.unwrap();
    assert_eq!(
        st.url.value.secret(),
        "postgresql://baton@db.example:5433/baton"
    );
    assert_eq!(st.url.provenance(), "/etc/baton.toml:2");
    assert_eq!(
        st.password_file.value.as_deref(),
        Some(Path::new("/etc/pg.pw"))
    );
    assert_eq!(st.password_file.provenance(), "/etc/baton.toml:3");
}

#[test]
fn config_store_env_overrides_the_file() {
    let mut over = Overrides::default();
    over.env.insert(
        "store_url".into(),
        "postgres://other@db2.example/baton".into(),
    );
    let c = parse(
        "[store]\nurl = \"postgres://baton@db.example/baton\"\n",
        Path::new("/etc/baton.toml"),
        &over,
    )
    .unwrap();
    let st = c.store.unwrap();
    assert_eq!(st.url.value.secret(), "postgres://other@db2.example/baton");
    assert_eq!(st.url.provenance(), "BATON_STORE_URL");
    // The variable alone is enough.
    let c = parse("", Path::new("/etc/baton.toml"), &over).unwrap();
    assert_eq!(c.store.unwrap().url.provenance(), "BATON_STORE_URL");
}

#[test]
fn config_store_password_is_never_shown() {
    let c = load_text("[store]\nurl = \"postgres://baton:s3cret@db.example/baton\"\n").unwrap();
    let text = crate::views::show::render(&c);
    assert!(
        text.contains("url = \"postgres://baton:***@db.example/baton\""),
        "{text}"
    );
    let json = crate::views::show::to_json(&c).to_string();
    assert!(
        json.contains("postgres://baton:***@db.example/baton"),
        "{json}"
    );
    for shown in [text, json, format!("{c:?}")] {
        assert!(!shown.contains("s3cret"), "{shown}");
    }
}

#[test]
fn config_store_mistakes_are_named() {
    let msg = error("[store]\nurl = \"mysql://u:hunter2@db/x\"\n");
    assert_names(
        &msg,
        &[
            "/etc/baton.toml:2",
            "store.url",
            "postgres:// or postgresql://",
        ],
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    assert_names(
        &error("[store]\nurl = 5432\n"),
        &["store.url", "PostgreSQL URL"],
    );
    assert_names(
        &error("[store]\npassword_file = \"pw\"\n"),
        &["/etc/baton.toml:1", "store.url", "is missing"],
    );
    assert_names(
        &error("[store]\nurl = \"postgres://h/db\"\npasword_file = \"pw\"\n"),
        &["store.pasword_file", "did you mean password_file?"],
    );
    let msg = error("[store]\nurl = \"postgres://u:hunter2@h/db\"\npassword_file = \"pw\"\n");
    assert_names(
        &msg,
        &["/etc/baton.toml:3", "store.password_file", "one place"],
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    let mut over = Overrides::default();
    over.env.insert("store_url".into(), "http://db/x".into());
    let e = parse("", Path::new("/etc/baton.toml"), &over).unwrap_err();
    assert_names(&e.to_string(), &["BATON_STORE_URL", "store.url"]);
}

#[test]
fn config_store_tls_keys_carry_their_source_and_paths_are_the_files() {
    let c = load_text("[store]\nurl = \"postgres://baton@db.example/baton\"\n").unwrap();
    let st = c.store.unwrap();
    assert_eq!(st.sslmode.value, baton_pg::SslMode::Prefer);
    assert_eq!(st.sslmode.provenance(), "default");
    assert_eq!(st.sslrootcert.value, None);
    let c = load_text(
        "[store]\nurl = \"postgres://baton@db.example/baton\"\nsslmode = \"verify-full\"\n\
         sslrootcert = \"tls/ca.pem\"\nsslcert = \"/pki/c.pem\"\nsslkey = \"c.key\"\n",
    )
    .unwrap();
    let st = c.store.as_ref().unwrap();
    assert_eq!(st.sslmode.value, baton_pg::SslMode::VerifyFull);
    assert_eq!(st.sslmode.provenance(), "/etc/baton.toml:3");
    assert_eq!(
        st.sslrootcert.value.as_deref(),
        Some(Path::new("/etc/tls/ca.pem"))
    );
    assert_eq!(st.sslcert.value.as_deref(), Some(Path::new("/pki/c.pem")));
    assert_eq!(st.sslkey.value.as_deref(), Some(Path::new("/etc/c.key")));
    assert_eq!(st.sslkey.provenance(), "/etc/baton.toml:6");
    let text = crate::views::show::render(&c);
    assert!(text.contains("sslmode = \"verify-full\""), "{text}");
    assert!(text.contains("sslrootcert = \"/etc/tls/ca.pem\""), "{text}");
    // `system` is a word, not a file beside the configuration.
    let c = load_text("[store]\nurl = \"postgres://h/d\"\nsslrootcert = \"system\"\n").unwrap();
    let root = c.store.unwrap().sslrootcert.value;
    assert_eq!(root.as_deref(), Some(Path::new("system")));
    // A variable sets them as the other store keys.
    let mut over = Overrides::default();
    over.env.insert("store_sslmode".into(), "require".into());
    let c = parse(
        "[store]\nurl = \"postgres://h/d\"\n",
        Path::new("/etc/baton.toml"),
        &over,
    )
    .unwrap();
    let st = c.store.unwrap();
    assert_eq!(st.sslmode.value, baton_pg::SslMode::Require);
    assert_eq!(st.sslmode.provenance(), "BATON_STORE_SSLMODE");
}

#[test]
fn config_store_tls_mistakes_are_named() {
    let msg = error("[store]\nurl = \"postgres://h/d\"\nsslmode = \"verify-all\"\n");
    assert_names(
        &msg,
        &[
            "/etc/baton.toml:3",
            "store.sslmode",
            "\"verify-all\"",
            "disable, prefer, require, verify-ca or verify-full",
        ],
    );
    // The same setting in the url and as a key: both places are named.
    let msg = error(
        "[store]\nurl = \"postgres://u:hunter2@h/d?sslmode=require\"\nsslmode = \"verify-full\"\n",
    );
    assert_names(
        &msg,
        &[
            "/etc/baton.toml:3",
            "store.sslmode",
            "/etc/baton.toml:2",
            "one place",
        ],
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    let msg = error(
        "[store]\nurl = \"postgres://h/d?sslrootcert=%2Fca.pem\"\nsslrootcert = \"ca.pem\"\n",
    );
    assert_names(&msg, &["store.sslrootcert", "url", "one place"]);
    // A client certificate without its key, or a key without its
    // certificate, as keys or in the url: refused when the file is read.
    let msg = error("[store]\nurl = \"postgres://h/d\"\nsslcert = \"client.pem\"\n");
    assert_names(
        &msg,
        &[
            "/etc/baton.toml:3",
            "store.sslcert",
            "sslkey is not",
            "its key",
        ],
    );
    let msg = error("[store]\nurl = \"postgres://u:hunter2@h/d?sslkey=%2Fk.pem\"\n");
    assert_names(
        &msg,
        &[
            "/etc/baton.toml:2",
            "store.sslkey",
            "in the url",
            "sslcert is not",
        ],
    );
    assert!(!msg.contains("hunter2"), "{msg}");
    load_text("[store]\nurl = \"postgres://h/d?sslcert=%2Fc.pem\"\nsslkey = \"k.pem\"\n")
        .expect("a certificate in the url and its key as a key");
    // A key the url does not name is no conflict; a default never is.
    load_text("[store]\nurl = \"postgres://h/d?sslmode=require\"\nsslrootcert = \"ca.pem\"\n")
        .unwrap();
    let mut over = Overrides::default();
    over.env.insert("store_sslkey".into(), "/k.pem".into());
    let e = parse("", Path::new("/etc/baton.toml"), &over).unwrap_err();
    assert_names(
        &e.to_string(),
        &["BATON_STORE_SSLKEY", "store.sslkey", "no store url"],
    );
    assert_names(
        &error("[store]\nurl = \"postgres://h/d\"\nsslcert = \"\"\n"),
        &["store.sslcert", "is empty"],
    );
}

// ---- [daemon] ----------------------------------------------------------

#[test]
fn daemon_defaults_and_values_carry_their_source() {
    let c = load_text("").unwrap();
    assert_eq!(c.daemon.listen.value.to_string(), "127.0.0.1:8677");
    assert_eq!(c.daemon.listen.provenance(), "default");
    assert_eq!(c.daemon.token_file.value, None);
    assert_eq!(c.daemon.shutdown_grace.value, Duration::from_secs(60));
    let c = load_text(
        "[daemon]\nlisten = \"[::1]:9000\"\ntoken_file = \"token\"\nshutdown_grace = \"2m\"\n",
    )
    .unwrap();
    assert_eq!(c.daemon.listen.value.to_string(), "[::1]:9000");
    assert_eq!(c.daemon.listen.provenance(), "/etc/baton.toml:2");
    assert_eq!(
        c.daemon.token_file.value.as_deref(),
        Some(Path::new("/etc/token"))
    );
    assert_eq!(c.daemon.shutdown_grace.value, Duration::from_secs(120));
    let named = load_text("[daemon]\nlisten = \"localhost:8080\"\n").unwrap();
    assert_eq!(
        named.daemon.listen.value,
        crate::config::Listen::Host {
            name: "localhost".into(),
            port: 8080
        }
    );
    let c = load_text("[daemon]\ntoken_file = \"/run/baton/token\"\n").unwrap();
    assert_eq!(
        c.daemon.token_file.value.as_deref(),
        Some(Path::new("/run/baton/token"))
    );
}

#[test]
fn daemon_socket_defaults_to_the_state_directory_and_takes_a_group() {
    let c = load_text("[scheduler]\nstate_dir = \"/var/lib/baton\"\n").unwrap();
    assert_eq!(c.daemon.socket.value, None);
    assert_eq!(c.daemon.socket.provenance(), "default");
    assert_eq!(c.daemon_socket(), Path::new("/var/lib/baton/daemon.sock"));
    assert_eq!(c.daemon.socket_group.value, None);
    let c = load_text("[daemon]\nsocket = \"run/api.sock\"\nsocket_group = \"baton\"\n").unwrap();
    assert_eq!(c.daemon_socket(), Path::new("/etc/run/api.sock"));
    assert_eq!(c.daemon.socket_group.value.as_deref(), Some("baton"));
    assert_eq!(c.daemon.socket_group.provenance(), "/etc/baton.toml:3");
    assert_names(
        &error("[daemon]\nsocket = \"\"\n"),
        &[
            "/etc/baton.toml:2",
            "daemon.socket",
            "STATE_DIR/daemon.sock",
        ],
    );
    assert_names(
        &error("[daemon]\nsocket_group = \"a b\"\n"),
        &["daemon.socket_group", "\"a b\"", "a group's name or number"],
    );
    assert_names(
        &error("[daemon]\nsocket_group = 0\n"),
        &["daemon.socket_group", "a group's name or number"],
    );
}

#[test]
fn daemon_mistakes_are_named() {
    let msg = error("[daemon]\nlisten = \"localhost\"\n");
    assert_names(
        &msg,
        &[
            "/etc/baton.toml:2",
            "daemon.listen",
            "\"localhost\"",
            "no port",
            "IP:PORT",
            "HOST:PORT",
            "[::1]:8677",
        ],
    );
    assert_names(
        &error("[daemon]\nlisten = \"local host:8677\"\n"),
        &["daemon.listen", "\"local host:8677\"", "host name"],
    );
    assert_names(
        &error("[daemon]\nlisten = 8677\n"),
        &["daemon.listen", "IP:PORT"],
    );
    assert_names(
        &error("[daemon]\nlisten = \"::1:8677\"\n"),
        &["daemon.listen", "\"::1:8677\""],
    );
    assert_names(
        &error("[daemon]\nlistn = \"127.0.0.1:1\"\n"),
        &["daemon.listn", "did you mean listen?"],
    );
    assert_names(
        &error("[daemon]\nshutdown_grace = \"soon\"\n"),
        &["/etc/baton.toml:2", "daemon.shutdown_grace", "\"soon\""],
    );
    assert_names(
        &error("[daemon]\ntoken_file = \"\"\n"),
        &["daemon.token_file", "is empty"],
    );
    assert_names(&error("daemon = 1\n"), &["daemon", "expected a table"]);
}

// ---- jobs.d/ ---------------------------------------------------------------

/// A configuration directory: `baton.toml` and `jobs.d/` files.
fn dir_with(main: &str, dropins: &[(&str, &str)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("baton.toml");
    std::fs::write(&path, main).unwrap();
    if !dropins.is_empty() {
        std::fs::create_dir(tmp.path().join("jobs.d")).unwrap();
    }
    for (name, text) in dropins {
        std::fs::write(tmp.path().join("jobs.d").join(name), text).unwrap();
    }
    (tmp, path)
}

fn load_err(path: &Path) -> String {
    match load(path, &Overrides::default()) {
        Ok(_) => panic!("accepted {}", path.display()),
        Err(e) => e.to_string(),
    }
}

const MAIN: &str =
    "[scheduler]\nretries = 3\ntimezone = \"UTC\"\n\n[jobs.main]\nevery = \"1h\"\nrun = \"true\"\n";

#[test]
fn a_dropin_defines_its_job_in_either_form_and_inherits_the_scheduler() {
    let canonical =
        "# the backup\nschedule = \"0 3 * * *\"\nrun = \"backup.sh\"\n\n[env]\nK = \"V\"\n";
    let table = "[jobs.report]\nevery = \"15m\"\ncwd = \"srv\"\n[[jobs.report.steps]]\nname = \"a\"\nrun = [\"x\", \"y\"]\n";
    let (tmp, path) = dir_with(MAIN, &[("backup.toml", canonical), ("report.toml", table)]);
    let c = load(&path, &Overrides::default()).unwrap();
    assert_eq!(
        c.jobs.keys().collect::<Vec<_>>(),
        ["backup", "main", "report"]
    );
    let backup = &c.jobs["backup"];
    let file = tmp.path().join("jobs.d/backup.toml");
    assert_eq!(backup.when.provenance(), format!("{}:2", file.display()));
    assert!(backup.when.provenance().ends_with("jobs.d/backup.toml:2"));
    assert_eq!(
        backup.steps[0].action.provenance(),
        format!("{}:3", file.display())
    );
    assert_eq!(backup.steps[0].env, vec![("K".into(), "V".into())]);
    assert_eq!(backup.policy.retries.value, 3);
    assert!(backup.policy.retries.inherited);
    assert_eq!(
        backup.policy.retries.provenance(),
        format!("[scheduler] {}:2", path.display())
    );
    let report = &c.jobs["report"];
    assert!(report.source.to_string().ends_with("jobs.d/report.toml:1"));
    assert_eq!(
        report.steps[0].action.value,
        Action::Command(Command::Argv(vec!["x".into(), "y".into()]))
    );
    // A relative cwd is the configuration's directory's, as in baton.toml.
    assert_eq!(
        report.steps[0].cwd.as_deref(),
        Some(tmp.path().join("srv").as_path())
    );
    // parse() reads the file alone.
    let alone = parse(MAIN, &path, &Overrides::default()).unwrap();
    assert_eq!(alone.jobs.len(), 1);
}

#[test]
fn a_dropin_skips_hidden_and_other_files_and_a_missing_directory_is_fine() {
    let (_tmp, path) = dir_with(MAIN, &[]);
    assert_eq!(load(&path, &Overrides::default()).unwrap().jobs.len(), 1);
    let (_tmp, path) = dir_with(
        MAIN,
        &[
            (".a.toml.tmp-0123456789abcdef", "garbage ="),
            (".hidden.toml", "garbage ="),
            ("README", "garbage ="),
            ("notes.toml.bak", "garbage ="),
        ],
    );
    assert_eq!(load(&path, &Overrides::default()).unwrap().jobs.len(), 1);
}

#[test]
fn dropin_mistakes_name_the_file() {
    let job = "every = \"1h\"\nrun = \"true\"\n";
    // Defined twice: both places are named.
    let (tmp, path) = dir_with(MAIN, &[("main.toml", job)]);
    let msg = load_err(&path);
    assert_names(
        &msg,
        &[
            &format!("{}:1", tmp.path().join("jobs.d/main.toml").display()),
            "jobs.main",
            &format!("{}:5", path.display()),
            "not both",
        ],
    );
    // Not a job name.
    let (_tmp, path) = dir_with(MAIN, &[("bad name.toml", job)]);
    assert_names(
        &load_err(&path),
        &["jobs.d/bad name.toml", "\"bad name\" is not a job name"],
    );
    // A reserved name, refused as in baton.toml.
    let (_tmp, path) = dir_with(MAIN, &[("alerts.toml", job)]);
    assert_names(&load_err(&path), &["jobs.d/alerts.toml:1", "reserved"]);
    // Scheduler and daemon tables, in either form.
    for text in [
        "[scheduler]\nretries = 1\n",
        "every = \"1h\"\nrun = \"true\"\n[daemon]\nlisten = \"0.0.0.0:1\"\n",
        "[jobs.x]\nevery = \"1h\"\nrun = \"true\"\n[scheduler]\nretries = 1\n",
    ] {
        let (_tmp, path) = dir_with(MAIN, &[("x.toml", text)]);
        assert_names(
            &load_err(&path),
            &["jobs.d/x.toml:", "belongs in baton.toml"],
        );
    }
    // The [jobs.NAME] form: another job, or anything beside it.
    for (text, needle) in [
        (
            "[jobs.y]\nevery = \"1h\"\nrun = \"true\"\n",
            "jobs.d/x.toml:1: jobs.y:",
        ),
        (
            "[jobs.x]\nevery = \"1h\"\nrun = \"true\"\n[jobs.y]\nevery = \"1h\"\nrun = \"true\"\n",
            "jobs.d/x.toml:4: jobs.y:",
        ),
        (
            "retries = 1\n[jobs.x]\nevery = \"1h\"\nrun = \"true\"\n",
            "jobs.d/x.toml:1: retries:",
        ),
    ] {
        let (_tmp, path) = dir_with(MAIN, &[("x.toml", text)]);
        let msg = load_err(&path);
        assert_names(&msg, &[needle, "[jobs.x]"]);
    }
    // Mistakes inside the job, as in baton.toml, with the drop-in's line.
    let (_tmp, path) = dir_with(
        MAIN,
        &[("x.toml", "every = \"1h\"\nrun = \"true\"\nretires = 3\n")],
    );
    assert_names(
        &load_err(&path),
        &["jobs.d/x.toml:3", "jobs.x.retires", "did you mean retries?"],
    );
    let (_tmp, path) = dir_with(MAIN, &[("x.toml", "every = \"1h\"\nrun = \n")]);
    assert_names(&load_err(&path), &["jobs.d/x.toml:2", "not valid TOML"]);
    let (_tmp, path) = dir_with(MAIN, &[("x.toml", "")]);
    assert_names(
        &load_err(&path),
        &["jobs.d/x.toml:1", "neither schedule nor every"],
    );
}

#[test]
fn anything_in_jobs_d_that_is_not_a_regular_file_is_refused() {
    let (tmp, path) = dir_with(MAIN, &[("real.toml", "every = \"1h\"\nrun = \"true\"\n")]);
    let d = tmp.path().join("jobs.d");
    std::fs::create_dir(d.join("sub.toml")).unwrap();
    assert_names(&load_err(&path), &["jobs.d/sub.toml", "a directory"]);
    std::fs::remove_dir(d.join("sub.toml")).unwrap();
    std::os::unix::fs::symlink(d.join("real.toml"), d.join("link.toml")).unwrap();
    assert_names(&load_err(&path), &["jobs.d/link.toml", "a symbolic link"]);
    std::fs::remove_file(d.join("link.toml")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        d.join("fifo.toml"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    assert_names(&load_err(&path), &["jobs.d/fifo.toml", "a special file"]);
    std::fs::remove_file(d.join("fifo.toml")).unwrap();
    assert!(load(&path, &Overrides::default()).is_ok());
    // jobs.d itself a file.
    let (tmp, path) = dir_with(MAIN, &[]);
    std::fs::write(tmp.path().join("jobs.d"), "").unwrap();
    assert_names(
        &load_err(&path),
        &["jobs.d", "failed to read the configuration"],
    );
}

#[test]
fn a_nul_character_is_refused_where_no_process_can_take_it() {
    let e = error(
        "[jobs.a]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n[jobs.a.env]\nX = \"a\\u0000b\"\n",
    );
    assert_names(&e, &["jobs.a.env.X", "NUL"]);
    let e = error("[jobs.a]\nschedule = \"0 3 * * *\"\nrun = [\"echo\", \"a\\u0000b\"]\n");
    assert_names(&e, &["jobs.a.run", "NUL"]);
    let e = error("[jobs.a]\nschedule = \"0 3 * * *\"\nrun = \"true\"\ncwd = \"/tmp\\u0000x\"\n");
    assert_names(&e, &["jobs.a.cwd", "NUL"]);
}

#[test]
fn a_check_finds_every_bad_job_and_drop_in_and_keeps_the_good_ones() {
    let main = "[scheduler]\ntimezone = \"UTC\"\n\n\
        [jobs.good]\nevery = \"1h\"\nrun = \"true\"\n\n\
        [jobs.bad1]\nschedule = \"61 * * * *\"\nrun = \"true\"\n\n\
        [jobs.bad2]\nevery = \"1h\"\nrun = \"true\"\nretries = \"many\"\n";
    let (_tmp, path) = dir_with(
        main,
        &[
            ("bad3.toml", "every = \"1h\"\n"),
            ("good2.toml", "every = \"1h\"\nrun = \"true\"\n"),
            ("bad name.toml", "every = \"1h\"\nrun = \"true\"\n"),
            ("good.toml", "every = \"2h\"\nrun = \"true\"\n"),
        ],
    );
    let c = check(&path, &Overrides::default());
    let said: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 5, "{said:#?}");
    assert!(said[0].contains("bad name"), "{said:#?}");
    assert!(said[1].contains("jobs.bad1"), "{said:#?}");
    assert!(said[2].contains("jobs.bad2.retries"), "{said:#?}");
    assert!(said[3].contains("bad3.toml"), "{said:#?}");
    assert!(
        said[4].contains("jobs.good") && said[4].contains("also defined"),
        "{said:#?}"
    );
    // What `load` refuses with is the first of them.
    assert_eq!(load_err(&path), said[0]);
    let config = c.config.expect("the sections are valid");
    let names: Vec<&String> = config.jobs.keys().collect();
    assert_eq!(names, ["good", "good2"]);
    assert!(!c.scheduler_defaulted);
    let unread: Vec<&String> = c.unread_jobs.iter().collect();
    assert_eq!(unread, ["bad1", "bad2", "bad3"]);
}

#[test]
fn a_check_with_a_bad_scheduler_checks_the_jobs_against_its_defaults_and_says_so() {
    let (_tmp, path) = dir_with(
        "[scheduler]\ntimezone = \"Mars/Olympus\"\nttl = \"5s\"\nretries = -1\n\
         [daemon]\nlisten = 7\n\
         [jobs.a]\nrun = \"x\"\n\
         [jobs.b]\nevery = \"1h\"\nrun = \"x\"\n",
        &[],
    );
    let c = check(&path, &Overrides::default());
    let said: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 4, "{said:#?}");
    assert!(said[0].contains("scheduler.timezone"), "{said:#?}");
    assert!(said[1].contains("scheduler.retries"), "{said:#?}");
    assert!(said[2].contains("daemon.listen"), "{said:#?}");
    assert!(
        said[3].contains("jobs.a") && said[3].contains("neither schedule nor every"),
        "{said:#?}"
    );
    // What `load` refuses with is the first of them.
    assert_eq!(load_err(&path), said[0]);
    assert!(c.config.is_none());
    assert!(c.scheduler_defaulted);
    let (_tmp, path) = dir_with("[scheduler\n", &[]);
    let c = check(&path, &Overrides::default());
    assert_eq!(c.problems.len(), 1);
    assert!(c.problems[0].to_string().contains("not valid TOML"));
    assert!(!c.scheduler_defaulted);
}

#[test]
fn a_check_finds_every_bad_key_of_a_job_and_of_its_steps() {
    let (_tmp, path) = dir_with(
        "[jobs.a]\nschedule = \"0 25 * * *\"\nretries = \"many\"\ntimezone = \"Mars/Olympus\"\n\
         colour = \"red\"\n\
         [[jobs.a.steps]]\nname = \"one\"\nrun = \"true\"\n\
         [[jobs.a.steps]]\nname = \"one\"\nrun = \"true\"\n\
         [[jobs.a.steps]]\nname = \"two\"\nrun = \"true\"\ntimeout = \"soon\"\n\
         [[jobs.a.checks]]\nrun = \"true\"\nretries = 1\n",
        &[],
    );
    let c = check(&path, &Overrides::default());
    let said: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    let keys = [
        "jobs.a.colour",
        "jobs.a.schedule",
        "jobs.a.timezone",
        "jobs.a.retries",
        "jobs.a.steps[2].timeout",
        "jobs.a.checks[0].retries",
        "named \"one\"",
    ];
    assert_eq!(said.len(), keys.len(), "{said:#?}");
    for (said, key) in said.iter().zip(keys) {
        assert!(said.contains(key), "{key}: {said}");
    }
    assert_eq!(load_err(&path), said[0]);
    assert!(c.config.is_some_and(|c| c.jobs.is_empty()));
    assert!(c.unread_jobs.contains("a"));
}

#[test]
fn a_rule_that_combines_keys_is_not_checked_on_a_fallback() {
    // ttl is in error: its default standing in would make kill_grace too
    // long for it, a problem the operator did not write.
    let (_tmp, path) = dir_with(
        "[jobs.a]\nevery = \"1h\"\nrun = \"true\"\nttl = \"soon\"\nkill_grace = \"50s\"\n\
         takeover_grace = \"2m\"\n",
        &[],
    );
    let c = check(&path, &Overrides::default());
    let said: Vec<String> = c.problems.iter().map(ToString::to_string).collect();
    assert_eq!(said.len(), 1, "{said:#?}");
    assert!(said[0].contains("jobs.a.ttl"), "{said:#?}");
}

// ---- the keys ------------------------------------------------------------

#[test]
fn every_default_reads_as_the_key_does_and_is_written_as_shown() {
    for k in keys::KEYS {
        let keys::Default::Toml(text) = k.default else {
            continue;
        };
        let value = k.default_value();
        let (shown, _) = crate::views::show::shown(k, &value);
        assert_eq!(shown, text, "{}", k.name);
    }
}

#[test]
fn baton_config_shows_every_key_a_table_holds() {
    let c = load_text(
        "[store]\nurl = \"postgres://h/db\"\n[jobs.a]\nevery = \"1h\"\nrun = \"true\"\n\
         [[jobs.a.checks]]\nrun = \"true\"\n",
    )
    .unwrap();
    let j = &c.jobs["a"];
    for (table, shown) in [
        (keys::Table::Scheduler, crate::views::show::scheduler(&c)),
        (keys::Table::Daemon, crate::views::show::daemon(&c)),
        (keys::Table::Telemetry, crate::views::show::telemetry(&c)),
        (keys::Table::Store, crate::views::show::store(&c)),
        (keys::Table::Job, crate::views::show::job(j)),
        (keys::Table::Step, crate::views::show::step(&j.steps[0])),
        (keys::Table::Check, crate::views::show::step(&j.checks[0])),
    ] {
        // A job's `schedule` or `every`, and a step's `run` or `http`, are
        // shown as written; a step's `env` and `cwd` on lines of their own.
        let as_written = match table {
            keys::Table::Job => "every",
            _ => "run",
        };
        let wanted: Vec<&str> = keys::of(table)
            .filter(|k| k.ty != keys::Type::Rule || k.name == as_written)
            .filter(|k| !["env", "cwd"].contains(&k.name))
            .map(|k| k.name)
            .collect();
        let said: Vec<&str> = shown.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(said, wanted, "{table:?}");
    }
}

#[test]
fn a_variable_overrides_a_sections_key_and_no_other() {
    let names: Vec<String> = keys::KEYS
        .iter()
        .filter_map(keys::Key::env_key)
        .map(|k| env_name(&k))
        .collect();
    assert!(names.contains(&"BATON_RETRIES".to_owned()), "{names:?}");
    assert!(names.contains(&"BATON_STORE_URL".to_owned()), "{names:?}");
    assert!(!names.contains(&"BATON_LOCK".to_owned()), "{names:?}");
    assert!(
        names.contains(&"BATON_OTLP_ENDPOINT".to_owned()),
        "{names:?}"
    );
    let top = [
        keys::Table::Scheduler,
        keys::Table::Telemetry,
        keys::Table::Store,
    ];
    for k in keys::KEYS.iter().filter(|k| k.env) {
        assert!(top.iter().any(|t| k.is_in(*t)), "{}", k.name);
    }
}

#[test]
fn otlp_endpoint_is_read_checked_overridden_and_shown() {
    let c = load_text("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n").unwrap();
    let e = c.telemetry.otlp_endpoint.value.as_ref().unwrap();
    assert_eq!(e.traces_url(), "http://127.0.0.1:4318/v1/traces");
    assert!(matches!(
        c.telemetry.otlp_endpoint.source,
        Source::File { .. }
    ));
    let shown = crate::views::show::telemetry(&c);
    assert_eq!(shown[0].value, "\"http://127.0.0.1:4318\"");
    let none = load_text("").unwrap();
    assert_eq!(none.telemetry.otlp_endpoint.value, None);
    let e = load_text("[telemetry]\notlp_endpoint = \"grpc://collector:4317\"\n").unwrap_err();
    let said = e.to_string();
    assert!(said.contains("telemetry.otlp_endpoint"), "{said}");
    assert!(said.contains("http:// or https:// base URL"), "{said}");
    let e = load_text("[telemetry]\notlp_endpoint = \"http://c:4318/?x\"\n").unwrap_err();
    assert!(e.to_string().contains("takes no query"), "{e}");
    let e = load_text("[telemetry]\nendpoint = \"http://c:4318\"\n").unwrap_err();
    assert!(e.to_string().contains("allowed here: otlp_endpoint"), "{e}");
    let mut over = Overrides::default();
    over.env
        .insert("otlp_endpoint".into(), "https://otel.example:4318".into());
    let c = super::parse(
        "[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"\n",
        std::path::Path::new("/etc/baton/baton.toml"),
        &over,
    )
    .unwrap();
    let e = c.telemetry.otlp_endpoint.value.as_ref().unwrap();
    assert_eq!(e.traces_url(), "https://otel.example:4318/v1/traces");
    assert!(matches!(c.telemetry.otlp_endpoint.source, Source::Env(_)));
}

#[test]
fn config_alert_webhook_is_inherited_overridden_and_shown_masked() {
    let c = load_text(
        "[scheduler]\nalert_webhook = \"https://hooks.example/services/T/B/s3cret\"\n\
         [jobs.a]\nevery = \"1h\"\nrun = \"true\"\n\
         [jobs.b]\nevery = \"1h\"\nrun = \"true\"\nalert_webhook = \"http://127.0.0.1:9/b\"\n",
    )
    .unwrap();
    let a = &c.jobs["a"].alert_webhook;
    assert_eq!(
        a.value.as_ref().unwrap().secret(),
        "https://hooks.example/services/T/B/s3cret"
    );
    assert_eq!(a.provenance(), "[scheduler] /etc/baton.toml:2");
    let b = &c.jobs["b"].alert_webhook;
    assert_eq!(b.value.as_ref().unwrap().secret(), "http://127.0.0.1:9/b");
    assert_eq!(b.provenance(), "/etc/baton.toml:9");
    let shown = crate::views::show::render(&c);
    assert!(shown.contains("https://hooks.example/…"), "{shown}");
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn config_alert_webhook_refuses_what_is_no_http_url() {
    for bad in ["ftp://hooks.example/x", "hooks.example/x", "http://"] {
        let msg = error(&format!("[scheduler]\nalert_webhook = {bad:?}\n"));
        assert_names(
            &msg,
            &["/etc/baton.toml:2", "alert_webhook", "http:// or https://"],
        );
    }
    let msg = error("[jobs.a]\nevery = \"1h\"\nrun = \"true\"\nalert_webhook = 3\n");
    assert_names(
        &msg,
        &["/etc/baton.toml:4", "jobs.a.alert_webhook", "integer"],
    );
    // A refused URL is named as it may be shown: its path is the hook's
    // credential.
    for (bad, shown) in [
        (
            "https://hooks.example:4430000/services/T0/s3cret",
            "https://hooks.example:4430000/…",
        ),
        (
            "https://hooks.example/services/T0/s3 cret",
            "https://hooks.example/…",
        ),
        (
            "ftp://hooks.example/services/T0/s3cret",
            "ftp://hooks.example/…",
        ),
    ] {
        let msg = error(&format!("[scheduler]\nalert_webhook = {bad:?}\n"));
        assert_names(&msg, &["alert_webhook", shown]);
        assert!(!msg.contains("s3"), "{msg}");
    }
}

#[test]
fn config_alert_webhook_secret_file_must_be_private() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let secret = d.path().join("hook.key");
    std::fs::write(&secret, "s3cret\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o644)).unwrap();
    let text = "[scheduler]\nalert_webhook = \"http://127.0.0.1:9/\"\n\
                alert_webhook_secret_file = \"hook.key\"\n";
    let file = d.path().join("baton.toml");
    let msg = parse(text, &file, &Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains(":3: scheduler.alert_webhook_secret_file: ") && msg.contains("chmod 600"),
        "{msg}"
    );
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    let c = parse(text, &file, &Overrides::default()).unwrap();
    assert_eq!(
        c.settings.alert_webhook_secret_file.value.as_deref(),
        Some(secret.as_path())
    );
}

#[test]
fn baton_config_says_where_each_steps_name_variable_and_directory_came_from() {
    let text = "[jobs.a]\nschedule = \"* * * * *\"\ncwd = \"/srv\"\nenv = { A = \"1\", B = \"2\" }\n\
                [[jobs.a.steps]]\nname = \"one\"\nrun = \"true\"\nenv = { B = \"3\", C = \"4\" }\n\
                [[jobs.a.steps]]\nrun = \"true\"\ncwd = \"/var\"\n\
                [jobs.b]\nschedule = \"* * * * *\"\nrun = \"true\"\n";
    let c = parse(text, Path::new("/etc/baton.toml"), &Overrides::default()).unwrap();
    let shown = crate::views::show::render(&c);
    let said = |key: &str, value: &str, source: &str| {
        let kv = format!("{key} = {value}");
        let line = format!("{kv:<48} # {source}\n");
        assert!(shown.contains(&line), "{line:?} in\n{shown}");
    };
    // The first step: its own name, its job's directory, its job's A, its
    // own B (replacing the job's) and C.
    said("name", "\"one\"", "/etc/baton.toml:6");
    said("cwd", "\"/srv\"", "/etc/baton.toml:3");
    said("env.A", "\"1\"", "/etc/baton.toml:4");
    said("env.B", "\"3\"", "/etc/baton.toml:8");
    said("env.C", "\"4\"", "/etc/baton.toml:8");
    // The second: named by default, its own directory, its job's variables.
    said("name", "\"step-2\"", "default");
    said("cwd", "\"/var\"", "/etc/baton.toml:11");
    // A job's one step: its job's name, the configuration's directory.
    said("name", "\"b\"", "/etc/baton.toml:12");
    said("cwd", "\"/etc\"", "default");
    let json = crate::views::show::to_json(&c);
    let first = &json["jobs"]["a"]["steps"][0];
    assert_eq!(first["name"], "one", "{first}");
    assert_eq!(first["env"]["B"], "3", "{first}");
    assert_eq!(first["cwd"], "/srv", "{first}");
    assert_eq!(first["sources"]["name"], "/etc/baton.toml:6", "{first}");
    assert_eq!(first["sources"]["cwd"], "/etc/baton.toml:3", "{first}");
    assert_eq!(first["sources"]["env"]["A"], "/etc/baton.toml:4", "{first}");
    assert_eq!(first["sources"]["env"]["B"], "/etc/baton.toml:8", "{first}");
    let second = &json["jobs"]["a"]["steps"][1];
    assert_eq!(second["sources"]["name"], "default", "{second}");
    assert_eq!(
        second["sources"]["env"]["B"], "/etc/baton.toml:4",
        "{second}"
    );
}
