//! Several hosts sharing one PostgreSQL store, each "host" a set of real
//! Linux namespaces (its own host name, pid namespace, machine id and boot
//! id: `baton_testkit::hosts`), each with a state directory of its own and
//! the same jobs. The real binary, real processes, a real server, real
//! `kill -9` and a real cut connection.
//!
//! What must hold: one occurrence runs once however many hosts tick it; a
//! live run on one host is never taken by another, however long it runs; a
//! host that dies leaves its lease to the others after TTL plus grace on the
//! server's clock, and not before; a host cut off from the store stops its
//! job before another host can take the lease, so a resource that rejects
//! stale fences never sees one.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use baton_testkit::hosts::{self, Host, HostCommand};
use baton_testkit::pg::PgServer;
use baton_testkit::proxy::Proxy;

use crate::support::{BATON, code, eventually, pause, stderr, stdout};

/// A shared directory (the test's) with one configuration per host.
struct Cluster {
    tmp: tempfile::TempDir,
}

/// The self-fencing settings of every job here: a renewal every third of a
/// 4 s TTL, each waiting at most 1 s for the store; a holder that cannot
/// renew kills its job within TTL + renewal wait + kill grace; another host
/// takes the lease no earlier than TTL + takeover grace (8 s).
const POLICY: &str = "ttl = \"4s\"\nkill_grace = \"1s\"\ntakeover_grace = \"4s\"\n";

