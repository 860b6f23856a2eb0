//! A run supervised by `baton_runner::Session` under a lease held in the
//! store (`PgHeld`): a partition stops the job before anyone may take the
//! lease, a killed connection is reconnected without stopping the run, no
//! call outlives its deadline, restates claim occurrences once, and the job's
//! group on the row keeps an orphaned job's lease from being taken.
//!
//! The sessions run real `sh` and `sleep` processes. A session catches
//! signals and makes its process a subreaper, so the scenarios that start one
//! in this process take turns ([`one_session_at_a_time`]); the kill -9
//! scenario runs its session in a child process (this test binary again).

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use baton_lease::{Clock, Once, Policy, SystemClock, Verdict};
use baton_pg::{Acquire, HolderFacts, Leases, Options, PgHeld, PgLease};
use baton_runner::{
    Ending, Event, Finish, Held, Renewal, Restated, Session, SessionConfig, StepSpec,
};
use baton_testkit::proxy::Proxy;

use crate::support::{Scene, remote};

const TTL: Duration = Duration::from_secs(2);
const GRACE: Duration = Duration::from_secs(2);
/// Short deadlines, so that a partition shows within a TTL.
const QUICK: Options = Options {
    statement_timeout: Duration::from_millis(400),
    deadline: Duration::from_millis(500),
    connect_timeout: Duration::from_millis(500),
    pool_size: 1,
};

fn one_session_at_a_time() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn now() -> Duration {
    SystemClock.boot()
}

fn nap(d: Duration) {
    SystemClock.sleep(d);
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to 10 s for `path` to hold a pid.
fn read_pid(path: &Path) -> u32 {
    for _ in 0..200 {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        nap(Duration::from_millis(50));
    }
    panic!("no pid in {}", path.display());
}

/// A step whose shell writes its pid, starts a `sleep` child, writes that
/// one's pid, and waits for it.
fn sleeper(dir: &Path, secs: u32) -> StepSpec {
    let script = format!(
        "echo $$ > {d}/sh.pid.tmp && mv {d}/sh.pid.tmp {d}/sh.pid; sleep {secs} & \
         echo $! > {d}/sleep.pid.tmp && mv {d}/sleep.pid.tmp {d}/sleep.pid; wait",
        d = dir.display()
    );
    let mut spec = StepSpec::new("sh", vec!["-c".into(), script.into()]);
    spec.kill_grace = Duration::from_millis(200);
    spec
}

async fn acquire(store: &Leases, name: &str, me: &HolderFacts) -> PgLease {
    match store.acquire(name, me, TTL, None).await.unwrap() {
        Acquire::Acquired(l) => l,
        other => panic!("{name} not acquired: {other:?}"),
    }
}

fn judge_with_grace(l: Leases) -> Leases {
    l.with_policy(Policy {
        takeover_grace: GRACE,
        ..Policy::default()
    })
}

#[test]
fn a_cut_network_stops_the_whole_tree_before_anyone_may_take_the_lease() {
    let _turn = one_session_at_a_time();
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let proxy = Proxy::start(([127, 0, 0, 1], scene.server.port()).into());
    let through = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    // The holder looks like one on another machine: a judge here can only
    // go by its renewal's age on the server's clock.
    let mut me = remote("holder");
    me.grace = Some(GRACE);
    let (store, direct) = rt.block_on(async {
        let store = Leases::open(&through, QUICK).await.unwrap();
        let direct = Leases::open(&scene.server.url(), Options::default())
            .await
            .unwrap();
        (store, judge_with_grace(direct))
    });
    let lease = rt.block_on(acquire(&store, "cut", &me));
    let fence = lease.fence();
    let held = PgHeld::start(&store, lease, &me, TTL).unwrap();
    assert_eq!(held.renew_wait(), QUICK.deadline);
    let dir = tempfile::tempdir().unwrap();
    let spec = sleeper(dir.path(), 30);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let run = std::thread::spawn(move || {
        let mut report = |e: Event| seen.lock().unwrap().push(e);
        let mut session =
            Session::start(Box::new(held), SessionConfig::default(), &mut report).unwrap();
        let result = session.run(spec);
        (result, session.finish())
    });
    let sh = read_pid(&dir.path().join("sh.pid"));
    let sleep = read_pid(&dir.path().join("sleep.pid"));
    // Let it renew a few times, then cut the network.
    nap(TTL);
    assert!(alive(sh) && alive(sleep));
    proxy.cut();
    let cut_at = now();
    let mut busy_while_running = 0;
    let mut taken_at = None;
    let mut gone_at = None;
    while now() < cut_at + TTL + GRACE + Duration::from_secs(10) {
        let running = alive(sh) || alive(sleep);
        if !running && gone_at.is_none() {
            gone_at = Some(now());
        }
        let other = remote("taker");
        match rt
            .block_on(direct.acquire("cut", &other, TTL, None))
            .unwrap()
        {
            Acquire::Busy { .. } => {
                if running {
                    busy_while_running += 1;
                }
            }
            Acquire::Acquired(l) => {
                assert!(
                    !alive(sh) && !alive(sleep),
                    "the lease was taken while the job ran"
                );
                assert!(l.fence() > fence);
                taken_at = Some(now());
                break;
            }
            other => panic!("{other:?}"),
        }
        nap(Duration::from_millis(50));
    }
    let (taken_at, gone_at) = (taken_at.unwrap(), gone_at.unwrap());
    assert!(busy_while_running > 0);
    assert!(
        gone_at < taken_at,
        "the job stopped {gone_at:?}, the lease was taken {taken_at:?}"
    );
    // Measured from the cut, which is after the last renewal: the server
    // refused every taker for at least TTL + grace minus one renewal period.
    assert!(taken_at >= cut_at + TTL + GRACE - TTL / 3 - Duration::from_millis(100));
    let (result, finish) = run.join().unwrap();
    assert_eq!(result.ending, Ending::LeaseLost);
    assert!(matches!(finish, Finish::Lost(_)), "{finish:?}");
    let events = events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::LeaseLost { why } if why.contains("lock cut in"))),
        "{events:?}"
    );
}

