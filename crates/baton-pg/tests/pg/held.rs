//! A run supervised by `baton_runner::Session` under a lease held in the
//! store (`PgHeld`): a partition stops the job before anyone may take the
//! lease, a killed connection is reconnected without stopping the run, no
//! call outlives its deadline, restates claim occurrences once, and the job's
//! group on the row keeps an orphaned job's lease from being taken.
//!
//! The sessions run real `sh` and `sleep` processes, each in a runner process
//! of its own (this test binary again, running only [`runner_process`]): a
//! session catches signals and makes its process the subreaper of whatever
//! is orphaned below it, which in this process would take other scenarios'
//! servers for its steps' leftovers.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use baton_lease::{Clock, Once, Policy, SystemClock, Verdict};
use baton_pg::{Acquire, HolderFacts, Leases, Options, PgHeld};
use baton_runner::{Event, Session, SessionConfig, StepSpec};
use baton_store::{Held, Renewal, Restated};
use baton_testkit::proxy::Proxy;

use crate::support::{Scene, granted, remote};

const TTL: Duration = Duration::from_secs(2);
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// Short deadlines, so that a partition shows within a TTL.
const QUICK: Options = Options {
    statement_timeout: Duration::from_millis(400),
    deadline: Duration::from_millis(500),
    connect_timeout: Duration::from_millis(500),
    pool_size: 1,
};

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

pub(crate) fn now() -> Duration {
    SystemClock.boot()
}

pub(crate) fn nap(d: Duration) {
    SystemClock.sleep(d);
}

/// Whether `pid` runs (a zombie does not).
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits up to 10 s for `path` to hold a pid.
pub(crate) fn read_pid(path: &Path) -> u32 {
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
/// one's pid, and waits for it; in a PID namespace of its own when
/// `contain` (the pids written are the host's: `/proc` is the host's).
fn sleeper(dir: &Path, secs: u32, contain: bool) -> StepSpec {
    let script = format!(
        "read -r p _ < /proc/self/stat; echo $p > {d}/sh.pid.tmp && mv {d}/sh.pid.tmp {d}/sh.pid; \
         sh -c 'read -r q _ < /proc/self/stat; echo $q > {d}/sleep.pid.tmp && \
         mv {d}/sleep.pid.tmp {d}/sleep.pid; exec sleep {secs}' & wait",
        d = dir.display()
    );
    let mut spec = StepSpec::new("sh", vec!["-c".into(), script.into()]);
    spec.kill_grace = Duration::from_millis(200);
    spec.contain = contain;
    spec
}

/// What [`runner_process`] is asked to do, in its environment: the store's
/// URL, the directory for its pid and result files, the lock, how long its
/// step sleeps, and whether it states a remote holder's facts and uses the
/// quick deadlines.
const RUNNER: &str = "BATON_PG_HELD_RUNNER";

/// A runner process, killed with its step's group if a scenario fails while
/// it runs.
pub(crate) struct Runner {
    child: Option<Child>,
    dir: std::path::PathBuf,
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            if let Some(pgid) = std::fs::read_to_string(self.dir.join("sh.pid"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .and_then(rustix::process::Pid::from_raw)
            {
                let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            }
        }
    }
}

/// Starts a runner process holding lock `name` through `url`; it writes
/// `fence`, `sh.pid`, `sleep.pid` and, at its end, `result` into `dir`.
/// Its step runs in a PID namespace of its own unless `plain`.
fn start_runner(url: &str, dir: &Path, name: &str, secs: u32, remote: bool, plain: bool) -> Runner {
    start_runner_with(url, dir, name, secs, remote, plain, None)
}

/// As [`start_runner`], with a TTL of `ttl` (and a deadline of a quarter
/// of it, as the scheduler gives a lease) instead of [`TTL`].
pub(crate) fn start_runner_with(
    url: &str,
    dir: &Path,
    name: &str,
    secs: u32,
    remote: bool,
    plain: bool,
    ttl: Option<Duration>,
) -> Runner {
    let job = format!(
        "{url}\n{}\n{name}\n{secs}\n{}\n{}\n{}",
        dir.display(),
        if remote { "remote" } else { "here" },
        if plain { "plain" } else { "contained" },
        ttl.map_or(0, |t| t.as_millis())
    );
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "held::runner_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(RUNNER, job)
        .spawn()
        .unwrap();
    Runner {
        child: Some(child),
        dir: dir.to_owned(),
    }
}

/// The runner's result file, once it has ended successfully.
pub(crate) fn result_of(mut runner: Runner, dir: &Path) -> String {
    let mut child = runner.child.take().unwrap();
    assert!(child.wait().unwrap().success(), "the runner failed");
    std::fs::read_to_string(dir.join("result")).unwrap()
}

/// Not a scenario of its own: the runner process the scenarios start
/// ([`start_runner`]); without its variable it does nothing.
#[test]
fn runner_process() {
    let Ok(job) = std::env::var(RUNNER) else {
        return;
    };
    let job: Vec<&str> = job.split('\n').collect();
    let (url, dir, name, secs) = (job[0], Path::new(job[1]), job[2], job[3].parse().unwrap());
    let (me, mut options) = if job[4] == "remote" {
        let mut me = remote("holder");
        me.grace = Some(GRACE);
        (me, QUICK)
    } else {
        (HolderFacts::here(), Options::default())
    };
    let ttl = match job[6].parse::<u64>().unwrap() {
        0 => TTL,
        ms => {
            let ttl = Duration::from_millis(ms);
            options = Options {
                statement_timeout: ttl / 5,
                deadline: ttl / 4,
                connect_timeout: ttl / 4,
                pool_size: 1,
            };
            ttl
        }
    };
    let rt = runtime();
    let store = rt.block_on(Leases::open(url, options)).unwrap();
    let lease = rt.block_on(granted(&store, name, &me, ttl));
    std::fs::write(dir.join("fence"), lease.fence().to_string()).unwrap();
    let held = PgHeld::start(&store, lease, &me, ttl).unwrap();
    assert_eq!(held.renew_wait(), options.deadline);
    let mut events = Vec::new();
    let mut report = |e: Event| events.push(e);
    let mut session =
        Session::start(Box::new(held), SessionConfig::default(), &mut report).unwrap();
    let result = session.run(sleeper(dir, secs, job[5] != "plain"));
    let lost = session.lost().map(str::to_owned);
    let finish = session.finish();
    let text = format!(
        "ending={:?}\nlost={lost:?}\nfinish={finish:?}\nevents={events:?}\n",
        result.ending
    );
    std::fs::write(dir.join("result"), text).unwrap();
}

#[test]
fn a_cut_network_stops_the_whole_tree_before_anyone_may_take_the_lease() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let (proxy, through) = scene.proxied();
    let direct = rt.block_on(scene.leases()).with_policy(Policy {
        takeover_grace: GRACE,
        ..Policy::default()
    });
    let dir = tempfile::tempdir().unwrap();
    // The holder states another machine's facts: a judge here can only go
    // by its renewal's age on the server's clock.
    let runner = start_runner(&through, dir.path(), "cut", 30, true, false);
    let sh = read_pid(&dir.path().join("sh.pid"));
    let sleep = read_pid(&dir.path().join("sleep.pid"));
    let fence: u64 = std::fs::read_to_string(dir.path().join("fence"))
        .unwrap()
        .parse()
        .unwrap();
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
        match rt
            .block_on(direct.acquire("cut", &remote("taker"), TTL, None))
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
                assert!(l.fence().get() > fence);
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
        "the job stopped at {gone_at:?}, the lease was taken at {taken_at:?}"
    );
    // The last renewal was sent at most a renewal period before the cut:
    // every taker was refused for TTL + grace from then.
    assert!(taken_at + TTL / 3 + Duration::from_millis(100) >= cut_at + TTL + GRACE);
    let result = result_of(runner, dir.path());
    assert!(result.contains("ending=LeaseLost\n"), "{result}");
    assert!(result.contains("finish=Lost("), "{result}");
    assert!(
        result.contains("LeaseLost { why: \"could not renew the lease on lock cut in"),
        "{result}"
    );
}

