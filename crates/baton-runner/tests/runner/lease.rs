//! What a session asks of its lease between and after steps: restating the
//! run and its claim, taking a claim back, and the release, which frees
//! the lease only while it is still ours. Whatever the store answers is
//! told, never raised: a lost lease stops the run, a store out of reach
//! leaves the lease to lapse.

use std::time::Duration;

use baton_lease::Once;
use baton_runner::{Ending, Event, Finish, SessionConfig};
use baton_store::{Release, Restated};

use crate::support::{Dir, Events, Store, What, down, lock_file, record, sh, start};

listed!(TESTS:
    a_run_is_restated_and_its_claim_taken_back_on_the_lock_file,
    a_restatement_that_finds_the_lease_lost_ends_the_run,
    a_release_is_told_whatever_the_store_answers,
);

fn a_run_is_restated_and_its_claim_taken_back_on_the_lock_file() {
    let dir = Dir::new();
    let (lock, lease) = lock_file(&dir.path("job.lock"), Duration::from_secs(30));
    let mut events = Events::default();
    let mut s = start(Box::new(lease), SessionConfig::default(), &mut events);
    let once = Once {
        key: "job".into(),
        at: baton_testkit::wall_seconds(),
    };
    let r = s.restate(Some("run-2".into()), Some("occ-2".into()), Some(&once));
    assert_eq!(r.unwrap(), Restated::Done);
    let h = record(&lock).unwrap();
    assert_eq!(
        (h.run.as_deref(), h.occ.as_deref()),
        (Some("run-2"), Some("occ-2"))
    );
    assert_eq!(h.claims.get("job"), Some(once.at));
    // The same occurrence cannot be claimed twice.
    let r = s.restate(Some("run-3".into()), None, Some(&once));
    assert_eq!(r.unwrap(), Restated::Claimed { at: once.at });
    assert!(s.withdraw(&once).unwrap());
    assert_eq!(record(&lock).unwrap().claims.get("job"), None);
    assert_eq!(s.run(sh("exit 0", true)).ending, Ending::Exited(0));
    assert_eq!(s.finish(), Finish::Released);
    assert!(record(&lock).is_none());
}

fn a_restatement_that_finds_the_lease_lost_ends_the_run() {
    let dir = Dir::new();
    let (store, calls) = Store::new(Duration::from_secs(30));
    let mut answers = vec![
        Ok(Restated::Lost("the record names another holder".into())),
        Ok(Restated::Claimed { at: 5 }),
        Ok(Restated::Unconfirmed("no answer".into())),
        Err(down()),
    ];
    let store = store.on_restate(move || answers.pop().unwrap());
    let mut events = Events::default();
    let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
    // A failure, no answer and a refused claim leave the lease as it was.
    assert!(s.restate(None, None, None).is_err());
    assert!(matches!(
        s.restate(None, None, None),
        Ok(Restated::Unconfirmed(_))
    ));
    assert_eq!(
        s.restate(None, None, None).unwrap(),
        Restated::Claimed { at: 5 }
    );
    assert!(s.lost().is_none());
    assert_eq!(s.run(sh("exit 0", true)).ending, Ending::Exited(0));
    assert!(matches!(s.restate(None, None, None), Ok(Restated::Lost(_))));
    assert!(s.lost().is_some_and(|w| w.contains("another holder")));
    let later = dir.path("later");
    let r = s.run(sh(&format!("echo ran > {}", later.display()), true));
    assert_eq!(r.ending, Ending::LeaseLost);
    assert!(!later.exists(), "a step ran after the lease was lost");
    assert!(matches!(s.finish(), Finish::Lost(_)));
    assert_eq!(calls.recorded().len(), 1);
    assert_eq!(events.count(|e| matches!(e, Event::LeaseLost { .. })), 1);
}

fn a_release_is_told_whatever_the_store_answers() {
    type Answer = fn() -> Result<Release, baton_store::HeldError>;
    type Expected = fn(&Finish) -> bool;
    let answers: [(Answer, Expected); 4] = [
        (|| Ok(Release::Released), |f| *f == Finish::Released),
        (
            || Ok(Release::Lost("the record names another holder".into())),
            |f| matches!(f, Finish::Lost(w) if w.contains("changed nothing")),
        ),
        (
            || Ok(Release::Unconfirmed("no answer".into())),
            |f| matches!(f, Finish::Unconfirmed(w) if w.contains("frees itself")),
        ),
        (
            || Err(down()),
            |f| matches!(f, Finish::Unconfirmed(w) if w.contains("the store is down")),
        ),
    ];
    for (answer, expected) in answers {
        let (store, calls) = Store::new(Duration::from_secs(30));
        let store = store.on_release(answer);
        let mut events = Events::default();
        let mut s = start(Box::new(store), SessionConfig::default(), &mut events);
        assert_eq!(s.run(sh("exit 0", true)).ending, Ending::Exited(0));
        let f = s.finish();
        assert!(expected(&f), "{f:?}");
        // Released once, last.
        let all = calls.all();
        assert_eq!(all.last().map(|c| c.what), Some(What::Release));
        assert_eq!(calls.of(|w| w == What::Release).len(), 1);
    }
}
