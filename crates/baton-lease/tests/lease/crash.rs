//! Crashes: a holder killed inside the mutex blocks nobody; a holder killed
//! outside it is judged dead at once; a holder whose job lives on is
//! orphaned; a holder from before a reboot is dead.

use std::time::Duration;

use baton_lease::record::{Body, Held};
use baton_lease::{Death, Fence, Lock, Outcome, Release, Verdict};

use crate::support::{Dir, Holder, eventually, flock_n_succeeds};

#[test]
fn a_holder_killed_inside_the_mutex_blocks_nobody() {
    let dir = Dir::new();
    drop(Lock::new(dir.lock()).try_acquire().unwrap()); // the file exists, free
    let staller = Holder::spawn("stall", &dir.lock(), &[]);
    assert_eq!(staller.next(), "in-mutex");
    // flock(1) interop: while baton-lease holds the mutex, `flock -n` fails.
    assert!(!flock_n_succeeds(&dir.lock()));
    staller.kill9();
    assert!(flock_n_succeeds(&dir.lock()));
    // The next acquirer takes it at once, not after any mutex wait.
    let lock = Lock::new(dir.lock()).with_options(baton_lease::Options {
        mutex_wait: Duration::ZERO,
        ..Default::default()
    });
    assert!(matches!(lock.try_acquire().unwrap(), Outcome::Acquired(_)));
}

#[test]
fn a_killed_holders_lease_is_broken_at_once() {
    let dir = Dir::new();
    let h = Holder::spawn("hold", &dir.lock(), &["--ttl-ms", "3600000"]);
    assert!(h.next().starts_with("acquired"));
    let pid = h.pid() as u32;
    h.kill9();
    // The TTL is an hour; evidence, not the timer, frees it.
    let Outcome::Acquired(lease) = Lock::new(dir.lock()).try_acquire().unwrap() else {
        panic!("not acquired")
    };
    match lease.replaced() {
        Verdict::Dead {
            holder,
            evidence: Death::ProcessGone,
        } => assert_eq!(holder.pid(), Some(pid)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unreaped_holder_is_dead_too() {
    let dir = Dir::new();
    let mut h = Holder::spawn("hold", &dir.lock(), &[]);
    assert!(h.next().starts_with("acquired"));
    h.signal(rustix::process::Signal::KILL);
    // Not reaped yet: a zombie answers kill(pid, 0) but is dead.
    eventually("the holder to become a zombie", || {
        let v = Lock::new(dir.lock()).inspect().unwrap().verdict;
        matches!(
            v,
            Verdict::Dead {
                evidence: Death::Zombie,
                ..
            }
        )
    });
    h.child.wait().unwrap();
    let v = Lock::new(dir.lock()).inspect().unwrap().verdict;
    assert!(
        matches!(
            v,
            Verdict::Dead {
                evidence: Death::ProcessGone,
                ..
            }
        ),
        "{v:?}"
    );
}

#[test]
fn a_killed_holder_whose_job_still_runs_is_orphaned() {
    let dir = Dir::new();
    let h = Holder::spawn("hold", &dir.lock(), &["--child"]);
    assert!(h.next().starts_with("acquired"));
    let child: i32 = h.next().strip_prefix("child ").unwrap().parse().unwrap();
    h.kill9();
    let lock = Lock::new(dir.lock());
    match lock.try_acquire().unwrap() {
        Outcome::Orphaned { pgid, .. } => assert_eq!(pgid, child as u32),
        other => panic!("{}", other.describe()),
    }
    // The job ends; the lease is then dead and taken at once.
    let pid = rustix::process::Pid::from_raw(child).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    eventually("the orphan to be reaped by init", || {
        !matches!(lock.inspect().unwrap().verdict, Verdict::Orphaned { .. })
    });
    assert!(matches!(lock.try_acquire().unwrap(), Outcome::Acquired(_)));
}

/// This process's own lease, rewritten as if taken and last renewed a
/// minute before this machine booted, under another boot id.
fn from_another_boot(dir: &Dir) -> Held {
    use baton_lease::Clock;
    let Outcome::Acquired(lease) = Lock::new(dir.lock()).try_acquire().unwrap() else {
        panic!()
    };
    let mut h = lease.record().clone();
    std::mem::forget(lease);
    let clock = baton_lease::SystemClock;
    let up = jiff::SignedDuration::try_from(clock.boot()).unwrap();
    let before = clock.wall() - up - jiff::SignedDuration::from_mins(1);
    let before = jiff::Timestamp::from_microsecond(before.as_microsecond()).unwrap();
    h.acquired = before;
    h.renewed = before;
    h.boot = Some("00000000-0000-0000-0000-000000000000".into());
    h.fence = Fence::new(h.fence.get() + 1_000_000_000);
    std::fs::write(dir.lock(), h.render()).unwrap();
    h
}

#[test]
fn a_lease_from_another_boot_is_dead() {
    let dir = Dir::new();
    let old = from_another_boot(&dir);
    if old.machine.is_none() {
        // Without a machine id a reboot cannot be told from another host:
        // the lease is judged like a remote one, by its wall stamp (older
        // than TTL plus grace here). Never "dead".
        let Outcome::Acquired(lease) = Lock::new(dir.lock()).try_acquire().unwrap() else {
            panic!()
        };
        assert!(
            matches!(lease.replaced(), Verdict::Expired { .. }),
            "{:?}",
            lease.replaced()
        );
        return;
    }
    let Outcome::Acquired(lease) = Lock::new(dir.lock()).try_acquire().unwrap() else {
        panic!()
    };
    assert!(
        matches!(
            lease.replaced(),
            Verdict::Dead {
                evidence: Death::Rebooted,
                ..
            }
        ),
        "{:?}",
        lease.replaced()
    );
    assert!(lease.fence() > old.fence);
    assert_eq!(lease.release().unwrap(), Release::Released);
    assert!(matches!(
        Body::parse(&std::fs::read(dir.lock()).unwrap()),
        Body::Free(_)
    ));
}

/// A process whose main thread has exited while another thread runs shows
/// as a zombie in `/proc/PID/stat`, yet it is alive.
#[test]
fn a_zombie_leader_with_live_threads_is_alive() {
    use baton_lease::{Liveness, OsLiveness, ProcessState};
    let mut py = std::process::Command::new("python3")
        .args([
            "-c",
            "import ctypes, threading, time\n\
             t = threading.Thread(target=time.sleep, args=(30,))\n\
             t.start()\n\
             print('up', flush=True)\n\
             ctypes.CDLL(None).pthread_exit(None)\n",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs the zombie-leader fixture");
    let pid = py.id();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(py.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "up");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let start: u64 = fields[19].parse().unwrap();
    eventually("the main thread to exit", || {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.rsplit_once(')').unwrap().1.trim_start().starts_with('Z'))
    });
    assert_eq!(OsLiveness.process(pid, start), ProcessState::Alive);
    py.kill().unwrap();
    py.wait().unwrap();
    assert_eq!(OsLiveness.process(pid, start), ProcessState::Gone);
}
