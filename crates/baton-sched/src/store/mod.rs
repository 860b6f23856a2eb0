//! Which store the configuration names, and the clock it decides by.
//!
//! The store itself is `baton_store::Store`: the scheduler asks it what it
//! must know ([`Store::shared`], [`Store::renew_wait`]) and never which
//! store it is. [`open`] chooses from the configuration (`[store] url`, or
//! `BATON_STORE_URL`, for PostgreSQL; else files in the state directory),
//! and refuses rather than fall back to files when the configured store
//! cannot be used: two hosts that silently used local locks would run a job
//! twice. Nothing else in the scheduler may name an implementation, open a
//! ledger or take a lease by itself. [`examine`] is an operator's look at
//! either that changes nothing (`baton doctor`).

pub mod examine;

pub use baton_store::Store;
pub use baton_store::store::{Error, Guard, GuardClaim, LockRef, Refused, Taken, Vouch};

use std::sync::Mutex;

use baton_store::ledger::{Error as LedgerError, Records};
use jiff::Timestamp;

use crate::config::{Config, Job, Source, StoreSettings};

impl Job {
    /// What the store needs to know of this job's lock.
    pub fn lock_ref(&self) -> LockRef<'_> {
        self.slot_ref(1)
    }

    /// What the store needs to know of slot `slot` (1-based) of this job's
    /// lock; slot 1 is [`Job::lock_ref`].
    pub fn slot_ref(&self, slot: u32) -> LockRef<'_> {
        LockRef {
            job: &self.name,
            lock: &self.lock.value,
            slot,
            ttl: self.policy.ttl.value,
            takeover_grace: self.policy.takeover_grace.value,
        }
    }

    /// How many runs of the job may be in flight at once (`max_concurrent`):
    /// its lock's slots.
    pub fn slots(&self) -> u32 {
        self.policy.max_concurrent.value.max(1)
    }

    /// Every slot of this job's lock, slot 1 first.
    pub fn slot_refs(&self) -> Vec<LockRef<'_>> {
        (1..=self.slots()).map(|k| self.slot_ref(k)).collect()
    }

    /// Every slot of this job's lock, and after them the slots above them
    /// that `store` still records ([`Store::slots_above`]: left by runs
    /// from when `max_concurrent` was higher, which may still be in
    /// flight); each with its number. A store that cannot say which are
    /// left shows the job's own.
    pub fn slot_refs_in(&self, store: &dyn Store) -> Vec<(u32, LockRef<'_>)> {
        let n = self.slots();
        (1..=n)
            .chain(store.slots_above(&self.lock_ref(), n).unwrap_or_default())
            .map(|k| (k, self.slot_ref(k)))
            .collect()
    }
}

/// The newest occurrence `job` claimed in any slot of its lock
/// ([`claim_of_slots`]), or under the lock it ran under before its lock was
/// renamed ([`claim_in_guard`]): every scheduled occurrence at or before it
/// may have started.
///
/// # Errors
///
/// As either: then what was claimed is unknown.
pub fn claim_of_job(store: &dyn Store, job: &Job) -> Result<Option<i64>, Error> {
    Ok(claim_of_slots(store, job)?.max(claim_in_guard(store, job)?))
}

/// The newest occurrence `job` claimed in any slot of its lock
/// ([`Store::claim_of`] of each).
///
/// # Errors
///
/// As [`Store::claim_of`], for any slot.
pub fn claim_of_slots(store: &dyn Store, job: &Job) -> Result<Option<i64>, Error> {
    let mut newest = None;
    for lock in job.slot_refs() {
        newest = newest.max(store.claim_of(&lock)?);
    }
    Ok(newest)
}

/// The newest occurrence the job's guard says it claimed under another
/// lock (the one it ran under before a rename: [`Store::runs_elsewhere`]);
/// `None` when the guard names this lock or none, or its run there is in
/// flight (the run is refused then anyway).
///
/// # Errors
///
/// As [`Store::runs_elsewhere`].
pub fn claim_in_guard(store: &dyn Store, job: &Job) -> Result<Option<i64>, Error> {
    Ok(
        match store.runs_elsewhere(&job.lock_ref(), Some(i64::MIN))? {
            Guard::Claimed { at } => Some(at),
            Guard::Clear | Guard::Elsewhere(_) => None,
        },
    )
}

/// `job`'s lock file in `state_dir` (the embedded store's).
pub fn lock_file(state_dir: &std::path::Path, job: &Job) -> baton_lease::Lock {
    baton_ledger::lock_file(state_dir, &job.lock_ref())
}

/// Why `[store]` cannot be used: its URL or its password.
#[derive(Debug, thiserror::Error)]
#[error("failed to use the store url {url} ({provenance}): {source}")]
pub struct Unusable {
    /// The URL, its password masked.
    url: String,
    /// Where it was set.
    provenance: String,
    /// What is wrong with it.
    source: baton_pg::Error,
}

