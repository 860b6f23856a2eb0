//! Nothing hangs on a stuck server: a statement the server cannot finish is
//! cancelled by the statement timeout, and a server that stops answering
//! (a partition) fails the call at the client's deadline; every connection
//! asks the kernel to probe an idle server well within that deadline.

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

#[tokio::test]
async fn every_connection_has_keepalives_from_the_deadline() {
    // The kernel's view of the store's connection: a keepalive timer runs
    // on it, due within half the deadline (2 s here) while it sits idle.
    // (A server vanishing without a word cannot be played here without
    // dropping packets on a shared machine; the values are checked against
    // the deadline in the crate's unit tests.)
    let scene = Scene::new().await;
    let options = Options {
        deadline: Duration::from_secs(4),
        ..SHORT
    };
    let store = Leases::open(&scene.server.url(), options).await.unwrap();
    store.ping().await.unwrap();
    let out = std::process::Command::new("ss")
        .args(["-tnoH", "state", "established"])
        .arg(format!("( dport = :{} )", scene.server.port()))
        .output()
        .expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // `ss` says `1.9sec`, `1.984ms` or `119min` as the versions go: the
    // time left, in seconds, whatever the unit.
    let timers: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("timer:(keepalive,").nth(1)?.split(',').next())
        .filter_map(|t| {
            let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let n: f64 = digits.parse().ok()?;
            Some(match &t[digits.len()..] {
                "min" => n * 60.0,
                "ms" => n / 1000.0,
                _ => n,
            })
        })
        .collect();
    assert!(!timers.is_empty(), "no keepalive timer: {text}");
    assert!(timers.iter().all(|&s| s <= 2.0), "{timers:?}: {text}");
    drop(store);
}
