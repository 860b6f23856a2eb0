//! `overlap = "replace"`: an occurrence (or a run by hand) that finds its
//! job's run in flight has that run's whole tree stopped, as a lost lease
//! stops it, and starts only once nothing of it runs. Through the real
//! binary: ticks, `baton run`, the daemon, a lock shared with another job,
//! and two state directories sharing a PostgreSQL store.
//!
//! Every run of the job below starts a shell and a grandchild that ignores
//! SIGTERM, both appending lines to one file with their run id, for a few
//! seconds. Before its first line, a run looks in `/proc` for every pid an
//! earlier run wrote down and notes one still alive. So the file tells
//! whether two runs ever overlapped (a run's lines after a later run's
//! start) and whether a replaced tree outlived its stop (an `ALIVE` line).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

use baton_testkit::pg::PgServer;

use crate::daemon::Daemon;
use crate::sched::{Sched, known_this_second};
use crate::support::{Env, baton_on, code, eventually, pause, script, stderr, stdout};

/// The step: `tree.sh OUT PIDS ROUNDS` runs for ROUNDS × 0.2 s.
const TREE: &str = r#"#!/bin/sh
out=$1; pids=$2; rounds=$3
# Each line of $pids: a pid and its start time (field 22 of its stat), so
# that a pid the kernel gave to another process since is not taken for it.
# Both read by the shell itself from /proc/self (a contained step's $$ is
# its own namespace's pid, while /proc is the host's).
if [ -e "$pids" ]; then
  while read -r p born; do
    if [ -r /proc/$p/stat ]; then
      set -- $(cat /proc/$p/stat 2>/dev/null)
      st=$3; now_born=$(eval "echo \${22}")
      [ "$st" = Z ] || [ "$now_born" != "$born" ] || echo "ALIVE $p" >> "$out"
    fi
  done < "$pids"
fi
read -r line < /proc/self/stat
set -- $line
me=$1; born=$(eval "echo \${22}")
echo "$me $born" >> "$pids"
echo "start $BATON_RUN_ID $me" >> "$out"
sh -c 'trap "" TERM
pids=$1; out=$2; rounds=$3
read -r line < /proc/self/stat
set -- $line
p=$1; born=$(eval "echo \${22}")
echo "$p $born" >> "$pids"
i=0
while [ $i -lt "$rounds" ]; do echo "gc $BATON_RUN_ID $p" >> "$out"; sleep 0.2; i=$((i+1)); done' gc "$pids" "$out" "$rounds" &
i=0
while [ $i -lt "$rounds" ]; do echo "sh $BATON_RUN_ID $me" >> "$out"; sleep 0.2; i=$((i+1)); done
wait
"#;

/// Where one scenario's runs write.
struct Tree {
    out: PathBuf,
    pids: PathBuf,
    script: PathBuf,
}

impl Tree {
    fn new(env: &Env) -> Self {
        Self {
            out: env.path("out.txt"),
            pids: env.path("pids.txt"),
            script: script(env, "tree.sh", TREE),
        }
    }

    /// The job's `run`, each run lasting `rounds` × 0.2 s.
    fn run(&self, rounds: u32) -> String {
        format!(
            "{} {} {} {rounds}",
            self.script.display(),
            self.out.display(),
            self.pids.display()
        )
    }

    /// A script that runs the step for `manual` rounds in a run by hand,
    /// and for `scheduled` rounds in any other.
    fn wrapper(&self, env: &Env, manual: u32, scheduled: u32) -> PathBuf {
        script(
            env,
            "wrapper.sh",
            &format!(
                "#!/bin/sh\nn={scheduled}\n[ \"$BATON_OCCURRENCE\" = manual ] && n={manual}\n\
                 exec {} {} {} $n\n",
                self.script.display(),
                self.out.display(),
                self.pids.display()
            ),
        )
    }

