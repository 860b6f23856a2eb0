//! Starting the job so that it never runs unrecorded.
//!
//! The command is spawned in a process group of its own (its pid is the group
//! id), with no lock descriptor (every descriptor baton opens is close-on-exec).
//! Between `fork` and `exec` the child stops at a *gate*: it reports its pid on
//! one pipe and waits on another. baton writes the group into the lease record
//! and only then opens the gate. If baton dies before that, the gate's write
//! end closes, the child reads end-of-file and exits without ever running the
//! command: there is no moment at which the job runs while the record does not
//! name its group, so a judge can never take a crashed baton's job for dead.
//!
//! `std`'s `spawn` returns only once the child has `exec`ed, so the spawn runs
//! on a thread of its own while the calling thread reads the pid, records it
//! and opens the gate.
//!
//! Between the report and the gate the caller may also move the child into a
//! cgroup of its own and hand it the terminal's foreground: everything the
//! job will ever fork inherits both.

#![allow(unsafe_code)] // The gate runs between fork and exec.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

/// A command held at the gate.
pub struct Gated {
    pid: u32,
    gate: std::fs::File,
    spawner: std::thread::JoinHandle<io::Result<Child>>,
}

/// What the gate decided.
pub enum Started {
    /// The command runs.
    Running(Child),
    /// The command could not be started (not found, not executable, …).
    Failed(io::Error),
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?)
}

/// Forks `cmd` in a process group of its own and stops it at the gate.
///
/// # Errors
///
/// When the pipes cannot be made, or the child failed before reaching the
/// gate (the error then comes from `spawn`).
pub fn spawn_gated(mut cmd: Command) -> io::Result<Gated> {
    let (report_r, report_w) = pipe()?;
    let (gate_r, gate_w) = pipe()?;
    let (report_w_raw, gate_r_raw, gate_w_raw) =
        (report_w.as_raw_fd(), gate_r.as_raw_fd(), gate_w.as_raw_fd());
    cmd.process_group(0);
    // Safety: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed. It makes raw system calls only
    // (getpid, write, close, read), allocates nothing and takes no lock. The
    // descriptors it names are open in the child: they were open in the parent
    // at fork (the parent keeps its copies until `spawn` returns).
    unsafe {
        cmd.pre_exec(move || {
            use std::os::fd::BorrowedFd;
            let pid = rustix::process::getpid()
                .as_raw_nonzero()
                .get()
                .to_ne_bytes();
            let report = BorrowedFd::borrow_raw(report_w_raw);
            let mut sent = 0;
            while sent < pid.len() {
                match rustix::io::write(report, &pid[sent..]) {
                    Ok(n) => sent += n,
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            rustix::io::close(report_w_raw);
            // Our copy of the gate's write end must go, or the gate could
            // never report that baton died.
            rustix::io::close(gate_w_raw);
            let gate = BorrowedFd::borrow_raw(gate_r_raw);
            let mut byte = [0u8; 1];
            loop {
                match rustix::io::read(gate, &mut byte) {
                    Ok(1) if byte[0] == b'1' => return Ok(()),
                    Ok(_) => {
                        return Err(io::Error::from_raw_os_error(
                            rustix::io::Errno::CANCELED.raw_os_error(),
                        ));
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        });
    }
    let spawner = std::thread::spawn(move || {
        let r = cmd.spawn();
        // The child holds its own copies now (or never will): ours go, so a
        // child that failed before reporting is seen as end-of-file.
        drop(report_w);
        drop(gate_r);
        r
    });
    let mut report = std::fs::File::from(report_r);
    let mut buf = [0u8; 4];
    match report.read_exact(&mut buf) {
        Ok(()) => Ok(Gated {
            pid: u32::from_ne_bytes(buf),
            gate: std::fs::File::from(gate_w),
            spawner,
        }),
        Err(_) => {
            drop(gate_w);
            match spawner.join() {
                Ok(Err(e)) => Err(e),
                Ok(Ok(mut child)) => {
                    // Cannot happen (the child reports before exec); stop it.
                    let _ = child.kill();
                    let _ = child.wait();
                    Err(io::Error::other(
                        "the command started without passing the gate",
                    ))
                }
                Err(_) => Err(io::Error::other(
                    "the thread that starts the command panicked",
                )),
            }
        }
    }
}

impl Gated {
    /// The child's pid, which is also its process group id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Lets the command run.
    pub fn open(mut self) -> Started {
        if let Err(e) = self.gate.write_all(b"1") {
            return Started::Failed(e);
        }
        drop(self.gate);
        match self.spawner.join() {
            Ok(Ok(child)) => Started::Running(child),
            Ok(Err(e)) => Started::Failed(e),
            Err(_) => Started::Failed(io::Error::other(
                "the thread that starts the command panicked",
            )),
        }
    }

    /// Never lets the command run: the child exits at the gate.
    pub fn close(self) {
        drop(self.gate);
        // OK to ignore: the spawn fails with ECANCELED, which is the point.
        let _ = self.spawner.join();
    }
}
