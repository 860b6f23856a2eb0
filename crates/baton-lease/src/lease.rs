//! The held lease: the guard a successful acquire returns.
//!
//! A [`Lease`] knows its token and fence. Every change it makes to the record
//! (renew, naming the job's process group, release) happens inside the file's
//! mutex and only when the token on disk is still its own; otherwise it
//! changes nothing and reports the lease [`Lost`](crate::Lost). Dropping a
//! lease releases it, best effort: a failure is logged, never a panic.
//!
//! What it does not guarantee: a paused holder (stopped, swapped out, on a
//! partitioned host) can still act after its lease moved; only the fence,
//! checked by whatever the job writes, stops a stale writer then. A holder
//! that can no longer renew must stop its job itself; `baton exec` does.

use crate::decide::Verdict;
use crate::error::Error;
use crate::lock::{Lock, Opened, Opening, micros, millis};
use crate::outcome::{Lost, Release, Renewal, Restated};
use crate::presence::{self, Presence};
use crate::record::{self, Body, Free, Held, Leader};
use crate::token::{Fence, Token};

/// A lease this process holds. Dropping it releases it.
#[derive(Debug)]
pub struct Lease {
    lock: Lock,
    record: Held,
    replaced: Verdict,
    /// The keys whose claims a restatement never drops to make room.
    mates: Vec<String>,
    /// The claims as they were before this lease's latest claim (at its
    /// acquisition or its latest restatement), for [`Lease::withdraw`].
    before: Option<crate::Claims>,
    done: bool,
    /// The process that acquired it: a forked child that never `exec`s must
    /// not release its parent's lease when it drops its copy.
    owner: u32,
    /// The lock file as the last critical section opened it, kept open for
    /// the next one. A copy a forked child inherits is harmless: the mutex
    /// is only held inside a section, and a descriptor without it changes
    /// nothing for anyone.
    opening: Option<Opening>,
    /// The record as rendered into the file by the last write: a section
    /// that finds exactly it there need not parse it.
    written: String,
    /// The lease's presence outside the filesystem ([`crate::presence`]),
    /// from its first rewrite ([`Lease::stand`]) until the release's section
    /// or the lease's end. A forked child's copy closes with the child, or
    /// at its `exec`.
    presence: Option<Presence>,
    /// Whether the presence was tried ([`Lease::stand`]).
    stood: bool,
}

impl Lease {
    pub(crate) fn new(
        lock: Lock,
        record: Held,
        replaced: Verdict,
        mates: Vec<String>,
        before: Option<crate::Claims>,
        opening: Option<Opening>,
        written: String,
    ) -> Self {
        Self {
            // The record's pid is this process's, read (and checked against
            // a fork) by the acquisition.
            owner: record.pid,
            lock,
            record,
            replaced,
            mates,
            before,
            done: false,
            opening,
            written,
            presence: None,
            stood: false,
        }
    }

    /// This acquisition's token.
    pub fn token(&self) -> Token {
        self.record.token
    }

    /// This acquisition's fence.
    pub fn fence(&self) -> Fence {
        self.record.fence
    }

    /// The record as last written.
    pub fn record(&self) -> &Held {
        &self.record
    }

    /// What the acquisition found and replaced: [`Verdict::Absent`] or
    /// [`Verdict::Free`] normally, [`Verdict::Dead`] or [`Verdict::Expired`]
    /// when it broke a holder's lease.
    pub fn replaced(&self) -> &Verdict {
        &self.replaced
    }

    /// The lock this lease is on.
    pub fn lock(&self) -> &Lock {
        &self.lock
    }

    /// Stamps the record as renewed now.
    ///
    /// # Errors
    ///
    /// I/O failures. A lease that passed to someone else is
    /// [`Renewal::Lost`], not an error.
    pub fn renew(&mut self) -> Result<Renewal, Error> {
        self.rewrite(|_| {})
    }