    /// Checks the file's story and returns the run ids in the order they
    /// started: no run's tree was alive when a later run started, no run
    /// wrote after a later one started, each run started once.
    fn runs_one_at_a_time(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        assert!(
            !text.contains("ALIVE"),
            "a replaced tree outlived its stop:\n{text}"
        );
        let mut order: Vec<String> = Vec::new();
        let mut over = BTreeSet::new();
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let (what, run) = (words.next().unwrap(), words.next().unwrap().to_owned());
            if what == "start" {
                assert!(!order.contains(&run), "run {run} started twice:\n{text}");
                if let Some(last) = order.last() {
                    over.insert(last.clone());
                }
                order.push(run.clone());
            }
            assert!(
                !over.contains(&run),
                "run {run} wrote after a later run started: {line}\n{text}"
            );
            assert_eq!(order.last(), Some(&run), "a line before its run's start");
        }
        order
    }
}

/// Run id → (occurrence, verdict), from `history --json`.
fn verdicts(history: &serde_json::Value) -> BTreeMap<String, (String, String)> {
    history
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["run_id"].as_str().unwrap().to_owned(),
                (
                    r["occurrence"].as_str().unwrap().to_owned(),
                    r["verdict"].as_str().unwrap_or("running").to_owned(),
                ),
            )
        })
        .collect()
}

/// Checks what the ledger says of the runs the file shows, in order: every
/// one but the last `replaced`, the last `ok` (it ran to its end), and no
/// occurrence run twice. Returns how many were replaced.
fn every_run_but_the_last_replaced(order: &[String], history: &serde_json::Value) -> usize {
    let v = verdicts(history);
    let mut occurrences = BTreeSet::new();
    for (i, run) in order.iter().enumerate() {
        let (occ, verdict) = v
            .get(run)
            .unwrap_or_else(|| panic!("run {run} is not in the history: {history:#}"));
        let want = if i + 1 == order.len() {
            "ok"
        } else {
            "replaced"
        };
        assert_eq!(
            verdict,
            want,
            "run {run} ({i} of {}): {history:#}",
            order.len()
        );
        assert!(
            occ == "manual" || occurrences.insert(occ.clone()),
            "occurrence {occ} ran twice: {history:#}"
        );
    }
    order.len() - 1
}

const JOB: &str = "every = \"2s\"\noverlap = \"replace\"\nkill_grace = \"1s\"";

