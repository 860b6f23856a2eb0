//! Keeping a step's tree from outliving its supervisor.
//!
//! A runner killed with `kill -9` cannot stop its job, and a job that
//! detached a process from its group (`setsid`, a daemonising double fork)
//! leaves nothing a judge can see: the lease reads dead, and the next run
//! starts beside what survived. So the step runs inside a PID namespace of
//! its own. Its first process is a tiny init that is a copy of the runner
//! (forked, never exec'd): it asks the kernel for `SIGKILL` when the thread
//! that created it dies (`PR_SET_PDEATHSIG`), waits at the gate, starts the
//! command as its child, reaps whatever is re-parented to it, and sends the
//! command's wait status back on a pipe. When init dies, for any reason, the
//! kernel kills every process of the namespace, detached or not, before
//! init's own death is complete; the lease records init as the job's group
//! leader, so a judge sees the job alive exactly as long as anything of it
//! can run.
//!
//! Three ways, tried in order, the first the kernel accepts kept for the
//! process:
//!
//! 1. a PID namespace (`clone(CLONE_NEWPID)`), for a runner with
//!    `CAP_SYS_ADMIN` (root);
//! 2. a user namespace with a PID namespace inside it, for any other user
//!    that holds no capability, mapping only the runner's own user and
//!    group ids to themselves: the job runs as the same user with the same
//!    files, but set-user-id programs (and programs with file capabilities)
//!    do not gain privileges inside it. Never for root or a runner with
//!    capabilities, whose job would lose them;
//! 3. none, as before namespaces: the step's process group is the evidence
//!    a judge on this host reads (a killed runner's lease stays *orphaned*
//!    while the group has members, and `baton lock break --kill` stops
//!    them), but processes that left the group may outlive a killed runner
//!    unseen, and a judge on another host takes the lease after its TTL
//!    while the job may still run. The caller is told why, to raise an
//!    alert.
//!
//! A caller may ask for the third way outright (no namespace at all), for a
//! job that must see its pids as the host numbers them.
//!
//! **The watchdog.** The runner renews the lease and, with each renewal,
//! sends init the deadline by which the tree must be gone unless the lease
//! is renewed again (the boot clock's time: the last renewal plus the TTL,
//! the renewal wait and the kill grace, the latest the runner's own stop
//! may end). A runner that cannot renew cannot stop the job either when it
//! does not run at all (stopped with `SIGSTOP`, starved, swapped out), and
//! a judge on another host takes the lease once it has expired. So init,
//! which runs on, kills every process of the namespace itself at that
//! deadline: the tree is gone before the lease can be taken, whatever
//! became of the runner. An uncontained step has no such init.
//!
//! Everything here runs between `clone` and `exec` (or instead of `exec`),
//! in a copy of a multi-threaded process: only raw system calls, no
//! allocation, no lock.

#![allow(unsafe_code)] // clone, prctl, waitpid and friends in the child.

use std::io;
use std::os::fd::RawFd;
use std::sync::Mutex;

/// How a step's tree is kept from outliving the runner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// A PID namespace of its own.
    Pid,
    /// A user namespace (the runner's ids mapped to themselves) holding a
    /// PID namespace.
    UserPid,
    /// No namespace: only the command dies with the runner.
    Plain,
}

impl Method {
    /// Whether the step runs under an init of its own.
    pub(crate) fn contained(self) -> bool {
        self != Method::Plain
    }

    fn clone_flags(self) -> libc::c_long {
        let ns = match self {
            Method::Pid => libc::CLONE_NEWPID,
            Method::UserPid => libc::CLONE_NEWUSER | libc::CLONE_NEWPID,
            Method::Plain => 0,
        };
        libc::c_long::from(ns | libc::SIGCHLD)
    }
}

/// What this process learnt of the kernel's answers: the namespaces it
/// refused, and why.
#[derive(Debug, Default)]
struct Probe {
    pid: Option<String>,
    user_pid: Option<String>,
}

static PROBE: Mutex<Probe> = Mutex::new(Probe {
    pid: None,
    user_pid: None,
});

/// The methods still worth trying, best first, for a caller that wants the
/// step contained.
pub(crate) fn candidates() -> Vec<Method> {
    let p = PROBE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut out = Vec::with_capacity(2);
    if p.pid.is_none() {
        out.push(Method::Pid);
    }
    if p.user_pid.is_none() && !privileged() {
        out.push(Method::UserPid);
    }
    out
}

