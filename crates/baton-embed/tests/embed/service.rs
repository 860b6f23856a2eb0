//! The example service (`examples/service.rs`: axum, two jobs, PostgreSQL)
//! as three replicas on three simulated hosts sharing one throwaway server:
//! one is paused with SIGSTOP mid-run and one killed with SIGKILL mid-run.
//! Each occurrence runs once, never two runs of a job at once, fences grow,
//! the paused replica's late write is refused by the fence, and the ledger
//! has every run.

use std::collections::BTreeMap;

use baton_store::Store as _;
use baton_testkit::hosts::{self, Host, HostProcess};
use baton_testkit::pg::PgServer;
use rustix::process::{Pid, Signal, kill_process};

use crate::support::{SinkRun, check_sink, example, ledger_runs, poll};

/// One row of `sink_writes`.
#[derive(Debug, Clone)]
struct Write {
    name: String,
    job: String,
    occurrence: i64,
    fence: u64,
    run_id: String,
    what: String,
    at_us: i64,
    accepted: bool,
}

fn writes(server: &PgServer) -> Vec<Write> {
    server
        .sql(
            "SELECT name, job, occurrence, fence, run_id, what, at_us, accepted \
             FROM sink_writes ORDER BY at_us",
        )
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let w: Vec<&str> = l.split('|').collect();
            Write {
                name: w[0].into(),
                job: w[1].into(),
                occurrence: w[2].parse().unwrap(),
                fence: w[3].parse().unwrap(),
                run_id: w[4].into(),
                what: w[5].into(),
                at_us: w[6].parse().unwrap(),
                accepted: w[7] == "t",
            }
        })
        .collect()
}

/// A run of `name` whose start was accepted and that has written nothing
/// since (it is in its work now), started after `after` (µs).
fn running(writes: &[Write], name: &str, after: i64) -> Option<Write> {
    writes
        .iter()
        .filter(|w| w.name == name && w.what == "start" && w.accepted && w.at_us > after)
        .find(|s| {
            !writes
                .iter()
                .any(|w| w.run_id == s.run_id && w.what == "end")
        })
        .cloned()
}

fn signal(p: &HostProcess, s: Signal) {
    let pid = poll("the replica's pid", || p.command_pid());
    let pid = Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    kill_process(pid, s).unwrap();
}

/// The accepted writes as runs: each run's accepted start and end.
fn accepted_runs(writes: &[Write]) -> Vec<SinkRun> {
    let mut runs: BTreeMap<String, SinkRun> = BTreeMap::new();
    for w in writes.iter().filter(|w| w.accepted) {
        if w.what == "start" {
            runs.insert(
                w.run_id.clone(),
                SinkRun {
                    job: w.job.clone(),
                    occurrence: w.occurrence,
                    fence: w.fence,
                    run_id: w.run_id.clone(),
                    start: w.at_us,
                    end: None,
                    pid: 0,
                },
            );
        } else if let Some(r) = runs.get_mut(&w.run_id) {
            r.end = Some(w.at_us);
        }
    }
    runs.into_values().collect()
}

