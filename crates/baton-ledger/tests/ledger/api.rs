//! Every call of runs, steps, decisions and alerts, written and read back.

use baton_store::ledger::Records;
use std::os::unix::fs::PermissionsExt;

use crate::support::{Scene, at, attempt, finished, range, scheduled};
use baton_ledger::Ledger;
use baton_store::ledger::{
    AlertRow, AttemptRow, Begun, Decision, Miss, Missed, NewAlert, NewRun, RunRow, StepKind,
};
use baton_store::words::{AlertKind, AttemptOutcome, MissReason, RunVerdict};

#[test]
fn a_fresh_ledger_is_private_and_empty() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    assert_eq!(ledger.path(), scene.db());
    assert!(ledger.take_recovered().is_empty());
    assert!(ledger.jobs().unwrap().is_empty());
    for name in ["baton.db", "baton.db-wal", "baton.db-shm"] {
        let mode = std::fs::metadata(scene.dir().join(name))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[test]
fn jobs_are_seen_once_and_keep_their_first_sighting() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    ledger.see_jobs(&["a", "b"], at(0)).unwrap();
    ledger.see_jobs(&["b", "c"], at(60)).unwrap();
    let jobs = ledger.jobs().unwrap();
    let seen: Vec<_> = jobs
        .iter()
        .map(|j| (j.job.as_str(), j.first_seen))
        .collect();
    assert_eq!(seen, [("a", at(0)), ("b", at(0)), ("c", at(60))]);
    let b = ledger.job("b").unwrap().unwrap();
    assert_eq!(b.consecutive_failures, 0);
    assert_eq!(
        (b.last_decided, b.last_started, b.last_attempt),
        (None, None, None)
    );
    assert_eq!(ledger.job("nope").unwrap(), None);
}

#[test]
fn a_run_round_trips_with_its_attempts_steps_and_job_counters() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let run = scheduled("nightly", "00000000000000a1", 60);
    assert_eq!(ledger.begin_run(&run).unwrap(), Begun::Started);

    let running = ledger.running("nightly").unwrap().unwrap();
    assert_eq!(running.run_id, run.run_id);
    assert_eq!(running.finished, None);

    let check = baton_store::ledger::Attempt {
        kind: StepKind::Check,
        ..attempt(&run, 1, "disk-free", AttemptOutcome::Ok, at(61))
    };
    let first = attempt(&run, 2, "backup", AttemptOutcome::Timeout, at(71));
    let second = baton_store::ledger::Attempt {
        attempt: 2,
        signal: Some(9),
        exit_code: None,
        ..attempt(&run, 3, "backup", AttemptOutcome::Ok, at(81))
    };
    for a in [&check, &first, &second] {
        ledger.record_attempt(a).unwrap();
    }
    // Recording an attempt again changes nothing, counters included.
    ledger.record_attempt(&first).unwrap();
    ledger.finish_run(&finished(&run, 40, true), 10).unwrap();
    // And so does finishing it again.
    ledger.finish_run(&finished(&run, 40, true), 10).unwrap();

    assert_eq!(ledger.running("nightly").unwrap(), None);
    let expected = RunRow {
        run_id: run.run_id.clone(),
        job: "nightly".into(),
        occurrence: Some(at(60).as_second()),
        manual: false,
        fence: Some(1_060),
        host: Some("ci-1".into()),
        pid: Some(4242),
        started: at(60),
        finished: Some(at(100)),
        verdict: Some(RunVerdict::Ok),
        exit_code: Some(0),
        attempts: [&check, &first, &second]
            .iter()
            .map(|a| AttemptRow {
                seq: a.seq,
                step: a.step.clone(),
                kind: a.kind,
                attempt: a.attempt,
                started: a.started,
                finished: a.finished,
                exit_code: a.exit_code,
                signal: a.signal,
                outcome: a.outcome,
            })
            .collect(),
    };
    assert_eq!(ledger.last_run("nightly").unwrap(), Some(expected.clone()));
    assert_eq!(ledger.history("nightly", 10).unwrap(), [expected]);

    let job = ledger.job("nightly").unwrap().unwrap();
    assert_eq!(job.first_seen, at(60));
    assert_eq!(job.last_decided, Some(at(60).as_second()));
    assert_eq!(job.last_started, Some(at(60).as_second()));
    assert_eq!(job.last_attempt, Some(at(60)));
    assert_eq!(job.last_success, Some(at(100)));
    assert_eq!(job.last_failure, None);
    assert_eq!(job.consecutive_failures, 0);
    assert_eq!(job.last_run_id.as_deref(), Some("00000000000000a1"));

    let steps = ledger.steps("nightly").unwrap();
    let summary: Vec<_> = steps
        .iter()
        .map(|s| {
            (
                s.step.as_str(),
                s.kind,
                s.last_attempt,
                s.last_success,
                s.last_failure,
                s.consecutive_failures,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "backup",
                StepKind::Step,
                Some(at(81)),
                Some(at(91)),
                Some(at(81)),
                0
            ),
            (
                "disk-free",
                StepKind::Check,
                Some(at(61)),
                Some(at(71)),
                None,
                0
            ),
        ]
    );

    let decision = ledger
        .decision("nightly", at(60).as_second())
        .unwrap()
        .unwrap();
    assert_eq!(decision.decision, Decision::Started);
    assert_eq!(decision.run_id.as_deref(), Some("00000000000000a1"));
    assert_eq!(decision.decided, at(60));
    assert_eq!((decision.reason, decision.detail), (None, None));
}

