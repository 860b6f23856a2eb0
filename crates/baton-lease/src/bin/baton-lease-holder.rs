//! A process that takes a lease from the command line and holds it: the
//! demonstration in the README, and the "other process" in baton-lease's
//! tests. It prints one line per event on stdout, so a driver can follow it.
//!
//! ```text
//! baton-lease-holder hold  PATH [--ttl-ms N] [--renew-ms N] [--run ID] [--claim KEY@AT] [--child] [--start-at-ms T]
//!     Tries once. Acquired: prints `acquired fence=F token=T`, renews every
//!     renew-ms, and releases when stdin closes (`released` or `lost`).
//!     Not acquired: prints `not-acquired DESCRIPTION` and exits 1.
//!     --child runs `sleep 600` in a process group of its own, names it in the
//!     record and prints `child PID`.
//! baton-lease-holder churn PATH --rounds N --witness FILE [--start-at-ms T]
//!     N rounds of acquire (waiting), create FILE with O_EXCL, remove it,
//!     release. Prints `done wins=N`, or `OVERLAP` and exits 3 when FILE
//!     already existed: two owners at once.
//! baton-lease-holder stall PATH
//!     Enters the critical section and stops there (prints `in-mutex`), so a
//!     test can kill it while it holds the flock.
//! ```
//!
//! `--start-at-ms T` busy-waits until the boot clock reads T milliseconds, so
//! contenders started at different times decide at the same instant.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use baton_lease::{Claim, Clock, Lock, Options, Outcome, Release, Renewal, SystemClock};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("baton-lease-holder: {e}");
            ExitCode::from(2)
        }
    }
}

struct Args {
    path: String,
    ttl: Duration,
    renew: Duration,
    run: Option<String>,
    claim: Option<baton_lease::Once>,
    child: bool,
    rounds: u32,
    witness: Option<String>,
    start_at: Option<Duration>,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut it = args.iter();
    let path = it.next().ok_or("missing PATH")?.clone();
    let mut a = Args {
        path,
        ttl: Duration::from_secs(30),
        renew: Duration::from_secs(10),
        run: None,
        claim: None,
        child: false,
        rounds: 1,
        witness: None,
        start_at: None,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("{flag} needs a value"));
        let ms = |v: String| {
            v.parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|e| format!("{flag}: {e}"))
        };
        match flag.as_str() {
            "--ttl-ms" => a.ttl = ms(value()?)?,
            "--renew-ms" => a.renew = ms(value()?)?,
            "--start-at-ms" => a.start_at = Some(ms(value()?)?),
            "--run" => a.run = Some(value()?),
            "--claim" => {
                let v = value()?;
                let (key, at) = v.rsplit_once('@').ok_or("--claim: KEY@AT")?;
                a.claim = Some(baton_lease::Once {
                    key: key.to_owned(),
                    at: at.parse().map_err(|e| format!("--claim: {e}"))?,
                });
            }
            "--rounds" => a.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--witness" => a.witness = Some(value()?),
            "--child" => a.child = true,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(a)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // OK to ignore: a driver that stopped reading has nothing left to learn.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn run(args: &[String]) -> Result<u8, String> {
    let (mode, rest) = args
        .split_first()
        .ok_or("usage: baton-lease-holder hold|churn|stall PATH …")?;
    let a = parse(rest)?;
    let lock = Lock::new(&a.path).with_options(Options {
        ttl: a.ttl,
        ..Options::default()
    });
    if let Some(t) = a.start_at {
        while SystemClock.boot() < t {
            std::hint::spin_loop();
        }
    }
    match mode.as_str() {
        "hold" => hold(&lock, &a),
        "churn" => churn(&lock, &a),
        "stall" => stall(&a),
        other => Err(format!("unknown mode {other}")),
    }
}

fn hold(lock: &Lock, a: &Args) -> Result<u8, String> {
    let claim = Claim {
        run: a.run.clone(),
        once: a.claim.clone(),
        ..Claim::default()
    };
    let mut lease = match lock.try_acquire_as(&claim).map_err(|e| e.to_string())? {
        Outcome::Acquired(l) => l,
        other => {
            say(&format!("not-acquired {}", other.describe()));
            return Ok(1);
        }
    };
    say(&format!(
        "acquired fence={} token={}",
        lease.fence(),
        lease.token()
    ));
    let mut child = None;
    if a.child {
        use std::os::unix::process::CommandExt;
        let c = std::process::Command::new("sleep")
            .arg("600")
            .process_group(0)
            .spawn()
            .map_err(|e| format!("failed to spawn sleep: {e}"))?;
        match lease
            .set_job_group(c.id(), baton_lease::Leader::Command)
            .map_err(|e| e.to_string())?
        {
            Renewal::Renewed => say(&format!("child {}", c.id())),
            other => return Err(format!("could not name the job group: {other:?}")),
        }
        child = Some(c);
    }
    let closed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&closed);
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        flag.store(true, Ordering::SeqCst);
    });
    let step = Duration::from_millis(5);
    let mut since = Duration::ZERO;
    while !closed.load(Ordering::SeqCst) {
        SystemClock.sleep(step);
        since += step;
        if since >= a.renew {
            since = Duration::ZERO;
            match lease.renew().map_err(|e| e.to_string())? {
                Renewal::Renewed => say("renewed"),
                Renewal::Lost(lost) => {
                    say(&format!("lost {lost}"));
                    return Ok(4);
                }
                Renewal::Unconfirmed(b) => say(&format!("unconfirmed {b}")),
            }
        }
    }
    drop(child);
    match lease.release().map_err(|e| e.to_string())? {
        Release::Released => say("released"),
        other => say(&format!("lost {other:?}")),
    }
    Ok(0)
}

fn churn(lock: &Lock, a: &Args) -> Result<u8, String> {
    let witness = a.witness.as_deref().ok_or("churn needs --witness")?;
    let mut wins = 0;
    for _ in 0..a.rounds {
        let outcome = lock
            .acquire_wait(&Claim::default(), Duration::from_secs(120))
            .map_err(|e| e.to_string())?;
        let Outcome::Acquired(lease) = outcome else {
            say(&format!("gave-up {}", outcome.describe()));
            return Ok(5);
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(witness)
        {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                say("OVERLAP");
                return Ok(3);
            }
            Err(e) => return Err(format!("failed to create witness {witness}: {e}")),
        }
        std::thread::yield_now();
        std::fs::remove_file(witness)
            .map_err(|e| format!("failed to remove witness {witness}: {e}"))?;
        match lease.release().map_err(|e| e.to_string())? {
            Release::Released => wins += 1,
            other => {
                say(&format!("lost-on-release {other:?}"));
                return Ok(4);
            }
        }
    }
    say(&format!("done wins={wins}"));
    Ok(0)
}

/// A clock that stops the caller the first time the wall clock is read, which
/// happens inside the critical section.
struct StallClock;

impl Clock for StallClock {
    fn wall(&self) -> jiff::Timestamp {
        say("in-mutex");
        loop {
            SystemClock.sleep(Duration::from_secs(3600));
        }
    }
    fn boot(&self) -> Duration {
        SystemClock.boot()
    }
    fn sleep(&self, d: Duration) {
        SystemClock.sleep(d);
    }
}

fn stall(a: &Args) -> Result<u8, String> {
    let lock = Lock::new(&a.path).with_clock(Arc::new(StallClock));
    let _ = lock.try_acquire().map_err(|e| e.to_string())?;
    Ok(0)
}
