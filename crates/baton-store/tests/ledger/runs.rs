//! Runs: their start and end, attempts and steps, the job's counters, and
//! the pruning of history when a run finishes.

use baton_store::ledger::{AttemptRow, Begun, Decision, NewRun, Queued, RunRow, StepKind};
use baton_store::words::{AttemptOutcome, RunVerdict};

use crate::support::{Log, Store, at, attempt, finished, occ, refused, scheduled};

both! {
    a_run_round_trips_with_its_attempts_steps_and_job_counters
    counters_follow_failures_and_reset_on_success
    an_interrupted_run_is_neither_a_success_nor_a_failure
    manual_runs_have_no_occurrence_and_move_no_schedule_mark
    a_run_named_with_another_job_is_refused
    a_run_id_held_already_is_an_error_and_writes_nothing
    a_start_recorded_again_by_its_own_run_is_its_start_once
    pruning_keeps_the_newest_runs_their_attempts_and_the_newest_decision
    pruning_keeps_a_run_in_flight_however_old
    pruning_never_removes_the_newest_decision
    pruning_keeps_queued_occurrences
    starts_recorded_together_are_each_as_recorded_alone
    an_end_recorded_with_its_last_attempts_is_as_each_recorded_alone
    what_a_start_or_an_end_reads_in_its_transaction_is_what_a_read_after_it_sees
}

fn a_run_round_trips_with_its_attempts_steps_and_job_counters(l: &mut Store, log: &mut Log) {
    l.see_jobs(&["nightly", "backup"], at(0)).unwrap();
    l.see_jobs(&["nightly", "weekly"], at(30)).unwrap();
    let jobs = l.jobs().unwrap();
    let seen: Vec<_> = jobs
        .iter()
        .map(|j| (j.job.as_str(), j.first_seen))
        .collect();
    assert_eq!(
        seen,
        [("backup", at(0)), ("nightly", at(0)), ("weekly", at(30))],
        "by name, each seen first when first seen"
    );
    let backup = &jobs[0];
    assert_eq!(backup.consecutive_failures, 0);
    assert_eq!(
        (
            backup.last_decided,
            backup.last_started,
            backup.last_attempt
        ),
        (None, None, None)
    );
    log.note("jobs", &jobs);

    let run = scheduled("nightly", "00000000000000a1", 60);
    assert_eq!(l.begin_run(&run).unwrap(), Begun::Started);
    let running = l.running("nightly").unwrap().unwrap();
    assert_eq!((&running.run_id, running.finished), (&run.run_id, None));
    log.note("running", &running);
    let d = l.decision("nightly", occ(60)).unwrap().unwrap();
    assert_eq!(
        (
            d.decision,
            d.run_id.as_deref(),
            d.decided,
            d.reason,
            d.detail
        ),
        (
            Decision::Started,
            Some("00000000000000a1"),
            at(60),
            None,
            None
        )
    );
    let mut check = attempt(&run, 1, "ready", AttemptOutcome::Ok, at(61));
    check.kind = StepKind::Check;
    let mut signalled = attempt(&run, 5, "ship", AttemptOutcome::Timeout, at(95));
    signalled.attempt = 2;
    signalled.exit_code = None;
    signalled.signal = Some(9);
    let attempts = [
        check,
        attempt(&run, 2, "build", AttemptOutcome::Failed, at(62)),
        attempt(&run, 3, "build", AttemptOutcome::Ok, at(80)),
        attempt(&run, 4, "ship", AttemptOutcome::NotStarted, at(90)),
        signalled,
    ];
    for a in &attempts[..4] {
        l.record_attempt(a).unwrap();
    }
    // Recording an attempt again counts nothing.
    l.record_attempt(&attempts[1]).unwrap();
    log.note("unfinished", &l.unfinished("nightly").unwrap());
    l.record_attempt(&attempts[4]).unwrap();

    l.finish_run(&finished(&run, 120, true), 10).unwrap();
    // Finishing it again changes nothing.
    let mut again = finished(&run, 500, false);
    again.verdict = RunVerdict::Failed;
    l.finish_run(&again, 10).unwrap();

    assert!(l.running("nightly").unwrap().is_none());
    assert!(l.unfinished("nightly").unwrap().is_empty());
    let expected = RunRow {
        run_id: run.run_id.clone(),
        job: "nightly".into(),
        occurrence: Some(occ(60)),
        manual: false,
        fence: Some(1_060),
        host: Some("ci-1".into()),
        pid: Some(4242),
        started: at(60),
        finished: Some(at(180)),
        verdict: Some(RunVerdict::Ok),
        exit_code: Some(0),
        attempts: attempts
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
    assert_eq!(l.last_run("nightly").unwrap().as_ref(), Some(&expected));
    let history = l.history("nightly", 10).unwrap();
    assert_eq!(history, [expected]);
    log.note("history", &history);

    let steps = l.steps("nightly").unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s.step.as_str()).collect();
    assert_eq!(names, ["build", "ready", "ship"]);
    assert_eq!(steps[0].consecutive_failures, 0, "the retry succeeded");
    assert_eq!(
        (
            steps[0].last_attempt,
            steps[0].last_failure,
            steps[0].last_success
        ),
        (Some(at(80)), Some(at(72)), Some(at(90)))
    );
    assert_eq!(steps[1].kind, StepKind::Check);
    assert_eq!(
        steps[2].consecutive_failures, 2,
        "a step that could not start failed, and so did its timeout"
    );
    log.note("steps", &steps);

    let job = l.job("nightly").unwrap().unwrap();
    assert_eq!(job.first_seen, at(0));
    assert_eq!(job.last_decided, Some(occ(60)));
    assert_eq!(job.last_started, Some(occ(60)));
    assert_eq!(job.last_attempt, Some(at(60)));
    assert_eq!(job.last_success, Some(at(180)));
    assert_eq!((job.last_failure, job.consecutive_failures), (None, 0));
    assert_eq!(job.last_run_id.as_deref(), Some("00000000000000a1"));
    log.note("job", &job);
    assert!(l.job("never").unwrap().is_none());
    assert!(l.history("never", 10).unwrap().is_empty());
    assert!(l.last_run("never").unwrap().is_none());
}

