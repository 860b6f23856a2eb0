//! Where locks live: the state directory and the lock path of a name.
//!
//! The state directory is `--state-dir`, else `$BATON_STATE_DIR`, else
//! `/var/lib/baton` for root, else `$XDG_STATE_HOME/baton` (default
//! `~/.local/state/baton`); it and its `locks/` are created on first use,
//! owner-only. A name is 1 to 128 characters of `[A-Za-z0-9._-]`, not
//! starting with a dot: it is never a path.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why a state directory or a name cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// No directory could be chosen.
    #[error("no state directory: set --state-dir or BATON_STATE_DIR (HOME is not set either)")]
    Unknown,
    /// The directory could not be created or is not usable.
    #[error("failed to create the state directory {}: {source}: fix its permissions or choose another with --state-dir", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The name is not a lock name.
    #[error(
        "invalid lock name {0:?}: use 1 to 128 characters of A-Z a-z 0-9 . _ - , not starting with a dot"
    )]
    BadName(String),
}

/// Chooses the state directory (without creating it).
pub fn resolve(flag: Option<&Path>) -> Result<PathBuf, StateError> {
    if let Some(p) = flag {
        return Ok(p.to_owned());
    }
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("BATON_STATE_DIR") {
        return Ok(p);
    }
    if rustix::process::geteuid().is_root() {
        return Ok(PathBuf::from("/var/lib/baton"));
    }
    if let Some(p) = var("XDG_STATE_HOME") {
        return Ok(p.join("baton"));
    }
    var("HOME")
        .map(|h| h.join(".local/state/baton"))
        .ok_or(StateError::Unknown)
}

/// Creates `dir/locks` (owner-only) when missing and returns it.
pub fn locks_dir(dir: &Path) -> Result<PathBuf, StateError> {
    let locks = dir.join("locks");
    let create = |p: &Path| -> std::io::Result<()> {
        if !p.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(p)?;
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    };
    for p in [dir, locks.as_path()] {
        create(p).map_err(|source| StateError::Create {
            path: p.to_owned(),
            source,
        })?;
    }
    Ok(locks)
}

/// Checks a lock name.
pub fn check_name(name: &str) -> Result<(), StateError> {
    let ok = (1..=128).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(StateError::BadName(name.to_owned()))
    }
}

/// The lock file of a name.
pub fn lock_path(locks: &Path, name: &str) -> Result<PathBuf, StateError> {
    check_name(name)?;
    Ok(locks.join(format!("{name}.lock")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_never_paths() {
        for good in ["a", "nightly-backup", "db.vacuum_2", &"x".repeat(128)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            ".hidden",
            "..",
            "a/b",
            "../x",
            "a b",
            "é",
            &"x".repeat(129),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_state_directory_is_created_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let locks = locks_dir(&dir).unwrap();
        assert_eq!(locks, dir.join("locks"));
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(
            lock_path(&locks, "job").unwrap(),
            dir.join("locks/job.lock")
        );
    }
}
