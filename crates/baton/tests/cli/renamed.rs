//! A job whose `lock` is changed while it runs: by an edit of `baton.toml`
//! and the next `baton tick` or `baton run`, by a `PUT` to the daemon and
//! its clock, and on the PostgreSQL store. The job never starts beside
//! itself under the new lock, and its live run is never recorded
//! `abandoned`; once that run has ended, the job runs under the new lock.

use std::path::PathBuf;
use std::process::{Child, Stdio};

use crate::daemon::Daemon;
use crate::policies::read_lines;
use crate::sched::Sched;
use crate::support::{code, eventually, stderr, stdout};

/// The files a run of the job writes: each run appends its occurrence to
/// `ran` (and `OVERLAP` when another run of it is in flight), touches
/// `started`, and waits for `go`.
struct Marks {
    ran: PathBuf,
    started: PathBuf,
    go: PathBuf,
    room: PathBuf,
}

impl Marks {
    fn new(s: &Sched) -> Marks {
        Marks {
            ran: s.env.path("ran"),
            started: s.env.path("started"),
            go: s.env.path("go"),
            room: s.env.path("room"),
        }
    }

    /// The job's command.
    fn script(&self) -> String {
        format!(
            "mkdir {room} 2>/dev/null || echo OVERLAP >> {ran}; echo $BATON_OCCURRENCE >> {ran}; \
             touch {started}; while [ ! -e {go} ]; do sleep 0.05; done; rmdir {room}",
            room = self.room.display(),
            ran = self.ran.display(),
            started = self.started.display(),
            go = self.go.display()
        )
    }

    fn overlapped(&self) -> bool {
        read_lines(&self.ran).iter().any(|l| l == "OVERLAP")
    }
}

/// Ends `first` (and anything else waiting for `go`) and panics: a run
/// started beside the live one.
fn beside(m: &Marks, first: &mut Child) -> ! {
    std::fs::write(&m.go, "").unwrap();
    let _ = first.wait();
    panic!(
        "the job started beside its live run: {:?}",
        read_lines(&m.ran)
    );
}

/// A yearly job caught up for 400 days (its occurrence stays due through
/// the test, whatever the minute, to a ledger that knows it since before
/// it) on `lock`.
fn yearly(m: &Marks, lock: &str, extra: &str) -> String {
    format!(
        "{extra}[jobs.x]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\nlock = \"{lock}\"\n\
         run = \"{}\"\n",
        m.script().replace('"', "\\\"")
    )
}

