//! baton-runner: one run of a job, from a held lease to its release.
//!
//! `baton exec`, `baton run`, `baton tick` and the daemon all run jobs
//! through this crate and never spawn or stop a job's processes themselves.
//! A [`Session`] owns the lease ([`baton_store::Held`]: a lock file or a store's row)
//! for the whole run and keeps the holder's side
//! of the lock's contract (see `DESIGN.md`, "The holder's contract"):
//!
//! - a step's command starts only once its process group is on the lease
//!   record ([`gate`]), so a crash of the runner never leaves a job running
//!   unrecorded;
//! - the lease is renewed every third of its TTL, through steps and the
//!   pauses between them; when a renewal finds it lost, or none has
//!   succeeded for a whole TTL, the running step is stopped before anyone
//!   else may take the lease (self-fencing);
//! - a step is over only when its whole process tree is gone: its group, and
//!   every process that left it (the runner is their subreaper), stopped so
//!   that nothing can escape (`tree`); the lease is never released while
//!   anything a step started still runs;
//! - signals sent to the runner reach the running step's group;
//! - a run asked to stop for a later one ([`StopAsk`]) has its running
//!   step's tree stopped as a lost lease's is, and keeps the lease.
//!
//! One process supervises one run at a time: the subreaper attribute and the
//! signal handlers are the process's own. Schedulers that run several jobs at
//! once give each run a process of its own.
//!
//! The crate reports what happens through [`Report`] and returns what each
//! step came to ([`StepResult`]); deciding what is an alert, and where it
//! goes, is the caller's business. Short helper commands (alert commands)
//! run through [`hook`], bounded in time and in a process group of their own.

mod ask;
pub mod capture;
mod cgroup;
pub mod console;
mod contain;
pub mod gate;
pub mod hook;
mod hugepages;
mod limits;
mod renewer;
mod report;
mod session;
pub mod signals;
mod status;
mod step;
mod terminal;
mod tree;
pub mod workers;

pub use ask::StopAsk;
pub use capture::{Output, Sink};
pub use contain::own_proc;
pub use hook::{HookCommand, HookOutcome};
pub use limits::{
    MAX_DURATION, MAX_RETRIES, MIN_TTL, SKEW_ALLOWANCE, TICK, Unfenced, check_self_fencing,
    mutex_wait_for,
};
pub use renewer::Holding;
pub use report::{Event, Report};
pub use session::{Finish, Paused, Prepared, Session, SessionConfig};
pub use status::{
    Ending, LEASE_LOST, REPLACED, SpawnFailure, SpawnKind, TIMED_OUT, exit_code_of, signal_name,
    signal_number,
};
pub use step::{Stdin, StepResult, StepSpec};
pub use workers::{Pool, WorkerEnd};
