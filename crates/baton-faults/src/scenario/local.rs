//! Faults on one host, lock files and the SQLite ledger: killed
//! supervisors of detaching jobs, wrong clocks, a shared lock with an
//! unwritable ledger, a lock renamed while its job runs, a backfill after
//! the ledger was lost, a ledger locked by another process, a lock file or
//! the whole state directory taken away under a live run, a killed run
//! that must not be shown running, a supervisor whose open-file limit is
//! lowered under it, FIFOs and symbolic links planted in the state
//! directory.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use rustix::process::{Resource, Rlimit};

use crate::job::JobDef;
use crate::procs;
use crate::scenario::common::{self, Local, faked, race, tick};
use crate::scenario::{Need, Scenario};
use crate::tmpfs::Tmpfs;
use crate::trial::{Trial, pause_ms, secs};

/// The one-host scenarios.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "killed-supervisor-exec-detached",
            what: "kill -9 of baton exec whose command detached (setsid): nothing of it runs on once the next exec holds the lock",
            needs: &[],
            cost: 2,
            run: exec_detached,
        },
        Scenario {
            name: "killed-supervisor-run-detached",
            what: "kill -9 of baton run whose job detached: the next run never overlaps what is left, and the killed run is recorded abandoned",
            needs: &[],
            cost: 2,
            run: run_detached,
        },
        Scenario {
            name: "clock-ahead-single-host",
            what: "one tick with the clock an hour or a day ahead (faketime): the honest ticks after it still run the present",
            needs: &[Need::Faketime],
            cost: 2,
            run: |t| clock_steps(t, &[Step::Faked], &["+1h", "+1d"]),
        },
        Scenario {
            name: "clock-behind-single-host",
            what: "a tick with the clock an hour behind: no occurrence that ran is counted missed, the schedule goes on",
            needs: &[Need::Faketime],
            cost: 2,
            run: |t| {
                clock_steps(
                    t,
                    &[Step::Honest, Step::Faked, Step::Honest],
                    &["-1h", "-10m"],
                )
            },
        },
        Scenario {
            name: "clock-steps-single-host",
            what: "ticks whose clock steps ahead, back and ahead again: one run at a time, each occurrence once, no wedge",
            needs: &[Need::Faketime],
            cost: 2,
            run: |t| {
                clock_steps(
                    t,
                    &[
                        Step::Faked,
                        Step::Honest,
                        Step::Faked,
                        Step::Honest,
                        Step::Faked,
                    ],
                    &["+2m", "-2m", "+1h", "-1h", "+30s"],
                )
            },
        },
        Scenario {
            name: "shared-lock-many-jobs-unwritable-ledger",
            what: "eight long-named hourly jobs on one lock, ticked three at once while the disk is full or the ledger is of another schema version: each occurrence runs at most once, one job at a time",
            needs: &[Need::Root],
            cost: 2,
            run: shared_lock_full_disk,
        },
        Scenario {
            name: "lock-renamed-while-running",
            what: "a job's lock renamed in baton.toml while it runs, then ticks: it never runs beside itself",
            needs: &[],
            cost: 2,
            run: lock_renamed,
        },
        Scenario {
            name: "backfill-after-lost-ledger",
            what: "the ledger destroyed after runs, then backfill of their range: no occurrence that ran runs again",
            needs: &[],
            cost: 2,
            run: backfill_lost_ledger,
        },
        Scenario {
            name: "ledger-removed-mid-run",
            what: "baton.db (with its -wal and -shm) removed or renamed away while a run goes on and ticks race: the run in flight then is recorded whole in the fresh ledger with the verdict it earned, and no occurrence runs twice",
            needs: &[],
            cost: 2,
            run: ledger_removed,
        },
        Scenario {
            name: "ledger-log-removed-mid-run",
            what: "baton.db-wal alone removed or renamed away while a run goes on and ticks race: the loss is alerted (ledger-corrupt, naming the log), the run in flight is recorded whole in the fresh ledger with the verdict it earned, and no occurrence runs twice",
            needs: &[],
            cost: 2,
            run: ledger_log_removed,
        },
        Scenario {
            name: "unrecorded-run-counted-missed",
            what: "the ledger write-locked by another process while runs happen: every run that happened is recorded, none counted missed",
            needs: &[],
            cost: 2,
            run: ledger_locked,
        },
        Scenario {
            name: "lock-file-removed",
            what: "the lock file of a live run removed or renamed away (by root) while ticks and runs by hand race: nothing starts beside the live run, which ends with the verdict it earned (lease-lost once it finds its lock gone), never abandoned; the schedule goes on",
            needs: &[],
            cost: 2,
            run: lock_file_removed,
        },
        Scenario {
            name: "state-dir-moved-mid-run",
            what: "the whole state directory moved away (mv state state.moved, by its owner) while a run goes on, then ticks and runs by hand race at the fresh directory: nothing starts beside the live run, and the schedule goes on once it has ended",
            needs: &[],
            cost: 2,
            run: state_dir_moved,
        },
        Scenario {
            name: "killed-run-shown-running",
            what: "kill -9 of a yearly job's supervisor: once nothing of it is left, history and status do not show it running",
            needs: &[],
            cost: 2,
            run: killed_shown_running,
        },
        Scenario {
            name: "supervisor-descriptors-taken",
            what: "the open-file limit of a run's supervisor lowered under it while its job runs (prlimit --nofile=3:3, or the soft limit only; a job that detaches or not): the run ends, recorded as it ended, its lease let go, and the schedule goes on",
            needs: &[],
            cost: 2,
            run: descriptors_taken,
        },
        Scenario {
            name: "job-signals-to-supervisor",
            what: "SIGUSR1, SIGUSR2 or SIGALRM (a job's signals: reopen a log, report progress) sent to a run's supervisor, or to a tick and its worker, mid-run: none ends baton; the run ends as its job does, recorded by its own supervisor (never abandoned), its lease let go, and the schedule goes on",
            needs: &[],
            cost: 2,
            run: job_signals,
        },
        Scenario {
            name: "fifo-in-logs",
            what: "a FIFO planted at the job's log, the envelope or alerts.log: no tick hangs, the schedule goes on",
            needs: &[],
            cost: 4,
            run: fifo_in_logs,
        },
        Scenario {
            name: "planted-symlink-logs",
            what: "logs/.pruned a symbolic link to root's file, logs/ world-writable, baton.db world-writable: nothing written through the link, nothing run in an untrusted directory",
            needs: &[Need::Root],
            cost: 2,
            run: planted_files,
        },
    ]
}