/// `baton ARGS` spawned; waits until it ends or the job overlaps itself.
fn run_or_overlap(s: &Sched, m: &Marks, first: &mut Child, args: &[&str]) -> std::process::Output {
    let mut c = s
        .cmd(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ended = false;
    eventually(
        "the command to end, or the job to start beside itself",
        || {
            ended = c.try_wait().unwrap().is_some();
            ended || m.overlapped()
        },
    );
    if !ended {
        beside(m, first);
    }
    c.wait_with_output().unwrap()
}

/// `baton run x` started, once its job has.
fn first_run(s: &Sched, m: &Marks) -> Child {
    let first = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the first run to start", || m.started.exists());
    first
}

/// The verdicts of the job's runs, newest first.
fn verdicts(s: &Sched) -> Vec<String> {
    let h = s.json(&["history", "x", "--json"]);
    h.as_array()
        .unwrap()
        .iter()
        .map(|r| r["verdict"].as_str().unwrap_or("running").to_owned())
        .collect()
}

/// A lock file removed, or renamed away, while its run goes on (by root,
/// or by its directory's owner): the lock path is free, yet the job's run
/// lives on this host. A tick or a run by hand then finds that run's
/// presence at the path, or the run in the ledger, alive, under a lease the
/// lock no longer names, and refuses rather than start beside it; the
/// occurrence stays due.
#[test]
fn a_lock_file_removed_or_renamed_under_a_live_run_starts_nothing_beside_it() {
    for how in ["remove", "rename"] {
        let s = Sched::new("");
        let m = Marks::new(&s);
        crate::sched::known_since(&s, &["x"], crate::sched::before_new_year());
        s.write(&yearly(&m, "a", ""));
        let mut first = first_run(&s, &m);
        let lock = s.env.state().join("locks/a.lock");
        match how {
            "remove" => std::fs::remove_file(&lock).unwrap(),
            _ => std::fs::rename(&lock, s.env.state().join("locks/a.lock.old")).unwrap(),
        }
        for args in [&["run", "x"][..], &["tick"]] {
            let o = run_or_overlap(&s, &m, &mut first, args);
            assert_eq!(code(&o), 1, "{how}: {args:?}: {}", stderr(&o));
            // Said by the live run's presence at the empty path, or by the
            // ledger's unfinished run.
            assert!(
                stderr(&o).contains("no lock file is at the path")
                    || stderr(&o).contains("was removed or replaced while it ran"),
                "{how}: {args:?}: {}",
                stderr(&o)
            );
        }
        assert_eq!(read_lines(&m.ran).len(), 1, "{:?}", read_lines(&m.ran));
        std::fs::write(&m.go, "").unwrap();
        let _ = first.wait().unwrap();
        // The first run said its own end, whatever it was: never abandoned.
        let said = verdicts(&s);
        assert_eq!(said.len(), 1, "{how}: {said:?}");
        assert_ne!(said[0], "abandoned", "{how}: {said:?}");
        assert!(!m.overlapped());
    }
}

/// The whole state directory moved away while a run goes on (`mv state
/// state.old`, by its owner or root): the lock file and the ledger went with
/// it, so the lock path is free and the fresh ledger knows no run. The live
/// run's supervisor still holds its lease's presence, which refuses a run at
/// the path until that supervisor ends.
#[test]
fn a_state_directory_moved_away_under_a_live_run_starts_nothing_beside_it() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    s.write(&yearly(&m, "a", ""));
    let mut first = first_run(&s, &m);
    let state = s.env.state();
    std::fs::rename(&state, state.with_extension("old")).unwrap();
    let o = run_or_overlap(&s, &m, &mut first, &["run", "x"]);
    assert_ne!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no lock file is at the path"),
        "{}",
        stderr(&o)
    );
    assert_eq!(read_lines(&m.ran).len(), 1, "{:?}", read_lines(&m.ran));
    std::fs::write(&m.go, "").unwrap();
    let _ = first.wait().unwrap();
    assert!(!m.overlapped());
}

