//! The lease is renewed every third of its TTL, through steps and the
//! pauses between them, and a renewal that does not get through is told
//! without stopping anything while the TTL lasts.

use std::time::Duration;

use baton_runner::{Ending, Event, Finish, Paused, SessionConfig};
use baton_store::Renewal;

use crate::support::{
    Call, Dir, Events, Store, Touch, What, down, eventually, lock_file, now, record, sh, start,
    wait_file, write_group,
};

listed!(TESTS:
    renewals_come_every_third_of_the_ttl_through_a_step,
    renewals_come_every_third_of_the_ttl_through_a_pause,
    the_lock_files_record_is_renewed_while_a_step_runs,
    a_renewal_that_does_not_get_through_is_told_and_the_step_runs_on,
);

/// Checks that renewals were paced at a third of `ttl` from `from` to `to`:
/// each one started at least a third of the TTL after the one before it
/// answered (the period counts from the answer), and no stretch of half
/// the TTL went by without one starting. Half, not a third: the rest is
/// room for a loaded machine; renewals spaced at half the TTL or more, or
/// made at every wake-up, fail it.
fn assert_paced(from: Duration, renewals: &[Call], to: Duration, ttl: Duration) {
    assert!(!renewals.is_empty(), "no renewal at all");
    for pair in renewals.windows(2) {
        let answered = pair[0].end.expect("a renewal that never answered");
        assert!(
            pair[1].start >= answered + ttl / 3,
            "a renewal came {:?} after the previous one answered, sooner than a third of the \
             TTL {ttl:?}",
            pair[1].start - answered
        );
    }
    let mut at = from;
    for t in renewals.iter().map(|c| c.start).chain([to]) {
        assert!(
            t.saturating_sub(at) < ttl / 2,
            "{:?} went by without a renewal (TTL {ttl:?}): {renewals:?}",
            t.saturating_sub(at)
        );
        at = t;
    }
}

fn renewals_come_every_third_of_the_ttl_through_a_step() {
    let ttl = Duration::from_millis(1500);
    let dir = Dir::new();
    let enough = dir.path("enough");
    let (store, calls) = Store::new(ttl);
    let store = store.on_renew({
        let enough = enough.clone();
        move |n| {
            if n == 4 {
                std::fs::write(&enough, "4\n").unwrap();
            }
            Ok(Renewal::Renewed)
        }
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    // The step lasts until the fourth renewal.
    let r = s.run(sh(&wait_file(&enough), true));
    let ended = now();
    assert_eq!(r.ending, Ending::Exited(0));
    assert_eq!(s.finish(), Finish::Released);
    let all = calls.all();
    let recorded = all.iter().position(|c| matches!(c.what, What::Record(_)));
    let recorded = &all[recorded.expect("the step's group was never recorded")];
    let renewals = calls.renewals();
    assert!(renewals.len() >= 4, "{renewals:?}");
    assert_paced(recorded.start, &renewals, ended, ttl);
    assert!(events.0.is_empty(), "{:?}", events.0);
}

fn renewals_come_every_third_of_the_ttl_through_a_pause() {
    let ttl = Duration::from_millis(1500);
    let (store, calls) = Store::new(ttl);
    let mut events = Events::default();
    let from = now();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    assert_eq!(s.pause(Duration::from_millis(2200)), Paused::Elapsed);
    let to = now();
    assert_eq!(s.finish(), Finish::Released);
    let renewals = calls.renewals();
    assert!(renewals.len() >= 3, "{renewals:?}");
    assert_paced(from, &renewals, to, ttl);
}

fn the_lock_files_record_is_renewed_while_a_step_runs() {
    let dir = Dir::new();
    let (lock, lease) = lock_file(&dir.path("job.lock"), Duration::from_millis(900));
    let token = lease.token().to_string();
    let mut events = Events::default();
    let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
    let (group, enough) = (dir.path("group"), dir.path("enough"));
    // Another process's view, through the lock file's own mutex: the
    // record stays ours and is renewed, again and again, while the step
    // runs; the step lasts until it was seen renewed three times.
    let watcher = std::thread::spawn({
        let (lock, token, group, enough) =
            (lock.clone(), token.clone(), group.clone(), enough.clone());
        move || {
            // The step ends when this thread does, whatever it found.
            let _end = Touch(enough);
            let group: u32 = crate::support::read_pid(&group);
            let mut seen = Vec::new();
            eventually("the record to be renewed three times", || {
                let h = record(&lock).expect("the lease vanished while the step ran");
                assert_eq!(h.token.to_string(), token);
                assert_eq!(
                    h.pgid,
                    Some(group),
                    "the record does not name the step's group"
                );
                if seen.last() != Some(&h.renewed) {
                    seen.push(h.renewed);
                }
                seen.len() > 3
            });
        }
    });
    let r = s.run(sh(
        &format!("{}; {}", write_group(&group), wait_file(&enough)),
        true,
    ));
    watcher.join().unwrap();
    assert_eq!(r.ending, Ending::Exited(0), "{:?}", events.0);
    assert_eq!(s.finish(), Finish::Released);
    assert!(record(&lock).is_none(), "the lease was not released");
}

fn a_renewal_that_does_not_get_through_is_told_and_the_step_runs_on() {
    let ttl = Duration::from_millis(1500);
    let dir = Dir::new();
    let enough = dir.path("enough");
    let (store, calls) = Store::new(ttl);
    // Every other renewal fails; the good ones keep the lease within its TTL.
    let store = store.on_renew({
        let enough = enough.clone();
        move |n| match n {
            1 => Ok(Renewal::Unconfirmed("no answer from the store".into())),
            3 => Err(down()),
            4 => {
                std::fs::write(&enough, "4\n").unwrap();
                Ok(Renewal::Renewed)
            }
            _ => Ok(Renewal::Renewed),
        }
    });
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    let r = s.run(sh(&wait_file(&enough), true));
    assert_eq!(r.ending, Ending::Exited(0));
    assert!(s.lost().is_none());
    assert_eq!(s.finish(), Finish::Released);
    assert!(calls.renewals().len() >= 4);
    let troubles: Vec<&String> = events
        .0
        .iter()
        .filter_map(|e| match e {
            Event::RenewTrouble { why } => Some(why),
            _ => None,
        })
        .collect();
    assert_eq!(troubles.len(), 2, "{:?}", events.0);
    assert!(
        troubles[0].contains("no answer from the store"),
        "{}",
        troubles[0]
    );
    assert!(troubles[1].contains("the store is down"), "{}", troubles[1]);
    assert_eq!(events.count(|e| matches!(e, Event::LeaseLost { .. })), 0);
}
