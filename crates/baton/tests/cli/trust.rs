//! The state directory attacked from the inside: symbolic links, named
//! pipes and loose permissions planted where baton writes (its logs, its
//! ledger), the way another local user or a careless tool would leave them.
//! baton never writes through them, never blocks on them, and never holds a
//! lease while it waits for one; what it cannot trust it refuses, naming the
//! file and what to do.

use std::io::Read;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use baton_lease::Clock;

use crate::daemon::Daemon;
use crate::sched::{Sched, before_new_year, known_since, lines};
use crate::support::{code, drop_acl, grant_through_acl, mkfifo, root, stderr, stdout, verdict};

/// Runs `cmd` to its end, in a process group of its own, within the test
/// kit's patience: a command that hangs (and whatever it forked) is killed
/// and the test fails, naming it.
fn bounded(mut cmd: Command, what: &str) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let readers = (
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
            v
        }),
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = err.read_to_end(&mut v);
            v
        }),
    );
    let pgid = rustix::process::Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    let status = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        baton_testkit::wait_for_exit(&mut child, what)
    })) {
        Ok(s) => s,
        Err(p) => {
            // What it forked (a tick's workers) may hold a lease: gone too.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            std::panic::resume_unwind(p);
        }
    };
    Output {
        status,
        stdout: readers.0.join().unwrap(),
        stderr: readers.1.join().unwrap(),
    }
}

/// `baton ARGS` on the scheduler's configuration, bounded.
fn sched(s: &Sched, args: &[&str]) -> Output {
    bounded(s.cmd(args), &format!("baton {}", args.join(" ")))
}

/// A job due now that appends a line to `counter` (one occurrence a year,
/// caught up for 400 days, so it stays due through a test, to a ledger that
/// knows the job since before it).
fn counting(s: &Sched) -> PathBuf {
    let counter = s.env.path("counter");
    s.write(&format!(
        "[jobs.count]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo ran >> {}\"\n",
        counter.display()
    ));
    known_since(s, &["count"], before_new_year());
    counter
}

/// A scheduler whose job `count` ran once by hand: its logs, its lock file
/// and its ledger exist.
fn after_one_run() -> (Sched, PathBuf) {
    let s = Sched::new("");
    let counter = counting(&s);
    assert_eq!(code(&sched(&s, &["run", "count"])), 0);
    (s, counter)
}

fn logs(s: &Sched) -> PathBuf {
    s.env.state().join("logs")
}

/// The dated log `PREFIX_YYYY_MM_DD.log` of today and of tomorrow (UTC, the
/// scheduler's zone in these tests): a test that crosses midnight still
/// finds its planted file where baton looks.
fn dated(s: &Sched, prefix: &str) -> [PathBuf; 2] {
    let now = baton_lease::SystemClock.wall();
    let day = |t: jiff::Timestamp| {
        format!(
            "{prefix}_{}.log",
            t.to_zoned_datetime(jiff::tz::TimeZone::UTC)
                .strftime("%Y_%m_%d")
        )
    };
    [
        logs(s).join(day(now)),
        logs(s).join(day(now + jiff::SignedDuration::from_hours(24))),
    ]
}

/// A file of root's (or of the user running the tests), mode 0600, outside
/// the state directory: what a planted link points at.
fn victim(s: &Sched) -> PathBuf {
    let v = s.env.path("victim");
    std::fs::write(&v, "secret\n").unwrap();
    std::fs::set_permissions(&v, std::fs::Permissions::from_mode(0o600)).unwrap();
    v
}

fn chown_nobody(p: &Path) {
    let nobody = rustix::process::Uid::from_raw(65534);
    rustix::fs::chown(p, Some(nobody), None).unwrap();
}

/// A tick and a run of `count` both refuse, promptly, naming `what`; the job
/// did not run, and its lock is not held.
fn refused(s: &Sched, counter: &Path, what: &str) {
    let before = lines(counter);
    for args in [&["tick"][..], &["run", "count"]] {
        let o = sched(s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(what), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("hung"), "{args:?}: {}", stderr(&o));
        assert_eq!(
            lines(counter),
            before,
            "{args:?} ran the job: {}",
            stderr(&o)
        );
        assert_ne!(verdict(&s.env, "count"), "live", "{args:?}");
    }
}