fn counters_follow_failures_and_reset_on_success(l: &mut Store, log: &mut Log) {
    for (i, ok) in [false, false, true, false].into_iter().enumerate() {
        let secs = 3600 * i64::try_from(i).unwrap();
        let run = scheduled("j", &format!("{i:016x}"), secs);
        l.begin_run(&run).unwrap();
        let outcome = if ok {
            AttemptOutcome::Ok
        } else {
            AttemptOutcome::Failed
        };
        l.record_attempt(&attempt(&run, 1, "only", outcome, run.started))
            .unwrap();
        l.finish_run(&finished(&run, 10, ok), 100).unwrap();
        log.note("job", &l.job("j").unwrap());
    }
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.consecutive_failures, 1);
    assert_eq!(job.last_success, Some(at(7200 + 10)));
    assert_eq!(job.last_failure, Some(at(10800 + 10)));
    // The step's counters follow its attempts the same way.
    let step = &l.steps("j").unwrap()[0];
    assert_eq!(
        (
            step.consecutive_failures,
            step.last_success,
            step.last_failure
        ),
        (1, Some(at(7200 + 10)), Some(at(10800 + 10)))
    );
    log.note("step", step);
    assert_eq!(l.history("j", 2).unwrap().len(), 2, "the limit holds");
    // A run that started before the newest one does not take its place.
    let late = scheduled("j", "00000000000000ee", 1800);
    l.begin_run(&late).unwrap();
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.last_run_id.as_deref(), Some("0000000000000003"));
    assert_eq!(job.last_attempt, Some(at(10800)));
    assert_eq!(job.last_started, Some(occ(10800)));
    log.note("job", &job);
}

