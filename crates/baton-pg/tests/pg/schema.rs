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
