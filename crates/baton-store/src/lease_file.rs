//! The lock file's lease ([`baton_lease::Lease`]) as a [`Held`]: every call
//! is the lease's own, its outcomes rendered as the session has always
//! shown them. This module adds no behaviour; it must never retry, wait or
//! decide anything the lease itself does not.

use std::time::Duration;

use baton_lease::{Leader, Lease, Once};

use crate::held::{Held, HeldError, Release, Renewal, Restated};

impl Held for Lease {
    fn ttl(&self) -> Duration {
        self.lock().options().ttl
    }

    fn renew_wait(&self) -> Duration {
        self.lock().options().mutex_wait
    }

    fn fence(&self) -> u64 {
        Lease::fence(self).get()
    }

    fn token(&self) -> String {
        Lease::token(self).to_string()
    }

    fn host(&self) -> &str {
        &self.record().host
    }

    fn describe(&self) -> String {
        self.lock().path().display().to_string()
    }

    fn set_job_group(&mut self, pgid: u32, leader: Leader) -> Result<Renewal, HeldError> {
        Lease::set_job_group(self, pgid, leader)
            .map(renewal)
            .map_err(HeldError::new)
    }

    fn renew(&mut self) -> Result<Renewal, HeldError> {
        Lease::renew(self).map(renewal).map_err(HeldError::new)
    }

    fn restate(
        &mut self,
        run: Option<String>,
        occ: Option<String>,
        once: Option<&Once>,
    ) -> Result<Restated, HeldError> {
        let r = Lease::restate(self, run, occ, once).map_err(HeldError::new)?;
        Ok(match r {
            baton_lease::Restated::Done => Restated::Done,
            baton_lease::Restated::Claimed { at } => Restated::Claimed { at },
            baton_lease::Restated::Lost(l) => Restated::Lost(l.to_string()),
            baton_lease::Restated::Unconfirmed(b) => Restated::Unconfirmed(b.to_string()),
        })
    }

    fn withdraw(&mut self, once: &Once) -> Result<Option<Renewal>, HeldError> {
        Ok(Lease::withdraw(self, once)
            .map_err(HeldError::new)?
            .map(renewal))
    }

    fn release(self: Box<Self>) -> Result<Release, HeldError> {
        let r = Lease::release(*self).map_err(HeldError::new)?;
        Ok(match r {
            baton_lease::Release::Released => Release::Released,
            baton_lease::Release::Lost(l) => Release::Lost(l.to_string()),
            baton_lease::Release::Unconfirmed(b) => Release::Unconfirmed(b.to_string()),
        })
    }
}

fn renewal(r: baton_lease::Renewal) -> Renewal {
    match r {
        baton_lease::Renewal::Renewed => Renewal::Renewed,
        baton_lease::Renewal::Lost(l) => Renewal::Lost(l.to_string()),
        baton_lease::Renewal::Unconfirmed(b) => Renewal::Unconfirmed(b.to_string()),
    }
}
