//! Facts about processes, read from the kernel: who this process is (host,
//! machine id, boot id, pid namespace, pid, start time, process group), and
//! what `/proc/PID/stat` and `kill(-PGID, 0)` say about another one.
//!
//! It reports and never judges: "is that holder dead?" is
//! [`crate::liveness`]'s question, answered from these facts. It never sends a
//! signal other than the null signal, except through [`signal_group`], which
//! only a caller that has verified the group's owner may use.

use std::io;

/// What `/proc/PID/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    /// Field 3: `R`, `S`, `D`, `T`, `Z` (zombie), `X` (dead), …
    pub(crate) state: u8,
    /// Field 4: the parent.
    pub(crate) ppid: u32,
    /// Field 5: the process group.
    pub(crate) pgrp: u32,
    /// Field 22: start time in clock ticks after boot.
    pub(crate) start: u64,
}

/// Parses the content of `/proc/PID/stat`. The command name (field 2) may hold
/// spaces and parentheses, so fields are counted after the *last* `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?.bytes().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Fields 6..=21 lie between the process group (5) and the start time (22).
    let start = fields.nth(16)?.parse().ok()?;
    Some(Stat {
        state,
        ppid,
        pgrp,
        start,
    })
}

/// Reads `/proc/PID/stat`; `Ok(None)` when no such process exists.
pub(crate) fn stat(pid: u32) -> io::Result<Option<Stat>> {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => parse_stat(&text).map(Some).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unreadable /proc/{pid}/stat"),
            )
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error()) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether process `pid` exists (`kill(pid, 0)`); `EPERM` means it does,
/// someone else's.
pub(crate) fn exists(pid: u32) -> io::Result<bool> {
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(false);
    };
    match rustix::process::test_kill_process(p) {
        Ok(()) | Err(rustix::io::Errno::PERM) => Ok(true),
        Err(rustix::io::Errno::SRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether process `pid`, whose `/proc/PID/stat` shows `state`, still runs
/// code. Any state but `Z`/`X` does; a zombie does only when it is a thread
/// group's leader whose main thread exited (`pthread_exit`, the raw `exit`
/// system call) while another of its threads still works: `/proc/PID/stat`
/// then shows `Z`, and only `/proc/PID/task` tells the truth.
pub(crate) fn runs(pid: u32, state: u8) -> io::Result<bool> {
    if !is_dead_state(state) {
        return Ok(true);
    }
    let tasks = match std::fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(t) => t,
        Err(e) if gone(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    for task in tasks {
        let task = task?;
        match std::fs::read_to_string(task.path().join("stat")) {
            Ok(text) => match parse_stat(&text) {
                Some(t) if !is_dead_state(t.state) => return Ok(true),
                Some(_) => {}
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("unreadable {}/stat", task.path().display()),
                    ));
                }
            },
            Err(e) if gone(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// `Z` (zombie) or `X` (dead): the state of a task that runs no more code.
pub(crate) fn is_dead_state(state: u8) -> bool {
    matches!(state, b'Z' | b'X' | b'x')
}

/// Whether an error reading `/proc` means the process (or thread) is gone.
fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
        || e.raw_os_error() == Some(rustix::io::Errno::SRCH.raw_os_error())
}

/// The real user id of process `pid` (`Uid:` in `/proc/PID/status`);
/// `Ok(None)` when it is gone.
pub(crate) fn uid(pid: u32) -> io::Result<Option<u32>> {
    let text = match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(t) => t,
        Err(e) if gone(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    text.lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_ascii_whitespace().next()?.parse().ok())
        .map(Some)
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("no Uid: in /proc/{pid}/status"),
            )
        })
}

