//! A cgroup (v2) of its own for each step, where the operator delegated a
//! cgroup directory to baton (`--cgroup DIR`, `cgroup = "…"`).
//!
//! The step's first process is moved into `DIR/baton-RUN-N` before it passes
//! the gate, so everything it ever forks is a member, whatever it does with
//! process groups and sessions. Stopping the step then needs no `/proc`
//! scan: `cgroup.freeze` stops every member at once (nothing can fork past
//! it), `cgroup.kill` sends SIGKILL to all of them, and `cgroup.events` says
//! when none is left. The directory is removed when the step ends.
//!
//! This module only reads and writes the cgroup's own files; it never
//! touches a cgroup it did not create.

use std::io;
use std::path::{Path, PathBuf};

/// Refuses a delegated directory that another user owns or may write:
/// whoever can write its `cgroup.freeze` or `cgroup.kill` stops or kills
/// every step below it.
fn trusted(parent: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(parent)?;
    let me = baton_lease::trust::me();
    if meta.uid() != 0 && meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is owned by uid {}, not by this user or root: its owner could freeze or kill \
                 the step; delegate a directory of this user's",
                parent.display(),
                meta.uid()
            ),
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} may be written by its group or others (mode {:04o}): they could freeze or \
                 kill the step; `chmod go-w` it",
                parent.display(),
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// A step's cgroup.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
}

impl Cgroup {
    /// Creates `parent/name`. Fails when `parent` is not a cgroup v2
    /// directory this process may write, or the kernel lacks `cgroup.kill`
    /// (Linux 5.14).
    pub(crate) fn create(parent: &Path, name: &str) -> io::Result<Self> {
        if !parent.join("cgroup.procs").exists() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{} is not a cgroup v2 directory", parent.display()),
            ));
        }
        trusted(parent)?;
        let dir = parent.join(name);
        std::fs::create_dir(&dir)?;
        let cg = Self { dir };
        if !cg.dir.join("cgroup.kill").exists() {
            cg.remove();
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel has no cgroup.kill (Linux 5.14 or later is needed)",
            ));
        }
        Ok(cg)
    }

    /// Moves process `pid` into the cgroup.
    pub(crate) fn attach(&self, pid: u32) -> io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }

    /// The members' pids.
    pub(crate) fn pids(&self) -> io::Result<Vec<u32>> {
        let text = std::fs::read_to_string(self.dir.join("cgroup.procs"))?;
        Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
    }

    /// Whether any process is still a member (`populated 1`).
    pub(crate) fn populated(&self) -> io::Result<bool> {
        let events = std::fs::read_to_string(self.dir.join("cgroup.events"))?;
        Ok(events.lines().any(|l| l.trim() == "populated 1"))
    }

    /// Freezes every member (`cgroup.freeze`).
    pub(crate) fn freeze(&self) -> io::Result<()> {
        std::fs::write(self.dir.join("cgroup.freeze"), "1")
    }

    /// Sends SIGKILL to every member (`cgroup.kill`).
    pub(crate) fn kill(&self) -> io::Result<()> {
        std::fs::write(self.dir.join("cgroup.kill"), "1")
    }

    /// Removes the (empty) cgroup. A cgroup that still has members cannot be
    /// removed; it is left for the operator, which is harmless.
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_dir(&self.dir);
    }

    /// The cgroup's directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }
}
