//! A run's own records when the embedded store's ledger (SQLite) fails:
//! another process holding the database's write lock, a full disk. No run
//! starts before its start is recorded (an occurrence whose start the
//! ledger would not take is left to a later tick); a run that started is
//! recorded with the verdict it earned, from its end slot when the ledger
//! would not take its end; no occurrence that ran is called missed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;

use crate::sched::Sched;
use crate::support::{code, eventually, stderr, stdout};

/// Another process's transaction holding SQLite's write lock on `db`
/// (`BEGIN IMMEDIATE`) until it is dropped.
struct WriteLock {
    release: Option<mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WriteLock {
    fn hold(db: &Path) -> WriteLock {
        let db = db.to_owned();
        let (held, taken) = mpsc::channel();
        let (release, wait) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            held.send(()).unwrap();
            let _ = wait.recv();
            conn.execute_batch("ROLLBACK").unwrap();
        });
        taken.recv().unwrap();
        WriteLock {
            release: Some(release),
            thread: Some(thread),
        }
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        drop(self.release.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A ledger locked by another process for longer than the TTL while a
/// run goes on: the supervisor's calls wait for it only as long as its
/// renewals can, so the lease is renewed, the run is never stopped as
/// `lease-lost`, its later step runs, and it is recorded `ok` once the
/// ledger is free.
#[test]
fn a_ledger_locked_longer_than_the_ttl_stops_no_healthy_run() {
    let s = Sched::new("");
    let (started, second) = (s.env.path("started"), s.env.path("second"));
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nttl = \"6s\"\nkill_grace = \"1s\"\ntakeover_grace = \"5s\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\n\
         [[jobs.j.steps]]\nname = \"one\"\nrun = \"touch {}; sleep 1\"\n\
         [[jobs.j.steps]]\nname = \"two\"\nrun = \"sleep 8; touch {}\"\n",
        started.display(),
        second.display()
    ));
    // The ledger exists before the lock is taken on it.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(db(&s).exists());
    let run = s
        .cmd(&["run", "j"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the first step to start", || started.exists());
    let lock = WriteLock::hold(&db(&s));
    // Longer than the TTL (6 s); the second step ends after it.
    crate::support::pause(9000);
    drop(lock);
    let o = run.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(second.exists(), "the second step never ran: {}", stderr(&o));
    assert!(!stderr(&o).contains("lease"), "{}", stderr(&o));
    let runs = s.json(&["history", "j", "--json"]);
    assert_eq!(runs[0]["verdict"], "ok", "{runs}");
}

/// A job due now whatever the minute (one occurrence a year, caught up
/// for 400 days) that appends its occurrence to `ran`.
fn yearly(ran: &Path) -> String {
    format!(
        "[jobs.j]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo $BATON_OCCURRENCE >> {}\"\n",
        ran.display()
    )
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// One value from the ledger, read directly.
fn ledger_value(db: &Path, sql: &str) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0))
        .map(|v| match v {
            rusqlite::types::Value::Integer(i) => i.to_string(),
            rusqlite::types::Value::Text(t) => t,
            rusqlite::types::Value::Null => "NULL".into(),
            other => format!("{other:?}"),
        })
        .unwrap()
}

/// Whether an envelope log of `s` has a line containing `what`.
fn envelope_says(s: &Sched, what: &str) -> bool {
    std::fs::read_dir(s.env.state().join("logs"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("baton_"))
        .any(|e| std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains(what)))
}

fn db(s: &Sched) -> PathBuf {
    s.env.state().join("baton.db")
}

