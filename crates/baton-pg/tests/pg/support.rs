//! The scenario builder: a throwaway server with the schema migrated, and
//! stores, holders, grants and proxies to put on it.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Clock, Policy};
use baton_pg::{Acquire, Form, HolderFacts, Leases, Options, PgLease};
use baton_testkit::pg::PgServer;
use baton_testkit::proxy::Proxy;
use tokio_postgres::types::FromSqlOwned;

/// The TTL the timing scenarios use.
pub const TTL: Duration = Duration::from_secs(1);
/// The takeover grace the timing scenarios' judges apply.
pub const GRACE: Duration = Duration::from_secs(1);

/// A server with the schema migrated.
pub struct Scene {
    pub server: PgServer,
}

impl Scene {
    pub async fn new() -> Scene {
        let server = PgServer::start();
        baton_pg::migrate(&server.url(), Options::default())
            .await
            .expect("migrate");
        Scene { server }
    }

    /// A store as a host would open it, judging with a 1 s takeover grace.
    pub async fn leases(&self) -> Leases {
        self.leases_with(Form::default(), None).await
    }

    pub async fn leases_with(&self, form: Form, clock: Option<Arc<dyn Clock>>) -> Leases {
        let l = Leases::open(&self.server.url(), Options::default())
            .await
            .expect("open the store")
            .with_form(form)
            .with_policy(Policy {
                takeover_grace: GRACE,
                ..Policy::default()
            });
        match clock {
            Some(c) => l.with_clock(c),
            None => l,
        }
    }

    /// A raw connection, for looking at the tables and holding locks.
    pub async fn raw(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.server.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        client
    }

    /// A proxy before the server, and the URL of the server through it.
    pub fn proxied(&self) -> (Proxy, String) {
        let proxy = Proxy::start(([127, 0, 0, 1], self.server.port()).into());
        let url = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
        (proxy, url)
    }
}

/// Lock `name`, granted to `holder` for `ttl`; a scenario that expects the
/// grant fails here without it.
pub async fn granted(store: &Leases, name: &str, holder: &HolderFacts, ttl: Duration) -> PgLease {
    match store.acquire(name, holder, ttl, None).await.unwrap() {
        Acquire::Acquired(l) => l,
        other => panic!("{name} not acquired: {other:?}"),
    }
}

/// Grants lock `name` to this process and releases it: the row exists, and
/// the store's connection is open with its schema checked.
pub async fn used(store: &Leases, name: &str) {
    let lease = granted(store, name, &HolderFacts::here(), Duration::from_secs(60)).await;
    store.release(&lease).await.unwrap();
}

/// Makes lock `name`'s last renewal an hour older on the server's clock,
/// past any TTL and grace the scenarios use.
pub async fn lapse(raw: &tokio_postgres::Client, name: &str) {
    raw.execute(
        "UPDATE baton.leases SET renewed = renewed - interval '1 hour' WHERE name = $1",
        &[&name],
    )
    .await
    .unwrap();
}

/// The first column of the first row `sql` returns.
pub async fn scalar<T: FromSqlOwned>(raw: &tokio_postgres::Client, sql: &str) -> T {
    raw.query_one(sql, &[]).await.unwrap().get(0)
}

/// A holder on another machine: nothing about it can be checked from here,
/// so it is judged by its renewal's age on the server's clock.
pub fn remote(host: &str) -> HolderFacts {
    HolderFacts {
        host: host.to_owned(),
        machine: Some(format!("machine-of-{host}")),
        boot: Some(format!("boot-of-{host}")),
        pidns: Some(4026531836),
        pid: 4242,
        pstart: Some(1234),
        pgid: None,
        jstart: None,
        run: None,
        grace: None,
    }
}
