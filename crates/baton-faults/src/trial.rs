//! One trial: its directory (configurations, state directories, the job's
//! event log, the sinks, the failpoints' hit log), the baton commands it
//! runs (the binary under test, or its failpoint build, on this machine or
//! on a host made of namespaces), and its end: every process it started
//! gone, the evidence judged.
//!
//! Every command a trial starts carries the trial's mark in its
//! environment ([`crate::procs`]), so whatever a fault leaves running is
//! found and stopped when the trial ends, and counted if it is a job.
//! Every wait is bounded: a command that does not end in its time is killed
//! and reported as such (for baton, that is a hang, which the scenario
//! judges).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use baton_testkit::hosts::Host;
use baton_testkit::pg::PgServer;

use crate::check::{Facts, Violations};
use crate::evidence::{self, Recorded};
use crate::job::{self, JobDef};
use crate::procs;
use crate::rng::Rng;

/// The self-fencing settings of every job on lock files: a renewal every
/// third of a 2 s TTL. A killed holder on the same host is taken at once,
/// by evidence; a live one never.
pub(crate) const LOCAL_POLICY: &str =
    "ttl = \"2s\"\nkill_grace = \"500ms\"\ntakeover_grace = \"2s\"\n";

/// The same for several hosts on PostgreSQL: another host takes a lease
/// no longer renewed after TTL + takeover grace (4.5 s), and a host cut off
/// stops its job within TTL + renewal wait + kill grace (3 s).
pub(crate) const PG_POLICY: &str =
    "ttl = \"2s\"\nkill_grace = \"500ms\"\ntakeover_grace = \"2500ms\"\n";

/// What every trial of a campaign shares: the binaries, and one PostgreSQL
/// server started when a trial first needs it (each trial gets a database
/// of its own in it).
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) baton: PathBuf,
    pub(crate) failpoints: Option<PathBuf>,
    pg: Mutex<Option<Arc<PgServer>>>,
    databases: std::sync::atomic::AtomicU64,
}

impl Shared {
    pub(crate) fn new(baton: PathBuf, failpoints: Option<PathBuf>) -> Self {
        Self {
            baton,
            failpoints,
            pg: Mutex::new(None),
            databases: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The shared server.
    pub(crate) fn pg(&self) -> Arc<PgServer> {
        let mut g = self
            .pg
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Arc::clone(g.get_or_insert_with(|| Arc::new(PgServer::start())))
    }

    /// A fresh database on the shared server: its URL.
    pub(crate) fn database(&self) -> (Arc<PgServer>, String) {
        let pg = self.pg();
        let n = self
            .databases
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("t{}_{n}", std::process::id());
        pg.sql(&format!("CREATE DATABASE {name}"));
        let url = format!(
            "postgres://{}@127.0.0.1:{}/{name}",
            baton_testkit::pg::USER,
            pg.port()
        );
        (pg, url)
    }
}

/// How a command ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ran {
    /// Its exit code (`None`: killed by a signal, or by us at the limit).
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    /// Whether it was still running at its limit (and was killed).
    pub(crate) timed_out: bool,
}

impl Ran {
    /// Its output, for a message.
    pub(crate) fn said(&self) -> String {
        let s = format!("{}{}", self.stdout, self.stderr);
        s.trim().chars().take(600).collect()
    }
}

/// One trial of one scenario.
pub(crate) struct Trial<'s> {
    pub(crate) shared: &'s Shared,
    pub(crate) seed: u64,
    pub(crate) rng: Rng,
    pub(crate) dir: PathBuf,
    pub(crate) mark: String,
    /// Faults that took effect.
    pub(crate) injected: u64,
    pub(crate) facts: Facts,
    pub(crate) v: Violations,
    /// The instrument's own failures (not evidence about baton).
    pub(crate) broken: Vec<String>,
    /// Processes started in the background, to wait for or stop at the end.
    background: Vec<Child>,
}

