//! The timing rules a holder must keep so that its job is dead before its
//! lease can move to a judge that cannot check it (`DESIGN.md`,
//! "Self-fencing"): `kill_grace + renew_wait + TICK + SKEW_ALLOWANCE ≤
//! takeover_grace`, where `renew_wait` is the longest one renewal may block
//! ([`crate::Held::renew_wait`]): `min(ttl/10, 1 s)` for a lock file
//! ([`mutex_wait_for`]), the store's deadline for PostgreSQL. Callers
//! validate their options here before anything runs.

use std::time::Duration;

/// The supervisor's longest sleep between checks of its deadlines.
pub const TICK: Duration = Duration::from_millis(100);
/// The clock skew allowed between hosts judging each other.
pub const SKEW_ALLOWANCE: Duration = Duration::from_secs(1);
/// The shortest TTL accepted.
pub const MIN_TTL: Duration = Duration::from_millis(100);
/// The longest duration a job's setting takes: ten years. Longer ones are
/// typos, and refusing them keeps every sum of durations the runner makes
/// far from overflow. The command line's keys and the library's jobs both
/// refuse past it.
pub const MAX_DURATION: Duration = Duration::from_secs(10 * 365 * 86_400);
/// The most retries a job takes (its attempts are one more).
pub const MAX_RETRIES: u32 = 1000;

pub use baton_lease::mutex_wait_for;

/// Why the timing options cannot keep the self-fencing inequality
/// ([`check_self_fencing`]); its words name the values, what they add up
/// to, and what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unfenced {
    /// The TTL is shorter than [`MIN_TTL`].
    #[error("{ttl_name} {} is shorter than the minimum, {}", show(*.ttl), show(MIN_TTL))]
    ShortTtl {
        /// The TTL's option name, as the caller's user knows it.
        ttl_name: String,
        /// The TTL given.
        ttl: Duration,
    },
    /// The kill grace, the renewal's wait and the allowances come to more
    /// than the takeover grace.
    #[error(
        "{grace_name} {} with {takeover_name} {}: a holder that can no longer renew must have \
         killed its job before a judge on another host may take its lease, and \
         {grace_name} + {wait} + 1.1s comes to {}, more than {takeover_name}; \
         shorten {grace_name} or lengthen {takeover_name} to at least {}",
        show(*.kill_grace),
        show(*.takeover_grace),
        show(*.needed),
        show(*.needed)
    )]
    Overlap {
        /// The kill grace's option name.
        grace_name: String,
        /// The takeover grace's option name.
        takeover_name: String,
        /// The renewal's wait, in words: `min(--ttl/10, 1s)` for a lock
        /// file's, or its value.
        wait: String,
        /// The kill grace given.
        kill_grace: Duration,
        /// The takeover grace given.
        takeover_grace: Duration,
        /// What the takeover grace must be at least.
        needed: Duration,
    },
}

/// Checks the self-fencing inequality for a lease whose renewals block at
/// most `renew_wait`. `names` are the option names as the caller's user
/// knows them (`("--ttl", "--kill-grace", "--takeover-grace")`, or
/// configuration keys), which the error's words use.
///
/// # Errors
///
/// [`Unfenced::ShortTtl`] when `ttl` is shorter than [`MIN_TTL`],
/// [`Unfenced::Overlap`] when the inequality does not hold.
pub fn check_self_fencing(
    ttl: Duration,
    renew_wait: Duration,
    kill_grace: Duration,
    takeover_grace: Duration,
    names: (&str, &str, &str),
) -> Result<(), Unfenced> {
    let (ttl_name, grace_name, takeover_name) = names;
    if ttl < MIN_TTL {
        return Err(Unfenced::ShortTtl {
            ttl_name: ttl_name.to_owned(),
            ttl,
        });
    }
    // Saturating: a caller's grace may be anything, and a sum past the
    // largest duration is as refused as any other too long for the takeover
    // grace.
    let needed = kill_grace
        .saturating_add(renew_wait)
        .saturating_add(TICK)
        .saturating_add(SKEW_ALLOWANCE);
    if needed > takeover_grace {
        let wait = if renew_wait == mutex_wait_for(ttl) {
            format!("min({ttl_name}/10, 1s)")
        } else {
            format!("the renewal's wait {}", show(renew_wait))
        };
        return Err(Unfenced::Overlap {
            grace_name: grace_name.to_owned(),
            takeover_name: takeover_name.to_owned(),
            wait,
            kill_grace,
            takeover_grace,
            needed,
        });
    }
    Ok(())
}

/// A duration for people: `2h5m`, `3.2s`, `250ms`.
pub(crate) fn show(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 3600 {
        format!("{}h{}m", secs / 3600, (secs % 3600) / 60)
    } else if secs >= 60 {
        format!("{}m{}s", secs / 60, secs % 60)
    } else if secs >= 1 {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        format!("{}ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grace_past_any_sum_is_refused_not_overflowed() {
        let names = ("ttl", "grace", "takeover grace");
        let (s, max) = (Duration::from_secs, Duration::MAX);
        let e = check_self_fencing(s(30), max, max, s(3600), names);
        assert!(matches!(e, Err(Unfenced::Overlap { .. })), "{e:?}");
    }

    #[test]
    fn the_defaults_leave_room_and_a_long_grace_does_not() {
        let s = Duration::from_secs;
        let names = ("--ttl", "--kill-grace", "--takeover-grace");
        let w = mutex_wait_for(s(30));
        assert!(check_self_fencing(s(30), w, s(10), s(30), names).is_ok());
        let e = check_self_fencing(s(30), w, s(29), s(30), names)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--kill-grace 29.0s"), "{e}");
        assert!(e.contains("min(--ttl/10, 1s)"), "{e}");
        assert!(e.contains("at least 31.1s"), "{e}");
        let ms50 = Duration::from_millis(50);
        let e = check_self_fencing(ms50, mutex_wait_for(ms50), s(1), s(30), names)
            .unwrap_err()
            .to_string();
        assert!(e.contains("shorter than the minimum"), "{e}");
    }

    #[test]
    fn a_zero_grace_is_never_called_too_long() {
        let names = ("--ttl", "--kill-grace", "--takeover-grace");
        let e = check_self_fencing(
            Duration::from_secs(30),
            Duration::from_secs(1),
            Duration::ZERO,
            Duration::from_secs(1),
            names,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("lengthen --takeover-grace"), "{e}");
        assert!(!e.contains("too long"), "{e}");
    }

    #[test]
    fn a_store_deadline_counts_in_full() {
        let s = Duration::from_secs;
        let names = ("ttl", "kill_grace", "takeover_grace");
        // A 6 s store deadline needs 10 + 6 + 1.1 s, where a lock file's
        // mutex wait needs 10 + 1 + 1.1 s.
        assert!(check_self_fencing(s(30), mutex_wait_for(s(30)), s(10), s(13), names).is_ok());
        let e = check_self_fencing(s(30), s(6), s(10), s(13), names)
            .unwrap_err()
            .to_string();
        assert!(e.contains("the renewal's wait 6.0s"), "{e}");
        assert!(e.contains("at least 17.1s"), "{e}");
    }
}
