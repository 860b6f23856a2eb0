//! Several hosts (namespaces: a host name, pid namespace, machine id and
//! boot id of their own, with a pid 1 that stays up while anything of the
//! host runs) sharing one PostgreSQL store: a supervisor signalled to
//! stop, a supervisor killed (of a run, or of one slot of a job with
//! `max_concurrent`), the
//! connection frozen, cut or muted, backends terminated, the server
//! restarted or restored from a backup, a blocked stderr while the store is
//! out of reach, one host's clock off, a cloned machine.
//!
//! Besides the one-host invariants, every claim in `baton.claims` must
//! stand for a run that started, a run recorded, or an occurrence recorded
//! missed: a claim standing for nothing is a lost record.

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use baton_testkit::hosts::Host;
use baton_testkit::pg::PgServer;
use baton_testkit::proxy::Proxy;

use crate::evidence;
use crate::job::JobDef;
use crate::procs;
use crate::scenario::common::faked;
use crate::scenario::slots;
use crate::scenario::{Need, Scenario};
use crate::trial::{PG_POLICY, Trial, pause_ms, secs};

const NEEDS: &[Need] = &[Need::Root, Need::Namespaces, Need::Postgres];
const NEEDS_FP: &[Need] = &[
    Need::Root,
    Need::Namespaces,
    Need::Postgres,
    Need::Failpoints,
];
const NEEDS_CLOCK: &[Need] = &[Need::Root, Need::Namespaces, Need::Postgres, Need::Faketime];