/// Where the store `[store]` names is and how to reach it, resolved
/// against the environment: its URL with the keys beside it (`sslmode` only
/// when something sets it, so that the URL's, or `sslrootcert = "system"`,
/// decides otherwise).
///
/// # Errors
///
/// When the URL, the password or a TLS setting cannot be used: the message
/// names the setting and its source.
pub fn target(s: &StoreSettings) -> Result<baton_pg::Target, Unusable> {
    let env = |name: &str| std::env::var(name).ok();
    baton_pg::Target::resolve_with(s.url.value.secret(), &pg_settings(s), &env).map_err(|source| {
        Unusable {
            url: s.url.value.to_string(),
            provenance: s.url.provenance(),
            source,
        }
    })
}

/// The settings beside the URL that [`target`] resolves, and that
/// [`postgres`] keys its shared stores by: one list of them.
fn pg_settings(s: &StoreSettings) -> baton_pg::Settings {
    baton_pg::Settings {
        password_file: s.password_file.value.clone(),
        sslmode: (s.sslmode.source != Source::Default).then_some(s.sslmode.value),
        sslrootcert: s.sslrootcert.value.clone(),
        sslcert: s.sslcert.value.clone(),
        sslkey: s.sslkey.value.clone(),
        prepare: s.prepare.value,
    }
}

/// The PostgreSQL store `[store]` names ([`target`]).
///
/// While a value it returned lives, the store another call returns for the
/// same settings shares its connections: a run's ledger, its lease calls
/// and the lease it holds then use one connection, whichever part of the
/// command opened the store. Nothing is kept once every value is dropped
/// (a process about to fork its workers keeps no thread).
///
/// # Errors
///
/// As [`target`].
pub fn postgres(s: &StoreSettings) -> Result<baton_pg::Postgres, Unusable> {
    static LIVE: Mutex<Vec<(String, baton_pg::WeakPostgres)>> = Mutex::new(Vec::new());
    let key = format!("{:?} {:?}", s.url.value.secret(), pg_settings(s));
    let mut live = LIVE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut found = None;
    live.retain(|(k, weak)| match weak.upgrade() {
        Some(store) => {
            if *k == key {
                found = Some(store);
            }
            true
        }
        None => false,
    });
    if let Some(store) = found {
        return Ok(store);
    }
    let store = baton_pg::Postgres::new(target(s)?);
    live.push((key, store.downgrade()));
    Ok(store)
}

/// What the store's settings call for an operator to fix (a password file
/// others may read), for the program to say; none without a store, or
/// when it cannot be used (that is said where it is used).
pub fn warnings(config: &Config) -> Vec<baton_pg::Warning> {
    match config.store.as_ref().map(target) {
        Some(Ok(t)) => t.warnings().to_vec(),
        _ => Vec::new(),
    }
}

/// The store `config` names: PostgreSQL with `[store] url`, else files in
/// the state directory.
///
/// # Errors
///
/// When `[store]` is set but cannot be used (the URL or the password):
/// nothing falls back to local files.
pub fn open(config: &Config) -> Result<Box<dyn Store>, Unusable> {
    match &config.store {
        Some(s) => Ok(Box::new(postgres(s)?)),
        None => Ok(Box::new(baton_ledger::Files::new(
            config.settings.state_dir.value.clone(),
        ))),
    }
}

/// Whether `config`'s store is shared by several hosts
/// ([`Store::shared`]); a `[store]` that cannot be used names a server, so
/// it counts as shared.
pub fn shared(config: &Config) -> bool {
    match open(config) {
        Ok(s) => s.shared(),
        Err(_) => true,
    }
}

fn unusable(config: &Config, why: Unusable) -> LedgerError {
    LedgerError::store(
        baton_store::ledger::Kind::Failed,
        baton_store::ledger::Unusable {
            action: "open the ledger".into(),
            store: config
                .store
                .as_ref()
                .map_or_else(|| "the store".into(), |s| s.url.value.to_string()),
            source: Box::new(why),
        },
    )
}

/// Opens the ledger of `config`'s store for writing.
///
/// # Errors
///
/// As [`Store::records`], and when the store cannot be used.
pub fn records(config: &Config, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
    open(config).map_err(|e| unusable(config, e))?.records(now)
}

/// As [`records`], the store's checks sent with the first call
/// ([`Store::records_pipelined`]): for callers that treat any call's
/// failure as the open's.
///
/// # Errors
///
/// As [`records`]; the first call's errors include the open's.
pub fn records_pipelined(config: &Config, now: Timestamp) -> Result<Box<dyn Records>, LedgerError> {
    open(config)
        .map_err(|e| unusable(config, e))?
        .records_pipelined(now)
}

