//! A lease keeps its lock file open between critical sections; every
//! section still judges the file the path names now. These tests change
//! what the path names between two sections of one lease.

use baton_lease::{Lock, Outcome, Release, Renewal};

use crate::support::Dir;

/// Each case twice: a lease whose acquisition created the lock file, and
/// one that found it there.
fn both(case: impl Fn(bool)) {
    case(false);
    case(true);
}

/// `lock`'s lease, the file made first when `existing`.
fn taken(lock: &Lock, existing: bool) -> baton_lease::Lease {
    if existing {
        assert_eq!(acquired(lock).release().unwrap(), Release::Released);
    }
    acquired(lock)
}

fn acquired(lock: &Lock) -> baton_lease::Lease {
    match lock.try_acquire().unwrap() {
        Outcome::Acquired(l) => l,
        other => panic!("expected the lease, got {other:?}"),
    }
}

#[test]
fn a_lock_file_removed_under_a_lease_is_a_lost_lease_and_nothing_is_written_to_the_old_file() {
    both(|existing| {
        let d = Dir::new();
        let lock = Lock::new(d.lock());
        let mut lease = taken(&lock, existing);
        let kept = d.path("kept");
        std::fs::hard_link(d.lock(), &kept).unwrap();
        std::fs::remove_file(d.lock()).unwrap();
        let before = std::fs::read(&kept).unwrap();

        assert!(matches!(lease.renew().unwrap(), Renewal::Lost(_)));
        assert!(matches!(lease.release().unwrap(), Release::Lost(_)));
        assert_eq!(
            std::fs::read(&kept).unwrap(),
            before,
            "the unlinked inode was written"
        );
        assert!(!d.lock().exists(), "a section recreated the lock file");
    });
}

#[test]
fn a_lock_file_replaced_by_a_copy_of_the_lease_is_renewed_at_the_path_not_in_the_old_inode() {
    both(|existing| {
        let d = Dir::new();
        let lock = Lock::new(d.lock());
        let mut lease = taken(&lock, existing);
        // An operator (or a backup's restore) puts a copy in place by rename.
        let old = d.path("old");
        std::fs::hard_link(d.lock(), &old).unwrap();
        let copy = d.path("copy");
        std::fs::copy(d.lock(), &copy).unwrap();
        std::fs::rename(&copy, d.lock()).unwrap();
        let old_bytes = std::fs::read(&old).unwrap();
        let renewed_before = lease.record().renewed;

        crate::support::pause(2);
        assert_eq!(lease.renew().unwrap(), Renewal::Renewed);
        assert!(lease.record().renewed > renewed_before);
        assert_eq!(
            std::fs::read(&old).unwrap(),
            old_bytes,
            "the replaced inode was written"
        );
        let at_path = std::fs::read_to_string(d.lock()).unwrap();
        assert!(
            at_path.starts_with(lease.record().render().trim_end()),
            "the path does not hold the renewed record: {at_path:?}"
        );
        // And the next section uses the file now at the path.
        assert_eq!(lease.release().unwrap(), Release::Released);
        assert!(
            std::fs::read_to_string(d.lock())
                .unwrap()
                .contains("state=free")
        );
        assert_eq!(std::fs::read(&old).unwrap(), old_bytes);
    });
}

#[test]
fn a_lock_file_replaced_by_another_holders_record_is_a_lost_lease_and_left_as_it_is() {
    both(|existing| {
        let d = Dir::new();
        let lock = Lock::new(d.lock());
        let mut lease = taken(&lock, existing);
        // Another lock's lease, renamed over this one's path.
        let other = Lock::new(d.path("other.lock"));
        let theirs = acquired(&other);
        std::fs::rename(d.path("other.lock"), d.lock()).unwrap();
        let bytes = std::fs::read(d.lock()).unwrap();

        assert!(matches!(lease.renew().unwrap(), Renewal::Lost(_)));
        assert!(matches!(lease.release().unwrap(), Release::Lost(_)));
        assert_eq!(std::fs::read(d.lock()).unwrap(), bytes);
        drop(theirs);
    });
}

#[test]
fn a_record_changed_in_place_under_a_lease_is_judged_not_taken_for_the_one_written() {
    both(|existing| {
        let d = Dir::new();
        let lock = Lock::new(d.lock());
        let mut lease = taken(&lock, existing);
        // An operator's forced break rewrites the same inode in place.
        let broken = lock.break_lease(baton_lease::BreakMode::Force).unwrap();
        assert!(
            matches!(broken, baton_lease::Broken::Freed { .. }),
            "{broken:?}"
        );

        assert!(matches!(lease.renew().unwrap(), Renewal::Lost(_)));
        // A new holder takes it; the old lease's release leaves it alone.
        let ours = lease.fence();
        let next = acquired(&lock);
        assert!(next.fence() > ours);
        assert!(matches!(lease.release().unwrap(), Release::Lost(_)));
        let held = std::fs::read_to_string(d.lock()).unwrap();
        assert!(held.contains(&format!("token={}", next.token())), "{held}");
    });
}