#[test]
fn three_service_replicas_one_killed_and_one_paused_run_each_occurrence_once() {
    assert!(
        hosts::available(),
        "this test needs Linux namespaces (run it as root): unshare --uts --pid --fork \
         --mount-proc failed"
    );
    let server = PgServer::start();
    server.sql(
        "CREATE TABLE sink_fences (job text PRIMARY KEY, fence bigint NOT NULL);
         CREATE TABLE sink_writes (name text, job text, occurrence bigint, fence bigint,
             run_id text, what text, at_us bigint, accepted boolean);",
    );
    let bin = example("service");
    let machines: Vec<Host> = ["h1", "h2", "h3"].into_iter().map(Host::new).collect();
    let mut replicas: Vec<(String, HostProcess)> = machines
        .iter()
        .map(|h| {
            let mut c = h.command(&bin);
            c.env("SERVICE_URL", server.url())
                .env("SERVICE_NAME", h.name())
                .env("SERVICE_HOLD_MS", "600")
                .env("SERVICE_TTL_MS", "2000")
                .env("SERVICE_LIFE_MS", "120000");
            (h.name().to_owned(), c.spawn())
        })
        .collect();
    // Pause one replica in the middle of a run.
    let (paused, stale) = poll("a run to pause", || {
        let w = writes(&server);
        replicas
            .iter()
            .position(|(name, _)| running(&w, name, 0).is_some())
            .map(|i| (i, running(&w, &replicas[i].0, 0).unwrap()))
    });
    signal(&replicas[paused].1, Signal::STOP);
    let paused_name = replicas[paused].0.clone();
    // Kill another in the middle of one of its runs.
    let (killed, dead) = poll("a run to kill", || {
        let w = writes(&server);
        (0..replicas.len())
            .filter(|i| *i != paused)
            .find_map(|i| running(&w, &replicas[i].0, stale.at_us).map(|r| (i, r)))
    });
    signal(&replicas[killed].1, Signal::KILL);
    let survivor = (0..3).find(|i| *i != paused && *i != killed).unwrap();
    let survivor_name = replicas[survivor].0.clone();
    // The survivor takes both jobs over, the paused replica's included,
    // once its lease has expired (TTL and takeover grace).
    poll(
        "the survivor's runs of both jobs after the takeover",
        || {
            let w = writes(&server);
            let later = |job: &str| {
                w.iter()
                    .filter(|x| x.name == survivor_name && x.job == job && x.what == "end")
                    .filter(|x| x.fence > stale.fence.max(dead.fence))
                    .count()
            };
            (later("report") >= 2 && later("cleanup") >= 2).then_some(())
        },
    );
    // The paused replica wakes and finishes its run as if nothing
    // happened: its write is refused by the fence.
    signal(&replicas[paused].1, Signal::CONT);
    let refused = poll("the paused run's late write", || {
        writes(&server)
            .into_iter()
            .find(|w| w.run_id == stale.run_id && w.what == "end")
    });
    assert!(
        !refused.accepted,
        "the paused replica's late write must be refused: {refused:?}"
    );
    assert_eq!(refused.name, paused_name);
    let survivor_runs: Vec<String> = accepted_runs(&writes(&server))
        .into_iter()
        .filter(|r| r.fence > refused.fence)
        .map(|r| r.run_id)
        .collect();
    // Every run the sink accepted is in the ledger, with its occurrence;
    // wait for the ends the survivor is still recording.
    let env = |_: &str| None;
    let target = baton_pg::Target::resolve(&server.url(), None, &env).unwrap();
    let now = jiff::Timestamp::from_second(baton_testkit::wall_seconds()).unwrap();
    let store = baton_pg::Postgres::new(target);
    poll("the survivor's runs recorded", || {
        let mut ledger = store.records(now).unwrap();
        let mut recorded = ledger_runs(&mut *ledger, "report");
        recorded.extend(ledger_runs(&mut *ledger, "cleanup"));
        survivor_runs
            .iter()
            .all(|id| recorded.get(id).is_some_and(|r| r.1.is_some()))
            .then_some(())
    });
    for (_, r) in &mut replicas {
        // The killed replica's host ended with its last process.
        if r.child.try_wait().unwrap().is_none() {
            r.kill_host();
        }
    }
    let w = writes(&server);
    let runs = accepted_runs(&w);
    check_sink(&runs);
    let mut ledger = store.records(now).unwrap();
    let mut recorded = ledger_runs(&mut *ledger, "report");
    recorded.extend(ledger_runs(&mut *ledger, "cleanup"));
    for r in &runs {
        let (occ, _) = recorded
            .get(&r.run_id)
            .unwrap_or_else(|| panic!("run {} is not in the ledger", r.run_id));
        assert_eq!(*occ, Some(r.occurrence), "{r:?}");
    }
    assert!(
        w.iter().any(|x| x.name == survivor_name && x.accepted),
        "the survivor ran"
    );
}
