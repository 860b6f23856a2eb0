//! Fencing: a displaced holder changes nothing and learns it lost; fences
//! strictly increase across acquisitions, breaks and a deleted file.

use baton_lease::record::{Body, Held};
use baton_lease::{BreakMode, Broken, Fence, Lock, Outcome, Release, Renewal};

use crate::support::{Dir, a_dead_pid};

fn take(lock: &Lock) -> baton_lease::Lease {
    match lock.try_acquire().unwrap() {
        Outcome::Acquired(l) => l,
        other => panic!("{}", other.describe()),
    }
}

#[test]
fn a_displaced_holders_renew_and_release_leave_the_successor_alone() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let mut first = take(&lock);
    assert!(matches!(
        lock.break_lease(BreakMode::Force).unwrap(),
        Broken::Freed { .. }
    ));
    let second = take(&lock);
    assert!(second.fence() > first.fence());
    let before = std::fs::read(dir.lock()).unwrap();

    match first.renew().unwrap() {
        Renewal::Lost(lost) => match lost.found {
            Some(Body::Held(h)) => assert_eq!(h.token, second.token()),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert!(matches!(first.release().unwrap(), Release::Lost(_)));
    assert_eq!(
        std::fs::read(dir.lock()).unwrap(),
        before,
        "the successor's record changed"
    );
    assert_eq!(second.release().unwrap(), Release::Released);
}

#[test]
fn a_guard_whose_file_was_deleted_has_lost_its_lease() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let mut lease = take(&lock);
    std::fs::remove_file(dir.lock()).unwrap();
    assert!(matches!(
        lease.renew().unwrap(),
        Renewal::Lost(baton_lease::Lost { found: None, .. })
    ));
    // While the displaced holder lives, its presence refuses a new lease at
    // the empty path.
    assert!(matches!(
        lock.try_acquire().unwrap(),
        Outcome::Busy(baton_lease::Busy::Elsewhere { pid }) if pid == std::process::id()
    ));
    assert!(matches!(lease.release().unwrap(), Release::Lost(_)));
    let fresh = take(&lock);
    assert!(fresh.fence() > Fence::new(0));
}

#[test]
fn every_acquisition_gets_a_fresh_token() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let mut seen = std::collections::HashSet::new();
    for _ in 0..200 {
        let l = take(&lock);
        assert!(seen.insert(l.token()));
        assert_eq!(l.token().to_string().len(), 16);
    }
}

/// Writes a lease held by a process that no longer exists, on this machine.
fn plant_dead_holder(lock: &Lock, dead_pid: u32) {
    let l = take(lock);
    let mut h: Held = l.record().clone();
    // Let go of as a crash would: the kernel closes a dead holder's
    // descriptors (its presence among them); the record is planted below.
    assert_eq!(l.release().unwrap(), Release::Released);
    h.pid = dead_pid;
    std::fs::write(lock.path(), h.render()).unwrap();
}

#[test]
fn fences_strictly_increase_over_a_thousand_acquisitions() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let dead = a_dead_pid();
    let mut last = Fence::new(0);
    for i in 0..1000 {
        if i % 100 == 50 {
            std::fs::remove_file(dir.lock()).unwrap(); // an operator clears it by hand
        } else if i % 10 == 3 {
            plant_dead_holder(&lock, dead); // a crash: broken on evidence
        } else if i % 10 == 7 {
            let live = take(&lock);
            let f = live.fence();
            assert!(f > last);
            last = f;
            assert!(matches!(
                lock.break_lease(BreakMode::Force).unwrap(),
                Broken::Freed { .. }
            ));
            // The broken holder ends: its release finds the lease gone and
            // writes nothing, and its presence goes with it.
            drop(live);
        }
        let l = take(&lock);
        assert!(
            l.fence() > last,
            "acquisition {i}: {} after {last}",
            l.fence()
        );
        last = l.fence();
        l.release().unwrap();
    }
}
