//! The protocol's shape: how many round trips each step takes, counted by a
//! proxy between the store and the server. One each in the conditional form;
//! the locking form's acquisition takes two (the judgement sits between).

use std::time::Duration;

use baton_pg::{Form, HolderFacts, Leases, Options, Settings, Target};

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
