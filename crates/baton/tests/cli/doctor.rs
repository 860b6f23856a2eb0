//! `baton doctor` through the real binary: a healthy set-up, a
//! configuration with several bad jobs and bad keys, a state directory
//! others may write or on a network filesystem (a FUSE mount the kernel
//! calls sshfs, in a mount namespace of the doctor's own), a damaged
//! ledger, an older and a newer ledger, an unreadable lock file, a failing
//! alert command, what drives baton (cron lines and systemd units planted
//! under `BATON_DOCTOR_ROOT`), the JSON's shape, and a real PostgreSQL
//! store, with this host's clock shifted against it by faketime.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Output, Stdio};

use baton_testkit::pg::PgServer;
use serde_json::{Value, json};

use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

/// `baton doctor ARGS` with the system paths under `root/` and no user
/// units of this machine's user.
fn doctor(s: &Sched, args: &[&str]) -> Output {
    doctor_under(s, &[], args)
}

/// As [`doctor`], run by `wrapper` (a program and its arguments, the
/// baton command line after them), with the same environment.
fn doctor_under(s: &Sched, wrapper: &[&str], args: &[&str]) -> Output {
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    let mut c = s.cmd(&all);
    c.env("BATON_DOCTOR_ROOT", s.env.path("root"))
        .env("XDG_CONFIG_HOME", s.env.path("xdg"));
    for v in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGPASSFILE",
        "BATON_STORE_URL",
    ] {
        c.env_remove(v);
    }
    if wrapper.is_empty() {
        return c.output().unwrap();
    }
    crate::support::wrapped(&c, wrapper)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", wrapper[0]))
}

fn json(s: &Sched) -> (i32, Value) {
    json_under(s, &[])
}

/// `baton doctor --json` run by `wrapper` ([`doctor_under`]).
fn json_under(s: &Sched, wrapper: &[&str]) -> (i32, Value) {
    let o = doctor_under(s, wrapper, &["--json"]);
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}{}", stdout(&o), stderr(&o)));
    (code(&o), v)
}

/// The findings of one check.
fn of<'v>(v: &'v Value, check: &str) -> Vec<&'v Value> {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == check)
        .collect()
}

/// The one finding of `check`, and its status.
fn one<'v>(v: &'v Value, check: &str) -> &'v Value {
    let found = of(v, check);
    assert_eq!(found.len(), 1, "{check}: {v:#}");
    found[0]
}

/// A crontab line under the doctor's root that drives `s`.
fn driven(s: &Sched) {
    let d = s.env.path("root/etc/cron.d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(
        d.join("baton"),
        format!(
            "PATH=/usr/bin:/bin\n* * * * * root /usr/local/bin/baton tick --config {}\n",
            s.config().display()
        ),
    )
    .unwrap();
}

const JOB: &str = "[jobs.nightly]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n";

#[test]
fn doctor_passes_a_healthy_set_up_and_tries_its_alert_command() {
    let got = "alert.json";
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"Europe/Berlin\"\n\
         alert_command = \"echo $BATON_ALERT_TEST > alert.env; cat > {got}\"\n{JOB}"
    ));
    driven(&s);
    let run = s.run(&["run", "nightly"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let (rc, v) = json(&s);
    assert_eq!(rc, 0, "{v:#}");
    assert_eq!(v["healthy"], true, "{v:#}");
    for check in [
        "config",
        "state-dir",
        "filesystem",
        "locks",
        "ledger",
        "store",
        "zones",
        "driver",
        "alert-command",
    ] {
        assert_eq!(one(&v, check)["status"], "ok", "{check}: {v:#}");
    }
    // No webhook is configured: nothing to check, so no line says ok.
    assert!(of(&v, "alert-webhook").is_empty(), "{v:#}");
    // The host's own clock discipline is not the test's to choose: it may
    // warn, never fail.
    assert_ne!(one(&v, "time-sync")["status"], "fail", "{v:#}");
    assert!(
        one(&v, "ledger")["message"]
            .as_str()
            .unwrap()
            .contains("integrity ok, schema version"),
        "{v:#}"
    );
    assert!(
        one(&v, "zones")["message"]
            .as_str()
            .unwrap()
            .contains("Europe/Berlin"),
        "{v:#}"
    );
    // The alert command got a test alert, and knew it was one.
    let alert: Value =
        serde_json::from_str(&std::fs::read_to_string(s.env.path(got)).unwrap()).unwrap();
    assert_eq!(alert["kind"], "test");
    assert_eq!(
        std::fs::read_to_string(s.env.path("alert.env"))
            .unwrap()
            .trim(),
        "1"
    );
    // The text: one line per check, its word first, and a last line.
    let o = doctor(&s, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("ok  ")
                || l.starts_with("WARN  ")
                || l.starts_with("      fix: ")),
        "{text}"
    );
    assert!(lines[0].starts_with("ok    config: "), "{text}");
    assert!(lines.last().unwrap().starts_with("healthy"), "{text}");
}

