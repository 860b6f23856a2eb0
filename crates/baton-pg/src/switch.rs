//! A new server under the store: a promoted standby or a restore, seen by
//! its system identifier or its timeline, and the hold that follows it.
//!
//! With asynchronous replication a promoted standby may lack the last grants
//! the old primary made; a restore lacks every grant after its backup. A
//! holder granted there still runs until it finds its token gone or fails to
//! renew, and stops its job by its own boot clock within its TTL plus grace
//! of its last renewal on the old server. So the store remembers the server
//! it last granted on (`baton.server`, schema version 4), and every grant
//! compares it with the server it runs on, in the same statement
//! (`baton.switched()`): the first to see another server records when
//! (`switched`, the new server's clock), and no lease nor job guard is
//! granted before `switched` plus the asker's TTL plus takeover grace.
//!
//! This module owns the answer's shape and its wording; the SQL lives in
//! `schema` (the function) and `statements` (the grant's check). What it
//! does not do: hold back renewals (a holder whose row survived renews as
//! before), or see a standby promoted while the old primary still takes
//! writes (split brain): each server then grants on its own, and only
//! fencing the old primary off can prevent it.

use jiff::Timestamp;

/// A grant held back because the store's server changed (a failover or a
/// restore) too recently for every holder the former server granted to
/// have stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switch {
    /// When the store first saw this server (its clock).
    pub switched: Timestamp,
    /// When grants resume: `switched` plus the asker's TTL and takeover
    /// grace.
    pub until: Timestamp,
}

impl Switch {
    /// Why nothing was granted, for people.
    ///
    /// ```
    /// # use baton_pg::Switch;
    /// let s = Switch {
    ///     switched: "2026-01-01T00:00:00Z".parse().unwrap(),
    ///     until: "2026-01-01T00:00:20Z".parse().unwrap(),
    /// };
    /// assert!(s.describe().contains("until 2026-01-01T00:00:20Z"));
    /// ```
    pub fn describe(&self) -> String {
        format!(
            "the store's server changed at {} (a failover or a restore, which may have lost \
             the last grants); no lock is granted on it until {}, when every holder the \
             former server may have granted has stopped (try again)",
            self.switched, self.until
        )
    }
}