#[test]
fn a_terminated_backend_is_reconnected_and_the_run_goes_on_with_its_fence() {
    let _turn = one_session_at_a_time();
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let me = HolderFacts::here();
    let store = rt.block_on(scene.leases());
    let lease = rt.block_on(acquire(&store, "reconnect", &me));
    let fence = lease.fence();
    let held = PgHeld::start(&store, lease, &me, TTL).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spec = sleeper(dir.path(), 5);
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let run = std::thread::spawn(move || {
        let mut report = |e: Event| seen.lock().unwrap().push(e);
        let mut session =
            Session::start(Box::new(held), SessionConfig::default(), &mut report).unwrap();
        let result = session.run(spec);
        let lost = session.lost().map(str::to_owned);
        (result, lost, session.finish())
    });
    read_pid(&dir.path().join("sleep.pid"));
    let raw = rt.block_on(scene.raw());
    let kill = "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                WHERE application_name = 'baton' AND pid <> pg_backend_pid()";
    for round in 0..2 {
        nap(Duration::from_millis(800));
        let killed: i64 = rt.block_on(raw.query_one(kill, &[])).unwrap().get(0);
        assert!(
            round > 0 || killed >= 1,
            "no holder connection to terminate"
        );
    }
    let (result, lost, finish) = run.join().unwrap();
    assert_eq!(result.ending, Ending::Exited(0), "{:?}", events.lock());
    assert_eq!(lost, None);
    assert_eq!(finish, Finish::Released, "{:?}", events.lock());
    let row = rt
        .block_on(raw.query_one(
            "SELECT state, fence FROM baton.leases WHERE name = 'reconnect'",
            &[],
        ))
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "free");
    assert_eq!(row.get::<_, i64>(1) as u64, fence.get());
}