impl<'s> Trial<'s> {
    /// A trial in a fresh directory under `root`.
    ///
    /// # Errors
    ///
    /// When its directory or scripts cannot be written.
    pub(crate) fn new(
        shared: &'s Shared,
        scenario: &'static str,
        seed: u64,
        root: &Path,
    ) -> Result<Self, String> {
        let dir = root.join(format!("{scenario}.{seed}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sinks"))
            .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
        let t = Self {
            shared,
            seed,
            rng: Rng::new(seed),
            mark: format!("{scenario}.{seed}.{}", std::process::id()),
            dir,
            injected: 0,
            facts: Facts::default(),
            v: Violations::default(),
            broken: Vec::new(),
            background: Vec::new(),
        };
        job::install(&t.script(), &t.job_script(&t.shared.baton))?;
        job::install(&t.path("sink.sh"), job::SINK)?;
        Ok(t)
    }

    /// A path in the trial's directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// The job's event log.
    pub(crate) fn events(&self) -> PathBuf {
        self.path("events")
    }

    /// The failpoints' hit log.
    pub(crate) fn hits_log(&self) -> PathBuf {
        self.path("hits")
    }

    /// The job script.
    pub(crate) fn script(&self) -> PathBuf {
        self.path("job.sh")
    }

    fn job_script(&self, baton: &Path) -> String {
        job::script(
            &self.events(),
            &self.path("sinks"),
            &self.path("sink.sh"),
            baton,
        )
    }

    /// Rewrites the job script so that its `watermark settle` runs `baton`.
    pub(crate) fn settle_with(&self, baton: &Path) -> Result<(), String> {
        job::install(&self.script(), &self.job_script(baton))
    }

    /// Writes `NAME.toml`: `[scheduler]` with `state` and `sched`, the
    /// store at `store`, then `more` and the jobs.
    pub(crate) fn config(
        &self,
        name: &str,
        state: &Path,
        store: Option<&str>,
        sched: &str,
        jobs: &[JobDef],
        more: &str,
    ) -> PathBuf {
        let mut text = format!(
            "[scheduler]\nstate_dir = {:?}\ntimezone = \"UTC\"\n{sched}\n",
            state.display()
        );
        if let Some(url) = store {
            text.push_str(&format!("[store]\nurl = {url:?}\n\n"));
        }
        text.push_str(more);
        text.push('\n');
        for j in jobs {
            text.push_str(&j.toml(&self.script()));
        }
        let file = self.path(&format!("{name}.toml"));
        if let Err(e) = std::fs::write(&file, text) {
            // The commands that read it will say so; the trial is broken.
            eprintln!("failed to write {}: {e}", file.display());
        }
        file
    }

