//! Many writer processes on one ledger at once: nothing lost, no one fails.

use baton_store::ledger::Records;
use std::path::Path;

use baton_ledger::Ledger;
use baton_store::ledger::{Begun, Miss, Missed, NewAlert, NewRun, Queued};
use baton_store::words::{AlertKind, AttemptOutcome, MissReason, RunVerdict};
use jiff::SignedDuration;

use crate::support::{self, Scene, at, attempt, finished, range, scheduled};

const WRITERS: usize = 20;
const RUNS: i64 = 50;

/// Run `n` of a writer fails when this holds: runs 0, 7, …, 49, so each job
/// ends on a failure that follows a success.
fn fails(n: i64) -> bool {
    n % 7 == 0
}

/// When run `n` of writer `w` starts: its own minute, plus `w` µs.
fn start(w: usize, n: i64) -> jiff::Timestamp {
    at(60 * n) + SignedDuration::from_micros(w as i64)
}

/// One writer: 50 runs of its own job, each with one attempt, a failure
/// every 7th run (with an alert); per run, a race with every other writer to
/// miss one shared occurrence, and another to start one queued occurrence of
/// the queue job; and per run a failed manual run of the common job, whose
/// counters every writer raises at once.
pub fn writer_child() {
    let dir = support::env("STATE_DIR");
    let w: usize = support::env("INDEX").parse().unwrap();
    let out = support::env("OUT");
    support::wait_for_go();

    let dir = Path::new(&dir);
    let mut ledger = Ledger::open(dir, at(0)).unwrap();
    let job = format!("job-{w:02}");
    ledger.see_jobs(&[&job, "shared", "common"], at(0)).unwrap();
    let mut won = 0;
    let mut started = 0;
    for n in 0..RUNS {
        let run = NewRun {
            started: start(w, n),
            ..scheduled(&job, &format!("{w:08x}{n:08x}"), 60 * n)
        };
        assert_eq!(ledger.begin_run(&run).unwrap(), Begun::Started);
        let ok = !fails(n);
        let word = if ok {
            AttemptOutcome::Ok
        } else {
            AttemptOutcome::Failed
        };
        ledger
            .record_attempt(&attempt(&run, 1, "work", word, run.started))
            .unwrap();
        ledger.finish_run(&finished(&run, 30, ok), 1_000).unwrap();
        if !ok {
            ledger
                .record_alert(&NewAlert {
                    time: run.started,
                    job: Some(job.clone()),
                    kind: AlertKind::StepFailed,
                    run_id: Some(run.run_id.clone()),
                    occurrence: run.occurrence,
                    message: format!("{job} failed"),
                    json: "{}".into(),
                })
                .unwrap();
        }
        let tag = format!("writer {w}");
        let m = Miss {
            detail: Some(&tag),
            ..range("shared", MissReason::Busy, 60 * n, 60 * n)
        };
        match ledger.miss(&m, run.started).unwrap() {
            Missed::Recorded => won += 1,
            Missed::Moved => {}
            Missed::Extended => panic!("no streak was asked for"),
        }
        let queued = NewRun {
            run_id: format!("q{w:07x}{n:08x}"),
            job: "queue".into(),
            ..run.clone()
        };
        if ledger.begin_run(&queued).unwrap() == Begun::Started {
            started += 1;
            ledger
                .finish_run(&finished(&queued, 30, true), 1_000_000)
                .unwrap();
        }
        let common = NewRun {
            run_id: format!("c{w:07x}{n:08x}"),
            job: "common".into(),
            occurrence: None,
            ..run.clone()
        };
        ledger.begin_run(&common).unwrap();
        ledger
            .record_attempt(&attempt(
                &common,
                1,
                "together",
                AttemptOutcome::Failed,
                run.started,
            ))
            .unwrap();
        ledger
            .finish_run(&finished(&common, 30, false), 1_000_000)
            .unwrap();
    }
    assert!(ledger.take_recovered().is_empty());
    std::fs::write(out, format!("{won} {started}")).unwrap();
}