#[test]
fn a_server_that_never_answers_fails_every_call_within_the_deadline() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let proxy = Proxy::start(([127, 0, 0, 1], scene.server.port()).into());
    let through = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let me = HolderFacts::here();
    let store = rt.block_on(Leases::open(&through, QUICK)).unwrap();
    let lease = rt.block_on(acquire(&store, "mute", &me));
    let mut held = PgHeld::start(&store, lease, &me, TTL).unwrap();
    assert_eq!(held.renew().unwrap(), Renewal::Renewed);
    proxy.cut();
    let bound = QUICK.deadline + Duration::from_millis(250);
    let timed = |f: &mut dyn FnMut() -> bool| {
        let t0 = now();
        let failed = f();
        let took = now() - t0;
        assert!(failed, "a call through a cut network succeeded");
        assert!(took <= bound, "a call took {took:?}");
        took
    };
    // Called from inside another runtime, too: the call only blocks.
    let first = rt.block_on(async { timed(&mut || held.renew().is_err()) });
    assert!(first >= QUICK.deadline - Duration::from_millis(50));
    timed(&mut || held.set_job_group(std::process::id()).is_err());
    let once = Once {
        key: "j".into(),
        at: 1,
    };
    timed(&mut || held.restate(None, None, Some(&once)).is_err());
    for _ in 0..3 {
        nap(QUICK.deadline);
        timed(&mut || held.renew().is_err());
    }
    let t0 = now();
    let released = Box::new(held).release().unwrap();
    assert!(now() - t0 <= bound);
    assert!(
        matches!(&released, baton_runner::Release::Unconfirmed(why) if why.contains("failed to")),
        "{released:?}"
    );
}

#[test]
fn a_failure_backs_off_and_a_call_meanwhile_fails_at_once() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let proxy = Proxy::start(([127, 0, 0, 1], scene.server.port()).into());
    let through = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let me = HolderFacts::here();
    let store = rt.block_on(Leases::open(&through, QUICK)).unwrap();
    let lease = rt.block_on(acquire(&store, "backoff", &me));
    let mut held = PgHeld::start(&store, lease, &me, TTL).unwrap();
    assert_eq!(held.renew().unwrap(), Renewal::Renewed);
    proxy.cut();
    let e = held.renew().unwrap_err();
    assert!(!e.to_string().contains("next attempt"), "{e}");
    proxy.heal();
    let t0 = now();
    let e = held.renew().unwrap_err();
    assert!(e.to_string().contains("the next attempt is in"), "{e}");
    assert!(now() - t0 < Duration::from_millis(50));
    nap(Duration::from_millis(150));
    assert_eq!(held.renew().unwrap(), Renewal::Renewed);
    assert_eq!(
        Box::new(held).release().unwrap(),
        baton_runner::Release::Released
    );
}

