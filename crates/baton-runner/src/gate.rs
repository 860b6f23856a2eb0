//! Starting a step's command so that it never runs unrecorded.
//!
//! The command is forked into a process group of its own (its pid is the
//! group id), with no descriptor of the runner's (every descriptor baton
//! opens is close-on-exec). Between `fork` and `exec` the child stops at a
//! *gate*: it waits to read one byte from a pipe. The runner knows the pid
//! from `fork` itself; it writes the group into the lease record, may move
//! the child into a cgroup and hand it the terminal, and only then opens the
//! gate. If the runner dies before that, the gate's write end closes, the
//! child reads end-of-file and exits without ever running the command: there
//! is no moment at which the job runs while the record does not name its
//! group, so a judge can never take a crashed runner's job for dead.
//!
//! Whether `exec` worked comes back on a second close-on-exec pipe: nothing
//! (end-of-file) when it did, the error number when every candidate path
//! failed. Everything the child needs (paths, arguments, environment, the
//! descriptors to install) is prepared before the fork, so the child only
//! makes system calls: it may run beside other threads of the runner.

#![allow(unsafe_code)] // fork, dup2, execve and friends between fork and exec.

use std::ffi::{CString, OsStr, OsString};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::process::ExitStatus;

/// What a step's standard streams are.
pub(crate) struct Stdio {
    /// Standard input: the runner's own, or `/dev/null`.
    pub(crate) stdin_null: bool,
    /// Standard output and error, when captured: the pipe's write end.
    pub(crate) output: Option<OwnedFd>,
}

/// A command, prepared for the gate.
pub(crate) struct Command {
    candidates: Vec<CString>,
    argv: Vec<CString>,
    envp: Vec<CString>,
    cwd: Option<CString>,
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} contains a NUL byte", s.to_string_lossy()),
        )
    })
}

impl Command {
    /// `program` with `args`, the runner's environment with `env` on top,
    /// in `cwd`.
    pub(crate) fn new(
        program: &OsStr,
        args: &[OsString],
        env: &[(OsString, OsString)],
        cwd: Option<&PathBuf>,
    ) -> io::Result<Self> {
        let mut vars: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(k, _)| !env.iter().any(|(e, _)| e == k))
            .collect();
        vars.extend(env.iter().cloned());
        let path = vars.iter().find(|(k, _)| k == "PATH").map_or_else(
            || OsString::from("/usr/local/bin:/usr/bin:/bin"),
            |(_, v)| v.clone(),
        );
        let candidates = if program.as_bytes().contains(&b'/') {
            vec![cstring(program)?]
        } else {
            std::env::split_paths(&path)
                .map(|d| {
                    let dir = if d.as_os_str().is_empty() {
                        PathBuf::from(".")
                    } else {
                        d
                    };
                    cstring(dir.join(program).as_os_str())
                })
                .collect::<io::Result<_>>()?
        };
        let mut argv = vec![cstring(program)?];
        for a in args {
            argv.push(cstring(a)?);
        }
        let envp = vars
            .iter()
            .map(|(k, v)| {
                let mut kv = k.clone();
                kv.push("=");
                kv.push(v);
                cstring(&kv)
            })
            .collect::<io::Result<_>>()?;
        let cwd = cwd.map(|c| cstring(c.as_os_str())).transpose()?;
        Ok(Self {
            candidates,
            argv,
            envp,
            cwd,
        })
    }
}

/// A command held at the gate.
pub(crate) struct Gated {
    pid: u32,
    gate: Option<OwnedFd>,
    errors: OwnedFd,
}

/// What the gate decided.
pub(crate) enum Started {
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
/// When the pipes cannot be made, `/dev/null` cannot be opened, or `fork`
/// fails.
pub(crate) fn spawn_gated(cmd: &Command, stdio: Stdio) -> io::Result<Gated> {
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let null = if stdio.stdin_null {
        Some(OwnedFd::from(std::fs::File::open("/dev/null")?))
    } else {
        None
    };
    let mut argv: Vec<*const libc::c_char> = cmd.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = cmd.envp.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    let candidates: Vec<*const libc::c_char> = cmd.candidates.iter().map(|c| c.as_ptr()).collect();
    let cwd = cmd.cwd.as_ref().map(|c| c.as_ptr());
    let gate_fd = gate_r.as_raw_fd();
    let gate_w_fd = gate_w.as_raw_fd();
    let err_fd = err_w.as_raw_fd();
    let null_fd = null.as_ref().map(AsRawFd::as_raw_fd);
    let out_fd = stdio.output.as_ref().map(AsRawFd::as_raw_fd);
    // Safety: after fork the child runs only `child`, which makes raw system
    // calls on data prepared above (never freed before the child execs or
    // exits: the parent keeps it alive until `fork` returns and the child's
    // copy is its own), allocates nothing and takes no lock.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // Safety: see above; `child` never returns.
        unsafe {
            child(ChildPlan {
                gate: gate_fd,
                gate_w: gate_w_fd,
                err: err_fd,
                null: null_fd,
                out: out_fd,
                cwd,
                candidates: &candidates,
                argv: argv.as_ptr(),
                envp: envp.as_ptr(),
            })
        }
    }
    // The parent sets the group too, so it exists before the gate opens
    // whichever of the two runs first (as shells do).
    // Safety: setpgid on our own child.
    unsafe {
        libc::setpgid(pid, pid);
    }
    drop(gate_r);
    drop(err_w);
    drop(null);
    drop(stdio.output);
    Ok(Gated {
        pid: pid.unsigned_abs(),
        gate: Some(gate_w),
        errors: err_r,
    })
}

