//! Nothing hangs on a stuck server: a statement the server cannot finish is
//! cancelled by the statement timeout (the conditional grant, sent outside
//! a transaction of the pool's, by its own bound on waits for a lock, the
//! same length), and a server that stops answering
//! (a partition) fails the call at the client's deadline; every connection
//! asks the kernel to probe an idle server well within that deadline.

use std::time::Duration;

use baton_pg::{Error, Form, HolderFacts, Leases, Options, Renewal};
use tokio_postgres::error::SqlState;

use baton_testkit::proxy::silent_port;

use crate::support::{Scene, granted, used};

const SHORT: Options = Options {
    statement_timeout: Duration::from_millis(300),
    deadline: Duration::from_secs(2),
    connect_timeout: Duration::from_secs(2),
    pool_size: 2,
};

#[tokio::test]
async fn a_row_locked_by_a_stuck_transaction_fails_by_the_servers_bound() {
    let scene = Scene::new().await;
    for form in [Form::Locking, Form::Conditional] {
        let store = Leases::open(&scene.server.url(), SHORT)
            .await
            .unwrap()
            .with_form(form);
        used(&store, "stuck").await;
        // Another connection locks the row in a transaction and sits on it.
        let raw = scene.raw().await;
        raw.batch_execute("BEGIN; SELECT * FROM baton.leases WHERE name = 'stuck' FOR UPDATE")
            .await
            .unwrap();
        match store
            .acquire("stuck", &HolderFacts::here(), Duration::from_secs(60), None)
            .await
        {
            Err(Error::Query { source, .. }) => {
                let bound = match form {
                    Form::Locking => SqlState::QUERY_CANCELED,
                    Form::Conditional => SqlState::LOCK_NOT_AVAILABLE,
                };
                assert_eq!(source.code(), Some(&bound), "{form:?}: {source}");
            }
            other => panic!("{form:?}: expected a cancelled statement, got {other:?}"),
        }
        raw.batch_execute("COMMIT").await.unwrap();
        // The connection was left clean: the next acquisition succeeds.
        granted(
            &store,
            "stuck",
            &HolderFacts::here(),
            Duration::from_secs(60),
        )
        .await;
        raw.execute("DELETE FROM baton.leases", &[]).await.unwrap();
    }
}

#[tokio::test]
async fn a_partitioned_store_fails_each_call_at_the_deadline() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    let store = Leases::open(&url, SHORT).await.unwrap();
    let lease = granted(&store, "cut", &HolderFacts::here(), Duration::from_secs(60)).await;
    proxy.cut();
    match store.renew(&lease).await {
        Err(Error::Timeout { deadline, .. }) => assert_eq!(deadline, SHORT.deadline),
        other => panic!("expected a timeout, got {other:?}"),
    }
    // A new connection cannot get through either.
    assert!(store.renew(&lease).await.is_err());
    proxy.heal();
    // The broken connections were dropped; the store connects again.
    assert!(matches!(
        store.renew(&lease).await.unwrap(),
        Renewal::Renewed(_)
    ));
}

#[tokio::test]
async fn every_connection_has_keepalives_from_the_deadline() {
    // The kernel's view of the store's connection: a keepalive timer runs
    // on it, due within half the deadline (2 s here) while it sits idle.
    // (A server vanishing without a word cannot be played here without
    // dropping packets on a shared machine; the values are checked against
    // the deadline in the crate's unit tests.)
    let scene = Scene::new().await;
    let options = Options {
        deadline: Duration::from_secs(4),
        ..SHORT
    };
    let store = Leases::open(&scene.server.url(), options).await.unwrap();
    store.ping().await.unwrap();
    let out = std::process::Command::new("ss")
        .args(["-tnoH", "state", "established"])
        .arg(format!("( dport = :{} )", scene.server.port()))
        .output()
        .expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&out.stdout);
    // `ss` says `1.9sec`, `1.984ms` or `119min` as the versions go: the
    // time left, in seconds, whatever the unit.
    let timers: Vec<f64> = text
        .lines()
        .filter_map(|l| l.split("timer:(keepalive,").nth(1)?.split(',').next())
        .filter_map(|t| {
            let digits = t.trim_end_matches(|c: char| c.is_ascii_alphabetic());
            let n: f64 = digits.parse().ok()?;
            Some(match &t[digits.len()..] {
                "min" => n * 60.0,
                "ms" => n / 1000.0,
                _ => n,
            })
        })
        .collect();
    assert!(!timers.is_empty(), "no keepalive timer: {text}");
    assert!(timers.iter().all(|&s| s <= 2.0), "{timers:?}: {text}");
    drop(store);
}