#[test]
fn many_writer_processes_lose_nothing() {
    let scene = Scene::new();
    let waiting: Vec<i64> = (0..RUNS).map(|n| at(60 * n).as_second()).collect();
    assert_eq!(
        scene
            .open()
            .enqueue("queue", &waiting, false, at(0))
            .unwrap(),
        Queued::Queued
    );
    let outs = support::run_children(&scene, "writer", WRITERS);

    let (mut won, mut started) = (0, 0);
    for out in outs {
        let (w_won, w_started) = out.split_once(' ').unwrap();
        won += w_won.parse::<usize>().unwrap();
        started += w_started.parse::<usize>().unwrap();
    }
    // Each shared occurrence was missed by exactly one writer, and each
    // queued occurrence started by exactly one.
    assert_eq!(won, RUNS as usize);
    assert_eq!(started, RUNS as usize);

    let mut ledger = scene.open();
    assert!(ledger.take_recovered().is_empty());
    let failures = (0..RUNS).filter(|n| fails(*n)).count();
    let mut total = 0;
    for w in 0..WRITERS {
        let job = format!("job-{w:02}");
        let history = ledger.history(&job, 1_000).unwrap();
        assert_eq!(history.len(), RUNS as usize, "{job}");
        total += history.len();
        for (i, run) in history.iter().rev().enumerate() {
            let n = i as i64;
            assert_eq!(run.run_id, format!("{w:08x}{n:08x}"));
            assert_eq!(run.started, start(w, n));
            assert_eq!(
                run.verdict,
                Some(if fails(n) {
                    RunVerdict::Failed
                } else {
                    RunVerdict::Ok
                })
            );
            assert_eq!(run.attempts.len(), 1, "{}", run.run_id);
        }
        let state = ledger.job(&job).unwrap().unwrap();
        // Run 49 failed after run 48 succeeded.
        assert_eq!(state.consecutive_failures, 1, "{job}");
        assert_eq!(
            state.last_failure,
            Some(start(w, 49) + SignedDuration::from_secs(30))
        );
        assert_eq!(
            state.last_success,
            Some(start(w, 48) + SignedDuration::from_secs(30))
        );
        assert_eq!(state.last_attempt, Some(start(w, 49)));
        assert_eq!(state.last_started, Some(at(60 * 49).as_second()));
        assert_eq!(state.last_run_id, Some(format!("{w:08x}{:08x}", 49)));
        let steps = ledger.steps(&job).unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(steps[0].consecutive_failures, 1);
        assert_eq!(steps[0].last_attempt, Some(start(w, 49)));
        assert_eq!(
            steps[0].last_failure,
            Some(start(w, 49) + SignedDuration::from_secs(10))
        );
        assert_eq!(
            steps[0].last_success,
            Some(start(w, 48) + SignedDuration::from_secs(10))
        );
        assert_eq!(
            ledger.recent_alerts(Some(&job), 1_000).unwrap().len(),
            failures
        );
    }
    assert_eq!(total, WRITERS * RUNS as usize);
    let shared = ledger.missed("shared", 1_000).unwrap();
    assert_eq!(shared.len(), RUNS as usize);
    assert!(shared.iter().all(|m| m.count == 1));
    assert_eq!(ledger.history("queue", 1_000).unwrap().len(), RUNS as usize);
    assert!(ledger.queued("queue").unwrap().is_empty());
    for occ in waiting {
        let row = ledger.decision("queue", occ).unwrap().unwrap();
        assert_eq!(row.decision, baton_store::ledger::Decision::Started);
    }
    assert_eq!(ledger.jobs().unwrap().len(), WRITERS + 3);

    // Every writer raised the common job's counters; none was lost.
    let all = WRITERS * RUNS as usize;
    assert_eq!(ledger.history("common", 10_000).unwrap().len(), all);
    let common = ledger.job("common").unwrap().unwrap();
    assert_eq!(common.consecutive_failures, all as u64);
    assert_eq!(common.last_attempt, Some(start(WRITERS - 1, RUNS - 1)));
    let steps = ledger.steps("common").unwrap();
    assert_eq!(steps[0].consecutive_failures, all as u64);
}