/// Once the planted file is gone, the occurrence that was refused runs: a
/// refusal skipped it, it did not lose it.
fn recovers(s: &Sched, counter: &Path) {
    let before = lines(counter);
    let o = sched(s, &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("hung"), "{}", stderr(&o));
    assert_eq!(lines(counter), before + 1, "{}", stderr(&o));
}

#[test]
fn a_symlink_planted_at_the_prune_marker_never_overwrites_its_target() {
    let (s, counter) = after_one_run();
    let v = victim(&s);
    let marker = logs(&s).join(".pruned");
    let _ = std::fs::remove_file(&marker);
    std::os::unix::fs::symlink(&v, &marker).unwrap();
    let o = sched(&s, &["tick"]);
    // Pruning is housekeeping: the run goes on, the marker is refused.
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&counter), 2);
    assert!(stderr(&o).contains(".pruned"), "{}", stderr(&o));
    assert!(stderr(&o).contains("symbolic link"), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&v).unwrap(), "secret\n");
    assert!(std::fs::symlink_metadata(&marker).unwrap().is_symlink());
}

#[test]
fn a_named_pipe_at_the_prune_marker_never_blocks_a_tick() {
    let (s, counter) = after_one_run();
    mkfifo(&logs(&s).join(".pruned"));
    let o = sched(&s, &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&counter), 2);
    assert!(stderr(&o).contains("named pipe"), "{}", stderr(&o));
}

#[test]
fn a_logs_directory_others_can_write_or_own_is_refused() {
    let (s, counter) = after_one_run();
    std::fs::set_permissions(logs(&s), std::fs::Permissions::from_mode(0o777)).unwrap();
    refused(&s, &counter, "writable by its group or by others");
    refused(&s, &counter, logs(&s).to_str().unwrap());
    // The sticky bit does not make it baton's own.
    std::fs::set_permissions(logs(&s), std::fs::Permissions::from_mode(0o1777)).unwrap();
    refused(&s, &counter, "writable by its group or by others");
    std::fs::set_permissions(logs(&s), std::fs::Permissions::from_mode(0o700)).unwrap();
    recovers(&s, &counter);
    if root() {
        chown_nobody(&logs(&s));
        refused(&s, &counter, "owned by uid 65534, not by root:");
    }
}

#[test]
fn a_logs_directory_that_is_a_link_to_a_shared_one_is_refused() {
    let (s, counter) = after_one_run();
    let shared = s.env.path("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::remove_dir_all(logs(&s)).unwrap();
    std::os::unix::fs::symlink(&shared, logs(&s)).unwrap();
    refused(&s, &counter, "writable by its group or by others");
    assert_eq!(std::fs::read_dir(&shared).unwrap().count(), 0);
}

/// After a run found a named pipe at one of `planted`: the pipe was moved
/// aside unopened, to `NAME.set-aside.1` beside it, the log is a regular file
/// again, and a `log-set-aside` alert names both, on stderr and in
/// `alerts.log`.
fn set_aside(s: &Sched, planted: &[PathBuf], o: &Output) {
    use std::os::unix::fs::FileTypeExt;
    let aside = |p: &Path| {
        p.with_file_name(format!(
            "{}.set-aside.1",
            p.file_name().unwrap().to_str().unwrap()
        ))
    };
    let Some(p) = planted.iter().find(|p| aside(p).exists()) else {
        panic!("nothing was set aside: {}", stderr(o));
    };
    let kind = std::fs::symlink_metadata(aside(p)).unwrap().file_type();
    assert!(kind.is_fifo(), "{}", aside(p).display());
    assert!(
        std::fs::symlink_metadata(p).unwrap().is_file(),
        "{}",
        p.display()
    );
    assert!(
        stderr(o).contains(&format!("{} was a named pipe", p.display())),
        "{}",
        stderr(o)
    );
    assert!(
        stderr(o).contains(aside(p).to_str().unwrap()),
        "{}",
        stderr(o)
    );
    let alerts = std::fs::read_to_string(logs(s).join("alerts.log")).unwrap();
    assert_eq!(alerts.matches("\"log-set-aside\"").count(), 1, "{alerts}");
    assert!(alerts.contains(aside(p).to_str().unwrap()), "{alerts}");
}

#[test]
fn a_named_pipe_at_a_jobs_log_is_set_aside_unopened_and_the_run_goes_on() {
    let s = Sched::new("");
    let counter = counting(&s);
    std::fs::create_dir_all(logs(&s)).unwrap();
    let planted = dated(&s, "count");
    for f in &planted {
        mkfifo(f);
    }
    // With a reader on the pipe, an open for writing would succeed and
    // block nothing: it is still no log, and nothing is written to it.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(&planted[0])
        .unwrap();
    let o = sched(&s, &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&counter), 1, "{}", stderr(&o));
    set_aside(&s, &planted, &o);
    let alerts = std::fs::read_to_string(logs(&s).join("alerts.log")).unwrap();
    assert!(
        alerts
            .lines()
            .any(|l| l.contains("\"log-set-aside\"") && l.contains("\"job\":\"count\"")),
        "the alert names the job whose log it was: {alerts}"
    );
    let mut read = Vec::new();
    let _ = (&reader).read_to_end(&mut read);
    assert!(read.is_empty(), "{}", String::from_utf8_lossy(&read));
    // Tomorrow's pipe stays a pipe: only a regular file is read here.
    let log: String = planted
        .iter()
        .filter(|p| p.is_file())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(!log.is_empty(), "the run's log is written afresh");
    // The next run writes the fresh log, and alerts nothing more.
    let o = sched(&s, &["run", "count"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&counter), 2, "{}", stderr(&o));
    assert!(!stderr(&o).contains("named pipe"), "{}", stderr(&o));
}