fn renamed_while_running(s: &Sched, m: &Marks, extra: &str) {
    s.write(&yearly(m, "a", extra));
    let mut first = first_run(s, m);
    s.write(&yearly(m, "b", extra));
    // Its scheduled occurrence, and a run by hand: both under lock b while
    // the run under lock a goes on. Neither starts; each says why.
    for args in [&["tick"][..], &["run", "x"]] {
        let o = run_or_overlap(s, m, &mut first, args);
        assert_eq!(code(&o), 1, "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("runs under its former lock"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    assert_eq!(read_lines(&m.ran).len(), 1, "{:?}", read_lines(&m.ran));
    // Every surface sees the run under the former lock as the job's run
    // in flight, as the refusals did: not a job at rest.
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["state"], "running", "{st}");
    assert_eq!(st["jobs"][0]["holder"]["verdict"], "live", "{st}");
    let p = s.run(&["__page", "--refresh", "0"]);
    assert!(
        crate::support::stdout(&p).contains("data-state=\"running\""),
        "{}",
        stderr(&p)
    );
    let metrics = crate::support::stdout(&s.run(&["__metrics"]));
    for sample in [
        "baton_job_running{baton_job=\"x\"} 1",
        "baton_job_state{baton_job=\"x\",state=\"running\"} 1",
    ] {
        assert!(metrics.contains(sample), "{sample}: {metrics}");
    }
    std::fs::write(&m.go, "").unwrap();
    assert!(first.wait().unwrap().success());
    // The live run was never taken for abandoned: it ended, and says so.
    assert_eq!(verdicts(s), ["ok"]);
    // Once it is over, the job runs under its new lock.
    let o = s.run(&["run", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(read_lines(&m.ran).len(), 2);
    assert!(!m.overlapped());
    assert_eq!(verdicts(s), ["ok", "ok"]);
}

#[test]
fn a_job_whose_lock_is_renamed_while_it_runs_never_starts_beside_itself() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    crate::sched::known_since(&s, &["x"], crate::sched::before_new_year());
    renamed_while_running(&s, &m, "");
}

#[test]
fn a_job_whose_lock_is_renamed_while_it_runs_on_postgresql_never_starts_beside_itself() {
    let pg = baton_testkit::pg::PgServer::start();
    let s = Sched::new("");
    let m = Marks::new(&s);
    let store = format!(
        "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n[store]\nurl = {:?}\n",
        s.env.state().to_str().unwrap(),
        pg.url()
    );
    s.write(&store);
    s.migrate();
    crate::sched::pg_known_since(&pg, &["x"], crate::sched::before_new_year());
    renamed_while_running(&s, &m, &store);
}

/// The daemon's answer to a `PUT` of job `x` with `lock`.
fn put(d: &Daemon, m: &Marks, lock: &str) -> u16 {
    let body = serde_json::json!({"every": "1s", "lock": lock, "run": m.script()});
    let r = d.request(
        "PUT",
        "/v1/jobs/x",
        &[("Content-Type", "application/json")],
        &body.to_string(),
    );
    assert!(r.status < 300, "{}: {}", r.status, r.body);
    r.status
}

fn alerts(s: &Sched) -> String {
    std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap_or_default()
}

#[test]
fn a_job_whose_lock_is_changed_over_the_api_while_it_runs_never_starts_beside_itself() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    let d = Daemon::start(&s, &[]);
    put(&d, &m, "a");
    eventually("the daemon to start the job", || m.started.exists());
    put(&d, &m, "b");
    // The daemon's clock starts an occurrence every second, now under lock
    // b: each is refused while the run under lock a goes on.
    eventually("a refusal naming the former lock, or a run beside", || {
        m.overlapped() || alerts(&s).contains("runs under its former lock")
    });
    let during = read_lines(&m.ran);
    std::fs::write(&m.go, "").unwrap();
    assert_eq!(
        during.len(),
        1,
        "the job started beside its live run: {during:?}"
    );
    // Its run ends as it ran: ok, never abandoned; later ones run under b.
    eventually("the first run's end, and one more under lock b", || {
        let v = verdicts(&s);
        v.len() >= 2 && v.iter().all(|v| v != "running")
    });
    let v = verdicts(&s);
    assert!(v.iter().all(|v| v == "ok"), "{v:?}\n{}", d.log());
    assert!(!m.overlapped(), "{:?}", read_lines(&m.ran));
    assert_eq!(d.terminate(), Some(0));
}

/// Two configurations on one state directory that disagree on the job's
/// lock (a daemon not reloaded yet beside cron's ticks of the edited file),
/// and no ledger to write: ticks of both at once never run the job beside
/// itself, and its occurrence, started under one lock, is not started
/// again under the other.
#[test]
fn ticks_of_two_configurations_naming_two_locks_run_the_occurrence_once() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    std::fs::write(&m.go, "").unwrap();
    s.write(&yearly(&m, "a", ""));
    crate::sched::known_since(&s, &["x"], crate::sched::before_new_year());
    let other = s.env.path("other.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(s.config())
            .unwrap()
            .replace("lock = \"a\"", "lock = \"b\""),
    )
    .unwrap();
    for round in 0..6 {
        // Lost before every round: only the lock's claims and the job's
        // guard say what ran.
        crate::claims::fresh_ledger(&s);
        crate::claims::ticks_at_once(&s, 8, |i, c| {
            if i % 2 == 1 {
                c.env("BATON_CONFIG", &other);
            }
        });
        let ran = read_lines(&m.ran);
        assert!(!m.overlapped(), "round {round}: {ran:?}");
        assert!(ran.len() <= 1, "round {round}: ran again: {ran:?}");
    }
    // Ticks that could not open the ledger while the others held it ran
    // nothing (no run starts unrecorded): one tick at a time, under either
    // lock, runs the occurrence if no round did, and never again.
    let mut said = String::new();
    for i in 0..4 {
        crate::claims::fresh_ledger(&s);
        let mut c = s.cmd(&["tick"]);
        if i % 2 == 1 {
            c.env("BATON_CONFIG", &other);
        }
        said.push_str(&String::from_utf8_lossy(&c.output().unwrap().stderr));
    }
    assert!(!m.overlapped());
    let alerts =
        std::fs::read_to_string(s.env.state().join("logs").join("alerts.log")).unwrap_or_default();
    let mut records = String::new();
    for dir in ["locks", "logs"] {
        for e in std::fs::read_dir(s.env.state().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            records.push_str(&format!("== {}\n{text}\n", p.display()));
        }
    }
    assert_eq!(
        read_lines(&m.ran).len(),
        1,
        "the ticks said:\n{said}\nalerts:\n{alerts}\n{records}"
    );
}

