//! How the store connects and how long it waits: the statement timeout the
//! server enforces on every statement, and the deadline the client enforces
//! on every round trip (a partitioned server enforces nothing), from which
//! each connection's TCP keepalives are chosen.

use std::time::Duration;

/// Connection settings. The defaults suit leases with a TTL of 30 s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Set as `statement_timeout` and `idle_in_transaction_session_timeout`
    /// (`SET LOCAL`) in every transaction: no statement runs, and no
    /// transaction (with its row lock) stays open, longer than this on the
    /// server.
    pub statement_timeout: Duration,
    /// How long the client waits for one operation (a whole acquisition, a
    /// renewal, a release) before it drops the connection and reports
    /// [`crate::Error::Timeout`]. Longer than the statement timeout, so a
    /// slow statement is reported by the server when the server can still
    /// speak. A call that must first wait for a pooled connection in use
    /// waits at most this long for it, too; a holder that renews through a
    /// store of its own never waits for one.
    pub deadline: Duration,
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// How many connections the store keeps open at most.
    pub pool_size: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            statement_timeout: Duration::from_secs(5),
            deadline: Duration::from_secs(6),
            connect_timeout: Duration::from_secs(5),
            pool_size: 4,
        }
    }
}

impl Options {
    /// These settings with their deadline no longer than `bound`, when
    /// given: the statement timeout then four fifths of it, as a lease's
    /// calls have theirs (`crate::store`).
    pub(crate) fn within(self, bound: Option<Duration>) -> Options {
        match bound {
            Some(b) if b < self.deadline => Options {
                deadline: b,
                statement_timeout: self.statement_timeout.min(b.mul_f64(0.8)),
                ..self
            },
            _ => self,
        }
    }
}