#[test]
fn counters_follow_failures_and_reset_on_success() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let outcomes = [false, false, true, false, false, false];
    for (i, ok) in outcomes.iter().enumerate() {
        let run = scheduled("flaky", &format!("{i:016x}"), 60 * i as i64);
        ledger.begin_run(&run).unwrap();
        let word = if *ok {
            AttemptOutcome::Ok
        } else {
            AttemptOutcome::Failed
        };
        ledger
            .record_attempt(&attempt(&run, 1, "only", word, run.started))
            .unwrap();
        ledger
            .record_attempt(&attempt(
                &run,
                2,
                "stopped",
                AttemptOutcome::Interrupted,
                run.started,
            ))
            .unwrap();
        ledger.finish_run(&finished(&run, 20, *ok), 100).unwrap();
    }
    let job = ledger.job("flaky").unwrap().unwrap();
    assert_eq!(job.consecutive_failures, 3);
    assert_eq!(job.last_success, Some(at(120 + 20)));
    assert_eq!(job.last_failure, Some(at(300 + 20)));
    assert_eq!(job.last_run_id.as_deref(), Some("0000000000000005"));
    let steps = ledger.steps("flaky").unwrap();
    assert_eq!(steps[0].step, "only");
    assert_eq!(steps[0].consecutive_failures, 3);
    assert_eq!(steps[0].last_success, Some(at(120 + 10)));
    // A step a graceful shutdown stopped is an attempt, and moves no
    // other counter.
    assert_eq!(steps[1].step, "stopped");
    assert_eq!(
        (
            steps[1].last_attempt,
            steps[1].last_success,
            steps[1].last_failure,
            steps[1].consecutive_failures
        ),
        (Some(at(300)), None, None, 0)
    );
    assert_eq!(steps[1].consecutive_failures, 0);
}

#[test]
fn manual_runs_have_no_occurrence_and_move_no_schedule_mark() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let scheduled_run = scheduled("j", "000000000000000a", 0);
    ledger.begin_run(&scheduled_run).unwrap();
    ledger
        .finish_run(&finished(&scheduled_run, 5, true), 10)
        .unwrap();
    for (i, id) in ["000000000000000b", "000000000000000c"].iter().enumerate() {
        let manual = NewRun {
            occurrence: None,
            fence: None,
            started: at(100 + i as i64),
            ..scheduled("j", id, 0)
        };
        assert_eq!(ledger.begin_run(&manual).unwrap(), Begun::Started);
    }
    let running = ledger.running("j").unwrap().unwrap();
    assert_eq!(running.run_id, "000000000000000c");
    assert!(running.manual);
    assert_eq!((running.occurrence, running.fence), (None, None));
    let job = ledger.job("j").unwrap().unwrap();
    assert_eq!(job.last_started, Some(at(0).as_second()));
    assert_eq!(job.last_decided, Some(at(0).as_second()));
    assert_eq!(job.last_attempt, Some(at(101)));
    assert_eq!(job.last_run_id.as_deref(), Some("000000000000000c"));
}