/// The several-hosts scenarios.
pub(crate) fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "killed-supervisor-detached",
            what: "kill -9 of baton run on one host (its pid 1 stays up) whose job detached: the host taking over after TTL + grace never runs beside it",
            needs: NEEDS,
            cost: 3,
            run: killed_detached,
        },
        Scenario {
            name: "pg-killed-supervisor",
            what: "kill -9 of a tick or its worker on one host mid-run while other hosts tick: one run at a time, each occurrence once, the killed run abandoned",
            needs: NEEDS,
            cost: 3,
            run: killed_worker,
        },
        Scenario {
            name: "pg-signalled-supervisor",
            what: "SIGTERM, SIGINT or SIGHUP to a tick or its worker on one host mid-run while other hosts tick: the run is stopped and recorded by its own supervisor (interrupted, never abandoned), one run at a time, each occurrence once",
            needs: NEEDS,
            cost: 3,
            run: signalled_worker,
        },
        Scenario {
            name: "pg-stopped-supervisor",
            what: "SIGSTOP of the process supervising a run on one host (its job running on) past TTL and grace while other hosts tick, then SIGCONT: its job is killed by its init at its deadline, never beside another host's run; each occurrence once",
            needs: NEEDS,
            cost: 3,
            run: stopped_worker,
        },
        Scenario {
            name: "slots-pg-kill9-holder",
            what: "max_concurrent = 2 or 3 on three hosts: kill -9 of one slot's supervisor (its host's pid 1 stays up) while the other slots are held: never N + 1 runs at once, each occurrence once, the dead slot taken again, the killed run abandoned",
            needs: NEEDS,
            cost: 3,
            run: slots_killed,
        },
        Scenario {
            name: "pg-busy-fleet",
            what: "no fault: three hosts tick at once, at random, a per-second job whose runs take about a second: one run at a time, each occurrence once, and no occurrence both recorded missed (the lock found busy) and run",
            needs: NEEDS,
            cost: 3,
            run: busy_fleet,
        },
        Scenario {
            name: "pg-ledger-locked",
            what: "another session holds the ledger's write lock for 1 to 8 s while a run goes on (TTL 2 s) and other hosts tick: no run stopped for a slow ledger, every run recorded with the verdict it earned (never abandoned for a run that ended), one run at a time",
            needs: NEEDS,
            cost: 3,
            run: ledger_locked,
        },
        Scenario {
            name: "blocked-stderr",
            what: "a holder whose stderr is a full pipe nobody reads, cut off from the store: it stops its job before another host takes over",
            needs: NEEDS,
            cost: 3,
            run: blocked_stderr,
        },
        Scenario {
            name: "pg-frozen-connection",
            what: "one host's connection frozen (no bytes either way) for 1 to 6 s mid-run: no overlap, no stale fence, a true record",
            needs: NEEDS,
            cost: 3,
            run: |t| outage(t, Outage::Freeze),
        },
        Scenario {
            name: "pg-cut-connection",
            what: "one host's connections closed mid-run: it reconnects, no overlap, the run recorded with its verdict",
            needs: NEEDS,
            cost: 3,
            run: |t| outage(t, Outage::Reset),
        },
        Scenario {
            name: "pg-terminated-backend",
            what: "every backend of the store terminated mid-run: no overlap, the run recorded with its verdict",
            needs: NEEDS,
            cost: 3,
            run: |t| outage(t, Outage::Terminate),
        },
        Scenario {
            name: "pg-server-restart",
            what: "the server restarted mid-run: no overlap, the run recorded with its verdict, the schedule goes on",
            needs: NEEDS,
            cost: 3,
            run: |t| outage(t, Outage::Restart),
        },
        Scenario {
            name: "start-record-lost",
            what: "the start record delivered and its reply lost: the occurrence runs, or is recorded missed; no claim stands for nothing",
            needs: NEEDS_FP,
            cost: 3,
            run: |t| record_lost(t, "start-record"),
        },
        Scenario {
            name: "end-record-lost",
            what: "the end record's connection dies (backend terminated, server restarted, connection closed) as the job ends: the run is recorded with the verdict it earned",
            needs: NEEDS_FP,
            cost: 3,
            run: |t| record_lost(t, "end-record"),
        },
        Scenario {
            name: "failpoint-renewal-stall-pg",
            what: "a holder's renewal stalls past TTL + grace while other hosts tick: its job is stopped before another host's run starts",
            needs: NEEDS_FP,
            cost: 3,
            run: renewal_stall,
        },
        Scenario {
            name: "fence-after-restore",
            what: "the store restored from an earlier backup between runs: every later fence is still higher than every earlier one",
            needs: NEEDS,
            cost: 3,
            run: restore,
        },
        Scenario {
            name: "clock-ahead-one-host",
            what: "one host's tick an hour ahead (faketime): no occurrence of the future runs, the honest hosts keep the schedule",
            needs: NEEDS_CLOCK,
            cost: 3,
            run: |t| skewed(t, &["+1h", "+1d", "+10m"]),
        },
        Scenario {
            name: "clock-behind-one-host",
            what: "one host's tick an hour behind: nothing that ran is counted missed, the schedule goes on",
            needs: NEEDS_CLOCK,
            cost: 3,
            run: |t| skewed(t, &["-1h", "-10m"]),
        },
        Scenario {
            name: "cloned-machine",
            what: "two hosts with one machine id and two boot ids: the clone never breaks the other's live lease",
            needs: NEEDS,
            cost: 3,
            run: cloned,
        },
    ]
}

/// Hosts on one store.
struct Fleet {
    pg: Arc<PgServer>,
    db: String,
    /// The configuration (direct URL) used outside the hosts: migrate,
    /// history.
    outside: PathBuf,
    hosts: Vec<Host>,
    configs: Vec<PathBuf>,
    states: Vec<PathBuf>,
    jobs: Vec<JobDef>,
    proxy: Option<Proxy>,
}

