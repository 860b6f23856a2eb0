//! Taking a lease: [`Lock::try_acquire`] and the calls built on it, and
//! what an attempt comes to ([`Outcome`]).
//!
//! Each attempt is one critical section of the lock ([`crate::lock`]): the
//! record is read under the file's mutex, judged ([`crate::decide`]), and,
//! only when the verdict lets the lease be taken and the claim is not
//! refused, replaced by a held record written in place before the mutex is
//! dropped; the [`Lease`] handed back keeps the descriptor for its next
//! section. A lock file that does not exist yet is created whole: the
//! record is written to a temporary file, locked, and `link`ed into place,
//! which fails if the name appeared meanwhile. A held lease, a record
//! being written, or one this build does not judge is an [`Outcome`],
//! never an error, and is left as it was.
//!
//! This module makes leases and nothing else; the sections it runs in are
//! the lock's, and what a lease does once made is the lease's. It never
//! writes a record the verdict did not allow, and never runs caller code
//! inside the mutex.

use std::path::Path;
use std::time::Duration;

use crate::decide::{self, Holder, Now, Strangers, Verdict};
use crate::error::Error;
use crate::lease::Lease;
use crate::lock::{Claim, Lock, Opened, Opening, REOPEN_ATTEMPTS, micros, millis};
use crate::outcome::{self, Busy, Conflict, human};
use crate::presence;
use crate::record::{Held, MAX_RECORD_BYTES};
use crate::sys::file::{self, Mode};
use crate::token::{Fence, Token};
use crate::value;

/// The result of an attempt to acquire.
#[derive(Debug)]
#[must_use = "an acquired lease is released when dropped"]
#[allow(clippy::large_enum_variant)] // Returned once per attempt; boxing buys nothing.
pub enum Outcome {
    /// The lease is ours.
    Acquired(Lease),
    /// Someone holds it (or is writing it, or holds the file's mutex).
    Busy(Busy),
    /// The holder process is alive but has stopped renewing. Refused; a human
    /// decides (`baton lock break --kill`).
    Hung {
        /// The holder.
        holder: Holder,
        /// Time since its last renewal.
        lapsed: Duration,
    },
    /// The holder is gone but its job's process group still has members.
    Orphaned {
        /// The holder.
        holder: Holder,
        /// The group with members.
        pgid: u32,
        /// Set when the group's leader is gone and every member is another
        /// user's: likely a reused group id, not the job (still refused).
        strangers: Option<Strangers>,
    },
    /// The file holds a lease of a version this build does not judge, or
    /// bytes that are no record. Left untouched.
    VersionConflict(Conflict),
    /// The lock is free, but the claim's key already started this
    /// occurrence (or a later one) under it: nothing was written.
    Claimed {
        /// The claim's key.
        key: String,
        /// The occurrence it last claimed.
        at: i64,
    },
}

impl Outcome {
    /// The lease, when acquired.
    pub fn acquired(self) -> Option<Lease> {
        match self {
            Self::Acquired(l) => Some(l),
            _ => None,
        }
    }

    /// One line for a human: why the lease was not acquired. Empty for
    /// [`Outcome::Acquired`].
    pub fn describe(&self) -> String {
        match self {
            Self::Acquired(_) => String::new(),
            Self::Busy(b) => b.to_string(),
            Self::Hung { holder, lapsed } => format!(
                "hung: the holder is alive but has not renewed for {}: {holder}",
                human(*lapsed)
            ),
            Self::Orphaned {
                holder,
                pgid,
                strangers: None,
            } => format!(
                "orphaned: the holder is gone but its job's process group {pgid} still has members: \
                 {holder}"
            ),
            Self::Orphaned {
                holder,
                pgid,
                strangers: Some(s),
            } => format!(
                "orphaned: the holder is gone and its job's process group {pgid} still has members, \
                 but {s}: {holder}"
            ),
            Self::VersionConflict(c) => c.to_string(),
            Self::Claimed { key, at } => {
                format!("{key} already started the occurrence at {at} (or a later one)")
            }
        }
    }

    /// A short word for the verdict: `busy`, `hung`, `orphaned`,
    /// `version-conflict`, or `acquired`.
    pub fn word(&self) -> &'static str {
        match self {
            Self::Acquired(_) => "acquired",
            Self::Busy(_) => "busy",
            Self::Hung { .. } => "hung",
            Self::Orphaned { .. } => "orphaned",
            Self::VersionConflict(_) => "version-conflict",
            Self::Claimed { .. } => "claimed",
        }
    }
}

impl Lock {
    /// Tries once to take the lease, without waiting for a holder.
    ///
    /// # Errors
    ///
    /// I/O failures, a missing directory, something other than a regular file
    /// at the path, or a filesystem without `flock`. A lock held by someone
    /// else is an [`Outcome`], not an error.
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_lease::{Lock, Outcome, Release};
    /// let lock = Lock::new(dir.path().join("job.lock"));
    /// let Outcome::Acquired(lease) = lock.try_acquire()? else { panic!("fresh lock") };
    /// assert!(matches!(lock.try_acquire()?, Outcome::Busy(_)));
    /// assert_eq!(lease.release()?, Release::Released);
    /// # Ok::<(), baton_lease::Error>(())
    /// ```
    pub fn try_acquire(&self) -> Result<Outcome, Error> {
        self.try_acquire_as(&Claim::default())
    }

