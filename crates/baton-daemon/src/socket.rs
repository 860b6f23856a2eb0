//! The API's Unix socket on disk: where it may be, what it may replace, and
//! who may open it.
//!
//! - Its directory must be one nobody else can change (owned by the
//!   daemon's user or root and writable by neither its group nor others,
//!   the directories above it at most shared with the sticky bit), as the
//!   state directory must: another user who can write it could put a
//!   socket of their own in its place.
//! - What is at its path already is looked at without following a link: a
//!   socket of the daemon's user that nobody answers on (a daemon killed
//!   with SIGKILL) is removed and replaced; a socket someone answers on (a
//!   daemon running) is left alone and the start refused; anything else (a
//!   symbolic link, a file, a directory, another user's socket) is refused
//!   and left as it is.
//! - Once bound, it is the daemon's user's alone (0600), or also its
//!   group's (0660, its group `socket_group`). These modes keep other users
//!   from connecting at all; the peer check ([`crate::peer`]) decides on
//!   every connection all the same, so a socket whose mode someone widened
//!   still lets no one else change anything.
//! - At a clean stop it is removed, if it is still the one bound.
//!
//! What it never does: follow a link at the socket's path, or remove
//! anything but a dead socket of its own user.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The socket as bound: its path and its file's identity.
#[derive(Debug)]
pub(crate) struct Bound {
    pub(crate) path: PathBuf,
    id: Identity,
}

/// What tells the socket this daemon bound from one bound at the same path
/// after it: its device and inode, and its last change (the `chmod` that
/// made it, to the nanosecond). The inode alone does not: a daemon started
/// while this one stops removes this one's socket, which no longer answers,
/// and the socket it binds in its place often gets the inode just freed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    changed: (i64, i64),
}

impl Identity {
    fn of(meta: &std::fs::Metadata) -> Identity {
        Identity {
            dev: meta.dev(),
            ino: meta.ino(),
            changed: (meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// Whether `path` still names this socket, looked at without following
    /// a link.
    fn at(self, path: &Path) -> bool {
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.file_type().is_socket() && Identity::of(&m) == self)
    }
}

/// Why the socket cannot be bound, in words that say what to do.
#[derive(Debug, thiserror::Error)]
#[error("failed to listen on unix:{}: {why} (choose another path with [daemon] socket)", path.display())]
pub(crate) struct Refused {
    path: std::path::PathBuf,
    why: String,
}

fn refused(path: &Path, why: impl std::fmt::Display) -> Refused {
    Refused {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

/// Binds the socket at `path`, made 0600 (0660 with `group`, and that
/// group's), replacing only a dead socket of this user.
///
/// # Errors
///
/// An untrusted directory, something at `path` that is not a dead socket of
/// this user, a socket another daemon answers on, or a failure to bind,
/// `chown` or `chmod` it.
pub(crate) fn bind(
    path: &Path,
    group: Option<u32>,
) -> Result<(tokio::net::UnixListener, Bound), Refused> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .ok_or_else(|| refused(path, "it names no directory"))?;
    baton_lease::trust::check_dir_path(dir, 1).map_err(|e| refused(path, e))?;
    clear_stale(path)?;
    let listener = tokio::net::UnixListener::bind(path).map_err(|e| refused(path, e))?;
    let meta = std::fs::symlink_metadata(path).map_err(|e| refused(path, e))?;
    let (dev, ino) = (meta.dev(), meta.ino());
    let mode = if group.is_some() { 0o660 } else { 0o600 };
    let made = (|| {
        if let Some(gid) = group {
            rustix::fs::chown(path, None, Some(rustix::fs::Gid::from_raw(gid)))
                .map_err(|e| format!("failed to give it to group {gid}: {e}"))?;
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("failed to make it mode {mode:04o}: {e}"))?;
        std::fs::symlink_metadata(path).map_err(|e| format!("failed to look at it: {e}"))
    })();
    match made {
        Ok(meta) if (meta.dev(), meta.ino()) == (dev, ino) => Ok((
            listener,
            Bound {
                path: path.to_owned(),
                id: Identity::of(&meta),
            },
        )),
        Ok(_) => Err(refused(path, "it was replaced as it was made")),
        Err(why) => {
            // Just bound, and this daemon's: removed unless it was replaced
            // meanwhile.
            let just_bound = std::fs::symlink_metadata(path)
                .is_ok_and(|m| m.file_type().is_socket() && (m.dev(), m.ino()) == (dev, ino));
            if just_bound {
                let _ = std::fs::remove_file(path);
            }
            Err(refused(path, why))
        }
    }
}

/// What a start would find at `path`, changing nothing: `Ok` when it may
/// bind there (nothing there, or a socket of this user's), else why not
/// (an untrusted directory, something else at the path). A socket another
/// daemon answers on is found only when binding.
///
/// # Errors
///
/// As [`bind`] would refuse.
pub(crate) fn vet(path: &Path) -> Result<(), Refused> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .ok_or_else(|| refused(path, "it names no directory"))?;
    // A state directory not made yet is made at the first start, in the
    // nearest directory that exists, which must be trusted as it is.
    let Some(existing) = dir.ancestors().find(|d| d.exists()) else {
        return Ok(());
    };
    baton_lease::trust::check_dir_path(existing, 1).map_err(|e| refused(path, e))?;
    if existing != dir {
        return Ok(());
    }
    own_socket_or_nothing(path).map(drop)
}

/// What is at `path`: `None` when nothing is, the socket's metadata when
/// it is a socket of this user's; anything else is refused.
fn own_socket_or_nothing(path: &Path) -> Result<Option<std::fs::Metadata>, Refused> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(path, e)),
    };
    let kind = meta.file_type();
    let what = if kind.is_symlink() {
        Some("a symbolic link")
    } else if kind.is_dir() {
        Some("a directory")
    } else if !kind.is_socket() {
        Some("a file that is not a socket")
    } else {
        None
    };
    if let Some(what) = what {
        return Err(refused(
            path,
            format!("{what} is there; it is left as it is: remove it if it is not needed"),
        ));
    }
    let me = baton_lease::trust::me();
    if meta.uid() != me {
        return Err(refused(
            path,
            format!(
                "the socket there is uid {}'s, not this daemon's (uid {me}); it is left as it is",
                meta.uid()
            ),
        ));
    }
    Ok(Some(meta))
}