/// The executable of process `pid` (`/proc/PID/exe`), as a record would
/// carry it; `Ok(None)` when it is gone.
pub(crate) fn exe(pid: u32) -> io::Result<Option<String>> {
    match std::fs::read_link(format!("/proc/{pid}/exe")) {
        Ok(p) => Ok(Some(sanitize(&p.to_string_lossy()))),
        Err(e) if gone(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Whether any process in group `pgid` still runs code. `kill(-pgid, 0)`
/// answers first (`ESRCH`: empty; `EPERM`: a member exists but belongs to
/// someone else); when it finds members, `/proc` is scanned so that a group
/// of zombies nobody reaps (a container whose init does not reap) counts as
/// empty, while a zombie leader whose other threads still run counts as a
/// member ([`runs`]).
pub(crate) fn group_has_members(pgid: u32) -> io::Result<bool> {
    let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(false);
    };
    match rustix::process::test_kill_process_group(pid) {
        Ok(()) | Err(rustix::io::Errno::PERM) => {}
        Err(rustix::io::Errno::SRCH) => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    // The kernel says the group has members. If /proc shows some and all of
    // them are zombies, it is empty in effect; if /proc shows none at all, it
    // hides them (hidepid), and the kernel's word stands.
    let mut seen = false;
    for entry in std::fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(member) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        match stat(member) {
            Ok(Some(s)) if s.pgrp == pgid => {
                // A process with any live thread is a live member.
                if runs(member, s.state).unwrap_or(true) {
                    return Ok(true);
                }
                seen = true;
            }
            Ok(_) => {}
            // A process we cannot read may be a member: count it as one.
            Err(_) => return Ok(true),
        }
    }
    Ok(!seen)
}

/// The real user ids of the members of group `pgid` that still run code,
/// from a scan of `/proc`, without repeats. `Ok(None)` when they cannot all
/// be known: a process that could be a member cannot be read, or the kernel
/// says the group has members that `/proc` does not show (`hidepid`).
pub(crate) fn group_member_uids(pgid: u32) -> io::Result<Option<Vec<u32>>> {
    let mut uids = Vec::new();
    for entry in std::fs::read_dir("/proc")? {
        let name = entry?.file_name();
        let Some(member) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        match stat(member) {
            Ok(Some(s)) if s.pgrp == pgid => {
                if !runs(member, s.state).unwrap_or(true) {
                    continue;
                }
                match uid(member) {
                    Ok(Some(u)) => uids.push(u),
                    // It ended meanwhile.
                    Ok(None) => {}
                    Err(_) => return Ok(None),
                }
            }
            Ok(_) => {}
            Err(_) => return Ok(None),
        }
    }
    if uids.is_empty() {
        // Nothing seen: an empty group, or one /proc hides; either way no
        // owner is known.
        return Ok(None);
    }
    uids.sort_unstable();
    uids.dedup();
    Ok(Some(uids))
}

/// The name of user `uid` in `/etc/passwd`, when it has one there.
pub(crate) fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        let id: u32 = f.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| sanitize(name))
    })
}

/// Sends `signal` to every process in group `pgid`. `Ok(false)` when the group
/// is already empty. Groups 0 and 1 and this process's own group are refused
/// (`EINVAL`): `kill(-1, …)` would reach every process the caller may signal,
/// and no record may make baton signal itself.
pub(crate) fn signal_group(pgid: u32, signal: rustix::process::Signal) -> io::Result<bool> {
    if pgid <= 1 || pgid == current_group() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    let Some(pid) = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(false);
    };
    match rustix::process::kill_process_group(pid, signal) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::SRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Sends `signal` to process `pid`. `Ok(false)` when it no longer exists.
/// Pids 0 and 1 and this process are refused (`EINVAL`).
pub(crate) fn signal_process(pid: u32, signal: rustix::process::Signal) -> io::Result<bool> {
    if pid <= 1 || pid == std::process::id() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process {pid}"),
        ));
    }
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return Ok(false);
    };
    match rustix::process::kill_process(p, signal) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::SRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Who this process is, as another process on this machine would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SelfFacts {
    pub(crate) pid: u32,
    pub(crate) host: String,
    pub(crate) machine: Option<String>,
    pub(crate) boot: Option<String>,
    pub(crate) pidns: Option<u64>,
    pub(crate) start: Option<u64>,
    pub(crate) exe: Option<String>,
    pub(crate) uid: u32,
}

/// Whether `/proc` is this pid namespace's own: mounted from another one,
/// it names other processes by this namespace's pids.
pub(crate) fn proc_is_ours() -> bool {
    std::fs::read_to_string("/proc/self/stat").is_ok_and(|t| {
        t.split_ascii_whitespace()
            .next()
            .and_then(|p| p.parse::<u32>().ok())
            == Some(std::process::id())
    })
}

/// Reads this process's facts. Missing facts are `None`; the judge then treats
/// a record that lacks them as one it cannot check.
pub(crate) fn self_facts() -> SelfFacts {
    let pid = std::process::id();
    let host = sanitize(&rustix::system::uname().nodename().to_string_lossy());
    let machine = read_trimmed("/etc/machine-id")
        .or_else(|| read_trimmed("/var/lib/dbus/machine-id"))
        .map(|s| sanitize(&s));
    let boot = read_trimmed("/proc/sys/kernel/random/boot_id").map(|s| sanitize(&s));
    // /proc must be this pid namespace's own: mounted from another one, it
    // would name other processes by our pids. Then no pid here can be judged.
    let own_proc = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|t| {
            let seen: u32 = t.split_ascii_whitespace().next()?.parse().ok()?;
            (seen == pid).then(|| parse_stat(&t)).flatten()
        });
    let (pidns, start) = match own_proc {
        Some(me) => {
            use std::os::unix::fs::MetadataExt;
            let ns = std::fs::metadata("/proc/self/ns/pid").ok().map(|m| m.ino());
            (ns, Some(me.start))
        }
        None => (None, None),
    };
    let exe = std::fs::read_link("/proc/self/exe")
        .ok()
        .map(|p| sanitize(&p.to_string_lossy()));
    SelfFacts {
        pid,
        host,
        machine,
        boot,
        pidns,
        start,
        exe,
        uid: rustix::process::getuid().as_raw(),
    }
}