/// A run a graceful shutdown stopped (`interrupted`) moves neither the
/// job's failures nor its last failure or success; its step's attempt is
/// counted as an attempt only. A step that could not be started
/// (`not-started`) is a failed attempt.
fn an_interrupted_run_is_neither_a_success_nor_a_failure(l: &mut Store, log: &mut Log) {
    let failed = scheduled("j", "00000000000000a1", 0);
    l.begin_run(&failed).unwrap();
    l.record_attempt(&attempt(&failed, 1, "build", AttemptOutcome::Failed, at(0)))
        .unwrap();
    l.finish_run(&finished(&failed, 20, false), 100).unwrap();
    let before = l.job("j").unwrap().unwrap();
    let stopped = scheduled("j", "00000000000000a2", 3600);
    l.begin_run(&stopped).unwrap();
    l.record_attempt(&attempt(
        &stopped,
        1,
        "build",
        AttemptOutcome::Interrupted,
        at(3600),
    ))
    .unwrap();
    let mut end = finished(&stopped, 20, false);
    end.verdict = RunVerdict::Interrupted;
    l.finish_run(&end, 100).unwrap();
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(
        (job.consecutive_failures, job.last_failure, job.last_success),
        (1, before.last_failure, None),
        "{job:?}"
    );
    assert_eq!(job.last_run_id.as_deref(), Some("00000000000000a2"));
    let step = &l.steps("j").unwrap()[0];
    assert_eq!(step.last_attempt, Some(at(3600)), "an attempt all the same");
    assert_eq!(
        (step.consecutive_failures, step.last_failure),
        (1, Some(at(10))),
        "{step:?}"
    );
    log.note("job", &job);
    // A command that could not be started is a failed attempt.
    let unstarted = scheduled("j", "00000000000000a3", 7200);
    l.begin_run(&unstarted).unwrap();
    l.record_attempt(&attempt(
        &unstarted,
        1,
        "ship",
        AttemptOutcome::NotStarted,
        at(7200),
    ))
    .unwrap();
    l.finish_run(&finished(&unstarted, 20, false), 100).unwrap();
    let ship = l
        .steps("j")
        .unwrap()
        .into_iter()
        .find(|s| s.step == "ship")
        .unwrap();
    assert_eq!(
        (
            ship.last_attempt,
            ship.last_failure,
            ship.consecutive_failures
        ),
        (Some(at(7200)), Some(at(7210)), 1)
    );
    assert_eq!(l.job("j").unwrap().unwrap().consecutive_failures, 2);
    log.note("steps", &l.steps("j").unwrap());
}

fn manual_runs_have_no_occurrence_and_move_no_schedule_mark(l: &mut Store, log: &mut Log) {
    let scheduled_run = scheduled("j", "00000000000000a1", 60);
    l.begin_run(&scheduled_run).unwrap();
    let manual = NewRun {
        run_id: "00000000000000b1".into(),
        occurrence: None,
        fence: None,
        started: at(600),
        ..scheduled_run.clone()
    };
    assert_eq!(l.begin_run(&manual).unwrap(), Begun::Started);
    // Both run; the newest is the one running.
    assert_eq!(l.running("j").unwrap().unwrap().run_id, "00000000000000b1");
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.last_decided, Some(occ(60)));
    assert_eq!(job.last_started, Some(occ(60)));
    assert_eq!(job.last_attempt, Some(at(600)));
    assert_eq!(job.last_run_id.as_deref(), Some("00000000000000b1"));
    let newest = l.last_run("j").unwrap().unwrap();
    assert!(newest.manual);
    assert_eq!((newest.occurrence, newest.fence), (None, None));
    log.note("job", &job);
    log.note("history", &l.history("j", 10).unwrap());
}

