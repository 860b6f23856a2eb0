//! Standard output and error that never block the process writing them.
//!
//! A supervisor must renew its lease and stop its job on time whatever its
//! readers do. A stuck log collector, Docker's blocking log mode or a pipe
//! nobody drains would otherwise stop it in `write(2)` while its job runs
//! past a takeover. So everything baton prints while it may hold a lease
//! goes through here:
//!
//! - a pipe is written with `pwritev2(RWF_NOWAIT)`, which never waits
//!   whatever the descriptor's flags (the job, which may share the pipe,
//!   keeps its blocking description); on a kernel without it (before 5.8),
//!   through a descriptor of its own opened with `O_NONBLOCK` from
//!   `/proc/self/fd/N` (a new open file description);
//! - a terminal the same way, through a descriptor of its own;
//! - a socket is written with `MSG_DONTWAIT`;
//! - a regular file (or anything else) is written as it is: it does not wait
//!   on a reader (a file on a hung network filesystem would: baton's
//!   standard streams should not be there);
//! - a pipe or terminal that neither way works for (an old kernel, and
//!   another user's pipe that cannot be reopened) is written only when
//!   `poll` says it has room, a pipe buffer's worth at a time: a job
//!   writing to the same pipe between the poll and the write can still make
//!   that write wait.
//!
//! What cannot be written at once waits in a bounded buffer and goes out at
//! the next write or at [`flush`], which the process calls before it exits
//! and which waits a bounded time. Past the bound, new text is dropped whole
//! and counted; once the reader catches up, one line says how much was lost
//! (on standard error, for what standard output lost).
//! A reader that is gone (`EPIPE`) ends the stream quietly: nothing here may
//! stop a run.
//!
//! A forked child that writes here starts afresh ([`forget_pending`]): what
//! its parent had buffered is the parent's to write.

#![allow(unsafe_code)] // poll and send on raw descriptors.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Mutex;
use std::time::Duration;

use baton_lease::{Clock, SystemClock};

/// Bytes kept for a stream whose reader is slow, before text is dropped.
const LIMIT: usize = 256 * 1024;

/// How long a process that exits waits for slow readers of what it still
/// has to write.
pub const EXIT_FLUSH: Duration = Duration::from_secs(5);

/// What a pipe with room takes whole in one write.
const PIPE_BUF: usize = 4096;

/// How one stream is written.
enum Way {
    /// Not looked at yet.
    Unknown,
    /// Written as it is (a regular file, a device that is no terminal).
    Direct,
    /// A pipe, written with `RWF_NOWAIT`.
    NoWait,
    /// A private non-blocking description of the same pipe or terminal.
    Private(OwnedFd),
    /// A socket, sent with `MSG_DONTWAIT`.
    Socket,
    /// A pipe or terminal that could not be reopened: written when `poll`
    /// says it has room, `PIPE_BUF` bytes at a time. A job writing to the
    /// same pipe between the poll and the write can still make the write
    /// wait; reopening avoids even that.
    Polled,
    /// The reader is gone.
    Closed,
}

struct Stream {
    fd: RawFd,
    name: &'static str,
    way: Way,
    pending: VecDeque<u8>,
    dropped: u64,
    /// Every byte dropped since the process started (a fork's too), said
    /// or not.
    lost: u64,
}

static OUT: Mutex<Stream> = Mutex::new(Stream::new(1, "standard output"));
static ERR: Mutex<Stream> = Mutex::new(Stream::new(2, "standard error"));

