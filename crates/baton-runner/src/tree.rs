//! A step's process tree: its process group, and every process that left
//! the group (`setsid`, a double fork, GNU `timeout`), which stays the
//! runner's descendant because the runner is its subreaper. With a cgroup,
//! the tree is the cgroup's membership instead.
//!
//! Stopping a tree so that nothing escapes: a first signal (SIGTERM, or the
//! caller's) to everything, then, after the kill grace, rounds of
//!
//! 1. **freeze**: SIGSTOP to every member, rescanning until a scan finds no
//!    process that is new or still running (a process that forked between
//!    two scans has its child caught by the next); with a cgroup,
//!    `cgroup.freeze`;
//! 2. **kill**: SIGKILL to every member (`cgroup.kill`), and reap what the
//!    runner inherited;
//!
//! repeated until no member is left. A process with any live thread is a
//! member, a zombie leader whose threads still run included. Helper commands
//! (alert commands) run in groups of their own and are never members.
//!
//! A contained step ([`crate::contain`]) is led by the init of its PID
//! namespace: `SIGKILL` to init kills every process of the step at once,
//! and init lives until the last of them is gone, so the tree is over
//! exactly when init has been reaped.
//!
//! This module sends signals only to the step's group and to the runner's
//! own descendants, through `baton_lease::job`.

use std::cell::RefCell;
use std::time::Duration;

use baton_lease::job::{self, Member};

use crate::cgroup::Cgroup;
use crate::signals::{SIGCONT, SIGKILL, SIGSTOP};

/// How many freeze rescans a round makes before it kills anyway (a process
/// in uninterruptible sleep does not show as stopped until it wakes).
const FREEZE_SCANS: u32 = 50;

/// One step's processes.
pub(crate) struct Tree {
    pgid: u32,
    me: u32,
    cgroup: Option<Cgroup>,
    /// The group's leader is the init of the step's PID namespace
    /// ([`crate::contain`]): killing it kills every process of the step at
    /// once, and it lives exactly as long as any of them.
    contained: bool,
    /// Why the runner's last look at its children's lists failed, while it
    /// fails (no descriptor to read them with).
    unseen: RefCell<Option<String>>,
}

impl Tree {
    /// The tree of the step whose group is `pgid` (led by the init of its
    /// namespace when `contained`).
    pub(crate) fn new(pgid: u32, cgroup: Option<Cgroup>, contained: bool) -> Self {
        Self {
            pgid,
            me: std::process::id(),
            cgroup,
            contained,
            unseen: RefCell::new(None),
        }
    }

    /// The processes the step's command left behind once it exited: every
    /// member but a contained step's init, which stays until they are gone.
    pub(crate) fn leftovers(&self) -> usize {
        let members = self.members();
        if self.contained {
            members.iter().filter(|m| m.pid != self.pgid).count()
        } else {
            members.len().max(1)
        }
    }

    /// Whether a contained step's command has exited, and everything it
    /// started with it, while its init has not yet followed: what is left
    /// can no longer run any of the step's code. Always `false` for a step
    /// that is not contained (its command is the runner's own child, whose
    /// exit the runner sees directly). A scan of `/proc` that fails says
    /// no: the step is taken to run.
    pub(crate) fn only_init_left(&self) -> bool {
        self.contained
            && job::process_runs(self.pgid)
            && job::descendants(self.me, &crate::hook::groups())
                .is_ok_and(|found| found.iter().all(|m| m.pid == self.pgid))
    }

    /// Every process of the tree that still runs code.
    pub(crate) fn members(&self) -> Vec<Member> {
        let mut found = job::descendants(self.me, &crate::hook::groups()).unwrap_or_default();
        if let Some(cg) = &self.cgroup {
            // Members of the cgroup that are not descendants (none, unless a
            // privileged process moved itself in) are members too.
            for pid in cg.pids().unwrap_or_default() {
                if !found.iter().any(|m| m.pid == pid) && job::process_runs(pid) {
                    found.push(Member {
                        pid,
                        pgid: 0,
                        start: 0,
                        stopped: false,
                    });
                }
            }
        }
        found
    }

    /// The runner's own children but helper commands, from the kernel's
    /// lists (exact, unlike a scan of `/proc`).
    fn children(&self) -> Option<Vec<u32>> {
        let hooks = crate::hook::pids();
        let read = job::children();
        *self.unseen.borrow_mut() = read
            .as_ref()
            .err()
            .map(|e| format!("the runner's children cannot be read from /proc/self/task: {e}"));
        read.ok()
            .map(|c| c.into_iter().filter(|p| !hooks.contains(p)).collect())
    }

    /// Whether the step is led by the init of its PID namespace.
    pub(crate) fn contained(&self) -> bool {
        self.contained
    }

    /// Why the tree cannot be seen, when the last look at the runner's
    /// children failed: [`Tree::alive`] then answers without the lists, and
    /// says yes whenever it cannot prove the tree gone.
    pub(crate) fn unseen(&self) -> Option<String> {
        self.unseen.borrow().clone()
    }

