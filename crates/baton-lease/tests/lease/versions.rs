//! The version table (seed 003 §11.4, extended to v3): what each record on
//! disk makes of an acquisition, with refusals left byte for byte untouched.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{
    Busy, Clock, Holder, Lock, ManualClock, Options, Outcome, Policy, SystemClock, Verdict,
};

use crate::support::Dir;

fn stamp(secs_ago: i64) -> String {
    let t = SystemClock.wall() - jiff::SignedDuration::from_secs(secs_ago);
    t.to_zoned_datetime(jiff::tz::TimeZone::fixed(jiff::tz::offset(5)))
        .strftime("%Y-%m-%dT%H:%M:%S%:z")
        .to_string()
}

fn refused(body: &str, expect: &str) {
    let dir = Dir::new();
    std::fs::write(dir.lock(), body).unwrap();
    let before = std::fs::read(dir.lock()).unwrap();
    // Refused at any age: judge it a year later too.
    let later = Arc::new(ManualClock::new(
        SystemClock.wall() + jiff::SignedDuration::from_hours(24 * 365),
        SystemClock.boot(),
    ));
    for lock in [
        Lock::new(dir.lock()),
        Lock::new(dir.lock()).with_clock(later),
    ] {
        match lock.try_acquire().unwrap() {
            Outcome::VersionConflict(c) => {
                let msg = c.to_string();
                assert!(!msg.contains('\n'), "{msg}");
                for needle in [
                    expect,
                    "v3",
                    dir.lock().to_str().unwrap(),
                    "left untouched",
                    "remedy",
                ] {
                    assert!(msg.contains(needle), "{msg:?} does not mention {needle:?}");
                }
            }
            other => panic!("{body:?}: {}", other.describe()),
        }
        assert_eq!(
            std::fs::read(dir.lock()).unwrap(),
            before,
            "{body:?} was changed"
        );
        assert!(!lock.inspect().unwrap().verdict.claimable());
    }
}

#[test]
fn v1_inferred_and_declared_are_refused_at_any_age() {
    refused(
        &format!("pid=48213 at={}\n", stamp(3 * 3600)),
        "v1 (inferred",
    );
    refused("pid=48213\n", "v1 (inferred");
    refused(
        &format!("version=1 pid=48213 at={}\n", stamp(60)),
        "v1 (declared)",
    );
}

#[test]
fn other_versions_and_unreadable_versions_are_refused() {
    refused(
        "version=4 pid=1 at=2026-08-05T19:00:00+05:30 token=aabbccdd\n",
        "v4 (declared)",
    );
    refused("version=999 pid=1\n", "v999 (declared)");
    refused("version=next pid=1\n", "unreadable version");
    refused("version=3 state=held fence=1\n", "unreadable record");
    refused(
        "version=3 state=free fence=9223372036854775807\n",
        "unreadable record",
    );
}

#[test]
fn a_file_that_is_no_lock_record_is_an_error_and_left_untouched() {
    let dir = Dir::new();
    let body = "important data\nmore of it\n";
    std::fs::write(dir.lock(), body).unwrap();
    let e = Lock::new(dir.lock()).try_acquire().unwrap_err();
    assert!(matches!(e, baton_lease::Error::NotALockFile { .. }), "{e}");
    assert!(e.to_string().contains("no lock record"), "{e}");
    assert!(Lock::new(dir.lock()).inspect().is_err());
    for mode in [
        baton_lease::BreakMode::IfDead,
        baton_lease::BreakMode::Force,
    ] {
        assert!(Lock::new(dir.lock()).break_lease(mode).is_err());
    }
    assert_eq!(std::fs::read_to_string(dir.lock()).unwrap(), body);
}

