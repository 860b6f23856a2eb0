//! `max_concurrent = N`: up to N runs of a job at once, each under a slot
//! of its lock (`BATON_SLOT`) with its own fence, never N + 1, and each
//! occurrence still once. Through the real binary: the daemon, runs by
//! hand, a kill -9 of a slot's holder, `status`, and two state
//! directories sharing a PostgreSQL store.
//!
//! Every run blocks on a gate file, so the slots fill and stay full for as
//! long as the test looks: nothing depends on how fast the machine is. The
//! job counts its own concurrent runs under `flock`, and records the most
//! it ever saw.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use baton_testkit::{eventually, pg::PgServer};

use crate::daemon::Daemon;
use crate::sched::Sched;
use crate::support::{baton_on, code, pause, stderr, stdout};

/// A job's command: counts itself in under `DIR/count.lock`, records
/// `OCCURRENCE SLOT FENCE PID` in `DIR/starts`, waits for `DIR/go`, counts
/// itself out.
fn gated(dir: &Path) -> String {
    let d = dir.display();
    format!(
        "flock {d}/count.lock sh -c 'n=$(( $(cat {d}/count 2>/dev/null || echo 0) + 1 )); \
         echo $n > {d}/count; m=$(cat {d}/max 2>/dev/null || echo 0); \
         if [ $n -gt $m ]; then echo $n > {d}/max; fi; \
         echo \"$BATON_OCCURRENCE $BATON_SLOT $BATON_FENCE $$\" >> {d}/starts'; \
         while [ ! -e {d}/go ]; do sleep 0.1; done; \
         flock {d}/count.lock sh -c 'echo $(( $(cat {d}/count) - 1 )) > {d}/count'"
    )
}

/// Each line of `DIR/starts`: occurrence, slot, fence.
fn starts(dir: &Path) -> Vec<(String, u32, u64)> {
    std::fs::read_to_string(dir.join("starts"))
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (
                w[0].to_owned(),
                w[1].parse().unwrap(),
                w[2].parse().unwrap(),
            )
        })
        .collect()
}

