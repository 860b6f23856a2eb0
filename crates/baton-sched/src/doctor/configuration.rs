//! The configuration: every problem `baton.toml` and its drop-ins have
//! (not only the first, as a run sees it: every key of every job, and of
//! `[scheduler]`), each a failure with where to fix it; or what was read.

use std::path::Path;

use super::finding::Finding;
use crate::config::{self, Checked, ConfigError, Overrides, Source};

const CHECK: &str = "config";

/// Checks the configuration at `path`; the findings, and what was checked.
pub(super) fn check(path: &Path, over: &Overrides) -> (Vec<Finding>, Checked) {
    let checked = config::check(path, over);
    let mut found: Vec<Finding> = checked
        .problems
        .iter()
        .map(|e| Finding::fail(CHECK, e.to_string(), fix(e, path)))
        .collect();
    if checked.scheduler_defaulted {
        found.push(Finding::warn(
            CHECK,
            "[scheduler] has a problem: the jobs were checked with its default for each key in \
             error, and the checks that need the whole configuration (state directory, locks, \
             ledger, store, alert command) were left out",
            "fix the problems above, then run `baton doctor` again",
        ));
    }
    if found.is_empty() {
        let c = checked.config.as_ref().map_or((0, 0), |c| {
            let dropins = c
                .jobs
                .values()
                .filter(|j| match &j.source {
                    Source::File { path: p, .. } => p.as_ref() != c.path.as_path(),
                    _ => false,
                })
                .count();
            (c.jobs.len(), dropins)
        });
        let jobs = match c {
            (1, 0) => "1 job".to_owned(),
            (n, 0) => format!("{n} jobs"),
            (n, d) => format!("{n} jobs ({d} in {}/)", config::dropin::DIR_NAME),
        };
        found.push(Finding::ok(
            CHECK,
            format!("{}: valid, {jobs}", path.display()),
        ));
    }
    (found, checked)
}

/// What to do about a problem.
fn fix(e: &ConfigError, path: &Path) -> String {
    match e {
        ConfigError::Missing { .. } => format!(
            "create {} (README, \"The scheduler\"), or name the file with --config FILE or \
             BATON_CONFIG",
            path.display()
        ),
        ConfigError::Empty { path: p } => format!(
            "write {} whole (to a new file, then rename it over); for every default, put `[scheduler]` in it",
            p.display()
        ),
        ConfigError::Unreadable { path: p, .. } => {
            format!("make {} a regular file this user can read", p.display())
        }
        ConfigError::Invalid { at, key, .. } => {
            format!("correct {key} at {at}; the message says what is allowed")
        }
        ConfigError::Untrusted(u) => u.remedy.clone(),
        ConfigError::Syntax { path, line, .. } => {
            format!("correct the TOML at {}:{line}", path.display())
        }
    }
}