#[test]
fn doctor_json_has_healthy_and_checks_with_a_fix_for_each_problem() {
    let s = Sched::new(JOB);
    let (rc, v) = json(&s);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["checks", "healthy"], "{v:#}");
    let checks = v["checks"].as_array().unwrap();
    assert!(checks.len() >= 10, "{v:#}");
    let mut failed = false;
    for c in checks {
        let mut keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        keys.sort();
        assert_eq!(keys, ["check", "fix", "message", "status"], "{c}");
        let status = c["status"].as_str().unwrap();
        assert!(["ok", "warn", "fail"].contains(&status), "{c}");
        assert_eq!(c["fix"].is_null(), status == "ok", "{c}");
        failed |= status == "fail";
    }
    assert_eq!(v["healthy"], !failed);
    assert_eq!(rc, i32::from(failed));
    // Nothing drives this one: a warning, with the way to install a driver.
    let d = one(&v, "driver");
    assert_eq!(d["status"], "warn", "{v:#}");
    assert!(
        d["message"]
            .as_str()
            .unwrap()
            .starts_with("nothing drives baton")
    );
    assert!(d["fix"].as_str().unwrap().contains("baton render"), "{d}");
    // Bad usage is 2, as for every command.
    assert_eq!(code(&doctor(&s, &["--no-such-option"])), 2);
}

#[test]
fn doctor_lists_every_bad_job_not_only_the_first() {
    let s = Sched::new(
        "[jobs.good]\nevery = \"1h\"\nrun = \"true\"\n\
         [jobs.early]\nschedule = \"0 25 * * *\"\nrun = \"true\"\n\
         [jobs.late]\nevery = \"1h\"\nrun = \"true\"\nretries = \"many\"\n",
    );
    // What a run sees: the first problem only.
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("jobs.early") && !stderr(&o).contains("jobs.late"));
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    assert_eq!(v["healthy"], false);
    let config = of(&v, "config");
    assert_eq!(config.len(), 2, "{v:#}");
    assert!(config.iter().all(|c| c["status"] == "fail"));
    assert!(
        config[0]["message"]
            .as_str()
            .unwrap()
            .contains("jobs.early.schedule")
    );
    assert!(
        config[1]["message"]
            .as_str()
            .unwrap()
            .contains("jobs.late.retries")
    );
    assert!(
        config[1]["fix"].as_str().unwrap().contains("baton.toml:"),
        "{v:#}"
    );
    // The good job is still checked: its lock is read; the others' are
    // said to be unknown.
    let locks = one(&v, "locks")["message"].as_str().unwrap();
    assert!(locks.starts_with("1 lock"), "{v:#}");
    assert!(locks.contains("(early, late)"), "{v:#}");
}

#[test]
fn doctor_lists_every_bad_key_of_a_job_and_of_the_scheduler() {
    let s = Sched::new(
        "[scheduler]\nretries = \"often\"\n\
         [jobs.nightly]\nschedule = \"0 25 * * *\"\nrun = \"true\"\ntimeout = \"soon\"\n\
         [jobs.good]\nevery = \"1h\"\nrun = \"true\"\n",
    );
    // What a run sees: the first problem only.
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("scheduler.retries") && !stderr(&o).contains("jobs.nightly"));
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let config = of(&v, "config");
    let failed: Vec<&str> = config
        .iter()
        .filter(|c| c["status"] == "fail")
        .map(|c| c["message"].as_str().unwrap())
        .collect();
    assert_eq!(failed.len(), 3, "{v:#}");
    for (said, key) in failed.iter().zip([
        "scheduler.retries",
        "jobs.nightly.schedule",
        "jobs.nightly.timeout",
    ]) {
        assert!(said.contains(key), "{key}: {said}");
    }
    // The jobs were checked against [scheduler]'s defaults, and it says so.
    let said = config
        .iter()
        .find(|c| c["status"] == "warn")
        .unwrap_or_else(|| panic!("{v:#}"));
    assert!(
        said["message"]
            .as_str()
            .unwrap()
            .contains("checked with its default"),
        "{said}"
    );
}

