//! Whether the configuration as it is now still lets a lease's holder start
//! one more run: a holder that runs several under one lease (a catch-up
//! batch, a backfill, what waits in its lock's queue, a lease taken again
//! for what was queued meanwhile) read its configuration when it started,
//! and the file may have changed since. Before each run after the first it
//! reads the file again, and stops when the job is gone or disabled, the
//! scheduler's kill switch is set, the job's lock is another, or the slot
//! it holds is above the job's `max_concurrent`; a file that does not load
//! stops it too (one that is not there at all was never read: a
//! configuration handed over whole, as a service's command jobs are). What
//! it leaves stays queued, or due, for a later tick under the file as it is
//! then.
//!
//! This module reads and compares; it never runs, takes or releases
//! anything.

use crate::config::{Config, Overrides};

/// Why the configuration file as it is now forbids another run of `job`
/// in slot `slot` under the lease a holder took with `config`, an earlier
/// reading of it; `None` when nothing forbids it (or `config` has no such
/// job to compare with).
pub(crate) fn forbids(config: &Config, job: &str, slot: u32) -> Option<String> {
    let was = config.jobs.get(job)?;
    // The same state directory as this process's, whatever set it.
    let over = Overrides::from_env(Some(config.settings.state_dir.value.clone()));
    let now = match crate::config::load(&config.path, &over) {
        Ok(now) => now,
        // No file there: a configuration handed over whole (a service's
        // command jobs, `baton __run` on its standard input) has no file to
        // read again.
        Err(crate::config::ConfigError::Missing { .. }) => return None,
        Err(e) => return Some(format!("the configuration does not load now: {e}")),
    };
    if !now.enabled() {
        return Some("the scheduler is disabled now (enabled = false)".into());
    }
    let Some(is) = now.jobs.get(job) else {
        return Some(format!("job {job} is no longer configured"));
    };
    if !is.enabled.value {
        return Some(format!("job {job} is disabled now (enabled = false)"));
    }
    if is.lock.value != was.lock.value {
        return Some(format!(
            "job {job}'s lock is {:?} now, not {:?}",
            is.lock.value, was.lock.value
        ));
    }
    if slot > is.slots() {
        return Some(format!(
            "slot {slot} is above job {job}'s max_concurrent = {} now",
            is.slots()
        ));
    }
    None
}