/// Whether this process holds any capability (root, or a service granted
/// some). Its job must keep them: inside a user namespace of its own it
/// would lose them over everything outside (other users' files, the host's
/// network), so such a runner never uses one, and runs uncontained (with
/// the alert) where the kernel refuses it a plain PID namespace.
fn privileged() -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_none_or(|caps| caps != 0)
}

/// Remembers that the kernel refused `method`, so later steps of this
/// process do not ask again.
pub(crate) fn refused(method: Method, why: String) {
    let mut p = PROBE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    match method {
        Method::Pid => p.pid = Some(why),
        Method::UserPid => p.user_pid = Some(why),
        Method::Plain => {}
    }
}

/// Why no namespace could be used, in words (after every candidate was
/// refused).
pub(crate) fn why_uncontained() -> String {
    let p = PROBE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut parts = Vec::new();
    if let Some(w) = &p.pid {
        parts.push(format!("a PID namespace: {w}"));
    }
    if let Some(w) = &p.user_pid {
        parts.push(format!("a user namespace: {w}"));
    }
    if parts.is_empty() {
        "no namespace was tried".into()
    } else {
        format!("the kernel refused {}", parts.join("; "))
    }
}

/// What a refusal of `clone` means, in words.
pub(crate) fn describe(e: &io::Error) -> String {
    let what = match e.raw_os_error() {
        Some(libc::EPERM) => {
            "not permitted (no CAP_SYS_ADMIN, or forbidden by seccomp, a security module or \
             kernel.unprivileged_userns_clone)"
        }
        Some(libc::ENOSPC) => {
            "the limit of namespaces was reached (user.max_pid_namespaces, \
             user.max_user_namespaces, or 32 nested PID namespaces)"
        }
        Some(libc::EUSERS) => "too many nested user namespaces",
        Some(libc::EINVAL | libc::ENOSYS) => "not supported by this kernel",
        Some(libc::EACCES) => "denied",
        _ => return e.to_string(),
    };
    format!("{what}: {e}")
}

/// Whether an error of `clone` means "not allowed here" (try the next way)
/// rather than a failure of the moment.
pub(crate) fn is_refusal(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EPERM | libc::EINVAL | libc::ENOSPC | libc::EUSERS | libc::ENOSYS | libc::EACCES
        )
    )
}

/// Forks this thread as `method` asks: `Ok(0)` in the child, the child's
/// pid (in the runner's namespace) in the parent.
///
/// # Safety
///
/// As `fork(2)` in a multi-threaded process: the child may only make
/// system calls until it execs or exits. For a contained method the child
/// must also not rely on glibc's cached thread id (a raw `clone` does not
/// update it): nothing below does.
pub(crate) unsafe fn fork(method: Method) -> io::Result<i32> {
    let r = if method == Method::Plain {
        // Safety: the caller's contract.
        libc::c_long::from(unsafe { libc::fork() })
    } else {
        // Safety: `clone` with no new stack behaves as `fork` (the child
        // runs on a copy of this stack); the caller's contract covers the
        // rest.
        unsafe { libc::syscall(libc::SYS_clone, method.clone_flags(), 0, 0, 0, 0) }
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    i32::try_from(r).map_err(io::Error::other)
}

/// Maps the runner's own user and group ids to themselves in the user
/// namespace of child `pid` (which waits at its gate meanwhile).
///
/// # Errors
///
/// When a map cannot be written (the kernel or a security module refuses).
pub(crate) fn write_maps(pid: u32) -> io::Result<()> {
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let dir = std::path::PathBuf::from(format!("/proc/{pid}"));
    let write = |name: &str, text: String| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| io::Error::new(e.kind(), format!("failed to write {name}: {e}")))
    };
    write("uid_map", format!("{uid} {uid} 1\n"))?;
    // An unprivileged writer may map its group only with setgroups denied.
    match write("setgroups", "deny\n".into()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    write("gid_map", format!("{gid} {gid} 1\n"))
}

/// What init writes on the error pipe once its death is tied to the
/// runner's thread, before the runner may open its gate.
pub(crate) const ARMED: u8 = b'A';