fn exec_detached(t: &mut Trial<'_>) -> Result<(), String> {
    let state = t.path("state");
    let cfg = t.path("none.toml");
    let exec = |t: &Trial<'_>, run: &str, beats: &str| {
        let mut c = t.baton(&cfg, &["--state-dir"]);
        c.arg(&state)
            .args(["exec", "--name", "x", "--ttl", "2s", "--"])
            .arg(t.script())
            .args([beats, "0"])
            .env("BATON_JOB", "x")
            .env("BATON_OCCURRENCE", "manual")
            .env("BATON_RUN_ID", run)
            .env("FAULTS_LOCK", "x")
            .env("FAULTS_DETACH", "1")
            .env_remove("BATON_CONFIG");
        c
    };
    let first = exec(t, "exec-1", "100");
    let Some(pid) = t.spawn(first, "exec-1") else {
        return Err("baton exec did not start".into());
    };
    let events = t.events();
    if !t.until(secs(20), |_| crate::evidence::mark(&events) >= 2) {
        return Err("the first exec's job never started".into());
    }
    pause_ms(t.rng.range(0, 800));
    procs::kill(pid as i32);
    t.injected += 1;
    let mut ran = false;
    for n in 0..60 {
        let c = exec(t, &format!("exec-2-{n}"), "10");
        let r = t.run(c, secs(30));
        if r.code == Some(0) {
            ran = true;
            break;
        }
        pause_ms(200);
    }
    if !ran {
        t.v.wedge("no later exec ran within 60 tries".into());
    }
    t.facts.unrecordable = true; // exec keeps no ledger
    t.quiesce(secs(10), &[]);
    t.judge(&[], &[]);
    Ok(())
}

