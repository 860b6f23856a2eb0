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
//! Where the kernel allows it, the child is the init of a PID namespace of
//! its own and dies with the runner's thread, taking every process of the
//! step with it (`crate::contain`).
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

use crate::contain::{self, InitPlan, Method};

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
    /// The status pipe's read end, when the step runs under an init of its
    /// own ([`crate::contain`]).
    status: Option<OwnedFd>,
    /// The deadline pipe's write end, to that init ([`Deadline`]).
    deadline: Deadline,
    method: Method,
}

/// Where the runner sends its init the step's deadline (`crate::contain`'s
/// watchdog): nothing when the step runs uncontained.
#[derive(Debug, Default)]
pub(crate) struct Deadline {
    to: Option<std::fs::File>,
    /// The last deadline sent, by the boot clock.
    sent: Option<std::time::Duration>,
    /// Whether a deadline had passed when a later one was sent: init may
    /// have killed the tree then (a runner stopped past it, renewing once
    /// continued).
    lapsed: bool,
}

impl Deadline {
    /// Sends `at` (the boot clock's time by which the tree must be gone).
    /// Never blocks: an init that reads nothing (stopped itself) keeps the
    /// deadlines it has.
    pub(crate) fn send(&mut self, at: std::time::Duration) {
        let now = baton_lease::Clock::boot(&baton_lease::SystemClock);
        if self.passed(now) {
            self.lapsed = true;
        }
        if let Some(to) = self.to.as_mut() {
            let nanos = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX).max(1);
            if io::Write::write(to, &nanos.to_ne_bytes()).is_ok_and(|n| n == 8) {
                self.sent = Some(at);
            }
        }
    }

    /// Whether a deadline was sent and `now` is past it, or one had passed
    /// before the next was sent: init has killed the tree, or is about to.
    pub(crate) fn passed(&self, now: std::time::Duration) -> bool {
        self.lapsed || self.sent.is_some_and(|at| now >= at)
    }
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

/// Forks `cmd` in a process group of its own and stops it at the gate:
/// inside a PID namespace whose init dies with this thread when `contain`
/// asks for it and the kernel allows it ([`crate::contain`]), otherwise as
/// a plain child. The group is init's when
/// contained (the command joins it), the command's own otherwise; either
/// way [`Gated::pid`] is the group's id and leader.
///
/// # Errors
///
/// When the pipes cannot be made, `/dev/null` cannot be opened, or `fork`
/// fails.
pub(crate) fn spawn_gated(cmd: &Command, stdio: Stdio, contain: bool) -> io::Result<Gated> {
    let null = if stdio.stdin_null {
        Some(OwnedFd::from(std::fs::File::open("/dev/null")?))
    } else {
        None
    };
    let methods = if contain {
        contain::candidates()
    } else {
        Vec::new()
    };
    for method in methods {
        match spawn_as(cmd, &stdio, null.as_ref(), method) {
            Ok(g) => {
                if method == Method::UserPid
                    && let Err(e) = contain::write_maps(g.pid)
                {
                    contain::refused(method, e.to_string());
                    g.close();
                    continue;
                }
                return Ok(g);
            }
            Err(e) if contain::is_refusal(&e) => contain::refused(method, contain::describe(&e)),
            Err(e) => return Err(e),
        }
    }
    spawn_as(cmd, &stdio, null.as_ref(), Method::Plain)
}

