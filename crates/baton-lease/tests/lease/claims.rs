//! Occurrence claims: an occurrence claimed under a lock is started once,
//! however many contenders try it, one after another or at once, and the
//! claim outlives the release and a crash.

use baton_lease::{Claim, Lock, Once, Outcome, Release};

use crate::support::Dir;

fn claim(key: &str, at: i64) -> Claim {
    Claim {
        once: Some(Once {
            key: key.into(),
            at,
        }),
        ..Claim::default()
    }
}

#[test]
fn an_occurrence_is_claimed_once_and_a_later_one_after_it() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let Outcome::Acquired(lease) = lock.try_acquire_as(&claim("job", 100)).unwrap() else {
        panic!("a fresh lock was not taken")
    };
    assert_eq!(lease.release().unwrap(), Release::Released);
    // The same occurrence again, and an earlier one: refused, file untouched.
    let before = std::fs::read(dir.lock()).unwrap();
    for at in [100, 99] {
        match lock.try_acquire_as(&claim("job", at)).unwrap() {
            Outcome::Claimed { key, at: prior } => {
                assert_eq!(key, "job");
                assert_eq!(prior, 100);
            }
            other => panic!("{at}: {}", other.describe()),
        }
    }
    assert_eq!(std::fs::read(dir.lock()).unwrap(), before);
    // Another job sharing the lock has claims of its own.
    let Outcome::Acquired(lease) = lock.try_acquire_as(&claim("other", 100)).unwrap() else {
        panic!("another key was refused")
    };
    assert_eq!(lease.record().claims.get("job"), Some(100));
    lease.release().unwrap();
    // A manual run (no claim) keeps the claims.
    let Outcome::Acquired(lease) = lock.try_acquire().unwrap() else {
        panic!("a manual acquisition was refused")
    };
    lease.release().unwrap();
    assert!(matches!(
        lock.try_acquire_as(&claim("job", 100)).unwrap(),
        Outcome::Claimed { .. }
    ));
    let Outcome::Acquired(lease) = lock.try_acquire_as(&claim("job", 101)).unwrap() else {
        panic!("the next occurrence was refused")
    };
    assert_eq!(lease.record().claims.get("job"), Some(101));
    assert_eq!(lease.record().claims.get("other"), Some(100));
}

#[test]
fn a_busy_holder_tells_which_occurrence_it_runs() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let Outcome::Acquired(_lease) = lock.try_acquire_as(&claim("job", 7)).unwrap() else {
        panic!("a fresh lock was not taken")
    };
    match lock.try_acquire_as(&claim("job", 7)).unwrap() {
        Outcome::Busy(baton_lease::Busy::Held { holder, .. }) => {
            assert_eq!(holder.claim("job"), Some(7));
        }
        other => panic!("{}", other.describe()),
    }
}

#[test]
fn a_crashed_holders_claim_stands_after_its_lease_is_broken() {
    let dir = Dir::new();
    let holder = crate::support::Holder::spawn("hold", &dir.lock(), &["--claim", "job@42"]);
    assert!(holder.next().starts_with("acquired"));
    holder.kill9();
    let lock = Lock::new(dir.lock());
    // The holder is dead: its lease is broken, but its occurrence stays claimed.
    assert!(matches!(
        lock.try_acquire_as(&claim("job", 42)).unwrap(),
        Outcome::Claimed { at: 42, .. }
    ));
    assert!(matches!(
        lock.try_acquire_as(&claim("job", 43)).unwrap(),
        Outcome::Acquired(_)
    ));
}

#[test]
fn threads_claiming_one_occurrence_start_it_once() {
    for _ in 0..20 {
        let dir = Dir::new();
        let path = dir.lock();
        let barrier = std::sync::Barrier::new(8);
        let won = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    // Each contender releases at once, so later ones find the
                    // lock free and must be stopped by the claim alone.
                    if let Outcome::Acquired(lease) =
                        Lock::new(&path).try_acquire_as(&claim("job", 5)).unwrap()
                    {
                        won.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        lease.release().unwrap();
                    }
                });
            }
        });
        assert_eq!(won.into_inner(), 1);
    }
}

