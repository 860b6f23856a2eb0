//! One connection per run: the store value's lease calls, its ledger and
//! the lease a run holds share one pool (`kept.rs`, `pool.rs`), counted by
//! a proxy; and a held lease never waits for that connection when another
//! caller is using it.

use std::time::Duration;

use baton_lease::{Claim, Clock, SystemClock};
use baton_pg::{Postgres, Target};
use baton_store::ledger::{Finished, NewRun};
use baton_store::store::{Guard, LockRef, Taken};
use baton_store::words::RunVerdict;
use baton_store::{Renewal, Restated, Store};

use crate::support::{Scene, scalar};

fn lock(name: &str) -> LockRef<'_> {
    LockRef {
        job: name,
        lock: name,
        slot: 1,
        ttl: Duration::from_secs(30),
        takeover_grace: Duration::from_secs(5),
    }
}

/// Runs `f` on a thread of its own (the store's calls block, and must not
/// run inside the test's runtime).
fn off<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_acquires_records_renews_and_releases_on_one_connection() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    off(|| {
        let store = Postgres::new(Target::resolve(&url, None, &|_| None).unwrap());
        let now = SystemClock.wall();
        let mut ledger = store.records(now).unwrap();
        let Taken::Acquired(mut held) = store.try_acquire(&lock("one"), &Claim::default()).unwrap()
        else {
            panic!("a free lock was not acquired");
        };
        let run = NewRun {
            run_id: "0123456789abcdef".into(),
            job: "one".into(),
            occurrence: None,
            fence: Some(held.fence()),
            host: "here".into(),
            pid: std::process::id(),
            started: now,
            backfill: false,
        };
        ledger.begin_run(&run).unwrap();
        assert_eq!(
            held.set_job_group(std::process::id(), baton_lease::Leader::Command)
                .unwrap(),
            Renewal::Renewed
        );
        assert_eq!(held.renew().unwrap(), Renewal::Renewed);
        assert!(matches!(
            held.release().unwrap(),
            baton_store::Release::Released
        ));
    });
    assert_eq!(proxy.connections(), 1, "connections of one run");
    let raw = scene.raw().await;
    let state: String = scalar(&raw, "SELECT state FROM baton.leases WHERE name = 'one'").await;
    assert_eq!(state, "free");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_never_waits_for_a_connection_another_call_is_using() {
    let scene = Scene::new().await;
    let raw = scene.raw().await;
    let url = scene.server.url();
    // Every ledger write takes this lock first; held here, a write waits
    // for it inside its transaction, on the store value's connection.
    let write_lock: i64 = 0x6261_746f_6e2d_6c67;
    raw.execute("SELECT pg_advisory_lock($1)", &[&write_lock])
        .await
        .unwrap();
    let blocked = off(|| {
        let store = Postgres::new(Target::resolve(&url, None, &|_| None).unwrap());
        let now = SystemClock.wall();
        let Taken::Acquired(mut held) =
            store.try_acquire(&lock("busy"), &Claim::default()).unwrap()
        else {
            panic!("a free lock was not acquired");
        };
        std::thread::scope(|s| {
            let writer = s.spawn(|| {
                let mut ledger = store.records(now).unwrap();
                let t0 = SystemClock.boot();
                let wrote = ledger.begin_run(&NewRun {
                    run_id: "fedcba9876543210".into(),
                    job: "busy".into(),
                    occurrence: None,
                    fence: None,
                    host: "here".into(),
                    pid: std::process::id(),
                    started: now,
                    backfill: false,
                });
                (wrote.is_err(), SystemClock.boot() - t0)
            });
            // The writer holds the connection now, waiting for the lock.
            SystemClock.sleep(Duration::from_millis(500));
            let t0 = SystemClock.boot();
            assert_eq!(held.renew().unwrap(), Renewal::Renewed);
            let renewed = SystemClock.boot() - t0;
            let (failed, waited) = writer.join().unwrap();
            assert!(failed, "a write went through the lock held by another");
            held.release().unwrap();
            (renewed, waited)
        })
    });
    let (renewed, waited) = blocked;
    // The writer waits for its deadline (6 s); the renewal for nothing.
    assert!(
        waited >= Duration::from_secs(3),
        "the writer gave up at once: {waited:?}"
    );
    assert!(
        renewed < Duration::from_secs(2),
        "the renewal took {renewed:?}, as if it waited for the writer's connection"
    );
}