impl Cluster {
    fn new() -> Cluster {
        assert!(
            hosts::available(),
            "these tests need Linux namespaces (run them as root): unshare --uts --pid --fork \
             --mount-proc failed"
        );
        Cluster {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Writes host `host`'s `baton.toml`: its own state directory, the store
    /// at `url`, and `jobs`.
    fn config(&self, host: &str, url: &str, jobs: &str) -> PathBuf {
        let state = self.path(&format!("state-{host}"));
        let file = self.path(&format!("{host}.toml"));
        let text = format!(
            "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{POLICY}\n[store]\nurl = {url:?}\n\n{jobs}",
            state.display()
        );
        std::fs::write(&file, text).unwrap();
        file
    }
}

/// Starts a server and migrates baton's schema into it (what an operator
/// does once with `baton store migrate`).
fn store(c: &Cluster) -> PgServer {
    let pg = PgServer::start();
    let config = c.config("migrator", &pg.url(), "");
    let o = std::process::Command::new(BATON)
        .args(["store", "migrate"])
        .env("BATON_CONFIG", &config)
        .env_remove("BATON_STORE_URL")
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    pg
}

/// `baton ARGS` on `host` with `config`, none of this process's store
/// variables.
fn on(host: &Host, config: &Path, args: &[&str]) -> HostCommand {
    let mut c = host.command(BATON);
    c.args(args);
    crate::support::only_config(c.inner(), config);
    c
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A job due now whatever the minute (one occurrence a year, caught up for
/// 400 days, to a store that knows it since before that occurrence:
/// [`crate::sched::pg_known_since`]), that appends its host's name to
/// `counter`.
fn counting_job(name: &str, counter: &Path, extra: &str) -> String {
    format!(
        "[jobs.{name}]\nschedule = \"0 0 1 1 *\"\ncatch_up_window = \"400d\"\n\
         run = \"echo $(hostname) >> {}{extra}\"\n",
        counter.display()
    )
}

#[test]
fn hosts_differ_in_name_pid_namespace_machine_and_boot() {
    let _ = Cluster::new();
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let probe = "hostname; cat /etc/machine-id; cat /proc/sys/kernel/random/boot_id; \
                 readlink /proc/self/ns/pid; echo $$";
    let read = |h: &Host| {
        let o = h.command("sh").args(["-c", probe]).output();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(str::to_owned)
            .collect::<Vec<_>>()
    };
    let (ra, rb) = (read(&a), read(&b));
    let here = |p: &str| std::fs::read_to_string(p).unwrap().trim().to_owned();
    assert_eq!(ra[0], "alpha");
    assert_eq!(rb[0], "beta");
    assert_eq!(ra[1], a.machine_id());
    assert_ne!(ra[1], rb[1], "machine ids");
    assert_ne!(ra[1], here("/etc/machine-id"));
    assert_ne!(ra[2], rb[2], "boot ids");
    assert_ne!(ra[2], here("/proc/sys/kernel/random/boot_id"));
    assert_ne!(ra[3], rb[3], "pid namespaces");
    // The probe's shell is a child of the host's pid 1.
    assert!(
        ra[4].parse::<u32>().unwrap() < 10,
        "pid {} in a fresh namespace",
        ra[4]
    );
}

/// Two machines made from one image (the same host name and machine id,
/// other boot ids) share a lock directory: each takes the other's lease,
/// renewed since it booted, for another host's, never for one of its own
/// earlier boot, so a live run is never broken beside itself.
#[test]
fn a_cloned_machines_live_lease_is_not_taken_for_an_earlier_boot() {
    let c = Cluster::new();
    let a = Host::new("twin");
    let b = Host::clone_of(&a, "second-boot");
    assert_eq!(a.machine_id(), b.machine_id());
    assert_ne!(a.boot_id(), b.boot_id());
    let lock = c.path("shared.lock");
    let (started, go, done, beside) = (
        c.path("started"),
        c.path("go"),
        c.path("done"),
        c.path("beside"),
    );
    let exec = |h: &Host, script: String| {
        let mut cmd = h.command(BATON);
        cmd.args(["exec", "--lock", lock.to_str().unwrap(), "--ttl", "3s"])
            .args(["--kill-grace", "1s", "--takeover-grace", "30s", "-c"])
            .arg(script);
        cmd.inner()
            .env_remove("BATON_STATE_DIR")
            .stdin(Stdio::null());
        cmd
    };
    // The run goes on until the checks below are done.
    let mut holder = exec(
        &a,
        format!(
            "touch {}; while [ ! -e {} ]; do sleep 0.05; done; touch {}",
            started.display(),
            go.display(),
            done.display()
        ),
    );
    holder.inner().stdout(Stdio::piped()).stderr(Stdio::piped());
    let holder = holder.spawn();
    eventually("the run on the first machine to start", || started.exists());
    for _ in 0..5 {
        let o = exec(&b, format!("echo ran >> {}", beside.display())).output();
        assert_eq!(
            code(&o),
            75,
            "the clone took a live lease: {}{}",
            stdout(&o),
            stderr(&o)
        );
        assert!(!beside.exists(), "the clone ran beside the live run");
        pause(300);
    }
    std::fs::write(&go, "go\n").unwrap();
    let o = holder.child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "the first machine's run: {}", stderr(&o));
    assert!(
        done.exists(),
        "the first machine's run did not end on its own"
    );
    // Once it is free, the clone takes it.
    let o = exec(&b, format!("echo ran >> {}", beside.display())).output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&beside).len(), 1);
}

#[test]
fn three_hosts_of_eight_ticks_run_one_occurrence_once() {
    let c = Cluster::new();
    let pg = store(&c);
    ticks_race(&c, &pg, &pg.url(), 8);
}

#[test]
fn three_hosts_of_eight_ticks_through_pgbouncer_run_one_occurrence_once() {
    // The store behind a pooler in transaction mode with fewer server
    // connections than the hosts' processes: each transaction may run on
    // another server connection.
    let c = Cluster::new();
    let pg = store(&c);
    let bouncer = baton_testkit::pgbouncer::PgBouncer::start(&pg);
    ticks_race(&c, &pg, &bouncer.url(), 4);
}

/// `trials` times, a job due once is ticked eight times at once on each
/// of three hosts whose store is at `url`: it runs once, never two at once
/// (a run that finds another running writes `overlap`), and every host's
/// history shows that one run.
fn ticks_race(c: &Cluster, pg: &PgServer, url: &str, trials: usize) {
    let hosts: Vec<Host> = ["h1", "h2", "h3"].iter().map(|n| Host::new(n)).collect();
    for trial in 0..trials {
        let counter = c.path(&format!("counter-{trial}"));
        let running = c.path(&format!("running-{trial}"));
        let job = counting_job(
            &format!("count{trial}"),
            &counter,
            &format!(
                "; mkdir {r} || echo overlap >> {n}; sleep 0.2; rmdir {r}",
                r = running.display(),
                n = counter.display()
            ),
        );
        crate::sched::pg_known_since(
            pg,
            &[&format!("count{trial}")],
            crate::sched::before_new_year(),
        );
        let configs: Vec<PathBuf> = hosts
            .iter()
            .map(|h| c.config(h.name(), url, &job))
            .collect();
        let mut ticks = Vec::new();
        for (h, config) in hosts.iter().zip(&configs) {
            for _ in 0..8 {
                let mut cmd = on(h, config, &["tick"]);
                cmd.inner().stdout(Stdio::null()).stderr(Stdio::piped());
                ticks.push(cmd.spawn());
            }
        }
        for t in ticks {
            let o = t.child.wait_with_output().unwrap();
            assert_eq!(code(&o), 0, "trial {trial}: {}", stderr(&o));
        }
        let ran = lines(&counter);
        assert_eq!(ran.len(), 1, "trial {trial}: ran {ran:?}");
        // Every host sees the run in the shared ledger, and ticks again
        // without running it.
        for (h, config) in hosts.iter().zip(&configs) {
            let o = on(h, config, &["tick"]).output();
            assert_eq!(code(&o), 0, "trial {trial}: {}", stderr(&o));
            let o = on(h, config, &["history", &format!("count{trial}"), "--json"]).output();
            assert_eq!(code(&o), 0, "{}", stderr(&o));
            let runs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(
                runs.as_array().map(Vec::len),
                Some(1),
                "trial {trial}: history on {}: {}",
                h.name(),
                stdout(&o)
            );
            assert_eq!(
                runs[0]["host"].as_str(),
                Some(ran[0].as_str()),
                "trial {trial}: history on {} names the host that ran it: {}",
                h.name(),
                stdout(&o)
            );
        }
        assert_eq!(lines(&counter).len(), 1, "trial {trial}: ran again");
    }
}

/// Runs `baton run JOB` on `host` until it starts the job (exit 0), at
/// most `attempts` times 200 ms apart; returns the attempts that were
/// refused.
fn run_until_started(host: &Host, config: &Path, job: &str, attempts: usize) -> Vec<Output> {
    let mut refused = Vec::new();
    loop {
        let mut run = on(host, config, &["run", job]);
        run.env("SLEEP", "1");
        let o = run.output();
        if code(&o) == 0 {
            return refused;
        }
        refused.push(o);
        assert!(
            refused.len() < attempts,
            "{job} never started on {}: last refusal: {}",
            host.name(),
            stderr(refused.last().unwrap())
        );
        pause(200);
    }
}

#[test]
fn a_live_run_slower_than_any_ttl_on_one_host_is_never_taken_by_another() {
    let c = Cluster::new();
    let pg = store(&c);
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let log = c.path("log");
    // Twelve seconds: three TTLs, more than TTL plus the takeover grace.
    let job = format!(
        "[jobs.slow]\nschedule = \"0 0 1 1 *\"\nrun = \"echo start $(hostname) >> {0}; sleep 12; \
         echo end $(hostname) >> {0}\"\n",
        log.display()
    );
    let (ca, cb) = (
        c.config("alpha", &pg.url(), &job),
        c.config("beta", &pg.url(), &job),
    );
    let mut first = on(&a, &ca, &["run", "slow"]);
    first.inner().stdout(Stdio::null()).stderr(Stdio::piped());
    let first = first.spawn();
    eventually("the run on alpha", || !lines(&log).is_empty());
    // Beta's status shows alpha's run holding the lock, judged live.
    let o = on(&b, &cb, &["status", "slow", "--json"]).output();
    let status: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("status --json: {e}: {}{}", stdout(&o), stderr(&o)));
    let holder = &status["jobs"][0]["holder"];
    assert_eq!(holder["host"], "alpha", "{status}");
    assert_eq!(holder["verdict"], "live", "{status}");
    let mut first = first;
    let mut tries = 0;
    loop {
        if first.child.try_wait().unwrap().is_some() {
            break;
        }
        let o = on(&b, &cb, &["run", "slow"]).output();
        if code(&o) == 0 {
            // Beta may start only once alpha's run is over.
            let log = lines(&log);
            let end = log.iter().position(|l| l == "end alpha");
            let start = log.iter().position(|l| l == "start beta");
            assert!(
                end.is_some() && end < start,
                "beta ran the job beside alpha's live run: {log:?}"
            );
            break;
        }
        tries += 1;
        assert!(
            stderr(&o).contains("alpha") || stdout(&o).contains("alpha"),
            "the refusal names the holder's host: {}{}",
            stdout(&o),
            stderr(&o)
        );
        pause(300);
    }
    let o = first.child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(tries >= 5, "beta tried {tries} times while alpha ran");
    assert_eq!(lines(&log)[..2], ["start alpha", "end alpha"]);
}

