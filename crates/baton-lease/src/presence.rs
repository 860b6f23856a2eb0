//! A holder's presence outside the filesystem: what still refuses a second
//! holder once the lock file is no longer at its path.
//!
//! The record is the lease, and a contender finds the record by its path. A
//! lock file moved away with its directory (`mv state state.old`, by its
//! owner or root, while a run goes on) takes the live record with it: the
//! path is empty, the next contender creates a fresh file there and takes
//! it, and the holder runs on until its next renewal finds its file gone. So
//! a holder also holds a name in the abstract socket namespace, made from the
//! lock's path and the device its directory is on, for as long as it holds
//! the lease ([`Presence`], kept by the [`crate::Lease`]). It is taken
//! before the lease's first rewrite: before the holder names its job's
//! group, so before any job of it runs, or at its first renewal; that
//! rewrite then checks that the path still names the lease's file, so a file
//! moved away before the presence stood is a lost lease, and one moved after
//! is seen by the presence. A lease taken and let go of without running
//! anything costs no socket. A contender that finds no file at the path asks who
//! holds that name before it creates one, and is refused
//! ([`crate::Busy::Elsewhere`]) when a process of its own user, or root,
//! does. The kernel frees the name when its holder exits, however
//! it dies, so a presence never outlives its process.
//!
//! A presence never grants anything, and refuses only where there is no
//! record to judge: a record at the path, judged under the mutex, decides,
//! so a lease broken by `baton lock break --force`, or a holder in another
//! pid namespace judged by its renewal's age, is taken over as before (the
//! new lease then goes without a presence). A name held by a process of
//! another user is no holder of this lock (any local user can bind any
//! abstract name): it is ignored, and the lease is taken without a presence,
//! as a lease was before presences. So is a name nobody can be asked about
//! (a socket that does not listen, a listener whose queue is full) and a
//! system that refuses this process a Unix socket. What a presence does not
//! cover: a holder in another network namespace (each has its own abstract
//! names) and a holder that reached the lock by another path (a symlinked
//! directory, a bind mount elsewhere); the record alone refuses those, as
//! before.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use crate::sys::presence;

/// The name a lease on this lock holds for its tenure. A lock file moved away
/// leaves its directory's device behind (a rename never changes device), so
/// a contender at the old path computes the same name.
fn name(path: &Path, dev: u64) -> Vec<u8> {
    let path = spelled(path);
    // FNV-1a, 64 bits: stable across builds and versions, unlike std's
    // hasher. Two locks of one user colliding only refuse (fail closed).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = dev.to_le_bytes();
    let path = path.as_os_str().as_encoded_bytes();
    for b in bytes.iter().chain(path) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("baton-lease/v1/{h:016x}").into_bytes()
}

/// The one spelling of the lock's path that names it: its directory's
/// real path (symbolic links and `..` resolved) and its file name, so two
/// spellings of one lock (`/srv/../srv/state`, a symbolic link to the
/// directory) make one name. A directory that cannot be resolved (moved
/// away, and nothing made in its place) is spelled as given, made absolute.
fn spelled(path: &Path) -> std::path::PathBuf {
    let real = match (path.parent(), path.file_name()) {
        (Some(dir), Some(file)) if !dir.as_os_str().is_empty() => {
            std::fs::canonicalize(dir).ok().map(|d| d.join(file))
        }
        _ => None,
    };
    real.unwrap_or_else(|| std::path::absolute(path).unwrap_or_else(|_| path.to_owned()))
}

/// A presence held: the name is this process's until it is dropped.
#[derive(Debug)]
pub(crate) struct Presence {
    _socket: OwnedFd,
}

/// The pid of a process of this user (or root) holding a presence at the
/// lock at `path`, whose directory is on `dev`: a holder of a lease on it
/// whose file is not at the path (0 when it is in no pid namespace this
/// process can name). `None` when nothing holds one, or another user's
/// process does.
///
/// # Errors
///
/// Out of descriptors or memory: failing closed, nothing is taken.
pub(crate) fn elsewhere(path: &Path, dev: u64) -> io::Result<Option<u32>> {
    match presence::listener(&name(path, dev)) {
        Ok(Some(peer)) if peer.uid == 0 || peer.uid == crate::trust::me() => Ok(Some(peer.pid)),
        Ok(_) => Ok(None),
        Err(e) if exhausted(&e) => Err(e),
        Err(_) => Ok(None),
    }
}

/// Holds the presence of the lock at `path`, whose directory is on `dev`, for
/// a lease just taken. `None` when it cannot be held (see the module's
/// header): the lease goes without one.
pub(crate) fn hold(path: &Path, dev: u64) -> Option<Presence> {
    presence::bind(&name(path, dev))
        .ok()
        .flatten()
        .map(|socket| Presence { _socket: socket })
}

fn exhausted(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_the_path_and_device_and_nothing_else() {
        let a = name(Path::new("/var/lib/baton/locks/a.lock"), 7);
        assert_eq!(a, name(Path::new("/var/lib/baton/locks/a.lock"), 7));
        assert_ne!(a, name(Path::new("/var/lib/baton/locks/b.lock"), 7));
        assert_ne!(a, name(Path::new("/var/lib/baton/locks/a.lock"), 8));
        // Fixed across builds and versions: a holder and a contender of
        // different releases must compute the same name (FNV-1a of the
        // device's little-endian bytes, then the path).
        assert_eq!(
            String::from_utf8(a).unwrap(),
            "baton-lease/v1/233164371ed97413"
        );
    }

    #[test]
    fn a_held_presence_is_seen_at_its_lock_only_until_dropped() {
        let dir = std::env::temp_dir().join(format!("presence-{}", std::process::id()));
        let path = dir.join("x.lock");
        assert_eq!(elsewhere(&path, 1).unwrap(), None);
        let p = hold(&path, 1).expect("free");
        assert_eq!(elsewhere(&path, 1).unwrap(), Some(std::process::id()));
        assert!(hold(&path, 1).is_none(), "held once");
        assert_eq!(elsewhere(&path, 2).unwrap(), None, "another device");
        assert_eq!(elsewhere(&dir.join("y.lock"), 1).unwrap(), None);
        drop(p);
        assert_eq!(elsewhere(&path, 1).unwrap(), None);
    }
}
