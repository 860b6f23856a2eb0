//! A step's output: passed through to the runner's own standard output and
//! error, or captured through one pipe (standard output and error merged, in
//! the order written) and handed to a [`Sink`] chunk by chunk.
//!
//! The pipe is read by the supervising thread itself, in the same wait that
//! watches signals and deadlines (its read end is non-blocking and polled),
//! so a step that writes a lot never blocks on a full pipe and no thread is
//! started per step. The output ends when every process holding the pipe's
//! write end is gone, which the step's tree stop guarantees.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// Where captured output goes. What to keep, how to cap it, and where to
/// write it is the sink's business.
pub trait Sink: Send {
    /// Receives the next bytes the step wrote.
    fn chunk(&mut self, bytes: &[u8]);
    /// The step's output has ended (every writer is gone).
    fn end(&mut self);
}

/// What to do with a step's standard output and error.
pub enum Output {
    /// The step writes to the runner's own standard output and error.
    Inherit,
    /// Both go through one pipe to the sink.
    Capture(Box<dyn Sink>),
}

impl std::fmt::Debug for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Inherit => "Inherit",
            Self::Capture(_) => "Capture",
        })
    }
}

/// A running capture: the pipe's read end and the sink.
pub(crate) struct Reader {
    pipe: Option<std::fs::File>,
    sink: Box<dyn Sink>,
    buf: Vec<u8>,
}

/// Makes the pipe; returns its write end (for the step's stdout and stderr)
/// and the reader of its read end.
pub(crate) fn start(sink: Box<dyn Sink>) -> std::io::Result<(OwnedFd, Reader)> {
    let (r, w) = rustix::pipe::pipe_with(
        rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK,
    )?;
    // The write end must block: a step writing to a full pipe waits for us.
    rustix::fs::fcntl_setfl(&w, rustix::fs::OFlags::empty())?;
    Ok((
        w,
        Reader {
            pipe: Some(std::fs::File::from(r)),
            sink,
            buf: vec![0u8; 64 * 1024],
        },
    ))
}

impl Reader {
    /// The descriptor to poll, while the output has not ended.
    pub(crate) fn fd(&self) -> Option<RawFd> {
        self.pipe.as_ref().map(AsRawFd::as_raw_fd)
    }

    /// Hands everything readable now to the sink; notices the end.
    pub(crate) fn pump(&mut self) {
        while let Some(p) = self.pipe.as_mut() {
            match p.read(&mut self.buf) {
                Ok(0) => {
                    self.pipe = None;
                    self.sink.end();
                }
                Ok(n) => self.sink.chunk(&self.buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.pipe = None;
                    self.sink.end();
                }
            }
        }
    }

    /// Reads to the end, waiting at most `limit` for it (a writer that
    /// escaped the tree could otherwise hold it open forever); the sink is
    /// told the output ended either way.
    pub(crate) fn finish(mut self, limit: Duration, clock: &dyn baton_lease::Clock) {
        let end = clock.boot().saturating_add(limit);
        loop {
            self.pump();
            let Some(fd) = self.fd() else {
                return;
            };
            let left = end.saturating_sub(clock.boot());
            if left.is_zero() {
                self.pipe = None;
                self.sink.end();
                return;
            }
            crate::signals::poll_one(fd, left);
        }
    }
}