#[test]
fn a_symlink_at_a_jobs_log_is_refused_and_never_followed() {
    let s = Sched::new("");
    let counter = counting(&s);
    let v = victim(&s);
    std::fs::create_dir_all(logs(&s)).unwrap();
    for f in dated(&s, "count") {
        std::os::unix::fs::symlink(&v, f).unwrap();
    }
    refused(&s, &counter, "symbolic link");
    assert_eq!(std::fs::read_to_string(&v).unwrap(), "secret\n");
}

#[test]
fn a_named_pipe_at_the_envelope_or_alerts_log_is_set_aside_and_the_tick_runs() {
    for planted in ["envelope", "alerts"] {
        let s = Sched::new("");
        let counter = counting(&s);
        std::fs::create_dir_all(logs(&s)).unwrap();
        let files: Vec<PathBuf> = match planted {
            "envelope" => dated(&s, "baton").into(),
            _ => vec![logs(&s).join("alerts.log")],
        };
        for f in &files {
            mkfifo(f);
        }
        let o = sched(&s, &["tick"]);
        assert_eq!(code(&o), 0, "{planted}: {}", stderr(&o));
        assert_eq!(lines(&counter), 1, "{planted}: {}", stderr(&o));
        set_aside(&s, &files, &o);
        let o = sched(&s, &["run", "count"]);
        assert_eq!(code(&o), 0, "{planted}: {}", stderr(&o));
        assert_eq!(lines(&counter), 2, "{planted}: {}", stderr(&o));
    }
}

#[test]
fn a_log_file_others_can_write_or_own_is_refused() {
    let (s, counter) = after_one_run();
    let alerts = logs(&s).join("alerts.log");
    std::fs::write(&alerts, "").unwrap();
    std::fs::set_permissions(&alerts, std::fs::Permissions::from_mode(0o666)).unwrap();
    refused(&s, &counter, "mode 0666");
    std::fs::set_permissions(&alerts, std::fs::Permissions::from_mode(0o600)).unwrap();
    recovers(&s, &counter);
    if root() {
        chown_nobody(&alerts);
        refused(&s, &counter, "owned by uid 65534");
    }
}

#[test]
fn an_untrusted_ledger_is_refused_and_nothing_runs_until_it_is_fixed() {
    let (s, counter) = after_one_run();
    let db = s.env.state().join("baton.db");
    let wal = s.env.state().join("baton.db-wal");
    assert!(wal.exists(), "a run leaves its write-ahead log");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
    refused(&s, &counter, db.to_str().unwrap());
    refused(&s, &counter, "mode 0666");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o646)).unwrap();
    refused(&s, &counter, wal.to_str().unwrap());
    std::fs::set_permissions(&wal, std::fs::Permissions::from_mode(0o600)).unwrap();
    recovers(&s, &counter);
    if root() {
        chown_nobody(&db);
        refused(&s, &counter, "owned by uid 65534");
        // What reads the ledger says why it cannot.
        let o = sched(&s, &["history", "count"]);
        assert!(stderr(&o).contains("owned by uid 65534"), "{}", stderr(&o));
    }
}

