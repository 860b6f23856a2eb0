//! The exhibits behind [`super::Algorithm`]. Each adapter calls its exhibit
//! with the system clock and passes the answer on; the seed stores' run ids
//! are fresh per acquisition, as the scheduler's are.

use std::path::Path;

use baton_lease::{Clock, SystemClock};
use jiff::{SignedDuration, Timestamp};

use super::{Algorithm, Failure, Holding, Kept, Let};
use crate::config::{Impl, Timing};
use crate::event::DefectKind;
use crate::exhibits::counter::Counter;
use crate::exhibits::schedule::{Reason, Released, StoreError};
use crate::exhibits::seed000::{AfterLoad, Seed000};
use crate::exhibits::seed001::Seed001;
use crate::exhibits::v1::V1;
use crate::exhibits::v2::{self, V2};

/// How old a forged stale lease is (seed 003 §9.6: "a lease stamped 24 h ago").
const STALE_AGE: SignedDuration = SignedDuration::from_hours(24);

pub(super) fn build(imp: Impl, path: &Path, t: &Timing) -> Box<dyn Algorithm> {
    match imp {
        Impl::V1 => Box::new(V1::new(path, t.stale_after())),
        Impl::V2 => Box::new(V2::new(path, t.stale_after())),
        Impl::Seed000 => Box::new(Seed000::new(path, t.seed_ttl)),
        Impl::Seed001 => Box::new(Seed001::new(path, t.seed_ttl)),
        // OK because the caller routes baton elsewhere, and the contender's
        // orders refuse shedlock without a store; a wrong route is a
        // programming error that every test would catch at once.
        Impl::Baton => unreachable!("baton is not an exhibit"),
        Impl::Shedlock => unreachable!("shedlock contends only in a store"),
        Impl::Counter => unreachable!("the counter is built with its bound"),
    }
}

/// The counter exhibit at `path`, admitting `bound` holders.
pub(super) fn counter(path: &Path, bound: u32) -> Box<dyn Algorithm> {
    Box::new(Counter::new(path, bound))
}

pub(super) fn prepare_free(imp: Impl, path: &Path, t: &Timing) -> Result<(), String> {
    match imp {
        Impl::Seed000 => Seed000::new(path, t.seed_ttl)
            .store()
            .create(t.seed_ttl)
            .map_err(|e| e.to_string()),
        Impl::Seed001 => Seed001::new(path, t.seed_ttl)
            .store()
            .create(t.seed_ttl)
            .map_err(|e| e.to_string()),
        // The bound does not matter to an empty count.
        Impl::Counter => Counter::new(path, 1).create().map_err(|e| e.to_string()),
        _ => Ok(()),
    }
}

pub(super) fn forge_stale(
    imp: Impl,
    path: &Path,
    t: &Timing,
    pid: u32,
    now: Timestamp,
) -> Result<(), String> {
    let at = now - STALE_AGE;
    match imp {
        Impl::V1 => V1::new(path, t.stale_after())
            .forge(pid, at)
            .map_err(|e| e.to_string()),
        Impl::V2 => V2::new(path, t.stale_after())
            .forge(pid, at)
            .map_err(|e| e.to_string()),
        Impl::Seed000 => Seed000::new(path, t.seed_ttl)
            .store()
            .forge(t.seed_ttl, at)
            .map_err(|e| e.to_string()),
        Impl::Seed001 => Seed001::new(path, t.seed_ttl)
            .store()
            .forge(t.seed_ttl, at)
            .map_err(|e| e.to_string()),
        Impl::Baton => Err("a baton lease is never forged: crash a real holder".into()),
        Impl::Shedlock => Err("the store's scenarios start from a free lock".into()),
        Impl::Counter => Err("the counter's scenarios start from a free lock".into()),
    }
}

fn instrument(e: impl std::fmt::Display) -> Failure {
    Failure::Instrument(e.to_string())
}

fn store_failure(e: StoreError) -> Failure {
    match e {
        StoreError::TempPathCollision { .. } => Failure::Defect {
            kind: DefectKind::TempPathCollision,
            detail: e.to_string(),
            terminal: false,
        },
        StoreError::Corrupt { .. } => Failure::Defect {
            kind: DefectKind::CorruptRecord,
            detail: e.to_string(),
            terminal: true,
        },
        StoreError::Io(io) => instrument(io),
    }
}

