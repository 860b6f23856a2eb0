//! Uncontended acquire + release, against two floors measured in the same run:
//!
//! - `floor`: the bare system calls of a read-decide-write, open, flock,
//!   pread, pwrite, unlock, close, once to acquire and once to release;
//! - `floor+checks`: the same plus the calls correctness adds: `fstat` and
//!   `lstat` (the path still names the inode we locked, and it is a regular
//!   file), `getrandom` for the token and `getpid` for the holder's identity.
//!
//! Criterion reports each; then an interleaved comparison (blocks of cycles of
//! each, alternating, so all see the same machine) prints the median ratios.
//!
//! ```sh
//! cargo bench -p baton-lease --bench cycle
//! ```

#![allow(clippy::disallowed_methods)] // The floor calls flock and reads the clock directly, on purpose.
#![allow(clippy::unwrap_used)] // A benchmark that cannot set up should stop.

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use baton_lease::{Lock, Outcome, Release};
use criterion::Criterion;

fn baton_cycle(lock: &Lock) {
    let Outcome::Acquired(lease) = lock.try_acquire().unwrap() else {
        panic!("the lock is busy")
    };
    assert_eq!(lease.release().unwrap(), Release::Released);
}

fn open(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
        .unwrap()
}

/// One read-decide-write done with nothing but the system calls; `checks`
/// adds the identity checks and the token's random bytes.
fn bare_section(path: &Path, line: &[u8], buf: &mut [u8], checks: bool) {
    let f = open(path);
    if checks {
        black_box(f.metadata().unwrap());
    }
    f.try_lock().unwrap();
    if checks {
        black_box(std::fs::symlink_metadata(path).unwrap());
    }
    let n = f.read_at(&mut buf[..line.len()], 0).unwrap();
    black_box(n);
    if checks {
        let mut token = [0u8; 8];
        rustix::rand::getrandom(&mut token, rustix::rand::GetRandomFlags::empty()).unwrap();
        black_box((token, std::process::id()));
    }
    f.write_all_at(line, 0).unwrap();
    f.unlock().unwrap();
    drop(f);
}

fn floor_cycle(path: &Path, held: &[u8], free: &[u8], buf: &mut [u8], checks: bool) {
    bare_section(path, held, buf, checks);
    bare_section(path, free, buf, false);
    if checks {
        // Release checks the inode too.
        black_box(std::fs::symlink_metadata(path).unwrap());
        black_box(std::fs::metadata(path).unwrap());
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    lock: Lock,
    floor_path: std::path::PathBuf,
    held: Vec<u8>,
    free: Vec<u8>,
}

fn setup() -> Setup {
    let dir =
        tempfile::tempdir_in(std::env::var_os("BENCH_DIR").unwrap_or_else(|| ".".into())).unwrap();
    let lock = Lock::new(dir.path().join("bench.lock"));
    baton_cycle(&lock);
    // The floor writes records of the same sizes baton writes.
    let Outcome::Acquired(lease) = lock.try_acquire().unwrap() else {
        panic!()
    };
    let held = lease.record().render().into_bytes();
    drop(lease);
    let mut free = std::fs::read(lock.path()).unwrap();
    free.truncate(held.len());
    let floor_path = dir.path().join("floor.lock");
    std::fs::write(&floor_path, &free).unwrap();
    Setup {
        _dir: dir,
        lock,
        floor_path,
        held,
        free,
    }
}

fn criterion_benches(c: &mut Criterion, s: &Setup) {
    let mut g = c.benchmark_group("acquire+release");
    g.bench_function("baton", |b| b.iter(|| baton_cycle(&s.lock)));
    let mut buf = vec![0u8; 4096];
    g.bench_function("floor", |b| {
        b.iter(|| floor_cycle(&s.floor_path, &s.held, &s.free, &mut buf, false));
    });
    g.bench_function("floor+checks", |b| {
        b.iter(|| floor_cycle(&s.floor_path, &s.held, &s.free, &mut buf, true));
    });
    g.finish();
    // The record's own share of a cycle: what a smaller record could save
    // at most. A cycle renders two records (the lease, the free marker) and
    // parses one (the free marker it finds; its own is recognised unparsed).
    let mut g = c.benchmark_group("record");
    let Outcome::Acquired(lease) = s.lock.try_acquire().unwrap() else {
        panic!("the lock is busy")
    };
    let held = lease.record().clone();
    drop(lease);
    g.bench_function("render held", |b| b.iter(|| black_box(held.render())));
    g.bench_function("parse free", |b| {
        b.iter(|| black_box(baton_lease::record::Body::parse(black_box(&s.free))))
    });
    g.finish();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn interleaved(s: &Setup) {
    const BLOCKS: usize = 30;
    const CYCLES: u32 = 500;
    let mut buf = vec![0u8; 4096];
    let (mut baton, mut floor, mut checked) = (Vec::new(), Vec::new(), Vec::new());
    let per_cycle = |t: Instant| t.elapsed().as_secs_f64() * 1e6 / f64::from(CYCLES);
    for _ in 0..BLOCKS {
        let t = Instant::now();
        for _ in 0..CYCLES {
            baton_cycle(&s.lock);
        }
        baton.push(per_cycle(t));
        let t = Instant::now();
        for _ in 0..CYCLES {
            floor_cycle(&s.floor_path, &s.held, &s.free, &mut buf, false);
        }
        floor.push(per_cycle(t));
        let t = Instant::now();
        for _ in 0..CYCLES {
            floor_cycle(&s.floor_path, &s.held, &s.free, &mut buf, true);
        }
        checked.push(per_cycle(t));
    }
    let (b, f, c) = (median(baton), median(floor), median(checked));
    println!(
        "\ninterleaved, {BLOCKS} blocks of {CYCLES} cycles each (median µs per acquire + release):"
    );
    println!("  baton         {b:7.2}");
    println!(
        "  floor         {f:7.2}   baton / floor        = {:.2}x",
        b / f
    );
    println!(
        "  floor+checks  {c:7.2}   baton / floor+checks = {:.2}x",
        b / c
    );
}

fn main() {
    let s = setup();
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    criterion_benches(&mut c, &s);
    c.final_summary();
    if !std::env::args().any(|a| a == "--list" || a == "--test") {
        interleaved(&s);
    }
}
