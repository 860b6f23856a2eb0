//! A run the ledger has no end for is shown as it is now: running while its
//! lease names it and its holder may run, `abandoned` as soon as nothing of
//! it can, by every read command, without waiting for the next run under
//! its lock (a year, for a yearly job).

use std::process::Stdio;

use rustix::process::Signal;

use crate::sched::Sched;
use crate::support::{alive, eventually, signal, wait_for_file, write_pid};

fn verdict_of(s: &Sched, job: &str) -> serde_json::Value {
    s.json(&["history", job, "--json"])[0]["verdict"].clone()
}

#[test]
fn a_killed_run_reads_abandoned_at_once_and_a_live_one_running() {
    let s = Sched::new("");
    let pidfile = s.env.path("pid");
    s.write(&format!(
        "[jobs.x]\nschedule = \"0 0 1 1 *\"\nrun = {:?}\n",
        format!("{}; exec sleep 60", write_pid(&pidfile))
    ));
    let mut first = s
        .cmd(&["run", "x"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let job: i32 = wait_for_file(&pidfile).parse().unwrap();
    // While it runs, it is running everywhere.
    assert!(verdict_of(&s, "x").is_null(), "{}", verdict_of(&s, "x"));
    let st = s.json(&["status", "--json"]);
    assert!(st["jobs"][0]["last_run"]["verdict"].is_null(), "{st}");
    assert_eq!(st["jobs"][0]["state"], "running", "{st}");
    signal(i32::try_from(first.id()).unwrap(), Signal::KILL);
    let _ = first.wait();
    eventually("the job to die with its supervisor", || !alive(job));
    // No run has taken the lock since: the ledger still has no end, and
    // every read command says what is true now.
    assert_eq!(verdict_of(&s, "x"), "abandoned");
    let st = s.json(&["status", "--json"]);
    assert_eq!(st["jobs"][0]["last_run"]["verdict"], "abandoned", "{st}");
    assert_ne!(st["jobs"][0]["state"], "running", "{st}");
    let text = crate::support::stdout(&s.run(&["history", "x"]));
    assert!(text.contains("abandoned"), "{text}");
}
