//! Job guards: a job whose lock changes from one run to the next never
//! runs under two locks at once, across hosts and at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use baton_lease::Verdict;
use baton_pg::{Acquire, Release, TakeGuard};

use crate::support::{Scene, granted, remote};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_running_under_one_lock_is_refused_under_another_until_it_ends() {
    let scene = Scene::new().await;
    let store = scene.leases().await;
    let ttl = Duration::from_secs(60);
    let a = granted(&store, "a", &remote("h1"), ttl).await;
    assert_eq!(store.guard_of("job", "b").await.unwrap(), None);
    assert_eq!(
        store.take_guard("job", "a", a.fence().get()).await.unwrap(),
        TakeGuard::Taken
    );
    let b = granted(&store, "b", &remote("h2"), ttl).await;
    match store.guard_of("job", "b").await.unwrap() {
        Some((lock, Verdict::Live { .. })) => assert_eq!(lock, "a"),
        other => panic!("{other:?}"),
    }
    match store.take_guard("job", "b", b.fence().get()).await.unwrap() {
        TakeGuard::Elsewhere {
            lock,
            verdict: Verdict::Live { .. },
        } => assert_eq!(lock, "a"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.release(&a).await.unwrap(),
        Release::Released(_)
    ));
    assert_eq!(
        store.take_guard("job", "b", b.fence().get()).await.unwrap(),
        TakeGuard::Taken
    );
    let raw = scene.raw().await;
    let row = raw
        .query_one(
            "SELECT lock_name, fence FROM baton.job_guards WHERE job = 'job'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "b");
    assert_eq!(
        u64::try_from(row.get::<_, i64>(1)).unwrap(),
        b.fence().get()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_runs_of_one_job_under_two_locks_are_never_in_flight_together() {
    let scene = Scene::new().await;
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = scene.leases().await;
        let (inside, most, ran) = (inside.clone(), most.clone(), ran.clone());
        let lock = if i % 2 == 0 { "a" } else { "b" };
        tasks.push(tokio::spawn(async move {
            for _ in 0..6 {
                let facts = remote(&format!("h{i}"));
                let Acquire::Acquired(lease) = store
                    .acquire(lock, &facts, Duration::from_secs(60), None)
                    .await
                    .unwrap()
                else {
                    tokio::task::yield_now().await;
                    continue;
                };
                if store
                    .take_guard("job", lock, lease.fence().get())
                    .await
                    .unwrap()
                    == TakeGuard::Taken
                {
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    ran.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
                store.release(&lease).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 1);
    assert!(ran.load(Ordering::SeqCst) > 0);
}

/// The guard taken behind the grant (`acquire_guarding`) is the take's
/// first transaction: made, or moved to the new fence, when it names this
/// lock or none, in the grant's round trip; left alone when it names
/// another lock (the caller then takes it, and is refused), and never
/// written for a grant that was refused.
#[tokio::test(flavor = "current_thread")]
async fn a_guard_taken_with_its_grant_is_the_take_made_in_the_same_round_trip() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    let options = baton_pg::Options {
        pool_size: 1,
        ..baton_pg::Options::default()
    };
    let store = baton_pg::Leases::open(&url, options).await.unwrap();
    let raw = scene.raw().await;
    let guard = async |job: &str| -> Option<(String, u64)> {
        raw.query_opt(
            "SELECT lock_name, fence FROM baton.job_guards WHERE job = $1",
            &[&job],
        )
        .await
        .unwrap()
        .map(|r| (r.get(0), u64::try_from(r.get::<_, i64>(1)).unwrap()))
    };
    let ttl = Duration::from_secs(60);
    let me = remote("h1");
    // The first use makes the lock's row; count from the second.
    let first = granted(&store, "g", &me, ttl).await;
    store.release(&first).await.unwrap();
    // No guard yet: made with the grant, in its one round trip.
    let t0 = proxy.turns();
    let (got, guarded) = store
        .acquire_guarding("g", &me, ttl, None, Some("job"))
        .await
        .unwrap();
    assert_eq!(
        proxy.turns() - t0,
        1,
        "the grant and the guard, one round trip"
    );
    let Acquire::Acquired(lease) = got else {
        panic!("{got:?}")
    };
    assert!(guarded);
    assert_eq!(guard("job").await, Some(("g".into(), lease.fence().get())));
    // Refused (held): nothing written for another job.
    let (busy, guarded) = store
        .acquire_guarding("g", &remote("h2"), ttl, None, Some("other"))
        .await
        .unwrap();
    assert!(matches!(busy, Acquire::Busy { .. }), "{busy:?}");
    assert!(!guarded);
    assert_eq!(guard("other").await, None);
    store.release(&lease).await.unwrap();
    // Naming this lock: moved to the new fence.
    let (got, guarded) = store
        .acquire_guarding("g", &me, ttl, None, Some("job"))
        .await
        .unwrap();
    let Acquire::Acquired(again) = got else {
        panic!("{got:?}")
    };
    assert!(guarded);
    assert_eq!(guard("job").await, Some(("g".into(), again.fence().get())));
    store.release(&again).await.unwrap();
    // Naming another lock: left alone, for the caller's take to judge.
    let elsewhere = granted(&store, "h", &me, ttl).await;
    let (got, guarded) = store
        .acquire_guarding("h", &me, ttl, None, Some("job"))
        .await
        .unwrap();
    assert!(matches!(got, Acquire::Busy { .. }), "{got:?}");
    assert!(!guarded);
    store.release(&elsewhere).await.unwrap();
    let (got, guarded) = store
        .acquire_guarding("h", &me, ttl, None, Some("job"))
        .await
        .unwrap();
    let Acquire::Acquired(h) = got else {
        panic!("{got:?}")
    };
    assert!(
        !guarded,
        "a guard naming another lock is the caller's to judge"
    );
    assert_eq!(guard("job").await, Some(("g".into(), again.fence().get())));
    assert_eq!(
        store.take_guard("job", "h", h.fence().get()).await.unwrap(),
        TakeGuard::Taken,
        "g is free: the caller's take moves the guard"
    );
    assert_eq!(guard("job").await, Some(("h".into(), h.fence().get())));
}
