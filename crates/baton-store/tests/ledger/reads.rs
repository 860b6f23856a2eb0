//! The reads that gather many at once: a tick's overview, the status of
//! several jobs, and the next queued occurrence of a lock's unpaused jobs.
//! Each must return exactly what the single reads it gathers return.

use baton_store::ledger::{JobAsk, JobRecord, NewAlert};
use baton_store::words::{AlertKind, AttemptOutcome, MissReason};

use crate::support::{Log, Store, at, attempt, finished, occ, range, scheduled};

both! {
    the_overview_holds_the_jobs_and_the_queue
    a_job_record_holds_what_each_read_returns
    a_paused_jobs_queue_waits_for_the_resume
}

fn the_overview_holds_the_jobs_and_the_queue(l: &mut Store, log: &mut Log) {
    let empty = l.overview().unwrap();
    assert!(empty.jobs.is_empty() && empty.queued.is_empty());
    l.see_jobs(&["a", "b", "c"], at(0)).unwrap();
    l.enqueue("b", &[occ(60), occ(120)], false, at(60)).unwrap();
    l.begin_run(&scheduled("c", "00000000000000c1", 0)).unwrap();
    let o = l.overview().unwrap();
    assert_eq!(o.jobs, l.jobs().unwrap());
    assert_eq!(o.queued, l.queued_jobs().unwrap());
    assert_eq!(o.queued, ["b"]);
    // A store several hosts share reads its clock with them; one of this
    // host alone has none.
    assert_eq!(o.clock.is_some(), l.url().is_some());
    log.note("jobs", &o.jobs);
    log.note("queued", &o.queued);
}

