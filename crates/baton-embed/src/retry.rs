//! A job's retry rule, the command line's (`baton_sched`'s `retry.rs`,
//! which cannot be reached without the whole scheduler): a failed attempt
//! is retried while attempts are left (`retries` + 1 in all) unless its
//! error says never ([`crate::JobError::never_retry`]); the delay before
//! retry `n` (1 for the first) is `backoff` doubled `n - 1` times, at most
//! `backoff_max`.
//!
//! Pure: it never reads the clock and never waits.

use std::time::Duration;

/// When a job's failed attempts are retried, and after how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Retry {
    /// Attempts in all: `retries` + 1.
    pub(crate) attempts: u32,
    /// The delay before the first retry.
    pub(crate) backoff: Duration,
    /// The longest delay.
    pub(crate) backoff_max: Duration,
}

impl Retry {
    /// The delay before retry `n` (1 for the first retry).
    pub(crate) fn delay(&self, n: u32) -> Duration {
        let factor = 2u32.saturating_pow(n.saturating_sub(1));
        self.backoff.saturating_mul(factor).min(self.backoff_max)
    }

    /// After failed attempt `attempt` (1 for the first): the delay before
    /// the next, or `None` when there is none (it was the last, or its
    /// error is never retried).
    pub(crate) fn next(&self, attempt: u32, never: bool) -> Option<Duration> {
        (attempt < self.attempts && !never).then(|| self.delay(attempt))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_up_to_its_cap_and_stops_with_the_attempts() {
        let r = Retry {
            attempts: 4,
            backoff: Duration::from_secs(30),
            backoff_max: Duration::from_secs(90),
        };
        let delays: Vec<_> = (1..=4).map(|n| r.next(n, false)).collect();
        let s = |n| Some(Duration::from_secs(n));
        assert_eq!(delays, [s(30), s(60), s(90), None]);
        assert_eq!(r.next(1, true), None);
        assert_eq!(r.delay(u32::MAX), Duration::from_secs(90));
    }
}
