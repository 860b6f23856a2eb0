//! Where locks live: the state directory and the lock path of a name.
//!
//! The state directory is `--state-dir`, else `$BATON_STATE_DIR`, else
//! `/var/lib/baton` for root, else `$XDG_STATE_HOME/baton` (default
//! `~/.local/state/baton`); it and its `locks/` are created on first use,
//! owner-only. It must be an absolute path: a relative one would name a
//! different directory, and so a different lock, from every working
//! directory (a relative `XDG_STATE_HOME` is ignored, as the XDG
//! specification says). It is refused when it, `locks/`, `logs/`, or a
//! directory above them could be changed by a user other than the invoking
//! one or root (see `baton_lease::trust`). A name is 1 to 128 characters of
//! `[A-Za-z0-9._-]`, not starting with a dot: it is never a path.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use baton_lease::trust;

/// Why a state directory or a name cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// No directory could be chosen.
    #[error("no state directory: set --state-dir or BATON_STATE_DIR (HOME is not set either)")]
    Unknown,
    /// A relative directory was given.
    #[error(
        "{source_name}={} is a relative path: a state directory must be absolute, or runs started \
         from different directories would use different locks; give an absolute path",
        path.display()
    )]
    Relative {
        /// Where it came from.
        source_name: &'static str,
        /// The path given.
        path: PathBuf,
    },
    /// Something other than a directory is there.
    #[error("the state directory {} is not a directory ({what} is there): remove it, or choose another with --state-dir", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
        /// What is there instead (`a named pipe`).
        what: &'static str,
    },
    /// The directory could not be created or is not usable.
    #[error("failed to create the state directory {}: {source}: fix its permissions or choose another with --state-dir", path.display())]
    Create {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The directory could be changed by another user.
    #[error("refusing the state directory: {0}")]
    Untrusted(#[from] trust::Untrusted),
    /// The name is not a lock name.
    #[error(
        "invalid lock name {0:?}: use 1 to 128 characters of A-Z a-z 0-9 . _ - , not starting with a dot"
    )]
    BadName(String),
    /// The working directory, against which a relative `--lock` is made
    /// absolute, cannot be read.
    #[error("failed to read the working directory for --lock {}: {source}", path.display())]
    WorkingDir {
        /// The `--lock` path given.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A directory on the way to a `--lock` file could be changed by
    /// another user.
    #[error("refusing --lock: {0}")]
    UntrustedLock(#[source] trust::Untrusted),
}

/// Chooses the state directory (without creating it).
pub fn resolve(flag: Option<&Path>) -> Result<PathBuf, StateError> {
    let absolute = |source_name: &'static str, p: PathBuf| {
        if p.is_absolute() {
            Ok(p)
        } else {
            Err(StateError::Relative {
                source_name,
                path: p,
            })
        }
    };
    if let Some(p) = flag {
        return absolute("--state-dir", p.to_owned());
    }
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(p) = var("BATON_STATE_DIR") {
        return absolute("BATON_STATE_DIR", p);
    }
    default_dir().ok_or(StateError::Unknown)
}

/// The default when nothing names a state directory: `/var/lib/baton` for
/// root, else `$XDG_STATE_HOME/baton` (an absolute one), else
/// `~/.local/state/baton`.
pub fn default_dir() -> Option<PathBuf> {
    if rustix::process::geteuid().is_root() {
        return Some(PathBuf::from("/var/lib/baton"));
    }
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(p) = var("XDG_STATE_HOME") {
        return Some(p.join("baton"));
    }
    var("HOME").map(|h| h.join(".local/state/baton"))
}

/// Creates `dir` (owner-only) when missing, and checks that nobody but this
/// user or root can change it or a directory above it.
pub fn ensure(dir: &Path) -> Result<(), StateError> {
    create(dir)?;
    trust::check_dir_path(dir, 1)?;
    Ok(())
}

/// Creates `dir/locks` (owner-only) when missing, checks both, and returns it.
pub fn locks_dir(dir: &Path) -> Result<PathBuf, StateError> {
    own_subdir(dir, "locks")
}

/// Whether the state directory `dir` would be refused, judged as
/// [`locks_dir`] judges it but without creating anything: `dir` when it
/// is there ([`check_existing`]), else the nearest directory above it that
/// is (which another user may not own or write, or they could plant the
/// state directory).
/// For the views, which read and never create.
///
/// # Errors
///
/// [`StateError::Untrusted`], naming the directory that fails.
pub fn judge(dir: &Path) -> Result<(), StateError> {
    if check_existing(dir)? {
        return Ok(());
    }
    let mut at = dir;
    while let Err(e) = std::fs::symlink_metadata(at) {
        match (e.kind(), at.parent()) {
            (std::io::ErrorKind::NotFound, Some(up)) => at = up,
            _ => return Ok(()),
        }
    }
    trust::check_dir_path(at, 0)?;
    Ok(())
}

/// Creates `dir/logs` (owner-only) when missing, checks it as `locks/` is
/// checked, and returns it: in a `logs/` another user could change, a link
/// or a named pipe could be planted where a log is written.
pub fn logs_dir(dir: &Path) -> Result<PathBuf, StateError> {
    own_subdir(dir, "logs")
}

