//! A judge on the holder's own host decides by evidence, as the file lock
//! does: a dead holder is taken at once, a live one never, however late its
//! renewal (seed 001).

use std::sync::Arc;
use std::time::Duration;

use baton_lease::{Clock, ManualClock, SystemClock, Verdict};
use baton_pg::{Acquire, Form, HolderFacts, Leases};

use crate::support::{Scene, granted, lapse};

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn a_dead_holder_on_this_host_is_taken_at_once() {
    let scene = Scene::new().await;
    for form in [Form::Conditional, Form::Locking] {
        let store = scene.leases_with(form, None).await;
        let mut child = std::process::Command::new("sleep")
            .arg("600")
            .spawn()
            .unwrap();
        let pid = child.id();
        let holder = HolderFacts {
            pid,
            pstart: baton_lease::job::process_start(pid),
            ..HolderFacts::here()
        };
        let held = granted(&store, "evidence", &holder, HOUR).await;
        kept(&store, "evidence", "a live holder is kept").await;
        child.kill().unwrap();
        child.wait().unwrap();
        // Its TTL is an hour away; the evidence breaks it now.
        let next = granted(&store, "evidence", &HolderFacts::here(), HOUR).await;
        assert!(next.fence() > held.fence());
        store.release(&next).await.unwrap();
    }
}

#[tokio::test]
async fn a_live_holder_on_this_host_is_never_taken_however_late_its_renewal() {
    let scene = Scene::new().await;
    let real = SystemClock;
    let clock = Arc::new(ManualClock::new(real.wall(), real.boot()));
    let a = scene
        .leases_with(Form::default(), Some(clock.clone()))
        .await;
    let b = scene.leases_with(Form::Locking, Some(clock.clone())).await;
    let raw = scene.raw().await;
    granted(&a, "slow", &HolderFacts::here(), Duration::from_secs(1)).await;
    // Its boot clock says the renewal lapsed an hour ago, and so does the
    // server's clock: the process is alive, so it is hung, never taken.
    clock.advance(HOUR);
    lapse(&raw, "slow").await;
    for _ in 0..3 {
        match b
            .acquire("slow", &HolderFacts::here(), Duration::from_secs(1), None)
            .await
            .unwrap()
        {
            Acquire::Busy {
                verdict: Verdict::Hung { lapsed, .. },
                ..
            } => assert!(lapsed >= HOUR),
            other => panic!("a live holder is kept, got {other:?}"),
        }
        clock.advance(HOUR);
    }
}

#[tokio::test]
async fn a_holder_from_an_earlier_boot_of_this_host_is_dead() {
    let scene = Scene::new().await;
    let store = scene.leases().await;
    let before = HolderFacts {
        boot: Some("an-earlier-boot".to_owned()),
        ..HolderFacts::here()
    };
    assert!(before.machine.is_some(), "the test needs /etc/machine-id");
    granted(&store, "rebooted", &before, HOUR).await;
    // Renewed on the server's clock after this machine booted: another
    // machine with this one's identity (a clone), judged as another host.
    kept(&store, "rebooted", "a clone's live lease is kept").await;
    // Last renewed a minute before this machine booted: its TTL is an hour
    // away, yet the changed boot id says it is gone.
    let up = baton_lease::Clock::boot(&baton_lease::SystemClock).as_secs_f64() + 60.0;
    scene
        .raw()
        .await
        .execute(
            "UPDATE baton.leases SET acquired = clock_timestamp() - make_interval(secs => $1),
                                     renewed = clock_timestamp() - make_interval(secs => $1)
             WHERE name = 'rebooted'",
            &[&up],
        )
        .await
        .unwrap();
    granted(&store, "rebooted", &HolderFacts::here(), HOUR).await;
}

/// Asks for lock `name` for this process, and fails with `why` unless it
/// is refused for a live holder.
async fn kept(store: &Leases, name: &str, why: &str) {
    let here = HolderFacts::here();
    let got = store.acquire(name, &here, HOUR, None).await.unwrap();
    assert!(
        matches!(
            got,
            Acquire::Busy {
                verdict: Verdict::Live { .. },
                ..
            }
        ),
        "{why}, got {got:?}"
    );
}