fn a_run_named_with_another_job_is_refused(l: &mut Store, log: &mut Log) {
    let run = scheduled("j", "00000000000000a1", 60);
    l.begin_run(&run).unwrap();
    let mut wrong = attempt(&run, 1, "build", AttemptOutcome::Ok, at(61));
    wrong.job = "other".into();
    let problem = refused(l.record_attempt(&wrong).unwrap_err());
    assert_eq!(problem, "run 00000000000000a1 belongs to job j, not other");
    log.note("attempt refused", &problem);
    let mut wrong_end = finished(&run, 10, true);
    wrong_end.job = "other".into();
    let problem = refused(l.finish_run(&wrong_end, 10).unwrap_err());
    assert_eq!(problem, "run 00000000000000a1 belongs to job j, not other");
    log.note("finish refused", &problem);
    // Nothing was written.
    assert!(l.steps("other").unwrap().is_empty());
    assert!(l.job("other").unwrap().is_none());
    assert!(l.history("j", 1).unwrap()[0].finished.is_none());
    // A fence that does not fit is refused before anything is written.
    let big = NewRun {
        run_id: "00000000000000a2".into(),
        fence: Some(u64::MAX),
        ..scheduled("j", "", 120)
    };
    let problem = refused(l.begin_run(&big).unwrap_err());
    assert!(problem.contains("does not fit"), "{problem}");
    log.note("fence refused", &problem);
    assert!(l.decision("j", occ(120)).unwrap().is_none());
    // A run the ledger does not have (lost since it began) still counts.
    let lost = scheduled("j", "00000000000000ff", 300);
    l.record_attempt(&attempt(&lost, 1, "build", AttemptOutcome::Failed, at(300)))
        .unwrap();
    l.finish_run(&finished(&lost, 10, false), 10).unwrap();
    assert_eq!(l.steps("j").unwrap()[0].consecutive_failures, 1);
    assert_eq!(l.job("j").unwrap().unwrap().consecutive_failures, 1);
    assert_eq!(l.history("j", 10).unwrap().len(), 1);
    log.note("job", &l.job("j").unwrap());
}

fn a_run_id_held_already_is_an_error_and_writes_nothing(l: &mut Store, log: &mut Log) {
    let run = scheduled("j", "00000000000000a1", 60);
    l.begin_run(&run).unwrap();
    let same_id = scheduled("j", "00000000000000a1", 120);
    assert!(l.begin_run(&same_id).is_err());
    // The transaction rolled back: the occurrence has no decision.
    assert!(l.decision("j", occ(120)).unwrap().is_none());
    assert_eq!(l.job("j").unwrap().unwrap().last_decided, Some(occ(60)));
    log.note("history", &l.history("j", 10).unwrap());
}

/// A caller that could not learn whether its start was recorded (the
/// answer was lost) records it again: the same run id, job and occurrence
/// are its own start, written once.
fn a_start_recorded_again_by_its_own_run_is_its_start_once(l: &mut Store, log: &mut Log) {
    let run = scheduled("j", "00000000000000a1", 60);
    assert_eq!(l.begin_run(&run).unwrap(), Begun::Started);
    let before = l.job("j").unwrap().unwrap();
    assert_eq!(l.begin_run(&run).unwrap(), Begun::Started);
    assert_eq!(l.job("j").unwrap().unwrap(), before);
    // Another run of the same occurrence is still refused.
    let other = scheduled("j", "00000000000000b2", 60);
    assert!(matches!(
        l.begin_run(&other).unwrap(),
        Begun::AlreadyDecided(d) if d.run_id.as_deref() == Some("00000000000000a1")
    ));
    let manual = NewRun {
        occurrence: None,
        ..scheduled("j", "00000000000000c3", 90)
    };
    assert_eq!(l.begin_run(&manual).unwrap(), Begun::Started);
    assert_eq!(l.begin_run(&manual).unwrap(), Begun::Started);
    // The same id for another job is not its start.
    let stranger = NewRun {
        job: "k".into(),
        ..manual.clone()
    };
    assert!(l.begin_run(&stranger).is_err());
    let history = l.history("j", 10).unwrap();
    let ids: Vec<&str> = history.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["00000000000000c3", "00000000000000a1"]);
    log.note("history", &history);
    log.note("job", &l.job("j").unwrap());
}

