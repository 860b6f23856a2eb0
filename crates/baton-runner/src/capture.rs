//! A step's output: passed through to the runner's own standard output and
//! error, or captured through one pipe (standard output and error merged, in
//! the order written) and handed to a [`Sink`] chunk by chunk.
//!
//! The pipe is read on a thread of its own, so a step that writes a lot never
//! blocks on a full pipe while the supervisor renews the lease. The reader
//! ends when every process holding the pipe's write end is gone, which the
//! step's tree stop guarantees.

use std::io::Read;
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::thread::JoinHandle;
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

/// A running capture.
pub(crate) struct Reader {
    done: mpsc::Receiver<()>,
    handle: JoinHandle<()>,
}

/// Makes the pipe; returns the write end (for the step's stdout and stderr)
/// and the reader of the read end.
pub(crate) fn start(mut sink: Box<dyn Sink>) -> std::io::Result<(OwnedFd, Reader)> {
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    let (tx, done) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut f = std::fs::File::from(r);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => sink.chunk(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        sink.end();
        let _ = tx.send(());
    });
    Ok((w, Reader { done, handle }))
}

impl Reader {
    /// Waits for the output to end, at most `limit` (a writer that escaped
    /// the tree could otherwise hold it open forever); the sink is told the
    /// output ended either way only when the reader itself sees it end.
    pub(crate) fn finish(self, limit: Duration) {
        if self.done.recv_timeout(limit).is_ok() {
            let _ = self.handle.join();
        }
    }
}
