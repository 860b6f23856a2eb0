//! The store behind PgBouncer in transaction pooling mode: every
//! transaction may run on another server connection than the one before,
//! and the startup packet may carry no `options`. Leases are taken,
//! renewed, restated, released and taken over through it; one occurrence
//! is claimed once among acquirers that share its few server connections;
//! the statement timeout still holds, and leaves nothing set on the server
//! connections after its transaction. (The ledger's scenarios run through it
//! in `baton-store`'s conformance suite.)

use std::sync::Arc;
use std::time::Duration;

use baton_lease::Once;
use baton_pg::{Acquire, Error, Form, Leases, Options, Release, Renewal, Restated};
use baton_testkit::pgbouncer::PgBouncer;
use tokio::sync::Barrier;
use tokio_postgres::error::SqlState;

use crate::support::{Scene, granted, lapse, remote, used};

/// More pooled connections than PgBouncer has server connections, so the
/// store's transactions move between them.
const OPTIONS: Options = Options {
    statement_timeout: Duration::from_secs(5),
    deadline: Duration::from_secs(6),
    connect_timeout: Duration::from_secs(5),
    pool_size: 4,
};

async fn through(bouncer: &PgBouncer, form: Form) -> Leases {
    Leases::open(&bouncer.url(), OPTIONS)
        .await
        .expect("open the store through PgBouncer")
        .with_form(form)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_live_their_whole_life_through_pgbouncer() {
    let scene = Scene::new().await;
    let bouncer = PgBouncer::start(&scene.server);
    let raw = scene.raw().await;
    let ttl = Duration::from_secs(60);
    for (at, form) in [(1_000, Form::Conditional), (2_000, Form::Locking)] {
        let name = format!("bounced-{form:?}");
        let (a, b) = (through(&bouncer, form).await, through(&bouncer, form).await);
        let first = granted(&a, &name, &remote("a"), ttl).await;
        assert!(matches!(
            a.renew(&first).await.unwrap(),
            Renewal::Renewed(_)
        ));
        assert!(matches!(
            a.set_job_group(&first, std::process::id()).await.unwrap(),
            Renewal::Renewed(_)
        ));
        let once = Once {
            key: "report".to_owned(),
            at,
        };
        let restated = a.restate(&first, Some("run-2"), Some(&once)).await;
        assert!(
            matches!(restated, Ok(Restated::Done(_))),
            "{form:?}: {restated:?}"
        );
        let again = a.restate(&first, Some("run-3"), Some(&once)).await;
        assert!(
            matches!(again, Ok(Restated::Claimed { .. })),
            "{form:?}: {again:?}"
        );
        // A live remote holder is not taken.
        match b.acquire(&name, &remote("b"), ttl, None).await.unwrap() {
            Acquire::Busy { .. } => {}
            other => panic!("{form:?}: a live holder was not busy: {other:?}"),
        }
        assert_eq!(
            b.guard_of("report", "another-lock").await.unwrap(),
            None,
            "{form:?}"
        );
        assert_eq!(
            a.take_guard("report", &name, first.fence().get())
                .await
                .unwrap(),
            baton_pg::TakeGuard::Taken
        );
        // One that stopped renewing is, after TTL plus grace.
        lapse(&raw, &name).await;
        let second = granted(&b, &name, &remote("b"), ttl).await;
        assert!(second.fence() > first.fence(), "{form:?}");
        assert_eq!(a.renew(&first).await.unwrap(), Renewal::Lost, "{form:?}");
        assert_eq!(a.release(&first).await.unwrap(), Release::Lost, "{form:?}");
        assert!(matches!(
            b.release(&second).await.unwrap(),
            Release::Released(_)
        ));
        let third = granted(&a, &name, &remote("a"), ttl).await;
        assert!(third.fence() > second.fence(), "{form:?}");
        a.release(&third).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_occurrence_is_claimed_once_among_acquirers_sharing_pgbouncer() {
    let scene = Scene::new().await;
    let bouncer = PgBouncer::start(&scene.server);
    let mut stores = Vec::new();
    for i in 0..8 {
        let form = if i % 2 == 0 {
            Form::Conditional
        } else {
            Form::Locking
        };
        stores.push(Arc::new(through(&bouncer, form).await));
    }
    for occurrence in 0..10 {
        let barrier = Arc::new(Barrier::new(stores.len()));
        let mut tasks = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let (store, barrier) = (Arc::clone(store), Arc::clone(&barrier));
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let claim = Once {
                    key: "payout".to_owned(),
                    at: occurrence,
                };
                let me = remote(&format!("host-{i}"));
                loop {
                    let got = store
                        .acquire("payout", &me, Duration::from_secs(60), Some(&claim))
                        .await;
                    match got {
                        Ok(Acquire::Acquired(lease)) => {
                            store.release(&lease).await.unwrap();
                            return true;
                        }
                        Ok(Acquire::Claimed { .. }) => return false,
                        // Someone runs it right now: ask again, as a later
                        // tick would.
                        Ok(Acquire::Busy { .. }) => tokio::task::yield_now().await,
                        Ok(Acquire::Switched(s)) => panic!("one server, yet held back: {s:?}"),
                        Err(e) => panic!("host-{i}, occurrence {occurrence}: {e}"),
                    }
                }
            }));
        }
        let mut ran = Vec::new();
        for t in tasks {
            ran.push(t.await.unwrap());
        }
        assert_eq!(
            ran.iter().filter(|&&r| r).count(),
            1,
            "occurrence {occurrence}: {ran:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statement_timeout_holds_through_pgbouncer_and_stays_in_its_transaction() {
    let scene = Scene::new().await;
    let bouncer = PgBouncer::start(&scene.server);
    let short = Options {
        statement_timeout: Duration::from_millis(300),
        deadline: Duration::from_secs(3),
        ..OPTIONS
    };
    let store = Leases::open(&bouncer.url(), short)
        .await
        .unwrap()
        .with_form(Form::Locking);
    used(&store, "stuck").await;
    let raw = scene.raw().await;
    raw.batch_execute("BEGIN; SELECT * FROM baton.leases WHERE name = 'stuck' FOR UPDATE")
        .await
        .unwrap();
    match store
        .acquire("stuck", &remote("a"), Duration::from_secs(60), None)
        .await
    {
        Err(Error::Query { source, .. }) => {
            assert_eq!(source.code(), Some(&SqlState::QUERY_CANCELED), "{source}");
        }
        other => panic!("expected a cancelled statement, got {other:?}"),
    }
    raw.batch_execute("COMMIT").await.unwrap();
    // Every server connection PgBouncer keeps still has the server's
    // default: the timeout ended with baton's transaction.
    let (client, conn) = tokio_postgres::connect(&bouncer.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    for _ in 0..12 {
        let rows = client.simple_query("SHOW statement_timeout").await.unwrap();
        let value = rows.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
            _ => None,
        });
        assert_eq!(value.as_deref(), Some("0"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_pooling_fails_closed_at_the_first_transaction() {
    let scene = Scene::new().await;
    let bouncer = PgBouncer::start_in(&scene.server, "statement");
    let raw = scene.raw().await;
    for form in [Form::Conditional, Form::Locking] {
        let outcome = match Leases::open(&bouncer.url(), OPTIONS).await {
            Ok(store) => store
                .with_form(form)
                .acquire("stmt", &remote("a"), Duration::from_secs(60), None)
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        let e = outcome.expect_err("a lease granted through statement pooling");
        assert!(
            e.to_string().contains("statement pooling"),
            "{form:?}: the pooler's refusal is said: {e}"
        );
    }
    let held: i64 = crate::support::scalar(
        &raw,
        "SELECT count(*) FROM baton.leases WHERE state = 'held'",
    )
    .await;
    assert_eq!(held, 0, "nothing was granted");
}
