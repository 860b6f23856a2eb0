//! What a session needs of a lease this process holds, whatever keeps it: a
//! lock file ([`baton_lease::Lease`], see `lease_file.rs`) or a row in a
//! PostgreSQL store (`baton_pg::PgHeld`).
//!
//! This module owns the contract between the supervisor and a lease store,
//! not any store's protocol. Every call is token-checked by the store and
//! either says what happened (renewed, lost, refused, unconfirmed) or fails
//! with a [`HeldError`]; contention and a lost lease are outcomes, never
//! errors. A call must return within [`Held::renew_wait`] plus the store's
//! own bounded work: the session's self-fencing (`DESIGN.md`, "Self-fencing")
//! counts on it, and a store that can block longer must say so there. No
//! implementation may stop a job or decide that the lease is lost without a
//! token check: only the session decides to stop the job.

use std::time::Duration;

use baton_lease::{Leader, Once};

/// The signals a supervising session passes on to its running step as
/// they come, stopping nothing: what a job may be sent to act on while it
/// runs (reopen a log, report progress). The one list of them: the
/// session's `signalfd` reads them and [`quiet_thread`] blocks them.
pub const PASSED_ON: [i32; 3] = [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM];

/// Blocks, in the calling thread, the signals a supervising session reads
/// for itself (SIGINT, SIGTERM, SIGHUP, SIGTSTP, SIGCHLD, and SIGUSR1,
/// SIGUSR2 and SIGALRM, which it passes on to the job, from a `signalfd`): a
/// thread that a [`Held`] implementation (or any helper of the session)
/// starts calls it first, so that a signal meant for the run is never
/// taken, and lost, by that thread.
#[allow(unsafe_code)] // One sigprocmask of the calling thread.
pub fn quiet_thread() {
    // Safety: sigemptyset/sigaddset fill a set on this stack, and
    // pthread_sigmask only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGTSTP,
            libc::SIGCHLD,
        ]
        .into_iter()
        .chain(PASSED_ON)
        {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A lease this process holds, as the session drives it.
///
/// The session calls it from one thread at a time: renewals from a thread
/// of their own, every other call from its supervising thread once no
/// renewal is under way (hence `Send`). Dropping a value
/// without [`Held::release`] is the implementation's business (the lock file
/// releases on drop; a PostgreSQL lease lapses by itself).
pub trait Held: std::fmt::Debug + Send {
    /// The lease's TTL: it is renewed every third of it, and the job is
    /// stopped once no renewal got through for a whole TTL.
    fn ttl(&self) -> Duration;

    /// The longest one renewal (or any other call) may block before it
    /// answers: the lock file's mutex wait, or the store's deadline. It is
    /// the `renew_wait` term of the runner's `check_self_fencing`.
    fn renew_wait(&self) -> Duration;

    /// This acquisition's fence.
    fn fence(&self) -> u64;

    /// This acquisition's token, as shown to the job (`BATON_TOKEN`).
    fn token(&self) -> String;

    /// The host the lease record names as its holder's.
    fn host(&self) -> &str;

    /// Where the lease is kept, for messages: the lock file's path, or `lock
    /// NAME in HOST:PORT (database DB, user USER)`.
    fn describe(&self) -> String;

    /// Puts the step's process group on the lease record, and what leads it
    /// (the init of the step's own pid namespace, or the command), so that a
    /// judge finding this holder dead also asks whether the job still runs;
    /// also renews. The session starts a step's command only once this said
    /// [`Renewal::Renewed`]. A store that cannot keep `leader` drops it: its
    /// judge then counts the group's members whatever leads it (fail closed).
    ///
    /// # Errors
    ///
    /// When the store could not be reached or answered with a failure.
    fn set_job_group(&mut self, pgid: u32, leader: Leader) -> Result<Renewal, HeldError>;

    /// Says that the step whose process group is `pgid`, spawned and held
    /// at its gate, is about to be named with [`Held::set_job_group`]: a
    /// store may then name it with its next record (the run's start), in
    /// that record's round trip, and [`Held::set_job_group`] answers from
    /// it. The default does nothing.
    fn foresee_group(&mut self, pgid: u32, leader: Leader) {
        let _ = (pgid, leader);
    }

    /// Renews the lease.
    ///
    /// # Errors
    ///
    /// As [`Held::set_job_group`].
    fn renew(&mut self) -> Result<Renewal, HeldError>;

    /// Restates what the lease runs (run id and occurrence) and claims
    /// `once` under it, refused ([`Restated::Claimed`]) when the job already
    /// claimed that occurrence or a later one. Also renews.
    ///
    /// # Errors
    ///
    /// As [`Held::set_job_group`]; nothing is known to have changed.
    fn restate(
        &mut self,
        run: Option<String>,
        occ: Option<String>,
        once: Option<&Once>,
    ) -> Result<Restated, HeldError>;

    /// Takes back the lease's latest claim, `once`, for an occurrence that
    /// did not start after all (its start could not be recorded), so that
    /// no claim stands for a run that never happened. Also renews.
    /// `Ok(None)` when the store keeps the claim: it is not the lease's
    /// latest, or (a store whose ledger is beside its leases) the ledger
    /// records the occurrence started. A claim that stays without a
    /// recorded start is recorded missed by the next process that meets it.
    ///
    /// # Errors
    ///
    /// As [`Held::set_job_group`]; nothing is known to have changed.
    fn withdraw(&mut self, once: &Once) -> Result<Option<Renewal>, HeldError>;

    /// Says that the run `run` is about to record its end, after which,
    /// unless one of `jobs` (those whose queue the holder drains) has an
    /// occurrence waiting, the lease is released. A store may then free
    /// the lease in the round trip of that end's record, only once the end
    /// is recorded and nothing of `jobs` is queued; [`Held::release_peeking`]
    /// answers from it. Nothing else changes: a lease still held then is
    /// held as before, and its release is made as without this. The
    /// default does nothing.
    fn foresee_release(&mut self, run: &str, jobs: &[String]) {
        let _ = (run, jobs);
    }

    /// Frees the lease, only if it is still ours.
    ///
    /// # Errors
    ///
    /// As [`Held::set_job_group`]; the lease then frees itself (the lock
    /// file once this process has exited, a store's row after its TTL).
    fn release(self: Box<Self>) -> Result<Release, HeldError>;

    /// Frees the lease as [`Held::release`] does and says, as the store
    /// stands once it is free, whether any of `jobs` has an occurrence
    /// waiting in the ledger's queue: `Some(false)` only when none has, so
    /// that the holder's look after its release, which catches what was
    /// queued while it held the lock, may be skipped. `None` when the store
    /// does not say in the same call (the caller then looks itself): a
    /// store whose look costs a round trip of its own says; the default
    /// does not.
    ///
    /// # Errors
    ///
    /// As [`Held::release`].
    fn release_peeking(
        self: Box<Self>,
        jobs: &[String],
    ) -> Result<(Release, Option<bool>), HeldError> {
        let _ = jobs;
        self.release().map(|released| (released, None))
    }
}

/// What a renewal (or another rewrite of one's own record) came to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a lost lease means the job must stop"]
pub enum Renewal {
    /// The record is ours and now says so afresh.
    Renewed,
    /// The record is no longer ours: stop the job. The sentence says what
    /// stands there now.
    Lost(String),
    /// The record could not be reached this time; whether it is still ours
    /// is unknown. The text says why.
    Unconfirmed(String),
}

/// What [`Held::restate`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restated {
    /// The record is ours and says what runs now.
    Done,
    /// The job already claimed occurrence `at`, this one or a later one: it
    /// must not run. Nothing was written.
    Claimed {
        /// The occurrence the job's claim holds.
        at: i64,
    },
    /// The record is no longer ours: stop.
    Lost(String),
    /// The record could not be reached this time.
    Unconfirmed(String),
}

/// What [`Held::release`] came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Release {
    /// The lease was ours and is now free.
    Released,
    /// The lease had already passed to someone else; nothing was changed.
    Lost(String),
    /// The record could not be reached; the lease frees itself later.
    Unconfirmed(String),
}

/// A store's failure to answer a call, with its cause.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct HeldError(Box<dyn std::error::Error + Send + Sync>);

impl HeldError {
    /// Wraps the store's own error; its message is shown unchanged.
    pub fn new(source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Box::new(source))
    }

    /// The store's error.
    pub fn source_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}