fn number(dir: &Path, name: &str) -> i64 {
    std::fs::read_to_string(dir.join(name))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Scheduled occurrences ran at most once each.
fn each_once(runs: &[(String, u32, u64)]) {
    let mut seen = BTreeSet::new();
    for (occ, _, _) in runs.iter().filter(|(o, _, _)| o != "manual") {
        assert!(seen.insert(occ.clone()), "{occ} ran twice: {runs:?}");
    }
}

#[test]
fn the_daemon_runs_up_to_n_at_once_each_in_its_own_slot() {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    s.write(&format!(
        "[jobs.crunch]\nschedule = \"* * * * * *\"\nmax_concurrent = 3\nrun = \"{}\"\n",
        gated(&dir).replace('\\', "\\\\").replace('"', "\\\"")
    ));
    let o = s.run(&["config", "--json"]);
    assert!(stdout(&o).contains("max_concurrent"), "{}", stdout(&o));
    let d = Daemon::start(&s, &[]);
    eventually("three runs in flight", || starts(&dir).len() >= 3);
    // The slots are full: later occurrences are missed `busy`.
    eventually("two occurrences missed while the slots are full", || {
        let v = s.json(&["status", "crunch", "--json"]);
        v["jobs"][0]["missed"]["by_reason"]["busy"]
            .as_u64()
            .unwrap_or(0)
            >= 2
    });
    let v = s.json(&["status", "crunch", "--json"]);
    let job = &v["jobs"][0];
    assert_eq!(job["max_concurrent"], 3, "{v}");
    let holders = job["holders"].as_array().unwrap();
    let slots: BTreeSet<u64> = holders
        .iter()
        .map(|h| h["slot"].as_u64().unwrap())
        .collect();
    assert_eq!(slots, BTreeSet::from([1, 2, 3]), "{v}");
    assert!(holders.iter().all(|h| h["verdict"] == "live"), "{v}");
    let text = stdout(&s.run(&["status", "crunch"]));
    assert!(text.contains("3 of 3 held"), "{text}");
    assert!(text.contains("slot 3: live"), "{text}");
    // Each slot is a lock `baton lock` shows by its name.
    let config = s.config();
    let o = s.run(&[
        "lock",
        "show",
        "--config",
        config.to_str().unwrap(),
        "crunch@3",
    ]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("crunch@3"), "{}", stdout(&o));
    let runs = starts(&dir);
    assert_eq!(runs.len(), 3, "a fourth run started: {runs:?}");
    let used: BTreeSet<u32> = runs.iter().map(|r| r.1).collect();
    assert_eq!(used, BTreeSet::from([1, 2, 3]), "{runs:?}");
    std::fs::write(dir.join("go"), "").unwrap();
    eventually("the runs to end", || {
        let v = s.json(&["status", "crunch", "--json"]);
        v["jobs"][0]["last_run"]["verdict"] == "ok"
    });
    pause(2_500);
    drop(d);
    each_once(&starts(&dir));
    assert_eq!(number(&dir, "max"), 3, "never more than 3, and 3 reached");
}

#[test]
fn a_full_set_of_slots_refuses_and_a_killed_holder_s_slot_is_taken_over() {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    s.write(&format!(
        "[jobs.crunch]\nschedule = \"0 3 * * *\"\nmax_concurrent = 2\nrun = \"{}\"\n",
        gated(&dir).replace('\\', "\\\\").replace('"', "\\\"")
    ));
    let spawn = || {
        let mut c = s.cmd(&["run", "crunch"]);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        // Its own process group, so that the whole tree can be killed.
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c.spawn().unwrap()
    };
    let mut first = spawn();
    eventually("the first run", || starts(&dir).len() == 1);
    let mut second = spawn();
    eventually("the second run", || starts(&dir).len() == 2);
    let third = s.run(&["run", "crunch"]);
    assert_ne!(code(&third), 0, "a third run started beside two");
    assert!(
        stderr(&third).contains("all 2 slots are held"),
        "{}",
        stderr(&third)
    );
    assert_eq!(starts(&dir).len(), 2);
    // The holder it names is named in its slot, as `status` shows it.
    let refused = s.json(&["run", "crunch", "--json"]);
    let named = &refused["holder"];
    let v = s.json(&["status", "crunch", "--json"]);
    let holders = v["jobs"][0]["holders"].as_array().unwrap();
    let shown = holders.iter().find(|h| h["run_id"] == named["run"]);
    assert_eq!(
        shown.map(|h| &h["slot"]),
        Some(&named["slot"]),
        "{refused} {v}"
    );
    assert_eq!(starts(&dir).len(), 2);
    // kill -9 the first run's whole tree: its slot's holder is provably
    // dead, and the next run takes that slot over.
    let slot_of_first = starts(&dir)[0].1;
    let pgid = i32::try_from(first.id()).unwrap();
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{pgid}")])
        .status();
    let _ = first.wait();
    flock_reset(&dir);
    // The killed run's step dies with its supervisor, but the kernel may
    // take a moment to tear its namespace down on a loaded machine: until
    // it has, that slot's job still runs, and a run is refused (fail
    // closed). Try again until one takes the slot.
    let mut fourth = spawn();
    eventually("a run in the freed slot", || {
        if starts(&dir).len() == 3 {
            return true;
        }
        if fourth.try_wait().unwrap().is_some() {
            fourth = spawn();
        }
        false
    });
    let runs = starts(&dir);
    assert_eq!(runs[2].1, slot_of_first, "{runs:?}");
    assert!(runs[2].2 > runs[0].2, "the slot's fence grows: {runs:?}");
    let v = s.json(&["status", "crunch", "--json"]);
    assert_eq!(v["jobs"][0]["holders"].as_array().unwrap().len(), 2, "{v}");
    std::fs::write(dir.join("go"), "").unwrap();
    assert!(second.wait().unwrap().success());
    assert!(fourth.wait().unwrap().success());
    let h = s.json(&["history", "crunch", "--json"]);
    let verdicts: Vec<&str> = h
        .as_array()
        .unwrap_or_else(|| panic!("{h}"))
        .iter()
        .map(|r| r["verdict"].as_str().unwrap_or("running"))
        .collect();
    assert_eq!(
        verdicts.iter().filter(|v| **v == "ok").count(),
        2,
        "{verdicts:?}"
    );
    assert!(verdicts.contains(&"abandoned"), "{verdicts:?}");
    assert!(number(&dir, "max") <= 2);
}

/// A job with two slots whose lock is renamed while a run holds the old
/// lock's first slot and a later run (which took the job's guard last) has
/// ended in its second: the guard names that free slot only, yet the job
/// must not run under the new lock beside the run still in flight.
#[test]
fn a_lock_renamed_while_an_earlier_slot_runs_waits_for_it() {
    renamed_while_an_earlier_slot_runs("");
}

/// As above, on a PostgreSQL store.
#[test]
fn on_a_store_a_lock_renamed_while_an_earlier_slot_runs_waits_for_it() {
    let pg = PgServer::start();
    renamed_while_an_earlier_slot_runs(&format!("[store]\nurl = {:?}\n", pg.url()));
}

fn renamed_while_an_earlier_slot_runs(store: &str) {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    let config = |lock: &str, run: &str| {
        format!(
            "{store}[jobs.crunch]\nschedule = \"0 3 * * *\"\nlock = \"{lock}\"\nmax_concurrent = 2\n\
             run = \"{}\"\n",
            run.replace('\\', "\\\\").replace('"', "\\\"")
        )
    };
    s.write(&config("a", &gated(&dir)));
    if !store.is_empty() {
        let o = s.run(&["store", "migrate"]);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let mut first = s
        .cmd(&["run", "crunch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the first run", || starts(&dir).len() == 1);
    // A quick run in the second slot: it takes the guard, and ends.
    s.write(&config("a", "true"));
    let o = s.run(&["run", "crunch"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    s.write(&config("b", &gated(&dir)));
    let mut renamed = s
        .cmd(&["run", "crunch"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    eventually("the run under the new lock to end or start", || {
        renamed.try_wait().unwrap().is_some() || starts(&dir).len() > 1
    });
    assert_eq!(
        starts(&dir).len(),
        1,
        "a run under the new lock started beside the old one: {:?}",
        starts(&dir)
    );
    assert!(!renamed.wait().unwrap().success());
    std::fs::write(dir.join("go"), "").unwrap();
    assert!(first.wait().unwrap().success());
    let o = s.run(&["run", "crunch"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(starts(&dir).len(), 2, "{:?}", starts(&dir));
    assert!(number(&dir, "max") <= 1);
}

/// The killed run never counted itself out: the count is what the live
/// runs are.
fn flock_reset(dir: &Path) {
    std::fs::write(dir.join("count"), "1\n").unwrap();
}

#[test]
fn a_job_sharing_its_lock_may_not_have_slots() {
    let s = Sched::new(
        "[jobs.a]\nschedule = \"0 3 * * *\"\nlock = \"db\"\nmax_concurrent = 2\nrun = \"true\"\n\
         [jobs.b]\nschedule = \"0 4 * * *\"\nlock = \"db\"\nrun = \"true\"\n",
    );
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("max_concurrent"), "{}", stderr(&o));
    assert!(stderr(&o).contains("shares the lock"), "{}", stderr(&o));
    s.write(
        "[jobs.a]\nschedule = \"0 3 * * *\"\nmax_concurrent = 2\noverlap = \"replace\"\n\
         run = \"true\"\n",
    );
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("replace"), "{}", stderr(&o));
    s.write("[jobs.a]\nschedule = \"0 3 * * *\"\nmax_concurrent = 0\nrun = \"true\"\n");
    let o = s.run(&["config"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("max_concurrent"), "{}", stderr(&o));
}

#[test]
fn two_hosts_on_one_store_share_the_slots() {
    let pg = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let job_dir = dir.path().join("job");
    std::fs::create_dir_all(&job_dir).unwrap();
    let job = format!(
        "[jobs.crunch]\nschedule = \"* * * * * *\"\nmax_concurrent = 2\nrun = \"{}\"\n",
        gated(&job_dir).replace('\\', "\\\\").replace('"', "\\\"")
    );
    let configs = crate::sched::two_hosts_on(dir.path(), &pg, "", &job);
    // Both hosts tick every half second; a tick waits for the runs it
    // started, so each is started and left to end by itself.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let tickers: Vec<_> = configs
        .iter()
        .map(|config| {
            let (config, stop) = (config.clone(), std::sync::Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut ticks = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    if let Ok(c) = baton_on(&config, &["tick"])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                    {
                        ticks.push(c);
                    }
                    pause(500);
                }
                for mut t in ticks {
                    let _ = t.wait();
                }
            })
        })
        .collect();
    eventually("two runs in flight", || starts(&job_dir).len() >= 2);
    eventually("occurrences missed while both slots are held", || {
        let o = baton_on(&configs[1], &["status", "crunch", "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        v["jobs"][0]["missed"]["by_reason"]["busy"]
            .as_u64()
            .unwrap_or(0)
            >= 3
    });
    assert_eq!(starts(&job_dir).len(), 2, "{:?}", starts(&job_dir));
    let o = baton_on(&configs[1], &["status", "crunch", "--json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["holders"].as_array().unwrap().len(), 2, "{v}");
    std::fs::write(job_dir.join("go"), "").unwrap();
    pause(3_000);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for t in tickers {
        t.join().unwrap();
    }
    eventually("every run to end", || number(&job_dir, "count") == 0);
    each_once(&starts(&job_dir));
    assert_eq!(
        number(&job_dir, "max"),
        2,
        "never more than 2, and 2 reached"
    );
}

#[test]
fn with_every_slot_held_an_occurrence_queues_and_runs_once_a_slot_frees() {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    s.write(&format!(
        "[jobs.crunch]\nschedule = \"* * * * * *\"\nmax_concurrent = 2\n\
         overlap = \"queue\"\nrun = \"{}\"\n",
        gated(&dir).replace('\\', "\\\\").replace('"', "\\\"")
    ));
    let d = Daemon::start(&s, &[]);
    eventually("two runs in flight", || starts(&dir).len() >= 2);
    eventually("an occurrence waiting", || {
        let v = s.json(&["status", "crunch", "--json"]);
        !v["jobs"][0]["queued"].as_array().unwrap().is_empty()
    });
    assert_eq!(starts(&dir).len(), 2, "{:?}", starts(&dir));
    std::fs::write(dir.join("go"), "").unwrap();
    eventually("the queued occurrence to run", || starts(&dir).len() >= 3);
    pause(2_500);
    drop(d);
    each_once(&starts(&dir));
    assert_eq!(number(&dir, "max"), 2, "never more than 2, and 2 reached");
    // No occurrence was missed: each waited its turn. (A daemon woken late
    // may record an older occurrence as superseded by the next, the one
    // miss the machine's speed decides.)
    let v = s.json(&["status", "crunch", "--json"]);
    let by_reason = v["jobs"][0]["missed"]["by_reason"]
        .as_object()
        .unwrap_or_else(|| panic!("{v}"));
    for (reason, n) in by_reason {
        assert!(reason == "superseded" || n == 0, "{v}");
    }
}

/// `max_concurrent` lowered while runs hold slots above the new limit:
/// those runs go on to their ends, `status` shows them running in their
/// slots, and no run starts beside them past the limit (refused as busy,
/// saying so, with nothing started or recorded); once they end, runs start
/// again in the job's own slots.
#[test]
fn a_lowered_max_concurrent_counts_the_runs_left_above_it() {
    lowered_max_concurrent(&Sched::new(""), "");
}

/// [`a_lowered_max_concurrent_counts_the_runs_left_above_it`] on the store
/// `header` configures (a `[store]` section, or nothing for the files).
pub(crate) fn lowered_max_concurrent(s: &Sched, header: &str) {
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    let job = |n: u32| {
        format!(
            "{header}[jobs.low]\nschedule = \"0 3 * * *\"\nmax_concurrent = {n}\nrun = \"echo \
             $BATON_SLOT >> {d}/starts; while [ ! -e {d}/go$BATON_SLOT ]; do sleep 0.1; done\"\n",
            d = dir.display()
        )
    };
    let lines = || {
        std::fs::read_to_string(dir.join("starts"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    s.write(&job(2));
    let spawn = || {
        let mut c = s.cmd(&["run", "low"]);
        c.stdout(Stdio::null()).stderr(Stdio::null());
        c.spawn().unwrap()
    };
    let mut first = spawn();
    eventually("the run in slot 1", || lines() == ["1"]);
    let mut second = spawn();
    eventually("the run in slot 2", || lines() == ["1", "2"]);
    std::fs::write(dir.join("go1"), "").unwrap();
    assert!(first.wait().unwrap().success());
    s.write(&job(1));
    let refused = s.run(&["run", "low"]);
    assert_ne!(code(&refused), 0, "a run started beside slot 2's");
    let err = stderr(&refused);
    assert!(err.contains("still holds slot 2"), "{err}");
    assert!(err.contains("max_concurrent = 1"), "{err}");
    assert!(!err.contains("removed or replaced"), "{err}");
    let refused = s.json(&["run", "low", "--json"]);
    assert_eq!(refused["holder"]["slot"], 2, "{refused}");
    assert_eq!(lines(), ["1", "2"], "a run started past the limit");
    let v = s.json(&["status", "low", "--json"]);
    let job = &v["jobs"][0];
    assert_eq!(job["state"], "running", "{v}");
    let holders = job["holders"].as_array().unwrap();
    assert_eq!(holders.len(), 1, "{v}");
    assert_eq!(holders[0]["slot"], 2, "{v}");
    let text = stdout(&s.run(&["status", "low"]));
    assert!(text.contains("slot 2"), "{text}");
    std::fs::write(dir.join("go2"), "").unwrap();
    assert!(second.wait().unwrap().success());
    let again = s.run(&["run", "low"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(lines(), ["1", "2", "1"]);
    let h = s.json(&["history", "low", "--json"]);
    let verdicts: Vec<&str> = h
        .as_array()
        .unwrap_or_else(|| panic!("{h}"))
        .iter()
        .map(|r| r["verdict"].as_str().unwrap_or("running"))
        .collect();
    assert_eq!(verdicts, ["ok", "ok", "ok"], "{h}");
}

/// `catch_up = "all"` with slots: a tick that finds one new occurrence
/// while a catch-up batch still waits in the queue puts it behind the
/// batch and drains the queue in its free slot. Started ahead of the
/// batch, its claim passed theirs, and the holder draining the batch
/// found every older occurrence claimed: they were neither run nor missed.
#[test]
fn a_new_occurrence_waits_behind_a_catch_up_batch_in_another_slot() {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    s.write(&format!(
        "[jobs.crunch]\nevery = \"5s\"\nmax_concurrent = 3\ncatch_up = \"all\"\n\
         catch_up_window = \"10m\"\nrun = \"{}\"\n",
        gated(&dir).replace('\\', "\\\\").replace('"', "\\\"")
    ));
    let five = |t: i64| t / 5 * 5;
    let now = || baton_lease::Clock::wall(&baton_lease::SystemClock).as_second();
    // At the start of a period, so that the batch's tick decides this
    // period's occurrence and no later one.
    let before = five(now());
    while five(now()) == before {
        pause(50);
    }
    let decided = five(now());
    // Known since half a minute ago: six occurrences to catch up.
    let seen = jiff::Timestamp::from_second(decided - 29).unwrap();
    crate::sched::known_since(&s, &["crunch"], seen);
    let background = |s: &Sched| {
        s.cmd(&["tick"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut batch = background(&s);
    eventually("the batch's first run", || !starts(&dir).is_empty());
    // The next occurrence, alone: due once its second comes.
    while five(now()) == decided {
        pause(50);
    }
    let mut next = background(&s);
    eventually("the new occurrence's tick to start a run or end", || {
        starts(&dir).len() >= 2 || next.try_wait().unwrap().is_some()
    });
    std::fs::write(dir.join("go"), "").unwrap();
    baton_testkit::wait_for_exit(&mut batch, "the batch's tick");
    baton_testkit::wait_for_exit(&mut next, "the new occurrence's tick");
    let runs = starts(&dir);
    each_once(&runs);
    let ran: BTreeSet<i64> = runs
        .iter()
        .map(|(o, _, _)| o.parse::<jiff::Timestamp>().unwrap().as_second())
        .collect();
    // Every occurrence from the first after the sighting to the last that
    // ran, the whole batch among them, ran (a machine slow enough to let a
    // tick see a later period too only makes that range longer).
    let last = ran.iter().max().copied().unwrap_or_default().max(decided);
    let due: BTreeSet<i64> = (seen.as_second() + 1..=last)
        .filter(|t| t % 5 == 0)
        .collect();
    assert_eq!(ran, due, "every occurrence up to the last ran: {runs:?}");
    let v = s.json(&["status", "crunch", "--json"]);
    assert_eq!(v["jobs"][0]["missed"]["total"], 0, "{v}");
}

/// Three backfills of one range at once, each in a slot of its own: each
/// occurrence runs once, and each backfill reports the ones another ran
/// with the ledger's word and run id, not as `not-run` (each said so,
/// with no reason, before).
#[test]
fn concurrent_backfills_report_what_the_others_ran() {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    s.write(&format!(
        "[jobs.crunch]\nevery = \"1h\"\nmax_concurrent = 3\nrun = \"{}\"\n",
        gated(&dir).replace('\\', "\\\\").replace('"', "\\\"")
    ));
    let hour = baton_lease::Clock::wall(&baton_lease::SystemClock).as_second() / 3600 * 3600;
    let at = |h: i64| {
        jiff::Timestamp::from_second(hour - h * 3600)
            .unwrap()
            .to_string()
    };
    let (from, to) = (at(3), at(1));
    let backfills: Vec<_> = (0..3)
        .map(|_| {
            s.cmd(&["backfill", "crunch", "--from", &from, "--to", &to, "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Each backfill holds a slot with the first occurrence free when it
    // looked: three runs, one per occurrence.
    eventually("three runs, one in each slot", || starts(&dir).len() >= 3);
    std::fs::write(dir.join("go"), "").unwrap();
    let mut ran = BTreeSet::new();
    let mut total = 0;
    for b in backfills {
        let o = b.wait_with_output().unwrap();
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["not_run"], 0, "{v}");
        assert_eq!(v["occurrences"].as_array().unwrap().len(), 3, "{v}");
        assert_eq!(
            v["ran"].as_u64().unwrap() + v["already"].as_u64().unwrap(),
            3,
            "{v}"
        );
        total += v["ran"].as_u64().unwrap();
        for o in v["occurrences"].as_array().unwrap() {
            let action = o["action"].as_str().unwrap();
            assert!(["ran", "started", "claimed"].contains(&action), "{v}");
            if action != "claimed" {
                assert!(o["run_id"].is_string(), "{v}");
            }
            if action == "ran" {
                assert!(
                    ran.insert(o["occurrence"].as_str().unwrap().to_owned()),
                    "{v}"
                );
            }
        }
    }
    assert_eq!(total, 3);
    let runs = starts(&dir);
    assert_eq!(runs.len(), 3, "{runs:?}");
    each_once(&runs);
}

/// Two runs side by side in two slots write to one dated log: each line is
/// tagged with its slot, and the job's page shows the last run's own lines
/// only (it showed the other slot's run's lines among them before).
#[test]
fn the_job_page_shows_the_last_runs_own_lines_beside_another_slots() {
    let s = Sched::new("");
    let dir = s.env.path("job");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display();
    s.write(&format!(
        "[jobs.crunch]\nschedule = \"0 3 1 1 *\"\nmax_concurrent = 2\nrun = \"echo \
         begin-$BATON_SLOT; touch {d}/in-$BATON_SLOT; while [ ! -e {d}/go-$BATON_SLOT ]; do \
         sleep 0.05; done; echo end-$BATON_SLOT\"\n"
    ));
    let by_hand = || {
        s.cmd(&["run", "crunch"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut first = by_hand();
    eventually("the first run", || dir.join("in-1").exists());
    let mut second = by_hand();
    eventually("the second run", || dir.join("in-2").exists());
    // The first ends while the second runs: its lines and frames land
    // inside the second's.
    std::fs::write(dir.join("go-1"), "").unwrap();
    baton_testkit::wait_for_exit(&mut first, "the first run");
    std::fs::write(dir.join("go-2"), "").unwrap();
    baton_testkit::wait_for_exit(&mut second, "the second run");
    let logs = s.env.state().join("logs");
    let log = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with("crunch_")
        })
        .unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    for n in [1, 2] {
        assert!(text.contains(&format!("[slot {n}] begin-{n}\n")), "{text}");
        assert!(text.contains(&format!("[slot {n}] end-{n}\n")), "{text}");
    }
    let o = s.run(&["__page", "--job", "crunch"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let page = stdout(&o);
    let log = &page[page.find("Last log").expect("the page's log panel")..];
    assert!(log.contains("begin-2") && log.contains("end-2"), "{log}");
    assert!(!log.contains("begin-1") && !log.contains("end-1"), "{log}");
}