/// The descriptors init keeps.
pub(crate) struct InitPlan {
    /// Where the command's wait status goes (4 bytes, native order).
    pub(crate) status: RawFd,
    /// The read end of the status pipe, which init closes.
    pub(crate) status_read: RawFd,
    /// Where the runner sends the step's deadline (the read end, non-
    /// blocking): 8 bytes, native order, the boot clock's nanoseconds by
    /// which the lease is lost unless renewed and the job's tree must be
    /// gone (the module's watchdog); 0 for none.
    pub(crate) deadline: RawFd,
}

/// Asks the kernel for `SIGKILL` when the thread that created this process
/// dies. The runner waits for init to say it did ([`ARMED`]) before it may
/// open the gate, so a runner that died before this call never opened it:
/// init then reads end-of-file at the gate and runs nothing.
///
/// # Safety
///
/// Only in the child of `fork`.
pub(crate) unsafe fn die_with_parent() {
    // Safety: prctl with integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    }
}

/// Init's side, once the gate opened: starts the command (`start`, which
/// execs or exits) as its child, closes everything else, reaps whatever the
/// namespace hands it, sends the command's status, and exits when nothing
/// is left. Past the deadline the runner last sent, it kills every process
/// of the namespace (the module's watchdog). Never returns.
///
/// # Safety
///
/// Only in the child of [`fork`] with a contained method, after the gate
/// opened; `start` must be safe to call in the command's child.
pub(crate) unsafe fn init(plan: &InitPlan, err: RawFd, start: impl FnOnce()) -> ! {
    // Safety: raw system calls on descriptors init owns; `_exit` on every
    // path.
    unsafe {
        libc::close(plan.status_read);
        // `ps` and `top` show init as what it is, not as a second baton.
        libc::prctl(libc::PR_SET_NAME, c"baton-init".as_ptr(), 0, 0, 0);
        let job = libc::syscall(
            libc::SYS_clone,
            libc::c_long::from(libc::SIGCHLD),
            0,
            0,
            0,
            0,
        );
        if job == 0 {
            libc::close(plan.status);
            start();
            libc::_exit(127);
        }
        if job < 0 {
            let bytes = (*libc::__errno_location()).to_ne_bytes();
            libc::write(err, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(127);
        }
        close_all_but(plan.status, plan.deadline);
        // SIGCHLD is read from a descriptor, so that one wait covers the
        // namespace's deaths and the runner's deadlines. Blocked only now,
        // once the command was started with the clean mask: a child that
        // died before is reaped by the first look below.
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        let sfd = libc::signalfd(-1, &chld, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        let mut deadline: u64 = 0;
        let mut reading = plan.deadline >= 0;
        let mut fired = false;
        let mut sent = false;
        loop {
            loop {
                let mut status: libc::c_int = 0;
                let r = libc::waitpid(
                    -1,
                    &raw mut status,
                    libc::WNOHANG | libc::WUNTRACED | libc::__WALL,
                );
                if r > 0 && libc::WIFSTOPPED(status) {
                    // The command stopped (Ctrl-Z at the terminal it was
                    // handed): told to the runner, which stops with it. At
                    // most STOPS_QUEUED reports wait in the pipe, so a job
                    // that stops and continues itself over and over while
                    // the runner reads nothing never fills it: the status
                    // below always has room, and init never blocks on a
                    // write. (The runner reads them every tick and acts
                    // on the last; only a storm of stops in one tick can
                    // have one dropped.)
                    let mut queued: libc::c_int = 0;
                    if libc::c_long::from(r) == job
                        && !sent
                        && libc::ioctl(plan.status, libc::FIONREAD, &raw mut queued) == 0
                        && queued < STOPS_QUEUED * 4
                    {
                        let bytes = status.to_ne_bytes();
                        libc::write(plan.status, bytes.as_ptr().cast(), bytes.len());
                    }
                    continue;
                }
                if r > 0 {
                    if libc::c_long::from(r) == job && !sent {
                        sent = true;
                        let bytes = status.to_ne_bytes();
                        libc::write(plan.status, bytes.as_ptr().cast(), bytes.len());
                    }
                    continue;
                }
                if r == 0 {
                    break;
                }
                if *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                // ECHILD: nothing is left in the namespace.
                libc::_exit(0);
            }
            if sfd >= 0 {
                let mut info = [0u8; 128];
                while libc::read(sfd, info.as_mut_ptr().cast(), info.len()) > 0 {}
            }
            while reading {
                let mut next = [0u8; 8];
                let n = libc::read(plan.deadline, next.as_mut_ptr().cast(), next.len());
                if n == 8 {
                    deadline = u64::from_ne_bytes(next);
                } else if n < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                } else {
                    // Nothing more now, or the runner closed its end (it
                    // is gone, or the step's supervision is over): the
                    // last deadline stands.
                    reading = n < 0 && *libc::__errno_location() == libc::EAGAIN;
                    break;
                }
            }
            let now = boot_nanos();
            if deadline != 0 && !fired && now >= deadline {
                fired = true;
                // Every process of the namespace but init.
                libc::kill(-1, libc::SIGKILL);
                continue;
            }
            let timeout = if sfd < 0 {
                // No descriptor for SIGCHLD: looked for often instead.
                10
            } else if deadline != 0 && !fired {
                i32::try_from((deadline - now) / 1_000_000 + 1).unwrap_or(i32::MAX)
            } else {
                -1
            };
            let mut fds = [
                libc::pollfd {
                    fd: sfd,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: if reading { plan.deadline } else { -1 },
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            libc::poll(fds.as_mut_ptr(), 2, timeout);
        }
    }
}

/// How many reports of the command's stops may wait in the status pipe
/// (four bytes each, far below the pipe's room).
const STOPS_QUEUED: libc::c_int = 16;

/// The boot clock in nanoseconds, as the runner's deadlines count it
/// (`CLOCK_BOOTTIME`, through the one clock baton reads).
fn boot_nanos() -> u64 {
    let d = baton_lease::Clock::boot(&baton_lease::SystemClock);
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Gives this process a `/proc` of its own pid namespace when the one it
/// sees was mounted from another (a `baton` started by a contained job,
/// whose step namespace shares its runner's `/proc`; `unshare --pid
/// --fork` without `--mount-proc`): such a `/proc` names other processes
/// by this namespace's pids, so no tree could be found in it. It takes a
/// mount namespace of its own whose mounts are slaves of the one it came
/// from (mounts made outside still appear; its own, and its jobs', stay in
/// it) and mounts `proc` over `/proc` there. Call it while the process has
/// one thread (the kernel refuses a new mount namespace to a process whose
/// threads share their filesystem context). Returns whether `/proc` is now
/// this namespace's own; where the kernel refuses (no capability, a
/// container whose `/proc` is partly masked), nothing changed, and
/// [`crate::Session::start`] refuses to supervise, saying why.
pub fn own_proc() -> bool {
    if baton_lease::job::proc_is_ours() {
        return true;
    }
    // Safety: raw system calls with static C strings, changing only this
    // process's mount namespace.
    let mounted = unsafe {
        let none = std::ptr::null::<libc::c_char>();
        libc::unshare(libc::CLONE_NEWNS) == 0
            // Propagation cut first: mounting here must never show on the
            // other side.
            && libc::mount(
                none,
                c"/".as_ptr(),
                none,
                libc::MS_REC | libc::MS_SLAVE,
                std::ptr::null(),
            ) == 0
            && libc::mount(
                c"proc".as_ptr(),
                c"/proc".as_ptr(),
                c"proc".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                std::ptr::null(),
            ) == 0
    };
    mounted && baton_lease::job::proc_is_ours()
}

/// Closes every descriptor but `keep` and `also` (-1 for none).
///
/// # Safety
///
/// Only in a child of `fork` that needs no other descriptor.
unsafe fn close_all_but(keep: RawFd, also: RawFd) {
    let close = |first: libc::c_uint, last: libc::c_uint| {
        if first > last {
            return;
        }
        // Safety: close_range on this process's own table; a loop of close
        // where the kernel lacks it.
        unsafe {
            let r = libc::syscall(
                libc::SYS_close_range,
                libc::c_long::from(first),
                libc::c_long::from(last),
                0,
            );
            if r < 0 {
                for fd in first..=last.min(4096) {
                    if let Ok(fd) = i32::try_from(fd) {
                        libc::close(fd);
                    }
                }
            }
        }
    };
    let mut kept = [keep, also].map(|fd| libc::c_uint::try_from(fd).ok());
    kept.sort_unstable();
    let mut from: libc::c_uint = 0;
    for fd in kept.into_iter().flatten() {
        if fd > from {
            close(from, fd - 1);
        }
        from = fd.saturating_add(1);
    }
    close(from, libc::c_uint::MAX);
}
