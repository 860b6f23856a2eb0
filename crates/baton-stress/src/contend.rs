//! The contender: what `baton-stress contend` does in each child process.
//!
//! The campaign re-executes its own binary as every contender, so they are
//! real processes with their own descriptors, pids and scheduling. Each
//! prints `ready`, reads `go T` on stdin, busy-waits until the boot clock
//! reads T milliseconds (sleeping until just before it, so a hundred
//! waiting processes do not starve the ones still being spawned), then
//! plays its role and reports every event as it happens (see
//! [`crate::event`]). Whatever it believes it holds, it witnesses (see
//! [`crate::witness`]).
//!
//! Roles:
//!
//! - `once`: one attempt; a winner claims the witness, reports, and holds
//!   until its stdin closes (the parent closes it once every contender has
//!   decided), then lets go.
//! - `churn`: R rounds of acquire (retrying with a jittered backoff), claim,
//!   yield, drop the claim, release. A round that finds no way in for its
//!   whole give-up period gives up (an instrument failure), except with an
//!   implementation known to wedge (the counter), which reports the defect.
//! - `poll`: tries every poll interval until the long holder's window ends;
//!   stops after its first win.
//! - `holder`: the long holder: acquires, claims the witness, renews (where
//!   the implementation can) until its stdin closes, then lets go.
//! - `crash`: acquires and kills itself with SIGKILL: a dead holder's lease.
//! - `threads`: N threads of this process decide at once (seed 000's
//!   reproduction: for the seed 000 store, every thread loads before any
//!   saves).

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

use crate::algo::{self, Algorithm, Failure, Holding, Kept, Let};
use crate::config::{Impl, Timing};
use crate::event::Event;
use crate::exhibits::seed000::{AfterLoad, NoHook};
use crate::rng::Rng;
use crate::store::Host;
use crate::witness::{Claim, Witness};

/// A contender's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Role {
    /// One decision, held until stdin closes.
    Once,
    /// R acquire/release rounds.
    Churn,
    /// Tries against a long holder until its window ends.
    Poll,
    /// The long holder.
    Holder,
    /// Acquires and dies.
    Crash,
    /// N threads, one decision each.
    Threads,
}

impl Role {
    /// The command-line name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Churn => "churn",
            Self::Poll => "poll",
            Self::Holder => "holder",
            Self::Crash => "crash",
            Self::Threads => "threads",
        }
    }
}

/// What a contender is told.
#[derive(Debug, Clone)]
pub(crate) struct Orders {
    /// The implementation.
    pub(crate) imp: Impl,
    /// The role.
    pub(crate) role: Role,
    /// The trial directory (lock and witness live there).
    pub(crate) dir: PathBuf,
    /// Rounds (churn).
    pub(crate) rounds: u32,
    /// Threads (threads).
    pub(crate) threads: usize,
    /// The start instant, if given on the command line instead of stdin.
    pub(crate) start_at: Option<Duration>,
    /// How long a churner keeps trying for one round before giving up.
    pub(crate) give_up: Duration,
    /// The time scale.
    pub(crate) timing: Timing,
    /// The PostgreSQL store to contend in, instead of the trial directory's
    /// lock file.
    pub(crate) store: Option<String>,
    /// The host this contender stands on in the store (see [`crate::store`]).
    pub(crate) host: usize,
    /// How many holders the lock admits (see [`crate::algo::build`]).
    pub(crate) slots: u32,
}

/// Runs a contender; returns its exit code (0 unless the protocol itself
/// could not be followed).
pub(crate) fn run(o: &Orders) -> u8 {
    match play(o) {
        Ok(()) => 0,
        Err(e) => {
            say(&Event::Error { detail: e });
            4
        }
    }
}

