//! For this crate's unit tests: a connection of their own to the shared
//! throwaway server. Never built outside tests.

use tokio_postgres::Client;

/// Runs `test` on a new connection to the shared test server, on a
/// runtime of its own.
pub(crate) fn on_a_connection(test: impl AsyncFnOnce(&Client)) {
    let server = baton_testkit::pg::PgServer::shared();
    let rt = crate::runtime::current_thread().build().expect("a runtime");
    rt.block_on(async {
        let (client, conn) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
            .await
            .expect("a connection to the test server");
        tokio::spawn(conn);
        test(&client).await;
    });
}
