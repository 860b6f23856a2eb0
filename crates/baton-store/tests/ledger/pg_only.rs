//! What only the PostgreSQL ledger has: its write lock, its thread (safe
//! inside a tokio runtime), its deadline, and its schema check.

use std::time::Duration;

use baton_pg::{Options, PgLedger};
use baton_store::ledger::{Error, Records};
use baton_testkit::proxy::Proxy;

use crate::support::{Kind, Store, at, block_on, finished, scheduled, server};

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
        let failed = pg(&err);
        assert_eq!(failed.store(), target.describe());
        let message = failed.message();
        assert!(message.contains("statement timeout"), "{message}");
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
fn a_connection_the_server_ended_is_replaced() {
    let store = Store::new(Kind::Pg);
    let target = store.target().unwrap().clone();
    let url = store.url().unwrap().to_owned();
    let mut ledger = PgLedger::open(&target, Options::default()).unwrap();
    ledger.see_jobs(&["j"], at(0)).unwrap();
    // The server ends every baton connection to this test's database.
    block_on(async {
        let (raw, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        raw.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE application_name = 'baton' AND datname = current_database()
               AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap();
    });
    // The ledger finds its connection closed before it begins, and
    // connects again.
    assert_eq!(ledger.jobs().unwrap().len(), 1);
    ledger.see_jobs(&["k"], at(1)).unwrap();
}

#[test]
fn a_partitioned_store_fails_each_call_at_the_deadline_then_the_ledger_reconnects() {
    let store = Store::new(Kind::Pg);
    let port = store.port().unwrap();
    let proxy = Proxy::start(([127, 0, 0, 1], port).into());
    let url = store
        .url()
        .unwrap()
        .replace(&format!(":{port}/"), &format!(":{}/", proxy.port()));
    let target = baton_pg::Target::resolve(&url, None, &|_| None).unwrap();
    let short = Options {
        statement_timeout: Duration::from_millis(300),
        deadline: Duration::from_secs(1),
        connect_timeout: Duration::from_secs(1),
        ..Options::default()
    };
    let mut ledger = PgLedger::open(&target, short).unwrap();
    ledger.see_jobs(&["j"], at(0)).unwrap();
    proxy.cut();
    for _ in 0..2 {
        match ledger.see_jobs(&["k"], at(1)) {
            Err(e) if e.source_error().is_some() => {
                let (action, message) = (pg(&e).action(), pg(&e).message());
                assert_eq!(action, r#"record the jobs ["k"]"#);
                assert!(
                    message.contains("no answer from the store within 1s"),
                    "{message}"
                );
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
    }
    proxy.heal();
    // The connection that timed out was dropped: the ledger connects again.
    ledger.see_jobs(&["k"], at(2)).unwrap();
    let jobs: Vec<String> = ledger.jobs().unwrap().into_iter().map(|j| j.job).collect();
    assert_eq!(jobs, ["j", "k"]);
}

#[test]
fn a_write_refused_inside_its_transaction_lets_the_write_lock_go_at_once() {
    let store = Store::new(Kind::Pg);
    let target = store.target().unwrap().clone();
    let mut refusing = PgLedger::open(&target, Options::default()).unwrap();
    let run = scheduled("j", "00000000000000a1", 60);
    refusing.begin_run(&run).unwrap();
    // Refused inside the write transaction, after the lock was taken.
    let mut wrong = finished(&run, 10, true);
    wrong.job = "other".into();
    assert!(matches!(
        refusing.finish_run(&wrong, 10),
        Err(Error::Invalid { .. })
    ));
    // Another host writes at once: the refused transaction did not keep the
    // lock until the refusing ledger's next call.
    let quick = Options {
        statement_timeout: Duration::from_millis(500),
        deadline: Duration::from_secs(1),
        ..Options::default()
    };
    let mut other = PgLedger::open(&target, quick).unwrap();
    other.see_jobs(&["k"], at(1)).unwrap();
    // The same holds for a refused write on a run of another job.
    assert!(
        refusing
            .settle("k", "v", Some(&run.run_id), None, at(2))
            .is_err()
    );
    other.see_jobs(&["l"], at(3)).unwrap();
    drop(refusing);
    assert_eq!(other.jobs().unwrap().len(), 3);
}

/// A writer cut off from the store in the middle of a write transaction
/// holds the write lock every host's writes wait for. The server ends its
/// session a second after its last statement, so another host's write with
/// a deadline of a few seconds still gets through, and the cut-off write
/// left nothing behind.
#[test]
fn a_writer_cut_off_mid_transaction_lets_the_write_lock_go_within_a_second() {
    let store = Store::new(Kind::Pg);
    let port = store.port().unwrap();
    let url = store.url().unwrap().to_owned();
    let proxy = Proxy::start(([127, 0, 0, 1], port).into());
    let through = url.replace(&format!(":{port}/"), &format!(":{}/", proxy.port()));
    let through = baton_pg::Target::resolve(&through, None, &|_| None).unwrap();
    let mut cut_off = PgLedger::open(&through, Options::default()).unwrap();
    cut_off.see_jobs(&["j"], at(0)).unwrap();
    // A runtime of its own for the raw connection, whose task must outlive
    // each call.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let raw = rt.block_on(async {
        let (raw, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        raw
    });
    // The job's row is locked elsewhere, so the cut-off writer's start of a
    // run waits inside its transaction, holding the write lock.
    rt.block_on(raw.batch_execute("BEGIN; SELECT * FROM baton.jobs WHERE job = 'j' FOR UPDATE"))
        .unwrap();
    let run = scheduled("j", "00000000000000c1", 60);
    let writer = std::thread::spawn({
        let run = run.clone();
        move || cut_off.begin_run(&run).map(drop)
    });
    let mut waiting = false;
    for _ in 0..400 {
        let n: i64 = rt
            .block_on(raw.query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'baton'
                 AND datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            ))
            .unwrap()
            .get(0);
        if n > 0 {
            waiting = true;
            break;
        }
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(25)).await });
    }
    assert!(waiting, "the writer never waited on the row");
    // Its network freezes; its statement then completes on the server,
    // which waits for the next one that never comes.
    proxy.cut();
    rt.block_on(raw.batch_execute("COMMIT")).unwrap();
    let quick = Options {
        statement_timeout: Duration::from_secs(3),
        deadline: Duration::from_secs(4),
        ..Options::default()
    };
    let mut other = PgLedger::open(store.target().unwrap(), quick).unwrap();
    other.see_jobs(&["k"], at(1)).unwrap();
    assert!(
        writer.join().unwrap().is_err(),
        "the cut-off write succeeded"
    );
    assert!(other.running("j").unwrap().is_none());
    assert!(
        other
            .decision("j", run.occurrence.unwrap())
            .unwrap()
            .is_none()
    );
}

/// The PostgreSQL ledger's own error behind what a call said.
fn pg(e: &Error) -> &baton_pg::LedgerError {
    e.source_error()
        .and_then(|s| s.downcast_ref::<baton_pg::LedgerError>())
        .unwrap_or_else(|| panic!("not the PostgreSQL ledger's error: {e:?}"))
}