fn play(o: &Orders) -> Result<(), String> {
    let algo = match &o.store {
        Some(url) => algo::connect(o.imp, url, &o.dir, &Host::nth(o.host), &o.timing)?,
        None => algo::build(o.imp, &o.dir, &o.timing, o.slots),
    };
    let witness = Witness::new(&o.dir.join("witness"), o.slots).map_err(|e| e.to_string())?;
    say(&Event::Ready);
    let mut stdin = std::io::stdin().lock();
    let start = match o.start_at {
        Some(t) => t,
        None => read_go(&mut stdin)?,
    };
    let late = wait_until(start);
    let late_us = u64::try_from(late.as_micros()).unwrap_or(u64::MAX);
    let mut c = Counter::default();
    match o.role {
        Role::Once => once(&*algo, &witness, &mut stdin, &mut c),
        Role::Churn => churn(&*algo, &witness, o, &mut c),
        Role::Poll => poll(&*algo, &witness, o, start, &mut c),
        Role::Holder => {
            drop(stdin);
            holder(&*algo, &witness, o, &mut c);
        }
        Role::Crash => crash(&*algo),
        Role::Threads => threads(o, &mut c)?,
    }
    say(&Event::Done {
        attempts: c.attempts,
        late_us,
        gave_up: c.gave_up,
    });
    Ok(())
}

#[derive(Default)]
struct Counter {
    attempts: u64,
    gave_up: bool,
}

/// Writes one event line and flushes it.
fn say(e: &Event) {
    let mut out = std::io::stdout().lock();
    // OK to ignore: a parent that stopped reading has nothing left to learn.
    let _ = writeln!(out, "{}", e.line());
    let _ = out.flush();
}

fn say_failure(f: &Failure) {
    match f {
        Failure::Defect { kind, detail, .. } => say(&Event::Defect {
            kind: *kind,
            detail: detail.clone(),
        }),
        Failure::Instrument(d) => say(&Event::Error { detail: d.clone() }),
    }
}

fn read_go(stdin: &mut impl BufRead) -> Result<Duration, String> {
    let mut line = String::new();
    stdin
        .read_line(&mut line)
        .map_err(|e| format!("failed to read the start line from stdin: {e}"))?;
    let ms = line
        .trim()
        .strip_prefix("go ")
        .and_then(|t| t.parse::<u64>().ok())
        .ok_or_else(|| format!("expected `go T` on stdin, got {line:?}"))?;
    Ok(Duration::from_millis(ms))
}

/// Sleeps until just before `t` on the boot clock, then spins to it.
/// Returns how late after `t` this process left the spin (a contender
/// descheduled at the instant leaves late).
pub(crate) fn wait_until(t: Duration) -> Duration {
    let now = SystemClock.boot();
    if now < t && t - now > Duration::from_millis(3) {
        SystemClock.sleep(t - now - Duration::from_millis(2));
    }
    loop {
        let now = SystemClock.boot();
        if now >= t {
            return now - t;
        }
        std::hint::spin_loop();
    }
}

/// Claims the witness, reporting an overlap at once, and a new most of
/// holders seen at once when there are several slots. Returns whether the
/// claim is ours to drop.
fn witness_claim(w: &Witness) -> bool {
    match w.claim() {
        Ok(Claim::Ours { holders }) => {
            static MOST: AtomicU32 = AtomicU32::new(0);
            if w.slots() > 1 && holders > MOST.fetch_max(holders, Ordering::SeqCst) {
                say(&Event::Held { holders });
            }
            true
        }
        Ok(Claim::Overlap(other)) => {
            say(&Event::Overlap { other: other.pid });
            false
        }
        Err(e) => {
            say(&Event::Error {
                detail: e.to_string(),
            });
            false
        }
    }
}

/// Drops the claim (if ours) and lets go, reporting a displacement.
fn let_go(w: &Witness, ours: bool, h: Box<dyn Holding>) {
    if ours && let Err(e) = w.drop_claim() {
        say(&Event::Error {
            detail: e.to_string(),
        });
    }
    match h.release() {
        Ok(Let::Released) => {}
        Ok(Let::Displaced) => say(&Event::Displaced),
        Err(f) => say_failure(&f),
    }
}