impl Fleet {
    /// `names` as hosts on a fresh database (of the shared server, or of a
    /// server of the trial's own), the first through a proxy when `proxied`.
    fn new(
        t: &mut Trial<'_>,
        names: &[&str],
        jobs: Vec<JobDef>,
        own: bool,
        proxied: bool,
    ) -> Result<Self, String> {
        let (pg, url) = if own {
            let pg = Arc::new(PgServer::start());
            let url = pg.url();
            (pg, url)
        } else {
            t.shared.database()
        };
        let db = url.rsplit('/').next().unwrap_or("postgres").to_owned();
        let proxy = proxied.then(|| {
            Proxy::start(
                format!("127.0.0.1:{}", pg.port())
                    .parse()
                    .expect("a loopback address"),
            )
        });
        let outside = t.config(
            "outside",
            &t.path("state-outside"),
            Some(&url),
            PG_POLICY,
            &jobs,
            "",
        );
        let m = t.baton(&outside, &["store", "migrate"]);
        let r = t.run(m, secs(60));
        if r.code != Some(0) {
            return Err(format!("store migrate failed: {}", r.said()));
        }
        let mut hosts = Vec::new();
        let (mut configs, mut states) = (Vec::new(), Vec::new());
        for (i, n) in names.iter().enumerate() {
            let host_url = match (&proxy, i) {
                (Some(p), 0) => format!(
                    "postgres://{}@127.0.0.1:{}/{db}",
                    baton_testkit::pg::USER,
                    p.port()
                ),
                _ => url.clone(),
            };
            let state = t.path(&format!("state-{n}"));
            configs.push(t.config(n, &state, Some(&host_url), PG_POLICY, &jobs, ""));
            states.push(state);
            hosts.push(Host::new(&format!("{n}-{}", t.seed % 1000)));
        }
        // The store knows the jobs before the hosts' first tick.
        crate::scenario::common::sighted(t, &outside)?;
        Ok(Self {
            pg,
            db,
            outside,
            hosts,
            configs,
            states,
            jobs,
            proxy,
        })
    }

    fn proxy(&self) -> &Proxy {
        self.proxy.as_ref().expect("a proxied fleet")
    }

    /// The host name baton records for host `i`.
    fn name(&self, i: usize) -> String {
        self.hosts[i].name().to_owned()
    }
}

/// `baton ARGS` on host `i`, in the background; the pid of its `unshare`.
fn spawn_on(t: &mut Trial<'_>, f: &Fleet, i: usize, args: &[&str], name: &str) -> Option<u32> {
    let c = t.on(&f.hosts[i], &f.configs[i], args);
    t.spawn(c, name)
}

/// The baton process a host's `unshare` (pid `outer`) runs, once it runs.
fn command_of(t: &Trial<'_>, outer: u32) -> Option<u32> {
    let mut found = None;
    t.until(secs(10), |_| {
        found = procs::child_of(outer).and_then(procs::child_of);
        found.is_some()
    });
    found
}

/// An honest tick on host `i`.
fn tick_on(t: &mut Trial<'_>, f: &Fleet, i: usize) {
    let c = t.on(&f.hosts[i], &f.configs[i], &["tick"]);
    let _ = t.run(c, secs(40));
}

/// Honest ticks on the hosts `from..` for `span`.
fn race(t: &mut Trial<'_>, f: &Fleet, from: usize, span: Duration) {
    let until = std::time::Instant::now() + span;
    while std::time::Instant::now() < until {
        let i = from + (t.rng.range(0, (f.hosts.len() - from - 1) as u64) as usize);
        tick_on(t, f, i);
        pause_ms(t.rng.range(150, 400));
    }
}

/// Waits for the first run of the trial to start.
fn started(t: &Trial<'_>) -> bool {
    let events = t.events();
    t.until(secs(30), |_| evidence::mark(&events) >= 2)
}

/// `baton run JOB` on host `i` until it starts the job; whether it did.
fn run_until_started(t: &mut Trial<'_>, f: &Fleet, i: usize, job: &str) -> bool {
    for _ in 0..120 {
        let mark = evidence::mark(&t.events());
        let c = t.on(&f.hosts[i], &f.configs[i], &["run", job]);
        let _ = t.run(c, secs(60));
        if evidence::runs(&t.events())
            .iter()
            .any(|s| s.first >= mark && s.host.starts_with(f.hosts[i].name()))
        {
            return true;
        }
        pause_ms(200);
    }
    false
}