fn lock(m: &'static Mutex<Stream>) -> std::sync::MutexGuard<'static, Stream> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes `bytes` to standard error without blocking.
pub fn stderr(bytes: &[u8]) {
    lock(&ERR).write(bytes);
}

/// Writes a panic's message to standard error without blocking, from the
/// panic hook the binary installs (std's own hook writes with a blocking
/// `write(2)`: with a reader that is stuck, a panicking holder would never
/// reach its abort, and its job would run on past a takeover). The stream's
/// lock may be held by the thread that panicked: it is only tried, for a
/// bounded number of turns, and the message is dropped when it stays busy.
pub fn stderr_from_panic(bytes: &[u8]) {
    for _ in 0..1000 {
        match ERR.try_lock() {
            Ok(mut s) => {
                s.write(bytes);
                return;
            }
            Err(std::sync::TryLockError::Poisoned(p)) => {
                p.into_inner().write(bytes);
                return;
            }
            Err(std::sync::TryLockError::WouldBlock) => std::thread::yield_now(),
        }
    }
}

/// Writes `bytes` to standard output without blocking. Returns how many
/// bytes were dropped because the reader was too far behind (0 normally).
pub fn stdout(bytes: &[u8]) -> usize {
    lock(&OUT).write(bytes)
}

/// How many bytes meant for standard output were dropped because its
/// reader was too far behind, in all: what a process that exits counts as
/// output not written whole. A reader that is gone (`| head`) loses
/// nothing here.
pub fn stdout_lost() -> u64 {
    lock(&OUT).lost
}

/// Writes what is buffered, waiting at most `limit` in all for slow
/// readers (both streams at once: a stuck one does not starve the other);
/// what standard output still holds then is dropped, counted
/// ([`stdout_lost`]) and said on standard error, as far as that stream
/// takes it; what standard error still holds is dropped.
pub fn flush(limit: Duration) {
    let clock = SystemClock;
    let end = clock.boot().saturating_add(limit);
    loop {
        let mut waiting = Vec::new();
        for m in [&OUT, &ERR] {
            let mut s = lock(m);
            s.push();
            if !s.pending.is_empty()
                && let Some(fd) = s.polled_fd()
            {
                waiting.push(fd);
            }
        }
        let left = end.saturating_sub(clock.boot());
        if waiting.is_empty() || left.is_zero() {
            break;
        }
        poll_any_out(&waiting, left.min(Duration::from_millis(100)));
    }
    let mut out = lock(&OUT);
    let left = out.pending.len() as u64;
    out.pending.clear();
    out.dropped += left;
    out.lost += left;
    // Once the buffer is empty, the loss is said (on standard error).
    out.push();
    drop(out);
    lock(&ERR).pending.clear();
}

/// Waits at most `limit` for any of `fds` to have room for a write.
fn poll_any_out(fds: &[RawFd], limit: Duration) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        })
        .collect();
    let ms = i32::try_from(limit.as_millis()).unwrap_or(i32::MAX).max(1);
    let n = libc::nfds_t::try_from(p.len()).unwrap_or(0);
    // Safety: `p` is a valid array of `n` pollfds on our heap.
    unsafe {
        libc::poll(p.as_mut_ptr(), n, ms);
    }
}

/// In a child just forked: forgets what the parent had buffered (the
/// parent writes it), keeping how each stream is written.
pub fn forget_pending() {
    for m in [&OUT, &ERR] {
        let mut s = lock(m);
        s.pending.clear();
        s.dropped = 0;
        s.lost = 0;
    }
}

impl Stream {
    const fn new(fd: RawFd, name: &'static str) -> Self {
        Self {
            fd,
            name,
            way: Way::Unknown,
            pending: VecDeque::new(),
            dropped: 0,
            lost: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> usize {
        if matches!(self.way, Way::Unknown) {
            self.way = way_of(self.fd);
        }
        match self.way {
            Way::Closed => return 0,
            Way::Direct => {
                direct(self.fd, bytes, &mut self.way);
                return 0;
            }
            _ => {}
        }
        if self.pending.len() + bytes.len() > LIMIT {
            self.dropped += bytes.len() as u64;
            self.lost += bytes.len() as u64;
            self.push();
            return bytes.len();
        }
        self.pending.extend(bytes);
        self.push();
        0
    }

    /// Writes what it can without blocking; once everything went out after
    /// a loss, says how much was lost.
    fn push(&mut self) {
        loop {
            if self.pending.is_empty() {
                if self.dropped == 0 {
                    return;
                }
                let note = format!(
                    "baton: {} bytes were not written to {}: it was not being read\n",
                    self.dropped, self.name
                );
                self.dropped = 0;
                if self.fd == 1 {
                    // Standard output may be data (a job's, piped on): the
                    // note goes to standard error, never into it. (The
                    // lock order is always OUT, then ERR.)
                    lock(&ERR).write(note.as_bytes());
                    return;
                }
                self.pending.extend(note.as_bytes());
            }
            let (front, _) = self.pending.as_slices();
            match self.send(front) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.way = Way::Closed;
                    self.pending.clear();
                    return;
                }
            }
        }
    }