/// What the child needs between fork and exec, as raw values.
struct ChildPlan<'a> {
    gate: RawFd,
    gate_w: RawFd,
    err: RawFd,
    null: Option<RawFd>,
    out: Option<RawFd>,
    cwd: Option<*const libc::c_char>,
    candidates: &'a [*const libc::c_char],
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
}

/// The child's side: its own group, a clean signal mask, waits at the gate,
/// installs its streams, execs. Never returns.
///
/// # Safety
///
/// Only in the child of `fork`, with `plan` pointing at memory valid in it.
unsafe fn child(plan: ChildPlan<'_>) -> ! {
    // Safety: the whole body makes async-signal-safe system calls on
    // descriptors and strings prepared by the parent; `_exit` on every path.
    unsafe {
        libc::setpgid(0, 0);
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        // Rust's runtime ignores SIGPIPE for itself; the job gets the default.
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::close(plan.gate_w);
        let mut byte = 0u8;
        loop {
            let n = libc::read(plan.gate, (&raw mut byte).cast(), 1);
            if n == 1 && byte == b'1' {
                break;
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            // The gate closed: the runner decided (or died) before the
            // command may run. Nothing runs.
            libc::_exit(125);
        }
        libc::close(plan.gate);
        if let Some(n) = plan.null {
            install(n, 0);
        }
        if let Some(o) = plan.out {
            install(o, 1);
            install(o, 2);
        }
        if let Some(c) = plan.cwd
            && libc::chdir(c) != 0
        {
            report(plan.err, *libc::__errno_location());
        }
        let mut errno = libc::ENOENT;
        for &c in plan.candidates {
            libc::execve(c, plan.argv, plan.envp);
            let e = *libc::__errno_location();
            // As execvp: a file that exists but failed beats one not found.
            if e != libc::ENOENT && e != libc::ENOTDIR {
                errno = e;
                if e != libc::EACCES {
                    break;
                }
            }
        }
        report(plan.err, errno);
    }
}

/// Makes `fd` the child's descriptor `target`, open across `exec`.
///
/// # Safety
///
/// Only in the child of `fork`.
unsafe fn install(fd: RawFd, target: RawFd) {
    // Safety: dup2 and fcntl on descriptors the child owns.
    unsafe {
        if fd == target {
            // dup2 onto itself would keep close-on-exec.
            libc::fcntl(fd, libc::F_SETFD, 0);
        } else {
            libc::dup2(fd, target);
        }
    }
}

/// Writes `errno` on the error pipe and exits.
///
/// # Safety
///
/// Only in the child of `fork`.
unsafe fn report(fd: RawFd, errno: i32) -> ! {
    let bytes = errno.to_ne_bytes();
    // Safety: a write of 4 bytes from our stack, then _exit.
    unsafe {
        libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::_exit(127)
    }
}

impl Gated {
    /// The child's pid, which is also its process group id.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Lets the command run; says whether `exec` worked.
    pub(crate) fn open(mut self) -> Started {
        let Some(gate) = self.gate.take() else {
            return Started::Failed(io::Error::other("the gate was already used"));
        };
        let mut f = std::fs::File::from(gate);
        if let Err(e) = io::Write::write_all(&mut f, b"1") {
            drop(f);
            self.reap();
            return Started::Failed(e);
        }
        drop(f);
        let mut buf = [0u8; 4];
        let mut got = 0;
        let mut errors = std::fs::File::from(self.errors);
        loop {
            match io::Read::read(&mut errors, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    if got == buf.len() {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Started::Failed(e),
            }
        }
        let child = Child {
            pid: self.pid,
            done: false,
        };
        if got == 4 {
            let mut c = child;
            let _ = c.wait();
            return Started::Failed(io::Error::from_raw_os_error(i32::from_ne_bytes(buf)));
        }
        Started::Running(child)
    }

    /// Never lets the command run: the child exits at the gate, and is
    /// reaped.
    pub(crate) fn close(mut self) {
        drop(self.gate.take());
        self.reap();
    }

    fn reap(&self) {
        let mut c = Child {
            pid: self.pid,
            done: false,
        };
        let _ = c.wait();
    }
}

/// A started command.
#[derive(Debug)]
pub(crate) struct Child {
    pid: u32,
    done: bool,
}

impl Child {
    /// Its pid.
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// Its status if it has exited (reaping it), without waiting.
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.waitpid(libc::WNOHANG)
    }

    /// Waits for it to exit.
    pub(crate) fn wait(&mut self) -> io::Result<Option<ExitStatus>> {
        self.waitpid(0)
    }

    fn waitpid(&mut self, flags: i32) -> io::Result<Option<ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        if self.done {
            return Err(io::Error::other("the command was already reaped"));
        }
        let pid = i32::try_from(self.pid).map_err(io::Error::other)?;
        loop {
            let mut status = 0;
            // Safety: waitpid on our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, flags) };
            if r == pid {
                self.done = true;
                return Ok(Some(ExitStatus::from_raw(status)));
            }
            if r == 0 {
                return Ok(None);
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
    }
}
