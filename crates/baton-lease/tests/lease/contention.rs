//! Exactly one owner: N contenders deciding at the same instant reach one
//! verdict between them, as processes and as threads, on a free lock and on a
//! dead holder's lease, and through sustained churn.

use std::sync::{Arc, Barrier, Condvar, Mutex};
use std::time::Duration;

use baton_lease::{Clock, Lock, Outcome, SystemClock};

use crate::support::{Dir, Holder, start_in};

/// Starts `n` holders that all decide at one boot-clock instant; returns how
/// many acquired, after every one of them has answered.
fn race(lock: &std::path::Path, n: usize) -> usize {
    let at = start_in(300 + 40 * n as u64);
    let holders: Vec<Holder> = (0..n)
        .map(|_| {
            Holder::spawn(
                "hold",
                lock,
                &["--start-at-ms", &at, "--renew-ms", "100000"],
            )
        })
        .collect();
    let answers: Vec<String> = holders.iter().map(Holder::next).collect();
    let winners = answers.iter().filter(|a| a.starts_with("acquired")).count();
    for a in &answers {
        assert!(
            a.starts_with("acquired") || a.starts_with("not-acquired busy: held by"),
            "unexpected answer {a:?}"
        );
    }
    for (mut h, a) in holders.into_iter().zip(&answers) {
        if a.starts_with("acquired") {
            assert_eq!(h.finish(), "released");
        } else {
            assert_eq!(h.child.wait().unwrap().code(), Some(1));
        }
    }
    winners
}

#[test]
fn exactly_one_of_n_processes_takes_a_free_lock() {
    for n in [2, 8, 24] {
        let dir = Dir::new();
        assert_eq!(race(&dir.lock(), n), 1, "{n} contenders on a missing file");
        // Again on a free marker (the file exists now).
        assert_eq!(race(&dir.lock(), n), 1, "{n} contenders on a free marker");
    }
}

#[test]
fn exactly_one_of_n_processes_breaks_a_dead_holders_lease() {
    for n in [2, 8, 24] {
        let dir = Dir::new();
        let dead = Holder::spawn("hold", &dir.lock(), &[]);
        assert!(dead.next().starts_with("acquired"));
        dead.kill9();
        let v = Lock::new(dir.lock()).inspect().unwrap().verdict;
        assert_eq!(v.word(), "dead", "{v:?}");
        assert_eq!(
            race(&dir.lock(), n),
            1,
            "{n} contenders on a dead holder's lease"
        );
    }
}

#[test]
fn exactly_one_of_n_threads_takes_the_lock() {
    for n in [2, 8, 24] {
        let dir = Dir::new();
        let barrier = Arc::new(Barrier::new(n));
        let results: Vec<Outcome> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|_| {
                    let barrier = Arc::clone(&barrier);
                    let path = dir.lock();
                    s.spawn(move || {
                        let lock = Lock::new(path);
                        barrier.wait();
                        lock.try_acquire().unwrap()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners = results
            .iter()
            .filter(|o| matches!(o, Outcome::Acquired(_)))
            .count();
        assert_eq!(winners, 1, "{n} threads");
        for o in &results {
            assert!(
                matches!(o, Outcome::Acquired(_) | Outcome::Busy(_)),
                "{}",
                o.describe()
            );
        }
    }
}

#[test]
fn sustained_churn_never_overlaps() {
    let dir = Dir::new();
    let witness = dir.path("witness");
    let at = start_in(500);
    let w = witness.to_str().unwrap();
    let holders: Vec<Holder> = (0..8)
        .map(|_| {
            Holder::spawn(
                "churn",
                &dir.lock(),
                &["--rounds", "25", "--witness", w, "--start-at-ms", &at],
            )
        })
        .collect();
    for h in holders {
        // An overlap is the kernel's EEXIST on the witness, reported as OVERLAP.
        assert_eq!(h.next(), "done wins=25");
    }
    assert!(!witness.exists());
}

/// A clock that makes the first reader of the wall clock (who is inside the
/// critical section) wait for a second reader, as seed 000's reproduction
/// forces both ticks to read before either writes. Under the mutex the second
/// can never arrive, so the wait times out.
struct Interleave {
    arrived: Mutex<u32>,
    cv: Condvar,
    timed_out: Mutex<bool>,
}

impl Clock for Interleave {
    fn wall(&self) -> jiff::Timestamp {
        let mut n = self.arrived.lock().unwrap();
        *n += 1;
        self.cv.notify_all();
        let (n, t) = self
            .cv
            .wait_timeout_while(n, Duration::from_millis(500), |n| *n < 2)
            .unwrap();
        if t.timed_out() && *n < 2 {
            *self.timed_out.lock().unwrap() = true;
        }
        SystemClock.wall()
    }
    fn boot(&self) -> Duration {
        SystemClock.boot()
    }
    fn sleep(&self, d: Duration) {
        SystemClock.sleep(d);
    }
}

#[test]
fn the_seed_000_interleaving_cannot_happen() {
    let dir = Dir::new();
    // Make the file exist, so both threads take the read-decide-write path.
    drop(Lock::new(dir.lock()).try_acquire().unwrap());
    let clock = Arc::new(Interleave {
        arrived: Mutex::new(0),
        cv: Condvar::new(),
        timed_out: Mutex::new(false),
    });
    let results = race_threads(|| Lock::new(dir.lock()).with_clock(clock.clone()));
    assert_eq!(winners(&results), 1);
    assert!(
        *clock.timed_out.lock().unwrap(),
        "the second reader got in while the first was deciding"
    );
}

/// A contender that waited for the mutex must read the record the holder
/// wrote meanwhile, whole, even when it is longer than the file was when the
/// contender opened it.
#[test]
fn a_record_that_grew_while_a_contender_waited_is_read_whole() {
    let dir = Dir::new();
    for round in 0..500 {
        std::fs::write(dir.lock(), "version=3 state=free fence=5\n").unwrap();
        let results = race_threads(|| Lock::new(dir.lock()));
        assert_eq!(
            winners(&results),
            1,
            "round {round}: {:?}",
            results.iter().map(Outcome::describe).collect::<Vec<_>>()
        );
        for o in &results {
            assert!(
                matches!(o, Outcome::Acquired(_) | Outcome::Busy(_)),
                "round {round}: {}",
                o.describe()
            );
        }
    }
}

/// Two threads, each with a lock of its own on one path, released together.
fn race_threads(make: impl Fn() -> Lock) -> Vec<Outcome> {
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let lock = make();
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    lock.try_acquire().unwrap()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn winners(results: &[Outcome]) -> usize {
    results
        .iter()
        .filter(|o| matches!(o, Outcome::Acquired(_)))
        .count()
}