#[test]
fn doctor_says_the_locks_of_jobs_it_could_not_read_were_not_checked() {
    let s = Sched::new(
        "[jobs.early]\nschedule = \"0 25 * * *\"\nrun = \"true\"\n\
         [jobs.late]\nevery = \"1h\"\nrun = \"true\"\nretries = \"many\"\n",
    );
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "locks");
    assert_eq!(f["status"], "warn", "{v:#}");
    let message = f["message"].as_str().unwrap();
    assert!(!message.contains("no job"), "{f}");
    assert!(message.contains("(early, late)"), "{f}");
}

#[test]
fn doctor_refuses_a_state_directory_others_may_write_and_says_how_to_fix_it() {
    let s = Sched::new(JOB);
    let state = s.env.state();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "state-dir");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(f["message"].as_str().unwrap().contains("mode 0777"), "{f}");
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains(&format!("chmod go-w {}", state.display())),
        "{f}"
    );
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let (_, v) = json(&s);
    let f = one(&v, "state-dir");
    assert_eq!(f["status"], "ok", "{v:#}");
    assert!(f["message"].as_str().unwrap().contains("mode 0700"), "{f}");
}

#[test]
fn doctor_finds_a_damaged_ledger_and_leaves_it_where_it_is() {
    let s = Sched::new(JOB);
    let run = s.run(&["run", "nightly"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let state = s.env.state();
    for side in ["baton.db-wal", "baton.db-shm"] {
        let _ = std::fs::remove_file(state.join(side));
    }
    let garbage = vec![0x5a_u8; 8192];
    std::fs::write(state.join("baton.db"), &garbage).unwrap();
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "ledger");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(f["message"].as_str().unwrap().contains("is damaged"), "{f}");
    assert!(f["fix"].as_str().unwrap().contains("mv "), "{f}");
    // Looked at, not repaired: the file is as it was, nothing moved aside.
    assert_eq!(std::fs::read(state.join("baton.db")).unwrap(), garbage);
    let moved: Vec<String> = std::fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("corrupt"))
        .collect();
    assert!(moved.is_empty(), "{moved:?}");
}

/// The ledger fixture of schema `version` (the last build of that schema
/// made it), copied into `s`'s state directory.
fn plant_ledger(s: &Sched, version: u32) -> std::path::PathBuf {
    let db = crate::upgrade::state_dir(s).join("baton.db");
    let fixture = format!("../baton-ledger/tests/fixtures/ledger-v{version}.db");
    std::fs::copy(crate::upgrade::fixture(&fixture), &db).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    db
}

#[test]
fn doctor_says_an_older_ledger_is_migrated_by_the_next_run_and_leaves_it_unmigrated() {
    for version in [1, 2] {
        let s = Sched::new(JOB);
        let db = plant_ledger(&s, version);
        let before = std::fs::read(&db).unwrap();
        let (_, v) = json(&s);
        let f = one(&v, "ledger");
        assert_eq!(f["status"], "warn", "v{version}: {v:#}");
        assert!(
            f["message"].as_str().unwrap().contains(&format!(
                "schema version {version}, older than this baton's 5"
            )),
            "{f}"
        );
        assert!(
            f["fix"].as_str().unwrap().contains("migrates it in place"),
            "{f}"
        );
        // Looked at, not migrated: no copy made before a migration, the
        // file as it was.
        assert_eq!(std::fs::read(&db).unwrap(), before, "v{version}");
        assert!(
            !s.env
                .state()
                .join(format!("baton.db.bak-v{version}"))
                .exists()
        );
    }
}