fn pruning_keeps_the_newest_runs_their_attempts_and_the_newest_decision(
    l: &mut Store,
    log: &mut Log,
) {
    // Six runs an hour apart, two attempts each, a claim between each pair.
    for i in 0..6 {
        let run = scheduled("j", &format!("{i:016x}"), 3600 * i);
        l.begin_run(&run).unwrap();
        l.record_attempt(&attempt(&run, 1, "a", AttemptOutcome::Ok, run.started))
            .unwrap();
        l.record_attempt(&attempt(&run, 2, "b", AttemptOutcome::Ok, run.started))
            .unwrap();
        l.finish_run(&finished(&run, 60, true), 3).unwrap();
        let claim = 3600 * i + 1800;
        assert!(l.claimed("j", occ(claim), "", at(claim)).unwrap());
    }
    let other = scheduled("other", "00000000000000ff", 0);
    l.begin_run(&other).unwrap();
    l.finish_run(&finished(&other, 1, true), 1).unwrap();

    let kept: Vec<_> = l
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
    if let Some(url) = l.url() {
        // The pruned runs' attempts went with them (the cascade).
        let n = crate::support::scalar(url, "SELECT count(*) FROM baton.attempts");
        assert_eq!(n, 6);
    }
    let mut decided = Vec::new();
    for half in 0..12 {
        if let Some(d) = l.decision("j", occ(1800 * half)).unwrap() {
            decided.push(half);
            log.note("decision", &d);
        }
    }
    assert_eq!(decided, [6, 7, 8, 9, 10, 11]);
    assert_eq!(l.history("other", 10).unwrap().len(), 1);
    // A history_keep of 0 keeps the last run.
    let last = scheduled("j", "0000000000000006", 3600 * 6);
    l.begin_run(&last).unwrap();
    l.finish_run(&finished(&last, 1, true), 0).unwrap();
    let left = l.history("j", 10).unwrap();
    assert_eq!(left.len(), 1);
    log.note("history", &left);
}

fn pruning_never_removes_the_newest_decision(l: &mut Store, log: &mut Log) {
    // The newest decision is for an occurrence before the run that prunes.
    assert!(l.claimed("j", occ(0), "", at(0)).unwrap());
    let manual = NewRun {
        occurrence: None,
        ..scheduled("j", "00000000000000c1", 600)
    };
    l.begin_run(&manual).unwrap();
    l.finish_run(&finished(&manual, 5, true), 1).unwrap();
    let d = l.decision("j", occ(0)).unwrap();
    assert!(d.is_some());
    log.note("decision", &d);
    // A history of 0 keeps the last run.
    l.finish_run(&finished(&manual, 5, true), 0).unwrap();
    assert_eq!(l.history("j", 10).unwrap().len(), 1);
}

/// Queued occurrences are work still to do: however long they have waited,
/// pruning leaves them, while older decisions around them go.
fn pruning_keeps_queued_occurrences(l: &mut Store, log: &mut Log) {
    assert!(l.claimed("j", occ(0), "", at(0)).unwrap());
    let waiting = [occ(60), occ(120)];
    assert_eq!(
        l.enqueue("j", &waiting, false, at(1)).unwrap(),
        Queued::Queued
    );
    for (i, started) in [1_000, 2_000, 3_000].into_iter().enumerate() {
        let manual = NewRun {
            occurrence: None,
            started: at(started),
            ..scheduled("j", &format!("{i:016x}"), 0)
        };
        assert_eq!(l.begin_run(&manual).unwrap(), Begun::Started);
        l.finish_run(&finished(&manual, 5, true), 1).unwrap();
    }
    assert_eq!(l.history("j", 10).unwrap().len(), 1);
    assert_eq!(l.decision("j", occ(0)).unwrap(), None);
    let queued = l.queued("j").unwrap();
    let found: Vec<_> = queued.iter().map(|d| (d.occurrence, d.decision)).collect();
    assert_eq!(
        found,
        [
            (waiting[0], Decision::Queued),
            (waiting[1], Decision::Queued)
        ]
    );
    log.note("queued", &queued);
}

