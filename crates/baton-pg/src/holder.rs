//! Who asks for a lease: the facts stored with it so that any judge can
//! decide about the holder. A judge on the same kernel and pid namespace
//! decides by evidence (is that process, with that start time, alive? does
//! its job's group have members?); any other judge by the renewal's age on
//! the server's clock. Facts that are missing only make the holder harder to
//! judge, never easier to break.

use std::time::Duration;

use baton_lease::Observer;

/// The holder's facts, stored in its lease row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderFacts {
    /// Host name.
    pub host: String,
    /// `/etc/machine-id`.
    pub machine: Option<String>,
    /// Boot id.
    pub boot: Option<String>,
    /// Inode of the holder's pid namespace.
    pub pidns: Option<u64>,
    /// The holder's pid, in its own pid namespace.
    pub pid: u32,
    /// The holder's start time (`/proc/PID/stat` field 22).
    pub pstart: Option<u64>,
    /// The process group of the holder's job, once it has one.
    pub pgid: Option<u32>,
    /// The start time of that group's leader.
    pub jstart: Option<u64>,
    /// The run this lease belongs to.
    pub run: Option<String>,
    /// The takeover grace the holder's self-fencing needs; a judge that
    /// cannot check the holder waits at least this long past the TTL.
    pub grace: Option<Duration>,
}

impl HolderFacts {
    /// The facts of the process this code runs in.
    pub fn here() -> Self {
        let o = Observer::here();
        let pid = std::process::id();
        Self {
            host: o.host,
            machine: o.machine,
            boot: o.boot,
            pidns: o.pidns,
            pid,
            pstart: o.pidns.and(baton_lease::job::process_start(pid)),
            pgid: None,
            jstart: None,
            run: None,
            grace: None,
        }
    }
}