fn run_detached(t: &mut Trial<'_>) -> Result<(), String> {
    let mut job = JobDef::every_second("j", 100);
    job.schedule = "0 0 1 1 *".into();
    job.detach = true;
    let l = Local::new(t, None, "", vec![job]);
    let pid = run_started(t, &l, "j", "run-1")?;
    pause_ms(t.rng.range(0, 800));
    procs::kill(pid as i32);
    t.injected += 1;
    t.facts.killed.insert((hostname(), pid));
    let mut ran = false;
    for _ in 0..60 {
        let c = t.baton(&l.config, &["run", "j"]);
        if t.run(c, secs(30)).code.is_some_and(|c| c != 1 && c != 75) {
            ran = true;
            break;
        }
        pause_ms(200);
    }
    if !ran {
        t.v.wedge("no later run of j started within 60 tries".into());
    }
    t.quiesce(secs(10), &[]);
    common::judge_local(t, &l);
    Ok(())
}

/// This machine's host name, as baton records it.
pub(crate) fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Honest,
    Faked,
}

fn clock_steps(t: &mut Trial<'_>, steps: &[Step], offsets: &[&str]) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("j", 3)]);
    let _ = tick(t, &l.config);
    for s in steps {
        match s {
            Step::Honest => race(t, &l.config, Duration::from_millis(1500)),
            Step::Faked => {
                let offset = *t.rng.pick(offsets);
                let cmd = faked(t.baton(&l.config, &["tick"]), offset);
                let r = t.run(cmd, secs(30));
                if r.timed_out {
                    t.v.wedge(format!("a tick at {offset} did not end"));
                }
                t.injected += 1;
            }
        }
    }
    common::finish(t, &l);
    if t.v.wedged > 0 {
        status_must_not_say_ok(t, &l, "j");
    }
    Ok(())
}

/// A wedged job must not be reported healthy.
fn status_must_not_say_ok(t: &mut Trial<'_>, l: &Local, job: &str) {
    let cmd = t.baton(&l.config, &["status", job, "--json"]);
    let r = t.run(cmd, secs(30));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    if v["jobs"][0]["state"] == "ok" {
        t.v.wrong_record(format!(
            "status says {job} is ok while no occurrence of it runs"
        ));
    }
}

fn shared_lock_full_disk(t: &mut Trial<'_>) -> Result<(), String> {
    let fs = Tmpfs::mount(&t.path("state"), 4096)?;
    let jobs: Vec<JobDef> = (0..8)
        .map(|i| {
            let mut j = JobDef::every_second(
                &format!("a_job_with_a_rather_long_name_to_fill_the_lock_record_{i}"),
                t.rng.range(1, 4) as u32,
            );
            // Hourly: every tick of the trial finds the same occurrence due
            // (the latest within the catch-up window), so only a record of
            // it having run keeps it from running again.
            j.schedule = "0 * * * *".into();
            j.lock = Some("shared".into());
            j
        })
        .collect();
    let l = Local::new(t, Some(t.path("state")), "", jobs);
    // The first tick sees the jobs; from a sighting just before this hour's
    // occurrence, the next one runs it (no occurrence before a sighting
    // runs).
    let _ = tick(t, &l.config);
    seen_before_this_hour(&l.state.join("baton.db"))?;
    let _ = tick(t, &l.config);
    let full = t.rng.range(0, 1) == 0;
    let mut old_version = None;
    if full {
        fs.fill();
    } else {
        // A ledger of another schema version: every write refused.
        old_version = Some(schema_version(&l.state.join("baton.db"), None)?);
        schema_version(&l.state.join("baton.db"), Some(9999))?;
    }
    t.injected += 1;
    let rounds = t.rng.range(6, 12);
    for _ in 0..rounds {
        let pids: Vec<u32> = (0..3)
            .filter_map(|n| {
                let c = t.baton(&l.config, &["tick"]);
                t.spawn(c, &format!("tick-{n}"))
            })
            .collect();
        for p in pids {
            let _ = t.wait_for(p, secs(30));
        }
        pause_ms(t.rng.range(100, 400));
    }
    fs.free();
    if let Some(v) = old_version {
        // The ledger of this build again, so that history can be read.
        schema_version(&l.state.join("baton.db"), Some(v))?;
    }
    // No probe: the next occurrence is an hour away.
    t.quiesce(secs(20), &[]);
    common::judge_local(t, &l);
    drop(fs);
    Ok(())
}

