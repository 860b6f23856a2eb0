//! The protocol's shape: how many round trips each step takes, counted by a
//! proxy between the store and the server. One each in the conditional form;
//! the locking form's acquisition takes two (the judgement sits between).

use std::time::Duration;

use baton_pg::{Form, HolderFacts, Leases, Options, Release, Settings, Target};

use crate::support::{Scene, granted, used};

#[tokio::test(flavor = "current_thread")]
async fn each_step_takes_the_round_trips_it_is_designed_for() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    // Prepared or not: a statement's first use on a connection (the first
    // renewal below, which `used` never sends) prepares it in the same
    // round trip that runs it.
    for (form, acquire_trips, prepare) in [
        (Form::Conditional, 1, false),
        (Form::Locking, 2, false),
        (Form::Conditional, 1, true),
        (Form::Locking, 2, true),
    ] {
        let options = Options {
            pool_size: 1,
            ..Options::default()
        };
        let settings = Settings {
            prepare,
            ..Settings::default()
        };
        let target = Target::resolve_with(&url, &settings, &|_| None).unwrap();
        let store = Leases::open_target(&target, options)
            .await
            .unwrap()
            .with_form(form);
        let name = format!("trips-{form:?}-{prepare}");
        let me = HolderFacts::here();
        let ttl = Duration::from_secs(60);
        // The first use creates the row; count from the second.
        used(&store, &name).await;
        for _ in 0..10 {
            let t0 = proxy.turns();
            let lease = granted(&store, &name, &me, ttl).await;
            let t1 = proxy.turns();
            store.renew(&lease).await.unwrap();
            let t2 = proxy.turns();
            store.release(&lease).await.unwrap();
            let t3 = proxy.turns();
            assert_eq!(
                (t1 - t0, t2 - t1, t3 - t2),
                (acquire_trips, 1, 1),
                "{form:?}, prepared {prepare}: acquire, renew, release"
            );
        }
    }
}

/// A release that also says whether the lock's jobs have an occurrence
/// queued takes the release's one round trip, and reads the queue as the
/// release left it: any of the jobs named, queued, paused or not; no other
/// job, no other decision.
#[tokio::test(flavor = "current_thread")]
async fn a_release_says_in_its_own_round_trip_whether_the_queue_waits() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    let options = Options {
        pool_size: 1,
        ..Options::default()
    };
    let store = Leases::open(&url, options).await.unwrap();
    let raw = scene.raw().await;
    let name = "trips-peek";
    let me = HolderFacts::here();
    let ttl = Duration::from_secs(60);
    used(&store, name).await;
    let mates = ["peek-a".to_owned(), "peek-b".to_owned()];
    let occurrence = |job: &str, at: i64, decision: &str| {
        format!(
            "INSERT INTO baton.occurrences (job, occurrence, decision, decided) \
             VALUES ('{job}', {at}, '{decision}', 0)"
        )
    };
    // Decided but not queued, or queued for a job not named: nothing waits.
    raw.batch_execute(&occurrence("peek-a", 1, "started"))
        .await
        .unwrap();
    raw.batch_execute(&occurrence("peek-c", 1, "queued"))
        .await
        .unwrap();
    let lease = granted(&store, name, &me, ttl).await;
    let t0 = proxy.turns();
    let (released, queued) = store.release_peeking(&lease, &mates).await.unwrap();
    assert_eq!(
        proxy.turns() - t0,
        1,
        "the release and the look, one round trip"
    );
    assert!(matches!(released, Release::Released(_)), "{released:?}");
    assert_eq!(queued, Some(false));
    // Queued for one of the jobs named.
    raw.batch_execute(&occurrence("peek-b", 2, "queued"))
        .await
        .unwrap();
    let lease = granted(&store, name, &me, ttl).await;
    let (released, queued) = store.release_peeking(&lease, &mates).await.unwrap();
    assert!(matches!(released, Release::Released(_)), "{released:?}");
    assert_eq!(queued, Some(true));
    // A lease that is no longer ours is not released, and says nothing.
    let (again, queued) = store.release_peeking(&lease, &mates).await.unwrap();
    assert!(matches!(again, Release::Lost), "{again:?}");
    assert_eq!(
        queued,
        Some(true),
        "the look still answers after a lost release"
    );
    // No jobs named: a plain release, nothing read.
    let lease = granted(&store, name, &me, ttl).await;
    let (released, queued) = store.release_peeking(&lease, &[]).await.unwrap();
    assert!(matches!(released, Release::Released(_)), "{released:?}");
    assert_eq!(queued, None);
}
