//! Replicas as separate processes on one SQLite store directory: each
//! occurrence runs once, never two at once, every run is in the ledger;
//! and a replica killed with SIGKILL mid-run leaves later occurrences to
//! the others and its run recorded `abandoned`, as the command line
//! records it.

use baton_store::Store as _;

use crate::support::{check_sink, ledger_runs, poll, read_sink, replica, replica_with, wait_all};

/// The ledger of a store, as a test reads it.
pub type OpenLedger<'a> = &'a dyn Fn() -> Box<dyn baton_store::ledger::Records>;

/// The SQLite ledger in `dir`.
fn ledger(dir: &std::path::Path) -> Box<dyn baton_store::ledger::Records> {
    let now = jiff::Timestamp::from_second(baton_testkit::wall_seconds()).unwrap();
    baton_ledger::Files::new(dir.to_owned())
        .records(now)
        .unwrap()
}

#[test]
fn three_replicas_run_each_occurrence_once_and_record_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = format!("sqlite:{}", state.display());
    three_replicas(&store, dir.path(), &|| ledger(&state));
}

/// Three replicas whose runs (1.5 s) overrun the schedule (every second),
/// with `Overlap::Queue`: the occurrence that meets a run waits and runs
/// right after it, under the same lease, whichever replica holds it; the
/// ones that come while it waits join it. None is missed `busy`, none runs
/// twice, and no two run at once.
#[test]
fn three_replicas_queue_what_meets_an_overrunning_run_and_miss_none() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = format!("sqlite:{}", state.display());
    let sink = dir.path().join("sink");
    let mut replicas: Vec<_> = (0..3)
        .map(|_| {
            replica_with(
                &store,
                &sink,
                1_500,
                6_000,
                2_000,
                &[("REPLICA_OVERLAP", "queue")],
            )
        })
        .collect();
    wait_all(&mut replicas);
    let runs = read_sink(&sink);
    check_sink(&runs);
    assert!(runs.len() >= 2, "too few runs to judge: {runs:?}");
    let from_queue = runs.windows(2).filter(|w| w[0].fence == w[1].fence).count();
    assert!(
        from_queue >= 1,
        "a queued occurrence ran under its holder's lease: {runs:?}"
    );
    let mut l = ledger(&state);
    let busy: Vec<_> = l
        .missed("tick", 100)
        .unwrap()
        .into_iter()
        .filter(|m| m.reason.as_str() == "busy")
        .collect();
    assert!(busy.is_empty(), "nothing meeting a run is missed: {busy:?}");
    let recorded = ledger_runs(&mut *l, "tick");
    for r in &runs {
        assert!(
            recorded.contains_key(&r.run_id),
            "run {} is in the ledger",
            r.run_id
        );
    }
}

#[test]
fn a_replica_killed_mid_run_leaves_later_occurrences_to_another() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = format!("sqlite:{}", state.display());
    killed_mid_run(&store, dir.path(), &|| ledger(&state));
}

/// Three replicas on `store` for five seconds: the sink (in `dir`) sees
/// each occurrence once, no two runs at once, and the ledger every run.
pub fn three_replicas(store: &str, dir: &std::path::Path, ledger: OpenLedger<'_>) {
    let sink = dir.join("sink");
    let mut replicas: Vec<_> = (0..3)
        .map(|_| replica(store, &sink, 300, 5_000, 2_000))
        .collect();
    wait_all(&mut replicas);
    let runs = read_sink(&sink);
    check_sink(&runs);
    assert!(runs.len() >= 3, "too few runs to judge: {runs:?}");
    let recorded = ledger_runs(&mut *ledger(), "tick");
    for r in &runs {
        let (occ, verdict) = recorded
            .get(&r.run_id)
            .unwrap_or_else(|| panic!("run {} is not in the ledger", r.run_id));
        assert_eq!(*occ, Some(r.occurrence));
        // A run the replica's shutdown stopped wrote no end.
        let want = if r.end.is_some() { "ok" } else { "interrupted" };
        assert_eq!(verdict.as_deref(), Some(want), "{r:?}");
    }
    assert_eq!(
        recorded.len(),
        runs.len(),
        "the ledger has no run the sink lacks"
    );
}

