//! What a session tells its caller while it runs. The runner decides what
//! happened; the caller decides what each event means for people (an alert,
//! a log line, nothing). Events are delivered on the supervising thread, in
//! order, and must not block for long: a renewal may be waiting.

use std::time::Duration;

/// Something that happened during a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The run passed its soft budget; nothing was stopped. Raised once.
    Overrunning {
        /// The budget.
        budget: Duration,
    },
    /// A step ran past its timeout; its tree is being stopped.
    TimedOut {
        /// The timeout.
        after: Duration,
    },
    /// The lease was lost (or could not be renewed for a whole TTL); the
    /// running step, if any, is being stopped. Raised once.
    LeaseLost {
        /// Why, in words.
        why: String,
    },
    /// The run was asked to stop for a later run of its job
    /// ([`crate::StopAsk`]); the running step, if any, is being stopped and
    /// no later step starts. Raised once per request.
    Replaced {
        /// Why, in words.
        why: String,
    },
    /// A renewal did not get through; the step is stopped if this lasts.
    RenewTrouble {
        /// Why, in words.
        why: String,
    },
    /// A step's command exited and left processes running (in its group or
    /// detached); they are being stopped before the step ends.
    Leftovers {
        /// How many processes were found.
        count: usize,
    },
    /// Processes of a step still run although they were sent `SIGKILL`
    /// (uninterruptible sleep, or another user's process); the runner keeps
    /// trying and keeps the lease. Raised once per step.
    Stuck {
        /// Their pids.
        pids: Vec<u32>,
        /// How long the stop has lasted.
        after: Duration,
    },
    /// A step's command has ended, and whether anything it started still
    /// runs cannot be seen: the kernel refuses the runner a descriptor to
    /// read `/proc` with (its open-file limit lowered under it, below what
    /// it already holds, and not given back). The lease is kept until the
    /// tree can be seen, or is provably gone. Raised once per step.
    Unseen {
        /// What the kernel said, in words.
        why: String,
        /// Whether what may be left is being stopped: a contained step's
        /// whole namespace, through its init, which needs no descriptor.
        /// Otherwise nothing can be found to stop, and the lease is kept
        /// until what is left ends.
        stopping: bool,
    },
    /// A signal sent to the runner was passed on to the step's group.
    Forwarded {
        /// The signal's number.
        signal: i32,
    },
    /// The kernel refused a PID namespace for the run's steps: they run as
    /// before namespaces, their process group the only evidence, so
    /// processes they detach from it may outlive a runner killed with
    /// `kill -9`. Raised once per run.
    Uncontained {
        /// What the kernel said.
        why: String,
    },
    /// The step's cgroup could not be used; the step is tracked through
    /// `/proc` instead.
    NoCgroup {
        /// Why, in words.
        why: String,
    },
}

/// Where a session's events go.
pub trait Report {
    /// Receives one event.
    fn event(&mut self, event: Event);
}

impl<F: FnMut(Event)> Report for F {
    fn event(&mut self, event: Event) {
        self(event);
    }
}
