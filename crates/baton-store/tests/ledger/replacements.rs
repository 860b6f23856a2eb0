//! Requests that a run stop for a later run of its job (`overlap =
//! "replace"`): recorded once per run and job, read back only for that
//! pair (a run of a job sharing the lock never reads another job's
//! request), and forgotten when the run ends.

use baton_store::ledger::Replacement;
use baton_store::words::RunVerdict;

use crate::support::{Log, Store, at, finished, occ, scheduled};

both! {
    a_request_is_read_back_only_for_its_run_and_job
    a_request_goes_when_its_run_ends_and_a_stale_one_a_day_later
    a_request_taken_back_is_gone_and_another_askers_stays
}

fn request(run: &str, job: &str, by: Option<i64>, secs: i64) -> Replacement {
    Replacement {
        run_id: run.into(),
        job: job.into(),
        by,
        asked: at(secs),
    }
}

fn a_request_is_read_back_only_for_its_run_and_job(l: &mut Store, log: &mut Log) {
    let run = scheduled("j", "00000000000000a1", 0);
    l.begin_run(&run).unwrap();
    assert_eq!(l.replacement(&run.run_id, "j").unwrap(), None);
    let first = request(&run.run_id, "j", Some(occ(60)), 61);
    assert!(
        l.ask_replace(&first).unwrap(),
        "the first request is recorded"
    );
    // Asked again (a later occurrence, a run by hand): the first stands.
    assert!(!l.ask_replace(&request(&run.run_id, "j", None, 62)).unwrap());
    let read = l.replacement(&run.run_id, "j").unwrap();
    assert_eq!(
        read.as_ref(),
        Some(&first),
        "every field comes back as written"
    );
    log.note("read", &read);
    // A job sharing the lock asked the same run: its request is its own,
    // and the run's job never reads it.
    let mate = request(&run.run_id, "k", None, 63);
    assert!(l.ask_replace(&mate).unwrap());
    assert_eq!(l.replacement(&run.run_id, "k").unwrap(), Some(mate));
    assert_eq!(l.replacement(&run.run_id, "j").unwrap(), Some(first));
    // A run the ledger has not recorded yet (its holder between taking the
    // lease and recording its start) can be asked all the same.
    let early = request("00000000000000b2", "j", Some(occ(120)), 121);
    assert!(l.ask_replace(&early).unwrap());
    assert_eq!(l.replacement("00000000000000b2", "j").unwrap(), Some(early));
    assert_eq!(l.replacement("00000000000000c3", "j").unwrap(), None);
}

fn a_request_goes_when_its_run_ends_and_a_stale_one_a_day_later(l: &mut Store, log: &mut Log) {
    let run = scheduled("j", "00000000000000a1", 0);
    l.begin_run(&run).unwrap();
    l.ask_replace(&request(&run.run_id, "j", Some(occ(60)), 61))
        .unwrap();
    // A request for a run that ended before it was read (it came late).
    l.ask_replace(&request("00000000000000d4", "j", None, 70))
        .unwrap();
    let mut end = finished(&run, 90, false);
    end.verdict = RunVerdict::Replaced;
    l.finish_run(&end, 10).unwrap();
    assert_eq!(l.replacement(&run.run_id, "j").unwrap(), None);
    let late = l.replacement("00000000000000d4", "j").unwrap();
    assert!(late.is_some(), "younger than a day: kept");
    log.note("late", &late);
    let next = scheduled("j", "00000000000000e5", 86_500);
    l.begin_run(&next).unwrap();
    l.finish_run(&finished(&next, 86_510, true), 10).unwrap();
    assert_eq!(l.replacement("00000000000000d4", "j").unwrap(), None);
    // A replaced run is recorded with its verdict, and counts as neither a
    // success nor a failure of its job.
    let job = l.job("j").unwrap().unwrap();
    assert_eq!(job.consecutive_failures, 0);
    let history = l.history("j", 10).unwrap();
    assert_eq!(history[1].verdict, Some(RunVerdict::Replaced));
    log.note("history", &history.len());
}

fn a_request_taken_back_is_gone_and_another_askers_stays(l: &mut Store, _log: &mut Log) {
    let run = scheduled("j", "00000000000000a1", 0);
    l.begin_run(&run).unwrap();
    let mine = request(&run.run_id, "j", None, 61);
    assert!(l.ask_replace(&mine).unwrap());
    assert!(l.withdraw_replace(&mine).unwrap(), "taken back");
    assert_eq!(l.replacement(&run.run_id, "j").unwrap(), None);
    assert!(!l.withdraw_replace(&mine).unwrap(), "nothing left to take");
    // Another asker's request, recorded first, is not this asker's to take.
    let theirs = request(&run.run_id, "j", Some(occ(60)), 62);
    assert!(l.ask_replace(&theirs).unwrap());
    assert!(!l.ask_replace(&request(&run.run_id, "j", None, 63)).unwrap());
    assert!(
        !l.withdraw_replace(&request(&run.run_id, "j", None, 63))
            .unwrap()
    );
    assert_eq!(l.replacement(&run.run_id, "j").unwrap(), Some(theirs));
}