fn once(algo: &dyn Algorithm, w: &Witness, stdin: &mut impl BufRead, c: &mut Counter) {
    c.attempts = 1;
    match algo.try_acquire(&NoHook) {
        Ok(Some(h)) => {
            let ours = witness_claim(w);
            say(&Event::Decided { won: true });
            // Hold until the parent closes stdin: every contender has decided.
            let mut sink = String::new();
            while matches!(stdin.read_line(&mut sink), Ok(n) if n > 0) {
                sink.clear();
            }
            let_go(w, ours, h);
        }
        Ok(None) => say(&Event::Decided { won: false }),
        Err(f) => {
            say_failure(&f);
            say(&Event::Decided { won: false });
        }
    }
}

/// The jittered backoff every implementation is retried with, the same for
/// all so that throughput compares algorithms, not retry policies: 100 µs
/// doubling to 10 ms, each pause drawn from ×[0.5, 1.5).
struct Backoff {
    pause: Duration,
    rng: Rng,
}

impl Backoff {
    const FIRST: Duration = Duration::from_micros(100);
    const MAX: Duration = Duration::from_millis(10);

    fn new() -> Self {
        Self {
            pause: Self::FIRST,
            rng: Rng::from_kernel(),
        }
    }

    fn wait(&mut self) {
        SystemClock.sleep(self.pause.mul_f64(0.5 + self.rng.unit()));
        self.pause = (self.pause * 2).min(Self::MAX);
    }

    fn reset(&mut self) {
        self.pause = Self::FIRST;
    }
}

fn churn(algo: &dyn Algorithm, w: &Witness, o: &Orders, c: &mut Counter) {
    let mut backoff = Backoff::new();
    'rounds: for _ in 0..o.rounds {
        let since = SystemClock.boot();
        backoff.reset();
        let h = loop {
            c.attempts += 1;
            match algo.try_acquire(&NoHook) {
                Ok(Some(h)) => break h,
                Ok(None) => {}
                Err(f) => {
                    say_failure(&f);
                    if matches!(f, Failure::Defect { terminal: true, .. }) {
                        break 'rounds; // the lock is wedged for good: the finding
                    }
                }
            }
            if SystemClock.boot() - since > o.give_up {
                if o.imp.wedges() {
                    say_wedged(SystemClock.boot().saturating_sub(since), o);
                } else {
                    c.gave_up = true;
                }
                break 'rounds;
            }
            backoff.wait();
        };
        say(&Event::Win);
        let ours = witness_claim(w);
        std::thread::yield_now();
        let_go(w, ours, h);
    }
}

/// An implementation known to wedge (the counter) admitted nobody for a
/// whole give-up period: the defect, reported with what the count said.
fn say_wedged(waited: Duration, o: &Orders) {
    let path = algo::lock_path(o.imp, &o.dir, 1);
    let count = crate::exhibits::counter::Counter::new(&path, o.slots)
        .read()
        .map_or_else(|e| e.to_string(), |n| n.to_string());
    say(&Event::Defect {
        kind: crate::event::DefectKind::Wedged,
        detail: format!(
            "no slot came free in {} ms; the count reads {count} of {}",
            waited.as_millis(),
            o.slots
        ),
    });
}

fn poll(algo: &dyn Algorithm, w: &Witness, o: &Orders, start: Duration, c: &mut Counter) {
    let end = start + o.timing.hold_for;
    let mut rng = Rng::from_kernel();
    while SystemClock.boot() < end {
        c.attempts += 1;
        match algo.try_acquire(&NoHook) {
            Ok(Some(h)) => {
                say(&Event::Win);
                let ours = witness_claim(w);
                std::thread::yield_now();
                let_go(w, ours, h);
                return;
            }
            Ok(None) => {}
            Err(f) => {
                say_failure(&f);
                if matches!(f, Failure::Defect { terminal: true, .. }) {
                    return;
                }
            }
        }
        SystemClock.sleep(o.timing.poll.mul_f64(0.5 + rng.unit()));
    }
}

