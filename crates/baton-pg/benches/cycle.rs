//! The PostgreSQL lease's cost, with its floor measured in the same run: an
//! acquire + release cycle in each form against a bare `SELECT 1` on the same
//! kind of pooled connection, and the round trips each step takes (counted
//! by a proxy between client and server).
//!
//! The server is the test kit's throwaway cluster, on this machine, with
//! `fsync=off`: the numbers compare the forms with each other and with the
//! floor, not with a production server.

#![allow(clippy::unwrap_used)] // A benchmark states its setup with unwrap.
#![allow(missing_docs)] // criterion's macros generate undocumented items.

use std::time::Duration;

use baton_pg::{Form, HolderFacts, Leases, Options};
use baton_testkit::pg::PgServer;
use baton_testkit::proxy::Proxy;
use criterion::{Criterion, criterion_group, criterion_main};
use tokio::runtime::Runtime;

const TTL: Duration = Duration::from_secs(30);

fn open(rt: &Runtime, url: &str, form: Form) -> Leases {
    let options = Options {
        pool_size: 1,
        ..Options::default()
    };
    rt.block_on(Leases::open(url, options))
        .unwrap()
        .with_form(form)
}

/// Round trips per step, averaged over `n` cycles through a counting proxy.
fn round_trips(rt: &Runtime, server: &PgServer, form: Form, n: u64) {
    let proxy = Proxy::start(([127, 0, 0, 1], server.port()).into());
    let url = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let store = open(rt, &url, form);
    let me = HolderFacts::here();
    let name = format!("trips-{form:?}");
    // Create the row, so every counted acquisition finds it.
    rt.block_on(async {
        let l = store
            .acquire(&name, &me, TTL, None)
            .await
            .unwrap()
            .acquired()
            .unwrap();
        store.release(&l).await.unwrap();
    });
    let (mut acquire, mut renew, mut release, mut ping) = (0, 0, 0, 0);
    for _ in 0..n {
        rt.block_on(async {
            let t0 = proxy.turns();
            let lease = store
                .acquire(&name, &me, TTL, None)
                .await
                .unwrap()
                .acquired()
                .unwrap();
            let t1 = proxy.turns();
            store.renew(&lease).await.unwrap();
            let t2 = proxy.turns();
            store.release(&lease).await.unwrap();
            let t3 = proxy.turns();
            store.ping().await.unwrap();
            let t4 = proxy.turns();
            acquire += t1 - t0;
            renew += t2 - t1;
            release += t3 - t2;
            ping += t4 - t3;
        });
    }
    let per = |x: u64| x as f64 / n as f64;
    println!(
        "round trips ({form:?}): acquire {:.2}, renew {:.2}, release {:.2}, SELECT 1 {:.2}",
        per(acquire),
        per(renew),
        per(release),
        per(ping)
    );
}

fn cycle(c: &mut Criterion) {
    let server = PgServer::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(baton_pg::migrate(&server.url(), Options::default()))
        .unwrap();
    for form in [Form::Conditional, Form::Locking] {
        round_trips(&rt, &server, form, 200);
    }
    let me = HolderFacts::here();
    let mut g = c.benchmark_group("pg");
    let floor = open(&rt, &server.url(), Form::Conditional);
    g.bench_function("select_1", |b| {
        b.iter(|| rt.block_on(floor.ping()).unwrap());
    });
    for form in [Form::Conditional, Form::Locking] {
        let store = open(&rt, &server.url(), form);
        let name = format!("cycle-{form:?}");
        g.bench_function(format!("acquire_release/{form:?}"), |b| {
            b.iter(|| {
                rt.block_on(async {
                    let lease = store.acquire(&name, &me, TTL, None).await.unwrap();
                    store.release(&lease.acquired().unwrap()).await.unwrap();
                });
            });
        });
    }
    let store = open(&rt, &server.url(), Form::Conditional);
    let lease = rt
        .block_on(store.acquire("renewed", &me, TTL, None))
        .unwrap()
        .acquired()
        .unwrap();
    g.bench_function("renew", |b| {
        b.iter(|| rt.block_on(store.renew(&lease)).unwrap());
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = cycle
}
criterion_main!(benches);
