//! A primary and a streaming standby: the standby is refused, as every
//! read-only server is; a URL naming both connects to whichever takes
//! writes, and after a synchronous failover finds on the new primary every
//! lease the old one granted.

use std::time::Duration;

use baton_pg::{Acquire, Error, HolderFacts, Leases, Options, PgLedger, Renewal, Target};
use baton_testkit::pg::PgServer;
use baton_testkit::replica::{Mode, Replicated};

use crate::support::{granted, remote};

const LONG: Duration = Duration::from_secs(60);
const SHORT: Duration = Duration::from_secs(1);

/// The rows of baton's lease and ledger tables on `server`, one count each.
fn rows(server: &PgServer) -> String {
    server.sql(
        "SELECT (SELECT count(*) FROM baton.leases), (SELECT count(*) FROM baton.claims), \
         (SELECT count(*) FROM baton.jobs), (SELECT count(*) FROM baton.runs)",
    )
}

#[tokio::test]
async fn a_lease_store_and_a_ledger_on_a_standby_are_refused_naming_it_and_write_nothing() {
    let pair = Replicated::start(Mode::Asynchronous);
    baton_pg::migrate(&pair.primary().url(), Options::default())
        .await
        .expect("migrate the primary");
    pair.caught_up();
    let before = rows(pair.primary());
    let url = pair.standby().url();
    let named = format!("127.0.0.1:{}", pair.standby().port());
    let said = |e: &Error| {
        let text = e.to_string();
        assert!(
            text.contains(&named) && text.contains("standby in recovery"),
            "the message names the standby and says why: {text}"
        );
    };
    match Leases::open(&url, Options::default()).await {
        Err(e @ Error::ReadOnly { .. }) => said(&e),
        other => panic!("a standby's lease store is refused, got {other:?}"),
    }
    let target = Target::resolve(&url, None, &|_| None).unwrap();
    match PgLedger::open(&target, Options::default()) {
        Err(e @ Error::ReadOnly { .. }) => said(&e),
        Err(other) => panic!("a standby's ledger is refused, got {other:?}"),
        Ok(_) => panic!("a standby's ledger was opened"),
    }
    pair.caught_up();
    assert_eq!(rows(pair.primary()), before, "nothing was written");
    assert_eq!(rows(pair.standby()), before);
    // The same store at the primary opens, so the refusal was the standby's.
    Leases::open(&pair.primary().url(), Options::default())
        .await
        .expect("the primary is opened");
}

#[tokio::test]
async fn a_url_naming_both_servers_follows_the_primary_through_a_synchronous_failover() {
    let pair = Replicated::start(Mode::Synchronous);
    // The standby first: a URL's order is no preference, writability is.
    let url = format!(
        "postgres://baton@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        pair.standby().port(),
        pair.primary().port()
    );
    let target = Target::resolve(&url, None, &|_| None).unwrap();
    assert_eq!(
        target.describe(),
        format!(
            "127.0.0.1:{},127.0.0.1:{} (database postgres, user baton)",
            pair.standby().port(),
            pair.primary().port()
        )
    );
    baton_pg::migrate(&url, Options::default())
        .await
        .expect("migrate through the two-host url");
    let store = Leases::open(&url, Options::default()).await.unwrap();
    let here = HolderFacts::here();
    let held = granted(&store, "nightly", &here, LONG).await;
    assert_eq!(
        pair.primary()
            .sql("SELECT fence FROM baton.leases WHERE name = 'nightly'"),
        held.fence().get().to_string(),
        "the lease was granted on the primary"
    );

    // The primary's postmaster killed, as a crash kills it.
    pair.primary().kill();
    // The primary gone and the standby not yet promoted, nothing takes
    // writes: refused, never connected to the standby.
    match Leases::open(&url, Options::default()).await {
        Err(Error::Connect { .. } | Error::NoHost { .. } | Error::Timeout { .. }) => {}
        other => panic!("with no primary the store is refused, got {other:?}"),
    }
    pair.promote();

    // The same store reconnects to the new primary, where the grant made
    // before the failover is known: its holder renews it, another finds
    // it busy, and the next fence is higher.
    let mut renewed = None;
    for _ in 0..50 {
        match store.renew(&held).await {
            Ok(r) => {
                renewed = Some(r);
                break;
            }
            // The pooled connection to the old primary fails once.
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    assert!(
        matches!(renewed, Some(Renewal::Renewed(_))),
        "the grant survives the failover: {renewed:?}"
    );
    let other = Leases::open(&url, Options::default()).await.unwrap();
    match other
        .acquire("nightly", &remote("beta"), LONG, None)
        .await
        .unwrap()
    {
        Acquire::Busy { .. } => {}
        got => panic!("the lease held before the failover was taken: {got:?}"),
    }
    store.release(&held).await.unwrap();
    // The new primary is a new timeline: whatever replication promised,
    // nothing is granted on it before the asker's TTL plus grace from the
    // switch (a short TTL here, so the wait is short).
    let next = loop {
        match other
            .acquire("nightly", &remote("beta"), SHORT, None)
            .await
            .unwrap()
        {
            Acquire::Acquired(l) => break l,
            Acquire::Switched(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            got => panic!("the released lease was not granted: {got:?}"),
        }
    };
    assert!(next.fence() > held.fence());
    assert_eq!(
        pair.standby()
            .sql("SELECT fence FROM baton.leases WHERE name = 'nightly'"),
        next.fence().get().to_string()
    );
}