    /// [`Lock::try_acquire`], writing `claim` into the record.
    ///
    /// # Errors
    ///
    /// As [`Lock::try_acquire`], and [`Error::InvalidField`] for a claim value
    /// that cannot be written into a record.
    pub fn try_acquire_as(&self, claim: &Claim) -> Result<Outcome, Error> {
        self.validate(claim)?;
        for _ in 0..REOPEN_ATTEMPTS {
            let section = match self.open_locked(Mode::Exclusive, true)? {
                Opened::Busy(b) => return Ok(Outcome::Busy(b)),
                Opened::Section(s) => s,
                Opened::Missing => match self.create(claim)? {
                    Ok(Some(lease)) => return Ok(Outcome::Acquired(lease)),
                    Ok(None) => continue, // The name appeared meanwhile: judge what is there.
                    Err(busy) => return Ok(Outcome::Busy(busy)),
                },
            };
            let now = self.now();
            let local = crate::facts::local();
            let verdict =
                match self.refuse(self.judge(&section, &local.observer, now), section.bytes()) {
                    Ok(claimable) => claimable,
                    Err(refused) => return Ok(refused),
                };
            let prior = decide::prior_claims(Some(section.body()));
            if let Some(once) = &claim.once
                && let Some(at) = prior.refuses(once, now.wall.as_second())
            {
                return Ok(Outcome::Claimed {
                    key: once.key.clone(),
                    at,
                });
            }
            let mut held = self.record(
                &local.me,
                decide::prior_fence(Some(section.body())),
                now,
                claim,
            )?;
            let before = claim.once.as_ref().map(|_| prior.clone());
            held.claims = match &claim.once {
                Some(once) => self.fit(&prior, once, &claim.mates)?,
                None => prior,
            };
            // A record at the path was judged claimable under the mutex: it
            // decides, and no presence is asked about. One held elsewhere is
            // a holder the record let go of (a lease broken by `--force`, a
            // holder in another pid namespace judged by its renewal's age);
            // this lease then goes without a presence of its own.
            let line = held.render();
            self.write(&section, &line)?;
            let opening = section.opening().clone();
            return Ok(Outcome::Acquired(Lease::new(
                self.clone(),
                held,
                verdict,
                claim.mates.clone(),
                before,
                Some(opening),
                line,
            )));
        }
        Ok(Outcome::Busy(Busy::Unstable {
            attempts: REOPEN_ATTEMPTS,
        }))
    }

