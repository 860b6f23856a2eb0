//! The embedded store: lock files under `STATE_DIR/locks/` and the SQLite
//! ledger `STATE_DIR/baton.db`. It adds nothing to `baton-lease` and
//! `baton-ledger`, which own those files; it says where they are and maps
//! their outcomes to the store's.

use std::path::{Path, PathBuf};

use baton_lease::{Claim, Fence, Guarded, Outcome, Token, Verdict, Vouched};
use baton_ledger::Ledger;
use baton_store::ledger::{Error as LedgerError, Records};
use jiff::Timestamp;

use super::{Guard, Refused, Store, Taken, Vouch};
use crate::config::Job;

/// Files in one state directory.
#[derive(Debug, Clone)]
pub struct Files {
    state_dir: PathBuf,
}

impl Files {
    /// The store in `state_dir`.
    pub fn new(state_dir: PathBuf) -> Self {
        Self { state_dir }
    }
}

/// `job`'s lock file in `state_dir`, with the job's TTL and grace.
pub fn lock_file(state_dir: &Path, job: &Job) -> baton_lease::Lock {
    let p = &job.policy;
    let path = state_dir
        .join("locks")
        .join(format!("{}.lock", job.lock.value));
    baton_lease::Lock::new(path).with_options(baton_lease::Options {
        ttl: p.ttl.value,
        mutex_wait: baton_runner::mutex_wait_for(p.ttl.value),
        policy: baton_lease::Policy {
            takeover_grace: p.takeover_grace.value,
            ..baton_lease::Policy::default()
        },
        fsync: false,
    })
}

/// `job`'s guard file in `state_dir`: which lock it last started a run
/// under (`baton_lease::Guarded`).
fn guard_file(state_dir: &Path, job: &Job) -> PathBuf {
    state_dir.join("locks").join(format!("{}.job", job.name))
}

/// A guard's answer as the store's.
fn guarded(job: &Job, g: Result<Guarded, baton_lease::Error>) -> Result<Guard, String> {
    match g {
        Ok(Guarded::Clear) => Ok(Guard::Clear),
        Ok(Guarded::Elsewhere { lock, verdict }) => Ok(Guard::Elsewhere(Refused::elsewhere(
            &job.name,
            &lock.display().to_string(),
            &verdict,
        ))),
        Ok(Guarded::Claimed { at }) => Ok(Guard::Claimed { at }),
        Err(e) => Err(e.to_string()),
    }
}

impl Store for Files {
    fn kind(&self) -> &'static str {
        "files"
    }

    fn location(&self) -> String {
        self.state_dir.join("baton.db").display().to_string()
    }

    fn records(&self, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
        Ok(Box::new(Ledger::open(&self.state_dir, now)?))
    }

    fn existing_records(&self, now: Timestamp) -> Option<Result<Box<dyn Records>, LedgerError>> {
        self.state_dir
            .join("baton.db")
            .exists()
            .then(|| self.records(now))
    }

    fn lock_label(&self, job: &Job) -> String {
        lock_file(&self.state_dir, job).path().display().to_string()
    }

    fn try_acquire(&self, job: &Job, claim: &Claim) -> Result<Taken, String> {
        match lock_file(&self.state_dir, job).try_acquire_as(claim) {
            Ok(Outcome::Acquired(lease)) => Ok(Taken::Acquired(Box::new(lease))),
            Ok(Outcome::Claimed { at, .. }) => Ok(Taken::Claimed { at }),
            Ok(refused) => Ok(Taken::Refused(Refused::of_outcome(&refused))),
            Err(e) => Err(e.to_string()),
        }
    }

    fn runs_elsewhere(&self, job: &Job, occurrence: Option<i64>) -> Result<Guard, String> {
        let lock = lock_file(&self.state_dir, job);
        guarded(
            job,
            lock.guard_of(&guard_file(&self.state_dir, job), occurrence),
        )
    }

    fn take_guard(&self, job: &Job, fence: u64, occurrence: Option<i64>) -> Result<Guard, String> {
        let lock = lock_file(&self.state_dir, job);
        let guard = guard_file(&self.state_dir, job);
        guarded(job, lock.take_guard(&guard, Fence::new(fence), occurrence))
    }

    fn inspect(&self, job: &Job) -> Result<Option<Verdict>, String> {
        let lock = lock_file(&self.state_dir, job);
        match lock.inspect() {
            Ok(i) => Ok(Some(i.verdict)),
            Err(e) => Err(e.to_string()),
        }
    }

    fn while_held(
        &self,
        job: &Job,
        token: &str,
        action: &mut dyn FnMut(u64, Option<&str>),
    ) -> Result<Vouch, String> {
        let lock = lock_file(&self.state_dir, job);
        let token: Token = token
            .parse()
            .map_err(|_| format!("{token:?} is not a lease token"))?;
        let vouched = lock.while_held(&token, |held| {
            action(held.fence.get(), held.run.as_deref());
            (held.fence.get(), held.run.clone())
        });
        match vouched {
            Ok(Vouched::Done((fence, run))) => Ok(Vouch::Holder { fence, run }),
            Ok(Vouched::NotHolder(body)) => Ok(Vouch::NotHolder(match &body {
                baton_lease::record::Body::Held(h) => format!(
                    "it is held by run {} (fence {})",
                    h.run.as_deref().unwrap_or("?"),
                    h.fence
                ),
                baton_lease::record::Body::Free(_) => "it is free".into(),
                _ => "it holds no baton lease".into(),
            })),
            Ok(Vouched::Missing) => Ok(Vouch::Missing(lock.path().display().to_string())),
            Ok(Vouched::Busy(b)) => Err(format!(
                "refused: the lock's critical section could not be entered ({b}); nothing was written, \
                 try again"
            )),
            Err(e) => Err(e.to_string()),
        }
    }
}
