//! A grant whose answer never arrived: the statement reached the server and
//! committed, then the connection failed. The acquirer reads the row again
//! on a fresh connection and finds its own token: the lease (and its
//! occurrence claim) is its own, not a ghost that blocks everyone for TTL
//! plus grace while the occurrence it claimed never runs.

use std::time::Duration;

use baton_lease::Once;
use baton_pg::{Acquire, Leases, Options, Release};

use crate::support::{Scene, granted, remote, scalar};

const LONG: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_whose_answer_was_lost_is_the_acquirers_own() {
    let scene = Scene::new().await;
    let (proxy, through) = scene.proxied();
    let raw = scene.raw().await;
    let store = Leases::open(&through, Options::default()).await.unwrap();
    // A first use: the row exists and the connection's statements are
    // prepared, so the grant is one statement.
    let first = granted(&store, "lost", &remote("host-a"), LONG).await;
    store.release(&first).await.unwrap();
    proxy.mute();
    let acquiring = tokio::spawn(async move {
        let once = Once {
            key: "nightly".into(),
            at: 1_800_000_000,
        };
        let got = store
            .acquire("lost", &remote("host-a"), LONG, Some(&once))
            .await;
        (store, got)
    });
    // The grant commits on the server; its answer is dropped.
    let mut held = false;
    for _ in 0..400 {
        let state: String =
            scalar(&raw, "SELECT state FROM baton.leases WHERE name = 'lost'").await;
        if state == "held" {
            held = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(held, "the grant never reached the server");
    // The connection dies; the network works again for new ones.
    proxy.unmute();
    proxy.sever();
    let (store, got) = acquiring.await.unwrap();
    let lease = match got {
        Ok(Acquire::Acquired(lease)) => lease,
        other => panic!("the committed grant was not recognised: {other:?}"),
    };
    let row = raw
        .query_one(
            "SELECT token, fence, claims ->> 'nightly' FROM baton.leases WHERE name = 'lost'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), lease.token().to_string());
    assert_eq!(
        u64::try_from(row.get::<_, i64>(1)).unwrap(),
        lease.fence().get()
    );
    assert_eq!(
        row.get::<_, Option<String>>(2).as_deref(),
        Some("1800000000")
    );
    assert!(lease.fence() > first.fence());
    // It is a lease like any other: renewed and released by its holder.
    assert!(matches!(
        store.release(&lease).await.unwrap(),
        Release::Released(_)
    ));
}
