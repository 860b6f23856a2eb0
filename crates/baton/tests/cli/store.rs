//! `[store]` and `baton store` against a real PostgreSQL server: migrating
//! (twice, and from two processes at once), the password from every place
//! it may come from and never printed, refusals with their exit codes, and
//! the daemon migrating at start.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use baton_testkit::pg::PgServer;

use crate::daemon::Daemon;
use crate::sched::Sched;
use crate::support::{code, stderr, stdout};

const PASSWORD: &str = "right-pw-7f3a";
const WRONG: &str = "wrong-pw-91c2";

/// A scheduler whose `[store] url` is `url` (nothing when empty).
fn sched(url: &str, extra: &str) -> Sched {
    let store = if url.is_empty() {
        String::new()
    } else {
        format!("[store]\nurl = {url:?}\n{extra}")
    };
    Sched::new(&store)
}

/// `baton ARGS` with none of the libpq or store variables of this process.
pub(crate) fn cmd(s: &Sched, args: &[&str]) -> Command {
    let mut c = s.cmd(args);
    for v in [
        "PGHOST",
        "PGPORT",
        "PGUSER",
        "PGDATABASE",
        "PGPASSWORD",
        "PGPASSFILE",
        "BATON_STORE_URL",
        "BATON_STORE_PASSWORD_FILE",
        "BATON_STORE_SSLMODE",
        "BATON_STORE_SSLROOTCERT",
        "BATON_STORE_SSLCERT",
        "BATON_STORE_SSLKEY",
    ] {
        c.env_remove(v);
    }
    c
}

pub(crate) fn run(s: &Sched, args: &[&str]) -> Output {
    cmd(s, args).output().unwrap()
}

pub(crate) fn both(o: &Output) -> String {
    format!("{}{}", stdout(o), stderr(o))
}

#[test]
fn store_migrate_twice_says_up_to_date_the_second_time() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let first = run(&s, &["store", "migrate"]);
    assert_eq!(code(&first), 0, "{}", both(&first));
    assert!(
        stdout(&first)
            .contains("applied schema version 1, 2, 3, 4, 5, 6, 7, 8, 9 (now at version 9)"),
        "{}",
        both(&first)
    );
    let second = run(&s, &["store", "migrate"]);
    assert_eq!(code(&second), 0, "{}", both(&second));
    assert!(
        stdout(&second).contains("schema up to date at version 9"),
        "{}",
        both(&second)
    );
    let status = run(&s, &["store", "status"]);
    assert_eq!(code(&status), 0, "{}", both(&status));
    assert!(
        stdout(&status).contains("schema version 9, current"),
        "{}",
        both(&status)
    );
}

#[test]
fn store_status_before_migrating_says_there_is_no_schema() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let o = run(&s, &["store", "status"]);
    assert_eq!(code(&o), 1, "{}", both(&o));
    assert!(
        stdout(&o).contains("schema version 0, no schema"),
        "{}",
        both(&o)
    );
}

#[test]
fn store_migrate_from_two_processes_at_once_applies_each_version_once() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let a = cmd(&s, &["store", "migrate"]).spawn_output();
    let b = cmd(&s, &["store", "migrate"]).spawn_output();
    let (a, b) = (a.wait(), b.wait());
    assert_eq!((code(&a), code(&b)), (0, 0), "{}\n{}", both(&a), both(&b));
    let applied = [&a, &b]
        .iter()
        .filter(|o| stdout(o).contains("applied schema version 1, 2, 3"))
        .count();
    let up_to_date = [&a, &b]
        .iter()
        .filter(|o| stdout(o).contains("up to date at version 9"))
        .count();
    assert_eq!((applied, up_to_date), (1, 1), "{}\n{}", both(&a), both(&b));
}

#[test]
fn store_wrong_password_is_refused_without_printing_it() {
    let pg = PgServer::start_with_password(PASSWORD);
    let url = pg.url().replace("baton@", &format!("baton:{WRONG}@"));
    let s = sched(&url, "");
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 1, "{}", both(&o));
    assert!(!both(&o).contains(WRONG), "{}", both(&o));
    assert!(
        stderr(&o).contains(&format!("127.0.0.1:{}", pg.port())),
        "{}",
        both(&o)
    );
    assert!(
        stderr(&o).contains("failed to migrate the store"),
        "{}",
        both(&o)
    );
    // The same URL with the right password is let in.
    let s = sched(
        &pg.url().replace("baton@", &format!("baton:{PASSWORD}@")),
        "",
    );
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(!both(&o).contains(PASSWORD), "{}", both(&o));
}

#[test]
fn store_pgpassword_and_password_file_are_used() {
    let pg = PgServer::start_with_password(PASSWORD);
    let s = sched(&pg.url(), "");
    let without = run(&s, &["store", "status"]);
    assert_eq!(code(&without), 1, "{}", both(&without));
    let o = cmd(&s, &["store", "migrate"])
        .env("PGPASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", both(&o));
    // A relative password file is read beside baton.toml, and it comes
    // before PGPASSWORD.
    std::fs::write(s.env.path("pg.pw"), format!("{PASSWORD}\n")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let private = std::fs::Permissions::from_mode(0o600);
        std::fs::set_permissions(s.env.path("pg.pw"), private).unwrap();
    }
    let s2 = Sched { env: s.env };
    s2.write(&format!(
        "[store]\nurl = {:?}\npassword_file = \"pg.pw\"\n",
        pg.url()
    ));
    let o = cmd(&s2, &["store", "status"])
        .env("PGPASSWORD", WRONG)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", both(&o));
    // PGPASSFILE, in its simple format.
    s2.write(&format!("[store]\nurl = {:?}\n", pg.url()));
    let pass = s2.env.path("pgpass");
    std::fs::write(
        &pass,
        format!(
            "otherhost:*:*:*:{WRONG}\n127.0.0.1:{}:postgres:baton:{PASSWORD}\n",
            pg.port()
        ),
    )
    .unwrap();
    let o = cmd(&s2, &["store", "status"])
        .env("PGPASSFILE", &pass)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", both(&o));
}

