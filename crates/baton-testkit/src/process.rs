//! Processes as a test sees them from outside: whether one still runs, and
//! a pipe that blocks whoever writes to it. Read from `/proc` here rather
//! than through baton's own scans, so that a mistake there cannot hide a
//! failure here.

use std::os::fd::OwnedFd;

/// Whether process `pid` still runs code: any of its threads is neither a
/// zombie nor dead (a thread-group leader whose main thread exited shows `Z`
/// while its other threads work).
pub fn alive(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    tasks.filter_map(Result::ok).any(|t| {
        matches!(
            std::fs::read_to_string(t.path().join("stat")),
            Ok(s) if !matches!(
                s.rsplit(')').next().unwrap_or("").trim_start().as_bytes().first(),
                Some(b'Z' | b'X')
            )
        )
    })
}

/// A pipe filled to the brim, as `(read end, write end)`: while the read
/// end is kept and not read, every blocking write to the write end waits
/// forever. The write end is blocking, as a real reader's pipe would be.
///
/// # Panics
///
/// When the pipe cannot be made.
pub fn full_pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = rustix::pipe::pipe().expect("a pipe");
    rustix::fs::fcntl_setfl(&w, rustix::fs::OFlags::NONBLOCK).expect("a non-blocking pipe");
    let chunk = [b'x'; 4096];
    while rustix::io::write(&w, &chunk).is_ok() {}
    rustix::fs::fcntl_setfl(&w, rustix::fs::OFlags::empty()).expect("a blocking pipe");
    (r, w)
}