/// Moves every job's first sighting in the SQLite ledger `db` to the second
/// before this hour began, as a ledger that knew the jobs from then holds
/// it.
fn seen_before_this_hour(db: &std::path::Path) -> Result<(), String> {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], timeout=30)\n\
             hour = int(time.time()) // 3600 * 3600\n\
             c.execute('UPDATE jobs SET first_seen = ?', ((hour - 1) * 1000000,))\n\
             c.commit()\n",
        )
        .arg(db)
        .output()
        .map_err(|e| format!("failed to run python3: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "failed to move the jobs' sighting in {}: {}",
            db.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Reads (`None`) or sets a SQLite file's `user_version`, where baton keeps
/// its ledger's schema version.
fn schema_version(db: &std::path::Path, set: Option<i64>) -> Result<i64, String> {
    let script = match set {
        Some(v) => format!(
            "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
             c.execute('PRAGMA user_version = {v}')\nc.commit()\nprint({v})\n"
        ),
        None => "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\n\
                 print(c.execute('PRAGMA user_version').fetchone()[0])\n"
            .into(),
    };
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(db)
        .output()
        .map_err(|e| format!("failed to run python3: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| {
            format!(
                "failed to read or set the schema version of {}",
                db.display()
            )
        })
}

/// The job's occurrence seen, then a tick started whose run has begun;
/// the tick's pid.
/// Starts `baton run JOB` in the background (as `name`) and returns its pid
/// once its job has started.
fn run_started(t: &mut Trial<'_>, l: &Local, job: &str, name: &str) -> Result<u32, String> {
    let c = t.baton(&l.config, &["run", job]);
    let Some(pid) = t.spawn(c, name) else {
        return Err("baton run did not start".into());
    };
    let events = t.events();
    if !t.until(secs(20), |_| crate::evidence::mark(&events) >= 2) {
        return Err(format!("the job of baton run {job} never started"));
    }
    Ok(pid)
}

fn first_tick_run(t: &mut Trial<'_>, l: &Local) -> Result<u32, String> {
    common::sighted(t, &l.config)?;
    let c = t.baton(&l.config, &["tick"]);
    let Some(pid) = t.spawn(c, "tick-1") else {
        return Err("the first tick did not start".into());
    };
    let events = t.events();
    if !t.until(secs(20), |_| crate::evidence::mark(&events) >= 2) {
        return Err("the first run never started".into());
    }
    Ok(pid)
}

fn lock_renamed(t: &mut Trial<'_>) -> Result<(), String> {
    let mut job = JobDef::every_second("j", 30);
    job.lock = Some("first".into());
    let mut l = Local::new(t, None, "", vec![job.clone()]);
    let pid = first_tick_run(t, &l)?;
    job.lock = Some("second".into());
    job.beats = 5;
    l.rewrite(t, "", vec![job]);
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(1500, 3000));
    race(t, &l.config, span);
    let _ = t.wait_for(pid, secs(30));
    common::finish(t, &l);
    Ok(())
}

fn lock_file_removed(t: &mut Trial<'_>) -> Result<(), String> {
    let job = JobDef::every_second("j", 40);
    let l = Local::new(t, None, "", vec![job]);
    let pid = first_tick_run(t, &l)?;
    pause_ms(t.rng.range(0, 1000));
    let locks = l.state.join("locks");
    let lock = locks.join("j.lock");
    let gone = match t.rng.range(0, 2) {
        0 => std::fs::remove_file(&lock),
        1 => std::fs::rename(&lock, locks.join("j.lock.moved")),
        _ => std::fs::rename(&locks, l.state.join("locks.moved")),
    };
    gone.map_err(|e| format!("failed to take {} away: {e}", lock.display()))?;
    t.injected += 1;
    // Ticks and runs by hand race while the live run has no lock file.
    ticks_and_runs_by_hand(t, &l);
    let _ = t.wait_for(pid, secs(60));
    common::finish(t, &l);
    Ok(())
}

/// Ticks and runs by hand of job `j`, one after the other, for 1.5 to 4 s.
fn ticks_and_runs_by_hand(t: &mut Trial<'_>, l: &Local) {
    let span = Duration::from_millis(t.rng.range(1500, 4000));
    let until = std::time::Instant::now() + span;
    while std::time::Instant::now() < until {
        let _ = tick(t, &l.config);
        let c = t.baton(&l.config, &["run", "j"]);
        let _ = t.run(c, secs(30));
        pause_ms(t.rng.range(100, 400));
    }
}

fn state_dir_moved(t: &mut Trial<'_>) -> Result<(), String> {
    let job = JobDef::every_second("j", 40);
    let l = Local::new(t, None, "", vec![job]);
    let pid = first_tick_run(t, &l)?;
    pause_ms(t.rng.range(0, 1000));
    let moved = l.state.with_extension("moved");
    let at = crate::evidence::mark(&t.events());
    std::fs::rename(&l.state, &moved)
        .map_err(|e| format!("failed to move {} away: {e}", l.state.display()))?;
    t.injected += 1;
    // The lock files and the ledger went with it: the ledger at the path is
    // a fresh one, which knows nothing of the runs before.
    t.facts.ledger_lost_at = Some(at);
    ticks_and_runs_by_hand(t, &l);
    let _ = t.wait_for(pid, secs(60));
    common::finish(t, &l);
    Ok(())
}

fn backfill_lost_ledger(t: &mut Trial<'_>) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("j", 1)]);
    let span = Duration::from_millis(t.rng.range(2500, 4000));
    race(t, &l.config, span);
    t.quiesce(secs(10), &[]);
    let seen = crate::evidence::runs(&t.events());
    let (Some(first), Some(last)) = (seen.first(), seen.last()) else {
        return Err("no run happened before the ledger was lost".into());
    };
    let (from, to) = (first.occurrence.clone(), last.occurrence.clone());
    let db = l.state.join("baton.db");
    if t.rng.range(0, 1) == 0 {
        let _ = std::fs::remove_file(&db);
        let _ = std::fs::remove_file(l.state.join("baton.db-wal"));
        let _ = std::fs::remove_file(l.state.join("baton.db-shm"));
    } else {
        std::fs::write(&db, b"this is not a database any more")
            .map_err(|e| format!("failed to overwrite {}: {e}", db.display()))?;
    }
    t.injected += 1;
    let c = t.baton(&l.config, &["backfill", "j", "--from", &from, "--to", &to]);
    let r = t.run(c, secs(60));
    if r.timed_out {
        t.v.wedge("backfill did not end".into());
    }
    t.quiesce(secs(10), &[]);
    // The ledger was lost on purpose: only what the jobs saw counts here.
    t.facts.unrecordable = true;
    common::finish(t, &l);
    Ok(())
}

fn ledger_removed(t: &mut Trial<'_>) -> Result<(), String> {
    ledger_gone(t, &["-wal", "-shm", ""], "ledger was lost")
}

fn ledger_log_removed(t: &mut Trial<'_>) -> Result<(), String> {
    ledger_gone(t, &["-wal"], "baton.db-wal was removed or replaced")
}

/// The ledger's files with these suffixes (`""` is `baton.db` itself)
/// removed or renamed away while a run goes on and ticks race; the loss is
/// alerted with `said`.
fn ledger_gone(t: &mut Trial<'_>, files: &[&str], said: &str) -> Result<(), String> {
    // Runs of 3 s, due every second: a run by hand is in flight when the
    // ledger goes, and the ticks racing it find it busy.
    let l = Local::new(t, None, "", vec![JobDef::every_second("j", 30)]);
    let c = t.baton(&l.config, &["run", "j"]);
    let Some(pid) = t.spawn(c, "run") else {
        return Err("baton run did not start".into());
    };
    let events = t.events();
    if !t.until(secs(20), |_| {
        crate::evidence::runs(&events)
            .iter()
            .any(|s| s.end.is_none())
    }) {
        return Err("no run was in flight to lose the ledger under".into());
    }
    pause_ms(t.rng.range(0, 1500));
    let db = l.state.join("baton.db");
    let at = crate::evidence::mark(&events);
    let renamed = t.rng.range(0, 1) == 1;
    let mut gone = Ok(());
    for suffix in files {
        let from = std::path::PathBuf::from(format!("{}{suffix}", db.display()));
        // What happened to the last one says whether the fault took: a
        // `-wal` is made again at once by the next process to open the
        // ledger, so what is at the path after proves nothing.
        gone = if renamed {
            std::fs::rename(&from, format!("{}.moved{suffix}", db.display()))
        } else {
            std::fs::remove_file(&from)
        }
        .map_err(|e| format!("{} was neither removed nor renamed: {e}", from.display()));
    }
    gone?;
    t.injected += 1;
    t.facts.ledger_lost_at = Some(at);
    let after = Duration::from_millis(t.rng.range(1500, 3000));
    race(t, &l.config, after);
    let _ = t.wait_for(pid, secs(20));
    // The run by hand was in flight at the loss: it went on past it.
    let seen = crate::evidence::runs(&events);
    let Some(flight) = seen.iter().find(|s| s.first < at && s.last >= at) else {
        return Err("no run went on past the ledger's loss".into());
    };
    let flight = flight.run_id.clone();
    common::finish(t, &l);
    // Beyond the generic judge: the run in flight is there with its
    // attempts, and the loss was alerted.
    let cmd = t.baton(&l.config, &["history", "j", "--json", "--limit", "10000"]);
    let r = t.run(cmd, secs(30));
    let runs: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    let attempts = runs
        .as_array()
        .into_iter()
        .flatten()
        .find(|run| run["run_id"] == flight.as_str())
        .and_then(|run| run["attempts"].as_array().map(Vec::len));
    if attempts == Some(0) {
        t.v.wrong_record(format!(
            "run {flight}, in flight at the loss, has no attempt"
        ));
    }
    let alerts = std::fs::read_to_string(l.alerts()).unwrap_or_default();
    if !alerts.contains(said) {
        t.v.wrong_record(format!("the loss was never alerted (no \"{said}\")"));
    }
    Ok(())
}

fn ledger_locked(t: &mut Trial<'_>) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("j", 2)]);
    let _ = tick(t, &l.config);
    let db = l.state.join("baton.db");
    let hold = t.rng.range(4, 8);
    let mut py = std::process::Command::new("python3");
    py.arg("-c")
        .arg(
            "import sqlite3, sys, time\n\
             c = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)\n\
             c.execute('BEGIN EXCLUSIVE')\n\
             print('locked', flush=True)\n\
             time.sleep(float(sys.argv[2]))\n\
             c.execute('ROLLBACK')\n",
        )
        .arg(&db)
        .arg(hold.to_string())
        .env(procs::MARK, &t.mark);
    let Some(locker) = t.spawn(py, "locker") else {
        return Err("python3 did not start (the ledger locker)".into());
    };
    let out = t.path("locker.out");
    if !t.until(secs(20), |_| {
        std::fs::read_to_string(&out).is_ok_and(|s| s.contains("locked"))
    }) {
        return Err("the ledger locker did not take its lock".into());
    }
    t.injected += 1;
    race(t, &l.config, secs(hold));
    let _ = t.wait_for(locker, secs(30));
    common::finish(t, &l);
    Ok(())
}

fn killed_shown_running(t: &mut Trial<'_>) -> Result<(), String> {
    let mut job = JobDef::every_second("yearly", 100);
    job.schedule = "0 0 1 1 *".into();
    let l = Local::new(t, None, "", vec![job]);
    let pid = run_started(t, &l, "yearly", "run")?;
    pause_ms(t.rng.range(0, 1000));
    procs::kill(pid as i32);
    t.injected += 1;
    t.facts.killed.insert((hostname(), pid));
    let _ = t.wait_for(pid, secs(10));
    t.quiesce(secs(10), &[]);
    common::judge_local(t, &l);
    let cmd = t.baton(&l.config, &["status", "yearly", "--json"]);
    let r = t.run(cmd, secs(30));
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap_or_default();
    if v["jobs"][0]["state"] == "running" {
        t.v.wrong_record("status shows the killed run running".into());
    }
    Ok(())
}

fn descriptors_taken(t: &mut Trial<'_>) -> Result<(), String> {
    let mut job = JobDef::every_second("j", 15);
    job.detach = t.rng.range(0, 1) == 1;
    let l = Local::new(t, None, "", vec![job]);
    let pid = run_started(t, &l, "j", "run")?;
    pause_ms(t.rng.range(0, 1000));
    // Below the descriptors the supervisor holds: both limits, or the soft
    // one only (which it may raise again by itself).
    let hard = if t.rng.range(0, 2) > 0 { Some(3) } else { None };
    let lowered = Rlimit {
        current: Some(3),
        maximum: hard.or(rustix::process::getrlimit(Resource::Nofile).maximum),
    };
    let p = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| format!("no such pid {pid}"))?;
    rustix::process::prlimit(Some(p), Resource::Nofile, lowered)
        .map_err(|e| format!("failed to lower the open-file limit of {pid}: {e}"))?;
    t.injected += 1;
    if t.wait_for(pid, secs(60)).is_none() {
        t.v.wedge(format!(
            "baton run (pid {pid}) did not end 60 s after its open-file limit was lowered to 3 \
             (hard limit {hard:?}): it keeps its lease"
        ));
    }
    common::finish(t, &l);
    Ok(())
}