/// Removes a dead socket of this user at `path`; refuses anything else.
fn clear_stale(path: &Path) -> Result<(), Refused> {
    if own_socket_or_nothing(path)?.is_none() {
        return Ok(());
    }
    match std::os::unix::net::UnixStream::connect(path) {
        Ok(_) => Err(refused(
            path,
            "another daemon answers on it; stop that one first",
        )),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            // A socket nobody listens on: a daemon that died without
            // removing it.
            std::fs::remove_file(path)
                .map_err(|e| refused(path, format!("failed to remove the stale socket: {e}")))
        }
        Err(e) => Err(refused(
            path,
            format!("failed to check the socket there: {e}"),
        )),
    }
}

impl Bound {
    /// Removes the socket, if its path still names the one bound.
    pub(crate) fn remove(&self) {
        if self.id.at(&self.path) {
            // OK to ignore: a socket left behind is replaced at the next
            // start, as after a SIGKILL.
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The first directory on the way to the socket at `path` that members of
/// group `gid` may not pass through (neither others' search bit, nor the
/// group's on a directory of that group): they could never connect,
/// whatever the socket's own mode.
pub(crate) fn unreachable_by_group(path: &Path, gid: u32) -> Option<(PathBuf, u32)> {
    path.ancestors().skip(1).find_map(|dir| {
        let meta = std::fs::metadata(dir).ok()?;
        let mode = meta.mode();
        let through = mode & 0o001 != 0 || (meta.gid() == gid && mode & 0o010 != 0);
        (!through).then(|| (dir.to_owned(), mode & 0o7777))
    })
}

/// Why `[daemon] socket_group` gives no group.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BadGroup {
    /// `/etc/group` cannot be read.
    #[error("failed to read /etc/group to find socket_group {group:?}: {source}")]
    Read {
        /// The group's name.
        group: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// `/etc/group` has no group of that name.
    #[error(
        "[daemon] socket_group = {0:?}: no such group in /etc/group; give an existing group's \
         name or its number"
    )]
    Unknown(String),
}

/// The number of `group` (a number, or a name in `/etc/group`).
///
/// # Errors
///
/// A name `/etc/group` does not have, or `/etc/group` cannot be read.
pub(crate) fn group_id(group: &str) -> Result<u32, BadGroup> {
    if let Ok(gid) = group.parse::<u32>() {
        return Ok(gid);
    }
    let text = std::fs::read_to_string("/etc/group").map_err(|source| BadGroup::Read {
        group: group.to_owned(),
        source,
    })?;
    gid_in(&text, group).ok_or_else(|| BadGroup::Unknown(group.to_owned()))
}

/// The number of `name` in the text of `/etc/group`.
fn gid_in(text: &str, name: &str) -> Option<u32> {
    text.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next() == Some(name))
            .then(|| f.nth(1).and_then(|g| g.trim().parse().ok()))
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A daemon stopping after another bound the path removes nothing of
    /// the other's, even when the other's socket got the inode its own
    /// had: only the socket it made is its own to remove.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stop_removes_only_the_socket_this_daemon_bound() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("daemon.sock");
        let (first, bound) = bind(&path, None).unwrap();
        // The first stops listening; a second start finds its socket dead,
        // removes it and binds its own.
        drop(first);
        let (_second, theirs) = bind(&path, None).unwrap();
        // As if the second socket had the first's inode: its change time
        // still tells them apart.
        let reused = Bound {
            path: path.clone(),
            id: Identity {
                changed: bound.id.changed,
                ..theirs.id
            },
        };
        assert_ne!(bound.id, theirs.id);
        reused.remove();
        bound.remove();
        assert!(
            theirs.id.at(&path),
            "the second daemon's socket was removed"
        );
        theirs.remove();
        assert!(
            std::fs::symlink_metadata(&path).is_err(),
            "its own is removed"
        );
    }

    #[test]
    fn groups_are_found_by_name_or_number() {
        let text = "root:x:0:\nbaton:x:998:alice,bob\nbroken:x:\n";
        assert_eq!(gid_in(text, "baton"), Some(998));
        assert_eq!(gid_in(text, "root"), Some(0));
        assert_eq!(gid_in(text, "bat"), None);
        assert_eq!(gid_in(text, "broken"), None);
        assert_eq!(group_id("4242").unwrap(), 4242);
        assert_eq!(group_id("root").unwrap(), 0);
        assert!(
            group_id("no-such-group-here")
                .unwrap_err()
                .to_string()
                .contains("socket_group")
        );
    }
}
