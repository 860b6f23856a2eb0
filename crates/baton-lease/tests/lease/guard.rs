//! A key's guard: a key whose lock changes from one run to the next never
//! holds two leases at once for it, and an occurrence it claimed under one
//! lock is not claimed again under another.

use std::sync::atomic::{AtomicUsize, Ordering};

use baton_lease::{Guarded, Lock, Outcome, Verdict};

use crate::support::Dir;

#[test]
fn a_key_running_under_one_lock_is_refused_under_another_until_that_run_ends() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    let (a, b) = (Lock::new(dir.path("a.lock")), Lock::new(dir.path("b.lock")));
    assert_eq!(a.guard_of(&guard, None).unwrap(), Guarded::Clear);
    assert!(!guard.exists(), "a look created the guard");
    let Outcome::Acquired(first) = a.try_acquire().unwrap() else {
        panic!("a fresh lock was not taken")
    };
    assert_eq!(
        a.take_guard(&guard, first.fence(), Some(100)).unwrap(),
        Guarded::Clear
    );
    // Under lock b, while the run under a holds its lease: refused, both to
    // a look and to a take, naming lock a and its live holder.
    let Outcome::Acquired(second) = b.try_acquire().unwrap() else {
        panic!("lock b was not free")
    };
    for found in [
        b.guard_of(&guard, Some(200)).unwrap(),
        b.take_guard(&guard, second.fence(), Some(200)).unwrap(),
    ] {
        match found {
            Guarded::Elsewhere { lock, verdict } => {
                assert_eq!(lock, dir.path("a.lock"));
                assert!(matches!(verdict, Verdict::Live { .. }), "{verdict:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    let before = std::fs::read_to_string(&guard).unwrap();
    assert!(before.contains("lock=a.lock"), "{before}");
    // The same lock takes its own guard again.
    assert_eq!(
        a.take_guard(&guard, first.fence(), None).unwrap(),
        Guarded::Clear
    );
    first.release().unwrap();
    // The run under a is over: the occurrence it claimed stays claimed,
    // and a later one runs under b.
    assert_eq!(
        b.take_guard(&guard, second.fence(), Some(100)).unwrap(),
        Guarded::Claimed { at: 100 }
    );
    assert_eq!(
        b.take_guard(&guard, second.fence(), Some(200)).unwrap(),
        Guarded::Clear
    );
    let after = std::fs::read_to_string(&guard).unwrap();
    assert!(
        after.contains("lock=b.lock") && after.contains("claim=200"),
        "{after}"
    );
    // A manual run (no occurrence) keeps the claim.
    assert_eq!(
        b.take_guard(&guard, second.fence(), None).unwrap(),
        Guarded::Clear
    );
    assert!(
        std::fs::read_to_string(&guard)
            .unwrap()
            .contains("claim=200")
    );
}

#[test]
fn a_claim_taken_back_lets_the_occurrence_start_under_another_lock_and_no_earlier_one() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    let (a, b) = (Lock::new(dir.path("a.lock")), Lock::new(dir.path("b.lock")));
    // An earlier run under a claimed 100.
    let Outcome::Acquired(first) = a.try_acquire().unwrap() else {
        panic!("a fresh lock was not taken")
    };
    a.take_guard(&guard, first.fence(), Some(100)).unwrap();
    first.release().unwrap();
    // A run under a claims 200 and does not start after all.
    let Outcome::Acquired(second) = a.try_acquire().unwrap() else {
        panic!("lock a was not free")
    };
    let (found, taken) = a
        .take_guard_undoably(&guard, second.fence(), Some(200))
        .unwrap();
    assert_eq!(found, Guarded::Clear);
    let taken = taken.expect("a take that claimed says what it changed");
    assert_eq!((taken.before, taken.claim), (Some(100), Some(200)));
    // Another lock may not take the claim back.
    assert!(!b.withdraw_guard(&guard, &taken).unwrap());
    assert!(a.withdraw_guard(&guard, &taken).unwrap());
    assert!(
        !a.withdraw_guard(&guard, &taken).unwrap(),
        "taken back twice"
    );
    second.release().unwrap();
    // Under b, 200 may start; 100 still may not.
    assert_eq!(
        b.guard_of(&guard, Some(100)).unwrap(),
        Guarded::Claimed { at: 100 }
    );
    assert_eq!(b.guard_of(&guard, Some(200)).unwrap(), Guarded::Clear);
}

#[test]
fn a_claim_is_not_taken_back_once_another_run_took_the_guard() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    let (a, b) = (Lock::new(dir.path("a.lock")), Lock::new(dir.path("b.lock")));
    let Outcome::Acquired(first) = a.try_acquire().unwrap() else {
        panic!("a fresh lock was not taken")
    };
    let (_, taken) = a
        .take_guard_undoably(&guard, first.fence(), Some(200))
        .unwrap();
    first.release().unwrap();
    let Outcome::Acquired(other) = b.try_acquire().unwrap() else {
        panic!("lock b was not free")
    };
    assert_eq!(
        b.take_guard(&guard, other.fence(), Some(300)).unwrap(),
        Guarded::Clear
    );
    assert!(!a.withdraw_guard(&guard, &taken.unwrap()).unwrap());
    let text = std::fs::read_to_string(&guard).unwrap();
    assert!(
        text.contains("lock=b.lock") && text.contains("claim=300"),
        "{text}"
    );
}

#[test]
fn a_dead_holder_under_the_former_lock_does_not_keep_its_key_away() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    let holder = crate::support::Holder::spawn("hold", &dir.path("a.lock"), &[]);
    assert!(holder.next().starts_with("acquired"));
    let a = Lock::new(dir.path("a.lock"));
    let fence = match a.inspect().unwrap().body {
        Some(baton_lease::record::Body::Held(h)) => h.fence,
        other => panic!("{other:?}"),
    };
    assert_eq!(a.take_guard(&guard, fence, None).unwrap(), Guarded::Clear);
    let b = Lock::new(dir.path("b.lock"));
    assert!(matches!(
        b.guard_of(&guard, None).unwrap(),
        Guarded::Elsewhere { .. }
    ));
    holder.kill9();
    // Its process is gone and its group empty: dead, as a contender for
    // lock a would find it.
    assert_eq!(b.guard_of(&guard, None).unwrap(), Guarded::Clear);
}

