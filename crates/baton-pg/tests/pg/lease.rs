//! Acquire, busy, renew, release; fences; displaced holders.

use std::time::Duration;

use baton_lease::Verdict;
use baton_pg::{Acquire, Form, HolderFacts, Leases, PgLease, Release, Renewal};

use crate::support::{Scene, granted, lapse, remote, scalar, used};

const LONG: Duration = Duration::from_secs(60);

#[tokio::test]
async fn acquire_busy_renew_release_in_both_forms() {
    let scene = Scene::new().await;
    for (i, form) in [Form::Locking, Form::Conditional].into_iter().enumerate() {
        let name = format!("nightly-{i}");
        let a = scene.leases_with(form, None).await;
        let b = scene.leases_with(form, None).await;
        let lease = granted(&a, &name, &HolderFacts::here(), LONG).await;

        // This process is alive and renewing: live, whoever asks.
        refused_for(&b, &name, &lease, form).await;

        assert!(
            matches!(a.renew(&lease).await.unwrap(), Renewal::Renewed(at) if at >= lease.acquired())
        );
        assert!(matches!(
            a.release(&lease).await.unwrap(),
            Release::Released(_)
        ));
        // Once released, the token is spent.
        assert_eq!(a.release(&lease).await.unwrap(), Release::Lost);
        assert_eq!(a.renew(&lease).await.unwrap(), Renewal::Lost);

        let next = granted(&b, &name, &HolderFacts::here(), LONG).await;
        assert!(next.fence() > lease.fence());
        assert_ne!(next.token(), lease.token());
    }
}

/// `store` is refused lock `name`, which `lease` holds: live.
async fn refused_for(store: &Leases, name: &str, lease: &PgLease, form: Form) {
    match store
        .acquire(name, &HolderFacts::here(), LONG, None)
        .await
        .unwrap()
    {
        Acquire::Busy {
            verdict: Verdict::Live { holder, .. },
            ..
        } => assert_eq!(holder.fence(), Some(lease.fence())),
        other => panic!("{form:?}: expected busy, got {other:?}"),
    }
}

#[tokio::test]
async fn fences_strictly_increase_across_releases_and_takeovers() {
    let scene = Scene::new().await;
    let locking = scene.leases_with(Form::Locking, None).await;
    let conditional = scene.leases_with(Form::Conditional, None).await;
    let raw = scene.raw().await;
    let mut last = None;
    for i in 0..60 {
        let store = if i % 2 == 0 { &locking } else { &conditional };
        let lease = granted(store, "fenced", &remote("host-a"), LONG).await;
        if let Some(prev) = last {
            assert!(
                lease.fence() > prev,
                "round {i}: {} after {prev}",
                lease.fence()
            );
        }
        last = Some(lease.fence());
        if i % 3 == 0 {
            assert!(matches!(
                store.release(&lease).await.unwrap(),
                Release::Released(_)
            ));
        } else {
            // Leave it held, and age its renewal past TTL plus grace on the
            // server, so the next round takes it over.
            lapse(&raw, "fenced").await;
        }
    }
}

#[tokio::test]
async fn a_displaced_holder_can_neither_renew_nor_release() {
    let scene = Scene::new().await;
    let store = scene.leases().await;
    let raw = scene.raw().await;
    let old = granted(&store, "shared", &remote("host-a"), Duration::from_secs(1)).await;
    lapse(&raw, "shared").await;
    // An expired remote holder is taken over.
    let new = granted(&store, "shared", &remote("host-b"), LONG).await;
    assert_eq!(store.renew(&old).await.unwrap(), Renewal::Lost);
    assert_eq!(store.release(&old).await.unwrap(), Release::Lost);
    // The successor still holds it.
    assert!(matches!(
        store.renew(&new).await.unwrap(),
        Renewal::Renewed(_)
    ));
    let token: String = scalar(&raw, "SELECT token FROM baton.leases WHERE name = 'shared'").await;
    assert_eq!(token, new.token().to_string());
}

