//! The lease's statements prepared by name, once per connection, for a
//! store whose connections are its own ([`crate::Target::prepares`]).
//!
//! This module owns the cache of one connection's prepared statements and
//! the one way a lease statement is sent: unnamed (parsed and planned by
//! the server every time), or, when the store prepares, by the name the
//! driver gave it the first time this connection sent it. The first use
//! sends both, in the same round trip: the unnamed statement answers the
//! call, the named one is kept for the next, so preparing never costs a
//! round trip. A statement the server no longer knows, or whose plan it
//! can no longer use, is forgotten, and that call fails (nothing ran).
//!
//! It must never be used on a connection whose next transaction may run on
//! another server connection (a pooler in transaction mode that does not
//! carry prepared statements): a name there may be another client's
//! statement. Nothing here decides that; the store's settings do.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio_postgres::error::SqlState;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{Client, Row, Statement};

use crate::typed::{Param, typed};

/// One connection's prepared statements, by their text; empty and unused
/// unless the store prepares.
pub(crate) struct Prepared {
    on: bool,
    kept: Mutex<HashMap<String, Statement>>,
}

impl Prepared {
    /// A cache that prepares when `on`.
    pub(crate) fn new(on: bool) -> Self {
        Self {
            on,
            kept: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `sql` (at most one row) on `client`: by its prepared name when
    /// this connection prepared it, else unnamed (and, when preparing,
    /// prepared by name beside it).
    pub(crate) async fn opt(
        &self,
        client: &Client,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        if !self.on {
            return client.query_typed_opt(sql, &typed(params)).await;
        }
        if let Some(statement) = self.get(sql) {
            let values: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.sql()).collect();
            let out = client.query_opt(&statement, &values).await;
            if out.as_ref().is_err_and(unusable) {
                self.forget(sql);
            }
            return out;
        }
        let types: Vec<Type> = params.iter().map(|p| p.ty()).collect();
        let values = typed(params);
        // Both are sent when first polled, the named one first; the call's
        // answer is the unnamed one's.
        let (made, out) = tokio::join!(
            client.prepare_typed(sql, &types),
            client.query_typed_opt(sql, &values)
        );
        if let Ok(statement) = made {
            self.keep(sql, statement);
        }
        out
    }

    /// How many statements this connection keeps prepared.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().map_or(0, |k| k.len())
    }

    fn get(&self, sql: &str) -> Option<Statement> {
        self.kept.lock().ok()?.get(sql).cloned()
    }

    fn keep(&self, sql: &str, statement: Statement) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.insert(sql.to_owned(), statement);
        }
    }

    fn forget(&self, sql: &str) {
        if let Ok(mut kept) = self.kept.lock() {
            kept.remove(sql);
        }
    }
}

/// Whether `e` says the prepared statement cannot be used again: the
/// server does not know its name, or cannot run its plan (a function it
/// calls was replaced with another result).
fn unusable(e: &tokio_postgres::Error) -> bool {
    matches!(
        e.code(),
        Some(&SqlState::INVALID_SQL_STATEMENT_NAME | &SqlState::FEATURE_NOT_SUPPORTED)
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.

    use super::*;
    use crate::test_server::on_a_connection;

    const ADD: &str = "SELECT $1::bigint + 1";
    const KEPT: &str = "SELECT count(*) FROM pg_prepared_statements";

    async fn add(p: &Prepared, client: &Client, n: i64) -> Result<i64, tokio_postgres::Error> {
        Ok(p.opt(client, ADD, &[&n]).await?.unwrap().get(0))
    }

    /// What this session has prepared, as the server counts it.
    async fn kept(client: &Client) -> i64 {
        client.query_typed_one(KEPT, &[]).await.unwrap().get(0)
    }

    #[test]
    fn a_statement_is_prepared_on_its_first_use_and_reused_after() {
        on_a_connection(async |client| {
            let p = Prepared::new(true);
            assert_eq!(add(&p, client, 41).await.unwrap(), 42);
            assert_eq!(p.len(), 1);
            assert_eq!(kept(client).await, 1);
            for n in 0..5 {
                assert_eq!(add(&p, client, n).await.unwrap(), n + 1);
            }
            // Reused by name: nothing more prepared.
            assert_eq!(p.len(), 1);
            assert_eq!(kept(client).await, 1);
        });
    }

    #[test]
    fn a_store_that_does_not_prepare_leaves_nothing_on_the_connection() {
        on_a_connection(async |client| {
            let p = Prepared::new(false);
            for n in 0..3 {
                assert_eq!(add(&p, client, n).await.unwrap(), n + 1);
            }
            assert_eq!(p.len(), 0);
            assert_eq!(kept(client).await, 0);
        });
    }

    #[test]
    fn a_statement_the_server_lost_fails_once_and_is_prepared_again() {
        on_a_connection(async |client| {
            let p = Prepared::new(true);
            assert_eq!(add(&p, client, 1).await.unwrap(), 2);
            // A pooler that handed this client another server connection,
            // or an administrator, dropped it.
            client.batch_execute("DEALLOCATE ALL").await.unwrap();
            let lost = add(&p, client, 1).await.unwrap_err();
            assert_eq!(lost.code(), Some(&SqlState::INVALID_SQL_STATEMENT_NAME));
            assert_eq!(p.len(), 0, "a lost statement is forgotten");
            assert_eq!(add(&p, client, 2).await.unwrap(), 3);
            assert_eq!(p.len(), 1);
            assert_eq!(kept(client).await, 1);
        });
    }
}
