//! Shared fixtures: a lease store the test scripts ([`Store`]), a real lock
//! file's lease ([`lock_file`]), shell steps and the snippets they are made
//! of, and what a session reported ([`Events`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use baton_lease::{Clock, Lock, Options, Outcome, SystemClock};
use baton_runner::{Event, Report, Session, SessionConfig, Stdin, StepSpec};
use baton_store::{Held, HeldError, Release, Renewal, Restated};

pub use baton_testkit::process::alive;
pub use baton_testkit::{PATIENCE, eventually, pause};

/// The boot clock now: for ordering what a test saw, never for speed.
pub fn now() -> Duration {
    SystemClock.boot()
}

/// A temporary directory for one test's files.
pub struct Dir {
    tmp: tempfile::TempDir,
}

impl Dir {
    pub fn new() -> Self {
        Self {
            tmp: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }
}

/// A step running `script` with `sh -c`, reading nothing, stopped with
/// SIGTERM and a short grace, in a PID namespace of its own when `contain`
/// (and the kernel allows it). Its timeout, [`PATIENCE`], only bounds a
/// broken test: a step waiting for what never comes fails it then.
pub fn sh(script: &str, contain: bool) -> StepSpec {
    let mut spec = StepSpec::new("sh", vec!["-c".into(), script.into()]);
    spec.stdin = Stdin::Null;
    spec.kill_grace = Duration::from_millis(300);
    spec.timeout = Some(PATIENCE);
    spec.contain = contain;
    spec
}

/// A shell snippet writing the shell's own pid, as the host numbers it, to
/// `path` (inside a step's PID namespace `$$` is the namespace's number;
/// `/proc` is the host's, and the shell opens the redirection itself).
pub fn write_pid(path: &Path) -> String {
    format!(
        "read -r baton_pid _ < /proc/self/stat; echo $baton_pid > {}",
        path.display()
    )
}

/// A shell snippet writing the shell's process group, as the host numbers
/// it (the fifth field of `/proc/self/stat`), to `path`.
pub fn write_group(path: &Path) -> String {
    format!(
        "read -r _ _ _ _ baton_pg _ < /proc/self/stat; echo $baton_pg > {}",
        path.display()
    )
}

/// A shell snippet starting `command` in the background with its host pid
/// written to `path`; in a session of its own (out of the step's process
/// group) with `detach`; deaf to SIGTERM with `deaf`.
pub fn background(command: &str, path: &Path, detach: bool, deaf: bool) -> String {
    format!(
        "{}sh -c '{}{}; exec {command}' &",
        if detach { "setsid " } else { "" },
        if deaf { "trap \"\" TERM; " } else { "" },
        write_pid(path)
    )
}

/// Two `sleep 120` a step starts and leaves running: one in its process
/// group, one detached in a session of its own. Their host pids go to
/// `grouped` and `detached` in a test's directory.
pub struct Sleepers {
    pub grouped: PathBuf,
    pub detached: PathBuf,
}

impl Sleepers {
    /// The pair whose pids go to `dir`.
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            grouped: dir.join("grouped"),
            detached: dir.join("detached"),
        }
    }

    /// A shell snippet starting both, deaf to SIGTERM with `deaf`, and
    /// waiting until both run.
    pub fn start(&self, deaf: bool) -> String {
        format!(
            "{} {} {}; {}",
            background("sleep 120", &self.detached, true, deaf),
            background("sleep 120", &self.grouped, false, deaf),
            wait_file(&self.detached),
            wait_file(&self.grouped)
        )
    }

    /// Whether both have started.
    pub fn started(&self) -> bool {
        written(&self.grouped) && written(&self.detached)
    }

    /// Checks that neither still runs once `what` happened.
    pub fn assert_gone(&self, what: &str) {
        let (g, d) = (read_pid(&self.grouped), read_pid(&self.detached));
        assert!(!alive(g), "a process of the step's group outlived {what}");
        assert!(!alive(d), "a detached process of the step outlived {what}");
    }
}

/// A shell snippet waiting until `path` holds a line.
pub fn wait_file(path: &Path) -> String {
    format!("until [ -s {0} ]; do sleep 0.01; done", path.display())
}