fn run_id() -> Result<String, Failure> {
    crate::rng::hex_token(8)
        .map_err(|e| instrument(format!("failed to read random bytes for a run id: {e}")))
}

// v1

impl Algorithm for V1 {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        match self.acquire(SystemClock.wall()) {
            Ok(Some(h)) => Ok(Some(Box::new(V1Held(self.clone(), Some(h))))),
            Ok(None) => Ok(None),
            Err(e) => Err(instrument(e)),
        }
    }
}

struct V1Held(V1, Option<crate::exhibits::v1::Handle>);

impl Holding for V1Held {
    fn renew(&mut self) -> Result<Kept, Failure> {
        Ok(Kept::NoRenewal)
    }
    fn release(mut self: Box<Self>) -> Result<Let, Failure> {
        // v1 cannot tell whether it was displaced: it unlinks regardless.
        match self.1.take() {
            Some(h) => self
                .0
                .release(h)
                .map(|()| Let::Released)
                .map_err(instrument),
            None => Ok(Let::Released),
        }
    }
}

// v2

impl Algorithm for V2 {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        match self.acquire(SystemClock.wall()) {
            Ok(Some(h)) => Ok(Some(Box::new(V2Held(self.clone(), Some(h))))),
            Ok(None) => Ok(None),
            Err(e) => Err(instrument(e)),
        }
    }
}

struct V2Held(V2, Option<v2::Handle>);

impl Holding for V2Held {
    fn renew(&mut self) -> Result<Kept, Failure> {
        Ok(Kept::NoRenewal)
    }
    fn release(mut self: Box<Self>) -> Result<Let, Failure> {
        let Some(h) = self.1.take() else {
            return Ok(Let::Released);
        };
        match self.0.release(h) {
            Ok(v2::Released::Removed) => Ok(Let::Released),
            Ok(v2::Released::LeftAlone) => Ok(Let::Displaced),
            Err(e) => Err(instrument(e)),
        }
    }
}

// counter

impl Algorithm for Counter {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        match self.acquire() {
            Ok(true) => Ok(Some(Box::new(CounterHeld(Some(self.clone()))))),
            Ok(false) => Ok(None),
            Err(e) => Err(instrument(e)),
        }
    }
}

struct CounterHeld(Option<Counter>);

impl Holding for CounterHeld {
    fn renew(&mut self) -> Result<Kept, Failure> {
        Ok(Kept::NoRenewal)
    }
    fn release(mut self: Box<Self>) -> Result<Let, Failure> {
        // The counter cannot tell whether it was displaced: it decrements.
        match self.0.take() {
            Some(c) => c.release().map(|()| Let::Released).map_err(instrument),
            None => Ok(Let::Released),
        }
    }
}

// seed 000

impl Algorithm for Seed000 {
    fn try_acquire(&self, hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        let id = run_id()?;
        match self
            .acquire(&id, SystemClock.wall(), hook)
            .map_err(store_failure)?
        {
            Reason::SkippedOverlap => Ok(None),
            Reason::Acquired | Reason::StaleLockReclaimed => {
                Ok(Some(Box::new(StoreHeld::Seed000(self.clone(), id))))
            }
        }
    }
}

// seed 001

impl Algorithm for Seed001 {
    fn try_acquire(&self, _hook: &dyn AfterLoad) -> Result<Option<Box<dyn Holding>>, Failure> {
        let id = run_id()?;
        match self
            .acquire(&id, SystemClock.wall())
            .map_err(store_failure)?
        {
            Reason::SkippedOverlap => Ok(None),
            Reason::Acquired | Reason::StaleLockReclaimed => {
                Ok(Some(Box::new(StoreHeld::Seed001(self.clone(), id))))
            }
        }
    }
}

enum StoreHeld {
    Seed000(Seed000, String),
    Seed001(Seed001, String),
}

impl Holding for StoreHeld {
    fn renew(&mut self) -> Result<Kept, Failure> {
        Ok(Kept::NoRenewal) // "stamps its expiry ONCE, at acquire, with no renewal anywhere"
    }
    fn release(self: Box<Self>) -> Result<Let, Failure> {
        let r = match *self {
            Self::Seed000(s, id) => s.release(&id),
            Self::Seed001(s, id) => s.release(&id),
        };
        match r.map_err(store_failure)? {
            Released::Cleared => Ok(Let::Released),
            Released::NotOurs => Ok(Let::Displaced),
        }
    }
}