/// Two servers with passwords of their own behind one URL (as libpq, each
/// host is tried with its own line of `PGPASSFILE`): the first host listed
/// is read-only, or down, and only the second takes writes.
#[test]
fn store_pgpassfile_gives_each_host_of_the_url_its_own_password() {
    use std::os::unix::fs::PermissionsExt;
    const OTHER: &str = "other-pw-5d1e";
    let read_only = PgServer::start_with_password(OTHER);
    read_only.sql("ALTER SYSTEM SET default_transaction_read_only = on");
    read_only.sql("SELECT pg_reload_conf()");
    let pg = PgServer::start_with_password(PASSWORD);
    // A port nothing listens on: bound, then released.
    let down = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for first in [read_only.port(), down] {
        let url = format!(
            "postgres://baton@127.0.0.1:{first},127.0.0.1:{}/postgres?target_session_attrs=read-write",
            pg.port()
        );
        let s = sched(
            &url,
            "\n[jobs.nightly]\nschedule = \"0 3 * * *\"\nrun = \"true\"\n",
        );
        let pass = s.env.path("pgpass");
        // The first host's line comes first and matches it only; the second
        // host's names its port, database and user.
        std::fs::write(
            &pass,
            format!(
                "# one line per server\n127.0.0.1:{first}:*:*:{OTHER}\n\
                 127.0.0.1:{}:postgres:baton:{PASSWORD}\n",
                pg.port()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let with = |args: &[&str]| {
            let o = cmd(&s, args).env("PGPASSFILE", &pass).output().unwrap();
            assert!(!both(&o).contains(PASSWORD), "{}", both(&o));
            assert!(!both(&o).contains(OTHER), "{}", both(&o));
            o
        };
        for args in [
            &["store", "migrate"][..],
            &["run", "nightly"],
            &["store", "status"],
        ] {
            let o = with(args);
            assert_eq!(code(&o), 0, "first host {first}, {args:?}: {}", both(&o));
            assert!(
                !stderr(&o).contains("can be read by others"),
                "{}",
                both(&o)
            );
        }
        // A password file others may read is still used, and said.
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let o = with(&["store", "status"]);
        assert_eq!(code(&o), 0, "{}", both(&o));
        assert!(stderr(&o).contains("chmod 600"), "{}", both(&o));
    }
    // Both runs were recorded by the server that takes writes.
    assert_eq!(pg.sql("SELECT count(*) FROM baton.runs"), "2");
    assert_eq!(
        read_only.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'baton'"),
        "0"
    );
}

#[test]
fn store_pg_variables_fill_what_the_url_leaves_out() {
    let pg = PgServer::start();
    let s = sched("postgres://", "");
    let o = cmd(&s, &["store", "migrate"])
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", pg.port().to_string())
        .env("PGUSER", "baton")
        .env("PGDATABASE", "postgres")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(
        stdout(&o).contains(&format!(
            "127.0.0.1:{} (database postgres, user baton)",
            pg.port()
        )),
        "{}",
        both(&o)
    );
}

#[test]
fn store_unreachable_host_is_refused_naming_it() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let s = sched(&format!("postgres://baton:{WRONG}@127.0.0.1:{port}/x"), "");
    for args in [&["store", "migrate"][..], &["store", "status"]] {
        let o = run(&s, args);
        assert_eq!(code(&o), 1, "{}", both(&o));
        assert!(
            stderr(&o).contains(&format!("127.0.0.1:{port}")),
            "{}",
            both(&o)
        );
        assert!(!both(&o).contains(WRONG), "{}", both(&o));
    }
    let o = run(&s, &["daemon", "--listen", "127.0.0.1:0"]);
    assert_eq!(code(&o), 1, "{}", both(&o));
    assert!(stderr(&o).contains("refusing to start"), "{}", both(&o));
    assert!(!both(&o).contains(WRONG), "{}", both(&o));
}

#[test]
fn store_config_masks_the_password() {
    let s = sched(
        &format!("postgres://baton:{WRONG}@db.example:5433/baton"),
        "",
    );
    let text = run(&s, &["config"]);
    assert_eq!(code(&text), 0, "{}", both(&text));
    assert!(
        stdout(&text).contains("url = \"postgres://baton:***@db.example:5433/baton\""),
        "{}",
        both(&text)
    );
    let json = run(&s, &["config", "--json"]);
    assert_eq!(code(&json), 0, "{}", both(&json));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(
        v["store"]["url"]["value"],
        "postgres://baton:***@db.example:5433/baton"
    );
    let env = run(&s, &["render", "env"]);
    assert_eq!(code(&env), 0, "{}", both(&env));
    assert!(
        stdout(&env).contains("# BATON_STORE_URL: "),
        "{}",
        both(&env)
    );
    assert!(stdout(&env).contains("# PGPASSWORD: "), "{}", both(&env));
    for o in [&text, &json, &env] {
        assert!(!both(o).contains(WRONG), "{}", both(o));
    }
}

#[test]
fn store_env_url_overrides_the_file() {
    let pg = PgServer::start();
    let s = sched("postgres://nobody@127.0.0.1:1/x", "");
    let o = cmd(&s, &["store", "migrate"])
        .env("BATON_STORE_URL", pg.url())
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", both(&o));
    let o = cmd(&s, &["config", "--json"])
        .env("BATON_STORE_URL", pg.url())
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["store"]["url"]["source"], "BATON_STORE_URL");
}

#[test]
fn store_invalid_or_missing_url_exits_2() {
    let s = sched(&format!("mysql://baton:{WRONG}@db/x"), "");
    for args in [&["store", "migrate"][..], &["config"], &["daemon"]] {
        let o = run(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", both(&o));
        assert!(
            stderr(&o).contains("postgres:// or postgresql://"),
            "{}",
            both(&o)
        );
        assert!(!both(&o).contains(WRONG), "{}", both(&o));
    }
    // A PostgreSQL URL the driver cannot read is refused by `config` as
    // by every command that connects, the password never shown.
    for (url, says) in [
        (
            format!("postgres://baton:{WRONG}@db/x?sslmode=bogus"),
            "sslmode",
        ),
        (format!("postgres://baton:{WRONG}@db:99999/x"), "store url"),
    ] {
        let s = sched(&url, "");
        for args in [&["config"][..], &["tick"]] {
            let o = run(&s, args);
            assert_eq!(code(&o), 2, "{url} {args:?}: {}", both(&o));
            assert!(stderr(&o).contains(says), "{url} {args:?}: {}", both(&o));
            assert!(!both(&o).contains(WRONG), "{}", both(&o));
        }
    }
    let s = sched("", "");
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 2, "{}", both(&o));
    assert!(
        stderr(&o).contains("no store is configured"),
        "{}",
        both(&o)
    );
}

