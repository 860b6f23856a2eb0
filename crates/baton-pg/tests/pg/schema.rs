use baton_pg::Options;

use crate::support::Scene;

#[tokio::test]
async fn two_hosts_migrating_at_once_make_one_schema() {
    let server = baton_testkit::pg::PgServer::start();
    let url = server.url();
    let (a, b) = tokio::join!(
        baton_pg::migrate(&url, Options::default()),
        baton_pg::migrate(&url, Options::default())
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut applied = [a, b];
    applied.sort();
    assert_eq!(applied, [vec![], vec![baton_pg::schema::SCHEMA_VERSION]]);
    assert_eq!(
        baton_pg::migrate(&url, Options::default()).await.unwrap(),
        Vec::<i32>::new()
    );
    let scene = Scene { server };
    let raw = scene.raw().await;
    let rows = raw
        .query("SELECT version FROM baton.migrations", &[])
        .await
        .unwrap();
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    assert_eq!(versions, [1]);
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