/// A job's guard foreseen before the ledger's first read
/// (`Store::foresee_guard`) is read behind that read, in its round trip:
/// the question that follows (`Store::runs_elsewhere`) then takes none when
/// the answer settles it (no guard, or one naming the job's own lock), and
/// still reads and judges the other lock when the guard names one, whose
/// live holder refuses the run as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreseen_guard_is_read_in_the_round_trip_of_the_ledgers_first_look() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    // A round trip as a network's: a batch written in parts counts once.
    proxy.delay(Duration::from_millis(20));
    off(|| {
        let store = Postgres::new(Target::resolve(&url, None, &|_| None).unwrap());
        let now = SystemClock.wall();
        let mut ledger = store.records(now).unwrap();
        let clear = |g: Guard| matches!(g, Guard::Clear);
        // Made and checked; no guard yet.
        ledger.overview().unwrap();
        // Asked without foreseeing: a round trip of its own (after the
        // store's first call, which also asks who its server is).
        assert!(clear(store.runs_elsewhere(&lock("fore"), None).unwrap()));
        let t0 = proxy.turns();
        assert!(clear(store.runs_elsewhere(&lock("fore"), None).unwrap()));
        assert_eq!(proxy.turns() - t0, 1, "the guard read alone");
        // Foreseen: the read takes its one round trip, the question none.
        for _ in 0..2 {
            store.foresee_guard(&lock("fore"));
            let t1 = proxy.turns();
            ledger.overview().unwrap();
            let t2 = proxy.turns();
            assert!(clear(store.runs_elsewhere(&lock("fore"), None).unwrap()));
            assert_eq!(
                (t2 - t1, proxy.turns() - t2),
                (1, 0),
                "the first look with the guard behind it, then nothing"
            );
            // The guard now names the job's own lock: still settled.
            let Taken::Acquired(held) =
                store.try_acquire(&lock("fore"), &Claim::default()).unwrap()
            else {
                panic!("a free lock was not acquired");
            };
            let (g, _) = store.take_guard(&lock("fore"), held.fence(), None).unwrap();
            assert!(clear(g));
            held.release().unwrap();
        }
        // The job's run in flight under another lock: foreseen or not, the
        // run under its own lock is refused.
        let moved = LockRef {
            lock: "fore-moved",
            ..lock("fore")
        };
        let Taken::Acquired(there) = store.try_acquire(&moved, &Claim::default()).unwrap() else {
            panic!("a free lock was not acquired");
        };
        let (g, _) = store.take_guard(&moved, there.fence(), None).unwrap();
        assert!(clear(g), "the guard moves to the other lock");
        store.foresee_guard(&lock("fore"));
        ledger.overview().unwrap();
        let g = store.runs_elsewhere(&lock("fore"), None).unwrap();
        assert!(matches!(g, Guard::Elsewhere(_)), "{g:?}");
        // A guard foreseen for another job answers nothing for this one.
        store.foresee_guard(&lock("another"));
        ledger.overview().unwrap();
        let g = store.runs_elsewhere(&lock("fore"), None).unwrap();
        assert!(matches!(g, Guard::Elsewhere(_)), "{g:?}");
        there.release().unwrap();
    });
}