#[test]
fn store_files_a_run_the_write_locked_ledger_could_not_record_at_first_is_in_history() {
    let s = Sched::new("");
    // A tick without jobs creates the ledger.
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let ran = s.env.path("ran");
    s.write(&yearly(&ran));
    crate::sched::known_since(&s, &["j"], crate::sched::before_new_year());
    let lock = WriteLock::hold(&db(&s));
    let mut tick = s
        .cmd(&["tick"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // No run starts before its start is recorded: the tick tries again,
    // within the TTL, while the job waits.
    eventually("the tick to try its start again", || {
        envelope_says(&s, "did not record its start")
    });
    assert!(
        lines(&ran).is_empty(),
        "the job ran with its start unrecorded"
    );
    drop(lock);
    eventually("the job to run", || lines(&ran).len() == 1);
    let status = baton_testkit::wait_for_exit(&mut tick, "the tick to end");
    let o = tick.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(0), "{}", stderr(&o));
    let runs = s.json(&["history", "j", "--json"]);
    assert_eq!(
        runs.as_array().map(Vec::len),
        Some(1),
        "{runs}\n{}",
        stderr(&o)
    );
    assert_eq!(runs[0]["verdict"], "ok", "{runs}");
    assert_eq!(runs[0]["occurrence"], lines(&ran)[0].as_str(), "{runs}");
    assert_eq!(
        runs[0]["attempts"].as_array().map(Vec::len),
        Some(1),
        "{runs}"
    );
    assert_eq!(
        ledger_value(&db(&s), "SELECT decision FROM occurrences WHERE job = 'j'"),
        "started"
    );
    assert_eq!(
        ledger_value(&db(&s), "SELECT count(*) FROM missed WHERE job = 'j'"),
        "0"
    );
    let again = s.run(&["tick"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(lines(&ran).len(), 1);
}

/// A small tmpfs mounted on a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let o = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "mount: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        Tmpfs(dir.to_owned())
    }

    /// Writes a file until the filesystem is full.
    fn fill(&self) -> PathBuf {
        use std::io::Write;
        let filler = self.0.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        filler
    }
}

/// A scheduler whose state directory is a 4 MiB tmpfs; `None` without
/// root (mounting one needs it).
fn on_a_small_disk() -> Option<(Sched, Tmpfs)> {
    if !crate::support::root() {
        eprintln!("skipped: mounting a tmpfs needs root");
        return None;
    }
    let s = Sched::new("");
    let disk = Tmpfs::mount(&s.env.state(), "4m");
    Some((s, disk))
}

/// Empties the ledger's write-ahead log, so that a full disk refuses its
/// next write.
fn checkpoint(s: &Sched) {
    rusqlite::Connection::open(db(s))
        .unwrap()
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .output();
    }
}