/// Writes a line to its file when dropped, panicking or not: what a step
/// waits for, from a thread whose failure must not leave the step waiting.
pub struct Touch(pub PathBuf);

impl Drop for Touch {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "1\n");
    }
}

/// Whether `path` holds a line yet.
pub fn written(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|s| s.ends_with('\n'))
}

/// The number in `path`, once it is written.
pub fn read_pid(path: &Path) -> u32 {
    eventually(&format!("{} to be written", path.display()), || {
        written(path)
    });
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Sends `signal` to process `pid`.
pub fn kill(pid: u32, signal: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(i32::try_from(pid).unwrap()).unwrap();
    let _ = rustix::process::kill_process(pid, signal);
}

/// What a session reported, in order. Whether the kernel grants steps a
/// PID namespace depends on the machine, not on the test: that event
/// ([`Event::Uncontained`]) is shown, not kept.
#[derive(Default)]
pub struct Events(pub Vec<Event>);

impl Report for Events {
    fn event(&mut self, event: Event) {
        println!("event: {event:?}");
        if !matches!(event, Event::Uncontained { .. }) {
            self.0.push(event);
        }
    }
}

impl Events {
    /// How many events `f` picks.
    pub fn count(&self, f: impl Fn(&Event) -> bool) -> usize {
        self.0.iter().filter(|e| f(e)).count()
    }
}

/// Starts a session over `lease`.
pub fn start<'r>(
    lease: Box<dyn Held>,
    cfg: SessionConfig,
    report: &'r mut dyn Report,
) -> Session<'r> {
    Session::start(lease, cfg, report)
        .unwrap_or_else(|e| panic!("the session did not start: {}", e.1))
}

/// A real lock file at `path` with a TTL of `ttl` (and the mutex wait a run
/// would use), and a lease acquired on it.
pub fn lock_file(path: &Path, ttl: Duration) -> (Lock, baton_lease::Lease) {
    let lock = Lock::new(path).with_options(Options {
        ttl,
        mutex_wait: baton_runner::mutex_wait_for(ttl),
        ..Options::default()
    });
    match lock.try_acquire().unwrap() {
        Outcome::Acquired(lease) => (lock, lease),
        other => panic!("the lock was not acquired: {}", other.describe()),
    }
}

/// The record a lock file holds now, when it is a lease.
pub fn record(lock: &Lock) -> Option<baton_lease::record::Held> {
    match lock.inspect().unwrap().body {
        Some(baton_lease::record::Body::Held(h)) => Some(h),
        _ => None,
    }
}

/// A call the session made to a [`Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// `set_job_group(pgid)`.
    Record(u32),
    Renew,
    Restate,
    Withdraw,
    Release,
}

/// One call, with the boot clock when it began and when it answered.
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub what: What,
    pub start: Duration,
    /// `None` while it has not answered.
    pub end: Option<Duration>,
}

/// Every call a [`Store`] took, in order; shared with the test.
#[derive(Debug, Clone, Default)]
pub struct Calls(Arc<Mutex<Vec<Call>>>);

impl Calls {
    fn begin(&self, what: What) -> usize {
        let mut c = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        c.push(Call {
            what,
            start: now(),
            end: None,
        });
        c.len() - 1
    }

    fn end(&self, i: usize) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)[i].end = Some(now());
    }

    /// Every call so far.
    pub fn all(&self) -> Vec<Call> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The calls of one kind so far.
    pub fn of(&self, f: impl Fn(What) -> bool) -> Vec<Call> {
        self.all().into_iter().filter(|c| f(c.what)).collect()
    }

    /// The renewals so far.
    pub fn renewals(&self) -> Vec<Call> {
        self.of(|w| w == What::Renew)
    }

    /// The groups recorded so far.
    pub fn recorded(&self) -> Vec<u32> {
        self.all()
            .iter()
            .filter_map(|c| match c.what {
                What::Record(g) => Some(g),
                _ => None,
            })
            .collect()
    }
}

type Answer<T> = Box<dyn FnMut(u32) -> Result<T, HeldError> + Send>;