/// A ledger call bounded by its caller (a run's supervisor, by its lease's
/// renewal wait) gives up within that bound, not the store's own deadline:
/// a statement that waits is cancelled by the server at four fifths of it,
/// and a reply that never comes fails the call at the bound. The bound
/// lifted, calls work as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_ledger_call_gives_up_within_its_bound_not_the_stores_deadline() {
    use baton_store::ledger::Records;
    let scene = Scene::new().await;
    let (proxy, through) = scene.proxied();
    let target = baton_pg::Target::resolve(&through, None, &|_| None).unwrap();
    let raw = scene.raw().await;
    let mut l = tokio::task::spawn_blocking(move || {
        let mut l = baton_pg::PgLedger::open(&target, Options::default()).unwrap();
        let now = jiff::Timestamp::from_second(1_800_000_000).unwrap();
        l.see_jobs(&["j"], now).unwrap();
        l
    })
    .await
    .unwrap();
    let bound = Duration::from_millis(400);
    // Another writer holds the ledger's write lock: the server cancels the
    // waiting statement by the bounded statement timeout.
    raw.batch_execute("BEGIN; SELECT pg_advisory_xact_lock(7089075310396533863)")
        .await
        .unwrap();
    let call = tokio::task::spawn_blocking(move || {
        l.bound_calls(Some(bound));
        let now = jiff::Timestamp::from_second(1_800_000_060).unwrap();
        let got = l.see_jobs(&["k"], now);
        (l, got)
    });
    // The writer lets go well past the bound (an unbounded call would then
    // succeed).
    tokio::time::sleep(bound * 10).await;
    raw.batch_execute("ROLLBACK").await.unwrap();
    let (back, got) = call.await.unwrap();
    let said = got
        .expect_err("the bounded call waited past its bound")
        .to_string();
    // The server's cancellation at four fifths of the bound, or, when its
    // word is slow to come back through the proxy, the call's own deadline
    // at the bound: either way the call gave up at the bound, not at the
    // store's deadline (which would name a longer wait).
    assert!(
        said.contains("statement timeout")
            || said.contains("canceling statement")
            || said.contains(&format!("within {bound:?}")),
        "{said}"
    );
    l = back;
    // No reply at all: the call fails at the bound, which it names.
    proxy.mute();
    let (back, e) = tokio::task::spawn_blocking(move || {
        let e = l.job("j").unwrap_err();
        (l, e)
    })
    .await
    .unwrap();
    let said = e.to_string();
    assert!(said.contains(&format!("within {bound:?}")), "{said}");
    proxy.unmute();
    proxy.sever();
    l = back;
    // Unbounded again: the call waits for a writer longer than the bound.
    raw.batch_execute("BEGIN; SELECT pg_advisory_xact_lock(7089075310396533863)")
        .await
        .unwrap();
    let writing = tokio::task::spawn_blocking(move || {
        l.bound_calls(None);
        let now = jiff::Timestamp::from_second(1_800_000_120).unwrap();
        l.see_jobs(&["k"], now)
    });
    tokio::time::sleep(bound * 2).await;
    raw.batch_execute("COMMIT").await.unwrap();
    writing.await.unwrap().unwrap();
}

#[tokio::test]
async fn a_first_host_that_never_answers_leaves_the_next_host_its_turn() {
    let scene = Scene::new().await;
    let silent = silent_port();
    let url = format!(
        "postgres://baton@127.0.0.1:{silent},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        scene.server.port()
    );
    // Each host has a share of the deadline, not the whole of it (a
    // deadline long enough for a loaded machine to connect in half of it).
    let long = Options {
        deadline: Duration::from_secs(10),
        ..SHORT
    };
    let store = Leases::open(&url, long).await.expect("the second host");
    let lease = granted(
        &store,
        "next",
        &HolderFacts::here(),
        Duration::from_secs(60),
    )
    .await;
    assert!(matches!(
        store.renew(&lease).await.unwrap(),
        Renewal::Renewed(_)
    ));
    // The URL's connect_timeout is each host's, as libpq's.
    let given = format!("{url}&connect_timeout=1");
    Leases::open(
        &given,
        Options {
            deadline: Duration::from_secs(30),
            ..SHORT
        },
    )
    .await
    .expect("the second host, with the url's connect_timeout");
}

#[tokio::test]
async fn the_urls_connect_timeout_bounds_a_single_hosts_whole_connection() {
    let url = format!(
        "postgres://baton@127.0.0.1:{}/postgres?connect_timeout=1",
        silent_port()
    );
    let long = Options {
        deadline: Duration::from_secs(30),
        ..SHORT
    };
    match Leases::open(&url, long).await {
        Err(Error::Timeout { deadline, .. }) => assert_eq!(deadline, Duration::from_secs(1)),
        other => panic!("expected the url's bound, got {:?}", other.err()),
    }
}

#[tokio::test]
async fn when_no_host_answers_the_error_says_what_each_did() {
    let silent = silent_port();
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://baton@127.0.0.1:{silent},127.0.0.1:{refused}/postgres");
    match Leases::open(&url, SHORT).await {
        Err(e @ Error::NoHost { .. }) => {
            let text = e.to_string();
            assert!(
                text.contains(&format!("127.0.0.1:{silent}: no answer within"))
                    && text.contains(&format!("127.0.0.1:{refused}: error connecting")),
                "{text}"
            );
        }
        other => panic!("expected every host's failure, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unknown_url_parameter_is_refused_by_its_name() {
    for name in ["sslcrl", "service", "sslpassword"] {
        let url = format!("postgres://baton@127.0.0.1:1/postgres?{name}=secret-value");
        let Err(e) = Leases::open(&url, SHORT).await else {
            panic!("{name}: the url was taken")
        };
        let text = e.to_string();
        assert!(
            text.contains(&format!("unknown option `{name}`")) && !text.contains("secret-value"),
            "{text}"
        );
    }
}
