//! How soon a connection notices that its server vanished: the TCP
//! keepalives and user timeout every connection to the store asks of the
//! kernel, chosen from the store's deadline ([`crate::Options::deadline`]).
//!
//! A server that vanished without a word (a host that lost power, a
//! network that drops every packet) leaves an idle connection open for the
//! kernel's default two hours and more. The deadline already bounds every
//! call; these bound the connection itself, so a pooled or held connection
//! to a dead server is closed within about the deadline and the next call
//! connects again, rather than spending its whole deadline on a socket
//! nobody answers. Keepalive timers count whole seconds, so for a deadline
//! under two seconds they take two; the user timeout, in milliseconds,
//! still closes a connection whose request goes unacknowledged for longer
//! than the deadline.

use std::time::Duration;

/// The keepalive settings of one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Keepalive {
    /// Idle time before the first probe.
    pub(crate) idle: Duration,
    /// Time between unanswered probes.
    pub(crate) interval: Duration,
    /// Unanswered probes before the connection is closed.
    pub(crate) retries: u32,
    /// How long sent data may stay unacknowledged before the connection is
    /// closed (`TCP_USER_TIMEOUT`; on Linux it also bounds the probes).
    pub(crate) user_timeout: Duration,
}

impl Keepalive {
    /// Settings that close a connection to a silent server within
    /// `deadline` (at least two seconds): half of it idle, then a probe a
    /// second for the other half.
    pub(crate) fn within(deadline: Duration) -> Self {
        let half = (deadline.as_secs() / 2).max(1);
        Self {
            idle: Duration::from_secs(half),
            interval: Duration::from_secs(1),
            retries: u32::try_from(half).unwrap_or(u32::MAX),
            user_timeout: deadline.max(Duration::from_millis(1)),
        }
    }

    /// The longest a silent server goes unnoticed on an idle connection.
    #[cfg(test)]
    pub(crate) fn noticed_within(&self) -> Duration {
        self.idle + self.interval * self.retries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_server_is_noticed_within_the_deadline() {
        for ms in [
            250, 500, 1_000, 1_999, 2_000, 3_500, 5_000, 6_000, 30_000, 600_000,
        ] {
            let deadline = Duration::from_millis(ms);
            let k = Keepalive::within(deadline);
            let bound = deadline.max(Duration::from_secs(2));
            assert!(k.noticed_within() <= bound, "{deadline:?}: {k:?}");
            assert!(k.idle >= Duration::from_secs(1), "{deadline:?}: {k:?}");
            assert!(k.interval >= Duration::from_secs(1), "{deadline:?}: {k:?}");
            assert!(k.retries >= 1, "{deadline:?}: {k:?}");
            assert_eq!(k.user_timeout, deadline);
        }
    }

    #[test]
    fn the_default_deadline_probes_after_three_seconds_idle() {
        let k = Keepalive::within(crate::Options::default().deadline);
        assert_eq!(
            (k.idle, k.interval, k.retries, k.noticed_within()),
            (
                Duration::from_secs(3),
                Duration::from_secs(1),
                3,
                Duration::from_secs(6)
            )
        );
    }
}