/// A lease in a store the test scripts: every call is logged ([`Calls`])
/// and answers as the test says; unless told otherwise, everything
/// succeeds. For the faults a lock file cannot be made to show on demand: a
/// renewal that finds the lease lost, one that never answers, a release
/// that fails.
pub struct Store {
    ttl: Duration,
    renew_wait: Duration,
    calls: Calls,
    renewals: u32,
    record: Answer<Renewal>,
    renew: Answer<Renewal>,
    restate: Answer<Restated>,
    release: Answer<Release>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("ttl", &self.ttl).finish()
    }
}

impl Store {
    /// A store whose lease has `ttl`; its calls answer at once (a renewal
    /// may block 10 ms, it says).
    pub fn new(ttl: Duration) -> (Self, Calls) {
        let calls = Calls::default();
        let store = Self {
            ttl,
            renew_wait: Duration::from_millis(10),
            calls: calls.clone(),
            renewals: 0,
            record: Box::new(|_| Ok(Renewal::Renewed)),
            renew: Box::new(|_| Ok(Renewal::Renewed)),
            restate: Box::new(|_| Ok(Restated::Done)),
            release: Box::new(|_| Ok(Release::Released)),
        };
        (store, calls)
    }

    /// How `set_job_group` answers, given the group.
    pub fn on_record(
        mut self,
        f: impl FnMut(u32) -> Result<Renewal, HeldError> + Send + 'static,
    ) -> Self {
        self.record = Box::new(f);
        self
    }

    /// How the `n`th renewal (from 1) answers.
    pub fn on_renew(
        mut self,
        f: impl FnMut(u32) -> Result<Renewal, HeldError> + Send + 'static,
    ) -> Self {
        self.renew = Box::new(f);
        self
    }

    /// How `restate` answers.
    pub fn on_restate(
        mut self,
        f: impl FnMut() -> Result<Restated, HeldError> + Send + 'static,
    ) -> Self {
        let mut f = f;
        self.restate = Box::new(move |_| f());
        self
    }

    /// How `release` answers.
    pub fn on_release(
        mut self,
        f: impl FnMut() -> Result<Release, HeldError> + Send + 'static,
    ) -> Self {
        let mut f = f;
        self.release = Box::new(move |_| f());
        self
    }

    fn logged<T>(&mut self, what: What, f: impl FnOnce(&mut Self) -> T) -> T {
        let i = self.calls.begin(what);
        let r = f(self);
        self.calls.end(i);
        r
    }
}

/// A store's failure, as a store would say it.
pub fn down() -> HeldError {
    HeldError::new(std::io::Error::other("the store is down"))
}

/// Blocks the calling thread for good: a renewal stuck on a hung store.
pub fn forever<T>() -> T {
    loop {
        std::thread::park();
    }
}

impl Held for Store {
    fn ttl(&self) -> Duration {
        self.ttl
    }
    fn renew_wait(&self) -> Duration {
        self.renew_wait
    }
    fn fence(&self) -> u64 {
        7
    }
    fn token(&self) -> String {
        "the-token".into()
    }
    fn host(&self) -> &str {
        "here"
    }
    fn describe(&self) -> String {
        "the test's store".into()
    }
    fn set_job_group(&mut self, pgid: u32, _: baton_lease::Leader) -> Result<Renewal, HeldError> {
        self.logged(What::Record(pgid), |s| (s.record)(pgid))
    }
    fn renew(&mut self) -> Result<Renewal, HeldError> {
        self.renewals += 1;
        let n = self.renewals;
        self.logged(What::Renew, |s| (s.renew)(n))
    }
    fn restate(
        &mut self,
        _run: Option<String>,
        _occ: Option<String>,
        _once: Option<&baton_lease::Once>,
    ) -> Result<Restated, HeldError> {
        self.logged(What::Restate, |s| (s.restate)(0))
    }
    fn withdraw(&mut self, _once: &baton_lease::Once) -> Result<Option<Renewal>, HeldError> {
        self.logged(What::Withdraw, |_| Ok(Some(Renewal::Renewed)))
    }
    fn release(mut self: Box<Self>) -> Result<Release, HeldError> {
        self.logged(What::Release, |s| (s.release)(0))
    }
}
