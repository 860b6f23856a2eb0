//! The calling process's own figures (`process_*`), named as Prometheus's
//! client libraries name them, read from `/proc/self` and `getrlimit`.
//! Nothing here reads another process.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use baton_lease::Clock;

use super::Error;
use super::exposition::{Family, Kind};

/// The calling process's figures, as Prometheus's client libraries name
/// them (`process_*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessStats {
    /// Resident memory, in bytes.
    pub resident_memory_bytes: u64,
    /// Virtual memory, in bytes.
    pub virtual_memory_bytes: u64,
    /// User and system CPU time spent.
    pub cpu: Duration,
    /// Open file descriptors.
    pub open_fds: u64,
    /// The soft limit on open file descriptors; `None` when unlimited.
    pub max_fds: Option<u64>,
    /// When the process started, in Unix seconds.
    pub start_time_seconds: f64,
}

impl ProcessStats {
    /// Reads this process's figures from `/proc/self/stat` and
    /// `/proc/self/fd`, and its file limit with `getrlimit`. The start time
    /// is the kernel's (in clock ticks since boot) placed on the wall clock
    /// through `clock`: now on the wall, less the boot clock's time since
    /// the process started.
    ///
    /// # Errors
    ///
    /// [`Error::Proc`] when a file of `/proc/self` cannot be read or does
    /// not read as Linux writes it.
    pub fn read(clock: &dyn Clock) -> Result<Self, Error> {
        let stat_path = PathBuf::from("/proc/self/stat");
        let stat = std::fs::read_to_string(&stat_path).map_err(|source| Error::Proc {
            action: "read",
            path: stat_path.clone(),
            source,
        })?;
        let fields = stat_fields(&stat).ok_or_else(|| Error::Proc {
            action: "parse",
            path: stat_path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidData, "unexpected format"),
        })?;
        let ticks = rustix::param::clock_ticks_per_second().max(1);
        let page = rustix::param::page_size() as u64;
        let fd_path = PathBuf::from("/proc/self/fd");
        let open_fds = std::fs::read_dir(&fd_path)
            .map_err(|source| Error::Proc {
                action: "list",
                path: fd_path.clone(),
                source,
            })?
            .count() as u64;
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let since_boot = Duration::from_secs_f64(fields.start_ticks as f64 / ticks as f64);
        let age = clock.boot().saturating_sub(since_boot);
        let start = clock.wall().as_duration().as_secs_f64() - age.as_secs_f64();
        Ok(Self {
            resident_memory_bytes: fields.rss_pages.saturating_mul(page),
            virtual_memory_bytes: fields.vsize,
            cpu: Duration::from_secs_f64((fields.utime + fields.stime) as f64 / ticks as f64),
            // One of them is the directory being listed.
            open_fds: open_fds.saturating_sub(1),
            max_fds: limit.current,
            start_time_seconds: start,
        })
    }
}

/// The fields of `/proc/self/stat` the metrics use.
struct StatFields {
    utime: u64,
    stime: u64,
    start_ticks: u64,
    vsize: u64,
    rss_pages: u64,
}

/// Parses `/proc/<pid>/stat`: the command name (field 2) is in parentheses
/// and may hold spaces and parentheses, so the fields are counted from the
/// last `)`.
fn stat_fields(stat: &str) -> Option<StatFields> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name.
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |field: usize| f.get(field - 3)?.parse::<u64>().ok();
    Some(StatFields {
        utime: n(14)?,
        stime: n(15)?,
        start_ticks: n(22)?,
        vsize: n(23)?,
        rss_pages: n(24)?,
    })
}

/// The `process_*` families of `p`.
pub(crate) fn families(p: &ProcessStats) -> Vec<Family> {
    let mut cpu = Family::new(
        "process_cpu_seconds",
        "Total user and system CPU time spent, in seconds.",
        Kind::Counter,
    )
    .unit("seconds");
    cpu.push(Vec::new(), p.cpu.as_secs_f64());
    let gauges: [(&'static str, &'static str, Option<&'static str>, f64); 5] = [
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            Some("bytes"),
            p.resident_memory_bytes as f64,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            Some("bytes"),
            p.virtual_memory_bytes as f64,
        ),
        (
            "process_open_fds",
            "Number of open file descriptors.",
            None,
            p.open_fds as f64,
        ),
        (
            "process_max_fds",
            "Maximum number of open file descriptors (+Inf when unlimited).",
            None,
            p.max_fds.map_or(f64::INFINITY, |n| n as f64),
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds.",
            Some("seconds"),
            p.start_time_seconds,
        ),
    ];
    let mut out = vec![cpu];
    for (name, help, unit, v) in gauges {
        let mut f = Family::new(name, help, Kind::Gauge);
        f.unit = unit;
        f.push(Vec::new(), v);
        out.push(f);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let stat = "4242 (we ird) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    7 3 0 0 20 0 1 0 5000 123456 789 18446744073709551615";
        let f = stat_fields(stat).unwrap();
        assert_eq!(
            (f.utime, f.stime, f.start_ticks, f.vsize, f.rss_pages),
            (7, 3, 5000, 123456, 789)
        );
        assert!(stat_fields("garbage").is_none());
    }
}
