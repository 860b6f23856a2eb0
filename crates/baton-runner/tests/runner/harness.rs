//! Runs each test in a process of its own, on that process's main thread.
//!
//! A session makes its process the subreaper of its steps and reads
//! SIGINT, SIGTERM, SIGHUP and SIGCHLD from a `signalfd`, blocked in the
//! thread that supervises (crate docs: "one process supervises one run at a
//! time"). libtest runs a test on a thread of its own beside a main thread
//! that blocks nothing, which would take a signal meant for the session and
//! die of it; so this binary is its own harness: without arguments it
//! re-executes itself once per test (`BATON_RUNNER_TEST=NAME`), at most
//! `--test-threads` at a time, and reports as libtest does. A test that
//! needs another process of its own (a runner to kill, a writer whose
//! standard error nobody reads) starts this binary again as a *role*
//! (`BATON_RUNNER_ROLE=NAME`, see [`role`]).
//!
//! Understood: filters (substrings of a test's name), `--exact`, `--skip
//! TEXT`, `--list`, `--test-threads N`, `--nocapture`, `--ignored` (there
//! are none); other flags are ignored. A test's output is shown when it
//! fails. A test still running after twice [`PATIENCE`] is killed and fails.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use baton_lease::{Clock, SystemClock};
use baton_testkit::{PATIENCE, pause};

/// The variable naming the test a process runs.
const TEST: &str = "BATON_RUNNER_TEST";
/// The variable naming the role a process plays for a test.
const ROLE: &str = "BATON_RUNNER_ROLE";

/// A test, or a role a test starts.
#[derive(Clone, Copy)]
pub struct Test {
    /// `module::function`, with the crate's name in front.
    pub path: &'static str,
    /// Its body.
    pub run: fn(),
}

impl Test {
    /// `module::function`.
    pub fn name(&self) -> &'static str {
        self.path.split_once("::").map_or(self.path, |(_, n)| n)
    }
}

/// Lists a module's tests (or roles) as `const $list: &[Test]`.
macro_rules! listed {
    ($list:ident: $($f:ident),* $(,)?) => {
        pub const $list: &[$crate::harness::Test] = &[$($crate::harness::Test {
            path: concat!(module_path!(), "::", stringify!($f)),
            run: $f,
        }),*];
    };
}

/// The binary's entry: plays a role, runs one test, or runs them all.
pub fn main(tests: &[Test], roles: &[Test]) {
    if let Ok(name) = std::env::var(ROLE) {
        return find(roles, &name).unwrap_or_else(|| panic!("no role {name}"))();
    }
    if let Ok(name) = std::env::var(TEST) {
        return find(tests, &name).unwrap_or_else(|| panic!("no test {name}"))();
    }
    let args = Args::parse();
    let chosen: Vec<Test> = tests
        .iter()
        .filter(|t| args.selects(t.name()))
        .copied()
        .collect();
    if args.list {
        for t in &chosen {
            println!("{}: test", t.name());
        }
        return;
    }
    let failed = run_all(&chosen, &args, tests.len() - chosen.len());
    if failed > 0 {
        std::process::exit(101);
    }
}

fn find(list: &[Test], name: &str) -> Option<fn()> {
    list.iter().find(|t| t.name() == name).map(|t| t.run)
}

/// This binary again, playing `role` for the test that calls it.
pub fn role(name: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().expect("the test binary's path"));
    c.env(ROLE, name).env_remove(TEST).stdin(Stdio::null());
    c
}

/// The command line, as far as this harness understands it.
#[derive(Default)]
struct Args {
    filters: Vec<String>,
    skip: Vec<String>,
    exact: bool,
    list: bool,
    ignored: bool,
    nocapture: bool,
    threads: Option<usize>,
}