#[test]
fn doctor_fails_a_ledger_a_newer_baton_wrote_and_says_to_upgrade() {
    let s = Sched::new(JOB);
    let db = plant_ledger(&s, 2);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA user_version = 6").unwrap();
    drop(c);
    let before = std::fs::read(&db).unwrap();
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "ledger");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("schema version 6, newer than this baton's 5"),
        "{f}"
    );
    assert!(f["fix"].as_str().unwrap().contains("upgrade baton"), "{f}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// Mounts, in a mount namespace of the doctor's own, a FUSE filesystem the
/// mount table calls `fuse.sshfs` on `$1`, then runs the rest of the
/// command line. No daemon serves it: the mount belongs to nobody (uid
/// 65534), so the kernel answers the doctor's `statfs` itself (FUSE's
/// magic) and refuses it everything else, and the device is closed before
/// the doctor starts, so nothing could wait for a daemon anyway. The mount
/// goes with the namespace.
const ON_SSHFS: &str = r#"
set -e
exec 3<>/dev/fuse
mount -t fuse.sshfs -o fd=3,rootmode=40000,user_id=65534,group_id=65534 backup@nas: "$1"
exec 3>&-
shift
exec "$@"
"#;

#[test]
fn doctor_refuses_a_state_directory_on_sshfs_end_to_end() {
    if !crate::support::root() || !Path::new("/dev/fuse").exists() {
        eprintln!("skipped: mounting a FUSE filesystem needs root and /dev/fuse");
        return;
    }
    let s = Sched::new(JOB);
    let state = crate::upgrade::state_dir(&s);
    let on_sshfs = [
        "unshare",
        "-m",
        "sh",
        "-c",
        ON_SSHFS,
        "sh",
        state.to_str().unwrap(),
    ];
    let (rc, v) = json_under(&s, &on_sshfs);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "filesystem");
    assert_eq!(f["status"], "fail", "{v:#}");
    let message = f["message"].as_str().unwrap();
    assert!(
        message.contains("is on fuse.sshfs, a network filesystem, where flock is not trusted"),
        "{f}"
    );
    assert!(message.contains("a process on another host"), "{f}");
    assert!(
        f["fix"].as_str().unwrap().contains("local filesystem"),
        "{f}"
    );
    // The mount was the doctor's alone: here, the directory is local.
    let (_, v) = json(&s);
    assert_eq!(one(&v, "filesystem")["status"], "ok", "{v:#}");
}

#[test]
fn doctor_fails_a_lock_file_this_build_cannot_judge() {
    let s = Sched::new(JOB);
    let run = s.run(&["run", "nightly"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    // A lease of a later record version: refused by every run of this build.
    std::fs::write(s.env.lock("nightly"), "version=9 state=held pid=1\n").unwrap();
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "locks");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(
        f["message"].as_str().unwrap().contains("lock nightly"),
        "{f}"
    );
    assert!(
        f["fix"]
            .as_str()
            .unwrap()
            .contains("baton lock break --force"),
        "{f}"
    );
    // Bytes that are no lock record at all.
    std::fs::write(s.env.lock("nightly"), "this is not a lease\n").unwrap();
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "locks");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(
        f["message"].as_str().unwrap().contains("no lock record"),
        "{f}"
    );
}

#[test]
fn doctor_fails_an_alert_command_that_fails_its_test_alert() {
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_command = \"exit 3\"\n{JOB}"
    ));
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let f = one(&v, "alert-command");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(
        f["message"].as_str().unwrap().contains("exit status: 3"),
        "{f}"
    );
    assert!(
        f["fix"].as_str().unwrap().contains("BATON_ALERT_TEST=1"),
        "{f}"
    );
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         alert_command = [\"/nonexistent/page-me\"]\n{JOB}"
    ));
    let (_, v) = json(&s);
    let f = one(&v, "alert-command");
    assert_eq!(f["status"], "fail", "{v:#}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("could not be started"),
        "{f}"
    );
}

#[test]
fn doctor_finds_what_drives_baton_and_whether_it_is_enabled() {
    let s = Sched::new(JOB);
    let units = s.env.path("root/etc/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    std::fs::write(
        units.join("baton.service"),
        format!(
            "[Service]\nType=notify\nExecStart=/usr/bin/baton daemon --config {}\n",
            s.config().display()
        ),
    )
    .unwrap();
    let (_, v) = json(&s);
    let f = one(&v, "driver");
    assert_eq!(f["status"], "warn", "{v:#}");
    assert!(
        f["message"].as_str().unwrap().contains("not enabled"),
        "{f}"
    );
    assert_eq!(f["fix"], "`systemctl enable --now baton.service`");
    let wants = units.join("multi-user.target.wants");
    std::fs::create_dir_all(&wants).unwrap();
    std::os::unix::fs::symlink(units.join("baton.service"), wants.join("baton.service")).unwrap();
    let (_, v) = json(&s);
    let f = one(&v, "driver");
    assert_eq!(f["status"], "ok", "{v:#}");
    assert!(
        f["message"].as_str().unwrap().contains("baton daemon"),
        "{f}"
    );
    // A crontab that drives another configuration is no driver of this one.
    std::fs::remove_file(wants.join("baton.service")).unwrap();
    std::fs::remove_file(units.join("baton.service")).unwrap();
    let d = s.env.path("root/etc");
    std::fs::write(
        d.join("crontab"),
        "* * * * * root /usr/bin/baton tick --config /srv/other/baton.toml\n",
    )
    .unwrap();
    let (_, v) = json(&s);
    let f = one(&v, "driver");
    assert_eq!(f["status"], "warn", "{v:#}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("another configuration"),
        "{f}"
    );
}