#[test]
fn store_daemon_migrates_at_start() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let d = Daemon::start_cmd(cmd(&s, &["daemon", "--listen", "127.0.0.1:0"]))
        .unwrap_or_else(|(c, log)| panic!("the daemon did not start (exit {c:?}):\n{log}"));
    let log = d.log();
    assert!(log.contains("applied schema version 1, 2, 3"), "{log}");
    assert!(
        log.contains("leases, claims and the ledger are kept in"),
        "{log}"
    );
    let o = run(&s, &["store", "status"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert_eq!(d.terminate(), Some(0));
}

/// A spawned command whose output is collected later.
trait SpawnOutput {
    fn spawn_output(&mut self) -> Pending;
}

struct Pending(std::process::Child);

impl Pending {
    fn wait(self) -> Output {
        self.0.wait_with_output().unwrap()
    }
}

impl SpawnOutput for Command {
    fn spawn_output(&mut self) -> Pending {
        Pending(
            self.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap(),
        )
    }
}

#[test]
fn store_lock_commands_refuse_a_configuration_whose_locks_are_in_postgresql() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let config = s.config();
    for verb in ["show", "break"] {
        let o = run(
            &s,
            &[
                "lock",
                verb,
                "nightly",
                "--config",
                config.to_str().unwrap(),
            ],
        );
        assert_eq!(code(&o), 2, "{}", both(&o));
        assert!(
            stderr(&o).contains("kept in PostgreSQL") && stderr(&o).contains("baton status"),
            "{}",
            both(&o)
        );
    }
}