/// Two replicas on `store`; the one running the first run is killed with
/// SIGKILL: the other runs later occurrences under higher fences, and the
/// ledger records the killed run `abandoned`.
pub fn killed_mid_run(store: &str, dir: &std::path::Path, ledger: OpenLedger<'_>) {
    let sink = dir.join("sink");
    let mut a = replica(store, &sink, 800, 60_000, 2_000);
    let mut b = replica(store, &sink, 800, 60_000, 2_000);
    // The first run to start: kill its replica while it runs.
    let victim = poll("a first run", || read_sink(&sink).into_iter().next());
    let (killed, survivor) = if victim.pid == a.0.id() {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    assert_eq!(killed.0.id(), victim.pid);
    killed.0.kill().unwrap(); // SIGKILL.
    killed.0.wait().unwrap();
    let survivor_pid = survivor.0.id();
    // The survivor runs two later occurrences.
    let later = poll("two runs of the survivor", || {
        let runs = read_sink(&sink);
        let later: Vec<_> = runs
            .into_iter()
            .filter(|r| {
                r.pid == survivor_pid && r.occurrence > victim.occurrence && r.end.is_some()
            })
            .collect();
        (later.len() >= 2).then_some(later)
    });
    // The survivor's later runs record the killed one abandoned, and their
    // own ends (written to the ledger after the sink's end line).
    let recorded = poll("the runs recorded", || {
        let recorded = ledger_runs(&mut *ledger(), "tick");
        let verdict = |id: &str| recorded.get(id).and_then(|r| r.1.clone());
        let done =
            verdict(&victim.run_id).is_some() && later.iter().all(|r| verdict(&r.run_id).is_some());
        done.then_some(recorded)
    });
    survivor.0.kill().unwrap();
    survivor.0.wait().unwrap();
    let runs = read_sink(&sink);
    check_sink(&runs);
    let dead = runs.iter().find(|r| r.run_id == victim.run_id).unwrap();
    assert_eq!(dead.end, None, "the killed run never ended: {dead:?}");
    assert!(later.iter().all(|r| r.fence > victim.fence));
    assert_eq!(
        recorded[&victim.run_id].1.as_deref(),
        Some("abandoned"),
        "{recorded:?}"
    );
    for r in &later {
        assert_eq!(recorded[&r.run_id].1.as_deref(), Some("ok"), "{r:?}");
    }
}

/// Two replicas that disagree on the job's lock (a rolling deploy that
/// gives the job a `lock`, the old replica still up), with runs (1.5 s)
/// that overrun the schedule (every second): the job's guard keeps them
/// from running it under both locks at once, and a run in flight under
/// the other lock is never recorded `abandoned`.
#[test]
fn replicas_that_disagree_on_a_jobs_lock_never_run_it_twice_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let store = format!("sqlite:{}", state.display());
    let sink = dir.path().join("sink");
    let mut replicas = vec![
        replica(&store, &sink, 1_500, 7_000, 2_000),
        replica_with(
            &store,
            &sink,
            1_500,
            7_000,
            2_000,
            &[("REPLICA_LOCK", "db")],
        ),
    ];
    wait_all(&mut replicas);
    let runs = read_sink(&sink);
    assert!(runs.len() >= 2, "too few runs to judge: {runs:?}");
    let mut by_start = runs.clone();
    by_start.sort_by_key(|r| r.start);
    for pair in by_start.windows(2) {
        if let Some(end) = pair[0].end {
            assert!(end <= pair[1].start, "two runs at once: {pair:?}");
        }
    }
    let mut l = ledger(&state);
    let recorded = ledger_runs(&mut *l, "tick");
    for r in runs.iter().filter(|r| r.end.is_some()) {
        assert_ne!(
            recorded.get(&r.run_id).and_then(|v| v.1.as_deref()),
            Some("abandoned"),
            "run {} ended, yet was recorded abandoned",
            r.run_id
        );
    }
}
