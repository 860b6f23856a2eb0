//! The jobs' locks, read as `baton status` reads them (lock files, or the
//! store's lease rows): each must be readable and a record this build can
//! judge. A hung or orphaned holder is said, with the command that stops
//! it; a foreign or unreadable record is a failure (every run of that lock
//! is refused until it is dealt with).

use std::collections::{BTreeMap, BTreeSet};

use baton_lease::{Foreign, Verdict};

use super::finding::Finding;
use crate::config::{Config, Job};
use crate::store::Store;

const CHECK: &str = "locks";

/// Checks the lock of every job of `c` in `store`; `unread` are the jobs
/// defined with a problem (not in `c`), whose locks are unknown.
pub(super) fn check(c: &Config, store: &dyn Store, unread: &BTreeSet<String>) -> Vec<Finding> {
    let mut by_lock: BTreeMap<&str, &Job> = BTreeMap::new();
    for j in c.jobs.values() {
        by_lock.entry(j.lock.value.as_str()).or_insert(j);
    }
    let unchecked = (!unread.is_empty()).then(|| {
        let names: Vec<&str> = unread.iter().map(String::as_str).collect();
        format!(
            "{} defined with a problem ({}), whose {} not checked",
            if names.len() == 1 {
                "1 job is"
            } else {
                "jobs are"
            },
            names.join(", "),
            if names.len() == 1 {
                "lock is"
            } else {
                "locks are"
            },
        )
    });
    if by_lock.is_empty() {
        return vec![match unchecked {
            Some(why) => Finding::warn(
                CHECK,
                format!("no lock checked: {why}"),
                "fix the config problems above; the locks are checked then",
            ),
            None => Finding::ok(CHECK, "no job, so no lock"),
        }];
    }
    let config = c.path.display();
    let pg = store.shared();
    // `baton lock` works on lock files; a store's lease frees itself once
    // its holder is judged dead or stops renewing.
    let stop = |name: &str, what: &str| {
        if pg {
            "`baton status` names its holder's host and pid: stop that process there; the lease \
             then frees itself"
                .to_owned()
        } else {
            format!("`baton lock break --kill --config {config} {name}` stops {what}")
        }
    };
    let mut found = Vec::new();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    // Every slot of a job's lock (`max_concurrent`), slot 1 first.
    let slots: Vec<_> = by_lock.values().flat_map(|job| job.slot_refs()).collect();
    for lock in &slots {
        let name: &str = &lock.name();
        let label = store.lock_label(lock);
        match store.inspect(lock) {
            Err(e) => found.push(Finding::fail(
                CHECK,
                format!("lock {name} ({label}) cannot be read: {e}"),
                "the message says what to do; until then, every run of its jobs is refused",
            )),
            Ok(None) => *counts.entry("never taken").or_default() += 1,
            Ok(Some(v)) => match &v {
                Verdict::Hung { holder, .. } => found.push(Finding::warn(
                    CHECK,
                    format!(
                        "lock {name} ({label}) is held by a hung holder, alive but not \
                             renewing: {holder}"
                    ),
                    stop(name, "it and its job"),
                )),
                Verdict::Orphaned {
                    holder,
                    pgid,
                    strangers: Some(s),
                } => found.push(Finding::warn(
                    CHECK,
                    format!(
                        "lock {name} ({label}): its holder is gone and its job's group {pgid} \
                             still has members, but {s}: {holder}"
                    ),
                    format!(
                        "check them (`ps -o pid,user,args -g {pgid}`); once sure nothing of the \
                         job runs, `baton lock break --force --config {config} {name}` breaks the \
                         lease"
                    ),
                )),
                Verdict::Orphaned {
                    holder,
                    pgid,
                    strangers: None,
                } => found.push(Finding::warn(
                    CHECK,
                    format!(
                        "lock {name} ({label}): its holder is gone but its job's group {pgid} \
                             still runs: {holder}"
                    ),
                    stop(name, "the group"),
                )),
                Verdict::Refused(f) => {
                    let what = match f {
                        Foreign::Version(v) => format!("holds a lease of {v}"),
                        Foreign::Unreadable(why) => {
                            format!("holds a record that cannot be read: {why}")
                        }
                        Foreign::NotALock(why) => format!("is no lock record: {why}"),
                    };
                    found.push(Finding::fail(
                        CHECK,
                        format!("lock {name} ({label}) {what}; every run of it is refused"),
                        if pg {
                            "upgrade baton on this host to the version of the hosts that wrote it"
                                .to_owned()
                        } else {
                            format!(
                                "`baton lock show --config {config} {name}` describes it; once \
                                     nothing runs under it, `baton lock break --force --config \
                                     {config} {name}`"
                            )
                        },
                    ));
                }
                Verdict::Absent => *counts.entry("never taken").or_default() += 1,
                Verdict::Live { .. } => *counts.entry("held").or_default() += 1,
                _ => *counts.entry("free").or_default() += 1,
            },
        }
    }
    if found.is_empty() {
        let n = slots.len();
        let tally: Vec<String> = counts.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let kind = store.locks_are();
        let message = format!(
            "{n} {}, {kind}, all readable ({})",
            if n == 1 { "lock" } else { "locks" },
            tally.join(", ")
        );
        found.push(match unchecked {
            Some(why) => Finding::warn(
                CHECK,
                format!("{message}; {why}"),
                "fix the config problems above; their locks are checked then",
            ),
            None => Finding::ok(CHECK, message),
        });
    }
    found
}