/// The end of a fleet trial: processes gone, the probe on the last host,
/// every job's history and every host's missed alerts judged, and every
/// claim accounted for.
fn finish(t: &mut Trial<'_>, f: &Fleet, probe: bool) {
    t.quiesce(secs(30), &[]);
    if probe {
        let last = f.hosts.len() - 1;
        let job = f.jobs[0].name.clone();
        t.probe(&job, secs(25), |t| tick_on(t, f, last));
        t.quiesce(secs(30), &[]);
    }
    let mut recorded = Vec::new();
    for j in &f.jobs {
        t.facts.know(j);
        let c = t.baton(
            &f.outside,
            &["history", &j.name, "--json", "--limit", "10000"],
        );
        recorded.extend(t.history(c));
    }
    let alerts: Vec<PathBuf> = f
        .states
        .iter()
        .map(|s| s.join("logs").join("alerts.log"))
        .collect();
    t.judge(&recorded, &alerts);
    let in_ledger = ledger_missed(f);
    t.judge_missed(&in_ledger);
    claims(t, f, &recorded, &alerts, &in_ledger);
}

/// The ranges the ledger records missed for a refused lock (alerted under
/// kinds of their own, not `missed`), as the alerts' ranges read.
fn ledger_missed(f: &Fleet) -> Vec<evidence::Missed> {
    let at = |c: &str| {
        format!("to_char(to_timestamp({c}) AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')")
    };
    let rows = f.pg.sql_in(
        &f.db,
        &format!(
            "SELECT job, reason, {}, {} FROM baton.missed \
             WHERE reason IN ('busy', 'hung', 'orphaned', 'version-conflict')",
            at("first"),
            at("last")
        ),
    );
    rows.lines()
        .filter_map(|row| {
            let mut cols = row.split('|');
            Some(evidence::Missed {
                job: cols.next()?.to_owned(),
                reason: cols.next()?.to_owned(),
                first: cols.next()?.to_owned(),
                last: cols.next()?.to_owned(),
            })
        })
        .collect()
}

/// The key of the ledger's write lock (`baton_pg`'s `WRITE_LOCK`, `baton-lg`).
const LEDGER_WRITE_LOCK: i64 = 0x6261_746f_6e2d_6c67;

/// Another session (an operator's, a stuck program's) holds the ledger's
/// write lock for a while as a run goes on: the run's records wait, its
/// lease must not, and no other host may record it as anything but what
/// it earned.
fn ledger_locked(t: &mut Trial<'_>) -> Result<(), String> {
    let beats = t.rng.range(8, 25) as u32;
    let f = Fleet::new(
        t,
        &["alpha", "beta", "gamma"],
        vec![JobDef::every_second("j", beats)],
        false,
        false,
    )?;
    let Some(_outer) = spawn_on(t, &f, 0, &["tick"], "alpha-tick") else {
        return Err("alpha's tick did not start".into());
    };
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    pause_ms(t.rng.range(0, u64::from(beats) * 100));
    let ms = t.rng.range(1000, 8000);
    let holder = {
        let (pg, db) = (Arc::clone(&f.pg), f.db.clone());
        std::thread::spawn(move || {
            pg.sql_in(
                &db,
                &format!(
                    "SELECT pg_advisory_xact_lock({LEDGER_WRITE_LOCK}); SELECT pg_sleep({})",
                    ms as f64 / 1000.0
                ),
            )
        })
    };
    t.injected += 1;
    let span = Duration::from_millis(ms + t.rng.range(1000, 3000));
    race(t, &f, 1, span);
    if holder.join().is_err() {
        return Err("the session holding the ledger's write lock failed".into());
    }
    finish(t, &f, true);
    Ok(())
}

/// Three hosts tick at once, at random moments, a per-second job whose runs
/// outlast several of its occurrences: ticks find the lock held by the run
/// before, record the occurrence missed, and another host may take the
/// lock an instant later. No fault is injected.
fn busy_fleet(t: &mut Trial<'_>) -> Result<(), String> {
    let beats = t.rng.range(8, 10) as u32;
    let f = Fleet::new(
        t,
        &["alpha", "beta", "gamma"],
        vec![JobDef::every_second("b", beats)],
        false,
        false,
    )?;
    let until = std::time::Instant::now() + Duration::from_millis(t.rng.range(12_000, 16_000));
    let mut n = 0;
    while std::time::Instant::now() < until {
        let i = t.rng.range(0, 2) as usize;
        let _ = spawn_on(t, &f, i, &["tick"], &format!("tick-{n}"));
        n += 1;
        pause_ms(t.rng.range(10, 60));
    }
    finish(t, &f, false);
    Ok(())
}

