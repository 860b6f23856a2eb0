//! A step's retry schedule: how many attempts it has, which failures are
//! never retried, and how long to wait before each retry.
//!
//! A failed attempt is retried while attempts are left (`retries` + 1 in
//! all), unless its exit code is one of `no_retry_exit_codes`, or it is an
//! HTTP step whose server answered 4xx ([`HttpExit::ClientError`]): the
//! request itself is wrong, and sending it again changes nothing. The delay
//! before retry `n` (1 for the first) is `backoff` doubled `n - 1` times, at
//! most `backoff_max`: with the defaults (30s, 15m), 30s, 1m, 2m, 4m, 8m,
//! then 15m for every retry after.
//!
//! This module is pure: it never reads the clock, never waits and never
//! runs anything. [`crate::engine::steps`] runs the attempts and waits, and decides
//! what a lost lease or a signal does to a retry.

use std::time::Duration;

use crate::config::{Action, Step};
use crate::http::HttpExit;

/// When a step's failed attempts are retried, and after how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// Attempts in all: `retries` + 1.
    attempts: u32,
    /// The delay before the first retry.
    backoff: Duration,
    /// The longest delay.
    backoff_max: Duration,
    /// The exit codes that are never retried.
    never: Vec<i32>,
    /// Whether the step is an HTTP request (its 4xx is never retried).
    http: bool,
}

/// Why a failed attempt is not retried although attempts are left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoRetry {
    /// An HTTP step's server answered 4xx, a client error.
    ClientError,
    /// Its exit code is one of `no_retry_exit_codes`.
    Listed,
}

impl Schedule {
    /// The schedule `step`'s settings give.
    pub(crate) fn of(step: &Step) -> Self {
        Self {
            attempts: step.retries.value.saturating_add(1),
            backoff: step.backoff.value,
            backoff_max: step.backoff_max.value,
            never: step.no_retry_exit_codes.value.clone(),
            http: matches!(step.action.value, Action::Http(_)),
        }
    }

    /// How many attempts the step has at most, the first included.
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The delay before retry `n` (1 for the first retry): `backoff`
    /// doubled per retry, at most `backoff_max`.
    pub(crate) fn delay(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1));
        self.backoff.saturating_mul(factor).min(self.backoff_max)
    }

    /// Whether a failed attempt is never retried, and why: `code` is the
    /// exit code that stands for its ending (124 for a timeout), `own` its
    /// command's own exit code, when it exited.
    pub(crate) fn refusal(&self, code: u8, own: Option<i32>) -> Option<NoRetry> {
        if self.http && own.and_then(HttpExit::of_code) == Some(HttpExit::ClientError) {
            Some(NoRetry::ClientError)
        } else if self.never.contains(&i32::from(code)) {
            Some(NoRetry::Listed)
        } else {
            None
        }
    }

    /// After failed attempt number `attempt` (1 for the first), refused or
    /// not: the delay before the next attempt, or `None` when there is none
    /// (it was the last, or it is never retried).
    pub(crate) fn next(&self, attempt: u32, refusal: Option<NoRetry>) -> Option<Duration> {
        (attempt < self.attempts && refusal.is_none()).then(|| self.delay(attempt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn schedule(retries: u32, backoff: u64, backoff_max: u64) -> Schedule {
        Schedule {
            attempts: retries + 1,
            backoff: Duration::from_secs(backoff),
            backoff_max: Duration::from_secs(backoff_max),
            never: vec![2],
            http: false,
        }
    }

    #[test]
    fn the_delay_doubles_up_to_its_cap() {
        let s = schedule(10, 30, 900);
        let table = [
            (1, 30),
            (2, 60),
            (3, 120),
            (4, 240),
            (5, 480),
            (6, 900),
            (7, 900),
            (40, 900),
            (u32::MAX, 900),
        ];
        for (n, secs) in table {
            assert_eq!(s.delay(n), Duration::from_secs(secs), "retry {n}");
        }
        // The cap below the first delay caps it too.
        assert_eq!(schedule(3, 60, 10).delay(1), Duration::from_secs(10));
        assert_eq!(schedule(3, 0, 10).delay(5), Duration::ZERO);
    }

    #[test]
    fn retries_follow_until_the_attempts_are_spent() {
        let s = schedule(2, 1, 60);
        let table = [
            (1, None, Some(1)),
            (2, None, Some(2)),
            (3, None, None),
            (4, None, None),
            (1, Some(NoRetry::Listed), None),
            (1, Some(NoRetry::ClientError), None),
        ];
        for (attempt, refusal, delay) in table {
            assert_eq!(
                s.next(attempt, refusal),
                delay.map(Duration::from_secs),
                "attempt {attempt}, {refusal:?}"
            );
        }
        assert_eq!(schedule(0, 1, 60).next(1, None), None);
    }

    #[test]
    fn some_failures_are_never_retried() {
        let mut s = schedule(3, 1, 60);
        assert_eq!(s.refusal(2, Some(2)), Some(NoRetry::Listed));
        assert_eq!(s.refusal(1, Some(1)), None);
        // The code that stands for the ending is what the list is read by.
        assert_eq!(s.refusal(124, None), None);
        s.never.push(124);
        assert_eq!(s.refusal(124, None), Some(NoRetry::Listed));
        // 22 is a 4xx only from an HTTP step's sender.
        assert_eq!(s.refusal(22, Some(22)), None);
        s.http = true;
        assert_eq!(s.refusal(22, Some(22)), Some(NoRetry::ClientError));
        assert_eq!(s.refusal(22, None), None);
        assert_eq!(s.refusal(7, Some(7)), None);
    }

    proptest! {
        #[test]
        fn delays_stay_within_the_cap_and_never_shrink(
            backoff in 0u64..=86_400_000,
            cap in 0u64..=86_400_000,
            n in 1u32..=2_000,
        ) {
            let s = Schedule {
                attempts: 1_001,
                backoff: Duration::from_millis(backoff),
                backoff_max: Duration::from_millis(cap),
                never: Vec::new(),
                http: false,
            };
            let d = s.delay(n);
            prop_assert!(d <= s.backoff_max);
            prop_assert!(d >= s.backoff.min(s.backoff_max));
            prop_assert!(s.delay(n + 1) >= d);
        }

        #[test]
        fn a_step_has_exactly_its_retries(retries in 0u32..=1_000, refused in any::<bool>()) {
            let s = schedule(retries, 1, 60);
            let refusal = refused.then_some(NoRetry::Listed);
            let followed = (1..=retries + 5).filter(|a| s.next(*a, refusal).is_some()).count();
            let expected = if refused { 0 } else { retries as usize };
            prop_assert_eq!(followed, expected);
            prop_assert_eq!(s.attempts(), retries + 1);
        }
    }
}
