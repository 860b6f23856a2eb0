//! What only the PostgreSQL ledger has: its write lock, its thread (safe
//! inside a tokio runtime), its deadline, and its schema check.

use std::time::Duration;

use baton_ledger::{Error, Records};
use baton_pg::{Options, PgLedger};

use crate::support::{Kind, Store, at, block_on, server};

/// The ledger's write lock (`baton-lg` in ASCII), as its thread takes it.
const WRITE_LOCK: i64 = 0x6261_746f_6e2d_6c67;

#[test]
fn writes_wait_for_the_write_lock_and_reads_do_not() {
    let store = Store::new(Kind::Pg);
    let target = store.target().unwrap().clone();
    let url = store.url().unwrap().to_owned();
    let short = Options {
        statement_timeout: Duration::from_millis(500),
        deadline: Duration::from_secs(2),
        ..Options::default()
    };
    let mut ledger = PgLedger::open(&target, short).unwrap();
    ledger.see_jobs(&["j"], at(0)).unwrap();
    block_on(async {
        let (mut raw, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        let tx = raw.transaction().await.unwrap();
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&WRITE_LOCK])
            .await
            .unwrap();
        // Another writer holds the lock: a write waits, and gives up with
        // the statement timeout, writing nothing.
        let err = ledger.see_jobs(&["k"], at(1)).unwrap_err();
        match &err {
            Error::Store { store, message, .. } => {
                assert_eq!(store, &target.describe());
                assert!(message.contains("statement timeout"), "{message}");
            }
            other => panic!("expected a store error, got {other:?}"),
        }
        // Reads take no lock.
        assert_eq!(ledger.jobs().unwrap().len(), 1);
        tx.rollback().await.unwrap();
    });
    // The lock is free again: the same connection (or a new one) writes.
    ledger.see_jobs(&["k"], at(2)).unwrap();
    assert_eq!(ledger.jobs().unwrap().len(), 2);
}

#[test]
fn the_ledger_is_synchronous_and_safe_inside_a_runtime() {
    let mut store = Store::new(Kind::Pg);
    let multi = tokio::runtime::Runtime::new().unwrap();
    multi.block_on(async {
        store.see_jobs(&["j"], at(0)).unwrap();
        assert_eq!(store.jobs().unwrap()[0].job, "j");
    });
    let current = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    current.block_on(async {
        store.see_jobs(&["k"], at(1)).unwrap();
        assert_eq!(store.jobs().unwrap().len(), 2);
    });
    assert_eq!(store.location(), store.target().unwrap().describe());
    assert!(store.take_recovered().is_empty());
    store.checkpoint().unwrap();
}

#[test]
fn a_database_not_migrated_is_refused() {
    let server = server();
    let url = server.url();
    let target = baton_pg::Target::resolve(&url, None, &|_| None).unwrap();
    // The server's own database: `postgres`, never migrated by a test.
    match PgLedger::open(&target, Options::default()) {
        Err(baton_pg::Error::SchemaBehind { found: 0, known }) => {
            assert_eq!(known, baton_pg::schema::SCHEMA_VERSION);
        }
        other => panic!("an unmigrated database is refused, got {other:?}"),
    }
}

#[test]
fn a_store_that_stops_answering_fails_within_the_deadline_and_the_ledger_recovers() {
    let store = Store::new(Kind::Pg);
    let target = store.target().unwrap().clone();
    let url = store.url().unwrap().to_owned();
    let mut ledger = PgLedger::open(&target, Options::default()).unwrap();
    ledger.see_jobs(&["j"], at(0)).unwrap();
    // Every connection of the ledger's application is ended by the server.
    block_on(async {
        let (raw, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        raw.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'baton' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    });
    // The next call may fail on the dead connection; the one after it
    // connects again.
    let first = ledger.jobs();
    if let Err(e) = &first {
        assert!(matches!(e, Error::Store { .. }), "{e:?}");
    }
    assert_eq!(ledger.jobs().unwrap().len(), 1);
    ledger.see_jobs(&["k"], at(1)).unwrap();
}