/// The server's stamp of lock `name`'s last renewal, in microseconds.
fn renewed(rt: &tokio::runtime::Runtime, raw: &tokio_postgres::Client, name: &str) -> i64 {
    rt.block_on(raw.query_one(
        "SELECT baton.micros(renewed) FROM baton.leases WHERE name = $1",
        &[&name],
    ))
    .unwrap()
    .get(0)
}

#[test]
fn an_outage_shorter_than_the_ttl_keeps_the_run() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let (proxy, through) = scene.proxied();
    let raw = rt.block_on(scene.raw());
    let dir = tempfile::tempdir().unwrap();
    let ttl = Duration::from_secs(4);
    let runner = start_runner_with(&through, dir.path(), "blip", 10, true, false, Some(ttl));
    read_pid(&dir.path().join("sleep.pid"));
    // Renewals go every 1.33 s, each trying for at most 1 s. Just before
    // the next one (1.15 s after a renewal), the network drops every byte
    // for 2.75 s, less than the TTL: that renewal fails, and the network
    // heals while the one after it (from 3.67 s) is under way, 3.9 s after
    // the last success.
    let before = renewed(&rt, &raw, "blip");
    let mut tries = 0;
    while renewed(&rt, &raw, "blip") == before {
        tries += 1;
        assert!(tries < 500, "no renewal");
        nap(Duration::from_millis(10));
    }
    nap(Duration::from_millis(1150));
    proxy.cut();
    nap(Duration::from_millis(2750));
    proxy.heal();
    let result = result_of(runner, dir.path());
    assert!(result.contains("ending=Exited(0)\n"), "{result}");
    assert!(result.contains("lost=None\n"), "{result}");
    assert!(result.contains("finish=Released\n"), "{result}");
}