    /// Sets what every command of the trial carries: the configuration,
    /// the mark, the hit log, and none of this process's baton variables.
    pub(crate) fn prepare_pub(&self, cmd: &mut Command, config: &Path) {
        cmd.env("BATON_CONFIG", config)
            .env(procs::MARK, &self.mark)
            .env("BATON_FAULT_LOG", self.hits_log())
            .env_remove("BATON_STATE_DIR")
            .env_remove("BATON_ENABLED")
            .env_remove("BATON_STORE_URL")
            .env_remove("PGPASSWORD")
            .env_remove("BATON_FAULT")
            .env_remove("FAILPOINTS")
            .env_remove("FAKETIME")
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::null());
    }

    /// `baton ARGS` (the binary under test) with `config`.
    pub(crate) fn baton(&self, config: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(&self.shared.baton);
        c.args(args);
        self.prepare_pub(&mut c, config);
        c
    }

    /// `baton ARGS` of the failpoint build, with `BATON_FAULT=fault`.
    pub(crate) fn faulty(&self, config: &Path, args: &[&str], fault: &str) -> Command {
        let exe = self
            .shared
            .failpoints
            .clone()
            .unwrap_or_else(|| self.shared.baton.clone());
        let mut c = Command::new(exe);
        c.args(args);
        self.prepare_pub(&mut c, config);
        c.env("BATON_FAULT", fault);
        c
    }

    /// `baton ARGS` on `host`.
    pub(crate) fn on(&self, host: &Host, config: &Path, args: &[&str]) -> Command {
        let mut hc = host.command(&self.shared.baton);
        hc.args(args);
        let mut c = hc.into_inner();
        self.prepare_pub(&mut c, config);
        c
    }

    /// Runs `cmd` to its end, at most `limit`.
    pub(crate) fn run(&mut self, mut cmd: Command, limit: Duration) -> Ran {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        match cmd.spawn() {
            Ok(child) => wait(child, limit),
            Err(e) => {
                self.broken.push(format!("failed to start {cmd:?}: {e}"));
                Ran::default()
            }
        }
    }

    /// Starts `cmd` in the background, its output in `NAME.out` and
    /// `NAME.err`; it is waited for (or stopped) when the trial ends.
    pub(crate) fn spawn(&mut self, mut cmd: Command, name: &str) -> Option<u32> {
        let out = std::fs::File::create(self.path(&format!("{name}.out")));
        let err = std::fs::File::create(self.path(&format!("{name}.err")));
        if let (Ok(o), Ok(e)) = (out, err) {
            cmd.stdout(o).stderr(e);
        }
        match cmd.spawn() {
            Ok(child) => {
                let pid = child.id();
                self.background.push(child);
                Some(pid)
            }
            Err(e) => {
                self.broken.push(format!("failed to start {cmd:?}: {e}"));
                None
            }
        }
    }

    /// Whether the background process `pid` has ended.
    pub(crate) fn ended(&self, pid: u32) -> bool {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
            || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
    }

    /// Takes a child started elsewhere into the background list.
    pub(crate) fn adopt(&mut self, child: Child) {
        self.background.push(child);
    }

    /// Waits for the background process `pid` to end, at most `limit`;
    /// whether it ended.
    pub(crate) fn wait_for(
        &mut self,
        pid: u32,
        limit: Duration,
    ) -> Option<std::process::ExitStatus> {
        let i = self.background.iter().position(|c| c.id() == pid)?;
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(status)) = self.background[i].try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            pause_ms(20);
        }
    }

    /// What `baton history JOB --json` says, through `cmd` (which runs it).
    pub(crate) fn history(&mut self, cmd: Command) -> Vec<Recorded> {
        let ran = self.run(cmd, Duration::from_secs(60));
        match evidence::recorded(ran.stdout.as_bytes()) {
            Ok(r) => r,
            Err(e) => {
                self.broken
                    .push(format!("history: {e}; {}", ran.stderr.trim()));
                Vec::new()
            }
        }
    }

    /// The faults the failpoint build logged so far.
    pub(crate) fn hits(&self) -> Vec<evidence::Hit> {
        evidence::hits(&self.hits_log())
    }

    /// Waits (at most `limit`) for the failpoint build to log a hit.
    pub(crate) fn await_hit(&self, limit: Duration) -> Option<evidence::Hit> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(h) = self.hits().into_iter().next() {
                return Some(h);
            }
            if Instant::now() > deadline {
                return None;
            }
            pause_ms(10);
        }
    }

    /// Waits (at most `limit`) until `cond` holds; whether it did.
    pub(crate) fn until(&self, limit: Duration, mut cond: impl FnMut(&Self) -> bool) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if cond(self) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            pause_ms(20);
        }
    }

    /// Counts the failpoint hits logged as faults injected; the killed
    /// supervisors among them as facts.
    pub(crate) fn count_hits(&mut self) {
        for h in self.hits() {
            self.injected += 1;
            if h.action == "kill" {
                self.facts.killed.insert((h.host.clone(), h.pid));
            }
        }
    }

    /// Runs `tick` until a run of `job` starts after line `mark` of the
    /// event log, at most `limit`; a schedule that runs nothing more is
    /// wedged.
    pub(crate) fn probe(&mut self, job: &str, limit: Duration, mut tick: impl FnMut(&mut Self)) {
        let mark = evidence::mark(&self.events());
        let deadline = Instant::now() + limit;
        loop {
            tick(self);
            let started = evidence::runs(&self.events())
                .iter()
                .any(|s| s.job == job && s.first >= mark);
            if started {
                return;
            }
            if Instant::now() > deadline {
                self.v.wedge(format!(
                    "{job}: no run started in the {} s after the fault",
                    limit.as_secs()
                ));
                return;
            }
            pause_ms(300);
        }
    }

    /// Waits (at most `limit`) until no process of the trial is left but
    /// those in `except`; stops and counts what is left: a job process
    /// that outlived every run is an overlap waiting to happen (it ran
    /// beside whatever came after it).
    pub(crate) fn quiesce(&mut self, limit: Duration, except: &[i32]) {
        let left = |t: &Self| {
            procs::marked(&t.mark)
                .into_iter()
                .filter(|p| !except.contains(&p.pid))
                .collect::<Vec<_>>()
        };
        self.until(limit, |t| left(t).is_empty());
        let script = self.script().display().to_string();
        let leftovers = left(self);
        let jobs: Vec<&procs::Marked> = leftovers
            .iter()
            .filter(|p| p.cmdline.contains(&script))
            .collect();
        if !jobs.is_empty() {
            self.v.overlap(format!(
                "{} job process(es) outlived their runs: {}",
                jobs.len(),
                jobs.iter()
                    .map(|p| format!("{} ({})", p.pid, p.cmdline))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        for p in &leftovers {
            procs::kill(p.pid);
        }
    }

    /// Judges the evidence against `recorded` and the missed alerts of
    /// `alerts` (the `alerts.log` files to read).
    pub(crate) fn judge(&mut self, recorded: &[Recorded], alerts: &[PathBuf]) {
        let seen = evidence::runs(&self.events());
        let mut sinks = BTreeMap::new();
        if let Ok(rd) = std::fs::read_dir(self.path("sinks")) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(lock) = name.strip_prefix("sink-")
                    && !lock.contains('.')
                {
                    sinks.insert(lock.to_owned(), evidence::writes(&e.path()));
                }
            }
        }
        let missed: Vec<evidence::Missed> =
            alerts.iter().flat_map(|p| evidence::missed(p)).collect();
        let mut v = std::mem::take(&mut self.v);
        crate::check::judge(&seen, &sinks, recorded, &missed, &self.facts, &mut v);
        self.v = v;
    }

    /// Judges `missed`, ranges read from the ledger itself, against what
    /// ran: an occurrence that ran and lies in one is a wrong record.
    pub(crate) fn judge_missed(&mut self, missed: &[evidence::Missed]) {
        let seen = evidence::runs(&self.events());
        let mut v = std::mem::take(&mut self.v);
        crate::check::missed_but_ran(&seen, missed, &self.facts, &mut v);
        self.v = v;
    }

    /// Ends the trial: every background process stopped and reaped, every
    /// process of the trial gone.
    pub(crate) fn close(&mut self) {
        for c in &mut self.background {
            let _ = c.kill();
            let _ = c.wait();
        }
        self.background.clear();
        for p in procs::marked(&self.mark) {
            procs::kill(p.pid);
        }
    }
}

