//! Runs in processes of their own: a scheduler that starts several jobs at
//! once forks one worker per run, so that each run has its own subreaper
//! and its own signal handlers (a [`crate::Session`] is one per process).
//!
//! The pool is driven from a single-threaded process (forking a process
//! with other threads would leave the child with locks nobody will ever
//! release); it refuses to fork otherwise, and the caller then runs jobs one
//! after another in its own process. The parent blocks SIGCHLD, SIGINT,
//! SIGTERM and SIGHUP and waits for them with `sigtimedwait`: it sleeps
//! until a worker ends or a signal comes, passes SIGINT, SIGTERM and SIGHUP
//! on to every worker, and never polls. It blocks and drops the signals a
//! run passes to its job ([`crate::signals::PASSED`]): they are the job's,
//! sent to each worker by whoever means them, and their default action
//! would end the parent and lose its report. A worker starts with the parent's
//! signal mask restored, runs its closure, and exits with the code the
//! closure returns.

#![allow(unsafe_code)] // fork, sigprocmask and sigtimedwait.

use std::collections::HashMap;
use std::io;

/// How a worker ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnd {
    /// It exited with this code.
    Exited(u8),
    /// It died of this signal (a crash, or `kill -9`).
    Signaled(i32),
}

/// Workers running at once, at most `max`.
pub struct Pool<K> {
    max: usize,
    running: HashMap<libc::pid_t, K>,
    done: Vec<(K, WorkerEnd)>,
    old_mask: libc::sigset_t,
    forwarded: Option<i32>,
}

/// Whether this process has exactly one thread.
pub fn single_threaded() -> bool {
    std::fs::read_dir("/proc/self/task").is_ok_and(|d| d.count() == 1)
}

fn caught() -> libc::sigset_t {
    // Safety: sigemptyset/sigaddset initialise and fill a set on our stack.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGCHLD, libc::SIGINT, libc::SIGTERM, libc::SIGHUP]
            .into_iter()
            .chain(crate::signals::PASSED)
        {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

impl<K> Pool<K> {
    /// A pool of at most `max` workers.
    ///
    /// # Errors
    ///
    /// When this process has more than one thread (fork would be unsafe).
    pub fn new(max: usize) -> io::Result<Self> {
        if !single_threaded() {
            return Err(io::Error::other(
                "workers are forked only from a single-threaded process",
            ));
        }
        // Every fork copies the page tables of what is mapped: freed heap
        // goes back to the system first (a tick that just read a large
        // configuration has freed most of what it used), and a heap still
        // large is folded into huge pages.
        // Safety: malloc_trim only releases free memory of this process.
        unsafe {
            libc::malloc_trim(0);
        }
        crate::hugepages::fold_heap();
        let set = caught();
        // Safety: `set` and `old` are valid signal sets; blocking signals in
        // the only thread makes them wait for sigtimedwait.
        let old_mask = unsafe {
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
            old
        };
        Ok(Self {
            max: max.max(1),
            running: HashMap::new(),
            done: Vec::new(),
            old_mask,
            forwarded: None,
        })
    }

    /// Starts `f` in a worker once a slot is free; the worker's pid. The
    /// worker exits with the code `f` returns; nothing it does returns to
    /// the caller.
    ///
    /// # Errors
    ///
    /// When `fork` fails (the caller may then run `f` itself).
    pub fn spawn(&mut self, key: K, f: impl FnOnce() -> u8) -> io::Result<u32> {
        while self.running.len() >= self.max {
            self.wait_one();
        }
        if let Some(s) = self.forwarded {
            // Asked to stop: no new run starts.
            return Err(io::Error::other(format!("stopped by signal {s}")));
        }
        // Safety: this process is single-threaded (checked in `new`, and the
        // pool creates no thread), so the child may run any code.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(io::Error::last_os_error());
        }
        if pid == 0 {
            // Safety: restoring the mask saved in `new`.
            unsafe {
                libc::sigprocmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
            }
            crate::console::forget_pending();
            let code = f();
            use std::io::Write;
            let _ = std::io::stdout().flush();
            crate::console::flush(crate::console::EXIT_FLUSH);
            // Safety: ends the worker without running the parent's exit
            // handlers a second time.
            unsafe { libc::_exit(i32::from(code)) }
        }
        self.running.insert(pid, key);
        Ok(pid.unsigned_abs())
    }

    /// The signal that asked the pool to stop, once one has: [`Pool::spawn`]
    /// starts nothing after it.
    pub fn stopped(&self) -> Option<i32> {
        self.forwarded
    }

    /// Waits for every worker; returns how each ended, in the order they
    /// ended, and the signal that asked the pool to stop, if one did.
    pub fn finish(mut self) -> (Vec<(K, WorkerEnd)>, Option<i32>) {
        while !self.running.is_empty() {
            self.wait_one();
        }
        let done = std::mem::take(&mut self.done);
        (done, self.forwarded)
    }

    /// Reaps what has ended; when nothing has, sleeps until a signal.
    fn wait_one(&mut self) {
        if self.reap() > 0 {
            return;
        }
        let set = caught();
        // Safety: `set` is a valid set of blocked signals; a null timeout
        // waits until one is pending.
        let sig = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::sigwaitinfo(&set, &mut info)
        };
        if matches!(sig, libc::SIGINT | libc::SIGTERM | libc::SIGHUP) {
            self.forwarded = Some(sig);
            for &pid in self.running.keys() {
                // Safety: signalling a worker this pool forked and has not
                // reaped (its pid cannot have been reused).
                unsafe {
                    libc::kill(pid, sig);
                }
            }
        }
        self.reap();
    }

    /// Reaps every worker that has ended; how many.
    fn reap(&mut self) -> usize {
        let mut n = 0;
        loop {
            let mut status = 0;
            // Safety: waitpid on our own children, without blocking.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return n;
            }
            let Some(key) = self.running.remove(&pid) else {
                continue;
            };
            let end = if libc::WIFEXITED(status) {
                WorkerEnd::Exited(u8::try_from(libc::WEXITSTATUS(status)).unwrap_or(1))
            } else {
                WorkerEnd::Signaled(libc::WTERMSIG(status))
            };
            self.done.push((key, end));
            n += 1;
        }
    }
}

impl<K> Drop for Pool<K> {
    fn drop(&mut self) {
        crate::signals::drop_pending_passed();
        // Safety: restores the mask saved in `new`.
        unsafe {
            libc::sigprocmask(libc::SIG_SETMASK, &self.old_mask, std::ptr::null_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    // Forking inside the test harness (which runs tests on threads) is what
    // the pool refuses; its behaviour is tested through `baton tick`.
    #[test]
    fn a_multi_threaded_process_is_refused() {
        let t = std::thread::spawn(|| std::thread::park_timeout(std::time::Duration::from_secs(5)));
        assert!(super::Pool::<u32>::new(2).is_err());
        t.thread().unpark();
        let _ = t.join();
    }
}