fn holder(algo: &dyn Algorithm, w: &Witness, o: &Orders, c: &mut Counter) {
    c.attempts = 1;
    let mut h = match algo.try_acquire(&NoHook) {
        Ok(Some(h)) => h,
        Ok(None) => return say(&Event::Decided { won: false }),
        Err(f) => {
            say_failure(&f);
            return say(&Event::Decided { won: false });
        }
    };
    let ours = witness_claim(w);
    say(&Event::Decided { won: true });
    let closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        flag.store(true, Ordering::SeqCst);
    });
    let mut displaced = false;
    let mut last = SystemClock.boot();
    while !closed.load(Ordering::SeqCst) {
        SystemClock.sleep(Duration::from_millis(5));
        if SystemClock.boot() - last < o.timing.baton_renew {
            continue;
        }
        last = SystemClock.boot();
        match h.renew() {
            Ok(Kept::Renewed | Kept::NoRenewal | Kept::Unconfirmed) => {}
            Ok(Kept::Lost) => {
                if !displaced {
                    say(&Event::Displaced);
                }
                displaced = true;
            }
            Err(f) => say_failure(&f),
        }
    }
    if ours && let Err(e) = w.drop_claim() {
        say(&Event::Error {
            detail: e.to_string(),
        });
    }
    match h.release() {
        Ok(Let::Released) => {}
        Ok(Let::Displaced) if !displaced => say(&Event::Displaced),
        Ok(Let::Displaced) => {}
        Err(f) => say_failure(&f),
    }
}

fn crash(algo: &dyn Algorithm) -> ! {
    match algo.try_acquire(&NoHook) {
        Ok(Some(h)) => {
            say(&Event::Decided { won: true });
            std::mem::forget(h); // a crash releases nothing
        }
        Ok(None) => say(&Event::Decided { won: false }),
        Err(f) => say_failure(&f),
    }
    let me = rustix::process::getpid();
    // OK to ignore: if the kill failed, exiting without releasing is the
    // same crash as far as the lock is concerned.
    let _ = rustix::process::kill_process(me, rustix::process::Signal::KILL);
    std::process::exit(9)
}

/// The seed 000 reproduction's barrier: every thread loads before any saves.
struct LoadBarrier(Barrier);

impl AfterLoad for LoadBarrier {
    fn after_load(&self) {
        self.0.wait();
    }
}

fn threads(o: &Orders, c: &mut Counter) -> Result<(), String> {
    let n = o.threads.max(1);
    let start = Barrier::new(n);
    let decided = Barrier::new(n);
    let load = LoadBarrier(Barrier::new(n));
    let hook: &dyn AfterLoad = if o.imp == Impl::Seed000 {
        &load
    } else {
        &NoHook
    };
    let dir: &Path = &o.dir;
    let witness_path = dir.join("witness");
    std::thread::scope(|s| {
        for _ in 0..n {
            let (start, decided, witness_path) = (&start, &decided, &witness_path);
            s.spawn(move || {
                // Each thread has its own lock object (its own descriptors).
                let algo = algo::build(o.imp, dir, &o.timing, o.slots);
                let w = Witness::new(witness_path, o.slots);
                start.wait();
                let got = algo.try_acquire(hook);
                let held = match got {
                    Ok(Some(h)) => {
                        let ours = w.as_ref().is_ok_and(witness_claim);
                        say(&Event::Decided { won: true });
                        Some((h, ours))
                    }
                    Ok(None) => {
                        say(&Event::Decided { won: false });
                        None
                    }
                    Err(f) => {
                        say_failure(&f);
                        say(&Event::Decided { won: false });
                        None
                    }
                };
                decided.wait();
                if let (Some((h, ours)), Ok(w)) = (held, &w) {
                    let_go(w, ours, h);
                }
            });
        }
    });
    c.attempts = n as u64;
    Ok(())
}