#[test]
fn store_files_an_occurrence_whose_start_a_full_disk_refused_is_left_to_a_later_tick() {
    let Some((s, disk)) = on_a_small_disk() else {
        return;
    };
    let ran = s.env.path("ran");
    let log = s.env.path("manual");
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\nttl = \"4s\"\nkill_grace = \"1s\"\n\
         takeover_grace = \"4s\"\n\
         [jobs.j]\nschedule = \"* * * * *\"\n\
         run = \"if [ $BATON_OCCURRENCE = manual ]; then echo x >> {}; else echo $BATON_OCCURRENCE >> {}; fi\"\n",
        s.env.state().display(),
        log.display(),
        ran.display()
    ));
    // Five minutes ago, a run by hand: the ledger has seen the job since.
    let o = crate::states::shifted(&s, "-300s", &["run", "j"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(lines(&log).len(), 1);
    // The write-ahead log emptied, then the disk filled: the ledger cannot
    // take another write, while the lock file is rewritten in place.
    checkpoint(&s);
    let filler = disk.fill();
    let o = s.run(&["tick"]);
    // Its start could not be recorded: it did not run, and nothing of it
    // keeps a later tick from running it.
    assert!(lines(&ran).is_empty(), "{}{}", stdout(&o), stderr(&o));
    std::fs::remove_file(filler).unwrap();
    let o = s.run(&["tick"]);
    assert_eq!(lines(&ran).len(), 1, "{}{}", stdout(&o), stderr(&o));
    let first = lines(&ran)[0].clone();
    // Minutes later: the occurrences since the job was seen are superseded
    // by the newest, which runs; the one that ran is not among them.
    let o = crate::states::shifted(&s, "+200s", &["tick"]);
    assert_eq!(lines(&ran).len(), 2, "{}{}", stdout(&o), stderr(&o));
    let covering = ledger_value(
        &db(&s),
        &format!(
            "SELECT count(*) FROM missed WHERE job = 'j' \
             AND first <= CAST(strftime('%s', '{first}') AS INTEGER) \
             AND last >= CAST(strftime('%s', '{first}') AS INTEGER)"
        ),
    );
    assert_eq!(covering, "0", "{first} was counted missed: {}", stderr(&o));
    let superseded = ledger_value(
        &db(&s),
        "SELECT count(*) FROM missed WHERE job = 'j' AND reason = 'superseded'",
    );
    assert_ne!(superseded, "0", "nothing was superseded: {}", stderr(&o));
}

/// `run --json` whose start a full disk refused (no room for its end): it
/// says the error it is, never a start with a run id no history holds.
#[test]
fn run_json_on_a_full_disk_says_it_did_not_start() {
    let Some((s, disk)) = on_a_small_disk() else {
        return;
    };
    let ran = s.env.path("ran");
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nrun = \"echo x >> {}\"\n",
        s.env.state().display(),
        ran.display()
    ));
    let o = s.run(&["run", "j"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    checkpoint(&s);
    let _filler = disk.fill();
    let o = s.run(&["run", "j", "--json"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(lines(&ran).len(), 1, "it ran: {}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["outcome"], "error", "{doc}");
    assert!(doc.get("run_id").is_none(), "{doc}");
    assert!(doc["run"].is_null(), "{doc}");
}

/// A yearly job `j` whose scheduled run filled the state directory's disk
/// and ended 0, its end kept in its end slot; the disk freed again. None
/// without root (mounting a tmpfs needs it).
fn ended_on_a_full_disk() -> Option<(Sched, Tmpfs)> {
    let (s, disk) = on_a_small_disk()?;
    let filler = s.env.state().join("filler");
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\nttl = \"2s\"\nkill_grace = \"500ms\"\n\
         takeover_grace = \"2500ms\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"if [ $BATON_OCCURRENCE = manual ]; then exit 0; fi; \
         dd if=/dev/zero of={} bs=64k 2>/dev/null; exit 0\"\n",
        s.env.state().display(),
        filler.display()
    ));
    crate::sched::known_since(&s, &["j"], crate::sched::before_new_year());
    // The job fills the disk and ends 0: the ledger takes none of its end.
    let o = s.run(&["tick"]);
    assert!(filler.exists(), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("kept in its end slot"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(&filler).unwrap();
    Some((s, disk))
}

#[test]
fn store_files_a_run_whose_end_a_full_disk_refused_is_recorded_with_its_true_verdict() {
    let Some((s, disk)) = ended_on_a_full_disk() else {
        return;
    };
    // The next run under the lock records it from its end slot: ok, exit 0,
    // not abandoned.
    let o = s.run(&["run", "j"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    recorded_ok_from_its_slot(&s);
    drop(disk);
}

/// No run of the job needs to come: the next tick, with nothing due,
/// records the end its slot kept, and no surface shows the run abandoned
/// or the job crashed meanwhile.
#[test]
fn store_files_a_run_whose_end_a_full_disk_refused_is_recorded_by_the_next_tick() {
    let Some((s, disk)) = ended_on_a_full_disk() else {
        return;
    };
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    recorded_ok_from_its_slot(&s);
    let st = s.json(&["status", "j", "--json"]);
    assert_ne!(st["jobs"][0]["state"], "crashed", "{st}");
    let o = s.run(&["status", "j"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    drop(disk);
}

/// Before any tick records it, every surface shows the run as its kept end
/// says, never `abandoned`, and the job not crashed.
#[test]
fn store_shows_a_run_whose_end_a_full_disk_refused_as_it_ended_before_a_tick() {
    let Some((s, disk)) = ended_on_a_full_disk() else {
        return;
    };
    let runs = s.json(&["history", "j", "--json"]);
    let scheduled = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["occurrence"] != "manual")
        .unwrap_or_else(|| panic!("no scheduled run: {runs}"));
    assert_eq!(scheduled["verdict"], "ok", "{runs}");
    assert_eq!(scheduled["exit_code"], 0, "{runs}");
    let st = s.json(&["status", "j", "--json"]);
    assert_eq!(st["jobs"][0]["state"], "ok", "{st}");
    assert_eq!(st["jobs"][0]["last_run"]["verdict"], "ok", "{st}");
    assert_eq!(st["jobs"][0]["last_run"]["exit_code"], 0, "{st}");
    assert!(st["jobs"][0]["last_run"]["finished"].is_string(), "{st}");
    assert!(st["jobs"][0]["last_success"].is_string(), "{st}");
    let o = s.run(&["status", "j"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let metrics = stdout(&s.run(&["__metrics"]));
    assert!(
        metrics.contains("baton_job_state{baton_job=\"j\",state=\"ok\"} 1"),
        "{metrics}"
    );
    drop(disk);
}

/// A run that failed while another process held the ledger's write lock
/// past its patience kept its end in its slot: before any tick, the job is
/// failing on `status` (exit 1) and in the metrics, as it will be once the
/// end is recorded.
#[test]
fn a_failed_run_whose_end_is_kept_in_its_slot_shows_its_job_failing() {
    let s = Sched::new("");
    let (started, go) = (s.env.path("started"), s.env.path("go"));
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\nttl = \"2s\"\n\
         kill_grace = \"500ms\"\ntakeover_grace = \"2500ms\"\n\
         [jobs.f]\nschedule = \"0 0 1 1 *\"\n\
         run = \"touch {}; while [ ! -e {} ]; do sleep 0.05; done; exit 4\"\n",
        started.display(),
        go.display()
    ));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let run = s
        .cmd(&["run", "f"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The command runs only once its start is recorded; the ledger is
    // locked after that, and the command fails once it is.
    eventually("the job to start", || started.exists());
    let lock = WriteLock::hold(&db(&s));
    std::fs::write(&go, "go\n").unwrap();
    let o = run.wait_with_output().unwrap();
    assert!(
        stderr(&o).contains("its end is kept in its end slot"),
        "{}",
        stderr(&o)
    );
    drop(lock);
    let st = s.json(&["status", "f", "--json"]);
    let j = &st["jobs"][0];
    assert_eq!(j["state"], "failing", "{st}");
    assert_eq!(j["failing"], true, "{st}");
    assert_eq!(j["last_run"]["verdict"], "failed", "{st}");
    assert_eq!(j["last_run"]["exit_code"], 4, "{st}");
    assert_eq!(j["consecutive_failures"], 1, "{st}");
    assert_eq!(code(&s.run(&["status", "f"])), 1);
    let metrics = stdout(&s.run(&["__metrics"]));
    assert!(
        metrics.contains("baton_job_failing{baton_job=\"f\"} 1"),
        "{metrics}"
    );
}

/// The scheduled run of `j` is recorded ok, exit 0, and no end slot is
/// left.
fn recorded_ok_from_its_slot(s: &Sched) {
    let runs = s.json(&["history", "j", "--json"]);
    let scheduled: Vec<&serde_json::Value> = runs
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["occurrence"] != "manual")
        .collect();
    assert_eq!(scheduled.len(), 1, "{runs}");
    assert_eq!(scheduled[0]["verdict"], "ok", "{runs}");
    assert_eq!(scheduled[0]["exit_code"], 0, "{runs}");
    // Its step's attempt, which the ledger did not take either, with it.
    let attempts = scheduled[0]["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{runs}");
    assert_eq!(attempts[0]["outcome"], "ok", "{runs}");
    let ends = s.env.state().join("ends");
    assert_eq!(
        std::fs::read_dir(&ends).map(|d| d.count()).unwrap_or(0),
        0,
        "an end slot was left behind"
    );
}

#[test]
fn store_files_an_occurrence_a_tick_recorded_missed_is_not_also_run_by_a_start_that_looked_before()
{
    // One tick finds the lock still held by the run before and records the
    // occurrence missed (`busy`); another process, which had decided the
    // occurrence due before that miss was recorded, takes the lock once it
    // is free. Its start is refused: the occurrence is missed, not also run.
    // (The daemon's worker, `baton __run --at`, is that second process,
    // made to start late on purpose.)
    let s = Sched::new("");
    let ran = s.env.path("ran");
    let busy = s.env.path("busy");
    crate::sched::known_since(&s, &["j"], crate::sched::before_new_year());
    let occurrence = crate::sched::before_new_year().as_second() + 24 * 3600;
    // The run before: by hand, holding the lock a while.
    s.write(&format!(
        "{}\n",
        yearly(&ran).replace(
            "run = \"echo $BATON_OCCURRENCE >> ",
            &format!(
                "run = \"touch {}; sleep 2; echo $BATON_OCCURRENCE >> ",
                busy.display()
            )
        )
    ));
    let before = s.cmd(&["run", "j"]).stdout(Stdio::null()).spawn().unwrap();
    eventually("the run before to hold the lock", || busy.exists());
    let o = s.run(&["tick"]);
    assert!(stderr(&o).contains("busy"), "{}{}", stdout(&o), stderr(&o));
    let out = before.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(lines(&ran), vec!["manual".to_owned()]);
    // The late start of the occurrence the tick recorded missed.
    let snapshot = serde_json::json!({
        "path": s.config(),
        "text": std::fs::read_to_string(s.config()).unwrap(),
        "dropins": [],
    });
    let mut worker = s
        .cmd(&["__run", "--job", "j", "--at", &occurrence.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = worker.stdin.take().unwrap();
        stdin.write_all(snapshot.to_string().as_bytes()).unwrap();
    }
    let o = worker.wait_with_output().unwrap();
    assert_eq!(
        lines(&ran),
        vec!["manual".to_owned()],
        "the missed occurrence ran too: {}{}",
        stdout(&o),
        stderr(&o)
    );
    // The ledger: the miss, and no run of the occurrence.
    let missed = ledger_value(
        &db(&s),
        &format!("SELECT reason FROM missed WHERE job = 'j' AND first = {occurrence}"),
    );
    assert_eq!(missed, "busy");
    let runs = ledger_value(
        &db(&s),
        &format!("SELECT COUNT(*) FROM runs WHERE job = 'j' AND occurrence = {occurrence}"),
    );
    assert_eq!(runs, "0");
    let history = s.json(&["history", "j", "--json"]);
    assert_eq!(history.as_array().unwrap().len(), 1, "{history}");
    assert_eq!(history[0]["occurrence"], "manual", "{history}");
    // Nor does the lock's claim say it started: with the ledger lost, the
    // claim alone would keep the occurrence from ever running.
    let record = std::fs::read_to_string(s.env.state().join("locks/j.lock")).unwrap();
    assert!(!record.contains("j@"), "{record}");
}

/// `overlap = "queue"` with the job's run in flight and a full disk: the
/// tick cannot queue the occurrence, so it does not say it did nothing
/// wrong (exit 2, naming why); the occurrence stays due, and once the disk
/// has room a tick runs it.
#[test]
fn store_files_an_occurrence_a_full_disk_would_not_queue_is_said_and_stays_due() {
    let Some((s, disk)) = on_a_small_disk() else {
        return;
    };
    let (ran, go) = (s.env.path("ran"), s.env.path("go"));
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\noverlap = \"queue\"\n\
         run = \"echo $BATON_OCCURRENCE >> {}; [ $BATON_OCCURRENCE = manual ] || exit 0; \
         while [ ! -e {} ]; do sleep 0.05; done\"\n",
        s.env.state().display(),
        ran.display(),
        go.display()
    ));
    crate::sched::known_since(&s, &["j"], crate::sched::before_new_year());
    let mut by_hand = s
        .cmd(&["run", "j"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::eventually("the run by hand to start", || lines(&ran).len() == 1);
    checkpoint(&s);
    let filler = disk.fill();
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 2, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("not queued behind the run in flight"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(filler).unwrap();
    std::fs::write(&go, "").unwrap();
    let _ = by_hand.wait().unwrap();
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(lines(&ran).len(), 2, "{:?}", lines(&ran));
}

/// A run whose start waits for a ledger another process holds: nothing
/// runs until the start is recorded, and then the run, its attempt and
/// its budget count from then. They used to count from before the wait:
/// a run of one second recorded as long as the wait, its attempt dated
/// before its command ran, and an `overrunning` alert raised before it
/// started.
#[test]
fn a_start_that_waited_for_the_ledger_is_dated_when_it_ran() {
    let s = Sched::new("");
    let (began, alerts) = (s.env.path("began"), s.env.path("alerts"));
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         alert_command = \"cat >> {}\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nmax_runtime = \"2s\"\n\
         run = \"date +%s%N > {}; sleep 1\"\n",
        alerts.display(),
        began.display()
    ));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let lock = WriteLock::hold(&db(&s));
    let run = s
        .cmd(&["run", "j"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Longer than the budget, shorter than the start's patience (the TTL).
    crate::support::pause(4000);
    assert!(
        !began.exists(),
        "the run started before its start was recorded"
    );
    drop(lock);
    let o = run.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the ledger did not record its start; trying again"),
        "{}",
        stderr(&o)
    );
    let began_ns: i128 = std::fs::read_to_string(&began)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let runs = s.json(&["history", "j", "--json"]);
    let run = &runs[0];
    assert_eq!(run["verdict"], "ok", "{runs}");
    let at = |v: &serde_json::Value| -> i128 {
        v.as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_nanosecond()
    };
    // Within a second of the command's own first instant, not four before.
    let started = at(&run["started"]);
    assert!((began_ns - started).abs() < 1_000_000_000, "{run}");
    let attempt = &run["attempts"][0];
    assert!(
        (began_ns - at(&attempt["started"])).abs() < 1_000_000_000,
        "{run}"
    );
    assert!(run["duration_ms"].as_i64().unwrap() < 3000, "{run}");
    assert!(attempt["duration_ms"].as_i64().unwrap() < 3000, "{run}");
    let alerted = std::fs::read_to_string(&alerts).unwrap_or_default();
    assert!(!alerted.contains("overrunning"), "{alerted}");
}

/// A run that overran its `max_runtime` on a full disk: the ledger took
/// neither its `overrunning` alert nor its end, which were kept in its end
/// slot together and recorded together once the disk was freed. The alert
/// used to be on every surface but the ledger for good.
#[test]
fn an_alert_the_full_disk_refused_is_kept_with_the_runs_end() {
    let Some((s, disk)) = on_a_small_disk() else {
        return;
    };
    // The alert command's file is outside the small disk.
    let (started, go, alerts) = (
        s.env.path("started"),
        s.env.path("go"),
        s.env.path("alerts"),
    );
    s.write(&format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\nttl = \"2s\"\nkill_grace = \"500ms\"\n\
         takeover_grace = \"2500ms\"\nalert_command = \"cat >> {}\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\nmax_runtime = \"2s\"\n\
         run = \"touch {}; while [ ! -e {} ]; do sleep 0.05; done\"\n",
        s.env.state().display(),
        alerts.display(),
        started.display(),
        go.display()
    ));
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    checkpoint(&s);
    let run = s
        .cmd(&["run", "j"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The command runs only once its start is recorded: the disk fills
    // after that, well within the budget, and the run ends once its alert
    // has been raised.
    eventually("the job to start", || started.exists());
    let filler = disk.fill();
    eventually("the overrunning alert", || {
        std::fs::read_to_string(&alerts).is_ok_and(|a| a.contains("overrunning"))
    });
    std::fs::write(&go, "go\n").unwrap();
    let o = run.wait_with_output().unwrap();
    assert!(
        stderr(&o).contains("kept in its end slot"),
        "{}",
        stderr(&o)
    );
    std::fs::remove_file(filler).unwrap();
    let o = s.run(&["tick"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = s.json(&["status", "--json"]);
    let alerts = v["jobs"][0]["recent_alerts"].as_array().unwrap().clone();
    let over = alerts.iter().filter(|a| a["kind"] == "overrunning").count();
    assert_eq!(over, 1, "{v}");
    assert_eq!(v["jobs"][0]["last_run"]["verdict"], "ok", "{v}");
}

/// A run by hand of job `j`, started and held in its second step (the
/// first has been recorded) until the returned file is written.
fn run_at_its_second_step(s: &Sched) -> (std::process::Child, std::path::PathBuf) {
    let (started, release) = (s.env.path("started"), s.env.path("release"));
    s.write(&format!(
        "[scheduler]\nstate_dir = \"STATE\"\ntimezone = \"UTC\"\n\
         [jobs.j]\nschedule = \"0 0 1 1 *\"\n\
         [[jobs.j.steps]]\nname = \"one\"\nrun = \"true\"\n\
         [[jobs.j.steps]]\nname = \"two\"\nrun = \"touch {}; while [ ! -e {} ]; do sleep 0.05; done\"\n",
        started.display(),
        release.display()
    ));
    let run = s
        .cmd(&["run", "j"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the second step to start", || started.exists());
    (run, release)
}

/// `history` has exactly one run of `j`: `ok`, with both its steps.
fn the_run_is_whole(s: &Sched) {
    let runs = s.json(&["history", "j", "--json"]);
    let runs = runs.as_array().expect("a list of runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["verdict"], "ok", "{runs:?}");
    let steps: Vec<&str> = runs[0]["attempts"]
        .as_array()
        .expect("the run's attempts")
        .iter()
        .map(|a| a["step"].as_str().unwrap())
        .collect();
    assert_eq!(steps, ["one", "two"], "{runs:?}");
}

/// The ledger counts `j`'s `ok` run once.
fn counted_once(s: &Sched) {
    assert_eq!(
        ledger_value(
            &db(s),
            "SELECT count FROM tallies WHERE job = 'j' AND kind = 'verdict' AND word = 'ok'"
        ),
        "1"
    );
}

/// An operator removes the ledger (`rm baton.db*`) while a run goes on:
/// the run's supervisor finds a fresh file at its next call, says the
/// ledger was lost (a `ledger-corrupt` alert, in the fresh ledger and in
/// `alerts.log`), and records its start again with its attempts before
/// its next write, so `history` and `status` show the run that ran
/// instead of "no runs yet" beside a success, and count it once.
#[test]
fn a_ledger_removed_while_a_run_goes_on_gets_the_run_whole_and_an_alert() {
    let s = Sched::new("");
    let (run, release) = run_at_its_second_step(&s);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db(&s).display()));
    }
    std::fs::write(&release, "").unwrap();
    let o = run.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the ledger was lost"),
        "the loss is said: {}",
        stderr(&o)
    );
    the_run_is_whole(&s);
    assert_eq!(
        ledger_value(
            &db(&s),
            "SELECT count(*) FROM alerts WHERE kind = 'ledger-corrupt' \
             AND message LIKE '%ledger was lost%'"
        ),
        "1"
    );
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
    assert!(alerts.contains("ledger was lost"), "{alerts}");
    assert!(envelope_says(
        &s,
        "its start and attempts are recorded again"
    ));
    let o = s.run(&["status"]);
    assert!(!stdout(&o).contains("never run"), "{}", stdout(&o));
    // Counted once in the fresh ledger: one run, each step once.
    counted_once(&s);
}

/// A ledger emptied while nothing has it open (`: > baton.db`) is damage,
/// not a first use: the next command moves it aside with its log, says so
/// and alerts it, where it used to start a fresh ledger without a word.
#[test]
fn a_ledger_emptied_while_idle_is_moved_aside_and_alerted_never_taken_for_new() {
    let s = Sched::new("");
    s.write("[jobs.j]\nevery = \"1h\"\nrun = \"true\"\n");
    assert_eq!(code(&s.run(&["run", "j"])), 0);
    std::fs::OpenOptions::new()
        .write(true)
        .open(db(&s))
        .unwrap()
        .set_len(0)
        .unwrap();
    let o = s.run(&["status"]);
    assert!(
        stderr(&o).contains("the ledger was corrupt") && stderr(&o).contains("is empty (0 bytes)"),
        "the loss is said: {}",
        stderr(&o)
    );
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
    assert_eq!(alerts.matches("ledger-corrupt").count(), 1, "{alerts}");
    let moved: Vec<String> = std::fs::read_dir(s.env.state())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("baton.db.corrupt-"))
        .collect();
    assert!(
        moved
            .iter()
            .any(|n| !n.ends_with("-wal") && !n.ends_with("-shm")),
        "the emptied file is kept aside: {moved:?}"
    );
    assert!(
        moved.iter().any(|n| n.ends_with("-wal")),
        "its log went with it: {moved:?}"
    );
    // Once: the fresh ledger is no empty file.
    let o = s.run(&["tick"]);
    assert!(!stderr(&o).contains("corrupt"), "{}", stderr(&o));
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap();
    assert_eq!(alerts.matches("ledger-corrupt").count(), 1, "{alerts}");
}

/// `baton.db-wal` removed alone while a run goes on: the run's writes went
/// into the removed log, which nothing else could read, and nothing said
/// so. The run's next write finds its log gone: the ledger is moved aside
/// with what the log held, the loss is alerted, and the run is recorded
/// whole in the fresh ledger.
#[test]
fn a_ledger_log_removed_while_a_run_goes_on_gets_the_run_whole_and_an_alert() {
    let s = Sched::new("");
    let (run, release) = run_at_its_second_step(&s);
    std::fs::remove_file(format!("{}-wal", db(&s).display())).unwrap();
    std::fs::write(&release, "").unwrap();
    let o = run.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the ledger was corrupt") && stderr(&o).contains("baton.db-wal"),
        "the loss is said: {}",
        stderr(&o)
    );
    the_run_is_whole(&s);
    assert_eq!(
        ledger_value(
            &db(&s),
            "SELECT count(*) FROM alerts WHERE kind = 'ledger-corrupt' \
             AND message LIKE '%baton.db-wal%'"
        ),
        "1"
    );
    counted_once(&s);
    // The file moved aside has the run's start, which the removed log held.
    let moved = std::fs::read_dir(s.env.state())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.starts_with("baton.db.corrupt-") && !n.ends_with("-wal") && !n.ends_with("-shm")
        })
        .expect("the ledger moved aside");
    assert_eq!(
        ledger_value(&moved, "SELECT count(*) FROM runs WHERE job = 'j'"),
        "1"
    );
}