/// `DIR/ends`, created `0700` when missing (a run's end slot,
/// `crate::state::end_slot`), with the same checks as [`logs_dir`].
///
/// # Errors
///
/// As [`logs_dir`].
pub fn ends_dir(dir: &Path) -> Result<PathBuf, StateError> {
    own_subdir(dir, "ends")
}

fn own_subdir(dir: &Path, name: &str) -> Result<PathBuf, StateError> {
    // Nothing is made inside a directory another user controls: a state
    // directory not there yet is judged by the nearest one above it first.
    if std::fs::symlink_metadata(dir).is_err() {
        judge(dir)?;
    }
    let sub = dir.join(name);
    // Made when missing (each through no link another user could repoint);
    // when both are there, the walk below checks the links on the way too.
    if !std::fs::metadata(&sub).is_ok_and(|m| m.is_dir()) {
        create(dir)?;
        create(&sub)?;
    }
    // One walk checks both: the subdirectory and the state directory may
    // not be shared at all, the directories above them only with the
    // sticky bit.
    trust::check_dir_path(&sub, 2)?;
    Ok(sub)
}

/// Checks an existing state directory without creating anything: `Ok(false)`
/// when it does not exist.
pub fn check_existing(dir: &Path) -> Result<bool, StateError> {
    match std::fs::symlink_metadata(dir) {
        Err(_) => Ok(false),
        Ok(m) if !m.is_dir() && !m.file_type().is_symlink() => Err(StateError::NotADirectory {
            path: dir.to_owned(),
            what: trust::kind(m.file_type()),
        }),
        Ok(_) => {
            let locks = dir.join("locks");
            if locks.exists() {
                trust::check_dir_path(&locks, 2)?;
            } else {
                trust::check_dir_path(dir, 1)?;
            }
            Ok(true)
        }
    }
}

fn create(p: &Path) -> Result<(), StateError> {
    // Nothing is made through a link another user could repoint.
    trust::check_links(p)?;
    match std::fs::metadata(p) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(m) => {
            return Err(StateError::NotADirectory {
                path: p.to_owned(),
                what: trust::kind(m.file_type()),
            });
        }
        Err(_) => {}
    }
    let made = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(p)
        .and_then(|()| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o700)));
    made.map_err(|source| {
        // A regular file on the way is not a permission problem.
        let blocked = p.ancestors().find_map(|a| {
            std::fs::metadata(a)
                .ok()
                .filter(|m| !m.is_dir())
                .map(|m| (a, m.file_type()))
        });
        match blocked {
            Some((file, t)) => StateError::NotADirectory {
                path: file.to_owned(),
                what: trust::kind(t),
            },
            None => StateError::Create {
                path: p.to_owned(),
                source,
            },
        }
    })
}

/// Checks a lock name.
pub fn check_name(name: &str) -> Result<(), StateError> {
    // A slot of a lock (`NAME@K`, `max_concurrent`) is named by its lock.
    let base = match baton_lease::slot::slot_of(name) {
        (base, k) if k > 1 => base,
        _ => name,
    };
    let ok = (1..=128).contains(&name.len())
        && !name.starts_with('.')
        && base
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

/// A `--lock` path made absolute against the working directory, once, so
/// that every message and record names the one file it is; and the
/// directories on the way to it checked (a shared directory such as `/tmp`
/// must have its sticky bit).
///
/// # Errors
///
/// [`StateError::WorkingDir`] when a relative path cannot be made absolute,
/// [`StateError::UntrustedLock`] when a directory on the way could be
/// changed by another user.
pub fn lock_file(path: &Path) -> Result<PathBuf, StateError> {
    let abs = if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir()
            .map_err(|source| StateError::WorkingDir {
                path: path.to_owned(),
                source,
            })?
            .join(path)
    };
    let dir = match abs.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("/"),
    };
    if dir.is_dir() {
        trust::check_dir_path(&dir, 0).map_err(StateError::UntrustedLock)?;
    }
    Ok(abs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_pipe_where_a_subdirectory_goes_is_named_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
        baton_testkit::mkfifo(&state.join("ends"));
        let e = ends_dir(&state).unwrap_err();
        assert!(
            matches!(
                e,
                StateError::NotADirectory {
                    what: "a named pipe",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("a named pipe is there"), "{e}");
        std::fs::write(state.join("logs"), "x").unwrap();
        let e = logs_dir(&state).unwrap_err();
        assert!(e.to_string().contains("a regular file is there"), "{e}");
    }

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

    #[test]
    fn a_relative_state_directory_is_refused() {
        let e = resolve(Some(Path::new("state"))).unwrap_err();
        assert!(e.to_string().contains("relative"), "{e}");
    }

    #[test]
    fn a_file_where_the_directory_should_be_is_named_as_such() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        std::fs::write(&f, "").unwrap();
        let e = locks_dir(&f).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        let e = locks_dir(&f.join("below")).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
    }

    #[test]
    fn a_shared_state_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let e = locks_dir(&dir).unwrap_err();
        assert!(
            e.to_string().contains("writable by its group or by others"),
            "{e}"
        );
    }
}