/// Opens the ledger of `config`'s store to read it, when there is one.
pub fn existing_records(
    config: &Config,
    now: Timestamp,
) -> Option<Result<Box<dyn Records>, LedgerError>> {
    match open(config) {
        Ok(s) => s.existing_records(now),
        Err(e) => Some(Err(unusable(config, e))),
    }
}

/// How far this host's clock may be from a shared store's, beyond what the
/// measurement itself cannot tell apart, before it is said on stderr
/// (decisions use the store's either way).
const SKEW_SAID: jiff::SignedDuration = jiff::SignedDuration::from_secs(2);

/// A measurement of the store's clock whose round trip took longer than
/// this is taken once more, on the connection it opened: the first one's
/// round trip carries the connection's own (and any wait of the server's),
/// which the middle of the round trip misplaces by up to half.
const MEASURE_AGAIN: std::time::Duration = std::time::Duration::from_millis(500);

/// One reading of the store's clock: what it said, and when (this host's
/// boot and wall clocks) the call that read it began and how long it took.
struct Reading {
    store: Timestamp,
    boot0: std::time::Duration,
    wall0: Timestamp,
    took: std::time::Duration,
}

/// The clock decisions are made by: for a store several hosts share, its
/// own, measured through `ledger` (the store's time against the middle of
/// the round trip, by this host's boot clock; measured again once when the
/// first round trip was slow), so that what is due, what is missed and
/// every stamp are the same whichever host's clock is off; `local`
/// otherwise.
///
/// # Errors
///
/// When the store's clock cannot be read: nothing may then be decided.
pub fn decision_clock(
    ledger: &mut dyn Records,
    local: std::sync::Arc<dyn baton_lease::Clock>,
) -> Result<std::sync::Arc<dyn baton_lease::Clock>, LedgerError> {
    decision_clock_with(ledger, local, |l| Ok((l.store_clock()?, ()))).map(|(clock, ())| clock)
}

/// As [`decision_clock`], with the store's clock read by `read` along with
/// whatever else it reads in the same call (a tick's
/// [`Records::overview`]), returned beside the clock.
///
/// # Errors
///
/// When `read` fails: nothing may then be decided.
pub fn decision_clock_with<T>(
    ledger: &mut dyn Records,
    local: std::sync::Arc<dyn baton_lease::Clock>,
    read: impl FnOnce(&mut dyn Records) -> Result<(Option<Timestamp>, T), LedgerError>,
) -> Result<(std::sync::Arc<dyn baton_lease::Clock>, T), LedgerError> {
    let (boot0, wall0) = (local.boot(), local.wall());
    let (store, read) = read(ledger)?;
    let Some(store) = store else {
        return Ok((local, read));
    };
    let mut r = Reading {
        store,
        boot0,
        wall0,
        took: local.boot().saturating_sub(boot0),
    };
    if r.took > MEASURE_AGAIN {
        let (boot0, wall0) = (local.boot(), local.wall());
        // A second reading that fails changes nothing: the first stands.
        if let Ok(Some(store)) = ledger.store_clock() {
            let took = local.boot().saturating_sub(boot0);
            if took < r.took {
                r = Reading {
                    store,
                    boot0,
                    wall0,
                    took,
                };
            }
        }
    }
    let half = r.took / 2;
    let half_signed = jiff::SignedDuration::try_from(half).unwrap_or(jiff::SignedDuration::MAX);
    let mid = r.wall0.checked_add(half_signed).unwrap_or(r.wall0);
    let offset = r.store.duration_since(mid);
    let at_boot = r.boot0 + half;
    // The store read its clock somewhere in the round trip, not surely in
    // its middle: only an offset beyond that half is this host's clock.
    if offset.abs() > SKEW_SAID.saturating_add(half_signed) {
        let (how, by) = if offset.is_negative() {
            ("ahead of", offset.abs())
        } else {
            ("behind", offset)
        };
        crate::say::line(format_args!(
            "this host's clock is {} {how} the store's ({}); what is due is decided by the \
             store's clock",
            crate::units::show_duration(by.unsigned_abs()),
            ledger.location()
        ));
    }
    Ok((
        std::sync::Arc::new(baton_lease::ShiftedClock::new(
            local, r.store, at_boot, offset,
        )),
        read,
    ))
}

/// The clock a command of `config` decides by ([`decision_clock`]): the
/// shared store's, measured on a connection of its own, or `local`.
///
/// # Errors
///
/// When the shared store cannot be reached: nothing may then be decided.
pub fn clock_for(
    config: &Config,
    local: std::sync::Arc<dyn baton_lease::Clock>,
) -> Result<std::sync::Arc<dyn baton_lease::Clock>, LedgerError> {
    if !shared(config) {
        return Ok(local);
    }
    let mut l = records(config, local.wall())?;
    decision_clock(l.as_mut(), local)
}