/// Signals meant for the job, sent to whatever supervises it. Their
/// default action ended the supervisor: its job went on unsupervised, and
/// its run was left to be recorded `abandoned`.
fn job_signals(t: &mut Trial<'_>) -> Result<(), String> {
    use std::os::unix::process::ExitStatusExt;

    use rustix::process::Signal;
    let l = Local::new(t, None, "", vec![JobDef::every_second("j", 6)]);
    let by_tick = t.rng.range(0, 1) == 1;
    let pid = if by_tick {
        first_tick_run(t, &l)?
    } else {
        run_started(t, &l, "j", "run")?
    };
    // A tick runs its job in a worker of its own: either may be sent them.
    let mut targets = vec![pid];
    targets.extend(by_tick.then(|| procs::child_of(pid)).flatten());
    for &p in &targets {
        t.facts.signalled.insert((hostname(), p));
    }
    for _ in 0..t.rng.range(1, 3) {
        pause_ms(t.rng.range(0, 800));
        let sig = *t.rng.pick(&[Signal::USR1, Signal::USR2, Signal::ALARM]);
        let p = *t.rng.pick(&targets);
        procs::signal(p as i32, sig);
        t.injected += 1;
    }
    match t.wait_for(pid, secs(60)) {
        None => t.v.wedge(format!(
            "baton (pid {pid}) did not end 60 s after signals meant for its job"
        )),
        Some(status) => {
            if let Some(sig) = status.signal() {
                t.v.wrong_record(format!(
                    "baton (pid {pid}) was ended by signal {sig}, meant for its job: its run is \
                     left unrecorded"
                ));
            }
        }
    }
    common::finish(t, &l);
    Ok(())
}