/// A restore from an older backup (or a failover to a replica that lagged)
/// puts back a row whose fence is behind the fences already handed out:
/// the next grant still goes past every one of them, in both forms.
#[tokio::test]
async fn fences_only_grow_after_the_lease_row_is_restored_from_an_older_copy() {
    let scene = Scene::new().await;
    let raw = scene.raw().await;
    for (i, form) in [Form::Locking, Form::Conditional].into_iter().enumerate() {
        let store = scene.leases_with(form, None).await;
        let name = format!("restored-{i}");
        let mut seen = Vec::new();
        for round in 0..6 {
            let lease = granted(&store, &name, &remote("host-a"), LONG).await;
            seen.push(lease.fence());
            store.release(&lease).await.unwrap();
            if round == 0 {
                raw.batch_execute(&format!(
                    "CREATE TABLE public.backup_{i} AS SELECT * FROM baton.leases \
                     WHERE name = '{name}'"
                ))
                .await
                .unwrap();
            }
        }
        raw.batch_execute(&format!(
            "DELETE FROM baton.leases WHERE name = '{name}';
             INSERT INTO baton.leases SELECT * FROM public.backup_{i};"
        ))
        .await
        .unwrap();
        let restored: i64 = raw
            .query_one("SELECT fence FROM baton.leases WHERE name = $1", &[&name])
            .await
            .unwrap()
            .get(0);
        assert_eq!(restored, i64::try_from(seen[0].get()).unwrap());
        let next = granted(&store, &name, &remote("host-b"), LONG).await;
        let highest = seen.iter().max().unwrap();
        assert!(
            next.fence() > *highest,
            "{form:?}: fence {} after a restore, {highest} was handed out before",
            next.fence()
        );
    }
}

/// The conditional grant's arguments for lock `name`, token `token`, held
/// by `host-x` for a minute, no claim, nothing held back after a switch,
/// waiting up to a minute for a lock.
fn grant_args(name: &str, token: &str) -> String {
    format!(
        "'{name}', '{token}', 'host-x', 'm', 'b', 1, 2, 3, NULL, NULL, NULL, 60000, 1000, 5, NULL, NULL, 0, 60000"
    )
}

/// A contender whose conditional grant waited for the row while another's
/// grant committed is shown that grant (a live holder, busy at once), not
/// the row as it was before its wait (free), which sent it round again and
/// then to the locking form, queueing every other contender behind it.
#[tokio::test]
async fn a_refused_conditional_grant_shows_the_grant_it_waited_for() {
    let scene = Scene::new().await;
    let store = scene.leases_with(Form::Conditional, None).await;
    used(&store, "waited").await;

    let first = scene.raw().await;
    first
        .batch_execute(&format!(
            "BEGIN; SELECT * FROM baton.grant_if_free({})",
            grant_args("waited", "token-a")
        ))
        .await
        .unwrap();
    let second = scene.raw().await;
    let sql = format!(
        "SELECT granted_fence, seen_state, seen_token FROM baton.grant_if_free({})",
        grant_args("waited", "token-b")
    );
    let waiting = tokio::spawn(async move { second.query_one(&sql, &[]).await.unwrap() });
    let watcher = scene.raw().await;
    let deadline = tokio::time::Instant::now() + baton_testkit::PATIENCE;
    while scalar::<i64>(
        &watcher,
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
    )
    .await
        == 0
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second grant never waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    first.batch_execute("COMMIT").await.unwrap();
    let row = waiting.await.unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), None, "granted twice");
    assert_eq!(row.get::<_, Option<&str>>(1), Some("held"));
    assert_eq!(row.get::<_, Option<&str>>(2), Some("token-a"));

    // A lock never taken: no row, and nothing seen.
    let row = watcher
        .query_one(
            &format!(
                "SELECT * FROM baton.grant_if_free({})",
                grant_args("never", "token-c")
            ),
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, Option<i64>>(0), None);
    assert_eq!(row.get::<_, Option<&str>>(4), None, "a state seen");
    assert_eq!(row.get::<_, Option<i64>>(22), None, "a clock seen");
}