    /// Names the process group of the job this holder runs, and what leads
    /// it, so that a judge finding the holder dead also asks whether the job
    /// still runs. [`Leader::NamespaceInit`] only for a group led by the init
    /// of a pid namespace holding the whole step: a judge then takes that
    /// init's end for the step's. Also renews.
    ///
    /// # Errors
    ///
    /// As [`Lease::renew`].
    pub fn set_job_group(&mut self, pgid: u32, leader: Leader) -> Result<Renewal, Error> {
        let leader_start = crate::sys::process::stat(pgid)
            .ok()
            .flatten()
            .map(|s| s.start);
        self.rewrite(|h| {
            h.pgid = Some(pgid).filter(|&p| p > 0);
            h.jstart = leader_start;
            h.leader = leader;
        })
    }

    /// Restates what this lease runs, for a holder that runs one occurrence
    /// after another under one lease (a scheduler draining its queue): the
    /// run id and occurrence shown to operators and kept in the free
    /// marker, and a claim, which is refused ([`Restated::Claimed`]) when
    /// its key already holds this occurrence or a later one. Also renews.
    ///
    /// # Errors
    ///
    /// I/O failures, and [`Error::ClaimsFull`] when the claim does not fit
    /// the record (nothing was changed). A lease that passed to someone else
    /// is [`Restated::Lost`], not an error.
    pub fn restate(
        &mut self,
        run: Option<String>,
        occ: Option<String>,
        once: Option<&crate::Once>,
    ) -> Result<Restated, Error> {
        if let Some(once) = once
            && let Some(at) = self
                .record
                .claims
                .refuses(once, self.lock.now().wall.as_second())
        {
            // The record is ours, so our copy of its claims is current.
            return Ok(Restated::Claimed { at });
        }
        let claims = match once {
            Some(once) => Some(self.lock.fit(&self.record.claims, once, &self.mates)?),
            None => None,
        };
        let before = self.record.claims.clone();
        let claimed = claims.is_some();
        let renewal = self.rewrite(|h| {
            h.run = run;
            h.occ = occ;
            if let Some(claims) = claims {
                h.claims = claims;
            }
        })?;
        if claimed && renewal == Renewal::Renewed {
            self.before = Some(before);
        }
        Ok(match renewal {
            Renewal::Renewed => Restated::Done,
            Renewal::Lost(l) => Restated::Lost(l),
            Renewal::Unconfirmed(b) => Restated::Unconfirmed(b),
        })
    }

    /// Takes back this lease's latest claim, `once`, for an occurrence that
    /// did not start after all (its start could not be recorded): the key's
    /// claim is what it was before, so the occurrence may still run, or be
    /// decided missed, by whoever comes next. Also renews. Written in place
    /// like every change to the record, so it lands on a full disk too.
    ///
    /// Returns `None`, changing nothing, when `once` is not this lease's
    /// latest claim; otherwise how the rewrite went
    /// ([`Renewal::Renewed`]: the claim is taken back).
    ///
    /// # Errors
    ///
    /// As [`Lease::renew`]. A lease that passed to someone else is
    /// [`Renewal::Lost`], not an error.
    pub fn withdraw(&mut self, once: &crate::Once) -> Result<Option<Renewal>, Error> {
        let Some(before) = self.before.clone() else {
            return Ok(None);
        };
        if self.record.claims.get(&once.key) != Some(once.at) {
            return Ok(None);
        }
        let claims = self.record.claims.restored(&once.key, &before);
        let renewal = self.rewrite(|h| h.claims = claims)?;
        if renewal == Renewal::Renewed {
            self.before = None;
        }
        Ok(Some(renewal))
    }

    /// Frees the lock, keeping the fence and occurrence in a free marker.
    ///
    /// # Errors
    ///
    /// I/O failures. A lease that had already passed to someone else is
    /// [`Release::Lost`]: nothing was changed.
    pub fn release(mut self) -> Result<Release, Error> {
        self.done = true;
        self.release_inner()
    }