fn claims(
    t: &mut Trial<'_>,
    f: &Fleet,
    recorded: &[evidence::Recorded],
    alerts: &[PathBuf],
    in_ledger: &[evidence::Missed],
) {
    let rows = f.pg.sql_in(
        &f.db,
        "SELECT job, to_char(to_timestamp(occurrence) AT TIME ZONE 'UTC', \
         'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') FROM baton.claims",
    );
    let seen = evidence::runs(&t.events());
    let mut missed: Vec<evidence::Missed> =
        alerts.iter().flat_map(|p| evidence::missed(p)).collect();
    missed.extend(in_ledger.iter().cloned());
    for row in rows.lines() {
        let Some((job, occ)) = row.split_once('|') else {
            continue;
        };
        let ran = seen.iter().any(|s| s.job == job && s.occurrence == occ);
        let rec = recorded
            .iter()
            .any(|r| r.job == job && r.occurrence.as_deref() == Some(occ));
        let miss = missed
            .iter()
            .any(|m| m.job == job && m.first.as_str() <= occ && occ <= m.last.as_str());
        if !ran && !rec && !miss {
            t.v.lost_record(format!(
                "{job} occurrence {occ} is claimed, never ran, and is neither recorded nor missed"
            ));
        }
    }
}

fn long_job(beats: u32, detach: bool) -> JobDef {
    let mut j = JobDef::every_second("w", beats);
    j.schedule = "0 0 1 1 *".into();
    j.extra = "catch_up_window = \"400d\"\n".into();
    j.detach = detach;
    j
}

fn killed_detached(t: &mut Trial<'_>) -> Result<(), String> {
    let f = Fleet::new(
        t,
        &["alpha", "beta"],
        vec![long_job(200, true)],
        false,
        false,
    )?;
    let Some(outer) = spawn_on(t, &f, 0, &["run", "w"], "alpha-run") else {
        return Err("alpha's run did not start".into());
    };
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    let Some(sup) = command_of(t, outer) else {
        return Err("alpha's supervisor was not found".into());
    };
    pause_ms(t.rng.range(0, 1500));
    if let Some(inner) = procs::inner_pid(sup as i32) {
        t.facts.killed.insert((f.name(0), inner));
    }
    procs::kill(sup as i32);
    t.injected += 1;
    if !run_until_started(t, &f, 1, "w") {
        t.v.wedge("beta never ran w after alpha's supervisor was killed".into());
    }
    finish(t, &f, false);
    Ok(())
}

/// Three hosts and a job due every second; alpha's tick started, its run
/// under way, and after up to 1.5 s the victim chosen: that tick, or the
/// worker it runs the job in. Returns the fleet, the tick and the victim.
fn alpha_mid_run(t: &mut Trial<'_>) -> Result<(Fleet, u32, u32), String> {
    let f = Fleet::new(
        t,
        &["alpha", "beta", "gamma"],
        vec![JobDef::every_second("j", 40)],
        false,
        false,
    )?;
    let Some(outer) = spawn_on(t, &f, 0, &["tick"], "alpha-tick") else {
        return Err("alpha's tick did not start".into());
    };
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    let Some(tick) = command_of(t, outer) else {
        return Err("alpha's tick was not found".into());
    };
    pause_ms(t.rng.range(0, 1500));
    let victim = if t.rng.range(0, 1) == 0 {
        procs::child_of(tick).unwrap_or(tick)
    } else {
        tick
    };
    Ok((f, tick, victim))
}

fn killed_worker(t: &mut Trial<'_>) -> Result<(), String> {
    let (f, _, victim) = alpha_mid_run(t)?;
    if let Some(inner) = procs::inner_pid(victim as i32) {
        t.facts.killed.insert((f.name(0), inner));
    }
    procs::kill(victim as i32);
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(5000, 8000));
    race(t, &f, 1, span);
    finish(t, &f, true);
    Ok(())
}

