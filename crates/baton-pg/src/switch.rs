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
//! This module reads the hold's answer for those who ask (`status`,
//! [`crate::Leases::held_back`], which `survey` sends with its reads); the
//! answer's shape and wording are the store boundary's ([`Switch`],
//! `baton_store::store::HeldBack`), the SQL lives in `schema` (the
//! function) and `statements` (the grant's check and the read). What it
//! does not do: hold back renewals (a holder whose row survived renews as
//! before), or see a standby promoted while the old primary still takes
//! writes (split brain): each server then grants on its own, and only
//! fencing the old primary off can prevent it.

use std::time::Duration;

use tokio_postgres::Row;

use crate::error::Error;

/// A grant held back because the store's server changed (a failover or a
/// restore) too recently for every holder the former server granted to
/// have stopped: the store boundary's [`baton_store::store::HeldBack`].
pub type Switch = baton_store::store::HeldBack;

const WHAT: &str = "read whether grants are held back";

/// `hold` in milliseconds, as the hold's read takes it.
pub(crate) fn millis(hold: Duration) -> i64 {
    i64::try_from(hold.as_millis()).unwrap_or(i64::MAX)
}

/// What the hold's read (`statements`' `HELD_BACK`) answered: the switch
/// and the hold's end while it lasts, else `None`.
pub(crate) fn hold_of(
    answered: Result<Option<Row>, tokio_postgres::Error>,
) -> Result<Option<Switch>, Error> {
    let row = answered.map_err(|source| Error::Query { what: WHAT, source })?;
    let at = |us: i64| {
        jiff::Timestamp::from_microsecond(us).map_err(|e| Error::Corrupt {
            name: "baton.server".to_owned(),
            why: e.to_string(),
        })
    };
    match row.map(|r| (r.get::<_, Option<i64>>(0), r.get::<_, Option<i64>>(1))) {
        Some((Some(switched), Some(until))) => Ok(Some(Switch {
            switched: at(switched)?,
            until: at(until)?,
        })),
        _ => Ok(None),
    }
}