    fn rewrite(&mut self, change: impl FnOnce(&mut Held)) -> Result<Renewal, Error> {
        self.stand();
        let written = Some((self.written.as_str(), &self.record));
        let section = match self.lock.reopen_locked(self.opening.as_ref(), written)? {
            Opened::Missing => return Ok(Renewal::Lost(self.lost(None))),
            Opened::Busy(b) => return Ok(Renewal::Unconfirmed(b)),
            Opened::Section(s) => s,
        };
        if !self.owns(section.body()) {
            return Ok(Renewal::Lost(self.lost(Some(section.body().clone()))));
        }
        let now = self.lock.now();
        let mut next = self.record.clone();
        change(&mut next);
        next.renewed = micros(now.wall);
        next.renewed_boot = Some(millis(now.boot));
        let line = next.render();
        self.lock.write(&section, &line)?;
        self.record = next;
        self.written = line;
        self.opening = Some(section.opening().clone());
        Ok(Renewal::Renewed)
    }

    fn release_inner(&mut self) -> Result<Release, Error> {
        let written = Some((self.written.as_str(), &self.record));
        let section = match self.lock.reopen_locked(self.opening.as_ref(), written)? {
            Opened::Missing => return Ok(Release::Lost(self.lost(None))),
            Opened::Busy(b) => return Ok(Release::Unconfirmed(b)),
            Opened::Section(s) => s,
        };
        if !self.owns(section.body()) {
            return Ok(Release::Lost(self.lost(Some(section.body().clone()))));
        }
        // Given up before the free marker is written, inside the mutex: a
        // contender that takes the marker next must not find the name still
        // held and take this lease for one elsewhere.
        self.presence = None;
        let free = Free {
            version: record::VERSION,
            fence: Some(self.record.fence),
            released: Some(micros(self.lock.clock().wall())),
            occ: self.record.occ.clone(),
            claims: self.record.claims.clone(),
        };
        self.lock.write(&section, &free.render())?;
        Ok(Release::Released)
    }

    /// Takes the lease's presence ([`crate::presence`]), once, before the
    /// lease's first rewrite: before its job's group is named, so before
    /// any job of it runs (a holder opens its job's gate only after), or at
    /// its first renewal. The rewrite after it checks that the path still
    /// names the lease's file: a file moved away before the presence was
    /// taken is a lost lease, and one moved after is seen by the presence.
    /// A lease taken and let go of without running anything (a cycle of
    /// `acquire` and `release`) never pays for a socket.
    fn stand(&mut self) {
        if self.stood {
            return;
        }
        self.stood = true;
        if let Some(o) = &self.opening {
            self.presence = presence::hold(self.lock.path(), o.dev());
        }
    }

    fn owns(&self, body: &Body) -> bool {
        matches!(body, Body::Held(h) if h.token == self.record.token)
    }

    fn lost(&self, found: Option<Body>) -> Lost {
        Lost {
            path: self.lock.path().to_owned(),
            found,
        }
    }
}

impl Drop for Lease {
    /// Releases, best effort, unless the lease is already released, this is
    /// a forked copy, or the thread is panicking (a panicking holder cannot
    /// know its job has stopped, so the lease is left for a judge to weigh).
    /// A release that fails has no caller to tell: it is a `tracing`
    /// warning, which the binary writes on stderr.
    fn drop(&mut self) {
        if self.done || self.owner != std::process::id() || std::thread::panicking() {
            return;
        }
        self.done = true;
        match self.release_inner() {
            Ok(Release::Released) => {}
            Ok(Release::Lost(lost)) => {
                tracing::warn!("dropping a lease that was already lost: {lost}")
            }
            Ok(Release::Unconfirmed(busy)) => tracing::warn!(
                "could not release the dropped lease on {}: {busy}",
                self.lock.path().display()
            ),
            Err(e) => tracing::warn!("could not release a dropped lease: {e}"),
        }
    }
}