#[test]
fn a_terminated_backend_is_reconnected_and_the_run_goes_on_with_its_fence() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let dir = tempfile::tempdir().unwrap();
    let runner = start_runner(
        &scene.server.url(),
        dir.path(),
        "reconnect",
        4,
        false,
        false,
    );
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
    let result = result_of(runner, dir.path());
    assert!(result.contains("ending=Exited(0)\n"), "{result}");
    assert!(result.contains("lost=None\n"), "{result}");
    assert!(result.contains("finish=Released\n"), "{result}");
    let fence: i64 = std::fs::read_to_string(dir.path().join("fence"))
        .unwrap()
        .parse()
        .unwrap();
    let row = rt
        .block_on(raw.query_one(
            "SELECT state, fence FROM baton.leases WHERE name = 'reconnect'",
            &[],
        ))
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "free");
    assert_eq!(row.get::<_, i64>(1), fence);
}

/// Lock `name` held by this process through a proxy, on a store with
/// `options`, renewed once; the store is returned to be kept open.
fn held_through_a_proxy(
    rt: &tokio::runtime::Runtime,
    scene: &Scene,
    options: Options,
    name: &str,
) -> (Proxy, Leases, PgHeld) {
    let (proxy, through) = scene.proxied();
    let me = HolderFacts::here();
    let store = rt.block_on(Leases::open(&through, options)).unwrap();
    let lease = rt.block_on(granted(&store, name, &me, TTL));
    let mut held = PgHeld::start(&store, lease, &me, TTL).unwrap();
    assert_eq!(held.renew().unwrap(), Renewal::Renewed);
    (proxy, store, held)
}

#[test]
fn a_server_that_never_answers_fails_every_call_within_the_deadline() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let (proxy, _store, mut held) = held_through_a_proxy(&rt, &scene, QUICK, "mute");
    proxy.cut();
    // A call that waits for ever (or for the kernel's own timeouts, minutes)
    // fails this bound; a few seconds over the deadline leave room for a
    // busy machine to schedule the caller.
    let bound = QUICK.deadline + Duration::from_secs(3);
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
    timed(&mut || {
        held.set_job_group(std::process::id(), baton_lease::Leader::Command)
            .is_err()
    });
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
        matches!(&released, baton_store::Release::Unconfirmed(why) if why.contains("failed to")),
        "{released:?}"
    );
}

/// Longer deadlines than [`QUICK`], for scenarios that heal the network
/// while a call is under way.
const PATIENT: Options = Options {
    statement_timeout: Duration::from_millis(1200),
    deadline: Duration::from_millis(1500),
    connect_timeout: Duration::from_millis(1500),
    pool_size: 1,
};

#[test]
fn a_renewal_made_while_the_network_heals_keeps_trying_and_succeeds() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let (proxy, _store, mut held) = held_through_a_proxy(&rt, &scene, PATIENT, "heals");
    // The bytes of the connection in use are dropped from now on; the
    // network heals while the renewal is under way.
    proxy.cut();
    let healer = std::thread::spawn(move || {
        nap(PATIENT.deadline / 5);
        proxy.heal();
        proxy
    });
    assert_eq!(held.renew().unwrap(), Renewal::Renewed);
    let _proxy = healer.join().unwrap();
    // Right after a failure, too: a call is never refused without trying.
    assert_eq!(held.renew().unwrap(), Renewal::Renewed);
    assert_eq!(
        Box::new(held).release().unwrap(),
        baton_store::Release::Released
    );
}

#[test]
fn restates_claim_each_occurrence_once_across_locks() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let me = HolderFacts::here();
    let store = rt.block_on(scene.leases());
    let a = rt.block_on(granted(&store, "a", &me, TTL));
    let b = rt.block_on(granted(&store, "b", &me, TTL));
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
    assert!(matches!(
        a.set_job_group(1, baton_lease::Leader::Command).unwrap(),
        Renewal::Lost(_)
    ));
    let n: i64 = rt
        .block_on(raw.query_one(
            "SELECT count(*) FROM baton.claims WHERE occurrence = 200",
            &[],
        ))
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

#[test]
fn a_killed_runner_whose_job_lives_is_orphaned_not_taken() {
    let rt = runtime();
    let scene = rt.block_on(Scene::new());
    let dir = tempfile::tempdir().unwrap();
    // Without a namespace: with one, the job dies with its runner.
    let mut runner = start_runner(&scene.server.url(), dir.path(), "orphan", 60, false, true);
    let sh = read_pid(&dir.path().join("sh.pid"));
    let raw = rt.block_on(scene.raw());
    let pgid: Option<i32> = rt
        .block_on(raw.query_one("SELECT pgid FROM baton.leases WHERE name = 'orphan'", &[]))
        .unwrap()
        .get(0);
    // The gate: the command ran only once its group was on the row.
    assert_eq!(pgid, Some(sh as i32));
    let sleep = read_pid(&dir.path().join("sleep.pid"));
    let mut child = runner.child.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
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
    // Reap them if this process is their subreaper, or their zombies would
    // keep the group.
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