fn fifo_in_logs(t: &mut Trial<'_>) -> Result<(), String> {
    let l = Local::new(t, None, "", vec![JobDef::every_second("j", 2)]);
    let logs = l.state.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| format!("failed to create {}: {e}", logs.display()))?;
    for d in [&l.state, &logs] {
        let _ = std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755));
    }
    let day = utc_day();
    let name = t
        .rng
        .pick(&["j_{}.log", "baton_{}.log", "alerts.log"])
        .replace("{}", &day);
    let fifo = logs.join(&name);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .map_err(|e| format!("failed to make a FIFO at {}: {e}", fifo.display()))?;
    t.injected += 1;
    let mut hung = 0;
    for _ in 0..3 {
        let c = t.baton(&l.config, &["tick"]);
        if t.run(c, secs(8)).timed_out {
            hung += 1;
        }
        pause_ms(t.rng.range(300, 900));
    }
    if hung > 0 {
        t.v.wedge(format!("{hung} tick(s) hung on the FIFO at logs/{name}"));
    }
    common::finish(t, &l);
    Ok(())
}

/// Today's date in UTC as the dated logs name it (`YYYY_MM_DD`).
fn utc_day() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y_%m_%d"])
        .output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn planted_files(t: &mut Trial<'_>) -> Result<(), String> {
    // A symbolic link where baton writes its prune marker.
    let victim = t.path("victim");
    std::fs::write(&victim, "root's secret\n")
        .and_then(|()| std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)))
        .map_err(|e| format!("failed to write {}: {e}", victim.display()))?;
    let state = t.path("state-link");
    let logs = state.join("logs");
    std::fs::create_dir_all(&logs)
        .map_err(|e| format!("failed to create {}: {e}", logs.display()))?;
    std::os::unix::fs::symlink(&victim, logs.join(".pruned"))
        .map_err(|e| format!("failed to plant a link: {e}"))?;
    let l = Local::new(
        t,
        Some(state),
        "log_keep = \"1d\"\n",
        vec![JobDef::every_second("j", 1)],
    );
    race(t, &l.config, Duration::from_millis(1200));
    t.injected += 1;
    if std::fs::read_to_string(&victim).unwrap_or_default() != "root's secret\n" {
        t.v.breach("logs/.pruned was written through a symbolic link to root's file".into());
    }
    // A world-writable logs/, and a world-writable ledger: refused, nothing run.
    let mut others = Vec::new();
    for (n, what) in ["logs/ at mode 0777", "baton.db at mode 0666"]
        .iter()
        .enumerate()
    {
        let state = t.path(&format!("state-{n}"));
        let job = format!("k{n}");
        let one = Local::new_named(
            t,
            &format!("baton-{n}"),
            state.clone(),
            vec![JobDef::every_second(&job, 1)],
        );
        let _ = tick(t, &one.config);
        let mark = crate::evidence::mark(&t.events());
        let (target, mode) = if n == 0 {
            (state.join("logs"), 0o777)
        } else {
            (state.join("baton.db"), 0o666)
        };
        let _ = std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode));
        t.injected += 1;
        pause_ms(1100);
        let _ = tick(t, &one.config);
        let ran = crate::evidence::runs(&t.events())
            .iter()
            .any(|s| s.job == job && s.first >= mark);
        if ran {
            t.v.breach(format!("a run started with {what}"));
        }
        let back = if n == 0 { 0o755 } else { 0o600 };
        let _ = std::fs::set_permissions(&target, std::fs::Permissions::from_mode(back));
        others.push(one);
    }
    t.quiesce(secs(10), &[]);
    let mut all = vec![&l];
    all.extend(others.iter());
    common::judge_all(t, &all);
    Ok(())
}
