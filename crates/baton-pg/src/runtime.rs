//! The crate's one way to build a tokio runtime, so that none of its
//! threads ever takes a signal meant for a run.
//!
//! A run's supervisor reads SIGINT, SIGTERM, SIGHUP and SIGCHLD (and the
//! signals it passes on to its job, SIGUSR1, SIGUSR2 and SIGALRM) from a
//! `signalfd`, which sees only signals every thread of the process blocks:
//! one that a thread leaves unblocked is delivered to that thread instead,
//! where SIGCHLD is dropped (the supervisor then notices its command's end a
//! tick late) and SIGTERM ends the whole process (the run is not stopped,
//! recorded or released; the next run records it abandoned). The store's
//! threads start before any run (the shared driver, the ledger's thread, the
//! lookups of the store's host on a runtime's blocking pool), so each of
//! them blocks those signals itself as it starts
//! ([`baton_store::held::quiet_thread`]); outside a run, the signals still
//! reach the process through its main thread.
//!
//! This module owns only that: what the runtime drives, and on which
//! thread, is its callers'. Every runtime of the crate comes from here, and
//! so do those `baton store`, `baton-stress` and `baton-embed` build to
//! drive it; the daemon's own runtime quiets its threads the same way. It
//! is not a `disallowed-methods` entry: `#[tokio::test]` and
//! `#[tokio::main]` build tokio's runtimes in every suite, where no run is
//! supervised.

use tokio::runtime::Builder;

/// A runtime that drives everything on the thread that blocks on it, with
/// its I/O and time drivers on; its blocking pool's threads are quiet.
pub fn current_thread() -> Builder {
    let mut b = Builder::new_current_thread();
    b.enable_all()
        .on_thread_start(baton_store::held::quiet_thread);
    b
}

/// A runtime with `workers` worker threads named `name`, with its I/O and
/// time drivers on; its workers and its blocking pool's threads are quiet.
pub fn workers(workers: usize, name: &str) -> Builder {
    let mut b = Builder::new_multi_thread();
    b.worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .on_thread_start(baton_store::held::quiet_thread);
    b
}