fn starts_recorded_together_are_each_as_recorded_alone(l: &mut Store, log: &mut Log) {
    l.enqueue("q", &[occ(60)], false, at(1)).unwrap();
    let together = [
        scheduled("a", "00000000000000c1", 0),
        scheduled("q", "00000000000000c2", 60),
        scheduled("b", "00000000000000c3", 0),
        // The same occurrence again, by another run: decided by the first.
        scheduled("a", "00000000000000c4", 0),
        // The same start again, by its own run: its start, once.
        scheduled("b", "00000000000000c3", 0),
    ];
    let begun = l.begin_runs(&together).unwrap();
    log.note("begun", &begun);
    assert_eq!(begun[..3], [Begun::Started, Begun::Started, Begun::Started]);
    assert!(
        matches!(&begun[3], Begun::AlreadyDecided(d) if d.run_id.as_deref() == Some("00000000000000c1")),
        "{begun:?}"
    );
    assert_eq!(begun[4], Begun::Started);
    // Each as a start alone leaves it: its decision, its run, its job.
    assert_eq!(l.queued("q").unwrap(), []);
    let d = l.decision("q", occ(60)).unwrap().unwrap();
    assert_eq!(
        (d.decision, d.run_id.as_deref()),
        (Decision::Started, Some("00000000000000c2"))
    );
    for (job, id) in [("a", "00000000000000c1"), ("b", "00000000000000c3")] {
        let last = l.last_run(job).unwrap().unwrap();
        assert_eq!(last.run_id, id);
        assert_eq!(l.job(job).unwrap().unwrap().last_started, Some(occ(0)));
    }
    // One refused (a run id another job holds): nothing of the batch.
    let bad = [
        scheduled("d", "00000000000000c5", 120),
        scheduled("e", "00000000000000c1", 120),
    ];
    assert!(l.begin_runs(&bad).is_err());
    assert_eq!(l.last_run("d").unwrap(), None, "nothing of a failed batch");
    assert_eq!(l.decision("d", occ(120)).unwrap(), None);
}

/// What the ledger says of `job`'s last run, steps, counters and tallies,
/// with the names that differ from job to job left out.
fn seen_of(l: &mut Store, job: &str) -> String {
    let run_and_steps = run_and_steps(l, job);
    let mut state = l.job(job).unwrap().unwrap();
    state.job.clear();
    state.last_run_id = None;
    let mut tallies = l.tallies().unwrap();
    tallies.retain(|t| t.job == job);
    for t in &mut tallies {
        t.job.clear();
    }
    format!("{run_and_steps}\n{state:?}\n{tallies:?}")
}