/// A stop signal, as people and service managers send it, to a tick or to
/// the worker it runs the job in. The run's supervisor reads it (and
/// SIGCHLD) from a `signalfd`, which every thread of the process must
/// block: a thread of the store's that did not took SIGTERM instead and
/// ended the process by its default action, unrecorded.
fn signalled_worker(t: &mut Trial<'_>) -> Result<(), String> {
    use rustix::process::Signal;
    let (f, tick, victim) = alpha_mid_run(t)?;
    // The tick, or the worker it runs the job in, supervises the run;
    // neither may leave it, whichever of them was signalled.
    for p in [Some(tick), procs::child_of(tick)].into_iter().flatten() {
        if let Some(inner) = procs::inner_pid(p as i32) {
            t.facts.signalled.insert((f.name(0), inner));
        }
    }
    let sig = *t.rng.pick(&[Signal::TERM, Signal::INT, Signal::HUP]);
    procs::signal(victim as i32, sig);
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(5000, 8000));
    race(t, &f, 1, span);
    finish(t, &f, true);
    Ok(())
}

/// SIGSTOP of the process that supervises the run (the tick's worker,
/// else the tick): it renews nothing and stops nothing while its job runs
/// on, and the other hosts take the lease once it has expired and its
/// grace passed. The step's init kills the job at the deadline its runner
/// sent with its last renewal, before that.
fn stopped_worker(t: &mut Trial<'_>) -> Result<(), String> {
    use rustix::process::Signal;
    let (f, tick, _) = alpha_mid_run(t)?;
    let victim = procs::child_of(tick).unwrap_or(tick);
    if let Some(inner) = procs::inner_pid(victim as i32) {
        t.facts.stopped.insert((f.name(0), inner));
        t.facts.stopped_past_grace.insert((f.name(0), inner));
    }
    procs::signal(victim as i32, Signal::STOP);
    t.injected += 1;
    // Past TTL and grace (2 s and 2.5 s): other hosts may take the lease.
    let span = Duration::from_millis(t.rng.range(6000, 9000));
    race(t, &f, 1, span);
    procs::signal(victim as i32, Signal::CONT);
    let span = Duration::from_millis(t.rng.range(2000, 4000));
    race(t, &f, 1, span);
    finish(t, &f, true);
    Ok(())
}

fn slots_killed(t: &mut Trial<'_>) -> Result<(), String> {
    let n = t.rng.range(2, 3) as u32;
    let beats = t.rng.range(25, 40) as u32;
    let f = Fleet::new(
        t,
        &["alpha", "beta", "gamma"],
        vec![slots::slotted(n, beats)],
        false,
        false,
    )?;
    let hosts = f.hosts.len() as u64;
    let mut on_any = |t: &mut Trial<'_>, k: u64| {
        let _ = spawn_on(t, &f, (k % hosts) as usize, &["tick"], &format!("tick-{k}"));
    };
    let held = slots::fill(t, n, &mut on_any)?;
    let (victim, sup) = held[t.rng.range(0, held.len() as u64 - 1) as usize].clone();
    pause_ms(t.rng.range(0, 500));
    let mark = evidence::mark(&t.events());
    if let Some(inner) = procs::inner_pid(sup as i32) {
        t.facts.killed.insert((victim.host.clone(), inner));
    }
    procs::kill(sup as i32);
    t.injected += 1;
    // Its own host takes the dead slot at once, another after TTL + grace.
    let span = Duration::from_millis(t.rng.range(5000, 8000));
    slots::swarm(t, span, &mut on_any, |_| false);
    if !slots::swarm(t, secs(20), &mut on_any, |t| {
        slots::taken_after(t, mark, victim.slot)
    }) {
        t.v.wedge(format!(
            "slot {} of j was never taken again after its holder on {} (run {}) was killed",
            victim.slot, victim.host, victim.run_id
        ));
    }
    finish(t, &f, true);
    Ok(())
}