/// The lease row's fields, read on the server.
fn lease_row(pg: &PgServer, name: &str, fields: &str) -> String {
    pg.sql(&format!(
        "SELECT {fields} FROM baton.leases WHERE name = '{name}'"
    ))
}

#[test]
fn a_dead_host_leaves_its_lease_after_ttl_and_grace_on_the_servers_clock_not_before() {
    let c = Cluster::new();
    let pg = store(&c);
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let log = c.path("log");
    let job = format!(
        "[jobs.long]\nschedule = \"0 0 1 1 *\"\nrun = \"echo start $(hostname) >> {}; sleep ${{SLEEP:-60}}\"\n",
        log.display()
    );
    let (ca, cb) = (
        c.config("alpha", &pg.url(), &job),
        c.config("beta", &pg.url(), &job),
    );
    let mut holder = on(&a, &ca, &["run", "long"]);
    holder.inner().stdout(Stdio::null()).stderr(Stdio::null());
    let mut holder = holder.spawn();
    eventually("the run on alpha", || !lines(&log).is_empty());
    pause(1500); // a renewal or two
    holder.kill_host();
    // The last renewal alpha made, on the server's clock.
    let renewed = lease_row(
        &pg,
        "long",
        "(extract(epoch from renewed) * 1000000)::bigint",
    );
    let renewed: i64 = renewed.parse().unwrap();
    let refused = run_until_started(&b, &cb, "long", 300);
    assert!(!refused.is_empty(), "beta took the lease at once");
    let acquired = lease_row(
        &pg,
        "long",
        "(extract(epoch from acquired) * 1000000)::bigint",
    );
    let acquired: i64 = acquired.parse().unwrap();
    // TTL 4 s + takeover grace 4 s, on the server's clock.
    assert!(
        acquired - renewed >= 8_000_000,
        "beta took the lease {} µs after alpha's last renewal, before TTL + grace",
        acquired - renewed
    );
    assert_eq!(lines(&log)[0], "start alpha");
    assert!(lines(&log).iter().any(|l| l == "start beta"));
    // Alpha's run never recorded its end; beta's, under a higher fence,
    // recorded it abandoned, and every host reads the same.
    let (verdicts, runs) = verdicts_on(&a, &ca, "long");
    assert_eq!(verdicts, ["beta ok", "alpha abandoned"], "{runs}");
}