    fn send(&self, bytes: &[u8]) -> io::Result<usize> {
        match &self.way {
            Way::Private(fd) => Ok(rustix::io::write(fd, bytes)?),
            Way::NoWait => {
                let iov = libc::iovec {
                    iov_base: bytes.as_ptr().cast_mut().cast(),
                    iov_len: bytes.len(),
                };
                // Safety: one iovec over `bytes`, which the kernel only
                // reads; offset -1 is the pipe's own (it has none).
                let n = unsafe { libc::pwritev2(self.fd, &iov, 1, -1, libc::RWF_NOWAIT) };
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            }
            Way::Socket => {
                // Safety: `send` reads `bytes.len()` bytes from `bytes` on
                // this process's standard stream.
                let n = unsafe {
                    libc::send(
                        self.fd,
                        bytes.as_ptr().cast(),
                        bytes.len(),
                        libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                    )
                };
                usize::try_from(n).map_err(|_| io::Error::last_os_error())
            }
            Way::Polled => {
                // Written only when poll says there is room, and no more than
                // the kernel writes whole into a pipe with room (PIPE_BUF).
                if !self.writable_now() {
                    return Err(io::ErrorKind::WouldBlock.into());
                }
                // Safety: as in `way_of`.
                let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(self.fd) };
                Ok(rustix::io::write(fd, &bytes[..bytes.len().min(PIPE_BUF)])?)
            }
            Way::Unknown | Way::Direct | Way::Closed => Err(io::ErrorKind::BrokenPipe.into()),
        }
    }

    fn polled_fd(&self) -> Option<RawFd> {
        match &self.way {
            Way::Private(fd) => Some(fd.as_raw_fd()),
            Way::Socket | Way::Polled | Way::NoWait => Some(self.fd),
            Way::Unknown | Way::Direct | Way::Closed => None,
        }
    }

    fn writable_now(&self) -> bool {
        self.polled_fd().is_some_and(|fd| poll_out(fd, 0))
    }
}

/// Whether `fd` has room for a write, waiting at most `ms` milliseconds.
fn poll_out(fd: RawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLOUT,
        revents: 0,
    };
    // Safety: one valid pollfd on our stack.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && p.revents & libc::POLLOUT != 0
}

/// How to write descriptor `fd` without blocking.
fn way_of(fd: RawFd) -> Way {
    // Safety: `fd` is one of this process's standard streams; it is only
    // looked at here.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let Ok(st) = rustix::fs::fstat(borrowed) else {
        return Way::Closed;
    };
    let kind = rustix::fs::FileType::from_raw_mode(st.st_mode);
    match kind {
        rustix::fs::FileType::Socket => Way::Socket,
        rustix::fs::FileType::Fifo if nowait_works(fd) => Way::NoWait,
        rustix::fs::FileType::Fifo | rustix::fs::FileType::CharacterDevice => {
            let flags = rustix::fs::OFlags::WRONLY
                | rustix::fs::OFlags::NONBLOCK
                | rustix::fs::OFlags::CLOEXEC
                | rustix::fs::OFlags::NOCTTY;
            match rustix::fs::open(
                format!("/proc/self/fd/{fd}"),
                flags,
                rustix::fs::Mode::empty(),
            ) {
                Ok(own) => Way::Private(own),
                // A pipe whose reader is gone cannot be opened for writing.
                Err(rustix::io::Errno::NXIO) => Way::Closed,
                // Not ours to reopen (another user's pipe): written only when
                // poll says it has room.
                Err(_) => Way::Polled,
            }
        }
        _ => Way::Direct,
    }
}

/// Whether the kernel takes `RWF_NOWAIT` writes on pipe `fd`: a write of
/// nothing says so without writing.
fn nowait_works(fd: RawFd) -> bool {
    let byte = 0u8;
    let iov = libc::iovec {
        iov_base: (&raw const byte).cast_mut().cast(),
        iov_len: 0,
    };
    // Safety: an iovec of length 0; nothing is read or written.
    let n = unsafe { libc::pwritev2(fd, &iov, 1, -1, libc::RWF_NOWAIT) };
    n >= 0
        || !matches!(
            io::Error::last_os_error().raw_os_error(),
            Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS)
        )
}

/// Writes `bytes` to a descriptor that does not wait on a reader.
fn direct(fd: RawFd, mut bytes: &[u8], way: &mut Way) {
    // Safety: as in `way_of`.
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    while !bytes.is_empty() {
        match rustix::io::write(borrowed, bytes) {
            Ok(0) => return,
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => {
                *way = Way::Closed;
                return;
            }
        }
    }
}