fn blocked_stderr(t: &mut Trial<'_>) -> Result<(), String> {
    let f = Fleet::new(
        t,
        &["alpha", "beta"],
        vec![long_job(300, false)],
        false,
        true,
    )?;
    let (read, write) = rustix::pipe::pipe().map_err(|e| format!("failed to make a pipe: {e}"))?;
    rustix::fs::fcntl_setfl(&write, rustix::fs::OFlags::NONBLOCK)
        .map_err(|e| format!("failed to fill the pipe: {e}"))?;
    let block = [b'x'; 4096];
    while rustix::io::write(&write, &block).is_ok() {}
    let _ = rustix::io::write(&write, b"x");
    rustix::fs::fcntl_setfl(&write, rustix::fs::OFlags::empty())
        .map_err(|e| format!("failed to make the pipe blocking again: {e}"))?;
    let mut c = t.on(&f.hosts[0], &f.configs[0], &["run", "w"]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::from(
            write
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| format!("{e}"))?,
        ));
    drop(write);
    let child = c
        .spawn()
        .map_err(|e| format!("failed to start alpha's run: {e}"))?;
    t.adopt(child);
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    pause_ms(t.rng.range(0, 1000));
    f.proxy().cut();
    t.injected += 1;
    t.facts.outage_over_ttl = true;
    if !run_until_started(t, &f, 1, "w") {
        t.v.wedge("beta never ran w after alpha was cut off".into());
    }
    pause_ms(1000);
    f.proxy().heal();
    drop(read);
    finish(t, &f, false);
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outage {
    Freeze,
    Reset,
    Terminate,
    Restart,
}

fn terminate(f: &Fleet) {
    f.pg.sql(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '{}' \
         AND pid <> pg_backend_pid()",
        f.db
    ));
}

fn outage(t: &mut Trial<'_>, kind: Outage) -> Result<(), String> {
    let beats = t.rng.range(20, 50) as u32;
    let f = Fleet::new(
        t,
        &["alpha", "beta", "gamma"],
        vec![JobDef::every_second("j", beats)],
        kind == Outage::Restart,
        true,
    )?;
    let Some(_outer) = spawn_on(t, &f, 0, &["tick"], "alpha-tick") else {
        return Err("alpha's tick did not start".into());
    };
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    pause_ms(t.rng.range(0, 1500));
    match kind {
        Outage::Freeze => {
            let ms = t.rng.range(1000, 6000);
            t.facts.outage_over_ttl = ms >= 2000;
            f.proxy().cut();
            race(t, &f, 1, Duration::from_millis(ms));
            f.proxy().heal();
        }
        Outage::Reset => f.proxy().sever(),
        Outage::Terminate => terminate(&f),
        Outage::Restart => {
            t.facts.outage_over_ttl = false;
            f.pg.restart();
        }
    }
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(3000, 6000));
    race(t, &f, 1, span);
    finish(t, &f, true);
    Ok(())
}

fn record_lost(t: &mut Trial<'_>, point: &str) -> Result<(), String> {
    let own = point == "end-record";
    let f = Fleet::new(
        t,
        &["alpha", "beta"],
        vec![JobDef::every_second("j", 5)],
        own,
        true,
    )?;
    let mut hc = f.hosts[0].command(t.shared.failpoints.clone().unwrap_or_default());
    hc.arg("tick");
    let mut c = hc.into_inner();
    t.prepare_pub(&mut c, &f.configs[0]);
    c.env("BATON_FAULT", format!("{point}=stall:1000"));
    let Some(pid) = t.spawn(c, "alpha-faulty") else {
        return Err("alpha's tick did not start".into());
    };
    if t.await_hit(secs(30)).is_none() {
        t.broken
            .push(format!("the {point} failpoint was never reached"));
    } else {
        match (point, t.rng.range(0, 2)) {
            ("start-record", _) => f.proxy().mute(),
            (_, 0) => terminate(&f),
            (_, 1) => f.pg.restart(),
            _ => f.proxy().sever(),
        }
    }
    t.count_hits();
    let _ = t.wait_for(pid, secs(60));
    f.proxy().heal();
    race(t, &f, 1, Duration::from_millis(2000));
    finish(t, &f, true);
    Ok(())
}

