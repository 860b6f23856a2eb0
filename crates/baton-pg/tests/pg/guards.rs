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
