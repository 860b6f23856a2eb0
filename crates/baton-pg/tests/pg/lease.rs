//! Acquire, busy, renew, release; fences; displaced holders.

use std::time::Duration;

use baton_lease::Verdict;
use baton_pg::{Acquire, Form, HolderFacts, Release, Renewal};

use crate::support::{Scene, granted, lapse, remote, scalar};

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
        match b
            .acquire(&name, &HolderFacts::here(), LONG, None)
            .await
            .unwrap()
        {
            Acquire::Busy {
                verdict: Verdict::Live { holder, .. },
                ..
            } => assert_eq!(holder.fence(), Some(lease.fence())),
            other => panic!("{form:?}: expected busy, got {other:?}"),
        }

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