    /// Whether anything of the tree still runs (zombies the runner inherited
    /// are reaped first; `except_child`, the step's command while its handle
    /// has not reaped it, is left alone).
    ///
    /// The answer is exact, not a scan: the runner is the subreaper, so every
    /// live process of the tree has an ancestor among the runner's children,
    /// or is one (a process whose parent exits is handed to the runner in the
    /// same instant). A scan of `/proc` by parent pid could miss a process
    /// whose parent exited between two reads, and release a lease while it
    /// runs.
    pub(crate) fn alive(&self, except_child: Option<u32>) -> bool {
        if let Some(cg) = &self.cgroup
            && cg.populated().unwrap_or(true)
        {
            return true;
        }
        if !job::has_children() {
            return job::group_alive(self.pgid);
        }
        self.reap(except_child);
        match self.children() {
            Some(c) => !c.is_empty() || job::group_alive(self.pgid),
            None => self.alive_unseen(except_child),
        }
    }

    /// [`Tree::alive`] when the kernel's lists of the runner's children
    /// cannot be read (no descriptor to read them with: the open-file limit
    /// lowered under the runner, and not given back). Every exited child is
    /// reaped without a list; the tree is then over when the runner has no
    /// child left (it is the subreaper: a live process of the tree would be
    /// one, or descend from one) and no process is in the step's group.
    /// While a helper command runs, its own thread waits for it, so nothing
    /// is reaped and the tree counts as alive; so it does while the step's
    /// command is not yet reaped by its handle (`except_child`).
    fn alive_unseen(&self, except_child: Option<u32>) -> bool {
        if except_child.is_some() {
            return true;
        }
        let children_left = crate::hook::while_none_runs(|| {
            job::reap_exited_children();
            job::has_children()
        });
        children_left.unwrap_or(true) || job::group_alive(self.pgid)
    }

    /// Stops every member with SIGSTOP, as job control would, but a
    /// contained step's init, whose watchdog must run on while the runner
    /// is stopped; [`Tree::signal`] with SIGCONT continues them. A member
    /// that forks meanwhile may leave a child running: pausing is no fence
    /// (the watchdog and the lease are).
    pub(crate) fn pause(&self) {
        for m in self.members() {
            if !(self.contained && m.pid == self.pgid) {
                let _ = job::signal_process(m.pid, SIGSTOP);
            }
        }
    }

    /// Sends `signal` to the group and to every member outside it, and
    /// SIGCONT after it so that a stopped process can act on it.
    pub(crate) fn signal(&self, signal: i32) {
        let _ = job::signal_group(self.pgid, signal);
        for m in self.members() {
            if m.pgid != self.pgid {
                let _ = job::signal_process(m.pid, signal);
            }
        }
        if signal != SIGKILL && signal != SIGCONT && signal != SIGSTOP {
            let _ = job::signal_group(self.pgid, SIGCONT);
            for m in self.members() {
                if m.pgid != self.pgid {
                    let _ = job::signal_process(m.pid, SIGCONT);
                }
            }
        }
    }

    /// One round of freeze-then-kill; reaps what died. Returns the members
    /// still alive after it.
    pub(crate) fn kill_round(&self, except_child: Option<u32>) -> Vec<Member> {
        if let Some(cg) = &self.cgroup {
            // OK to ignore: without the cgroup files the scan below still
            // finds and kills every descendant.
            let _ = cg.freeze();
            let _ = cg.kill();
        }
        if self.contained {
            // The kernel kills the whole namespace with its init: nothing
            // can fork its way out, so there is nothing to freeze first.
            let _ = job::signal_process(self.pgid, SIGKILL);
        } else {
            self.freeze();
        }
        let _ = job::signal_group(self.pgid, SIGKILL);
        for c in self.children().unwrap_or_default() {
            let _ = job::signal_process(c, SIGKILL);
        }
        for m in self.members() {
            let _ = job::signal_process(m.pid, SIGKILL);
        }
        self.reap(except_child);
        self.members()
    }

    /// Stops every member with SIGSTOP, rescanning until no member is new or
    /// still running, so that nothing forks while the kill is under way. The
    /// runner's own children are stopped first in each round: a process that
    /// keeps handing itself on to a detached successor becomes the runner's
    /// child the moment its parent exits, and the children list is read in
    /// microseconds.
    fn freeze(&self) {
        let _ = job::signal_group(self.pgid, SIGSTOP);
        let mut known: Vec<u32> = Vec::new();
        for _ in 0..FREEZE_SCANS {
            for c in self.children().unwrap_or_default() {
                let _ = job::signal_process(c, SIGSTOP);
            }
            let now = self.members();
            let settled = now.iter().all(|m| m.stopped && known.contains(&m.pid));
            if settled {
                return;
            }
            for m in &now {
                if !m.stopped {
                    let _ = job::signal_process(m.pid, SIGSTOP);
                }
            }
            known = now.iter().map(|m| m.pid).collect();
            std::thread::yield_now();
        }
    }

    /// Reaps the runner's children that have exited, but `except_child` (the
    /// step's command, which its `Child` handle reaps) and helper commands
    /// (their own threads wait for them).
    pub(crate) fn reap(&self, except_child: Option<u32>) {
        for c in self.children().unwrap_or_default() {
            if Some(c) != except_child {
                // A live child is left alone: WNOHANG.
                let _ = job::reap(c);
            }
        }
    }

    /// Removes the step's cgroup, once the tree is empty.
    pub(crate) fn dispose(&self) {
        if let Some(cg) = &self.cgroup {
            cg.remove();
        }
    }
}

/// How long to sleep between kill rounds.
pub(crate) const KILL_ROUND_PAUSE: Duration = Duration::from_millis(10);