#[test]
fn a_guard_that_cannot_be_read_refuses_and_is_left_as_it_is() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    std::fs::write(&guard, "what is this\n").unwrap();
    let a = Lock::new(dir.path("a.lock"));
    let Outcome::Acquired(lease) = a.try_acquire().unwrap() else {
        panic!()
    };
    for e in [
        a.guard_of(&guard, None).unwrap_err(),
        a.take_guard(&guard, lease.fence(), None).unwrap_err(),
    ] {
        assert!(
            matches!(e, baton_lease::Error::UnreadableGuard { .. }),
            "{e}"
        );
        assert!(e.to_string().contains("remove the file"), "{e}");
    }
    assert_eq!(std::fs::read_to_string(&guard).unwrap(), "what is this\n");
}

#[test]
fn threads_taking_one_key_under_two_locks_never_hold_both() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    let inside = AtomicUsize::new(0);
    let most = AtomicUsize::new(0);
    let ran = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..8 {
            let (guard, inside, most, ran) = (&guard, &inside, &most, &ran);
            let lock = Lock::new(dir.path(if t % 2 == 0 { "a.lock" } else { "b.lock" }));
            s.spawn(move || {
                for _ in 0..40 {
                    let Outcome::Acquired(lease) = lock.try_acquire().unwrap() else {
                        continue;
                    };
                    if lock.take_guard(guard, lease.fence(), None).unwrap() == Guarded::Clear {
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        ran.fetch_add(1, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                    lease.release().unwrap();
                }
            });
        }
    });
    assert_eq!(most.into_inner(), 1);
    assert!(ran.into_inner() > 0);
}

#[test]
fn slots_of_one_lock_run_side_by_side_and_share_the_key_s_claim() {
    let dir = Dir::new();
    let guard = dir.path("job.job");
    let slot = |k| Lock::new(dir.path(&format!("{}.lock", baton_lease::slot::slot_name("db", k))));
    let (one, two, other) = (slot(1), slot(2), Lock::new(dir.path("dbx@2.lock")));
    let Outcome::Acquired(first) = one.try_acquire().unwrap() else {
        panic!("slot 1 was not free")
    };
    assert_eq!(
        one.take_guard(&guard, first.fence(), Some(100)).unwrap(),
        Guarded::Clear
    );
    // Slot 2, while slot 1's run holds its lease: not refused as another
    // lock would be, but the occurrence slot 1 claimed is the key's.
    let Outcome::Acquired(second) = two.try_acquire().unwrap() else {
        panic!("slot 2 was not free")
    };
    assert_eq!(
        two.take_guard(&guard, second.fence(), Some(100)).unwrap(),
        Guarded::Claimed { at: 100 }
    );
    assert_eq!(
        two.take_guard(&guard, second.fence(), Some(200)).unwrap(),
        Guarded::Clear
    );
    // And back: slot 1 may not claim what slot 2 claimed.
    assert_eq!(
        one.guard_of(&guard, Some(200)).unwrap(),
        Guarded::Claimed { at: 200 }
    );
    // A lock whose name only looks alike is another lock: refused while
    // slot 2's run holds its lease.
    let Outcome::Acquired(third) = other.try_acquire().unwrap() else {
        panic!("dbx@2 was not free")
    };
    assert!(matches!(
        other.take_guard(&guard, third.fence(), Some(300)).unwrap(),
        Guarded::Elsewhere { .. }
    ));
    for l in [first, second, third] {
        l.release().unwrap();
    }
}