/// `baton tick` every 500 ms for `rounds` rounds, in the background; the
/// ticks are waited for at the end.
fn ticking(config: &Path, rounds: u32) -> std::thread::JoinHandle<()> {
    let config = config.to_owned();
    std::thread::spawn(move || {
        let mut ticks: Vec<Child> = Vec::new();
        for _ in 0..rounds {
            ticks.push(
                baton_on(&config, &["tick"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
            pause(500);
        }
        for mut t in ticks {
            let _ = t.wait();
        }
    })
}

#[test]
fn each_tick_replaces_the_run_in_flight_once_its_whole_tree_is_gone() {
    let s = Sched::new("");
    let tree = Tree::new(&s.env);
    s.write(&format!("[jobs.r]\n{JOB}\nrun = \"{}\"\n", tree.run(25)));
    known_this_second(&s, &["r"]);
    ticking(&s.config(), 16).join().unwrap();
    let order = tree.runs_one_at_a_time();
    let replaced = every_run_but_the_last_replaced(&order, &s.json(&["history", "r", "--json"]));
    assert!(replaced >= 2, "too few runs replaced: {order:?}");
    // A replaced run is expected: no alert says it, and the job is not
    // failing.
    let st = s.json(&["status", "r", "--json"]);
    assert_eq!(st["jobs"][0]["failing"], false, "{st}");
    let alerts = std::fs::read_to_string(s.env.state().join("logs/alerts.log")).unwrap_or_default();
    assert!(!alerts.contains("replaced"), "{alerts}");
    assert!(
        s.envelope().contains("replaced: occurrence"),
        "{}",
        s.envelope()
    );
    // history and the status page say it.
    let history = stdout(&s.run(&["history", "r"]));
    assert!(history.contains("  replaced  "), "{history}");
    let page = stdout(&s.run(&["__page"]));
    assert!(page.contains("data-kind=\"replaced\""), "{page}");
}

#[test]
fn baton_run_replaces_the_run_in_flight_and_waits_for_its_tree() {
    let s = Sched::new("");
    let tree = Tree::new(&s.env);
    s.write(&format!(
        "[jobs.r]\nschedule = \"0 0 1 1 *\"\noverlap = \"replace\"\nkill_grace = \"1s\"\nrun = \"{}\"\n",
        tree.run(15)
    ));
    let first = start_run(&s, "r");
    eventually("the first run to start", || {
        std::fs::read_to_string(&tree.out).is_ok_and(|t| t.contains("gc "))
    });
    let second = s.run(&["run", "r"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let first = first.wait_with_output().unwrap();
    assert_eq!(
        code(&first),
        0,
        "a replaced run is no failure: {}",
        stderr(&first)
    );
    let order = tree.runs_one_at_a_time();
    assert_eq!(order.len(), 2, "{order:?}");
    every_run_but_the_last_replaced(&order, &s.json(&["history", "r", "--json"]));
    let history = stdout(&s.run(&["history", "r"]));
    assert!(history.contains("replaced"), "{history}");
}

/// `baton run JOB` started, its output piped.
fn start_run(s: &Sched, job: &str) -> Child {
    s.cmd(&["run", job])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The pid of the process named `name` whose parent is `parent`.
fn child_named(parent: u32, name: &str) -> Option<i32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        let (head, rest) = stat.rsplit_once(") ")?;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        let comm = head.split_once(" (")?.1;
        (ppid == parent && comm == name).then(|| e.file_name().to_str()?.parse().ok())?
    })
}

#[test]
fn a_run_whose_command_exited_0_before_the_request_is_not_recorded_replaced() {
    let s = Sched::new("");
    let (started, done) = (s.env.path("started"), s.env.path("done"));
    s.write(&format!(
        "[jobs.r]\nschedule = \"0 0 1 1 *\"\noverlap = \"replace\"\ncontain = true\n\
         run = \"touch {}; while [ ! -e {}.go ]; do sleep 0.05; done; touch {}\"\n",
        started.display(),
        done.display(),
        done.display()
    ));
    let first = start_run(&s, "r");
    eventually("the first run to start", || started.exists());
    let mut init = None;
    eventually("the step's init", || {
        init = child_named(first.id(), "baton-init");
        init.is_some()
    });
    let init = init.unwrap();
    // The init stopped, the command ends 0 on its own and is left for the
    // init to reap: the supervisor has no status yet when the request comes.
    crate::support::signal(init, rustix::process::Signal::STOP);
    std::fs::write(format!("{}.go", done.display()), "").unwrap();
    eventually("the command to end", || done.exists());
    pause(300);
    let second = s.run(&["run", "r"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let first = first.wait_with_output().unwrap();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let history = s.json(&["history", "r", "--json"]);
    let mut said: Vec<String> = verdicts(&history).into_values().map(|(_, v)| v).collect();
    said.sort();
    assert_eq!(
        said,
        ["ok", "ok"],
        "the first run ended 0 before it was asked to stop: {history}"
    );
}

/// A run by hand that asked the run in flight to stop and then gave up
/// without the lock (its supervisor stopped past the TTL: refused `hung`)
/// takes its request back: the run, continued, goes on to its own end,
/// and is never stopped for a run that is not coming.
#[test]
fn a_run_by_hand_that_gives_up_takes_its_request_back() {
    let s = Sched::new("");
    let (started, go) = (s.env.path("started"), s.env.path("go"));
    s.write(&format!(
        "[jobs.r]\nschedule = \"0 0 1 1 *\"\noverlap = \"replace\"\nttl = \"3s\"\n\
         kill_grace = \"1s\"\ntakeover_grace = \"3s\"\n\
         run = \"touch {}; while [ ! -e {} ]; do sleep 0.05; done\"\n",
        started.display(),
        go.display()
    ));
    let first = start_run(&s, "r");
    eventually("the first run to start", || started.exists());
    let supervisor = i32::try_from(first.id()).unwrap();
    crate::support::signal(supervisor, rustix::process::Signal::STOP);
    let second = s.run(&["run", "r"]);
    assert_eq!(code(&second), 1, "{}", stderr(&second));
    assert!(stderr(&second).contains("hung"), "{}", stderr(&second));
    crate::support::signal(supervisor, rustix::process::Signal::CONT);
    // Its watcher looks for a request every second: a request left behind
    // would stop the run well within this.
    pause(3_000);
    std::fs::write(&go, "").unwrap();
    let first = first.wait_with_output().unwrap();
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let history = s.json(&["history", "r", "--json"]);
    let said: Vec<String> = verdicts(&history).into_values().map(|(_, v)| v).collect();
    assert_eq!(said, ["ok"], "the run was stopped for nobody: {history}");
}

#[test]
fn a_run_asked_of_the_daemon_replaces_the_run_in_flight() {
    let s = Sched::new("");
    let tree = Tree::new(&s.env);
    s.write(&format!(
        "[jobs.r]\nschedule = \"0 0 1 1 *\"\noverlap = \"replace\"\nkill_grace = \"1s\"\nrun = \"{}\"\n",
        tree.run(25)
    ));
    let d = Daemon::start(&s, &[]);
    let first = d.post("/v1/jobs/r/run", "");
    assert_eq!(first.status, 202, "{}", first.body);
    let first_fence = first.json()["fence"].as_u64().unwrap();
    eventually("the first run to start", || {
        std::fs::read_to_string(&tree.out).is_ok_and(|t| t.contains("gc "))
    });
    // The job's policy holds for a run asked by hand: no 409 busy, the run
    // in flight is stopped and the new one started under a later fence.
    let second = d.post("/v1/jobs/r/run", "");
    assert_eq!(second.status, 202, "{}", second.body);
    let second_fence = second.json()["fence"].as_u64().unwrap();
    assert!(second_fence > first_fence, "{first_fence} {second_fence}");
    eventually("the second run to end", || {
        s.json(&["history", "r", "--json"])
            .as_array()
            .is_some_and(|h| {
                h.len() == 2
                    && h.iter()
                        .all(|r| r["verdict"].as_str().is_some_and(|v| v != "running"))
            })
    });
    assert_eq!(d.terminate(), Some(0));
    let order = tree.runs_one_at_a_time();
    assert_eq!(order.len(), 2, "{order:?}");
    every_run_but_the_last_replaced(&order, &s.json(&["history", "r", "--json"]));
}

#[test]
fn a_job_sharing_the_lock_is_never_stopped_its_mate_waits_for_it() {
    let s = Sched::new("");
    let long = s.env.path("long.txt");
    let quick = s.env.path("quick.txt");
    s.write(&format!(
        "[jobs.long]\nschedule = \"0 0 1 1 *\"\nlock = \"shared\"\nrun = \"echo start >> {l}; \
         sleep 3; echo end >> {l}\"\n\
         [jobs.quick]\nevery = \"1s\"\noverlap = \"replace\"\nlock = \"shared\"\n\
         run = \"echo ran >> {q}\"\n",
        l = long.display(),
        q = quick.display()
    ));
    known_this_second(&s, &["quick"]);
    let holder = start_run(&s, "long");
    eventually("the long run to start", || long.exists());
    // A run of `quick` by hand finds the lock held by `long`'s run: busy,
    // nothing asked of it.
    let o = s.run(&["run", "quick"]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    // A tick queues quick's occurrence behind it.
    let o = s.run(&["tick"]);
    assert!(code(&o) <= 1, "{}", stderr(&o));
    let holder = holder.wait_with_output().unwrap();
    assert_eq!(code(&holder), 0, "{}", stderr(&holder));
    assert_eq!(std::fs::read_to_string(&long).unwrap(), "start\nend\n");
    let h = s.json(&["history", "long", "--json"]);
    assert_eq!(h[0]["verdict"], "ok", "{h:#}");
    // The holder ran the waiting occurrence after its own run.
    let q = s.json(&["history", "quick", "--json"]);
    assert_eq!(q.as_array().unwrap().len(), 1, "{q:#}");
    assert_eq!(q[0]["verdict"], "ok", "{q:#}");
    assert!(
        q[0]["started"].as_str().unwrap() >= h[0]["finished"].as_str().unwrap(),
        "{q:#} {h:#}"
    );
    assert!(!s.envelope().contains("asked run"), "{}", s.envelope());
}

#[test]
fn the_daemon_replaces_each_run_in_flight_with_the_next_occurrence() {
    let s = Sched::new("");
    let tree = Tree::new(&s.env);
    s.write(&format!("[jobs.r]\n{JOB}\nrun = \"{}\"\n", tree.run(25)));
    let d = Daemon::start(&s, &[]);
    eventually("two runs replaced", || {
        std::fs::read_to_string(&tree.out).is_ok_and(|t| t.matches("start ").count() >= 3)
    });
    assert_eq!(d.terminate(), Some(0));
    let order = tree.runs_one_at_a_time();
    let v = verdicts(&s.json(&["history", "r", "--json"]));
    let replaced = order
        .iter()
        .filter(|r| v.get(*r).is_some_and(|(_, w)| w == "replaced"))
        .count();
    assert!(replaced >= 2, "{order:?} {v:?}");
}

#[test]
fn two_hosts_on_one_store_replace_each_others_runs_and_never_run_two_at_once() {
    let pg = PgServer::start();
    let env = Env::new();
    let tree = Tree::new(&env);
    let job = format!("[jobs.r]\n{JOB}\nrun = \"{}\"\n", tree.run(25));
    let configs = crate::sched::two_hosts_on(&env.path(""), &pg, "", &job);
    crate::sched::pg_known_since(
        &pg,
        &["r"],
        jiff::Timestamp::from_second(baton_testkit::wall_seconds()).unwrap(),
    );
    let tickers: Vec<_> = configs.iter().map(|c| ticking(c, 16)).collect();
    for t in tickers {
        t.join().unwrap();
    }
    let order = tree.runs_one_at_a_time();
    let o = baton_on(&configs[1], &["history", "r", "--json"])
        .output()
        .unwrap();
    let history: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let replaced = every_run_but_the_last_replaced(&order, &history);
    assert!(replaced >= 2, "too few runs replaced: {order:?}");
}

#[test]
fn an_overlap_that_is_no_policy_is_refused_naming_the_choices() {
    let s = Sched::new("[jobs.r]\nevery = \"1m\"\noverlap = \"cancel\"\nrun = \"true\"\n");
    let o = s.run(&["status"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("jobs.r.overlap") && e.contains("\"skip\", \"queue\" or \"replace\""),
        "{e}"
    );
    s.write("[jobs.r]\nevery = \"1m\"\noverlap = \"replace\"\nrun = \"true\"\n");
    let config = stdout(&s.run(&["config"]));
    assert!(config.contains("overlap = \"replace\""), "{config}");
}

#[test]
#[should_panic(expected = "wrote after a later run started")]
fn the_check_catches_a_run_that_writes_beside_a_later_one() {
    let env = Env::new();
    let tree = Tree::new(&env);
    std::fs::write(&tree.out, "start a 1\nsh a 1\nstart b 2\ngc a 3\nsh b 2\n").unwrap();
    tree.runs_one_at_a_time();
}

#[test]
#[should_panic(expected = "outlived its stop")]
fn the_check_catches_a_tree_alive_when_the_next_run_starts() {
    let env = Env::new();
    let tree = Tree::new(&env);
    std::fs::write(&tree.out, "start a 1\nsh a 1\nALIVE 3\nstart b 2\n").unwrap();
    tree.runs_one_at_a_time();
}

#[test]
fn a_backfill_replaces_the_run_in_flight_then_runs_its_range() {
    let s = Sched::new("");
    let tree = Tree::new(&s.env);
    // A run by hand lasts 8 s; each backfilled occurrence 0.6 s.
    let wrapper = tree.wrapper(&s.env, 40, 3);
    s.write(&format!(
        "[jobs.r]\nschedule = \"0 * * * *\"\noverlap = \"replace\"\nkill_grace = \"1s\"\n\
         run = \"{}\"\n",
        wrapper.display()
    ));
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    let from = (now - jiff::SignedDuration::from_hours(2)).to_string();
    let by_hand = start_run(&s, "r");
    eventually("the run by hand to start", || {
        std::fs::read_to_string(&tree.out).is_ok_and(|t| t.contains("gc "))
    });
    let o = s.run(&["backfill", "r", "--from", &from, "--to", &now.to_string()]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let by_hand = by_hand.wait_with_output().unwrap();
    assert_eq!(code(&by_hand), 0, "{}", stderr(&by_hand));
    let order = tree.runs_one_at_a_time();
    assert_eq!(order.len(), 3, "{order:?}");
    let v = verdicts(&s.json(&["history", "r", "--json"]));
    assert_eq!(v[&order[0]], ("manual".to_owned(), "replaced".to_owned()));
    for run in &order[1..] {
        assert_eq!(v[run].1, "ok", "{v:?}");
    }
}

/// A run by hand during a catch-up batch replaces the run in flight only:
/// the holder hands it the lock rather than start the batch's next
/// occurrence (which the run by hand would ask to stop in turn, each
/// started and killed a moment later), and the rest of the batch runs
/// after it, each to its end.
#[test]
fn a_run_by_hand_during_a_catch_up_batch_replaces_only_the_run_in_flight() {
    let s = Sched::new("");
    let tree = Tree::new(&s.env);
    let wrapper = tree.wrapper(&s.env, 5, 15);
    s.write(&format!(
        "[jobs.r]\nschedule = \"* * * * *\"\noverlap = \"replace\"\ncatch_up = \"all\"\n\
         catch_up_window = \"1h\"\nkill_grace = \"1s\"\nrun = \"{}\"\n",
        wrapper.display()
    ));
    let now = baton_lease::Clock::wall(&baton_lease::SystemClock);
    crate::sched::known_since(&s, &["r"], now - jiff::SignedDuration::from_mins(3));
    let tick = s
        .cmd(&["tick"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually("the batch's first run to start", || {
        std::fs::read_to_string(&tree.out).is_ok_and(|t| t.contains("gc "))
    });
    let by_hand = s.run(&["run", "r"]);
    assert_eq!(code(&by_hand), 0, "{}", stderr(&by_hand));
    let tick = tick.wait_with_output().unwrap();
    assert!(code(&tick) <= 1, "{}", stderr(&tick));
    let order = tree.runs_one_at_a_time();
    assert!(order.len() >= 3, "{order:?}");
    let v = verdicts(&s.json(&["history", "r", "--json"]));
    let replaced: Vec<&String> = order.iter().filter(|r| v[*r].1 == "replaced").collect();
    assert_eq!(replaced, [&order[0]], "only the run in flight: {v:?}");
    assert_eq!(
        v[&order[1]],
        ("manual".to_owned(), "ok".to_owned()),
        "{v:?}"
    );
    for run in &order[2..] {
        assert_eq!(v[run].1, "ok", "{v:?}");
    }
}
