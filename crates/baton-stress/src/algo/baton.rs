//! baton-lease behind [`super::Algorithm`]: a real `baton_lease::Lock` with
//! the campaign's TTL, and its lease. Every outcome other than `Acquired`
//! (busy, hung, orphaned) is "not acquired"; a version conflict, which no
//! scenario writes, is an instrument error.

use std::path::Path;

use baton_lease::{Lease, Lock, Options, Outcome, Release, Renewal};

use super::{Algorithm, Failure, Holding, Kept, Let};
use crate::config::Timing;
use crate::exhibits::seed000::AfterLoad;

pub(crate) struct Baton {
    lock: Lock,
}

impl Baton {
    pub(crate) fn new(path: &Path, timing: &Timing) -> Self {
        Self {
            lock: Lock::new(path).with_options(Options {
                ttl: timing.baton_ttl,
                ..Options::default()
            }),
        }
    }
}

impl Algorithm for Baton {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        match self.lock.try_acquire() {
            Ok(Outcome::Acquired(lease)) => Ok(Some(Box::new(Held(Some(lease))))),
            Ok(Outcome::VersionConflict(c)) => Err(Failure::Instrument(c.to_string())),
            Ok(_) => Ok(None),
            Err(e) => Err(Failure::Instrument(e.to_string())),
        }
    }
}

struct Held(Option<Lease>);

impl Holding for Held {
    fn renew(&mut self) -> Result<Kept, Failure> {
        let Some(lease) = self.0.as_mut() else {
            return Ok(Kept::Lost);
        };
        match lease.renew() {
            Ok(Renewal::Renewed) => Ok(Kept::Renewed),
            Ok(Renewal::Lost(_)) => Ok(Kept::Lost),
            Ok(Renewal::Unconfirmed(_)) => Ok(Kept::Unconfirmed),
            Err(e) => Err(Failure::Instrument(e.to_string())),
        }
    }

    fn release(mut self: Box<Self>) -> Result<Let, Failure> {
        let Some(lease) = self.0.take() else {
            return Ok(Let::Displaced);
        };
        match lease.release() {
            Ok(Release::Released) => Ok(Let::Released),
            Ok(Release::Lost(_)) => Ok(Let::Displaced),
            Ok(Release::Unconfirmed(b)) => Err(Failure::Instrument(format!(
                "could not confirm a release: {b}"
            ))),
            Err(e) => Err(Failure::Instrument(e.to_string())),
        }
    }
}
