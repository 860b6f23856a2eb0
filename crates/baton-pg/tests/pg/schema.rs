use baton_pg::Options;

use crate::support::{Scene, scalar};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hosts_migrating_at_once_make_one_schema() {
    let scene = Scene {
        server: baton_testkit::pg::PgServer::start(),
    };
    let raw = scene.raw().await;
    for db in 0..5 {
        raw.batch_execute(&format!("CREATE DATABASE race{db}"))
            .await
            .unwrap();
        let url = scene
            .server
            .url()
            .replace("/postgres", &format!("/race{db}"));
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(4));
        let hosts: Vec<_> = (0..4)
            .map(|_| {
                let (url, barrier) = (url.clone(), barrier.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    baton_pg::migrate(&url, Options::default()).await.unwrap()
                })
            })
            .collect();
        let mut applied = Vec::new();
        for h in hosts {
            applied.push(h.await.unwrap());
        }
        applied.sort();
        assert_eq!(
            applied,
            [vec![], vec![], vec![], vec![1, 2, 3, 4, 5, 6, 7, 8, 9]],
            "database race{db}"
        );
        assert_eq!(
            baton_pg::migrate(&url, Options::default()).await.unwrap(),
            Vec::<i32>::new()
        );
        let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let rows = client
            .query("SELECT version FROM baton.migrations", &[])
            .await
            .unwrap();
        let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
        assert_eq!(versions, [1, 2, 3, 4, 5, 6, 7, 8, 9], "database race{db}");
    }
}

#[tokio::test]
async fn a_store_refuses_a_schema_other_than_its_own() {
    let server = baton_testkit::pg::PgServer::start();
    let url = server.url();
    match baton_pg::Leases::open(&url, Options::default()).await {
        Err(baton_pg::Error::SchemaBehind { found: 0, .. }) => {}
        other => panic!("an unmigrated database is refused, got {other:?}"),
    }
    baton_pg::migrate(&url, Options::default()).await.unwrap();
    let scene = Scene { server };
    let raw = scene.raw().await;
    raw.execute(
        "INSERT INTO baton.migrations (version, name) VALUES (99, 'from a later build')",
        &[],
    )
    .await
    .unwrap();
    match baton_pg::migrate(&url, Options::default()).await {
        Err(baton_pg::Error::SchemaTooNew { found: 99, .. }) => {}
        other => panic!("a newer schema is never migrated, got {other:?}"),
    }
    match baton_pg::Leases::open(&url, Options::default()).await {
        Err(baton_pg::Error::SchemaTooNew { found: 99, .. }) => {}
        other => panic!("a newer schema is refused, got {other:?}"),
    }
}

#[tokio::test]
async fn the_test_server_leaves_nothing_behind() {
    let server = baton_testkit::pg::PgServer::start();
    let (port, dir) = (server.port(), server.socket_dir());
    assert!(dir.exists());
    drop(server);
    assert!(!dir.exists(), "{} is left behind", dir.display());
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server still listens on {port}"
    );
}

#[tokio::test]
async fn a_version_1_store_migrates_to_2_and_keeps_its_leases() {
    let scene = Scene::new().await;
    let url = scene.server.url();
    let leases = scene.leases().await;
    let lease = leases
        .acquire(
            "nightly",
            &crate::support::remote("ci-1"),
            std::time::Duration::from_secs(60),
            Some(&baton_lease::Once {
                key: "nightly".into(),
                at: 1_700_000_000,
            }),
        )
        .await
        .unwrap()
        .acquired()
        .unwrap();
    drop(leases);
    // The store as a build of version 1 left it: no ledger tables, no job
    // guards.
    let raw = scene.raw().await;
    raw.batch_execute(
        "DROP TABLE baton.attempts, baton.runs, baton.jobs, baton.occurrences, baton.steps,
                    baton.alerts, baton.missed, baton.pauses, baton.watermarks,
                    baton.tallies, baton.durations, baton.job_guards, baton.server,
                    baton.replacements, baton.declarations;
         DROP FUNCTION baton.switched(), baton.server_identity(), baton.grant_if_free;
         DELETE FROM baton.migrations WHERE version >= 2;",
    )
    .await
    .unwrap();
    assert_eq!(
        baton_pg::migrate(&url, Options::default()).await.unwrap(),
        [2, 3, 4, 5, 6, 7, 8, 9]
    );
    let fence: i64 = scalar(
        &raw,
        "SELECT fence FROM baton.leases WHERE name = 'nightly'",
    )
    .await;
    assert_eq!(u64::try_from(fence).unwrap(), lease.fence().get());
    assert_eq!(
        scalar::<i64>(&raw, "SELECT count(*) FROM baton.claims").await,
        1
    );
    assert_eq!(
        scalar::<i64>(&raw, "SELECT count(*) FROM baton.jobs").await,
        0
    );
}

#[tokio::test]
async fn a_read_only_server_is_refused_when_a_connection_opens() {
    let scene = Scene::new().await;
    scene
        .server
        .sql("ALTER DATABASE postgres SET default_transaction_read_only = on");
    let url = scene.server.url();
    let port = scene.server.port().to_string();
    let said = |e: &baton_pg::Error| {
        let text = e.to_string();
        assert!(
            text.contains("read-only") && text.contains(&port),
            "the message names the server and says why: {text}"
        );
    };
    match baton_pg::Leases::open(&url, Options::default()).await {
        Err(e @ baton_pg::Error::ReadOnly { .. }) => said(&e),
        other => panic!("a read-only server is refused, got {other:?}"),
    }
    let target = baton_pg::Target::resolve(&url, None, &|_| None).unwrap();
    match baton_pg::PgLedger::open(&target, Options::default()) {
        Err(e @ baton_pg::Error::ReadOnly { .. }) => said(&e),
        Err(other) => panic!("a read-only server is refused, got {other:?}"),
        Ok(_) => panic!("a read-only server's ledger was opened"),
    }
    // Writable again (said from another database, which is not read-only),
    // the same store opens.
    scene.server.sql_in(
        "template1",
        "ALTER DATABASE postgres SET default_transaction_read_only = off",
    );
    baton_pg::Leases::open(&url, Options::default())
        .await
        .expect("a writable server is opened");
}
