//! The scenario builder: a throwaway server with the schema migrated, and
//! stores and holders to put on it.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Clock, Policy};
use baton_pg::{Form, HolderFacts, Leases, Options};
use baton_testkit::pg::PgServer;

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
