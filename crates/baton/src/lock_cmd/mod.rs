//! `baton lock`: the operator's view of locks ([`show`]) and the operator's
//! break ([`breaking`]). Reading never changes a lock; breaking changes one
//! only under the file's mutex, on a fresh verdict, and logs what it replaced.
//! Both exit with the table in `baton lock --help`.

pub mod breaking;
pub mod show;

use std::path::{Path, PathBuf};

use crate::exit::Exit;
use baton_sched::state::state_dir;

/// A lock the operator named: its label and its file.
pub struct Target {
    /// The name, or the path as given.
    pub label: String,
    /// The lock file.
    pub path: PathBuf,
}

/// Resolves names against the state directory (never creating it, and
/// refusing one another user could have prepared) and makes paths absolute.
pub fn targets(
    state: Option<&Path>,
    names: &[String],
    paths: &[PathBuf],
) -> Result<Vec<Target>, (Exit, String)> {
    let mut out = Vec::new();
    if !names.is_empty() {
        let dir = state_dir::resolve(state).map_err(|e| (Exit::Failure, e.to_string()))?;
        state_dir::check_existing(&dir).map_err(|e| (Exit::Failure, e.to_string()))?;
        for n in names {
            let path = state_dir::lock_path(&dir.join("locks"), n)
                .map_err(|e| (Exit::Usage, e.to_string()))?;
            out.push(Target {
                label: n.clone(),
                path,
            });
        }
    }
    for p in paths {
        let path = state_dir::lock_file(p).map_err(|e| (Exit::Failure, e.to_string()))?;
        out.push(Target {
            label: path.display().to_string(),
            path,
        });
    }
    Ok(out)
}

/// A lock at `path`, judging v2 leases with `v2_stale_after` (the text of the
/// option named `--v2-stale-after`).
pub fn lock_at(path: &Path, v2_stale_after: &str) -> Result<baton_lease::Lock, String> {
    let v2 = baton_sched::units::parse_duration(v2_stale_after)
        .map_err(|e| format!("--v2-stale-after: {e}"))?;
    let mut opts = baton_lease::Options::default();
    opts.policy.v2_stale_after = v2;
    Ok(baton_lease::Lock::new(path).with_options(opts))
}

/// Every lock in the state directory, by name.
pub fn all(state: Option<&Path>) -> Result<Vec<Target>, (Exit, String)> {
    let dir = state_dir::resolve(state).map_err(|e| (Exit::Failure, e.to_string()))?;
    state_dir::check_existing(&dir).map_err(|e| (Exit::Failure, e.to_string()))?;
    let dir = dir.join("locks");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => {
            return Err((
                Exit::Failure,
                format!("failed to list {}: {e}", dir.display()),
            ));
        }
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| {
            (
                Exit::Failure,
                format!("failed to list {}: {e}", dir.display()),
            )
        })?;
        let file = entry.file_name().to_string_lossy().into_owned();
        if let Some(name) = file.strip_suffix(".lock")
            && state_dir::check_name(name).is_ok()
        {
            out.push(Target {
                label: name.to_owned(),
                path: entry.path(),
            });
        }
    }
    out.sort_by(|a, b| a.label.cmp(&b.label));
    Ok(out)
}
