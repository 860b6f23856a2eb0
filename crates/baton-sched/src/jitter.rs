//! Jitter: the fixed offset after each occurrence at which a job starts.
//!
//! A job with `jitter = "5m"` starts every occurrence the same whole number
//! of seconds after it, somewhere in `[0, 5m)`, the number derived from the
//! job's name alone (as Jenkins' `H`): jobs with the same schedule spread
//! over the window, while every host, every tick and the daemon agree on
//! the instant, since they all read the same name. The occurrence keeps its
//! identity (the ledger's key, the lock's claim, `BATON_OCCURRENCE` are the
//! scheduled instant): only when it is *due* moves. So every rule that
//! compares an occurrence with "now" compares it with [`Job::due_clock`]
//! instead, which is now moved back by the offset, and an instant shown as
//! when a job starts is [`Job::starts_at`].
//!
//! This module owns the offset's formula. That a window fits the schedule
//! is the configuration's rule, checked when it is read (a window longer
//! than the schedule's shortest gap is refused). It reads no clock and no
//! file.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

use crate::config::Job;

/// The offset, in whole seconds in `[0, window)`, of the job named `name`:
/// the name's 64-bit FNV-1a hash, mixed by SplitMix64's finalizer, modulo
/// the window's whole seconds. A window under a second gives 0. The
/// formula is part of the contract (the README states it): an offset never
/// changes between versions, so hosts of different versions agree.
pub fn offset(name: &str, window: Duration) -> Duration {
    let secs = window.as_secs();
    if secs == 0 {
        return Duration::ZERO;
    }
    Duration::from_secs(mix(fnv1a(name.as_bytes())) % secs)
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// SplitMix64's finalizer: spreads names that differ in one character
/// (`report-1`, `report-2`) over the whole window.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// An offset for people, to the second: `4m16s`, `3h24m31s`, `0s`.
pub fn show(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s % 3600 / 60, s % 60);
    match (h, m, s) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, 0) => format!("{h}h{m}m"),
        (h, m, s) => format!("{h}h{m}m{s}s"),
    }
}

impl Job {
    /// The offset after each occurrence at which this job starts (zero
    /// without `jitter`).
    pub fn start_offset(&self) -> Duration {
        self.policy
            .jitter
            .value
            .map_or(Duration::ZERO, |window| offset(&self.name, window))
    }

    /// The instant an occurrence must not be after to be due at `now`: now
    /// moved back by [`Job::start_offset`]. Every comparison of this job's
    /// occurrences with the clock uses it.
    pub fn due_clock(&self, now: Timestamp) -> Timestamp {
        now.checked_sub(self.signed_offset())
            .unwrap_or(Timestamp::MIN)
    }

    /// When the occurrence at `occurrence` starts: it, moved on by
    /// [`Job::start_offset`].
    pub fn starts_at(&self, occurrence: Timestamp) -> Timestamp {
        occurrence
            .checked_add(self.signed_offset())
            .unwrap_or(Timestamp::MAX)
    }

    fn signed_offset(&self) -> SignedDuration {
        SignedDuration::try_from(self.start_offset()).unwrap_or(SignedDuration::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_is_fixed_by_the_name_and_inside_the_window() {
        let w = Duration::from_secs(300);
        for name in [
            "a",
            "report",
            "report-1",
            "backup.db",
            "x".repeat(64).as_str(),
        ] {
            let o = offset(name, w);
            assert!(o < w, "{name}: {o:?}");
            assert_eq!(o, offset(name, w), "{name}");
        }
        assert_eq!(offset("report", Duration::ZERO), Duration::ZERO);
        assert_eq!(offset("report", Duration::from_millis(900)), Duration::ZERO);
    }

    #[test]
    fn the_formula_does_not_change() {
        // Hosts of different versions must agree: these are the contract.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let w = Duration::from_secs(3600);
        let pinned: Vec<u64> = ["report", "backup", "job-1", "job-2"]
            .iter()
            .map(|n| offset(n, w).as_secs())
            .collect();
        assert_eq!(pinned, PINNED);
    }

    /// The offsets in an hour of `report`, `backup`, `job-1`, `job-2`.
    const PINNED: [u64; 4] = [3556, 3399, 1360, 994];

    #[test]
    fn similar_names_spread_over_the_window() {
        let w = Duration::from_secs(300);
        let offsets: std::collections::BTreeSet<u64> = (0..50)
            .map(|i| offset(&format!("job-{i}"), w).as_secs())
            .collect();
        // 50 names in 300 seconds: nearly all apart, in every fifth.
        assert!(offsets.len() >= 40, "{offsets:?}");
        for fifth in 0..5 {
            let (lo, hi) = (fifth * 60, fifth * 60 + 60);
            assert!(
                offsets.iter().any(|&o| (lo..hi).contains(&o)),
                "{fifth}: {offsets:?}"
            );
        }
    }
}