/// Whether signal `n` is ignored (`SIG_IGN`) in this process.
#[allow(unsafe_code)] // One sigaction query, which changes nothing.
pub(crate) fn ignored(n: i32) -> bool {
    // Safety: sigaction with a null new action only reads the disposition
    // into a zeroed struct on our stack.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(n, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// A handler that does nothing: what a write past `RLIMIT_FSIZE` raises is
/// caught here, so that the write fails with `EFBIG` instead.
extern "C" fn nothing(_: libc::c_int) {}

/// Catches `SIGXFSZ` with a handler that does nothing. A write past the
/// file-size limit then fails with `EFBIG`, an I/O error like a full disk's,
/// where the signal's default action would kill the process without a word
/// (a supervisor killed mid-run, its contained job with it). A handler, not
/// `SIG_IGN`: a caught signal is reset to its default in every program this
/// process executes, so jobs keep the disposition they would have had.
#[allow(unsafe_code)] // One sigaction(2), installing an empty handler.
pub(crate) fn catch_file_size_signal() -> io::Result<()> {
    // Safety: the handler is an empty `extern "C"` function, which is
    // async-signal-safe; the struct is zeroed (an empty mask) on our stack.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        if libc::sigaction(libc::SIGXFSZ, &action, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// This process's process group, as this pid namespace numbers it: 0 when
/// the group's leader lives in an ancestor namespace (a process started by
/// `unshare --pid --fork`, or by a container's runtime, without a session
/// of its own). No group this namespace can name is then ours.
///
/// `rustix::process::getpgrp` cannot be used: it asserts a positive id (a
/// panic in a debug build, a zero `Pid` in a release one), and a panic here
/// would stop a supervisor in the middle of stopping its job.
#[allow(unsafe_code)] // One getpgrp(2), which cannot fail.
pub(crate) fn current_group() -> u32 {
    // Safety: getpgrp takes nothing and only returns a number.
    let pgid = unsafe { libc::getpgrp() };
    pgid.unsigned_abs()
}

fn read_trimmed(path: &str) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_owned())
}

/// Makes a value safe for a record field: printable ASCII without spaces or
/// `=`, at most 128 bytes; anything else becomes `_`.
pub(crate) fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .take(128)
        .map(|c| {
            if c.is_ascii_graphic() && c != '=' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".to_owned() } else { out }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_is_parsed_after_the_last_parenthesis() {
        let line = "4242 (evil) name) (x) S 1 4242 4242 0 -1 4194304 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 50";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                state: b'S',
                ppid: 1,
                pgrp: 4242,
                start: 987_654
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        assert_eq!(parse_stat("1 (x) Z 1 2"), None);
    }

    #[test]
    fn this_process_is_alive_and_its_start_time_is_stable() {
        let me = self_facts();
        let s = stat(me.pid).unwrap().unwrap();
        assert_eq!(Some(s.start), me.start);
        assert_ne!(s.state, b'Z');
        assert!(group_has_members(current_group()).unwrap());
    }

    #[test]
    fn a_pid_that_cannot_exist_has_no_stat() {
        // Linux's pid_max is at most 2^22.
        assert_eq!(stat(4_194_304 + 17).unwrap(), None);
        assert!(!group_has_members(4_194_304 + 17).unwrap());
    }

    #[test]
    fn this_processs_group_is_owned_by_this_user() {
        let me = rustix::process::getuid().as_raw();
        let uids = group_member_uids(current_group()).unwrap().unwrap();
        assert!(uids.contains(&me), "{uids:?}");
        assert_eq!(group_member_uids(4_194_304 + 17).unwrap(), None);
        assert_eq!(user_name(0).as_deref(), Some("root"));
    }

    #[test]
    fn sanitize_keeps_records_one_line() {
        assert_eq!(sanitize("a b=c\n"), "a_b_c_");
        assert_eq!(sanitize(""), "_");
    }
}
