//! A new server under the store: an asynchronous standby promoted with a
//! lag, and a restore into another cluster. The grant the new server lost
//! is given to nobody before TTL plus grace from the switch, and to the
//! next asker after it; the lost grant's holder finds its token gone at its
//! next renewal and stops its job at once; a lease whose row survived is
//! renewed as before, and its live holder is still told as busy;
//! concurrent askers agree on when the switch was seen.

use std::time::Duration;

use baton_lease::Policy;
use baton_pg::{Acquire, HolderFacts, Leases, Options, Renewal, Switch, TakeGuard};
use baton_testkit::pg::PgServer;
use baton_testkit::replica::{Mode, Replicated};

use crate::held::{GRACE, alive, nap, now, read_pid, result_of, runtime, start_runner_with};
use crate::support::{Scene, granted, remote};

/// The runner's TTL: long enough that it keeps its run through the few
/// seconds without a primary, so that what stops it is the new primary's
/// answer, not its own deadline.
const RUN_TTL: Duration = Duration::from_secs(6);
/// The TTL the takers ask for.
const TTL: Duration = Duration::from_secs(2);

/// A store judging with [`GRACE`], through `url`.
async fn store(url: &str) -> Leases {
    Leases::open(url, Options::default())
        .await
        .expect("open the store")
        .with_policy(Policy {
            takeover_grace: GRACE,
            ..Policy::default()
        })
}