/// A ledger `status` cannot read says nothing of what it keeps: each job
/// is `unknown` (not `new`, "never run"), and `status` exits 1; once it
/// can be read again the job's state is back.
#[test]
fn a_ledger_status_cannot_read_shows_every_job_unknown() {
    let (s, _counter) = after_one_run();
    let db = s.env.state().join("baton.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = sched(&s, &["status", "--json"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["healthy"], false, "{v}");
    assert!(v["error"].is_string(), "{v}");
    let job = &v["jobs"][0];
    assert_eq!(job["state"], "unknown", "{job}");
    // Whether it ever ran is not known: null, never a default.
    assert!(job["never_run"].is_null(), "{job}");
    assert!(job["failing"].is_null(), "{job}");
    let o = sched(&s, &["status"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("count  UNKNOWN"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("never run"), "{}", stdout(&o));
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let v = s.json(&["status", "--json"]);
    // Its records are read again (its yearly occurrence is due: overdue).
    assert_eq!(v["jobs"][0]["state"], "overdue", "{v}");
    assert_eq!(v["jobs"][0]["last_run"]["verdict"], "ok", "{v}");
}

/// A ledger that cannot be opened (here its repair mutex is a link to
/// another file) refuses the tick as it refuses a run: exit 2, not the 0
/// of "nothing was due".
#[test]
fn a_tick_whose_ledger_cannot_be_opened_exits_2() {
    let (s, counter) = after_one_run();
    let mutex = s.env.state().join(".baton.db.repair");
    let _ = std::fs::remove_file(&mutex);
    std::os::unix::fs::symlink(victim(&s), &mutex).unwrap();
    refused(&s, &counter, ".baton.db.repair");
    std::fs::remove_file(&mutex).unwrap();
    recovers(&s, &counter);
}

#[test]
fn a_tick_whose_ledger_rows_cannot_be_read_exits_2() {
    // A ledger that opens but whose jobs' rows cannot be read (a value no
    // timestamp holds): every job would look new and nothing would ever be
    // due. The tick used to exit 0 so, every time; it says it could not
    // decide.
    let (s, counter) = after_one_run();
    let c = rusqlite::Connection::open(s.env.state().join("baton.db")).unwrap();
    c.execute("UPDATE jobs SET last_success = 253402207200000001", [])
        .unwrap();
    drop(c);
    let before = lines(&counter);
    let o = sched(&s, &["tick"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("failed to read the jobs"),
        "{}",
        stderr(&o)
    );
    assert_eq!(lines(&counter), before, "{}", stderr(&o));
}

#[test]
fn a_named_pipe_at_the_ledger_is_refused_without_blocking() {
    let (s, counter) = after_one_run();
    let shm = s.env.state().join("baton.db-shm");
    mkfifo(&shm);
    refused(&s, &counter, "named pipe");
    std::fs::remove_file(&shm).unwrap();
    recovers(&s, &counter);
}

/// A named pipe planted where the runs' end slots go (`state/ends`) is
/// refused as one at `logs/` is: a tick and a run by hand exit 2 naming it,
/// promptly, and nothing runs. Before, the tick's run found it only once it
/// held its lease, and recorded the occurrence missed `ledger-unavailable`
/// (the ledger was fine), so it was lost; now nothing is recorded, and the
/// occurrence runs once the pipe is gone.
#[test]
fn a_named_pipe_at_the_ends_directory_is_refused_and_its_occurrence_kept() {
    let (s, counter) = after_one_run();
    let ends = s.env.state().join("ends");
    let _ = std::fs::remove_dir_all(&ends);
    mkfifo(&ends);
    refused(&s, &counter, "a named pipe is there");
    let o = sched(&s, &["status", "count", "--json"]);
    assert!(!stdout(&o).contains("ledger-unavailable"), "{}", stdout(&o));
    let o = sched(&s, &["history", "count", "--json"]);
    assert!(!stdout(&o).contains("ledger-unavailable"), "{}", stdout(&o));
    std::fs::remove_file(&ends).unwrap();
    recovers(&s, &counter);
}

#[test]
fn a_lock_file_of_another_user_is_named_without_repeating_root() {
    if !root() {
        return;
    }
    let (s, counter) = after_one_run();
    chown_nobody(&s.env.state().join("locks/count.lock"));
    let o = sched(&s, &["run", "count"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("owned by uid 65534, not by root:"),
        "{}",
        stderr(&o)
    );
    assert!(!stderr(&o).contains("root or root"), "{}", stderr(&o));
    assert_eq!(lines(&counter), 1);
}

/// A daemon on loopback with a token (its write endpoints need one, or will).
fn daemon(s: &Sched, jobs: &str) -> (Daemon, String) {
    let token = s.env.path("token");
    std::fs::write(&token, "a-token-long-enough-to-pass\n").unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n[daemon]\ntoken_file = {:?}\n{jobs}",
        s.env.state().to_str().unwrap(),
        token.to_str().unwrap()
    ));
    let d = Daemon::start(s, &[]);
    (d, "Bearer a-token-long-enough-to-pass".into())
}

#[test]
fn daemon_a_named_pipe_in_logs_is_set_aside_and_never_blocks_a_tick_or_a_run() {
    let s = Sched::new("");
    let counter = s.env.path("counter");
    // Not due: the daemon's own first tick runs nothing.
    let (d, auth) = daemon(
        &s,
        &format!(
            "[jobs.count]\nschedule = \"0 0 1 1 *\"\nrun = \"echo ran >> {}\"\n",
            counter.display()
        ),
    );
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let ok = d.request("POST", "/v1/tick", &headers, "");
    assert_eq!(ok.status, 200, "{}", ok.body);
    std::fs::create_dir_all(logs(&s)).unwrap();
    let alerts = logs(&s).join("alerts.log");
    mkfifo(&alerts);
    let a = d.request("POST", "/v1/tick", &headers, "");
    assert_eq!(a.status, 200, "{}", a.body);
    // A job's own log: the pipe is set aside before the lease is taken, and
    // the run goes on.
    for f in dated(&s, "count") {
        mkfifo(&f);
    }
    let r = d.request("POST", "/v1/jobs/count/run", &headers, "");
    assert_eq!(r.status, 202, "{}", r.body);
    crate::support::eventually("the run to append its line", || lines(&counter) == 1);
    crate::support::eventually("the run to end", || verdict(&s.env, "count") != "live");
    let aside = |p: &Path| {
        p.with_file_name(format!(
            "{}.set-aside.1",
            p.file_name().unwrap().to_str().unwrap()
        ))
    };
    assert!(aside(&alerts).exists(), "{}", d.log());
    assert!(
        dated(&s, "count").iter().any(|p| aside(p).exists()),
        "{}",
        d.log()
    );
    let text = std::fs::read_to_string(&alerts).unwrap();
    assert!(text.contains("\"log-set-aside\""), "{text}");
    assert!(!d.log().contains("hung"), "{}", d.log());
}

/// A drop-in of `job` that appends to `counter`, in `jobs.d/`, known to the
/// ledger since before its occurrence.
fn dropin(s: &Sched, counter: &Path) -> PathBuf {
    known_since(s, &["planted"], before_new_year());
    let dir = s.env.path("jobs.d");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("planted.toml");
    std::fs::write(
        &p,
        format!(
            "[jobs.planted]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
             run = \"echo planted >> {}\"\n",
            counter.display()
        ),
    )
    .unwrap();
    p
}

#[test]
fn a_configuration_another_user_could_write_runs_nothing() {
    let (s, counter) = after_one_run();
    let planted = s.env.path("planted");
    let file = dropin(&s, &planted);
    let dir = s.env.path("jobs.d");
    let config = s.config();
    // Each of these lets another user name the commands baton runs, as
    // root here: refused with exit 2, naming the file, and nothing runs.
    type Change<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Change<'_>, Change<'_>)> = vec![
        (
            "writable by its group or by others",
            Box::new(|| {
                std::fs::set_permissions(&config, PermissionsExt::from_mode(0o666)).unwrap()
            }),
            Box::new(|| {
                std::fs::set_permissions(&config, PermissionsExt::from_mode(0o644)).unwrap()
            }),
        ),
        (
            "owned by uid 65534",
            Box::new(|| chown_nobody(&config)),
            Box::new(|| {
                rustix::fs::chown(&config, Some(rustix::process::Uid::ROOT), None).unwrap()
            }),
        ),
        (
            "writable by its group or by others",
            Box::new(|| std::fs::set_permissions(&file, PermissionsExt::from_mode(0o646)).unwrap()),
            Box::new(|| std::fs::set_permissions(&file, PermissionsExt::from_mode(0o600)).unwrap()),
        ),
        (
            "owned by uid 65534",
            Box::new(|| chown_nobody(&file)),
            Box::new(|| rustix::fs::chown(&file, Some(rustix::process::Uid::ROOT), None).unwrap()),
        ),
        (
            "a directory writable by its group or by others",
            Box::new(|| std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o777)).unwrap()),
            Box::new(|| std::fs::set_permissions(&dir, PermissionsExt::from_mode(0o755)).unwrap()),
        ),
        // An ACL entry for another user: the mode shows only the group
        // (`root`, root's own) as writing.
        (
            "writable by uid 4242 through its ACL",
            Box::new(|| grant_through_acl(&config)),
            Box::new(|| drop_acl(&config, 0o644)),
        ),
        (
            "writable by uid 4242 through its ACL",
            Box::new(|| grant_through_acl(&file)),
            Box::new(|| drop_acl(&file, 0o600)),
        ),
        (
            "writable by uid 4242 through its ACL",
            Box::new(|| grant_through_acl(&dir)),
            Box::new(|| drop_acl(&dir, 0o755)),
        ),
    ];
    assert!(root(), "these cases need root (chown)");
    for (what, plant, undo) in &cases {
        plant();
        for args in [&["tick"][..], &["run", "planted"], &["config"], &["status"]] {
            let o = sched(&s, args);
            assert_eq!(code(&o), 2, "{what}: {args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains(what),
                "{what}: {args:?}: {}",
                stderr(&o)
            );
        }
        assert_eq!(lines(&planted), 0, "{what}: the planted job ran");
        undo();
    }
    // Trusted again: the planted job (now the operator's) and count run.
    let o = sched(&s, &["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&planted), 1);
    let _ = counter;
}

#[test]
fn a_named_pipe_at_the_configuration_never_hangs_a_command() {
    let s = Sched::new("");
    let config = s.config();
    mkfifo(&config);
    for args in [&["tick"][..], &["status"], &["config"]] {
        let o = sched(&s, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("named pipe"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
}

/// A daemon whose ledger cannot be opened answers a tick asked for over the
/// API with `500 unusable_state` (nothing was decided), not with the `200`
/// of a tick that found nothing due.
#[test]
fn daemon_a_tick_whose_ledger_cannot_be_opened_is_unusable_state() {
    let (s, _counter) = after_one_run();
    let mutex = s.env.state().join(".baton.db.repair");
    let _ = std::fs::remove_file(&mutex);
    std::os::unix::fs::symlink(victim(&s), &mutex).unwrap();
    let (d, auth) = daemon(
        &s,
        "[jobs.count]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
    );
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let r = d.request("POST", "/v1/tick", &headers, "");
    assert_eq!(r.status, 500, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "unusable_state", "{}", r.body);
    assert!(r.body.contains("ledger"), "{}", r.body);
}

/// A state directory every run refuses (inside a directory another user
/// owns) is said by `status` too: every job `unknown`, unhealthy, the
/// refusal named, never `new` with a next run as if one could start; the
/// tick that refuses it makes nothing in that directory.
#[test]
fn a_state_directory_a_tick_refuses_shows_every_job_unknown() {
    assert!(root(), "this test hands a directory to another user");
    let s = Sched::new("");
    let theirs = s.env.path("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o755)).unwrap();
    chown_nobody(&theirs);
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\n[jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"true\"\n",
        theirs.join("st").display().to_string()
    ));
    let tick = sched(&s, &["tick"]);
    assert_eq!(code(&tick), 2, "{}", stderr(&tick));
    // Refused before anything is made in the other user's directory.
    assert!(!theirs.join("st").exists(), "made in theirs");
    let o = sched(&s, &["status"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("UNKNOWN"), "{}", stdout(&o));
    assert!(
        !s.env.without_dir(&stdout(&o)).contains("NEW"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("refusing the state directory"),
        "{}",
        stderr(&o)
    );
}
