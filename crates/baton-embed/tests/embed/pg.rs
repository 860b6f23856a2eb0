//! The replicas' tests on PostgreSQL: a throwaway server, three replica
//! processes sharing it, and one killed mid-run.

use baton_store::Store as _;
use baton_testkit::pg::PgServer;

use crate::replicas::{killed_mid_run, three_replicas};
use crate::support::{Said, stubborn};

fn ledger(url: &str) -> Box<dyn baton_store::ledger::Records> {
    let env = |_: &str| None;
    let target = baton_pg::Target::resolve(url, None, &env).unwrap();
    let now = jiff::Timestamp::from_second(baton_testkit::wall_seconds()).unwrap();
    baton_pg::Postgres::new(target).records(now).unwrap()
}

#[test]
fn three_replicas_on_postgres_run_each_occurrence_once() {
    let server = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    three_replicas(&format!("postgres:{url}"), dir.path(), &|| ledger(&url));
}

#[test]
fn a_replica_on_postgres_killed_mid_run_leaves_later_occurrences_to_another() {
    let server = PgServer::start();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    killed_mid_run(&format!("postgres:{url}"), dir.path(), &|| ledger(&url));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_from_postgres_cancels_the_run_drops_it_and_records_it_lease_lost() {
    use std::time::Duration;
    let server = PgServer::start();
    let proxy =
        baton_testkit::proxy::Proxy::start(format!("127.0.0.1:{}", server.port()).parse().unwrap());
    let url = format!(
        "postgres://{}@127.0.0.1:{}/postgres",
        baton_testkit::pg::USER,
        proxy.port()
    );
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let ttl = Duration::from_secs(2);
    let job = baton_embed::Job::cron("partitioned", "* * * * * *")
        .lease(ttl, ttl)
        .grace(Duration::from_millis(300));
    let job = stubborn(job, tx);
    let handle = baton_embed::Scheduler::builder()
        .store(baton_embed::Store::postgres(&url).migrate())
        .job(job)
        .build()
        .unwrap()
        .start();
    let Said::Started(fence) = crate::support::next(&mut rx).await else {
        panic!("the run starts first")
    };
    // The network between this replica and the store goes quiet: no
    // renewal is confirmed, and within its TTL (and the renewal's wait)
    // the run is told, then dropped after its grace.
    proxy.cut();
    assert_eq!(
        crate::support::next(&mut rx).await,
        Said::Cancelled(baton_embed::Cancel::LeaseLost)
    );
    assert_eq!(crate::support::next(&mut rx).await, Said::Dropped);
    proxy.heal();
    proxy.sever();
    handle.shutdown(Duration::from_secs(2)).await;
    let run = crate::support::poll("the run's end recorded", || {
        let runs = ledger(&server.url()).history("partitioned", 100).unwrap();
        runs.into_iter()
            .find(|r| r.fence == Some(fence) && r.verdict.is_some())
    });
    assert_eq!(
        run.verdict.map(|v| v.as_str()),
        Some("lease-lost"),
        "{run:?}"
    );
}

/// The server restarted while a run goes on, the run ending while it is
/// down: the run's attempt and end are written again until the server
/// answers, so the run is recorded as it ended, never `abandoned` by the
/// next run to start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_ends_while_postgres_restarts_is_recorded_as_it_ended() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;
    let server = PgServer::start();
    let url = server.url();
    let (started, mut runs) = tokio::sync::mpsc::unbounded_channel();
    let go = Arc::new(tokio::sync::Notify::new());
    let first = Arc::new(AtomicBool::new(true));
    let (g, f) = (Arc::clone(&go), Arc::clone(&first));
    let ttl = Duration::from_secs(6);
    let job = baton_embed::Job::cron("restarted", "* * * * * *")
        .lease(ttl, ttl)
        .grace(Duration::from_millis(300))
        .run(move |ctx: baton_embed::RunContext| {
            let (go, first, started) = (Arc::clone(&g), Arc::clone(&f), started.clone());
            async move {
                if first.swap(false, Ordering::SeqCst) {
                    let _ = started.send(ctx.run_id().to_owned());
                    go.notified().await;
                }
                Ok(())
            }
        });
    let handle = baton_embed::Scheduler::builder()
        .store(baton_embed::Store::postgres(&url).migrate())
        .job(job)
        .build()
        .unwrap()
        .start();
    let run = crate::support::next(&mut runs).await;
    server.stop_for_now();
    go.notify_one();
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.start_again();
    // Later occurrences run once the server answers again.
    tokio::time::sleep(Duration::from_secs(3)).await;
    handle.shutdown(Duration::from_secs(2)).await;
    let mut l = ledger(&url);
    let row = l
        .history("restarted", 100)
        .unwrap()
        .into_iter()
        .find(|r| r.run_id == run)
        .unwrap();
    assert_eq!(row.verdict.map(|v| v.as_str()), Some("ok"), "{row:?}");
    assert_eq!(row.attempts.len(), 1, "{row:?}");
    // Every occurrence from that run's to the last one run either ran or
    // is recorded missed: those due while the server was down too.
    let ran: Vec<i64> = l
        .history("restarted", 1000)
        .unwrap()
        .into_iter()
        .filter_map(|r| r.occurrence)
        .collect();
    let missed = l.missed("restarted", 1000).unwrap();
    let (first, last) = (row.occurrence.unwrap(), *ran.iter().max().unwrap());
    assert!(
        missed
            .iter()
            .any(|m| m.reason.as_str() == "ledger-unavailable"),
        "{missed:?}"
    );
    for at in first..=last {
        assert!(
            ran.contains(&at) || missed.iter().any(|m| m.first <= at && at <= m.last),
            "occurrence {at} neither ran nor was recorded missed: ran {ran:?}, missed {missed:?}"
        );
    }
}
