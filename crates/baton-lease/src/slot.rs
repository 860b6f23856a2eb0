//! A lock's slots: the names of the leases that let up to N runs of one key
//! hold a lock at once (`max_concurrent = N`), each a lease like any other.
//!
//! Slot 1 is the lock itself (`NAME`); slot K > 1 is the lock `NAME@K`. A
//! lock name is `A-Z a-z 0-9 _ . -`, so no configured lock can be another's
//! slot, and a lock that was given slots keeps its first lease, claims and
//! holder where they were. This module owns the spelling and nothing else:
//! it never opens, judges or takes a lock. The guard ([`crate::Lock::take_guard`])
//! asks it whether the lock a guard names is a slot of the same lock
//! ([`same_lock`]): a key's runs in its lock's slots exclude nothing of
//! each other's, while the guard's claim still refuses an occurrence one of
//! them started.

use std::borrow::Cow;

/// What separates a lock's name from its slot number.
const SEPARATOR: char = '@';

/// The most slots a lock has (`max_concurrent` is at most this).
pub const MOST: u32 = 64;

/// The name of slot `slot` (1-based) of the lock `base`: `base` itself for
/// slot 1 (or 0), `base@K` otherwise.
pub fn slot_name(base: &str, slot: u32) -> Cow<'_, str> {
    if slot <= 1 {
        Cow::Borrowed(base)
    } else {
        Cow::Owned(format!("{base}{SEPARATOR}{slot}"))
    }
}

/// The lock a name (or a lock file's name, `NAME.lock`) is a slot of, and
/// the slot's number: `("db", 3)` for `db@3` and `db@3.lock`, `("db", 1)`
/// for `db`.
pub fn slot_of(name: &str) -> (&str, u32) {
    let name = name.strip_suffix(".lock").unwrap_or(name);
    match name.rsplit_once(SEPARATOR) {
        Some((base, k))
            if !base.is_empty() && !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) =>
        {
            match k.parse::<u32>() {
                Ok(n) if n > 1 => (base, n),
                _ => (name, 1),
            }
        }
        _ => (name, 1),
    }
}

/// Whether two lock names (or lock files' names) are slots of one lock.
pub fn same_lock(a: &str, b: &str) -> bool {
    slot_of(a).0 == slot_of(b).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_name_round_trips_and_slot_one_is_the_lock() {
        assert_eq!(slot_name("db", 1), "db");
        assert_eq!(slot_name("db", 0), "db");
        assert_eq!(slot_name("db", 3), "db@3");
        for k in [1, 2, 9, 10, 64] {
            assert_eq!(slot_of(&slot_name("nightly.x-y", k)), ("nightly.x-y", k));
            assert_eq!(slot_of(&format!("{}.lock", slot_name("a", k))), ("a", k));
        }
    }

    #[test]
    fn only_a_number_after_the_separator_makes_a_slot() {
        assert_eq!(slot_of("db@"), ("db@", 1));
        assert_eq!(slot_of("@2"), ("@2", 1));
        assert_eq!(slot_of("db@x"), ("db@x", 1));
        assert_eq!(slot_of("db@1"), ("db@1", 1));
        assert_eq!(slot_of("db@0"), ("db@0", 1));
        assert!(same_lock("db", "db@2.lock"));
        assert!(same_lock("db@2", "db@3"));
        assert!(!same_lock("db", "dbx@2"));
        assert!(!same_lock("db", "other"));
    }
}