#[test]
fn store_a_server_that_accepts_and_never_answers_is_given_up_on() {
    let port = baton_testkit::proxy::silent_port();
    let s = sched(&format!("postgres://baton@127.0.0.1:{port}/postgres"), "");
    for args in [
        &["store", "status"][..],
        &["store", "migrate"],
        &["daemon", "--listen", "127.0.0.1:0"],
    ] {
        let mut child = cmd(&s, args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A hang fails here, after the test kit's patience.
        let status = baton_testkit::wait_for_exit(&mut child, "baton to give up");
        let o = child.wait_with_output().unwrap();
        assert_eq!(status.code(), Some(1), "{args:?}: {}", both(&o));
        assert!(
            stderr(&o).contains("no answer from the store"),
            "{args:?}: {}",
            both(&o)
        );
    }
}

/// A scheduler on `pg`'s store with one job `j` whose run touches the
/// returned marker (kept in the returned directory): whether it ran.
fn marked_job(pg: &PgServer) -> (Sched, std::path::PathBuf, tempfile::TempDir) {
    let ran = tempfile::tempdir().unwrap();
    let marker = ran.path().join("ran");
    let s = Sched::new(&format!(
        "[store]\nurl = {:?}\n[jobs.j]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"touch {}\"\n",
        pg.url(),
        marker.display()
    ));
    (s, marker, ran)
}

#[test]
fn store_status_and_history_refuse_a_store_they_cannot_read() {
    // A server without baton's schema: nothing may read as "never run".
    let pg = PgServer::start();
    let (s, marker, _ran) = marked_job(&pg);
    // Nor does anything run: not without the store's lease and ledger.
    for args in [&["tick"][..], &["run", "j"]] {
        let o = run(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", both(&o));
        assert!(
            stderr(&o).contains("baton store migrate"),
            "{args:?}: {}",
            both(&o)
        );
        assert!(!marker.exists(), "{args:?} ran the job: {}", both(&o));
    }
    let lock_files = std::fs::read_dir(s.env.state().join("locks"))
        .map(|d| d.count())
        .unwrap_or(0);
    assert!(
        !s.env.state().join("baton.db").exists() && lock_files == 0,
        "fell back to local files"
    );
    for args in [&["status"][..], &["status", "--json"], &["history", "j"]] {
        let o = run(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", both(&o));
        assert!(
            stderr(&o).contains("baton store migrate"),
            "{args:?}: {}",
            both(&o)
        );
        assert!(!stdout(&o).contains("never"), "{args:?}: {}", both(&o));
    }
}

#[test]
fn store_a_read_only_server_is_refused_before_anything_runs() {
    // A database every transaction of which is read-only, as a standby's
    // is: refused when the store opens, never at the first write.
    let pg = PgServer::start();
    let (s, marker, _ran) = marked_job(&pg);
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    pg.sql("ALTER DATABASE postgres SET default_transaction_read_only = on");
    for args in [&["run", "j"][..], &["tick"]] {
        let o = run(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", both(&o));
        let err = stderr(&o);
        assert!(
            err.contains("read-only")
                && err.contains(&format!("127.0.0.1:{}", pg.port()))
                && err.contains("default_transaction_read_only"),
            "{args:?}: {}",
            both(&o)
        );
        assert!(!marker.exists(), "{args:?} ran the job: {}", both(&o));
    }
    // The daemon, whose migration is its first act, refuses to start as
    // `run` and `tick` refuse (exit 2), and `store migrate` says why it
    // cannot (exit 1): the server, not its first write's SQL error.
    for (args, exit) in [
        (&["daemon", "--listen", "127.0.0.1:0"][..], 2),
        (&["store", "migrate"], 1),
    ] {
        // Bounded: a daemon that started after all fails the test (killed,
        // exit 137), not the suite's patience.
        let o = crate::support::wrapped(&cmd(&s, args), &["timeout", "-s", "KILL", "60"])
            .output()
            .unwrap();
        assert_eq!(code(&o), exit, "{args:?}: {}", both(&o));
        let err = stderr(&o);
        assert!(
            err.contains("the server is read-only (default_transaction_read_only is on)")
                && err.contains(&format!("127.0.0.1:{}", pg.port()))
                && !err.contains("CREATE SCHEMA"),
            "{args:?}: {}",
            both(&o)
        );
    }
    assert!(!marker.exists(), "the daemon ran the job");
    // `store status` says so and exits 1, as for any store no run can use.
    let o = run(&s, &["store", "status"]);
    assert_eq!(code(&o), 1, "{}", both(&o));
    assert!(
        stdout(&o).contains(
            "read-only: the server takes no writes (default_transaction_read_only is on)"
        ),
        "{}",
        both(&o)
    );
    let o = run(&s, &["store", "status", "--json"]);
    assert_eq!(code(&o), 1, "{}", both(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert_eq!(v["read_only"], "default_transaction_read_only is on", "{v}");
    assert_eq!(v["verdict"], "current", "{v}");
    pg.sql("BEGIN READ WRITE; ALTER DATABASE postgres RESET default_transaction_read_only; COMMIT");
    let o = run(&s, &["store", "status", "--json"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json");
    assert!(v["read_only"].is_null(), "{v}");
}

#[test]
fn store_behind_pgbouncer_runs_in_transaction_mode_and_refuses_statement_mode() {
    let pg = PgServer::start();
    let o = run(&sched(&pg.url(), ""), &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    for (mode, want) in [("transaction", 0), ("session", 0), ("statement", 2)] {
        let bouncer = baton_testkit::pgbouncer::PgBouncer::start_in(&pg, mode);
        let ran = tempfile::tempdir().unwrap();
        let marker = ran.path().join("ran");
        let s = sched(
            &bouncer.url(),
            &format!(
                "[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}\"\n",
                marker.display()
            ),
        );
        let o = run(&s, &["run", "j"]);
        assert_eq!(code(&o), want, "{mode}: {}", both(&o));
        assert_eq!(marker.exists(), want == 0, "{mode}: {}", both(&o));
        if want != 0 {
            assert!(stderr(&o).contains("statement pooling"), "{}", both(&o));
        }
        // `store status` says what a run would meet: a store no run can use
        // is no healthy store.
        let o = run(&s, &["store", "status"]);
        assert_eq!(
            code(&o),
            if want == 0 { 0 } else { 1 },
            "{mode}: {}",
            both(&o)
        );
        if want != 0 {
            assert!(stderr(&o).contains("statement pooling"), "{}", both(&o));
            assert!(
                stderr(&o).contains("cannot be used as runs use it"),
                "{}",
                both(&o)
            );
        }
    }
}

/// The most round trips one `baton run` of a job that does nothing may
/// take to the store, counted by a proxy between baton and the server: its
/// connections' start-up and checks, the ledger's records and the lease's
/// steps, the second time the job runs (the first also creates its rows).
/// 10 when this was written (the job's group named inside the start's
/// transaction: the first attempt spawned and held at its gate before the
/// start is recorded), 11 before that (the release sent behind the `COMMIT`
/// of the run's end, conditional on that end being recorded and nothing
/// queued), 12 before that (the job's guard read behind the ledger's
/// first look, in its round trip), 13 before that (the job's guard taken
/// behind the lease's grant, in its round trip), 14 before that (the look at the queue after
/// the release sent in the release's round trip), 15 before that (a write's `BEGIN` sent with its first looks;
/// a run's end decided from its looks, its writes sent together with the
/// queue's read; the unfinished runs read with the start; a guard's take
/// sent with its `COMMIT`), 21 before that (the last attempt recorded with
/// the run's end, in one transaction), 24 before that (a guard already naming the
/// run's lock moved by its upsert, an attempt's insert and a run's end sent
/// with the look at their run), 29 before that (one connection, which the store's calls,
/// the ledger's and the held lease's share), 34 to 35 with three connections
/// (the store's, kept across
/// the run's calls; the ledger's, whose schema check goes with its first
/// read; the held lease's; a read's statements sent together with its
/// `BEGIN` and `COMMIT`; a write's statements that answer nothing sent
/// together), 39 to 40 when the ledger checked its schema in a round trip
/// of its own and read the queue and the pauses in one each, 43 to 47 when
/// a read waited for its `COMMIT`, 53 when a write's statements went alone,
/// 57 when a read waited for its `BEGIN`, 64 when each call on the lease's
/// row connected again, 117 when every connection prepared its statements
/// by name. The proxy counts a round trip each time the client speaks after
/// the server, across all the run's connections (connections speaking at
/// once count as one), and holds each back 20 ms, sending whatever the
/// client wrote meanwhile with it, as a network with that latency would:
/// a batch written in parts counts once. A loaded machine may still split
/// one now and then; the least count of several measurements is taken
/// ([`within_in_one_of_five`]), so no margin is added.
const RUN_ROUND_TRIPS: u64 = 10;

/// The most round trips one `baton tick` with nothing due may take, for
/// one job, the second time (the first also records that the job is seen):
/// 3 when this was written (the `SSLRequest`, the start-up, then the
/// schema's check, the store's clock, the jobs and the queue in one round
/// trip), 6 when each of those went alone, 9 when a read waited for its
/// `COMMIT`. Counted as [`RUN_ROUND_TRIPS`] are.
const TICK_ROUND_TRIPS: u64 = 3;

/// The most round trips one `baton status` of ten jobs may take: 5 when
/// this was written (one connection, shared by the ledger's reads and the
/// leases'), 8 with two connections of two round trips of start-up each:
/// the ledger's, whose check, clock and reads of every job take two round
/// trips, and which says whether it is encrypted; the store's, whose check
/// and reads of the ten leases, with whether a new primary holds leases
/// back, take two), 10 with a third connection made
/// only to say whether it was encrypted, 103 when each job's ledger reads
/// went one after another, about ten of one round trip each, 194 to 199
/// when a read waited for its `COMMIT`, 204 to 211 when each lease was read
/// in a round trip of its own. Counted as [`RUN_ROUND_TRIPS`] are.
const STATUS_ROUND_TRIPS: u64 = 5;

/// The round trips of each of three `baton ARGS` through a proxy to a
/// migrated store, with `jobs` configured; each of them must open exactly
/// one connection.
fn round_trips_of(jobs: &str, args: &[&str]) -> Vec<u64> {
    let pg = PgServer::start();
    let proxy = baton_testkit::proxy::Proxy::start(([127, 0, 0, 1], pg.port()).into());
    let url = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let s = sched(&url, jobs);
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    // Each round trip as a network with some latency sees it: a batch the
    // client writes in parts counts once (`Proxy::delay`).
    proxy.delay(std::time::Duration::from_millis(20));
    let mut trips = Vec::new();
    for _ in 0..3 {
        let (t0, c0) = (proxy.turns(), proxy.connections());
        let o = run(&s, args);
        assert_eq!(code(&o), 0, "{args:?}: {}", both(&o));
        trips.push(proxy.turns() - t0);
        assert_eq!(
            proxy.connections() - c0,
            1,
            "connections of `baton {}`",
            args.join(" ")
        );
    }
    eprintln!(
        "round trips of `baton {}` (first, second, third): {trips:?}",
        args.join(" ")
    );
    trips
}

/// Measures `baton ARGS` with `jobs` up to five times over
/// ([`round_trips_of`]) until one of its later runs (the first also creates
/// rows) is within `bound`. The proxy's count only ever overstates: a
/// loaded machine splits a batch sent together into more turns (see
/// [`RUN_ROUND_TRIPS`]), and nothing merges two waits into one, so the
/// least count seen is the closest to the true one, and a command whose
/// true count is over `bound` fails every measurement.
fn within_in_one_of_five(jobs: &str, args: &[&str], bound: u64) {
    let mut seen = Vec::new();
    for _ in 0..5 {
        let trips = round_trips_of(jobs, args);
        if trips[1..].iter().any(|&t| t <= bound) {
            return;
        }
        seen.push(trips);
    }
    panic!("over {bound} round trips in every later measurement: {seen:?}");
}

#[test]
fn store_one_run_of_true_takes_a_bounded_number_of_round_trips() {
    within_in_one_of_five(
        "[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        &["run", "j"],
        RUN_ROUND_TRIPS,
    );
}

#[test]
fn store_a_tick_with_nothing_due_takes_a_bounded_number_of_round_trips() {
    within_in_one_of_five(
        "[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        &["tick"],
        TICK_ROUND_TRIPS,
    );
}

#[test]
fn store_status_of_ten_jobs_takes_a_bounded_number_of_round_trips() {
    let jobs: String = (0..10)
        .map(|i| format!("[jobs.j{i}]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n"))
        .collect();
    within_in_one_of_five(&jobs, &["status"], STATUS_ROUND_TRIPS);
}

/// A job whose run writes `started`, then waits for `go` and exits with
/// `code`.
fn gated_job(s: &Sched, name: &str, code: i32) -> String {
    format!(
        "[jobs.{name}]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {started}; while [ ! -e {go} ]; do \
         sleep 0.05; done; exit {code}\"\n",
        started = s.env.path(&format!("{name}.started")).display(),
        go = s.env.path(&format!("{name}.go")).display(),
    )
}

/// A scheduler on `pg`'s store, migrated, with the jobs `jobs` writes for
/// it.
fn migrated(pg: &PgServer, jobs: impl FnOnce(&Sched) -> String) -> Sched {
    let s = sched(&pg.url(), "");
    s.write(&format!("[store]\nurl = {:?}\n{}", pg.url(), jobs(&s)));
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    s
}

/// `baton ARGS` spawned (its stderr kept), once its job has made the file
/// `started`.
fn spawned_until(s: &Sched, args: &[&str], started: &std::path::Path) -> std::process::Child {
    let child = cmd(s, args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    baton_testkit::eventually("the job to start", || started.exists());
    child
}

#[test]
fn store_a_run_that_ends_while_the_server_restarts_records_its_verdict_and_frees_the_lock() {
    let pg = PgServer::start();
    let s = migrated(&pg, |s| {
        gated_job(s, "fine", 0) + &gated_job(s, "broken", 3)
    });
    for (job, want_code, want_verdict) in [("fine", 0, "ok"), ("broken", 1, "failed")] {
        let mut child = cmd(&s, &["run", job])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        baton_testkit::eventually("the job to start", || {
            s.env.path(&format!("{job}.started")).exists()
        });
        // The server goes down; the job ends meanwhile, and its end cannot
        // be recorded.
        pg.stop_for_now();
        std::fs::write(s.env.path(&format!("{job}.go")), "").unwrap();
        baton_testkit::eventually("a failed ledger write", || {
            s.envelope().contains("failed to write the ledger")
        });
        pg.start_again();
        let status = baton_testkit::wait_for_exit(&mut child, "the run to end");
        let o = child.wait_with_output().unwrap();
        assert_eq!(status.code(), Some(want_code), "{job}: {}", both(&o));
        // The lock is free as soon as the run is over, not TTL + grace later.
        assert_eq!(
            pg.sql(&format!(
                "SELECT state FROM baton.leases WHERE name = '{job}'"
            )),
            "free",
            "{job}: {}",
            both(&o)
        );
        let h = run(&s, &["history", job, "--json"]);
        let runs: serde_json::Value = serde_json::from_slice(&h.stdout)
            .unwrap_or_else(|e| panic!("history --json: {e}: {}", both(&h)));
        assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
        assert_eq!(
            runs[0]["verdict"],
            want_verdict,
            "{job}: {runs}\n{}",
            both(&o)
        );
        assert_eq!(
            runs[0]["exit_code"],
            if want_code == 0 { 0 } else { 3 },
            "{runs}"
        );
        assert_eq!(
            runs[0]["attempts"].as_array().map(Vec::len),
            Some(1),
            "{runs}"
        );
    }
}

/// The signals a run's supervisor reads for itself, as bits of a
/// `/proc/PID/task/TID/status` `SigBlk` mask (signal N is bit N - 1):
/// SIGHUP (1), SIGINT (2), SIGTERM (15), SIGCHLD (17), SIGTSTP (20), and
/// those it passes on to the job: SIGUSR1 (10), SIGUSR2 (12), SIGALRM (14).
const SUPERVISED: u64 = 1 << 0 | 1 << 1 | 1 << 14 | 1 << 16 | 1 << 19 | 1 << 9 | 1 << 11 | 1 << 13;

/// Each thread of process `pid` with the signals it leaves unblocked of
/// [`SUPERVISED`], by its name.
fn unquiet_threads(pid: u32) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let dir = task.unwrap().path();
        let (Ok(comm), Ok(status)) = (
            std::fs::read_to_string(dir.join("comm")),
            std::fs::read_to_string(dir.join("status")),
        ) else {
            continue; // a thread that ended meanwhile
        };
        let blocked = status
            .lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .map(|m| u64::from_str_radix(m.trim(), 16).unwrap())
            .unwrap();
        if blocked & SUPERVISED != SUPERVISED {
            out.push((comm.trim().to_owned(), SUPERVISED & !blocked));
        }
    }
    out
}

/// SIGTERM, SIGHUP and SIGINT sent to a `baton run` whose job's
/// lock is in PostgreSQL reach the job, as with the file store: the run is
/// recorded `interrupted` by its own supervisor and its lock freed at once.
/// No thread of the store's (its driver, the ledger's, the held lease's)
/// leaves those signals or SIGCHLD unblocked while a run is supervised:
/// one that did took them instead of the supervisor's `signalfd`, so
/// SIGTERM ended baton by its default action (the run left to be recorded
/// `abandoned` by the next one) and a SIGCHLD was lost (the step's end
/// noticed a tick late).
#[test]
fn store_signals_to_a_run_reach_its_job_and_its_supervisor_records_it_interrupted() {
    use rustix::process::Signal;
    let pg = PgServer::start();
    let s = migrated(&pg, |s| gated_job(s, "slow", 0));
    let started = s.env.path("slow.started");
    for (args, sig) in [
        (&["run", "slow"][..], Signal::TERM),
        (&["run", "slow"][..], Signal::HUP),
        (&["run", "slow"][..], Signal::INT),
    ] {
        let _ = std::fs::remove_file(&started);
        let mut child = spawned_until(&s, args, &started);
        assert_eq!(unquiet_threads(child.id()), [], "{args:?}");
        crate::support::signal(i32::try_from(child.id()).unwrap(), sig);
        let status = baton_testkit::wait_for_exit(&mut child, "the stopped run");
        let o = child.wait_with_output().unwrap();
        assert_eq!(status.signal(), None, "{args:?} {sig:?}: {}", both(&o));
        let h = run(&s, &["history", "slow", "--json"]);
        let runs: serde_json::Value = serde_json::from_slice(&h.stdout)
            .unwrap_or_else(|e| panic!("history --json: {e}: {}", both(&h)));
        assert_eq!(
            runs[0]["verdict"],
            "interrupted",
            "{args:?} {sig:?}: {runs}\n{}",
            both(&o)
        );
        assert_eq!(
            pg.sql("SELECT state FROM baton.leases WHERE name = 'slow'"),
            "free",
            "{args:?} {sig:?}: {}",
            both(&o)
        );
    }
}

/// The ledger's write lock (`baton-lg` in ASCII), as every ledger write
/// transaction takes it.
const LEDGER_WRITE_LOCK: i64 = 0x6261_746f_6e2d_6c67;

/// A job due now whatever the minute (one occurrence a year, caught up for
/// 400 days) that appends a line to `ran`.
fn yearly_job(name: &str, ran: &std::path::Path) -> String {
    format!(
        "[jobs.{name}]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo ran >> {}\"\n",
        ran.display()
    )
}

/// Another host's writer sitting on the ledger's write lock until the
/// session is dropped: every ledger write waits, and gives up after the
/// statement timeout.
fn hold_the_ledgers_write_lock(pg: &PgServer) -> baton_testkit::pg::Psql {
    let mut writer = pg.session();
    writer.send(&format!("SELECT pg_advisory_lock({LEDGER_WRITE_LOCK});"));
    baton_testkit::eventually("the write lock held", || {
        pg.sql("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted") == "1"
    });
    writer
}

fn ran_lines(p: &std::path::Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |s| s.lines().count())
}

#[test]
fn store_a_start_the_ledger_could_not_record_at_first_is_recorded_and_the_run_goes_on() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let ran = s.env.path("ran");
    s.write(&format!(
        "[store]\nurl = {:?}\n{}",
        pg.url(),
        yearly_job("j", &ran)
    ));
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    crate::sched::pg_known_since(&pg, &["j"], crate::sched::before_new_year());
    let writer = hold_the_ledgers_write_lock(&pg);
    let mut tick = cmd(&s, &["tick"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    baton_testkit::eventually("the start record to fail once", || {
        s.envelope().contains("failed to write the ledger")
    });
    assert_eq!(
        ran_lines(&ran),
        0,
        "the job ran before its start was recorded"
    );
    drop(writer);
    let status = baton_testkit::wait_for_exit(&mut tick, "the tick to end");
    let o = tick.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", both(&o));
    assert_eq!(ran_lines(&ran), 1, "{}", both(&o));
    let h = run(&s, &["history", "j", "--json"]);
    let runs: serde_json::Value = serde_json::from_slice(&h.stdout)
        .unwrap_or_else(|e| panic!("history --json: {e}: {}", both(&h)));
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["verdict"], "ok", "{runs}");
    // Recorded once, though it was written more than once.
    assert_eq!(
        pg.sql("SELECT decision, count(*) FROM baton.occurrences WHERE job = 'j' GROUP BY 1"),
        "started|1"
    );
    let again = run(&s, &["tick"]);
    assert_eq!(code(&again), 0, "{}", both(&again));
    assert_eq!(ran_lines(&ran), 1, "ran again: {}", both(&again));
}

#[test]
fn store_a_start_never_recorded_is_missed_with_its_reason_and_its_claim_runs_nothing() {
    let pg = PgServer::start();
    let s = sched(&pg.url(), "");
    let ran = s.env.path("ran");
    // A short TTL: the run tries to record its start for that long.
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\nttl = \"4s\"\nkill_grace = \"1s\"\n\
         takeover_grace = \"4s\"\n[store]\nurl = {:?}\n{}",
        s.env.state().display(),
        pg.url(),
        yearly_job("j", &ran)
    ));
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    crate::sched::pg_known_since(&pg, &["j"], crate::sched::before_new_year());
    let writer = hold_the_ledgers_write_lock(&pg);
    let first = run(&s, &["tick"]);
    assert_eq!(code(&first), 2, "{}", both(&first));
    assert!(
        stderr(&first).contains("not run: the ledger did not record its start"),
        "{}",
        both(&first)
    );
    // Said where it could be, though the ledger could not take it.
    let alerts =
        std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap_or_default();
    assert!(
        alerts.contains("\"reason\":\"ledger-unavailable\""),
        "{alerts}"
    );
    // Naming the occurrence it missed, as every missed alert does.
    let alert: serde_json::Value = alerts
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .find(|a: &serde_json::Value| a["reason"] == "ledger-unavailable")
        .unwrap();
    assert_eq!(alert["missed"]["count"], 1, "{alert}");
    assert_eq!(alert["missed"]["first"], alert["occurrence"], "{alert}");
    assert_eq!(alert["missed"]["last"], alert["occurrence"], "{alert}");
    drop(writer);
    assert_eq!(ran_lines(&ran), 0);
    // The occurrence is claimed in the lease row, and never ran: the next
    // tick records it missed, with its reason, and runs nothing.
    let second = run(&s, &["tick"]);
    assert_eq!(code(&second), 1, "{}", both(&second));
    assert!(
        stderr(&second).contains("missed (ledger-unavailable)"),
        "{}",
        both(&second)
    );
    assert_eq!(
        pg.sql("SELECT reason, count FROM baton.missed WHERE job = 'j'"),
        "ledger-unavailable|1"
    );
    assert_eq!(
        pg.sql("SELECT count(*) FROM baton.occurrences WHERE job = 'j'"),
        "0",
        "the claim stands for no run"
    );
    let third = run(&s, &["tick"]);
    assert_eq!(code(&third), 0, "{}", both(&third));
    assert_eq!(ran_lines(&ran), 0);
    assert!(
        run(&s, &["history", "j", "--json"])
            .stdout
            .starts_with(b"[]")
    );
}

#[test]
fn store_a_run_cut_off_from_the_store_ends_on_its_own_while_the_store_stays_silent() {
    let pg = PgServer::start();
    let proxy = baton_testkit::proxy::Proxy::start(([127, 0, 0, 1], pg.port()).into());
    let through = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let s = sched(&pg.url(), "");
    let started = s.env.path("started");
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\nttl = \"4s\"\nkill_grace = \"1s\"\n\
         takeover_grace = \"4s\"\n[store]\nurl = {through:?}\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"touch {}; sleep 300\"\n",
        s.env.state().display(),
        started.display()
    ));
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    crate::sched::pg_known_since(&pg, &["j"], crate::sched::before_new_year());
    for args in [&["run", "j"][..], &["tick"]] {
        let _ = std::fs::remove_file(&started);
        proxy.heal();
        let mut child = spawned_until(&s, args, &started);
        // Every byte to and from the store is dropped from now on, and the
        // store never answers again while the process runs.
        proxy.cut();
        let status = baton_testkit::wait_for_exit(&mut child, "the cut-off run to end");
        let o = child.wait_with_output().unwrap();
        assert_ne!(status.code(), Some(0), "{args:?}: {}", both(&o));
        assert!(
            stderr(&o).contains("lease-lost") || stderr(&o).contains("could not renew"),
            "{args:?}: {}",
            both(&o)
        );
    }
}

/// A tick on the PostgreSQL store forks its due jobs' workers, as on local
/// files: the store's connections and the thread that drives them are gone
/// once it has decided, so the process is single-threaded again (else it
/// runs them one after another). Each job here ends well only if the other
/// runs at the same time.
#[test]
fn store_a_tick_runs_its_due_jobs_at_the_same_time() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let mark = |j: &str| dir.path().join(j).display().to_string();
    let job = |me: &str, other: &str| {
        format!(
            "[jobs.{me}]\nschedule = \"0 * * * *\"\nrun = \"touch {}; for i in $(seq 200); do \
             [ -e {} ] && exit 0; sleep 0.05; done; exit 1\"\n",
            mark(me),
            mark(other)
        )
    };
    let s = sched(&pg.url(), "");
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    // Known since just before this hour: its start is theirs to run.
    let hour = baton_testkit::wall_seconds() / 3600 * 3600;
    let seen = jiff::Timestamp::from_second(hour - 1).unwrap();
    crate::sched::pg_known_since(&pg, &["a", "b"], seen);
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\nmax_parallel = 2\n[store]\nurl = {:?}\n{}{}",
        s.env.state().to_str().unwrap(),
        pg.url(),
        job("a", "b"),
        job("b", "a")
    ));
    let o = run(&s, &["tick"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let h = s.json(&["history", "--json"]);
    let runs = h.as_array().unwrap();
    assert_eq!(runs.len(), 2, "{h}");
    assert!(runs.iter().all(|r| r["verdict"] == "ok"), "{h}");
}

/// An occurrence queued after the holder's run recorded its end (and read
/// the queue), while its release waits for the lock's row, is refused the
/// lock and left to the holder; the holder, once released, looks at the
/// queue (in the release's own round trip) and runs it right away, not at
/// the next tick.
#[test]
fn store_an_occurrence_queued_while_the_release_waits_runs_right_after_it() {
    let pg = PgServer::start();
    let s = migrated(&pg, |s| {
        format!(
            "[jobs.q]\nevery = \"1s\"\noverlap = \"queue\"\nrun = \"echo $BATON_OCCURRENCE >> \
             {f}; touch {started}; while [ ! -e {go} ]; do sleep 0.05; done\"\n",
            f = s.env.path("ran").display(),
            started = s.env.path("q.started").display(),
            go = s.env.path("q.go").display(),
        )
    });
    // The job is seen, then its next occurrence runs and waits.
    let o = run(&s, &["tick"]);
    assert!(code(&o) <= 1, "{}", both(&o));
    baton_testkit::pause(1100);
    let holder = spawned_until(&s, &["tick"], &s.env.path("q.started"));
    // Hold the lock's row, so that the holder's release waits for it.
    let mut row = pg.session();
    row.send("BEGIN; SELECT 1 FROM baton.leases WHERE name = 'q' FOR UPDATE;");
    baton_testkit::eventually("the row to be held", || {
        pg.sql("SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.locktype = 'transactionid' AND a.state = 'idle in transaction'") != "0"
    });
    std::fs::write(s.env.path("q.go"), "").unwrap();
    baton_testkit::eventually("the release to wait for the row", || {
        pg.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' \
             AND query LIKE '%SET state = ''free''%'",
        ) != "0"
    });
    // A later occurrence (the next second's): refused by the live holder,
    // queued behind it. The release waits meanwhile, well within its
    // statement's timeout.
    baton_testkit::pause(1100);
    let o = run(&s, &["tick"]);
    assert!(code(&o) <= 1, "{}", both(&o));
    let queued =
        pg.sql("SELECT count(*) FROM baton.occurrences WHERE job = 'q' AND decision = 'queued'");
    assert_eq!(
        queued,
        "1",
        "exit {}: {}\n{}",
        code(&o),
        both(&o),
        pg.sql("SELECT job, occurrence, decision, reason, detail FROM baton.occurrences")
    );
    drop(row);
    let mut holder = holder;
    let status = baton_testkit::wait_for_exit(&mut holder, "the holder to end");
    let out = holder.wait_with_output().unwrap();
    // 1 when its tick found two occurrences due and missed the older as
    // superseded (a loaded machine's second).
    assert!(
        status.code().is_some_and(|c| c <= 1),
        "{status:?}: {}",
        both(&out)
    );
    let ran = std::fs::read_to_string(s.env.path("ran")).unwrap();
    let ran: Vec<&str> = ran.lines().collect();
    assert_eq!(
        ran.len(),
        2,
        "the queued occurrence ran after the first: {ran:?}"
    );
    assert!(ran[0] < ran[1], "{ran:?}");
    let left =
        pg.sql("SELECT count(*) FROM baton.occurrences WHERE job = 'q' AND decision = 'queued'");
    assert_eq!(left, "0");
}

/// `baton run j` of `job` (a `[jobs.j]` table's keys, `MARK` standing for
/// a file its first step touches) on a fresh PostgreSQL store, with another
/// writer holding the ledger's write lock for 5 s from the moment `MARK`
/// appears; the store (kept alive), the scheduler and the run's output.
fn run_while_the_ledger_is_locked(job: &str, dir: &Path) -> (PgServer, Sched, Output) {
    let pg = PgServer::start();
    let mark = dir.join("mark");
    let s = Sched::new(&format!(
        "[store]\nurl = {:?}\n[jobs.j]\nevery = \"1h\"\n{}",
        pg.url(),
        job.replace("MARK", &mark.display().to_string())
    ));
    let o = run(&s, &["store", "migrate"]);
    assert_eq!(code(&o), 0, "{}", both(&o));
    let running = cmd(&s, &["run", "j"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::support::eventually("the first step", || mark.exists());
    let mut writer = pg.session();
    writer.send(
        "BEGIN; SELECT pg_advisory_xact_lock(7089075310396533863); SELECT pg_sleep(5); COMMIT;",
    );
    let o = running.wait_with_output().unwrap();
    drop(writer);
    (pg, s, o)
}

#[test]
fn store_a_ledger_write_kept_waiting_past_the_ttl_never_costs_a_live_run_its_lease() {
    // A 3 s TTL, and another writer holding the ledger's write lock for 5 s
    // just as the first step's attempt is written. The supervisor renews
    // its lease only between ledger calls: a call that waited for the
    // store's own deadline (6 s) cost the run its lease with nothing wrong
    // but a slow ledger. Bounded by the lease's renewal wait, the call gives
    // up, the run renews and goes on, and its records land once the writer
    // is done.
    let dir = tempfile::tempdir().unwrap();
    let second = dir.path().join("second");
    let (_pg, s, o) = run_while_the_ledger_is_locked(
        &format!(
            "ttl = \"3s\"\n\
             [[jobs.j.steps]]\nname = \"first\"\nrun = \"touch MARK; sleep 1\"\n\
             [[jobs.j.steps]]\nname = \"second\"\nrun = \"sleep 5; touch {}\"\n",
            second.display()
        ),
        dir.path(),
    );
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(second.exists(), "the second step never ran: {}", both(&o));
    let runs = s.json(&["history", "j", "--json"]);
    assert_eq!(runs[0]["verdict"], "ok", "{runs}");
    // Both steps' attempts, each once.
    assert_eq!(runs[0]["attempts"].as_array().unwrap().len(), 2, "{runs}");
}

#[test]
fn store_a_run_whose_end_the_ledger_keeps_waiting_holds_its_lease_and_records_its_true_end() {
    // A 2 s TTL, and another writer holding the ledger's write lock for
    // 5 s as the job ends. A holder that let go after a TTL of trying kept
    // its end in a slot only its own host reads, and the next run under the
    // lock on another host recorded the run `abandoned` (exit 125) although
    // it ended 0. It now keeps renewing its lease and trying, and records
    // its true end once the writer is done.
    let dir = tempfile::tempdir().unwrap();
    let (_pg, s, o) =
        run_while_the_ledger_is_locked("ttl = \"2s\"\nrun = \"touch MARK; sleep 1\"\n", dir.path());
    assert_eq!(code(&o), 0, "{}", both(&o));
    assert!(!both(&o).contains("end slot"), "{}", both(&o));
    let runs = s.json(&["history", "j", "--json"]);
    assert_eq!(runs[0]["verdict"], "ok", "{runs}");
    assert_eq!(runs[0]["exit_code"], 0, "{runs}");
    assert_eq!(runs[0]["attempts"].as_array().unwrap().len(), 1, "{runs}");
}

/// A lowered `max_concurrent` on the shared store: the run left in slot 2
/// still counts, and no run starts beside it past the new limit
/// (`slots::lowered_max_concurrent`).
#[test]
fn store_a_lowered_max_concurrent_counts_the_runs_left_above_it() {
    let pg = PgServer::start();
    let s = migrated(&pg, |_| String::new());
    crate::slots::lowered_max_concurrent(&s, &format!("[store]\nurl = {:?}\n", pg.url()));
}