/// The conditional grant bounds its waits for a lock itself, for its own
/// transaction only: sent alone (as the store sends it), it gives up at its
/// bound on a row another transaction holds, and the session it ran on
/// (behind a pooler, another client's next) keeps no bound of its.
#[tokio::test]
async fn the_conditional_grant_bounds_its_lock_waits_for_itself_only() {
    let scene = Scene::new().await;
    let store = scene.leases_with(Form::Conditional, None).await;
    used(&store, "bounded").await;
    let raw = scene.raw().await;
    let before: String = raw
        .query_one("SHOW lock_timeout", &[])
        .await
        .unwrap()
        .get(0);

    let stuck = scene.raw().await;
    stuck
        .batch_execute("BEGIN; SELECT * FROM baton.leases WHERE name = 'bounded' FOR UPDATE")
        .await
        .unwrap();
    let args = grant_args("bounded", "token-a").replace(", 0, 60000", ", 0, 200");
    let started = tokio::time::Instant::now();
    let refused = tokio::time::timeout(
        baton_testkit::PATIENCE,
        raw.query_one(&format!("SELECT * FROM baton.grant_if_free({args})"), &[]),
    )
    .await
    .expect("the grant never gave up: its bound was not set")
    .unwrap_err();
    assert_eq!(
        refused.code(),
        Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE),
        "{refused}"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(200),
        "gave up before its bound: {:?}",
        started.elapsed()
    );
    stuck.batch_execute("COMMIT").await.unwrap();

    // Granted alone, then the session's own setting is back.
    let row = raw
        .query_one(&format!("SELECT * FROM baton.grant_if_free({args})"), &[])
        .await
        .unwrap();
    assert!(row.get::<_, Option<i64>>(0).is_some(), "not granted");
    let after: String = raw
        .query_one("SHOW lock_timeout", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(after, before);
}

/// `baton.micros` is inlined by the planner (a call of a SQL function
/// that is not is parsed and planned again in every statement that makes
/// it), and answers what its first version did, to the microsecond.
#[tokio::test]
async fn micros_is_inlined_and_exact() {
    let scene = Scene::new().await;
    let raw = scene.raw().await;
    let plan: Vec<String> = raw
        .query(
            "EXPLAIN (VERBOSE) SELECT baton.micros(clock_timestamp())",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        !plan.iter().any(|l| l.contains("micros")),
        "not inlined: {plan:?}"
    );
    let differ: i64 = scalar(
        &raw,
        "SELECT count(*) FROM (VALUES (timestamptz '1970-01-01 00:00:00+00'),
             ('1969-12-31 23:59:59.999999+00'), ('2026-12-04 23:59:59.123456+00'),
             ('1900-03-01 12:00:00.5+00'), ('2262-04-11 23:47:16.854775+00'),
             (clock_timestamp())) v(t)
         WHERE baton.micros(t) IS DISTINCT FROM floor(extract(epoch FROM t) * 1000000)::bigint",
    )
    .await;
    assert_eq!(differ, 0);
    let null: Option<i64> = scalar(&raw, "SELECT baton.micros(NULL)").await;
    assert_eq!(null, None);
}

/// A store that prepares its statements (`[store] prepare = true`) takes,
/// refuses, renews and releases as one that does not, in both forms, over
/// many calls on its kept connection.
#[tokio::test]
async fn a_store_that_prepares_its_statements_keeps_every_rule() {
    let scene = Scene::new().await;
    let settings = baton_pg::Settings {
        prepare: true,
        ..baton_pg::Settings::default()
    };
    let target = baton_pg::Target::resolve_with(&scene.server.url(), &settings, &|_| None).unwrap();
    assert!(target.prepares());
    for form in [Form::Conditional, Form::Locking] {
        let open = || async {
            baton_pg::Leases::open_target(&target, baton_pg::Options::default())
                .await
                .unwrap()
                .with_form(form)
        };
        let (a, b) = (open().await, open().await);
        let name = format!("prepared-{form:?}");
        let mut last = None;
        for _ in 0..20 {
            let lease = granted(&a, &name, &HolderFacts::here(), LONG).await;
            assert!(
                last.is_none_or(|f| lease.fence() > f),
                "{form:?}: fences grow"
            );
            last = Some(lease.fence());
            refused_for(&b, &name, &lease, form).await;
            assert!(matches!(
                a.renew(&lease).await.unwrap(),
                Renewal::Renewed(_)
            ));
            assert!(matches!(
                a.release(&lease).await.unwrap(),
                Release::Released(_)
            ));
            assert_eq!(a.release(&lease).await.unwrap(), Release::Lost);
            assert_eq!(a.renew(&lease).await.unwrap(), Renewal::Lost);
        }
    }
}
