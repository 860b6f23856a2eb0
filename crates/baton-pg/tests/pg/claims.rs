//! Occurrence claims: one occurrence runs once, however many acquirers race
//! for it, through one lock or many.

use std::sync::Arc;
use std::time::Duration;

use baton_lease::Once;
use baton_pg::{Acquire, Form, HolderFacts, Leases, Release, Renewal};
use tokio::sync::Barrier;

use crate::support::{Scene, scalar, used};

const ACQUIRERS: usize = 16;
const TRIALS: i64 = 24;

/// What one acquirer came to in one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Got {
    Ran,
    Claimed,
}

async fn contend(store: &Leases, lock: &str, occurrence: i64) -> Got {
    let claim = Once {
        key: "payout".to_owned(),
        at: occurrence,
    };
    loop {
        match store
            .acquire(
                lock,
                &HolderFacts::here(),
                Duration::from_secs(60),
                Some(&claim),
            )
            .await
            .unwrap()
        {
            Acquire::Acquired(lease) => {
                assert!(matches!(
                    store.release(&lease).await.unwrap(),
                    Release::Released(_)
                ));
                return Got::Ran;
            }
            Acquire::Claimed { job, occurrence: o } => {
                assert_eq!((job.as_str(), o), ("payout", occurrence));
                return Got::Claimed;
            }
            // Someone runs it right now: ask again, as a later tick would.
            Acquire::Busy { .. } => tokio::task::yield_now().await,
            Acquire::Switched(s) => panic!("one server, yet held back: {s:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_occurrence_runs_once_among_sixteen_acquirers() {
    let scene = Scene::new().await;
    let mut stores = Vec::new();
    for i in 0..ACQUIRERS {
        let form = if i % 2 == 0 {
            Form::Conditional
        } else {
            Form::Locking
        };
        stores.push(Arc::new(scene.leases_with(form, None).await));
    }
    let raw = scene.raw().await;
    for trial in 0..TRIALS {
        // Even trials: every acquirer goes through the one lock of the job.
        // Odd trials: each through a lock of its own (sixteen tick sources),
        // so only the claim's unique key stands between them.
        let shared = trial % 2 == 0;
        let barrier = Arc::new(Barrier::new(ACQUIRERS));
        let mut tasks = Vec::new();
        for (i, store) in stores.iter().enumerate() {
            let (store, barrier) = (Arc::clone(store), Arc::clone(&barrier));
            let lock = if shared {
                "payout".to_owned()
            } else {
                format!("payout-tick-{i}")
            };
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                contend(&store, &lock, 1_764_385_200 + trial).await
            }));
        }
        let mut got = Vec::new();
        for t in tasks {
            got.push(t.await.unwrap());
        }
        let ran = got.iter().filter(|g| **g == Got::Ran).count();
        assert_eq!(ran, 1, "trial {trial} (shared lock: {shared}): {got:?}");
        // A claim that lost rolled its grant back: no lock is left held.
        let held: i64 = scalar(
            &raw,
            "SELECT count(*) FROM baton.leases WHERE state = 'held'",
        )
        .await;
        assert_eq!(held, 0, "trial {trial}");
    }
    let claims: i64 = scalar(&raw, "SELECT count(*) FROM baton.claims").await;
    assert_eq!(claims, TRIALS);
}

#[tokio::test]
async fn an_earlier_occurrence_is_refused_after_a_later_one() {
    let scene = Scene::new().await;
    let store = scene.leases().await;
    let at = |o| Once {
        key: "backup".to_owned(),
        at: o,
    };
    let lease = store
        .acquire(
            "backup",
            &HolderFacts::here(),
            Duration::from_secs(60),
            Some(&at(200)),
        )
        .await
        .unwrap()
        .acquired()
        .unwrap();
    store.release(&lease).await.unwrap();
    for o in [100, 200] {
        assert_eq!(
            store
                .acquire(
                    "backup",
                    &HolderFacts::here(),
                    Duration::from_secs(60),
                    Some(&at(o))
                )
                .await
                .unwrap(),
            Acquire::Claimed {
                job: "backup".to_owned(),
                occurrence: o
            }
        );
    }
    // The lease itself stays free and unclaimed runs still take it.
    assert!(matches!(
        store
            .acquire(
                "backup",
                &HolderFacts::here(),
                Duration::from_secs(60),
                Some(&at(300))
            )
            .await
            .unwrap(),
        Acquire::Acquired(_)
    ));
}