#[test]
fn doctor_checks_a_postgresql_store_reachable_migrated_and_on_time() {
    let pg = PgServer::start();
    let s = Sched::new(&format!("[store]\nurl = {:?}\n{JOB}", pg.url()));
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let store = one(&v, "store");
    assert_eq!(store["status"], "ok", "{v:#}");
    assert!(
        store["message"].as_str().unwrap().contains("reachable"),
        "{store}"
    );
    let schema = one(&v, "store-schema");
    assert_eq!(schema["status"], "fail", "{v:#}");
    assert!(
        schema["fix"]
            .as_str()
            .unwrap()
            .contains("baton store migrate")
    );
    // Loopback, no TLS: nothing crosses a network.
    assert_eq!(one(&v, "store-tls")["status"], "ok", "{v:#}");
    let m = s.run(&["store", "migrate"]);
    assert_eq!(code(&m), 0, "{}", stderr(&m));
    let (_, v) = json(&s);
    assert_eq!(one(&v, "store-schema")["status"], "ok", "{v:#}");
    // The server runs on this host's clock: within a second of it.
    let clock = one(&v, "store-clock");
    assert_eq!(clock["status"], "ok", "{v:#}");
    assert!(
        clock["message"].as_str().unwrap().contains("within 1s"),
        "{clock}"
    );
    // A host whose clock is off (this one's, shifted for the doctor alone
    // by faketime, as the state tests shift it): past 1s a warning, past
    // the lease's 5s tolerance a failure.
    let shifted = |offset| {
        let by = ["faketime", "-m", "--exclude-monotonic", "-f", offset];
        let (rc, v) = json_under(&s, &by);
        (rc, one(&v, "store-clock").clone())
    };
    let (rc, clock) = shifted("-3s");
    assert_eq!(clock["status"], "warn", "{clock}");
    assert_eq!(rc, 0, "a warning leaves the host healthy: {clock}");
    let said = clock["message"].as_str().unwrap();
    assert!(
        said.contains("ahead of this host's, more than 1s"),
        "{clock}"
    );
    assert!(
        clock["fix"].as_str().unwrap().contains("synchronised"),
        "{clock}"
    );
    let (rc, clock) = shifted("+10s");
    assert_eq!(clock["status"], "fail", "{clock}");
    assert_eq!(rc, 1, "{clock}");
    let said = clock["message"].as_str().unwrap();
    assert!(said.contains("behind this host's"), "{clock}");
    assert!(said.contains("5s tolerance"), "{clock}");
    assert_eq!(one(&v, "locks")["status"], "ok", "{v:#}");
    // No ledger file is looked for: the ledger is the store's.
    assert!(of(&v, "ledger").is_empty(), "{v:#}");
    // TLS the build cannot give is refused as configured.
    s.write(&format!(
        "[store]\nurl = \"{}?sslmode=require\"\n{JOB}",
        pg.url()
    ));
    let (rc, v) = json(&s);
    assert_eq!(rc, 1);
    let tls = one(&v, "store-tls");
    assert_eq!(tls["status"], "fail", "{v:#}");
    assert!(
        tls["message"].as_str().unwrap().contains("sslmode=require"),
        "{tls}"
    );
    // A server that is gone is said, and nothing hangs.
    drop(pg);
    let (rc, v) = json(&s);
    assert_eq!(rc, 1);
    assert_eq!(one(&v, "store")["status"], "fail", "{v:#}");
}

