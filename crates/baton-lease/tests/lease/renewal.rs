//! Never reclaim a live run (seed 001): a holder that keeps renewing keeps its
//! lease however long it runs; a holder that stops (SIGSTOP) is hung, refused
//! and never broken, and keeps its lease when it resumes.

use baton_lease::{Clock, Lock, Outcome, SystemClock, Verdict};
use std::time::Duration;

use crate::support::{Dir, Holder, eventually, pause};

#[test]
fn a_renewing_holder_is_never_reclaimed_however_long_it_runs() {
    let dir = Dir::new();
    // TTL 200 ms, renewed every 60 ms; contenders try for 10 TTLs and more.
    let h = Holder::spawn(
        "hold",
        &dir.lock(),
        &["--ttl-ms", "200", "--renew-ms", "60"],
    );
    assert!(h.next().starts_with("acquired"));
    let lock = Lock::new(dir.lock());
    let start = SystemClock.boot();
    let mut tries = 0;
    while SystemClock.boot() - start < Duration::from_millis(2000) || tries < 20 {
        match lock.try_acquire().unwrap() {
            Outcome::Busy(_) | Outcome::Hung { .. } => {}
            other => panic!("a live holder's lease was taken: {}", other.describe()),
        }
        tries += 1;
        pause(25);
    }
    h.renewed();
    assert_eq!(h.finish(), "released");
}

#[test]
fn a_stopped_holder_is_hung_never_broken_and_keeps_its_lease_after_sigcont() {
    let dir = Dir::new();
    let h = Holder::spawn(
        "hold",
        &dir.lock(),
        &["--ttl-ms", "200", "--renew-ms", "60"],
    );
    assert!(h.next().starts_with("acquired"));
    h.signal(rustix::process::Signal::STOP);
    let lock = Lock::new(dir.lock());
    // Several TTLs pass without a renewal: hung, refused.
    eventually("the stopped holder to be judged hung", || {
        matches!(lock.try_acquire().unwrap(), Outcome::Hung { .. })
    });
    pause(1000);
    assert!(matches!(lock.try_acquire().unwrap(), Outcome::Hung { .. }));
    assert!(matches!(
        lock.inspect().unwrap().verdict,
        Verdict::Hung { .. }
    ));
    h.signal(rustix::process::Signal::CONT);
    h.renewed();
    eventually("the resumed holder to be live again", || {
        matches!(lock.inspect().unwrap().verdict, Verdict::Live { .. })
    });
    assert_eq!(h.finish(), "released");
}