fn a_job_record_holds_what_each_read_returns(l: &mut Store, log: &mut Log) {
    // Job `j`: a finished run with an attempt, then one in flight; missed
    // ranges; a pause that ended; a queue; a watermark; alerts.
    let done = scheduled("j", "00000000000000a1", 0);
    l.begin_run(&done).unwrap();
    l.record_attempt(&attempt(&done, 1, "main", AttemptOutcome::Ok, at(0)))
        .unwrap();
    l.finish_run(&finished(&done, 10, true), 10).unwrap();
    let flying = scheduled("j", "00000000000000a2", 60);
    l.begin_run(&flying).unwrap();
    l.record_attempt(&attempt(&flying, 1, "main", AttemptOutcome::Failed, at(60)))
        .unwrap();
    l.miss(
        &range("j", MissReason::LedgerUnavailable, 120, 240),
        at(300),
    )
    .unwrap();
    l.miss(&range("j", MissReason::Paused, 360, 360), at(400))
        .unwrap();
    l.pause("j", None, Some("maintenance"), "alice", at(410))
        .unwrap();
    l.resume("j", at(420)).unwrap();
    l.enqueue("j", &[occ(480), occ(540)], false, at(480))
        .unwrap();
    l.settle(
        "j",
        "2026-11-29",
        Some("00000000000000a1"),
        Some(1_000),
        at(15),
    )
    .unwrap();
    for (secs, kind) in [(20, AlertKind::StepFailed), (30, AlertKind::Missed)] {
        l.record_alert(&NewAlert {
            time: at(secs),
            job: Some("j".into()),
            kind,
            run_id: Some("00000000000000a1".into()),
            occurrence: Some(occ(0)),
            message: format!("{kind} at {secs}"),
            json: format!("{{\"kind\":\"{kind}\"}}"),
        })
        .unwrap();
    }
    l.see_jobs(&["idle"], at(0)).unwrap();

    let asks = [
        JobAsk {
            job: "j".into(),
            occurrence: Some(occ(60)),
            alerts: 1,
            missed: 1,
        },
        JobAsk {
            job: "nobody".into(),
            occurrence: Some(occ(60)),
            alerts: 5,
            missed: 16,
        },
        JobAsk {
            job: "idle".into(),
            occurrence: None,
            alerts: 5,
            missed: 16,
        },
    ];
    let records = l.job_records(&asks).unwrap();
    assert_eq!(records.len(), 3, "one record a job asked, in order");
    for (ask, record) in asks.iter().zip(&records) {
        let job = ask.job.as_str();
        let one_by_one = JobRecord {
            state: l.job(job).unwrap(),
            last: l.last_run(job).unwrap(),
            running: l.running(job).unwrap(),
            steps: l.steps(job).unwrap(),
            missed_counts: l.missed_counts(job).unwrap(),
            missed: l.missed(job, ask.missed).unwrap(),
            pause: l.pauses(job, 1).unwrap().into_iter().next(),
            queued: l.queued(job).unwrap(),
            watermark: l.watermark(job).unwrap(),
            alerts: l.recent_alerts(Some(job), ask.alerts).unwrap(),
            decision: match ask.occurrence {
                Some(at) => l.decision(job, at).unwrap(),
                None => None,
            },
        };
        assert_eq!(record, &one_by_one, "{job}'s record");
        log.note(job, record);
    }
    let j = &records[0];
    assert_eq!(
        j.last.as_ref().map(|r| r.run_id.as_str()),
        Some("00000000000000a2")
    );
    assert_eq!(j.running.as_ref().map(|r| r.attempts.len()), Some(1));
    assert_eq!((j.missed.len(), j.alerts.len(), j.queued.len()), (1, 1, 2));
    assert!(j.decision.is_some() && j.pause.is_some() && j.watermark.is_some());
    assert_eq!(records[1], JobRecord::default(), "a job never heard of");
    assert!(records[2].state.is_some() && records[2].decision.is_none());
    // With the runs in flight of the jobs not named: the same records, and
    // every unfinished run of another job, oldest first.
    let gone = scheduled("gone", "00000000000000b1", 30);
    l.begin_run(&gone).unwrap();
    let known: Vec<String> = asks.iter().map(|a| a.job.clone()).collect();
    let (again, others) = l.job_records_and_others(&asks, &known).unwrap();
    assert_eq!(again, records);
    let ids: Vec<&str> = others.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["00000000000000b1"]);
    let (_, all) = l.job_records_and_others(&[], &[]).unwrap();
    let ids: Vec<&str> = all.iter().map(|r| r.run_id.as_str()).collect();
    assert_eq!(ids, ["00000000000000b1", "00000000000000a2"]);
    log.note("others", &ids);
}

fn a_paused_jobs_queue_waits_for_the_resume(l: &mut Store, log: &mut Log) {
    l.enqueue("a", &[occ(0)], false, at(0)).unwrap();
    l.enqueue("b", &[occ(60)], false, at(60)).unwrap();
    let both = ["a", "b"];
    assert_eq!(
        l.next_unpaused(&both, at(100)).unwrap(),
        Some(("a".into(), occ(0)))
    );
    l.pause("a", Some(at(300)), None, "alice", at(100)).unwrap();
    // Paused: its queue waits, and the other job's runs first.
    assert_eq!(
        l.next_unpaused(&both, at(200)).unwrap(),
        Some(("b".into(), occ(60)))
    );
    assert_eq!(l.next_queued(&both).unwrap(), Some(("a".into(), occ(0))));
    assert_eq!(l.next_unpaused(&["a"], at(200)).unwrap(), None);
    // The pause lapses on its own.
    assert_eq!(
        l.next_unpaused(&both, at(300)).unwrap(),
        Some(("a".into(), occ(0)))
    );
    l.pause("b", None, None, "alice", at(310)).unwrap();
    l.pause("a", None, None, "alice", at(310)).unwrap();
    assert_eq!(l.next_unpaused(&both, at(320)).unwrap(), None);
    l.resume("b", at(330)).unwrap();
    let next = l.next_unpaused(&both, at(340)).unwrap();
    assert_eq!(next, Some(("b".into(), occ(60))));
    assert_eq!(l.next_unpaused(&[], at(340)).unwrap(), None);
    log.note("next", &next);
}
