//! Nothing hangs on a stuck server: a statement the server cannot finish is
//! cancelled by the statement timeout, and a server that stops answering
//! (a partition) fails the call at the client's deadline.

use std::time::Duration;

use baton_pg::{Error, Form, HolderFacts, Leases, Options, Renewal};
use tokio_postgres::error::SqlState;

use crate::support::{Scene, granted, used};

const SHORT: Options = Options {
    statement_timeout: Duration::from_millis(300),
    deadline: Duration::from_secs(2),
    connect_timeout: Duration::from_secs(2),
    pool_size: 2,
};

#[tokio::test]
async fn a_row_locked_by_a_stuck_transaction_fails_by_the_statement_timeout() {
    let scene = Scene::new().await;
    for form in [Form::Locking, Form::Conditional] {
        let store = Leases::open(&scene.server.url(), SHORT)
            .await
            .unwrap()
            .with_form(form);
        used(&store, "stuck").await;
        // Another connection locks the row in a transaction and sits on it.
        let raw = scene.raw().await;
        raw.batch_execute("BEGIN; SELECT * FROM baton.leases WHERE name = 'stuck' FOR UPDATE")
            .await
            .unwrap();
        match store
            .acquire("stuck", &HolderFacts::here(), Duration::from_secs(60), None)
            .await
        {
            Err(Error::Query { source, .. }) => {
                assert_eq!(source.code(), Some(&SqlState::QUERY_CANCELED), "{source}");
            }
            other => panic!("{form:?}: expected a cancelled statement, got {other:?}"),
        }
        raw.batch_execute("COMMIT").await.unwrap();
        // The connection was left clean: the next acquisition succeeds.
        granted(
            &store,
            "stuck",
            &HolderFacts::here(),
            Duration::from_secs(60),
        )
        .await;
        raw.execute("DELETE FROM baton.leases", &[]).await.unwrap();
    }
}

#[tokio::test]
async fn a_partitioned_store_fails_each_call_at_the_deadline() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    let store = Leases::open(&url, SHORT).await.unwrap();
    let lease = granted(&store, "cut", &HolderFacts::here(), Duration::from_secs(60)).await;
    proxy.cut();
    match store.renew(&lease).await {
        Err(Error::Timeout { deadline, .. }) => assert_eq!(deadline, SHORT.deadline),
        other => panic!("expected a timeout, got {other:?}"),
    }
    // A new connection cannot get through either.
    assert!(store.renew(&lease).await.is_err());
    proxy.heal();
    // The broken connections were dropped; the store connects again.
    assert!(matches!(
        store.renew(&lease).await.unwrap(),
        Renewal::Renewed(_)
    ));
}
