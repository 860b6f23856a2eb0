//! The scenarios: each a named fault with its setup, its injection and the
//! evidence to judge. A scenario's `run` builds the trial (configuration,
//! jobs, hosts, store), injects its fault, lets the dust settle, runs the
//! probe (does a later occurrence still run?), and judges
//! ([`crate::check`]) what the jobs saw against what baton recorded.
//!
//! - [`sweep`]: every failpoint of a run × every action (kill -9 of the
//!   process at the point, of its parent tick, of the job's tree; a stall;
//!   a disk that fills at that point), on one host;
//! - [`local`]: one host's faults: clocks, planted files, FIFOs, locks
//!   renamed or shared, a lost or locked ledger, `baton exec`;
//! - [`slots`]: `max_concurrent = N`, one slot's holder killed or stopped;
//! - [`replace`]: `overlap = "replace"`, a supervisor killed at a request;
//! - [`daemon`]: the daemon's write API and its files;
//! - [`fleet`]: several hosts (namespaces) on one PostgreSQL: killed
//!   supervisors, frozen and cut connections, terminated backends, a
//!   restarted server, a restore from a backup, a blocked stderr, a wrong
//!   clock, a cloned machine.

pub(crate) mod common;
pub(crate) mod daemon;
pub(crate) mod fleet;
pub(crate) mod local;
pub(crate) mod replace;
pub(crate) mod slots;
pub(crate) mod sweep;

use crate::plan::Plan;
use crate::trial::Trial;

/// What a scenario needs of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Root: mounts, other users, `chown`.
    Root,
    /// Linux namespaces for hosts (`unshare`).
    Namespaces,
    /// PostgreSQL's server binaries.
    Postgres,
    /// libfaketime.
    Faketime,
    /// The failpoint build of baton.
    Failpoints,
}

/// A scenario's trial: builds it, injects the fault, judges; an error is
/// the instrument's own failure.
pub(crate) type Run = fn(&mut Trial<'_>) -> Result<(), String>;

/// One scenario.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scenario {
    pub(crate) name: &'static str,
    /// One line: the fault, and what must hold.
    pub(crate) what: &'static str,
    pub(crate) needs: &'static [Need],
    /// How long a trial takes, roughly, relative to the sweep's: a campaign
    /// of N trials gives each scenario a share inversely proportional to it.
    pub(crate) cost: u32,
    pub(crate) run: Run,
}

/// Every scenario, in report order.
pub(crate) fn all() -> Vec<Scenario> {
    let mut v = Vec::new();
    v.extend(sweep::scenarios());
    v.extend(local::scenarios());
    v.extend(slots::scenarios());
    v.extend(replace::scenarios());
    v.extend(daemon::scenarios());
    v.extend(fleet::scenarios());
    v
}

/// Checks that this machine can run every one of `chosen`.
///
/// # Errors
///
/// What is missing, and which scenarios need it.
pub(crate) fn can_run(chosen: &[&Scenario], plan: &Plan) -> Result<(), String> {
    let mut problems = Vec::new();
    if !plan.baton.is_file() {
        problems.push(format!(
            "the baton binary {} does not exist (cargo build --release -p baton, or give --baton)",
            plan.baton.display()
        ));
    }
    let need = |n: Need| -> Vec<&str> {
        chosen
            .iter()
            .filter(|s| s.needs.contains(&n))
            .map(|s| s.name)
            .collect()
    };
    let mut check = |n: Need, ok: bool, what: String| {
        let who = need(n);
        if !who.is_empty() && !ok {
            let shown: Vec<&str> = who.iter().take(3).copied().collect();
            problems.push(format!(
                "{what}: needed by {}{}",
                shown.join(", "),
                if who.len() > 3 {
                    format!(" and {} more", who.len() - 3)
                } else {
                    String::new()
                }
            ));
        }
    };
    check(
        Need::Root,
        rustix::process::geteuid().is_root(),
        "not running as root".into(),
    );
    check(
        Need::Namespaces,
        !need(Need::Namespaces).is_empty() && baton_testkit::hosts::available()
            || need(Need::Namespaces).is_empty(),
        "Linux namespaces are not available (unshare --uts --pid --fork --mount-proc failed)"
            .into(),
    );
    let pg = std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|mut d| d.next().is_some())
        || std::env::var_os("BATON_PG_BIN").is_some();
    check(
        Need::Postgres,
        pg,
        "PostgreSQL's server binaries are not installed (Debian's postgresql package)".into(),
    );
    check(
        Need::Faketime,
        std::path::Path::new(common::FAKETIME_LIB).exists(),
        format!(
            "libfaketime is not installed ({}; Debian's faketime package)",
            common::FAKETIME_LIB
        ),
    );
    let fp = plan.failpoints.as_ref().is_some_and(|p| p.is_file());
    check(
        Need::Failpoints,
        fp,
        format!(
            "the failpoint build of baton is missing ({}): cargo build --release -p baton \
             --features failpoints --target-dir target/faults, or give --failpoints-baton",
            plan.failpoints
                .as_ref()
                .map_or_else(|| "no path".into(), |p| p.display().to_string())
        ),
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "these scenarios cannot run here:\n  {}",
            problems.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_scenario_says_what_it_does() {
        let all = all();
        let mut names: Vec<&str> = all.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate scenario names");
        assert!(all.iter().all(|s| !s.what.is_empty()));
    }
}