#[test]
fn restates_claim_each_occurrence_once_across_locks() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let me = HolderFacts::here();
    let store = rt.block_on(scene.leases());
    let a = rt.block_on(acquire(&store, "a", &me));
    let b = rt.block_on(acquire(&store, "b", &me));
    let a_lease = a.clone();
    let mut a = PgHeld::start(&store, a, &me, TTL).unwrap();
    let mut b = PgHeld::start(&store, b, &me, TTL).unwrap();
    let at = |at| Once {
        key: "nightly".into(),
        at,
    };
    let run = || Some("r1".to_owned());
    assert_eq!(
        a.restate(run(), None, Some(&at(100))).unwrap(),
        Restated::Done
    );
    assert_eq!(
        a.restate(run(), None, Some(&at(100))).unwrap(),
        Restated::Claimed { at: 100 }
    );
    assert_eq!(
        a.restate(run(), None, Some(&at(99))).unwrap(),
        Restated::Claimed { at: 100 }
    );
    assert_eq!(
        b.restate(run(), None, Some(&at(100))).unwrap(),
        Restated::Claimed { at: 100 }
    );
    assert_eq!(
        b.restate(run(), None, Some(&at(101))).unwrap(),
        Restated::Done
    );
    assert_eq!(a.restate(run(), None, None).unwrap(), Restated::Done);
    let raw = rt.block_on(scene.raw());
    let rows = rt
        .block_on(raw.query(
            "SELECT occurrence, lock_name FROM baton.claims WHERE job = 'nightly' \
             ORDER BY occurrence",
            &[],
        ))
        .unwrap();
    let claims: Vec<(i64, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(claims, vec![(100, "a".to_owned()), (101, "b".to_owned())]);
    let row = rt
        .block_on(raw.query_one(
            "SELECT run, claims ->> 'nightly' FROM baton.leases WHERE name = 'a'",
            &[],
        ))
        .unwrap();
    assert_eq!(row.get::<_, Option<String>>(0).as_deref(), Some("r1"));
    assert_eq!(row.get::<_, Option<String>>(1).as_deref(), Some("100"));
    // Once the row is someone else's (here: freed behind its back), a
    // restate changes nothing and says the lease is lost.
    rt.block_on(store.release(&a_lease)).unwrap();
    assert!(matches!(
        a.restate(run(), None, Some(&at(200))).unwrap(),
        Restated::Lost(_)
    ));
    assert!(matches!(a.renew().unwrap(), Renewal::Lost(_)));
    assert!(matches!(a.set_job_group(1).unwrap(), Renewal::Lost(_)));
    let n: i64 = rt
        .block_on(raw.query_one(
            "SELECT count(*) FROM baton.claims WHERE occurrence = 200",
            &[],
        ))
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

/// Set by [`a_killed_runner_whose_job_lives_is_orphaned_not_taken`] for the
/// child it starts: the store's URL, and the directory for the pid files.
const RUNNER_URL: &str = "BATON_PG_HELD_RUNNER_URL";
const RUNNER_DIR: &str = "BATON_PG_HELD_RUNNER_DIR";

/// Not a scenario of its own: the runner process of
/// [`a_killed_runner_whose_job_lives_is_orphaned_not_taken`], which starts
/// this test binary again with only this test and its variables set.
#[test]
fn runner_process() {
    let (Ok(url), Ok(dir)) = (std::env::var(RUNNER_URL), std::env::var(RUNNER_DIR)) else {
        return;
    };
    let rt = runtime();
    let me = HolderFacts::here();
    let store = rt.block_on(Leases::open(&url, Options::default())).unwrap();
    let lease = rt.block_on(acquire(&store, "orphan", &me));
    let held = PgHeld::start(&store, lease, &me, TTL).unwrap();
    let mut report = |_: Event| {};
    let mut session =
        Session::start(Box::new(held), SessionConfig::default(), &mut report).unwrap();
    let _ = session.run(sleeper(Path::new(&dir), 60));
    panic!("the runner was to be killed before its step ended");
}

#[test]
fn a_killed_runner_whose_job_lives_is_orphaned_not_taken() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let dir = tempfile::tempdir().unwrap();
    let mut runner = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "held::runner_process", "--nocapture"])
        .env(RUNNER_URL, scene.server.url())
        .env(RUNNER_DIR, dir.path())
        .spawn()
        .unwrap();
    let sh = read_pid(&dir.path().join("sh.pid"));
    let raw = rt.block_on(scene.raw());
    let pgid: Option<i32> = rt
        .block_on(raw.query_one("SELECT pgid FROM baton.leases WHERE name = 'orphan'", &[]))
        .unwrap()
        .get(0);
    // The gate: the command ran only once its group was on the row.
    assert_eq!(pgid, Some(sh as i32));
    let sleep = read_pid(&dir.path().join("sleep.pid"));
    runner.kill().unwrap();
    runner.wait().unwrap();
    let store = rt.block_on(scene.leases());
    let verdict = match rt
        .block_on(store.acquire("orphan", &HolderFacts::here(), TTL, None))
        .unwrap()
    {
        Acquire::Busy { verdict, .. } => verdict,
        other => panic!("an orphaned job's lease was granted: {other:?}"),
    };
    assert!(
        matches!(verdict, Verdict::Orphaned { pgid, .. } if pgid == sh),
        "{verdict:?}"
    );
    // Once the job's group is gone, the dead holder's lease is taken.
    let _ = rustix::process::kill_process_group(
        rustix::process::Pid::from_raw(sh as i32).unwrap(),
        rustix::process::Signal::KILL,
    );
    // This process may be their subreaper (an earlier session here made it
    // one): reap them, or their zombies would keep the group.
    for pid in [sh, sleep] {
        let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    }
    let mut taken = false;
    for _ in 0..100 {
        for pid in [sh, sleep] {
            let pid = rustix::process::Pid::from_raw(pid as i32);
            let _ = rustix::process::waitpid(pid, rustix::process::WaitOptions::NOHANG);
        }
        if let Acquire::Acquired(_) = rt
            .block_on(store.acquire("orphan", &HolderFacts::here(), TTL, None))
            .unwrap()
        {
            taken = true;
            break;
        }
        nap(Duration::from_millis(50));
    }
    assert!(taken, "the dead holder's lease was never taken");
}