#[test]
fn a_young_v2_lease_is_respected_and_an_old_one_broken_by_v2s_rule() {
    let dir = Dir::new();
    let young = format!(
        "version=2 pid=48213 at={} token=9f3c1ab27de40518\n",
        stamp(60)
    );
    std::fs::write(dir.lock(), &young).unwrap();
    match Lock::new(dir.lock()).try_acquire().unwrap() {
        Outcome::Busy(Busy::Held {
            holder: Holder::V2(v),
            ..
        }) => assert_eq!(v.pid, Some(48213)),
        other => panic!("{}", other.describe()),
    }
    assert_eq!(std::fs::read_to_string(dir.lock()).unwrap(), young);

    // v2's threshold is configurable: with 30 s, the same lease is stale.
    let strict = Options {
        policy: Policy {
            v2_stale_after: Duration::from_secs(30),
            ..Policy::default()
        },
        ..Options::default()
    };
    let Outcome::Acquired(lease) = Lock::new(dir.lock())
        .with_options(strict)
        .try_acquire()
        .unwrap()
    else {
        panic!()
    };
    assert!(matches!(
        lease.replaced(),
        Verdict::Expired {
            holder: Holder::V2(_),
            ..
        }
    ));
    drop(lease);

    let old = format!(
        "version=2 pid=48213 at={} token=9f3c1ab27de40518\n",
        stamp(7201)
    );
    std::fs::write(dir.lock(), old).unwrap();
    let Outcome::Acquired(lease) = Lock::new(dir.lock()).try_acquire().unwrap() else {
        panic!()
    };
    assert!(matches!(lease.replaced(), Verdict::Expired { .. }));
    // The record now declares v3 first, so a v2 peer refuses it.
    assert!(
        std::fs::read_to_string(dir.lock())
            .unwrap()
            .starts_with("version=3 state=held ")
    );
}

#[test]
fn free_markers_of_v2_and_v3_are_claimable_at_once() {
    for marker in ["version=2 state=free\n", "version=3 state=free fence=12\n"] {
        let dir = Dir::new();
        std::fs::write(dir.lock(), marker).unwrap();
        let Outcome::Acquired(lease) = Lock::new(dir.lock()).try_acquire().unwrap() else {
            panic!("{marker}")
        };
        assert!(lease.fence().get() > 12);
    }
}

#[test]
fn an_empty_file_is_respected_for_seconds_then_taken_as_flock1_leaves_it() {
    let dir = Dir::new();
    std::fs::write(dir.lock(), "").unwrap();
    // v2 creates its file empty and writes it microseconds later, under the
    // mutex: a fresh empty file is a record being written.
    assert!(matches!(
        Lock::new(dir.lock()).try_acquire().unwrap(),
        Outcome::Busy(Busy::Writing { .. })
    ));
    assert_eq!(std::fs::read(dir.lock()).unwrap(), b"");
    // flock(1) leaves its file empty for good; seconds later, with its
    // mutex free, it is abandoned.
    let later = Arc::new(ManualClock::new(
        SystemClock.wall() + jiff::SignedDuration::from_secs(6),
        SystemClock.boot() + Duration::from_secs(6),
    ));
    let Outcome::Acquired(lease) = Lock::new(dir.lock())
        .with_clock(later)
        .try_acquire()
        .unwrap()
    else {
        panic!("an empty file seconds old was not taken")
    };
    assert!(matches!(lease.replaced(), Verdict::Abandoned { .. }));
}

#[test]
fn an_empty_file_whose_mutex_flock1_holds_is_never_taken() {
    let dir = Dir::new();
    // flock(1) holds the file's mutex for as long as its command runs.
    let mut flock = std::process::Command::new("flock")
        .arg(dir.lock())
        .args(["sleep", "60"])
        .spawn()
        .unwrap();
    crate::support::eventually("flock(1) to create its file", || dir.lock().exists());
    let later = Arc::new(ManualClock::new(
        SystemClock.wall() + jiff::SignedDuration::from_hours(3),
        SystemClock.boot() + Duration::from_secs(3 * 3600),
    ));
    let opts = Options {
        mutex_wait: Duration::from_millis(50),
        ..Options::default()
    };
    let outcome = Lock::new(dir.lock())
        .with_options(opts)
        .with_clock(later)
        .try_acquire()
        .unwrap();
    assert!(
        matches!(outcome, Outcome::Busy(Busy::MutexHeld { .. })),
        "{}",
        outcome.describe()
    );
    flock.kill().unwrap();
    flock.wait().unwrap();
}

#[test]
fn an_empty_file_from_before_this_boot_is_abandoned_at_once() {
    let dir = Dir::new();
    std::fs::write(dir.lock(), "").unwrap();
    // Seen from a boot that began after the file was written.
    let rebooted = Arc::new(ManualClock::new(
        SystemClock.wall() + jiff::SignedDuration::from_secs(60),
        Duration::from_secs(30),
    ));
    let Outcome::Acquired(lease) = Lock::new(dir.lock())
        .with_clock(rebooted)
        .try_acquire()
        .unwrap()
    else {
        panic!("an empty file older than this boot was not taken")
    };
    assert!(matches!(lease.replaced(), Verdict::Abandoned { .. }));
}