#[tokio::test]
async fn a_later_claim_committed_while_an_acquirer_waits_refuses_its_earlier_one() {
    let scene = Scene::new().await;
    for form in [Form::Conditional, Form::Locking] {
        let store = Arc::new(scene.leases_with(form, None).await);
        let lock = format!("backup-{form:?}");
        let job = format!("backup-{form:?}");
        used(&store, &lock).await;

        // Another host's transaction holds the row...
        let raw = scene.raw().await;
        raw.batch_execute(&format!(
            "BEGIN; SELECT * FROM baton.leases WHERE name = '{lock}' FOR UPDATE"
        ))
        .await
        .unwrap();
        // ...while this one asks for occurrence 100 and waits for the row.
        let waiting = {
            let (store, lock, job) = (Arc::clone(&store), lock.clone(), job.clone());
            tokio::spawn(async move {
                let claim = Once { key: job, at: 100 };
                store
                    .acquire(
                        &lock,
                        &HolderFacts::here(),
                        Duration::from_secs(60),
                        Some(&claim),
                    )
                    .await
                    .unwrap()
            })
        };
        let watcher = scene.raw().await;
        let deadline = tokio::time::Instant::now() + baton_testkit::PATIENCE;
        loop {
            let waiters: i64 = scalar(
                &watcher,
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
            )
            .await;
            if waiters > 0 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the acquirer never waited"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // The other host ran occurrence 200 and released meanwhile.
        raw.batch_execute(&format!(
            "UPDATE baton.leases SET claims = claims || '{{\"{job}\": 200}}' WHERE name = '{lock}';
             INSERT INTO baton.claims VALUES ('{job}', 200, '{lock}', 0, clock_timestamp());
             COMMIT"
        ))
        .await
        .unwrap();
        assert_eq!(
            waiting.await.unwrap(),
            Acquire::Claimed {
                job: job.clone(),
                occurrence: 100
            },
            "{form:?}"
        );
    }
}

/// A claim taken back, for a run that never started (its job's guard
/// refused it, or its start was never recorded), frees its occurrence: it
/// may be claimed again, through its lock or another, and the row's claim
/// for the job is the one before. Only the lease's latest claim is taken
/// back, by its holder, and never one whose start the ledger records.
#[tokio::test]
async fn a_claim_taken_back_frees_its_occurrence_and_one_recorded_started_stays() {
    let scene = Scene::new().await;
    let store = scene.leases().await;
    let raw = scene.raw().await;
    let at = |o| Once {
        key: "backup".to_owned(),
        at: o,
    };
    let take = async |lock: &str, o: i64| {
        store
            .acquire(
                lock,
                &HolderFacts::here(),
                Duration::from_secs(60),
                Some(&at(o)),
            )
            .await
            .unwrap()
    };
    let first = take("backup", 100).await.acquired().unwrap();
    store.release(&first).await.unwrap();
    let lease = take("backup", 200).await.acquired().unwrap();
    // Not the lease's latest claim: nothing changes.
    assert_eq!(store.withdraw(&lease, &at(100)).await.unwrap(), None);
    assert!(matches!(
        store.withdraw(&lease, &at(200)).await.unwrap(),
        Some(Renewal::Renewed(_))
    ));
    // Twice comes to once.
    assert_eq!(store.withdraw(&lease, &at(200)).await.unwrap(), None);
    let claims = "SELECT claims ->> 'backup' FROM baton.leases WHERE name = 'backup'";
    assert_eq!(scalar::<String>(&raw, claims).await, "100");
    store.release(&lease).await.unwrap();
    // The occurrence is free again, through another lock too.
    let other = take("backup-elsewhere", 200).await.acquired().unwrap();
    store.release(&other).await.unwrap();
    // An earlier claim stays refused.
    assert_eq!(
        take("backup", 100).await,
        Acquire::Claimed {
            job: "backup".to_owned(),
            occurrence: 100
        }
    );
    // A claim whose occurrence the ledger records started stays.
    let lease = take("backup", 300).await.acquired().unwrap();
    raw.execute(
        "INSERT INTO baton.occurrences (job, occurrence, decision, run_id, decided) \
         VALUES ('backup', 300, 'started', 'r300', 0)",
        &[],
    )
    .await
    .unwrap();
    assert_eq!(store.withdraw(&lease, &at(300)).await.unwrap(), None);
    assert_eq!(scalar::<String>(&raw, claims).await, "300");
    store.release(&lease).await.unwrap();
    assert!(matches!(
        take("backup-elsewhere", 300).await,
        Acquire::Claimed { .. }
    ));
    // Nor does anyone but the holder take a claim back.
    let lease = take("backup", 400).await.acquired().unwrap();
    store.release(&lease).await.unwrap();
    assert_eq!(store.withdraw(&lease, &at(400)).await.unwrap(), None);
    assert_eq!(scalar::<String>(&raw, claims).await, "400");
}
