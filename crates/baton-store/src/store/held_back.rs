//! A store that grants nothing for a while after its server changed (a
//! promoted standby, a restore): when it started, and when grants resume.
//!
//! A server that replaced another may lack the last grants the former one
//! made, so a holder granted there may still run until it fails to renew
//! and stops its job, within its TTL plus grace of its last renewal. The
//! store therefore grants no lease and no job guard until that long after
//! it first saw the new server ([`super::Store::try_acquire`] refuses as a
//! busy lock does, saying [`HeldBack::describe`]), and says so when asked
//! ([`super::Store::held_back`]). A store whose server never changes
//! (local files) never holds back.

use jiff::Timestamp;

/// Grants held back because the store's server changed (a failover or a
/// restore) too recently for every holder the former server granted to
/// have stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldBack {
    /// When the store first saw this server (its clock).
    pub switched: Timestamp,
    /// When grants resume: `switched` plus the asker's TTL and takeover
    /// grace (for [`super::Store::held_back`], the longest of the locks
    /// asked about).
    pub until: Timestamp,
}

impl HeldBack {
    /// Why nothing was granted, for people.
    ///
    /// ```
    /// # use baton_store::store::HeldBack;
    /// let s = HeldBack {
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
