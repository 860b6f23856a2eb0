//! Every call, written and read back, and pruning.

use std::os::unix::fs::PermissionsExt;

use crate::support::{Scene, at, attempt, finished, scheduled};
use baton_ledger::{
    AlertRow, AttemptRow, Begun, Decision, Ledger, NewAlert, NewRun, RunRow, StepKind,
};

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

    let check = baton_ledger::Attempt {
        kind: StepKind::Check,
        ..attempt(&run, 1, "disk-free", "ok", at(61))
    };
    let first = attempt(&run, 2, "backup", "timeout", at(71));
    let second = baton_ledger::Attempt {
        attempt: 2,
        signal: Some(9),
        exit_code: None,
        ..attempt(&run, 3, "backup", "ok", at(81))
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
        verdict: Some("ok".into()),
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
                outcome: a.outcome.clone(),
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
        let word = if *ok { "ok" } else { "failed" };
        ledger
            .record_attempt(&attempt(&run, 1, "only", word, run.started))
            .unwrap();
        ledger
            .record_attempt(&attempt(&run, 2, "skipped", "not-started", run.started))
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
    // A step that never started moves no counter.
    assert_eq!(steps[1].step, "skipped");
    assert_eq!(
        (
            steps[1].last_attempt,
            steps[1].last_success,
            steps[1].last_failure
        ),
        (None, None, None)
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
    let wrong = baton_ledger::Finished {
        job: "b".into(),
        ..finished(&run, 1, true)
    };
    let err = ledger.finish_run(&wrong, 10).unwrap_err();
    assert!(err.to_string().contains("belongs to job a, not b"), "{err}");
    assert!(ledger.job("b").unwrap().is_none());
    assert_eq!(ledger.last_run("a").unwrap().unwrap().finished, None);
}

#[test]
fn skips_are_listed_newest_first_and_counted_by_reason() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let skips = [
        (0, Decision::Skipped, "busy"),
        (60, Decision::Skipped, "hung"),
        (120, Decision::Skipped, "busy"),
        (180, Decision::Missed, "asleep"),
    ];
    for (occ, decision, reason) in skips {
        let detail = format!("held by pid {occ}");
        let recorded = ledger
            .decide(
                "j",
                at(occ).as_second(),
                decision,
                reason,
                &detail,
                at(occ + 1),
            )
            .unwrap();
        assert!(recorded);
    }
    let listed = ledger.skipped("j", 3).unwrap();
    let occs: Vec<_> = listed.iter().map(|d| (d.occurrence, d.decision)).collect();
    assert_eq!(
        occs,
        [
            (at(180).as_second(), Decision::Missed),
            (at(120).as_second(), Decision::Skipped),
            (at(60).as_second(), Decision::Skipped),
        ]
    );
    assert_eq!(listed[1].reason.as_deref(), Some("busy"));
    assert_eq!(listed[1].detail.as_deref(), Some("held by pid 120"));
    assert_eq!(listed[1].decided, at(121));
    assert_eq!(listed[1].run_id, None);
    assert_eq!(
        ledger.skip_counts("j").unwrap(),
        [
            ("missed".to_string(), "asleep".to_string(), 1),
            ("skipped".to_string(), "busy".to_string(), 2),
            ("skipped".to_string(), "hung".to_string(), 1),
        ]
    );
    assert_eq!(
        ledger.job("j").unwrap().unwrap().last_decided,
        Some(at(180).as_second())
    );
    // A decision is never "started" without its run.
    assert!(
        ledger
            .decide("j", 1, Decision::Started, "", "", at(0))
            .is_err()
    );
    assert!(ledger.decision("j", 1).unwrap().is_none());
}

#[test]
fn alerts_come_back_newest_first_per_job_or_all() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    let alert = |i: i64, job: Option<&str>| NewAlert {
        time: at(i),
        job: job.map(Into::into),
        kind: "failure".into(),
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
            kind: "failure".into(),
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
            .record_attempt(&attempt(&run, 1, "s", "ok", at(0)))
            .unwrap();
    }
    let mut ledger = Ledger::open(scene.dir(), at(3600)).unwrap();
    assert!(ledger.take_recovered().is_empty());
    ledger.finish_run(&finished(&run, 30, true), 5).unwrap();
    let last = ledger.last_run("j").unwrap().unwrap();
    assert_eq!(last.attempts.len(), 1);
    assert_eq!(last.finished, Some(at(30)));
}

#[test]
fn pruning_keeps_the_newest_runs_their_attempts_and_the_newest_decision() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    // Six runs an hour apart, each with two attempts, and a skip between
    // each pair of runs.
    for i in 0..6 {
        let run = scheduled("j", &format!("{i:016x}"), 3600 * i);
        ledger.begin_run(&run).unwrap();
        ledger
            .record_attempt(&attempt(&run, 1, "a", "ok", run.started))
            .unwrap();
        ledger
            .record_attempt(&attempt(&run, 2, "b", "ok", run.started))
            .unwrap();
        ledger.finish_run(&finished(&run, 60, true), 3).unwrap();
        let skip = 3600 * i + 1800;
        assert!(
            ledger
                .decide(
                    "j",
                    at(skip).as_second(),
                    Decision::Skipped,
                    "busy",
                    "",
                    at(skip)
                )
                .unwrap()
        );
    }
    // Another job's history is its own.
    let other = scheduled("other", "00000000000000ff", 0);
    ledger.begin_run(&other).unwrap();
    ledger.finish_run(&finished(&other, 1, true), 1).unwrap();

    let kept: Vec<_> = ledger
        .history("j", 100)
        .unwrap()
        .into_iter()
        .map(|r| (r.run_id, r.attempts.len()))
        .collect();
    assert_eq!(
        kept,
        [
            ("0000000000000005".to_string(), 2),
            ("0000000000000004".to_string(), 2),
            ("0000000000000003".to_string(), 2),
        ]
    );
    // The pruned runs' attempts went with them (the cascade).
    let raw = rusqlite::Connection::open(scene.db()).unwrap();
    let attempts: i64 = raw
        .query_row("SELECT COUNT(*) FROM attempts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(attempts, 6);
    drop(raw);

    // Decisions: those made before the oldest kept run (3) started are gone;
    // the kept runs' own and the skips after them stay. The last pruning ran
    // when run 5 finished, before the skip at 5 h 30 was decided.
    let mut occs: Vec<i64> = Vec::new();
    for occ in (0..12).map(|half| 1800 * half) {
        if ledger.decision("j", at(occ).as_second()).unwrap().is_some() {
            occs.push(occ / 1800);
        }
    }
    assert_eq!(occs, [6, 7, 8, 9, 10, 11]);
    assert_eq!(ledger.history("other", 10).unwrap().len(), 1);
}

#[test]
fn pruning_never_removes_the_newest_decision() {
    let scene = Scene::new();
    let mut ledger = scene.open();
    // The newest decision is for an occurrence before the run that prunes.
    let occ = at(0).as_second();
    ledger
        .decide("j", occ, Decision::Skipped, "busy", "", at(0))
        .unwrap();
    let manual = NewRun {
        occurrence: None,
        ..scheduled("j", "00000000000000c1", 600)
    };
    ledger.begin_run(&manual).unwrap();
    ledger.finish_run(&finished(&manual, 5, true), 1).unwrap();
    assert!(ledger.decision("j", occ).unwrap().is_some());
    // A history of 0 keeps the last run.
    ledger.finish_run(&finished(&manual, 5, true), 0).unwrap();
    assert_eq!(ledger.history("j", 10).unwrap().len(), 1);
}