/// Asks for lock `name` until an answer comes (the pooled connection to a
/// server that went away fails once).
async fn ask(store: &Leases, name: &str, who: &HolderFacts, ttl: Duration) -> Acquire {
    let mut last = None;
    for _ in 0..50 {
        match store.acquire(name, who, ttl, None).await {
            Ok(got) => return got,
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no answer for {name}: {last:?}");
}

fn micros(t: jiff::Timestamp) -> i128 {
    t.as_microsecond() as i128
}

#[test]
fn a_grant_lost_by_an_asynchronous_failover_is_given_to_nobody_before_ttl_and_grace_and_its_job_stops()
 {
    let rt = runtime();
    let pair = Replicated::start(Mode::Asynchronous);
    let url = pair.url();
    rt.block_on(baton_pg::migrate(&url, Options::default()))
        .expect("migrate");
    let store = rt.block_on(store(&url));
    // A lease granted and replicated: it survives the failover.
    let kept = rt.block_on(granted(&store, "kept", &remote("h1"), RUN_TTL));
    pair.caught_up();

    // The standby lags from now on; a runner takes lock "lost" on the
    // primary only, and runs a job that would sleep a minute.
    pair.detach();
    let dir = tempfile::tempdir().unwrap();
    let runner = start_runner_with(&url, dir.path(), "lost", 60, true, true, Some(RUN_TTL));
    let sh = read_pid(&dir.path().join("sh.pid"));
    let sleep = read_pid(&dir.path().join("sleep.pid"));
    let fence: u64 = std::fs::read_to_string(dir.path().join("fence"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        pair.standby()
            .sql("SELECT count(*) FROM baton.leases WHERE name = 'lost'"),
        "0",
        "the standby lags: the grant is not on it"
    );

    // The primary crashes; the lagging standby is promoted.
    pair.primary().kill();
    pair.promote();
    let promoted_at = now();

    // Without the hold, lock "lost" (no row on the new primary) would be
    // granted at once, beside the running job. It is held back.
    let taker = remote("taker");
    let first = match rt.block_on(ask(&store, "lost", &taker, TTL)) {
        Acquire::Switched(s) => s,
        other => panic!("the lost lock was not held back: {other:?}"),
    };
    let hold = TTL + GRACE;
    assert_eq!(
        micros(first.until) - micros(first.switched),
        hold.as_micros() as i128,
        "held back for the asker's TTL plus grace: {first:?}"
    );
    assert!(first.describe().contains("the store's server changed"));

    // A lease whose row survived renews on the new primary; nobody else
    // takes it, and no job guard is taken while the hold lasts.
    let mut renewed = None;
    for _ in 0..50 {
        if let Ok(r) = rt.block_on(store.renew(&kept)) {
            renewed = Some(r);
            break;
        }
        nap(Duration::from_millis(100));
    }
    assert!(
        matches!(renewed, Some(Renewal::Renewed(_))),
        "a lease whose row survived renews: {renewed:?}"
    );
    match rt.block_on(ask(&store, "kept", &remote("other"), TTL)) {
        Acquire::Busy { .. } => {}
        other => panic!("a live holder's lease was not busy: {other:?}"),
    }
    match rt
        .block_on(store.take_guard("nightly", "kept", kept.fence().get()))
        .unwrap()
    {
        TakeGuard::Switched(s) => assert_eq!(s.switched, first.switched),
        other => panic!("a guard was taken while the server is held back: {other:?}"),
    }
    assert_eq!(
        pair.standby()
            .sql("SELECT count(*) FROM baton.job_guards WHERE job = 'nightly'")
            .trim(),
        "0",
        "a take refused while the server is held back wrote no guard"
    );

    // Ask until granted: never while the lost holder's job runs, never
    // before the hold ends, and then with a higher fence.
    let mut gone_at = None;
    let mut held_back = 0;
    let taken = loop {
        let running = alive(sh) || alive(sleep);
        if !running && gone_at.is_none() {
            gone_at = Some(now());
        }
        match rt.block_on(ask(&store, "lost", &taker, TTL)) {
            Acquire::Switched(s) => {
                assert_eq!(s.switched, first.switched, "the switch is recorded once");
                held_back += 1;
            }
            Acquire::Acquired(l) => {
                assert!(
                    !running,
                    "the lock was granted while the lost holder's job ran"
                );
                break l;
            }
            other => panic!("{other:?}"),
        }
        assert!(
            now() < promoted_at + hold + Duration::from_secs(30),
            "never granted after the hold"
        );
        nap(Duration::from_millis(100));
    };
    assert!(held_back > 0);
    assert!(
        micros(taken.acquired()) >= micros(first.until),
        "granted at {} before the hold ended at {}",
        taken.acquired(),
        first.until
    );
    assert!(taken.fence().get() > fence, "fences keep growing");
    let gone_at = gone_at.expect("the job stopped");
    // The job stopped on the new primary's answer, within a renewal period
    // and its deadline of the promotion, long before its own TTL ran out.
    let result = result_of(runner, dir.path());
    assert!(result.contains("ending=LeaseLost\n"), "{result}");
    assert!(
        result.contains("its row no longer carries this holder's token"),
        "the renewal was refused, not merely unanswered: {result}"
    );
    eprintln!(
        "the lost holder's job stopped {:?} after the promotion; the hold was {hold:?}",
        gone_at.saturating_sub(promoted_at)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restore_into_another_cluster_is_held_back_once_for_every_asker() {
    let scene = Scene::new().await;
    let old = scene.leases().await;
    let held = granted(&old, "nightly", &remote("h1"), TTL).await;
    let backup = scene.server.dump("postgres", "baton");

    // Another cluster (another system identifier), the backup restored.
    let other = PgServer::start();
    other.restore("postgres", &backup);
    let url = other.url();
    let stores: Vec<Leases> = stores_on(&url, 8).await;
    let mut asks = Vec::new();
    for (i, s) in stores.into_iter().enumerate() {
        asks.push(tokio::spawn(async move {
            let name = format!("lock-{i}");
            s.acquire(&name, &remote(&format!("h{i}")), TTL, None)
                .await
                .unwrap()
        }));
    }
    let mut seen: Vec<Switch> = Vec::new();
    for a in asks {
        match a.await.unwrap() {
            Acquire::Switched(s) => seen.push(s),
            other => panic!("a grant on a restored store was not held back: {other:?}"),
        }
    }
    assert!(
        seen.windows(2).all(|w| w[0].switched == w[1].switched),
        "concurrent askers agree on when the switch was seen: {seen:?}"
    );
    let until = seen[0].until;
    assert_eq!(
        other.sql("SELECT count(*) FROM baton.leases WHERE state = 'held' AND name <> 'nightly'"),
        "0",
        "nothing was granted"
    );

    // After the hold the next asker takes the restored lock, above the
    // fence the backup held.
    let fresh = store(&url).await;
    let taken = loop {
        match fresh
            .acquire("nightly", &remote("h2"), TTL, None)
            .await
            .unwrap()
        {
            Acquire::Acquired(l) => break l,
            Acquire::Switched(s) => {
                assert_eq!(s.switched, seen[0].switched);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            // The restored holder's renewal is within its TTL plus grace.
            Acquire::Busy { .. } => tokio::time::sleep(Duration::from_millis(100)).await,
            other => panic!("{other:?}"),
        }
    };
    assert!(micros(taken.acquired()) >= micros(until));
    assert!(taken.fence() > held.fence());
}

/// `n` stores opened on `url`, each with connections of its own.
async fn stores_on(url: &str, n: usize) -> Vec<Leases> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(store(url).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_look_at_a_restored_store_says_the_hold_every_grant_then_meets() {
    let scene = Scene::new().await;
    let old = scene.leases().await;
    let hold = TTL + GRACE;
    assert_eq!(old.held_back(hold).await.unwrap(), None, "no switch yet");
    granted(&old, "nightly", &remote("h1"), TTL).await;
    let backup = scene.server.dump("postgres", "baton");

    // Another cluster, the backup restored: the first to look is a reader.
    let other = PgServer::start();
    other.restore("postgres", &backup);
    let url = other.url();
    let reader = store(&url).await;
    let seen = reader
        .held_back(hold)
        .await
        .unwrap()
        .expect("a new server is held back");
    assert_eq!(
        micros(seen.until) - micros(seen.switched),
        hold.as_micros() as i128,
        "{seen:?}"
    );
    // Read with the locks, in one call: the same hold, and the restored
    // holder's lease as it stands.
    let (verdicts, again) = reader
        .survey(
            &[("nightly", Policy::default()), ("never", Policy::default())],
            Some(hold),
        )
        .await
        .unwrap();
    assert_eq!(again.unwrap(), Some(seen));
    assert!(
        verdicts[0].is_some() && verdicts[1].is_none(),
        "{verdicts:?}"
    );
    // A grant meets the hold the look started, to the microsecond.
    let asker = store(&url).await;
    match asker
        .acquire("other", &remote("h2"), TTL, None)
        .await
        .unwrap()
    {
        Acquire::Switched(s) => assert_eq!(s, seen),
        got => panic!("a grant on a restored store was not held back: {got:?}"),
    }
    // Once it is over, nothing is held back and the lock is granted.
    loop {
        match reader.held_back(hold).await.unwrap() {
            None => break,
            Some(s) => assert_eq!(s, seen),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    match asker
        .acquire("other", &remote("h2"), TTL, None)
        .await
        .unwrap()
    {
        Acquire::Acquired(l) => assert!(micros(l.acquired()) >= micros(seen.until)),
        got => panic!("not granted after the hold: {got:?}"),
    }
}