    /// Tries to take the lease until `wait` has passed, polling with a
    /// jittered backoff (10 ms doubling to 500 ms). Returns the last outcome.
    ///
    /// # Errors
    ///
    /// As [`Lock::try_acquire_as`]; an error ends the wait at once.
    pub fn acquire_wait(&self, claim: &Claim, wait: Duration) -> Result<Outcome, Error> {
        let deadline = self.clock().boot().saturating_add(wait);
        let mut pause = Duration::from_millis(10);
        loop {
            let outcome = self.try_acquire_as(claim)?;
            let now = self.clock().boot();
            if matches!(outcome, Outcome::Acquired(_)) || now >= deadline {
                return Ok(outcome);
            }
            drop(outcome);
            self.clock().sleep(jitter(pause).min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    fn validate(&self, claim: &Claim) -> Result<(), Error> {
        if let Some(once) = &claim.once
            && !crate::Claims::valid_key(&once.key)
        {
            return Err(Error::InvalidField {
                field: "claim key",
                value: once.key.clone(),
            });
        }
        for (field, v) in [("run id", &claim.run), ("occurrence", &claim.occ)] {
            if let Some(v) = v
                && (v.len() > 128 || !value::is_valid_value(v))
            {
                return Err(Error::InvalidField {
                    field,
                    value: v.clone(),
                });
            }
        }
        if self.options().ttl < Duration::from_millis(1) {
            return Err(Error::InvalidOption {
                what: "ttl",
                why: "it must be at least 1 ms".into(),
            });
        }
        Ok(())
    }

    /// Passes a claimable verdict through; turns any other into the outcome
    /// the caller gets.
    #[allow(clippy::result_large_err)] // Err is the outcome handed straight back.
    fn refuse(&self, verdict: Verdict, bytes: &[u8]) -> Result<Verdict, Outcome> {
        Err(match verdict {
            Verdict::Live { holder, skew } => Outcome::Busy(Busy::Held { holder, skew }),
            Verdict::Writing { age } => Outcome::Busy(Busy::Writing { age }),
            Verdict::Hung { holder, lapsed } => Outcome::Hung { holder, lapsed },
            Verdict::Orphaned {
                holder,
                pgid,
                strangers,
            } => Outcome::Orphaned {
                holder,
                pgid,
                strangers,
            },
            Verdict::Refused(found) => {
                Outcome::VersionConflict(outcome::conflict(self.path(), found, bytes))
            }
            claimable => return Ok(claimable),
        })
    }

    /// A fresh record for this process.
    pub(crate) fn record(
        &self,
        facts: &crate::sys::process::SelfFacts,
        prior: Option<Fence>,
        now: Now,
        claim: &Claim,
    ) -> Result<Held, Error> {
        let token = Token::fresh()
            .map_err(|e| Error::io("read random bytes for a token for", self.path(), e))?;
        let wall = micros(now.wall);
        let fence = Fence::next(prior, wall).ok_or_else(|| Error::FenceExhausted {
            path: self.path().to_owned(),
            fence: prior.map_or(0, Fence::get),
        })?;
        Ok(Held {
            fence,
            token,
            pid: facts.pid,
            host: facts.host.clone(),
            acquired: wall,
            renewed: wall,
            ttl: self.options().ttl,
            run: claim.run.clone(),
            machine: facts.machine.clone(),
            boot: facts.boot.clone(),
            pidns: facts.pidns,
            pstart: facts.start,
            renewed_boot: Some(millis(now.boot)),
            pgid: None,
            jstart: None,
            leader: crate::record::Leader::Command,
            uid: Some(facts.uid),
            grace: Some(self.options().policy.takeover_grace),
            occ: claim.occ.clone(),
            exe: facts.exe.clone(),
            budget: claim.budget,
            claims: crate::Claims::default(),
        })
    }

    /// Creates the lock file whole. `None` when the name appeared meanwhile;
    /// a busy lock when a holder's presence stands at the path
    /// ([`crate::presence`]): no file there, and a live holder of a lease on
    /// it, is a lock file moved or removed under its holder.
    fn create(&self, claim: &Claim) -> Result<Result<Option<Lease>, Busy>, Error> {
        let dir = self.dir();
        let name = self
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tag = Token::fresh().map_err(|e| Error::io("read random bytes for", self.path(), e))?;
        let tmp = dir.join(format!(".{name}.{}.{tag}.tmp", std::process::id()));
        let f =
            file::create_new(&tmp).map_err(|e| self.dir_error(&dir, "create a lock file in", e))?;
        let cleanup = TempName(&tmp);
        if !file::try_lock(&f, Mode::Exclusive).map_err(|e| self.lock_error(e))? {
            // Nobody else knows this name; a contender here is a bug elsewhere.
            return Ok(Ok(None));
        }
        let now = self.now();
        let mut held = self.record(&crate::facts::local().me, None, now, claim)?;
        if let Some(once) = &claim.once {
            held.claims = crate::Claims::default().with(once);
        }
        let meta = file::meta(&f).map_err(|e| Error::io("read", &tmp, e))?;
        if let Some(pid) = presence::elsewhere(self.path(), meta.id.dev())
            .map_err(|e| Error::io("ask who holds the lease on", self.path(), e))?
        {
            // A holder takes its presence only once its file is linked: a
            // file there now is a lease taken since this contender looked,
            // to be judged as it is.
            if file::meta_at(self.path())
                .map_err(|e| self.dir_error(&dir, "read", e))?
                .is_some()
            {
                return Ok(Ok(None));
            }
            return Ok(Err(Busy::Elsewhere { pid }));
        }
        let line = held.render();
        file::write_in_place(&f, &line, 0, MAX_RECORD_BYTES)
            .map_err(|e| Error::io("write", &tmp, e))?;
        if self.options().fsync {
            file::sync(&f).map_err(|e| Error::io("sync", &tmp, e))?;
        }
        match file::link(&tmp, self.path()) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(Ok(None)),
            Err(e) => return Err(self.dir_error(&dir, "link a new lock file into", e)),
        }
        drop(cleanup);
        // Explicitly: a forked child that never execs would keep it otherwise.
        let _ = file::unlock(&f);
        // Kept for the lease's next section when its inode is known; else
        // that section opens the path.
        let opening = Some(Opening::new(f, meta.id));
        Ok(Ok(Some(Lease::new(
            self.clone(),
            held,
            Verdict::Absent,
            claim.mates.clone(),
            claim.once.as_ref().map(|_| crate::Claims::default()),
            opening,
            line,
        ))))
    }
}

struct TempName<'a>(&'a Path);

impl Drop for TempName<'_> {
    fn drop(&mut self) {
        // OK to ignore: a leftover temporary name is harmless, and the lock
        // file (if linked) already has its own name.
        let _ = file::remove(self.0);
    }
}

fn jitter(d: Duration) -> Duration {
    let mut b = [0u8; 1];
    // OK to ignore: without randomness the pause is simply not jittered.
    let _ = crate::sys::random::fill(&mut b);
    d.mul_f64(0.75 + f64::from(b[0]) / 512.0)
}