#[test]
fn threads_of_many_jobs_with_long_names_on_one_lock_each_start_once() {
    let names: Vec<String> = (0..20)
        .map(|i| format!("job-{i:02}-{}", "n".repeat(54)))
        .collect();
    let dir = Dir::new();
    let path = dir.lock();
    let won: Vec<_> = names
        .iter()
        .map(|_| std::sync::atomic::AtomicUsize::new(0))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                // Round after round, every job tries its occurrence; each
                // winner releases at once, so only the claims refuse.
                for _ in 0..5 {
                    for (i, name) in names.iter().enumerate() {
                        let c = Claim {
                            mates: names.clone(),
                            ..claim(name, 1_767_225_600)
                        };
                        if let Outcome::Acquired(lease) =
                            Lock::new(&path).try_acquire_as(&c).unwrap()
                        {
                            won[i].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            lease.release().unwrap();
                        }
                    }
                }
            });
        }
    });
    for (i, w) in won.iter().enumerate() {
        assert_eq!(
            w.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "{}",
            names[i]
        );
    }
    let on_disk = std::fs::read_to_string(&path).unwrap();
    assert!(on_disk.len() > 1024, "{on_disk}");
}

#[test]
fn a_claim_that_does_not_fit_is_refused_and_changes_nothing() {
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let names: Vec<String> = (0..1000)
        .map(|i| format!("{i:04}{}", "q".repeat(80)))
        .collect();
    let mut refused = None;
    for (i, name) in names.iter().enumerate() {
        let c = Claim {
            mates: names.clone(),
            ..claim(name, 7)
        };
        match lock.try_acquire_as(&c) {
            Ok(Outcome::Acquired(lease)) => {
                lease.release().unwrap();
            }
            Ok(other) => panic!("{}", other.describe()),
            Err(e) => {
                refused = Some((i, e));
                break;
            }
        }
    }
    let (i, e) = refused.expect("a thousand long claims fit one record");
    assert!(matches!(e, baton_lease::Error::ClaimsFull { .. }), "{e}");
    assert!(e.to_string().contains("a lock of their own"), "{e}");
    assert!(i > 500, "only {i} claims fit");
    // Every claim written before stands.
    for name in &names[..i] {
        assert!(matches!(
            lock.try_acquire_as(&claim(name, 7)).unwrap(),
            Outcome::Claimed { at: 7, .. }
        ));
    }
    // A job nobody names any more gives up its room to a mate.
    let newcomer = format!("new{}", "q".repeat(80));
    let c = Claim {
        mates: vec![newcomer.clone()],
        ..claim(&newcomer, 7)
    };
    let Outcome::Acquired(lease) = lock.try_acquire_as(&c).unwrap() else {
        panic!("a mate found no room")
    };
    assert_eq!(lease.record().claims.get(&newcomer), Some(7));
    assert_eq!(lease.record().claims.get(&names[0]), None);
    assert_eq!(lease.record().claims.get(&names[i - 1]), Some(7));
}

#[test]
fn a_holder_restates_its_claim_forward_only_and_not_after_losing_the_lease() {
    use baton_lease::Restated;
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let Outcome::Acquired(mut lease) = lock.try_acquire_as(&claim("job", 100)).unwrap() else {
        panic!("a fresh lock was not taken")
    };
    let next = |at| Once {
        key: "job".into(),
        at,
    };
    // The same occurrence or an earlier one: refused, nothing written.
    let before = std::fs::read(dir.lock()).unwrap();
    for at in [100, 50] {
        assert_eq!(
            lease.restate(None, None, Some(&next(at))).unwrap(),
            Restated::Claimed { at: 100 }
        );
    }
    assert_eq!(std::fs::read(dir.lock()).unwrap(), before);
    // A later one: written with the run and occurrence, and kept on release.
    assert_eq!(
        lease
            .restate(Some("r2".into()), Some("o2".into()), Some(&next(160)))
            .unwrap(),
        Restated::Done
    );
    let on_disk = std::fs::read_to_string(dir.lock()).unwrap();
    assert!(on_disk.contains("claims=job@160"), "{on_disk}");
    assert_eq!(lease.record().run.as_deref(), Some("r2"));
    assert_eq!(lease.record().occ.as_deref(), Some("o2"));
    lease.release().unwrap();
    assert!(matches!(
        lock.try_acquire_as(&claim("job", 160)).unwrap(),
        Outcome::Claimed { at: 160, .. }
    ));
    // A lease broken under its holder cannot restate.
    let Outcome::Acquired(mut lease) = lock.try_acquire_as(&claim("job", 200)).unwrap() else {
        panic!("the next occurrence was refused")
    };
    lock.break_lease(baton_lease::BreakMode::Force).unwrap();
    assert!(matches!(
        lease.restate(None, None, Some(&next(260))).unwrap(),
        Restated::Lost(_)
    ));
}

