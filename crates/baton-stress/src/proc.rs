//! Who a process is and whether it still runs, from `/proc/PID/stat`.
//!
//! The overlap witness names its owner by pid *and* start time, so a pid the
//! kernel hands to a later process is never taken for the owner. "Alive"
//! here means the process exists, is not a zombie, and started when its
//! witness says; a stopped process (`T`) is alive. When `/proc` cannot be
//! read the answer is "alive", because the witness must err towards
//! reporting an overlap, never towards hiding one.

use std::io;

/// A process, as a witness names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// Its pid.
    pub(crate) pid: u32,
    /// Its start time, in clock ticks after boot (`stat` field 22).
    pub(crate) start: u64,
}

impl Owner {
    /// This process.
    ///
    /// # Errors
    ///
    /// When `/proc/self/stat` cannot be read or parsed.
    pub(crate) fn me() -> io::Result<Self> {
        let pid = std::process::id();
        match stat(pid)? {
            Some((_, start)) => Ok(Self { pid, start }),
            None => Err(io::Error::other("failed to read /proc/self/stat: no entry")),
        }
    }

    /// The witness file's content for this owner.
    pub(crate) fn render(&self) -> String {
        format!("{} {}\n", self.pid, self.start)
    }

    /// Parses [`Owner::render`]'s output; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let mut it = text.split_whitespace();
        let pid = it.next()?.parse().ok()?;
        let start = it.next()?.parse().ok()?;
        Some(Self { pid, start })
    }

    /// Whether this process still runs (see the module's definition).
    pub(crate) fn is_alive(&self) -> bool {
        match stat(self.pid) {
            Ok(None) => false,
            Ok(Some((state, start))) => !matches!(state, b'Z' | b'X' | b'x') && start == self.start,
            Err(_) => true,
        }
    }
}

/// The state letter and start time of `pid`; `None` when no process has it.
fn stat(pid: u32) -> io::Result<Option<(u8, u64)>> {
    let text = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A process that vanished between the directory lookup and the read.
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error()) => {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let bad = || io::Error::other(format!("failed to parse /proc/{pid}/stat"));
    let rest = &text[text.rfind(')').ok_or_else(bad)? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields are numbered from 1; `rest` starts at field 3 (the state).
    let state = *fields
        .first()
        .and_then(|s| s.as_bytes().first())
        .ok_or_else(bad)?;
    let start = fields
        .get(19)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    Ok(Some((state, start)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_one_is_not() {
        let me = Owner::me().unwrap();
        assert!(me.is_alive());
        assert_eq!(Owner::parse(&me.render()), Some(me));
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        let start = stat(pid).ok().flatten().map_or(0, |s| s.1);
        c.wait().unwrap();
        assert!(!Owner { pid, start }.is_alive());
        let later = Owner {
            pid: me.pid,
            start: me.start + 1,
        };
        assert!(!later.is_alive(), "a reused pid is not the owner");
    }
}