fn renewal_stall(t: &mut Trial<'_>) -> Result<(), String> {
    let f = Fleet::new(
        t,
        &["alpha", "beta"],
        vec![JobDef::every_second("j", 80)],
        false,
        false,
    )?;
    let mut hc = f.hosts[0].command(t.shared.failpoints.clone().unwrap_or_default());
    hc.arg("tick");
    let mut c = hc.into_inner();
    t.prepare_pub(&mut c, &f.configs[0]);
    c.env("BATON_FAULT", "renewal=stall:6000@2");
    let Some(pid) = t.spawn(c, "alpha-faulty") else {
        return Err("alpha's tick did not start".into());
    };
    // Beta races once alpha holds the run, so that alpha's renewal stalls.
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    race(t, &f, 1, Duration::from_millis(9000));
    t.count_hits();
    let _ = t.wait_for(pid, secs(30));
    finish(t, &f, true);
    Ok(())
}

fn restore(t: &mut Trial<'_>) -> Result<(), String> {
    let f = Fleet::new(
        t,
        &["alpha", "beta"],
        vec![JobDef::every_second("j", 2)],
        true,
        false,
    )?;
    tick_on(t, &f, 0);
    let backup = f.pg.dump(&f.db, "baton");
    let from = rfc3339(now_secs());
    let span = Duration::from_millis(t.rng.range(2000, 3500));
    race(t, &f, 0, span);
    t.quiesce(secs(20), &[]);
    f.pg.restore(&f.db, &backup);
    t.injected += 1;
    // What ran between the backup and the restore left no record: the
    // next tick may count it in the outage's missed range.
    t.facts.erased = Some((from, rfc3339(now_secs())));
    let span = Duration::from_millis(t.rng.range(2000, 3500));
    race(t, &f, 0, span);
    // The runs between the backup and the restore are gone from the store
    // by construction; the fences and the jobs' own logs are the evidence.
    t.facts.unrecordable = true;
    finish(t, &f, true);
    Ok(())
}

/// `secs` since the epoch, as RFC 3339 in UTC to the second (the form
/// history and the job's `BATON_OCCURRENCE` use).
fn rfc3339(secs: i64) -> String {
    jiff::Timestamp::from_second(secs).map_or_else(|_| String::new(), |t| t.to_string())
}

/// Seconds since the epoch, now.
fn now_secs() -> i64 {
    jiff::Timestamp::now().as_second()
}

fn skewed(t: &mut Trial<'_>, offsets: &[&str]) -> Result<(), String> {
    let f = Fleet::new(
        t,
        &["alpha", "beta", "gamma"],
        vec![JobDef::every_second("j", 2)],
        false,
        false,
    )?;
    tick_on(t, &f, 1);
    let offset = *t.rng.pick(offsets);
    let c = faked(t.on(&f.hosts[0], &f.configs[0], &["tick"]), offset);
    let r = t.run(c, secs(40));
    if r.timed_out {
        t.v.wedge(format!("alpha's tick at {offset} did not end"));
    }
    t.injected += 1;
    let span = Duration::from_millis(t.rng.range(2000, 3500));
    race(t, &f, 1, span);
    let horizon = rfc3339(now_secs() + 120);
    for s in evidence::runs(&t.events()) {
        if s.occurrence != "manual" && s.occurrence > horizon {
            t.v.wrong_record(format!(
                "{} ran the occurrence {} on {} before its time (now {})",
                s.job,
                s.occurrence,
                s.host,
                rfc3339(now_secs())
            ));
        }
    }
    finish(t, &f, true);
    Ok(())
}

fn cloned(t: &mut Trial<'_>) -> Result<(), String> {
    let mut f = Fleet::new(
        t,
        &["alpha", "beta"],
        vec![long_job(40, false)],
        false,
        false,
    )?;
    let clone = Host::clone_of(&f.hosts[0], "clone");
    f.hosts[1] = clone;
    let Some(_outer) = spawn_on(t, &f, 0, &["run", "w"], "alpha-run") else {
        return Err("alpha's run did not start".into());
    };
    if !started(t) {
        return Err("alpha's job never started".into());
    }
    t.injected += 1;
    for _ in 0..t.rng.range(5, 12) {
        let c = t.on(&f.hosts[1], &f.configs[1], &["run", "w"]);
        let _ = t.run(c, secs(30));
        pause_ms(250);
    }
    finish(t, &f, false);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_is_civil_time() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_139_790), "2026-12-01T15:43:10Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
