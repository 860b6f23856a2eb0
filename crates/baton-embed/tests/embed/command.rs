//! A command job (`Job::command`): each occurrence a `baton __run`
//! process of the real `baton` binary. Two schedulers on one store run
//! each occurrence once, fenced and recorded; a shutdown stops a running
//! command's whole tree (a grandchild included) and records the run
//! `interrupted`; a job with no runner to find is refused at build.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use baton_embed::{BuildError, Job, Scheduler, Store};
use baton_store::Store as _;

use crate::support::{baton_bin, ledger_runs, replica_with};

fn ledger(state: &Path) -> Box<dyn baton_store::ledger::Records> {
    baton_ledger::Files::new(state.to_owned())
        .records(jiff::Timestamp::from_second(baton_testkit::wall_seconds()).unwrap())
        .unwrap()
}

/// Waits (really) for `what` to hold, up to the test kit's patience.
async fn until(what: &str, mut f: impl FnMut() -> bool) {
    let mut waited = Duration::ZERO;
    while !f() {
        assert!(
            waited < baton_testkit::PATIENCE,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        waited += Duration::from_millis(20);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_schedulers_run_each_occurrence_of_a_command_once_under_the_runner() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let sink = dir.path().join("sink");
    let line = format!(
        "echo \"$BATON_OCCURRENCE $BATON_FENCE $BATON_RUN_ID\" >> {}; sleep 0.3",
        sink.display()
    );
    let replica = || {
        Scheduler::builder()
            .store(Store::sqlite(&state))
            .runner(baton_bin())
            .job(Job::cron("cmd", "* * * * * *").command(["sh", "-c", line.as_str()]))
            .build()
            .unwrap()
            .start()
    };
    let (a, b) = (replica(), replica());
    let read = || std::fs::read_to_string(&sink).unwrap_or_default();
    until("four runs of the command", || read().lines().count() >= 4).await;
    a.shutdown(Duration::from_secs(5)).await;
    b.shutdown(Duration::from_secs(5)).await;

    let text = read();
    let mut occurrences = BTreeSet::new();
    let mut fences = Vec::new();
    for l in text.lines() {
        let w: Vec<&str> = l.split(' ').collect();
        assert_eq!(w.len(), 3, "a line of the command: {l:?}");
        assert!(
            occurrences.insert(w[0].to_owned()),
            "occurrence {} ran twice:\n{text}",
            w[0]
        );
        fences.push(w[1].parse::<u64>().unwrap());
    }
    assert!(
        fences.windows(2).all(|f| f[0] < f[1]),
        "fences grow: {fences:?}"
    );
    // Every run the command saw is in the ledger, by its run id, as the
    // runner recorded it.
    let runs = ledger_runs(&mut *ledger(&state), "cmd");
    for l in text.lines() {
        let id = l.rsplit(' ').next().unwrap();
        let (_, verdict) = runs
            .get(id)
            .unwrap_or_else(|| panic!("run {id} in {runs:?}"));
        assert!(
            matches!(verdict.as_deref(), Some("ok" | "interrupted")),
            "{id}: {verdict:?}"
        );
    }
    // The declaration names the command, for `baton status`.
    let declared = ledger(&state).declarations().unwrap();
    assert!(
        declared[0].config.contains("run = [\"sh\", \"-c\""),
        "{declared:?}"
    );
}

/// Whether a process whose command line holds `token` is alive (not a
/// zombie), in any pid namespace this one sees.
fn alive_with(token: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        let dir = e.path();
        let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        !zombie && String::from_utf8_lossy(&cmdline).contains(token)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_stops_a_running_commands_whole_tree_and_records_it_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let started = dir.path().join("started");
    // The command starts a grandchild and waits for it: a stop of the
    // command alone would leave the grandchild running. Its sleep's
    // argument marks it among every process of the machine.
    let token = format!("{}.{}", 100 + std::process::id() % 100, std::process::id());
    let line = format!("sleep {token} & touch {}; wait", started.display());
    let handle = Scheduler::builder()
        .store(Store::sqlite(&state))
        .runner(baton_bin())
        .job(
            Job::cron("long", "* * * * * *")
                .grace(Duration::from_secs(2))
                .command(["sh", "-c", line.as_str()]),
        )
        .build()
        .unwrap()
        .start();
    until("the grandchild", || started.exists() && alive_with(&token)).await;
    handle.shutdown(Duration::from_secs(1)).await;
    // Stopped with its command, and reaped.
    until("the grandchild gone", || !alive_with(&token)).await;
    let runs = ledger_runs(&mut *ledger(&state), "long");
    assert_eq!(runs.len(), 1, "{runs:?}");
    let (_, verdict) = runs.values().next().unwrap();
    assert_eq!(verdict.as_deref(), Some("interrupted"), "{runs:?}");
}

#[test]
fn a_command_job_with_no_runner_is_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-baton-here");
    let e = Scheduler::builder()
        .store(Store::sqlite(dir.path()))
        .runner(&missing)
        .job(Job::cron("cmd", "* * * * *").command(["true"]))
        .build()
        .unwrap_err();
    assert!(matches!(e, BuildError::NoRunner { .. }), "{e}");
    assert!(e.to_string().contains("no-baton-here"), "{e}");
    let e = Scheduler::builder()
        .store(Store::sqlite(dir.path()))
        .job(Job::cron("cmd", "* * * * *").command(Vec::<String>::new()))
        .build()
        .unwrap_err();
    assert!(matches!(e, BuildError::BadCommand { .. }), "{e}");
}

#[test]
fn a_command_jobs_run_outlives_its_service_killed_with_kill_9_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let marks = dir.path().join("marks");
    let line = format!(
        "echo \"start $BATON_RUN_ID\" >> {m}; sleep 2; echo \"end $BATON_RUN_ID\" >> {m}",
        m = marks.display()
    );
    let bin = baton_bin();
    let service = replica_with(
        &format!("sqlite:{}", state.display()),
        &dir.path().join("unused-sink"),
        0,
        120_000,
        2_000,
        &[
            ("REPLICA_COMMAND", line.as_str()),
            ("REPLICA_RUNNER", bin.to_str().unwrap()),
        ],
    );
    let read = || std::fs::read_to_string(&marks).unwrap_or_default();
    crate::support::poll("a run's start", || read().contains("start").then_some(()));
    drop(service); // killed with SIGKILL, and waited for
    let first = read()
        .lines()
        .next()
        .unwrap()
        .strip_prefix("start ")
        .unwrap()
        .to_owned();
    crate::support::poll("that run's end", || {
        read().contains(&format!("end {first}")).then_some(())
    });
    crate::support::poll("that run recorded ok", || {
        let runs = ledger_runs(&mut *ledger(&state), "tick");
        (runs.get(&first).map(|r| r.1.as_deref()) == Some(Some("ok"))).then_some(())
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_jobs_backfill_behind_its_claim_runs_under_its_runner_once() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let sink = dir.path().join("sink");
    let now = baton_testkit::wall_seconds();
    let (past, claimed) = (now - 120, now - 60);
    // The job claimed a later occurrence already (its last run).
    crate::support::claim_ahead(
        &state,
        baton_ledger::Files::new(state.clone()),
        "cmd",
        claimed,
    );
    let when = jiff::Timestamp::from_second(now).unwrap();
    let asked = ledger(&state)
        .request_backfill("cmd", &[past], "ops", when)
        .unwrap();
    assert_eq!(asked, [baton_store::ledger::Requested::Queued]);
    let line = format!("echo \"$BATON_OCCURRENCE\" >> {}", sink.display());
    let handle = Scheduler::builder()
        .store(Store::sqlite(&state))
        .runner(baton_bin())
        .job(Job::cron("cmd", "0 0 1 1 *").command(["sh", "-c", line.as_str()]))
        .build()
        .unwrap()
        .start();
    let read = || std::fs::read_to_string(&sink).unwrap_or_default();
    until("the backfilled occurrence's run", || !read().is_empty()).await;
    let d = ledger(&state).decision("cmd", past).unwrap().unwrap();
    assert_eq!(d.decision, baton_store::ledger::Decision::Started, "{d:?}");
    // Later looks find nothing more to run.
    tokio::time::sleep(Duration::from_secs(3)).await;
    handle.shutdown(Duration::from_secs(5)).await;
    assert_eq!(read().lines().count(), 1, "{}", read());
}
