//! The uncontended latency table: N iterations of acquire + release per
//! implementation, and the floor, all in the same run (seed 003 §13.1; house
//! style: speed is measured against a floor taken in the same run).
//!
//! The floor is the bare system calls of one acquire + release cycle on an
//! existing file: open, `flock(LOCK_EX)`, `pread`, `pwrite`, unlock, close,
//! twice (once for the acquire's critical section, once for the release's).
//! No implementation can do less and still judge under a file mutex. Times
//! are read on the boot clock through `baton_lease::SystemClock`.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

use crate::algo::{self, Let};
use crate::config::{Impl, Timing};
use crate::exhibits::seed000::NoHook;
use crate::flock;
use crate::results::Latency;

const WARMUP: u32 = 50;

/// Measures every implementation in `impls`, and the floor, `n` times each.
///
/// # Errors
///
/// When a lock cannot be acquired uncontended, or a file cannot be used.
pub(crate) fn measure(
    impls: &[Impl],
    n: u32,
    root: &Path,
    timing: &Timing,
) -> Result<Vec<Latency>, String> {
    let n = n.max(1);
    let dir = root.join("latency");
    std::fs::create_dir_all(&dir)
        .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
    let floor = stats("floor", floor(&dir, n)?, None);
    let base = floor.median_us;
    let mut out = vec![floor];
    for &imp in impls {
        let d = dir.join(imp.name());
        std::fs::create_dir_all(&d)
            .map_err(|e| format!("failed to create {}: {e}", d.display()))?;
        algo::prepare_free(imp, &d, timing, 1)?;
        let a = algo::build(imp, &d, timing, 1);
        let mut samples = Vec::with_capacity(n as usize);
        for i in 0..WARMUP + n {
            let t0 = SystemClock.boot();
            let h = a
                .try_acquire(&NoHook)
                .map_err(|f| format!("{}: uncontended acquire failed: {f}", imp.name()))?
                .ok_or_else(|| format!("{}: an uncontended acquire was refused", imp.name()))?;
            match h.release() {
                Ok(Let::Released) => {}
                Ok(Let::Displaced) => {
                    return Err(format!("{}: displaced with no contender", imp.name()));
                }
                Err(f) => return Err(format!("{}: release failed: {f}", imp.name())),
            }
            if i >= WARMUP {
                samples.push(SystemClock.boot() - t0);
            }
        }
        out.push(stats(imp.name(), samples, Some(base)));
    }
    // OK to ignore: the campaign's directory is removed after it.
    let _ = std::fs::remove_dir_all(&dir);
    Ok(out)
}

fn floor(dir: &Path, n: u32) -> Result<Vec<Duration>, String> {
    let path = dir.join("floor");
    let record = [b' '; 120];
    std::fs::write(&path, record)
        .map_err(|e| format!("failed to write {}: {e}", path.display()))?;
    let io = |e: std::io::Error| format!("floor on {}: {e}", path.display());
    let mut buf = vec![0u8; 4096];
    let mut samples = Vec::with_capacity(n as usize);
    for i in 0..WARMUP + n {
        let t0 = SystemClock.boot();
        for _ in 0..2 {
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(io)?;
            flock::lock_exclusive(&f).map_err(io)?;
            f.read_at(&mut buf, 0).map_err(io)?;
            f.write_all_at(&record, 0).map_err(io)?;
            flock::unlock(&f).map_err(io)?;
            drop(f);
        }
        if i >= WARMUP {
            samples.push(SystemClock.boot() - t0);
        }
    }
    Ok(samples)
}

fn stats(name: &str, mut s: Vec<Duration>, floor: Option<f64>) -> Latency {
    s.sort_unstable();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let pick = |q: f64| {
        s.get(((s.len() as f64 - 1.0) * q).round() as usize)
            .copied()
            .map_or(0.0, us)
    };
    let median = pick(0.5);
    let mean = if s.is_empty() {
        0.0
    } else {
        s.iter().map(|d| us(*d)).sum::<f64>() / s.len() as f64
    };
    Latency {
        name: name.to_owned(),
        iterations: s.len() as u32,
        median_us: median,
        mean_us: mean,
        p99_us: pick(0.99),
        vs_floor: match floor {
            Some(f) if f > 0.0 => median / f,
            _ => 1.0,
        },
    }
}