impl Args {
    fn parse() -> Self {
        let mut a = Self::default();
        let mut it = std::env::args().skip(1);
        while let Some(arg) = it.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
                _ => (arg.clone(), None),
            };
            let mut value = || inline.clone().or_else(|| it.next()).unwrap_or_default();
            match flag.as_str() {
                "--exact" => a.exact = true,
                "--list" => a.list = true,
                "--ignored" => a.ignored = true,
                "--nocapture" | "--no-capture" => a.nocapture = true,
                "--skip" => a.skip.push(value()),
                "--test-threads" => a.threads = value().parse().ok(),
                // Flags with a value this harness has no use for.
                "--format" | "--color" | "--logfile" | "-Z" | "--report-time" => {
                    if inline.is_none() {
                        let _ = value();
                    }
                }
                f if f.starts_with('-') => {}
                _ => a.filters.push(arg),
            }
        }
        a
    }

    fn selects(&self, name: &str) -> bool {
        let hit = |f: &String| {
            if self.exact {
                name == f
            } else {
                name.contains(f.as_str())
            }
        };
        !self.ignored
            && (self.filters.is_empty() || self.filters.iter().any(hit))
            && !self.skip.iter().any(|s| name.contains(s.as_str()))
    }

    fn threads(&self) -> usize {
        self.threads
            .or_else(|| std::env::var("RUST_TEST_THREADS").ok()?.parse().ok())
            .or_else(|| std::thread::available_parallelism().ok().map(Into::into))
            .unwrap_or(1)
            .max(1)
    }
}

/// A test's process, running.
struct Running {
    test: Test,
    child: Child,
    started: Duration,
}

impl Running {
    /// Whether the test passed, once its process has ended (killed when it
    /// ran longer than twice [`PATIENCE`]).
    fn verdict(&mut self) -> Option<Result<(), String>> {
        match self.child.try_wait() {
            Ok(Some(status)) if status.success() => Some(Ok(())),
            Ok(Some(status)) => Some(Err(format!("its process ended: {status}"))),
            Ok(None) if SystemClock.boot().saturating_sub(self.started) > PATIENCE * 2 => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                Some(Err(format!("still running after {:?}", PATIENCE * 2)))
            }
            Ok(None) => None,
            Err(e) => Some(Err(format!("failed to wait for its process: {e}"))),
        }
    }
}

/// Runs `tests`, each in a process of its own; returns how many failed.
fn run_all(tests: &[Test], args: &Args, filtered: usize) -> usize {
    let logs = tempfile::tempdir().expect("a directory for the tests' output");
    let s = if tests.len() == 1 { "" } else { "s" };
    println!("\nrunning {} test{s}", tests.len());
    let mut waiting = tests.iter().copied();
    let mut running: Vec<Running> = Vec::new();
    let mut failures: Vec<(Test, String, String)> = Vec::new();
    let mut passed = 0;
    let threads = args.threads();
    loop {
        while running.len() < threads {
            let Some(test) = waiting.next() else { break };
            running.push(Running {
                test,
                child: spawn(test, &logs.path().join(test.name()), args.nocapture),
                started: SystemClock.boot(),
            });
        }
        if running.is_empty() {
            break;
        }
        let mut i = 0;
        while i < running.len() {
            let Some(verdict) = running[i].verdict() else {
                i += 1;
                continue;
            };
            let r = running.swap_remove(i);
            let name = r.test.name();
            match verdict {
                Ok(()) => {
                    println!("test {name} ... ok");
                    passed += 1;
                }
                Err(why) => {
                    println!("test {name} ... FAILED");
                    let out = std::fs::read(logs.path().join(name)).unwrap_or_default();
                    failures.push((r.test, why, String::from_utf8_lossy(&out).into_owned()));
                }
            }
        }
        pause(10);
    }
    if !failures.is_empty() {
        println!("\nfailures:\n");
        for (t, why, out) in &failures {
            println!("---- {} ({why}) ----\n{out}", t.name());
        }
        println!("failures:");
        for (t, _, _) in &failures {
            println!("    {}", t.name());
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {filtered} filtered \
         out\n",
        if failures.is_empty() { "ok" } else { "FAILED" },
        failures.len(),
    );
    failures.len()
}

/// Starts `test`'s process, its output going to `log` (a file: a process a
/// broken test leaves behind cannot hold the harness up, as it could a
/// pipe's end).
fn spawn(test: Test, log: &Path, nocapture: bool) -> Child {
    let mut c = Command::new(std::env::current_exe().expect("the test binary's path"));
    c.env(TEST, test.name())
        .env_remove(ROLE)
        .stdin(Stdio::null());
    if !nocapture {
        let out = std::fs::File::create(log).expect("the test's output file");
        let err = out.try_clone().expect("the test's output file");
        c.stdout(out).stderr(err);
    }
    c.spawn().expect("the test's process")
}