#[test]
fn only_the_holders_token_acts_for_the_lease_and_nothing_changes_hands_meanwhile() {
    use baton_lease::Vouched;
    use std::sync::mpsc;
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    assert!(matches!(
        lock.while_held(&baton_lease::Token::fresh().unwrap(), |_| ())
            .unwrap(),
        Vouched::Missing
    ));
    let Outcome::Acquired(lease) = lock.try_acquire().unwrap() else {
        panic!("a fresh lock was not taken")
    };
    let token = lease.token();
    let stranger = baton_lease::Token::fresh().unwrap();
    assert!(matches!(
        lock.while_held(&stranger, |_| ()).unwrap(),
        Vouched::NotHolder(_)
    ));
    match lock.while_held(&token, |h| h.fence).unwrap() {
        Vouched::Done(f) => assert_eq!(f, lease.fence()),
        other => panic!("{other:?}"),
    }
    // A break waits for the action to end: the order of events says so.
    let (tx, rx) = mpsc::channel::<&'static str>();
    let path = dir.lock();
    let tx_in = tx.clone();
    let inside = std::thread::spawn(move || {
        let lock = Lock::new(path);
        lock.while_held(&token, |_| {
            tx_in.send("entered").unwrap();
            baton_testkit::pause(300);
            tx_in.send("left").unwrap();
        })
        .unwrap();
    });
    assert_eq!(rx.recv().unwrap(), "entered");
    let breaker = Lock::new(dir.lock());
    breaker.break_lease(baton_lease::BreakMode::Force).unwrap();
    tx.send("broke").unwrap();
    inside.join().unwrap();
    assert_eq!(rx.recv().unwrap(), "left");
    assert_eq!(rx.recv().unwrap(), "broke");
    // After the break, the old token acts for nothing.
    assert!(matches!(
        lock.while_held(&token, |_| ()).unwrap(),
        Vouched::NotHolder(_)
    ));
    drop(lease);
}

#[test]
fn a_claim_taken_back_leaves_the_occurrence_to_the_next_holder_and_the_others_claims_alone() {
    use baton_lease::Renewal;
    let dir = Dir::new();
    let lock = Lock::new(dir.lock());
    let Outcome::Acquired(lease) = lock.try_acquire_as(&claim("other", 70)).unwrap() else {
        panic!("a fresh lock was not taken")
    };
    lease.release().unwrap();
    let Outcome::Acquired(lease) = lock.try_acquire_as(&claim("job", 100)).unwrap() else {
        panic!("the lock was not taken")
    };
    lease.release().unwrap();
    let Outcome::Acquired(mut lease) = lock.try_acquire_as(&claim("job", 160)).unwrap() else {
        panic!("the next occurrence was refused")
    };
    let once = |at| Once {
        key: "job".into(),
        at,
    };
    // Not this lease's claim: nothing changes.
    assert_eq!(lease.withdraw(&once(100)).unwrap(), None);
    assert_eq!(lease.withdraw(&once(160)).unwrap(), Some(Renewal::Renewed));
    // Taken back once: a second time changes nothing.
    assert_eq!(lease.withdraw(&once(160)).unwrap(), None);
    lease.release().unwrap();
    let on_disk = std::fs::read_to_string(dir.lock()).unwrap();
    assert!(
        on_disk.contains("job@100") && on_disk.contains("other@70"),
        "{on_disk}"
    );
    // The occurrence it took back may be claimed again; the one before
    // it stays claimed.
    assert!(matches!(
        lock.try_acquire_as(&claim("job", 100)).unwrap(),
        Outcome::Claimed { at: 100, .. }
    ));
    let Outcome::Acquired(mut lease) = lock.try_acquire_as(&claim("job", 160)).unwrap() else {
        panic!("the occurrence taken back was refused")
    };
    // A lease broken under its holder takes nothing back.
    lock.break_lease(baton_lease::BreakMode::Force).unwrap();
    assert!(matches!(
        lease.withdraw(&once(160)).unwrap(),
        Some(Renewal::Lost(_))
    ));
}