#[test]
fn a_run_named_with_another_job_is_refused() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let run = scheduled("a", "00000000000000f1", 0);
    ledger.begin_run(&run).unwrap();
    let wrong = baton_store::ledger::Finished {
        job: "b".into(),
        ..finished(&run, 1, true)
    };
    let err = ledger.finish_run(&wrong, 10).unwrap_err();
    assert!(err.to_string().contains("belongs to job a, not b"), "{err}");
    assert!(ledger.job("b").unwrap().is_none());
    assert_eq!(ledger.last_run("a").unwrap().unwrap().finished, None);
}

#[test]
fn missed_occurrences_are_listed_newest_first_and_counted_by_reason() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    for (occ, reason) in [
        (0, MissReason::Busy),
        (60, MissReason::Hung),
        (120, MissReason::Busy),
        (180, MissReason::Late),
    ] {
        let detail = format!("held by pid {occ}");
        let miss = Miss {
            detail: Some(&detail),
            ..range("j", reason, occ, occ)
        };
        assert_eq!(ledger.miss(&miss, at(occ + 1)).unwrap(), Missed::Recorded);
    }
    let listed = ledger.missed("j", 3).unwrap();
    let occs: Vec<_> = listed
        .iter()
        .map(|m| (m.first, m.reason.as_str()))
        .collect();
    assert_eq!(
        occs,
        [
            (at(180).as_second(), "late"),
            (at(120).as_second(), "busy"),
            (at(60).as_second(), "hung"),
        ]
    );
    assert_eq!(listed[1].detail.as_deref(), Some("held by pid 120"));
    assert_eq!((listed[1].decided, listed[1].updated), (at(121), at(121)));
    assert_eq!((listed[1].count, listed[1].at_least), (1, false));
    assert_eq!(
        ledger.missed_counts("j").unwrap(),
        [
            (MissReason::Busy, 2, false),
            (MissReason::Hung, 1, false),
            (MissReason::Late, 1, false),
        ]
    );
    assert_eq!(
        ledger.job("j").unwrap().unwrap().last_decided,
        Some(at(180).as_second())
    );
    // Missed occurrences have no decision row of their own.
    assert!(ledger.decision("j", at(0).as_second()).unwrap().is_none());
}

#[test]
fn alerts_come_back_newest_first_per_job_or_all() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let alert = |i: i64, job: Option<&str>| NewAlert {
        time: at(i),
        job: job.map(Into::into),
        kind: AlertKind::StepFailed,
        run_id: Some(format!("{i:016x}")),
        occurrence: Some(i),
        message: format!("alert {i}"),
        json: format!("{{\"n\":{i}}}"),
    };
    ledger.record_alert(&alert(1, Some("a"))).unwrap();
    ledger.record_alert(&alert(2, Some("b"))).unwrap();
    ledger.record_alert(&alert(3, None)).unwrap();
    ledger.record_alert(&alert(4, Some("a"))).unwrap();

    let all = ledger.recent_alerts(None, 10).unwrap();
    let messages: Vec<_> = all.iter().map(|a| a.message.as_str()).collect();
    assert_eq!(messages, ["alert 4", "alert 3", "alert 2", "alert 1"]);
    let a = ledger.recent_alerts(Some("a"), 1).unwrap();
    assert_eq!(
        a,
        [AlertRow {
            id: all[0].id,
            time: at(4),
            job: Some("a".into()),
            kind: AlertKind::StepFailed,
            run_id: Some("0000000000000004".into()),
            occurrence: Some(4),
            message: "alert 4".into(),
            json: "{\"n\":4}".into(),
        }]
    );
    assert!(all[0].id > all[1].id);
}

#[test]
fn everything_survives_a_reopen() {
    let scene = Scene::new();
    let run = scheduled("j", "00000000000000e1", 0);
    {
        let mut ledger = scene.open();
        ledger.begin_run(&run).unwrap();
        ledger
            .record_attempt(&attempt(&run, 1, "s", AttemptOutcome::Ok, at(0)))
            .unwrap();
    }
    let mut ledger = Ledger::open(scene.dir(), at(3600)).unwrap();
    assert!(ledger.take_recovered().is_empty());
    ledger.finish_run(&finished(&run, 30, true), 5).unwrap();
    let last = ledger.last_run("j").unwrap().unwrap();
    assert_eq!(last.attempts.len(), 1);
    assert_eq!(last.finished, Some(at(30)));
}