/// Job `x` runs under lock `a`; the configuration then puts it and job `y`
/// on a new lock `s`. `y` is refused while `x`'s run goes on under `a`, and
/// the refusal names that lock: no lock file was removed, and it says none
/// was. Once `x`'s run has ended, `y` runs.
#[test]
fn a_run_refused_beside_a_mate_moved_to_its_lock_names_the_mates_former_lock() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    crate::sched::known_since(&s, &["x", "y"], crate::sched::before_new_year());
    s.write(&yearly(&m, "a", ""));
    let mut first = first_run(&s, &m);
    let y_ran = s.env.path("y_ran");
    let y = format!(
        "[jobs.y]\nschedule = \"0 0 1 1 *\"\nlock = \"s\"\nrun = \"touch {}\"\n",
        y_ran.display()
    );
    s.write(&format!("{}{y}", yearly(&m, "s", "")));
    let o = run_or_overlap(&s, &m, &mut first, &["run", "y"]);
    let said = stderr(&o);
    assert_eq!(code(&o), 1, "{said}");
    assert!(
        said.contains("under the lock its job had before the configuration changed")
            && said.contains("a.lock"),
        "{said}"
    );
    assert!(!said.contains("removed or replaced"), "{said}");
    assert!(!y_ran.exists(), "y ran beside x: {said}");
    std::fs::write(&m.go, "").unwrap();
    assert!(first.wait().unwrap().success());
    let o = s.run(&["run", "y"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(y_ran.exists());
    assert_eq!(verdicts(&s), ["ok"]);
}

/// A job renamed while it runs is a new job (its name is its identity),
/// but the run of its old name is not hidden: a whole `status` lists it,
/// in the text and the JSON, until it ends; `status` of one job does not.
#[test]
fn a_run_of_a_job_renamed_while_it_ran_is_listed_by_status_until_it_ends() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    s.write(&yearly(&m, "a", ""));
    let mut first = first_run(&s, &m);
    s.write(&yearly(&m, "a", "").replace("[jobs.x]", "[jobs.y]"));
    let st = s.json(&["status", "--json"]);
    let listed = &st["unconfigured_runs"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{st}");
    assert_eq!(listed[0]["job"], "x", "{st}");
    assert_eq!(listed[0]["pid"], first.id(), "{st}");
    let text = s.cmd(&["status"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("of jobs the configuration no longer names") && text.contains("\n  x  run "),
        "{text}"
    );
    let one = s.json(&["status", "y", "--json"]);
    assert!(one.get("unconfigured_runs").is_none(), "{one}");
    // The metrics count it (no `baton_job` series follows it).
    let metrics = stdout(&s.run(&["__metrics"]));
    assert!(
        metrics.contains("\nbaton_unconfigured_runs 1\n"),
        "{metrics}"
    );
    std::fs::write(&m.go, "").unwrap();
    let _ = first.wait().unwrap();
    let st = s.json(&["status", "--json"]);
    assert!(st.get("unconfigured_runs").is_none(), "{st}");
    let metrics = stdout(&s.run(&["__metrics"]));
    assert!(
        metrics.contains("\nbaton_unconfigured_runs 0\n"),
        "{metrics}"
    );
}

/// A job removed from the configuration while it ran, whose supervisor is
/// then killed: its run is gone from `status` (nothing of it is in flight)
/// and `history` still shows it, `abandoned`, with the job named and in the
/// merged history (the job's name was refused as unknown, and the run
/// was in no read command, before).
#[test]
fn a_removed_jobs_run_whose_supervisor_was_killed_stays_in_its_history() {
    let s = Sched::new("");
    let m = Marks::new(&s);
    s.write(&yearly(&m, "a", ""));
    let mut first = first_run(&s, &m);
    s.write(&yearly(&m, "a", "").replace("[jobs.x]", "[jobs.y]"));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(first.id() as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    let _ = first.wait();
    std::fs::write(&m.go, "").unwrap();
    let st = s.json(&["status", "--json"]);
    assert!(st.get("unconfigured_runs").is_none(), "{st}");
    let o = s.run(&["history", "x", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("not in"), "{}", stderr(&o));
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["job"], "x", "{runs}");
    assert_eq!(runs[0]["verdict"], "abandoned", "{runs}");
    let all = s.json(&["history", "--json"]);
    assert!(
        all.as_array().unwrap().iter().any(|r| r["job"] == "x"),
        "{all}"
    );
    let o = s.run(&["history", "x"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("abandoned"), "{}", stdout(&o));
    // A name the ledger never heard of is still refused.
    assert_eq!(code(&s.run(&["history", "nope"])), 2);
}