fn spawn_as(
    cmd: &Command,
    stdio: &Stdio,
    null: Option<&OwnedFd>,
    method: Method,
) -> io::Result<Gated> {
    let (gate_r, gate_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let status = if method.contained() {
        let (r, w) = pipe()?;
        rustix::fs::fcntl_setfl(&r, rustix::fs::OFlags::NONBLOCK)?;
        Some((r, w))
    } else {
        None
    };
    // Neither end blocks: init drains what is there, the runner never
    // waits on init.
    let deadline = if method.contained() {
        let (r, w) = pipe()?;
        rustix::fs::fcntl_setfl(&r, rustix::fs::OFlags::NONBLOCK)?;
        rustix::fs::fcntl_setfl(&w, rustix::fs::OFlags::NONBLOCK)?;
        Some((r, w))
    } else {
        None
    };
    let mut argv: Vec<*const libc::c_char> = cmd.argv.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let mut envp: Vec<*const libc::c_char> = cmd.envp.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    let candidates: Vec<*const libc::c_char> = cmd.candidates.iter().map(|c| c.as_ptr()).collect();
    let plan = ChildPlan {
        gate: gate_r.as_raw_fd(),
        gate_w: gate_w.as_raw_fd(),
        err: err_w.as_raw_fd(),
        null: null.map(AsRawFd::as_raw_fd),
        out: stdio.output.as_ref().map(AsRawFd::as_raw_fd),
        cwd: cmd.cwd.as_ref().map(|c| c.as_ptr()),
        candidates: &candidates,
        argv: argv.as_ptr(),
        envp: envp.as_ptr(),
        init: status.as_ref().map(|(r, w)| InitPlan {
            status: w.as_raw_fd(),
            status_read: r.as_raw_fd(),
            deadline: deadline.as_ref().map_or(-1, |(r, _)| r.as_raw_fd()),
        }),
    };
    // Safety: after the fork the child runs only `child`, which makes raw
    // system calls on data prepared above (never freed before the child
    // execs or exits: the parent keeps it alive until `fork` returns and
    // the child's copy is its own), allocates nothing and takes no lock.
    let pid = unsafe { contain::fork(method)? };
    if pid == 0 {
        // Safety: see above; `child` never returns.
        unsafe { child(&plan) }
    }
    // The parent sets the group too, so it exists before the gate opens
    // whichever of the two runs first (as shells do).
    // Safety: setpgid on our own child.
    unsafe {
        libc::setpgid(pid, pid);
    }
    drop(gate_r);
    drop(err_w);
    let deadline = Deadline {
        to: deadline.map(|(_r, w)| std::fs::File::from(w)),
        sent: None,
        lapsed: false,
    };
    if method.contained() {
        // Init asks for its death with this thread before anything may
        // open its gate ([`contain::ARMED`]).
        let mut byte = [0u8; 1];
        let mut errors = std::fs::File::from(err_r.try_clone()?);
        let armed = loop {
            match io::Read::read(&mut errors, &mut byte) {
                Ok(1) => break byte[0] == contain::ARMED,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                _ => break false,
            }
        };
        if !armed {
            drop(gate_w);
            let mut c = Child {
                pid: pid.unsigned_abs(),
                done: false,
                status: None,
                deadline: Deadline::default(),
                stopped: None,
            };
            let _ = c.wait();
            return Err(io::Error::other(
                "the step's init ended before it could be tied to its supervisor",
            ));
        }
    }
    Ok(Gated {
        pid: pid.unsigned_abs(),
        gate: Some(gate_w),
        errors: err_r,
        status: status.map(|(r, _w)| r),
        deadline,
        method,
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
    /// Set when the child is the init of a namespace of its own.
    init: Option<InitPlan>,
}

/// The child's side: its own group, a clean signal mask (and, as init,
/// death with the runner's thread), waits at the gate; then execs the
/// command, or, as init, starts it as its own child. Never returns.
///
/// # Safety
///
/// Only in the child of `fork`, with `plan` pointing at memory valid in it.
unsafe fn child(plan: &ChildPlan<'_>) -> ! {
    // Safety: the whole body makes async-signal-safe system calls on
    // descriptors and strings prepared by the parent; `_exit` on every path.
    unsafe {
        libc::setpgid(0, 0);
        if plan.init.is_some() {
            contain::die_with_parent();
            // Armed: the runner waits for this byte before the gate can
            // open, so a runner that dies from here on takes init along,
            // and one that died before never opens the gate.
            let armed = contain::ARMED;
            libc::write(plan.err, (&raw const armed).cast(), 1);
        }
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
        match &plan.init {
            Some(init) => contain::init(init, plan.err, || exec(plan)),
            None => exec(plan),
        }
    }
}

/// Installs the command's streams and execs it. Never returns.
///
/// # Safety
///
/// Only in the child of `fork`, with `plan` pointing at memory valid in it.
unsafe fn exec(plan: &ChildPlan<'_>) -> ! {
    // Safety: as `child`.
    unsafe {
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
    /// The child's pid, which is also its process group id (init's, when
    /// the step is contained).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// How the step is kept from outliving the runner.
    pub(crate) fn method(&self) -> Method {
        self.method
    }

    /// Where the step's deadline goes, before and after the gate opens.
    pub(crate) fn deadline(&mut self) -> &mut Deadline {
        &mut self.deadline
    }

    /// Lets the command run; says whether `exec` worked.
    pub(crate) fn open(mut self) -> Started {
        let Some(gate) = self.gate.take() else {
            return Started::Failed(io::Error::other("the gate was already used"));
        };
        let mut child = Child {
            pid: self.pid,
            done: false,
            status: self.status.take().map(std::fs::File::from),
            deadline: std::mem::take(&mut self.deadline),
            stopped: None,
        };
        let mut f = std::fs::File::from(gate);
        if let Err(e) = io::Write::write_all(&mut f, b"1") {
            drop(f);
            let _ = child.wait();
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
        if got == 4 {
            let _ = child.wait();
            return Started::Failed(io::Error::from_raw_os_error(i32::from_ne_bytes(buf)));
        }
        Started::Running(child)
    }

    /// Never lets the command run: the child exits at the gate, and is
    /// reaped.
    pub(crate) fn close(mut self) {
        drop(self.gate.take());
        let mut c = Child {
            pid: self.pid,
            done: false,
            status: None,
            deadline: Deadline::default(),
            stopped: None,
        };
        let _ = c.wait();
    }
}

/// A started command: the runner's child, which is the command itself, or
/// the init of the command's namespace, which sends the command's status on
/// a pipe when it exits and itself exits once nothing is left.
#[derive(Debug)]
pub(crate) struct Child {
    pid: u32,
    done: bool,
    status: Option<std::fs::File>,
    deadline: Deadline,
    /// The signal that last stopped the command (job control), not yet
    /// taken by [`Child::take_stop`].
    stopped: Option<i32>,
}

impl Child {
    /// Its pid (init's, when contained): the step's process group.
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// Where the step's deadline goes (`crate::contain`'s watchdog).
    pub(crate) fn deadline(&mut self) -> &mut Deadline {
        &mut self.deadline
    }

    /// The command's status if it has exited, without waiting (reaping it,
    /// or, when contained, reading what init sent; init itself is reaped
    /// here only if it died first, and otherwise as part of the tree).
    pub(crate) fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(s) = self.sent() {
            return Ok(Some(s));
        }
        let r = self.waitpid(libc::WNOHANG)?;
        Ok(r.map(|own| self.sent().unwrap_or(own)))
    }

    /// Waits for it to exit (for init: for the whole namespace to empty).
    pub(crate) fn wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let own = self.waitpid(0)?;
        Ok(self.sent().or(own))
    }

    /// The signal that stopped the command since this was last asked, if
    /// it was stopped (Ctrl-Z at a terminal, `kill -STOP`); read with the
    /// command's status by [`Child::try_wait`].
    pub(crate) fn take_stop(&mut self) -> Option<i32> {
        self.stopped.take()
    }

    /// The status init sent, once; the stops it sent before are noted.
    fn sent(&mut self) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        let pipe = self.status.as_mut()?;
        let mut buf = [0u8; 4];
        loop {
            match io::Read::read(pipe, &mut buf) {
                Ok(4) => {
                    let raw = i32::from_ne_bytes(buf);
                    if libc::WIFSTOPPED(raw) {
                        self.stopped = Some(libc::WSTOPSIG(raw));
                        continue;
                    }
                    self.status = None;
                    return Some(ExitStatus::from_raw(raw));
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Nothing yet (would block), or init died without sending
                // (four bytes are written at once, below PIPE_BUF: a status
                // is never cut).
                _ => return None,
            }
        }
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
            let r = unsafe { libc::waitpid(pid, &mut status, flags | libc::WUNTRACED) };
            if r == pid && libc::WIFSTOPPED(status) {
                // The command itself (uncontained) was stopped: noted, and
                // waited for on.
                self.stopped = Some(libc::WSTOPSIG(status));
                continue;
            }
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