impl Drop for Trial<'_> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Waits for `child`, at most `limit`, reading its output meanwhile.
pub(crate) fn wait(mut child: Child, limit: Duration) -> Ran {
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let reader = |s: Option<std::process::ChildStdout>| {
        std::thread::spawn(move || {
            let mut buf = String::new();
            if let Some(mut s) = s {
                let _ = std::io::Read::read_to_string(&mut s, &mut buf);
            }
            buf
        })
    };
    let out = reader(out);
    let err = std::thread::spawn(move || {
        let mut buf = String::new();
        if let Some(mut s) = err {
            let _ = std::io::Read::read_to_string(&mut s, &mut buf);
        }
        buf
    });
    let deadline = Instant::now() + limit;
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() > deadline => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => pause_ms(10),
            Err(_) => break None,
        }
    };
    // A killed command's children may hold its pipes: read what there is
    // without waiting for them.
    let join = |h: std::thread::JoinHandle<String>| {
        let until = Instant::now() + Duration::from_millis(if timed_out { 200 } else { 5000 });
        while !h.is_finished() && Instant::now() < until {
            pause_ms(5);
        }
        if h.is_finished() {
            h.join().unwrap_or_default()
        } else {
            String::new()
        }
    };
    Ran {
        code: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        stdout: join(out),
        stderr: join(err),
        timed_out,
    }
}

/// Sleeps `ms` milliseconds.
pub(crate) fn pause_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// Seconds, as a duration.
pub(crate) fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}