fn an_end_recorded_with_its_last_attempts_is_as_each_recorded_alone(l: &mut Store, log: &mut Log) {
    let alone = scheduled("alone", "00000000000000c1", 60);
    let together = scheduled("together", "00000000000000c2", 60);
    let tries = |run: &NewRun| {
        [
            attempt(run, 1, "build", AttemptOutcome::Failed, at(61)),
            attempt(run, 2, "build", AttemptOutcome::Ok, at(70)),
            attempt(run, 3, "ship", AttemptOutcome::Ok, at(80)),
        ]
    };
    l.begin_run(&alone).unwrap();
    for a in tries(&alone) {
        l.record_attempt(&a).unwrap();
    }
    l.finish_run(&finished(&alone, 100, true), 10).unwrap();
    // The first attempt alone (a run records it before its retry waits),
    // the other two with the end.
    l.begin_run(&together).unwrap();
    let t = tries(&together);
    l.record_attempt(&t[0]).unwrap();
    l.finish_run_after(&t[1..], &finished(&together, 100, true), 10)
        .unwrap();
    // Recorded again (its writer never heard the commit): nothing more is
    // counted, and the end stays the first.
    l.finish_run_after(&t[1..], &finished(&together, 500, false), 10)
        .unwrap();
    let seen = seen_of(l, "together");
    assert_eq!(seen_of(l, "alone"), seen);
    assert_eq!(l.last_run("together").unwrap().unwrap().attempts.len(), 3);
    log.note("together", &seen);

    // One attempt of the call names another job: none of it is written.
    let third = scheduled("together", "00000000000000c3", 200);
    l.begin_run(&third).unwrap();
    let mut wrong = attempt(&third, 2, "ship", AttemptOutcome::Ok, at(202));
    wrong.job = "other".into();
    let right = attempt(&third, 1, "build", AttemptOutcome::Ok, at(201));
    let problem = refused(
        l.finish_run_after(&[right, wrong], &finished(&third, 10, true), 10)
            .unwrap_err(),
    );
    assert_eq!(
        problem,
        "run 00000000000000c3 belongs to job together, not other"
    );
    let last = l.last_run("together").unwrap().unwrap();
    assert_eq!(last.run_id, third.run_id);
    assert!(last.finished.is_none(), "{last:?}");
    assert!(last.attempts.is_empty(), "{last:?}");
    assert!(l.steps("other").unwrap().is_empty());
    log.note("refused", &problem);
    // With no attempts, it is the end alone.
    l.finish_run_after(&[], &finished(&third, 10, true), 10)
        .unwrap();
    assert!(l.running("together").unwrap().is_none());
}

fn what_a_start_or_an_end_reads_in_its_transaction_is_what_a_read_after_it_sees(
    l: &mut Store,
    log: &mut Log,
) {
    // An earlier run of a mate, never finished, and a finished one.
    let stale = scheduled("mate", "00000000000000d1", 0);
    l.begin_run(&stale).unwrap();
    let done = scheduled("job", "00000000000000d2", 0);
    l.begin_run(&done).unwrap();
    l.finish_run(&finished(&done, 10, true), 10).unwrap();

    // The start, then the unfinished runs of each job named, in its order.
    let run = scheduled("job", "00000000000000d3", 60);
    let (begun, read) = l
        .begin_run_then_unfinished(&run, &["mate", "job", "idle"])
        .unwrap();
    assert_eq!(begun, Begun::Started);
    let after: Vec<_> = ["mate", "job", "idle"]
        .iter()
        .map(|j| l.unfinished(j).unwrap())
        .collect();
    assert_eq!(read, after);
    let ids: Vec<Vec<&str>> = read
        .iter()
        .map(|runs| runs.iter().map(|r| r.run_id.as_str()).collect())
        .collect();
    assert_eq!(
        ids,
        [vec!["00000000000000d1"], vec!["00000000000000d3"], vec![]],
        "the run just started is among them"
    );
    log.note("unfinished", &read);
    // Recorded again: the start once, the same runs.
    let (again, reread) = l
        .begin_run_then_unfinished(&run, &["mate", "job", "idle"])
        .unwrap();
    assert_eq!((again, &reread), (Begun::Started, &read));

    // The end, then the queue: the oldest occurrence of a job no pause
    // holds at `now`.
    l.enqueue("mate", &[occ(120)], false, at(61)).unwrap();
    l.enqueue("job", &[occ(180)], false, at(61)).unwrap();
    l.pause("mate", None, None, "ops", at(62)).unwrap();
    let tries = [
        attempt(&run, 1, "build", AttemptOutcome::Failed, at(63)),
        attempt(&run, 2, "build", AttemptOutcome::Ok, at(70)),
    ];
    l.record_attempt(&tries[0]).unwrap();
    let next = l
        .finish_run_then_next(
            &tries[1..],
            &finished(&run, 80, true),
            10,
            &["mate", "job"],
            at(90),
        )
        .unwrap();
    assert_eq!(next, Some(("job".into(), occ(180))), "mate is paused");
    assert_eq!(l.next_unpaused(&["mate", "job"], at(90)).unwrap(), next);
    log.note("next", &next);
    // As the same end recorded with finish_run_after.
    let alone = scheduled("alone", "00000000000000d4", 60);
    l.begin_run(&alone).unwrap();
    l.record_attempt(&attempt(&alone, 1, "build", AttemptOutcome::Failed, at(63)))
        .unwrap();
    l.finish_run_after(
        &[attempt(&alone, 2, "build", AttemptOutcome::Ok, at(70))],
        &finished(&alone, 80, true),
        10,
    )
    .unwrap();
    let ended = run_and_steps(l, "job");
    assert_eq!(ended, run_and_steps(l, "alone"));
    let counted = l.tallies().unwrap();
    // Recorded again: nothing more is counted, the queue read the same.
    let twice = l
        .finish_run_then_next(
            &tries[1..],
            &finished(&run, 500, false),
            10,
            &["mate", "job"],
            at(90),
        )
        .unwrap();
    assert_eq!(twice, next);
    assert_eq!(run_and_steps(l, "job"), ended);
    assert_eq!(l.tallies().unwrap(), counted);

    // An end that names another job's run: nothing written, nothing read.
    let other = scheduled("job", "00000000000000d5", 240);
    l.begin_run(&other).unwrap();
    let mut wrong = finished(&other, 250, true);
    wrong.job = "mate".into();
    let problem = refused(
        l.finish_run_then_next(&[], &wrong, 10, &["job"], at(260))
            .unwrap_err(),
    );
    assert_eq!(problem, "run 00000000000000d5 belongs to job job, not mate");
    assert_eq!(
        l.running("job").unwrap().map(|r| r.run_id),
        Some(other.run_id.clone())
    );
    log.note("refused", &problem);
}