/// `HOST VERDICT` of each run of `job` in the history as `host` reads it,
/// newest first, and the history itself.
fn verdicts_on(host: &Host, config: &Path, job: &str) -> (Vec<String>, String) {
    let o = on(host, config, &["history", job, "--json"]).output();
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("history --json: {e}: {}{}", stdout(&o), stderr(&o)));
    let verdicts = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r["host"].as_str().unwrap(),
                r["verdict"].as_str().unwrap()
            )
        })
        .collect();
    (verdicts, runs.to_string())
}

/// A resource that rejects a fence lower than the highest it has seen: a
/// script that appends `FENCE HOST` to `sink` under `flock`, or
/// `REJECTED FENCE HOST`.
fn fence_sink(c: &Cluster) -> PathBuf {
    let script = c.path("sink.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nexec 9>>\"$1.lock\"\nflock 9\nlast=$(cat \"$1.max\" 2>/dev/null || echo 0)\n\
         if [ \"$2\" -lt \"$last\" ]; then echo \"REJECTED $2 $3\" >> \"$1\"; exit 1; fi\n\
         echo \"$2\" > \"$1.max\"\necho \"$2 $3\" >> \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn a_host_cut_off_from_the_store_stops_its_job_before_another_can_take_the_lease() {
    let c = Cluster::new();
    let pg = store(&c);
    let proxy = Proxy::start(format!("127.0.0.1:{}", pg.port()).parse().unwrap());
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let sink = c.path("sink");
    let script = fence_sink(&c);
    // Writes through the sink every 100 ms, LOOPS times (alpha: forever).
    let job = format!(
        "[jobs.writer]\nschedule = \"0 0 1 1 *\"\nrun = \"i=0; while [ $i -lt ${{LOOPS:-100000}} ]; do \
         {} {} $BATON_FENCE $(hostname); i=$((i+1)); sleep 0.1; done\"\n",
        script.display(),
        sink.display()
    );
    let through_proxy = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let ca = c.config("alpha", &through_proxy, &job);
    let cb = c.config("beta", &pg.url(), &job);
    let mut holder = on(&a, &ca, &["run", "writer"]);
    holder.inner().stdout(Stdio::null()).stderr(Stdio::piped());
    let holder = holder.spawn();
    eventually("alpha writing", || lines(&sink).len() >= 5);
    proxy.cut();
    let mut beta = on(&b, &cb, &["run", "writer"]);
    beta.env("LOOPS", "20");
    for attempt in 0.. {
        let o = beta.inner().output().unwrap();
        if code(&o) == 0 {
            break;
        }
        assert!(attempt < 300, "beta never ran: {}", stderr(&o));
        pause(200);
    }
    let o = holder.child.wait_with_output().unwrap();
    assert_ne!(
        code(&o),
        0,
        "alpha's run ends as a lost lease: {}",
        stderr(&o)
    );
    let written = lines(&sink);
    assert!(
        !written.iter().any(|l| l.starts_with("REJECTED")),
        "a stale fence reached the resource: {written:?}"
    );
    let by = |h: &str| written.iter().filter(|l| l.ends_with(h)).count();
    assert!(by(" alpha") >= 5 && by(" beta") == 20, "{written:?}");
    // Every alpha write comes before every beta write.
    let last_alpha = written.iter().rposition(|l| l.ends_with(" alpha")).unwrap();
    let first_beta = written.iter().position(|l| l.ends_with(" beta")).unwrap();
    assert!(last_alpha < first_beta, "{written:?}");
}

#[test]
fn a_run_that_ended_while_its_host_was_cut_off_past_its_ttl_records_its_end_once_back() {
    let c = Cluster::new();
    let pg = store(&c);
    let proxy = Proxy::start(format!("127.0.0.1:{}", pg.port()).parse().unwrap());
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let started = c.path("started");
    let job = format!(
        "[jobs.short]\nschedule = \"0 0 1 1 *\"\nrun = \"touch {}; sleep 1\"\n",
        started.display()
    );
    let through_proxy = format!("postgres://baton@127.0.0.1:{}/postgres", proxy.port());
    let ca = c.config("alpha", &through_proxy, &job);
    let cb = c.config("beta", &pg.url(), &job);
    let mut holder = on(&a, &ca, &["run", "short"]);
    holder.inner().stdout(Stdio::null()).stderr(Stdio::piped());
    let holder = holder.spawn();
    eventually("alpha's job started", || started.exists());
    // The job ends 0 a second later, its end not recorded; the lease is
    // lost within the TTL (4 s). The store answers again before another
    // host may take the lease (TTL + takeover grace, 8 s).
    proxy.cut();
    pause(5500);
    proxy.heal();
    let o = holder.child.wait_with_output().unwrap();
    let said = stderr(&o);
    assert!(said.contains("lease"), "alpha lost its lease: {said}");
    let (verdicts, runs) = verdicts_on(&b, &cb, "short");
    assert_eq!(
        verdicts,
        ["alpha ok"],
        "the run ended 0, as its own host saw: {runs}\nalpha said: {said}"
    );
}

#[test]
fn a_killed_supervisor_takes_its_detached_job_along_before_another_host_takes_over() {
    let c = Cluster::new();
    let pg = store(&c);
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let sink = c.path("sink");
    let script = fence_sink(&c);
    // The job detaches its writer from its group and session, then waits:
    // nothing of it is in the group a judge could see.
    let job = format!(
        "[jobs.writer]\nschedule = \"0 0 1 1 *\"\nrun = \"setsid sh -c 'i=0; while [ $i -lt \
         ${{LOOPS:-100000}} ]; do {} {} $BATON_FENCE $(hostname); i=$((i+1)); sleep 0.1; done' & \
         wait\"\n",
        script.display(),
        sink.display()
    );
    let ca = c.config("alpha", &pg.url(), &job);
    let cb = c.config("beta", &pg.url(), &job);
    let mut holder = on(&a, &ca, &["run", "writer"]);
    holder.inner().stdout(Stdio::null()).stderr(Stdio::null());
    let mut holder = holder.spawn();
    eventually("alpha writing", || lines(&sink).len() >= 5);
    // Kill the supervisor only: alpha's pid 1 stays up, as a machine does.
    let mut supervisor = None;
    eventually("alpha's supervisor", || {
        supervisor = holder.command_pid();
        supervisor.is_some()
    });
    let supervisor = i32::try_from(supervisor.unwrap()).unwrap();
    crate::support::signal(supervisor, rustix::process::Signal::KILL);
    let mut beta = on(&b, &cb, &["run", "writer"]);
    beta.env("LOOPS", "20");
    for attempt in 0.. {
        let o = beta.inner().output().unwrap();
        if code(&o) == 0 {
            break;
        }
        assert!(attempt < 300, "beta never ran: {}", stderr(&o));
        pause(200);
    }
    // Give a surviving writer on alpha the time to show itself.
    pause(1000);
    let written = lines(&sink);
    // unshare --kill-child takes whatever is left of alpha with it.
    let _ = holder.child.kill();
    let _ = holder.child.wait();
    assert!(
        !written.iter().any(|l| l.starts_with("REJECTED")),
        "a stale fence reached the resource: {written:?}"
    );
    let last_alpha = written.iter().rposition(|l| l.ends_with(" alpha")).unwrap();
    let first_beta = written.iter().position(|l| l.ends_with(" beta")).unwrap();
    assert!(
        last_alpha < first_beta,
        "alpha's job wrote on after beta took over: {written:?}"
    );
}

#[test]
fn two_daemons_on_two_hosts_run_one_occurrence_once_and_show_each_others_runs() {
    let c = Cluster::new();
    let pg = store(&c);
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let counter = c.path("counter");
    let job = counting_job("count", &counter, "");
    crate::sched::pg_known_since(&pg, &["count"], crate::sched::before_new_year());
    let (ca, cb) = (
        c.config("alpha", &pg.url(), &job),
        c.config("beta", &pg.url(), &job),
    );
    let start = |h: &Host, config: &Path| {
        let mut cmd = on(h, config, &["daemon", "--listen", "127.0.0.1:0"]);
        cmd.inner().stdin(Stdio::null());
        crate::daemon::Daemon::start_cmd(cmd.into_inner())
            .unwrap_or_else(|(code, log)| panic!("the daemon did not start ({code:?}): {log}"))
    };
    let (da, db) = (start(&a, &ca), start(&b, &cb));
    // Both tick at start; each is asked to tick again, at once.
    eventually("the run", || !lines(&counter).is_empty());
    for _ in 0..3 {
        assert_eq!(da.post("/v1/tick", "").status, 200);
        assert_eq!(db.post("/v1/tick", "").status, 200);
    }
    eventually("the run recorded", || {
        db.get("/v1/jobs/count/runs").json()[0]["verdict"] == "ok"
    });
    assert_eq!(lines(&counter).len(), 1, "{:?}", lines(&counter));
    let ran = &lines(&counter)[0];
    // Each daemon shows the run, wherever it ran.
    for d in [&da, &db] {
        let runs = d.get("/v1/jobs/count/runs").json();
        assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
        assert_eq!(runs[0]["host"].as_str(), Some(ran.as_str()), "{runs}");
    }
}

/// Two hosts whose configurations disagree on a job's lock (a rename that
/// reached one host first): alpha runs it under lock `b`; beta, whose file
/// still says `a`, shows alpha's live run in `history` and `status` as in
/// flight, never `abandoned`, and starts nothing beside it. Once the run
/// has ended, both say how it ended.
#[test]
fn a_run_under_a_lock_another_hosts_file_does_not_name_is_never_called_abandoned_there() {
    let c = Cluster::new();
    let pg = store(&c);
    let (a, b) = (Host::new("alpha"), Host::new("beta"));
    let (log, go) = (c.path("log"), c.path("go"));
    let job = |lock: &str| {
        format!(
            "[jobs.slow]\nschedule = \"0 0 1 1 *\"\nlock = \"{lock}\"\nrun = \"echo start \
             $(hostname) >> {0}; while [ ! -e {1} ]; do sleep 0.1; done; echo end $(hostname) \
             >> {0}\"\n",
            log.display(),
            go.display()
        )
    };
    let (ca, cb) = (
        c.config("alpha", &pg.url(), &job("a")),
        c.config("beta", &pg.url(), &job("a")),
    );
    // A run under lock `a` first, so that its lease row is there, free.
    std::fs::write(&go, "").unwrap();
    let o = on(&a, &ca, &["run", "slow"]).output();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    std::fs::remove_file(&go).unwrap();
    std::fs::remove_file(&log).unwrap();
    let ca = c.config("alpha", &pg.url(), &job("b"));
    let mut first = on(&a, &ca, &["run", "slow"]);
    first.inner().stdout(Stdio::null()).stderr(Stdio::piped());
    let first = first.spawn();
    eventually("the run on alpha", || !lines(&log).is_empty());
    let o = on(&b, &cb, &["history", "slow", "--json"]).output();
    let runs: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("history --json: {e}: {}{}", stdout(&o), stderr(&o)));
    assert_eq!(runs[0]["host"], "alpha", "{runs}");
    assert!(runs[0]["verdict"].is_null(), "beta's history: {runs}");
    let o = on(&b, &cb, &["status", "slow", "--json"]).output();
    let status: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("status --json: {e}: {}{}", stdout(&o), stderr(&o)));
    assert_eq!(status["jobs"][0]["state"], "running", "{status}");
    let o = on(&b, &cb, &["run", "slow"]).output();
    assert_ne!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    // Naming the lock the run is under, once.
    assert!(
        stderr(&o).contains("slow runs under its former lock b in "),
        "{}",
        stderr(&o)
    );
    std::fs::write(&go, "").unwrap();
    let o = first.child.wait_with_output().unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(lines(&log), ["start alpha", "end alpha"]);
    for (host, config) in [(&a, &ca), (&b, &cb)] {
        assert_eq!(
            verdicts_on(host, config, "slow").0,
            ["alpha ok", "alpha ok"]
        );
    }
}