#[test]
fn doctor_posts_a_marked_test_alert_to_each_webhook() {
    use baton_testkit::http::{Answer, TestServer};
    let up = TestServer::start(&[Answer::Status(204)]);
    let down = TestServer::start(&[Answer::Status(404)]);
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nalert_webhook = \"{}\"\n\
         alert_webhook_secret_file = \"hook.key\"\n{JOB}\
         [jobs.other]\nevery = \"1h\"\nrun = \"true\"\nalert_webhook = \"{}\"\n",
        up.url("/up"),
        down.url("/down")
    ));
    let key = s.env.path("hook.key");
    std::fs::write(&key, "doctor-secret\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (rc, v) = json(&s);
    assert_eq!(rc, 1, "{v:#}");
    let found = of(&v, "alert-webhook");
    assert_eq!(found.len(), 2, "{v:#}");
    assert_eq!(found[0]["status"], "ok", "{v:#}");
    assert!(
        found[0]["message"]
            .as_str()
            .unwrap()
            .contains("a signed test alert"),
        "{v:#}"
    );
    assert_eq!(found[1]["status"], "fail", "{v:#}");
    let message = found[1]["message"].as_str().unwrap();
    assert!(
        message.contains("(jobs other)") && message.contains("answered 404"),
        "{message}"
    );
    // Each got one post, marked as a test, of kind test.
    for server in [&up, &down] {
        let seen = server.requests();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].header("Baton-Alert-Test"), Some("1"));
        let body: Value = serde_json::from_str(&seen[0].body).unwrap();
        assert_eq!(body["kind"], "test", "{body:#}");
    }
    assert!(up.requests()[0].header("Baton-Signature").is_some());
}

/// Named pipes planted where the doctor reads crontabs and units (in
/// `/etc/cron.d`, as `/etc/crontab`, in a unit directory) are passed over,
/// never waited on; the crontab beside them is still found.
#[test]
fn doctor_passes_over_named_pipes_among_crontabs_and_units() {
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n{JOB}"
    ));
    driven(&s);
    let units = s.env.path("root/etc/systemd/system");
    std::fs::create_dir_all(&units).unwrap();
    for p in [
        s.env.path("root/etc/cron.d/planted"),
        s.env.path("root/etc/crontab"),
        units.join("planted.service"),
    ] {
        crate::support::mkfifo(&p);
    }
    let o = doctor_under(&s, &["timeout", "20"], &["--json"]);
    assert_ne!(code(&o), 124, "the doctor blocked on a pipe");
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let driver = one(&v, "driver");
    assert_eq!(driver["status"], "ok", "{v:#}");
}

/// The `daemon` check says what `baton daemon` would refuse at its start
/// (a token file others may read, a group that does not exist, an address
/// off loopback without a token, a socket in a directory others may
/// change), fails for it, and passes settings a start takes, warning of a
/// token sent to a port any local user may bind while the daemon is down.
#[test]
fn doctor_fails_daemon_settings_a_start_would_refuse() {
    for (daemon, says) in [
        ("token_file = \"tok\"", "can be read or written by others"),
        ("socket_group = \"no-such-group-here\"", "no such group"),
        ("listen = \"0.0.0.0:18777\"", "without a token"),
        (
            "socket = \"/tmp/baton-doctor-test.sock\"",
            "writable by its group or by others",
        ),
    ] {
        let s = Sched::new(&format!(
            "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n[daemon]\n{daemon}\n{JOB}"
        ));
        let tok = s.env.path("tok");
        std::fs::write(&tok, "0123456789abcdef0123").unwrap();
        std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o644)).unwrap();
        let (rc, v) = json(&s);
        let f = one(&v, "daemon");
        assert_eq!((rc, &f["status"]), (1, &json!("fail")), "{daemon}: {v:#}");
        let message = f["message"].as_str().unwrap();
        assert!(
            message.contains("would refuse to start"),
            "{daemon}: {message}"
        );
        assert!(message.contains(says), "{daemon}: {message}");
    }
    let s = Sched::new(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n[daemon]\ntoken_file = \"tok\"\n{JOB}"
    ));
    let tok = s.env.path("tok");
    std::fs::write(&tok, "0123456789abcdef0123").unwrap();
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (_, v) = json(&s);
    let found = of(&v, "daemon");
    assert_eq!(found.len(), 2, "{v:#}");
    assert_eq!(found[0]["status"], "ok", "{v:#}");
    assert_eq!(found[1]["status"], "warn", "{v:#}");
    assert!(
        found[1]["message"]
            .as_str()
            .unwrap()
            .contains("any local user may bind"),
        "{v:#}"
    );
}