/// A release foreseen behind a run's end (`Held::foresee_release`) frees
/// the lease in the round trip of the end's `COMMIT`, and the release then
/// answers from it without a round trip of its own. It frees nothing when
/// the write that carries it is not the run's recorded end, nor while one
/// of the drained jobs has an occurrence queued: the holder then releases
/// as it would have without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreseen_release_frees_the_lease_behind_the_runs_recorded_end_only() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    proxy.delay(Duration::from_millis(20));
    let raw = scene.raw().await;
    let state = async |raw: &tokio_postgres::Client| -> String {
        scalar(raw, "SELECT state FROM baton.leases WHERE name = 'rel'").await
    };
    let (answers, held_mid) = off(|| {
        let store = Postgres::new(Target::resolve(&url, None, &|_| None).unwrap());
        let now = SystemClock.wall();
        let mut ledger = store.records(now).unwrap();
        let jobs = vec!["rel".to_owned()];
        let run = |id: &str, fence: u64| NewRun {
            run_id: id.into(),
            job: "rel".into(),
            occurrence: None,
            fence: Some(fence),
            host: "here".into(),
            pid: std::process::id(),
            started: now,
            backfill: false,
        };
        let end = |id: &str| Finished {
            run_id: id.into(),
            job: "rel".into(),
            finished: now,
            verdict: RunVerdict::Ok,
            exit_code: 0,
            success: true,
        };
        let mut answers = Vec::new();
        let Taken::Acquired(mut held) = store.try_acquire(&lock("rel"), &Claim::default()).unwrap()
        else {
            panic!("a free lock was not acquired");
        };
        ledger
            .begin_run(&run("00000000000000a1", held.fence()))
            .unwrap();
        // Carried by a write that is not the run's end: nothing freed.
        held.foresee_release("00000000000000a1", &jobs);
        ledger
            .begin_run(&run("00000000000000a2", held.fence()))
            .unwrap();
        // (A restate checks the token and, unlike a renewal, never answers
        // from the holder's own release.)
        let restated = held.restate(None, None, None).unwrap();
        assert_eq!(restated, Restated::Done, "still held");
        // With an occurrence queued: the end is recorded, the lease kept.
        ledger.enqueue("rel", &[1_700_000_000], false, now).unwrap();
        held.foresee_release("00000000000000a1", &jobs);
        ledger.finish_run(&end("00000000000000a1"), 10).unwrap();
        let restated = held.restate(None, None, None).unwrap();
        assert_eq!(restated, Restated::Done, "kept for the queue");
        let t0 = proxy.turns();
        answers.push((held.release_peeking(&jobs).unwrap(), proxy.turns() - t0));
        // Nothing queued: freed behind the end's COMMIT.
        let Taken::Acquired(mut held) = store.try_acquire(&lock("rel"), &Claim::default()).unwrap()
        else {
            panic!("the released lock was not acquired again");
        };
        ledger
            .begin_run(&run("00000000000000a3", held.fence()))
            .unwrap();
        let queued = ledger.next_queued(&["rel"]).unwrap().unwrap();
        ledger
            .begin_run(&NewRun {
                occurrence: Some(queued.1),
                ..run("00000000000000a4", held.fence())
            })
            .unwrap();
        ledger.finish_run(&end("00000000000000a4"), 10).unwrap();
        held.foresee_release("00000000000000a3", &jobs);
        let t0 = proxy.turns();
        ledger.finish_run(&end("00000000000000a3"), 10).unwrap();
        let ended = proxy.turns() - t0;
        // The row lost its token to this holder's own release: a renewal
        // still says held, nothing runs under it any more.
        assert_eq!(held.renew().unwrap(), Renewal::Renewed);
        let t0 = proxy.turns();
        let released = held.release_peeking(&jobs).unwrap();
        answers.push((released, proxy.turns() - t0));
        (answers, ended)
    });
    assert!(
        matches!(
            answers[0],
            ((baton_store::Release::Released, Some(true)), 1)
        ),
        "kept for the queue, then released with a round trip: {:?}",
        answers[0]
    );
    assert!(
        matches!(
            answers[1],
            ((baton_store::Release::Released, Some(false)), 0)
        ),
        "released behind the end, no round trip of its own: {:?}",
        answers[1]
    );
    assert_eq!(
        held_mid, 3,
        "the end's three round trips, the release in the last"
    );
    assert_eq!(state(&raw).await, "free");
}

/// A step's group foreseen before the run's start (`Held::foresee_group`)
/// is named inside the start's transaction, in the round trip of its
/// statements, and `set_job_group` then answers from it without a round
/// trip of its own; foreseen and not carried by any write, it is named by
/// a call of its own, as without it. Either way the row names the group.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreseen_group_is_named_inside_the_runs_start() {
    let scene = Scene::new().await;
    let (proxy, url) = scene.proxied();
    proxy.delay(Duration::from_millis(20));
    let raw = scene.raw().await;
    let pgid = std::process::id();
    let (turns, plain) = off(|| {
        let store = Postgres::new(Target::resolve(&url, None, &|_| None).unwrap());
        let now = SystemClock.wall();
        let mut ledger = store.records(now).unwrap();
        let Taken::Acquired(mut held) = store.try_acquire(&lock("grp"), &Claim::default()).unwrap()
        else {
            panic!("a free lock was not acquired");
        };
        let run = |id: &str| NewRun {
            run_id: id.into(),
            job: "grp".into(),
            occurrence: None,
            fence: Some(held.fence()),
            host: "here".into(),
            pid: pgid,
            started: now,
            backfill: false,
        };
        let (first, second) = (run("00000000000000b1"), run("00000000000000b2"));
        // Unsent: a call of its own.
        held.foresee_group(pgid, baton_lease::Leader::Command);
        let t0 = proxy.turns();
        let named = held.set_job_group(pgid, baton_lease::Leader::Command);
        let plain = (named.unwrap(), proxy.turns() - t0);
        // Carried by the start, whose round trips it adds none to.
        let t0 = proxy.turns();
        ledger.begin_run(&first).unwrap();
        let alone = proxy.turns() - t0;
        held.foresee_group(pgid, baton_lease::Leader::Command);
        let t0 = proxy.turns();
        ledger.begin_run(&second).unwrap();
        let carried = proxy.turns() - t0;
        let t0 = proxy.turns();
        let named = held.set_job_group(pgid, baton_lease::Leader::Command);
        let answered = (named.unwrap(), proxy.turns() - t0);
        held.release().unwrap();
        ((alone, carried, answered), plain)
    });
    assert_eq!(plain, (Renewal::Renewed, 1), "unsent: a call of its own");
    let (alone, carried, answered) = turns;
    assert_eq!(carried, alone, "the start's round trips, no more");
    assert_eq!(answered, (Renewal::Renewed, 0), "answered from the start");
    let named: i32 = scalar(&raw, "SELECT pgid FROM baton.leases WHERE name = 'grp'").await;
    assert_eq!(named, i32::try_from(pgid).unwrap());
}
