//! Upgrades through the real binary: a ledger and a store the last builds
//! of the previous schemas made (the fixtures of
//! `scripts/upgrade-fixtures.sh`) are migrated by the first command that
//! needs them and read whole; a ledger or a store a newer baton made stops
//! every command that would read it (exit 2, nothing run, nothing shown);
//! lock files in the formats earlier writers left are judged as they
//! should be: taken over when their holder is dead, respected while it
//! lives.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use baton_lease::Clock as _;
use baton_testkit::pg::PgServer;

use crate::daemon::Daemon;
use crate::sched::{Sched, lines};
use crate::support::{Env, code, stderr, stdout};

pub(crate) fn fixture(rel: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    root.join(rel)
}

fn both(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

/// The state directory, made as baton makes it (0700).
pub(crate) fn state_dir(s: &Sched) -> PathBuf {
    let state = s.env.state();
    std::fs::create_dir_all(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    state
}

/// The jobs of the fixtures' scenario, none due: a yearly schedule, never
/// caught up.
fn fixture_jobs(ran: &Path) -> String {
    let mut toml = String::new();
    for job in ["steps", "flaky", "busy", "water", "queued", "held"] {
        toml.push_str(&format!(
            "[jobs.{job}]\nschedule = \"0 0 1 1 *\"\ncatch_up = \"none\"\n\
             run = \"echo {job} >> {}\"\n",
            ran.display()
        ));
    }
    toml
}

/// Every command that reads or writes the ledger refuses, with exit 2, a
/// message that names what is wrong and what to do, and nothing on
/// stdout; no job runs. (`watermark settle` is given a token of the form a
/// run's has: without one it is refused before the ledger is opened.)
fn assert_refused_everywhere(s: &Sched, ran: &Path, job: &str, needles: &[&str]) {
    let range = ["--from", "2020-01-01", "--to", "2021-06-01"];
    for args in [
        vec!["tick"],
        vec!["run", job],
        vec!["status"],
        vec!["status", "--json"],
        vec!["history", job],
        vec!["history", job, "--json"],
        vec!["history"],
        vec!["pause", job],
        vec!["pause", job, "--json"],
        vec!["resume", job],
        [&["backfill", job][..], &range].concat(),
        [&["backfill", job][..], &range, &["--force"]].concat(),
        [&["backfill", job][..], &range, &["--dry-run"]].concat(),
        [&["backfill", job][..], &range, &["--json"]].concat(),
        vec!["watermark", "get", job],
        vec!["watermark", "get", job, "--json"],
        vec!["watermark", "settle", job, "later"],
    ] {
        let o = s
            .cmd(&args)
            .env("BATON_TOKEN", "0123456789abcdef")
            .output()
            .unwrap();
        assert_eq!(code(&o), 2, "{args:?}: {}", both(&o));
        assert_eq!(stdout(&o), "", "{args:?} showed something");
        let err = stderr(&o);
        for needle in needles {
            assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
        }
        assert_eq!(
            err.matches("upgrade baton").count(),
            1,
            "{args:?} did not say it once: {err}"
        );
    }
    assert_eq!(lines(ran), 0, "a job ran");
    let d = Daemon::start_with(s, &["daemon", "--listen", "127.0.0.1:0"]);
    match d {
        Err((Some(2), log)) => {
            assert!(log.contains("refusing to start"), "{log}");
            for needle in needles {
                assert!(log.contains(needle), "{log:?} lacks {needle:?}");
            }
        }
        Err((c, log)) => panic!("the daemon exited {c:?}, not 2:\n{log}"),
        Ok(d) => panic!("the daemon started:\n{}", d.log()),
    }
}

#[test]
fn a_ledger_a_newer_baton_wrote_stops_every_command_with_exit_2_and_is_left_as_it_was() {
    let env = Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    s.write(&format!(
        "[jobs.count]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo ran >> {}\"\n",
        ran.display()
    ));
    let o = s.run(&["run", "count"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    std::fs::remove_file(&ran).unwrap();
    // The ledger as a later baton would leave it: checkpointed, its schema
    // version one past this build's.
    let db = s.env.state().join("baton.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA user_version = 6;")
        .unwrap();
    drop(c);
    let bytes = std::fs::read(&db).unwrap();

    assert_refused_everywhere(
        &s,
        &ran,
        "count",
        &[
            db.to_str().unwrap(),
            "schema version is 6",
            "up to 5",
            "upgrade baton",
        ],
    );
    assert_eq!(std::fs::read(&db).unwrap(), bytes, "the ledger was changed");
    let names: Vec<String> = std::fs::read_dir(s.env.state())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("baton.db."))
        .collect();
    assert!(names.is_empty(), "{names:?}");
}

/// A column of the fixture, read without this build's code.
fn fixture_rows(db: &Path, sql: &str) -> Vec<String> {
    try_rows(db, sql).unwrap()
}

/// A column of a ledger, or SQLite's error while the file is still being
/// made (a daemon creates the file before its tables).
fn try_rows(db: &Path, sql: &str) -> rusqlite::Result<Vec<String>> {
    let c = rusqlite::Connection::open(db)?;
    let mut stmt = c.prepare(sql)?;
    stmt.query_map([], |r| r.get::<_, String>(0))?.collect()
}

#[test]
fn a_ledger_the_last_schema_2_build_wrote_is_migrated_by_the_first_command_and_reads_whole() {
    let env = Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    s.write(&fixture_jobs(&ran));
    let state = state_dir(&s);
    let original = fixture("../baton-ledger/tests/fixtures/ledger-v2.db");
    let db = state.join("baton.db");
    std::fs::copy(&original, &db).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();

    // Read-only commands migrate it too: it is the first command after the
    // upgrade, whichever it is.
    let o = s.run(&["history", "steps", "--json", "--limit", "1000"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut got: Vec<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} {}",
                r["run_id"].as_str().unwrap(),
                r["verdict"].as_str().unwrap(),
                r["attempts"].as_array().map_or(0, Vec::len)
            )
        })
        .collect();
    got.sort();
    let mut want = fixture_rows(
        &original,
        "SELECT run_id || ' ' || verdict || ' ' ||
                (SELECT COUNT(*) FROM attempts a WHERE a.run_id = r.run_id)
         FROM runs r WHERE job = 'steps'",
    );
    want.sort();
    assert_eq!(got, want);
    assert!(!got.is_empty());
    let copy = state.join("baton.db.bak-v2");
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600);

    // What status and the watermark say comes from the old rows.
    let status = s.json(&["status", "--json"]);
    let job = |name: &str| {
        status["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["job"] == name)
            .unwrap()
            .clone()
    };
    let newest = |name: &str| {
        fixture_rows(
            &original,
            &format!("SELECT run_id FROM runs WHERE job = '{name}' ORDER BY started DESC LIMIT 1"),
        )
    };
    for name in ["steps", "flaky", "busy", "water", "queued"] {
        assert_eq!(
            vec![job(name)["last_run"]["run_id"].as_str().unwrap().to_owned()],
            newest(name),
            "{name}"
        );
    }
    assert_eq!(job("flaky")["state"], "failing");
    assert_eq!(job("steps")["state"], "ok");
    let missed: u64 = fixture_rows(
        &original,
        "SELECT CAST(SUM(count) AS TEXT) FROM missed WHERE job = 'busy'",
    )[0]
    .parse()
    .unwrap();
    assert_eq!(job("busy")["missed"]["total"], missed);
    let o = s.run(&["watermark", "get", "water"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert_eq!(
        vec![stdout(&o).trim().to_owned()],
        fixture_rows(
            &original,
            "SELECT value FROM watermarks WHERE job = 'water' ORDER BY seq DESC LIMIT 1"
        )
    );

    // And the ledger goes on: a run now is recorded beside the old ones.
    let o = s.run(&["run", "steps"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let runs = s.json(&["history", "steps", "--json", "--limit", "1000"]);
    assert_eq!(runs.as_array().unwrap().len(), want.len() + 1);
    assert_eq!(lines(&ran), 1);
}

/// A database on `pg` named `name`, loaded with the committed dump of the
/// store the last schema 2 build made; the `[store]` of a scheduler that
/// uses it.
fn store_v2(pg: &PgServer, name: &str) -> String {
    pg.sql(&format!("CREATE DATABASE {name}"));
    let dump = std::fs::read(fixture("../baton-pg/tests/fixtures/store-v2.sql")).unwrap();
    pg.restore(name, &dump);
    let url = pg.url().replace("/postgres", &format!("/{name}"));
    format!("[store]\nurl = {url:?}\n")
}

#[test]
fn a_store_the_last_schema_2_build_made_is_migrated_by_store_migrate_and_reads_whole() {
    let pg = PgServer::start();
    let env = Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    s.write(&format!("{}{}", store_v2(&pg, "old"), fixture_jobs(&ran)));
    let count = |sql: &str| pg.sql_in("old", sql);

    // Until it is migrated, a run is refused, and says how to migrate.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(stderr(&o).contains("baton store migrate"), "{}", both(&o));
    let o = s.run(&["store", "status"]);
    assert_eq!(code(&o), 1, "{}", both(&o));
    assert!(
        stdout(&o).contains("schema version 2, behind"),
        "{}",
        both(&o)
    );

    let o = s.run(&["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(
        stdout(&o).contains("applied schema version 3, 4, 5, 6, 7, 8, 9 (now at version 9)"),
        "{}",
        both(&o)
    );

    let runs = s.json(&["history", "steps", "--json", "--limit", "1000"]);
    let mut got: Vec<String> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["run_id"].as_str().unwrap(),
                r["verdict"].as_str().unwrap()
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<String> = count(
        "SELECT run_id || ' ' || verdict FROM baton.runs WHERE job = 'steps' ORDER BY run_id",
    )
    .lines()
    .map(str::to_owned)
    .collect();
    want.sort();
    assert_eq!(got, want);
    assert!(!got.is_empty());
    let status = s.json(&["status", "--json"]);
    let flaky = status["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == "flaky")
        .unwrap()
        .clone();
    assert_eq!(flaky["state"], "failing");
    let o = s.run(&["watermark", "get", "water"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert_eq!(
        stdout(&o).trim(),
        count("SELECT value FROM baton.watermarks WHERE job = 'water' ORDER BY seq DESC LIMIT 1")
    );
    // The leases and claims the old build left are the new build's.
    let fence_before = count("SELECT max(fence) FROM baton.leases WHERE name = 'steps'");
    let o = s.run(&["run", "steps"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let fence_after = count("SELECT max(fence) FROM baton.leases WHERE name = 'steps'");
    assert!(
        fence_after.parse::<i64>().unwrap() > fence_before.parse::<i64>().unwrap(),
        "{fence_before} -> {fence_after}"
    );
    assert_eq!(lines(&ran), 1);
}

#[test]
fn a_store_a_newer_baton_made_stops_every_command_with_exit_2() {
    let pg = PgServer::start();
    let env = Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    s.write(&format!("{}{}", store_v2(&pg, "newer"), fixture_jobs(&ran)));
    let o = s.run(&["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    pg.sql_in(
        "newer",
        "INSERT INTO baton.migrations (version, name) VALUES (10, 'from a later build')",
    );
    let before = pg.sql_in("newer", "SELECT count(*) FROM baton.runs");

    assert_refused_everywhere(
        &s,
        &ran,
        "steps",
        &[
            "schema is at version 10",
            "newer than this build's 9",
            "upgrade baton",
        ],
    );
    let o = s.run(&["store", "migrate"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(stderr(&o).contains("upgrade baton"), "{}", both(&o));
    assert_eq!(
        pg.sql_in("newer", "SELECT count(*) FROM baton.runs"),
        before
    );
    assert_eq!(
        pg.sql_in("newer", "SELECT max(version) FROM baton.migrations"),
        "10"
    );
}

/// A lock fixture, copied to a file of this test's (mode 0600), with
/// `edit` applied to its record's fields.
fn plant_lock(env: &Env, name: &str, edit: impl Fn(&str, &str) -> Option<String>) -> PathBuf {
    let body = std::fs::read_to_string(fixture(&format!("tests/fixtures/locks/{name}"))).unwrap();
    let line = body.lines().next().unwrap();
    let fields: Vec<String> = line
        .split_whitespace()
        .map(|f| {
            let (k, v) = f.split_once('=').unwrap();
            edit(k, v).map_or_else(|| f.to_owned(), |v| format!("{k}={v}"))
        })
        .collect();
    let lock = env.path(name);
    std::fs::write(&lock, format!("{}\n", fields.join(" "))).unwrap();
    std::fs::set_permissions(&lock, std::fs::Permissions::from_mode(0o600)).unwrap();
    lock
}

fn field(record: &str, key: &str) -> Option<String> {
    record
        .split_whitespace()
        .find_map(|f| f.strip_prefix(&format!("{key}=")).map(str::to_owned))
}

/// `baton exec --verbose --lock LOCK -- sh -c 'echo ran >> RAN'`.
fn exec_on(env: &Env, lock: &Path, ran: &Path) -> Output {
    env.run(&[
        "exec",
        "--verbose",
        "--lock",
        lock.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &format!("echo ran >> {}", ran.display()),
    ])
}

/// Taken over: the command ran, and the record is this build's, released,
/// with a fence past the old one's.
fn assert_taken_over(o: &Output, lock: &Path, ran: &Path, old_fence: Option<u64>) {
    assert_eq!(code(o), 0, "{}", both(o));
    assert_eq!(lines(ran), 1);
    let now = std::fs::read_to_string(lock).unwrap();
    assert!(now.starts_with("version=3 state=free "), "{now}");
    if let Some(old) = old_fence {
        let fence: u64 = field(&now, "fence").unwrap().parse().unwrap();
        assert!(fence > old, "{fence} after {old}");
    }
}

/// Respected: exit 75, nothing ran, the file is byte for byte as it was.
fn assert_respected(o: &Output, lock: &Path, ran: &Path, before: &[u8]) {
    assert_eq!(code(o), 75, "{}", both(o));
    assert_eq!(lines(ran), 0, "the command ran beside the holder");
    assert_eq!(std::fs::read(lock).unwrap(), before);
}

#[test]
fn a_lock_the_previous_build_held_when_it_was_killed_is_taken_over() {
    let env = Env::new();
    let ran = env.path("ran");
    let lock = plant_lock(&env, "v3-2d5bfff-held.lock", |_, _| None);
    let record = std::fs::read_to_string(&lock).unwrap();
    assert!(record.starts_with("version=3 state=held "), "{record}");
    let old: u64 = field(&record, "fence").unwrap().parse().unwrap();
    // Its holder and its job are gone (on the machine that made it: dead; on
    // any other, renewed long ago: expired).
    let o = exec_on(&env, &lock, &ran);
    assert_taken_over(&o, &lock, &ran, Some(old));
    let err = stderr(&o);
    assert!(
        err.contains("took over the lease of a dead holder (pid 20687")
            || err.contains("took over an expired lease (pid 20687"),
        "{err}"
    );
}

#[test]
fn a_lock_in_the_previous_builds_format_whose_holder_lives_is_respected() {
    use std::os::unix::fs::MetadataExt as _;
    let env = Env::new();
    let ran = env.path("ran");
    let mut holder = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    let pid = holder.id();
    let read = |p: &str| std::fs::read_to_string(p).ok().map(|s| s.trim().to_owned());
    let pstart = baton_lease::job::process_start(pid).unwrap();
    let pidns = std::fs::metadata("/proc/self/ns/pid").unwrap().ino();
    let now = baton_lease::SystemClock.wall();
    let boot_ms = baton_lease::SystemClock.boot().as_millis();
    let host = read("/proc/sys/kernel/hostname").unwrap();
    let boot = read("/proc/sys/kernel/random/boot_id").unwrap();
    let machine = read("/etc/machine-id");
    // Every field as that build wrote it, but the holder's facts, which
    // are now those of a process that runs.
    let lock = plant_lock(&env, "v3-2d5bfff-held.lock", |k, _| match k {
        "pid" => Some(pid.to_string()),
        "pstart" => Some(pstart.to_string()),
        "pidns" => Some(pidns.to_string()),
        "host" => Some(host.clone()),
        "boot" => Some(boot.clone()),
        "machine" => machine.clone(),
        "bt_ms" => Some(boot_ms.to_string()),
        "at" | "renewed" => Some(format!("{now:.6}")),
        _ => None,
    });
    let before = std::fs::read(&lock).unwrap();
    let o = exec_on(&env, &lock, &ran);
    assert_respected(&o, &lock, &ran, &before);
    let said = format!("busy: held by pid {pid} on {host}, run d75f0cee332301bd");
    assert!(stderr(&o).contains(&said), "{}", both(&o));
    holder.kill().unwrap();
    holder.wait().unwrap();
    // Gone, it is taken over at once.
    let o = exec_on(&env, &lock, &ran);
    let old: u64 = field(&String::from_utf8(before).unwrap(), "fence")
        .unwrap()
        .parse()
        .unwrap();
    assert_taken_over(&o, &lock, &ran, Some(old));
}

#[test]
fn a_lock_the_previous_build_released_is_taken_at_once_with_a_higher_fence() {
    let env = Env::new();
    let ran = env.path("ran");
    let lock = plant_lock(&env, "v3-2d5bfff-free.lock", |_, _| None);
    let record = std::fs::read_to_string(&lock).unwrap();
    let old: u64 = field(&record, "fence").unwrap().parse().unwrap();
    let o = exec_on(&env, &lock, &ran);
    assert_taken_over(&o, &lock, &ran, Some(old));
    // The claim the old build kept is still there for the scheduler.
    let now = std::fs::read_to_string(&lock).unwrap();
    assert_eq!(field(&now, "claims"), field(&record, "claims"), "{now}");
}

#[test]
fn a_scheduler_lock_v2_lease_is_judged_by_v2s_rule_and_its_free_marker_taken() {
    let env = Env::new();
    let ran = env.path("ran");
    // Taken long ago: past v2's threshold (2 h), expired.
    let lock = plant_lock(&env, "v2-held.lock", |_, _| None);
    let o = exec_on(&env, &lock, &ran);
    assert!(stderr(&o).contains("expired"), "{}", both(&o));
    assert_taken_over(&o, &lock, &ran, None);

    // The same lease taken a minute ago: live by v2's rule.
    std::fs::remove_file(&ran).unwrap();
    let minute_ago = baton_lease::SystemClock.wall() - jiff::SignedDuration::from_secs(60);
    let lock = plant_lock(&env, "v2-held.lock", |k, _| {
        (k == "at").then(|| format!("{minute_ago:.6}"))
    });
    let before = std::fs::read(&lock).unwrap();
    let o = exec_on(&env, &lock, &ran);
    assert_respected(&o, &lock, &ran, &before);
    assert!(
        stderr(&o).contains("busy: held by a Scheduler Lock v2 holder, pid 48213"),
        "{}",
        both(&o)
    );

    let lock = plant_lock(&env, "v2-free.lock", |_, _| None);
    let o = exec_on(&env, &lock, &ran);
    assert_taken_over(&o, &lock, &ran, None);
}

/// The inode of a file, by path.
fn inode(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().ino()
}

#[test]
fn a_binary_swapped_under_a_running_daemon_runs_its_next_runs_and_the_daemon_waits_for_a_restart() {
    let env = Env::new();
    let seen = env.path("seen");
    let bin = env.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = bin.join("baton");
    std::fs::copy(crate::support::BATON, &exe).unwrap();
    let s = Sched { env };
    // Each run writes the inode of the program that supervises it (the
    // step's parent, `baton __run`).
    s.write(&format!(
        "[jobs.a]\nschedule = \"0 0 1 1 *\"\nrun = \"read -r me _ < /proc/self/stat; \
         pp=$(cut -d' ' -f4 /proc/$me/stat); stat -L -c %i /proc/$pp/exe >> {}\"\n",
        seen.display()
    ));
    // The daemon started from that path, as a unit's ExecStart= does.
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["daemon", "--listen", "127.0.0.1:0"])
        .env("BATON_CONFIG", s.config())
        .env_remove("BATON_STATE_DIR")
        .env_remove("BATON_ENABLED")
        .current_dir(s.env.tmp.path())
        .stdin(std::process::Stdio::null());
    let d = Daemon::start_cmd(cmd).unwrap_or_else(|(c, log)| panic!("exit {c:?}:\n{log}"));
    let old = inode(&exe);
    let run_once = |n: usize| {
        assert_eq!(d.post("/v1/jobs/a/run", "").status, 202);
        crate::support::eventually("the run to record its program", || lines(&seen) == n);
        crate::support::eventually("the run to end", || {
            s.json(&["history", "a", "--json"])
                .as_array()
                .is_some_and(|runs| runs.len() == n && runs[0]["verdict"] == "ok")
        });
    };
    run_once(1);

    // The new version, put in place by a rename, as `install` does.
    let new = bin.join("baton.new");
    std::fs::copy(crate::support::BATON, &new).unwrap();
    std::fs::rename(&new, &exe).unwrap();
    assert_ne!(inode(&exe), old);
    run_once(2);
    let programs: Vec<u64> = std::fs::read_to_string(&seen)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    assert_eq!(
        programs,
        [old, inode(&exe)],
        "the second run is the new binary's"
    );
    // The daemon itself is still the old program, until it is restarted.
    let daemon_exe = PathBuf::from(format!("/proc/{}/exe", d.pid()));
    assert_eq!(inode(&daemon_exe), old);
    assert_eq!(d.terminate(), Some(0));
}

/// The jobs the ledger at `db` names, read without this build's code, or
/// SQLite's error while the daemon is still making the file.
fn ledger_jobs(db: &Path) -> rusqlite::Result<Vec<String>> {
    try_rows(db, "SELECT job FROM jobs ORDER BY job")
}

#[test]
fn a_daemon_whose_ledger_a_newer_baton_migrates_under_it_writes_nothing_more_to_it() {
    let env = Env::new();
    let ran = env.path("ran");
    let s = Sched { env };
    let job = |name: &str| {
        format!(
            "[jobs.{name}]\nschedule = \"0 0 1 1 *\"\ncatch_up = \"none\"\nrun = \"echo {name} >> {}\"\n",
            ran.display()
        )
    };
    s.write(&job("a"));
    let d = Daemon::start(&s, &[]);
    let db = s.env.state().join("baton.db");
    crate::support::eventually("the daemon to see its job", || {
        db.exists() && ledger_jobs(&db).is_ok_and(|jobs| jobs == ["a"])
    });
    // A newer baton (a run it started after a binary swap) migrates the
    // ledger while the daemon keeps its connection.
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("PRAGMA user_version = 6").unwrap();
    drop(c);
    s.write(&format!("{}{}", job("a"), job("b")));
    assert_eq!(d.post("/v1/reload", "").status, 200, "{}", d.log());
    crate::support::eventually("the daemon to say the ledger is newer", || {
        d.log().contains("schema version is 6")
    });
    assert_eq!(
        ledger_jobs(&db).unwrap(),
        ["a"],
        "the daemon wrote to a newer ledger"
    );
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert_eq!(d.terminate(), Some(0));
    assert_eq!(lines(&ran), 0);
}