/// The last run of `job` and its steps, without the names.
fn run_and_steps(l: &mut Store, job: &str) -> String {
    let mut run = l.last_run(job).unwrap().unwrap();
    run.run_id.clear();
    run.job.clear();
    let mut steps = l.steps(job).unwrap();
    for s in &mut steps {
        s.job.clear();
    }
    format!("{run:?}\n{steps:?}")
}

/// A run in flight keeps its row, however many newer runs end past
/// `history_keep` (a job with slots, or a lowered `history_keep`): only
/// runs that ended are pruned.
fn pruning_keeps_a_run_in_flight_however_old(l: &mut Store, log: &mut Log) {
    let long = scheduled("j", "00000000000000a0", 0);
    l.begin_run(&long).unwrap();
    for i in 1..4 {
        let run = scheduled("j", &format!("{:016x}", 0xa0 + i), 60 * i);
        l.begin_run(&run).unwrap();
        l.finish_run(&finished(&run, 1, true), 1).unwrap();
    }
    let left: Vec<_> = l
        .history("j", 10)
        .unwrap()
        .into_iter()
        .map(|r| (r.run_id, r.finished.is_some()))
        .collect();
    assert_eq!(
        left,
        [
            ("00000000000000a3".to_string(), true),
            ("00000000000000a0".to_string(), false),
        ],
        "the newest run that ended, and the run in flight"
    );
    // Its end is the last: it is the run kept.
    l.finish_run(&finished(&long, 600, true), 1).unwrap();
    let ended = l.history("j", 10).unwrap();
    let kept: Vec<_> = ended
        .iter()
        .map(|r| (r.run_id.as_str(), r.finished.is_some()))
        .collect();
    assert_eq!(kept, [("00000000000000a0", true)], "its end is recorded");
    log.note("history", &ended);
}
