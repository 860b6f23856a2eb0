//! Who is on the other end of a connection, as the kernel says, and whether
//! the daemon trusts them to change things.
//!
//! A TCP caller is anyone who can reach the address: loopback included,
//! every local user can, so a TCP connection says nothing about its caller
//! and only the bearer token authenticates it ([`crate::guard`]). A caller
//! on the Unix socket is known by the credentials the kernel recorded when
//! it connected (`SO_PEERCRED`: its user and group; `SO_PEERGROUPS`: its
//! supplementary groups), read once per connection, before any request.
//! [`Trust::admits`] is the only rule: the daemon's own user, root, or a
//! member of `[daemon] socket_group`.
//!
//! What it never does: trust anything the caller sends (a header, a name)
//! about who it is, or treat credentials it could not read as anyone's.

use std::os::fd::AsFd;

use tokio::net::{TcpStream, UnixStream};

use crate::capped::Admitted;

/// The caller of a connection.
#[derive(Debug, Clone)]
pub(crate) enum Peer {
    /// Over TCP: anyone who can reach the address.
    Tcp,
    /// Over the Unix socket, with the kernel's word on who it is (`None`
    /// when it could not be read: trusted by no one).
    Socket(Option<Cred>),
}

/// A socket caller's credentials, as the kernel recorded them at `connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cred {
    /// Its effective user.
    pub(crate) uid: u32,
    /// Its effective group.
    pub(crate) gid: u32,
    /// Its supplementary groups (empty where the kernel does not say).
    pub(crate) groups: Vec<u32>,
}

/// A connection that says who is on its other end.
pub(crate) trait Caller {
    /// Its caller.
    fn peer(&self) -> Peer;
}

impl Caller for Admitted<TcpStream> {
    fn peer(&self) -> Peer {
        Peer::Tcp
    }
}

impl Caller for Admitted<UnixStream> {
    fn peer(&self) -> Peer {
        Peer::Socket(self.io.peer_cred().ok().map(|c| Cred {
            uid: c.uid(),
            gid: c.gid(),
            groups: peer_groups(self.io.as_fd()).unwrap_or_default(),
        }))
    }
}

/// Who may change things over the socket, fixed when it was bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trust {
    /// The daemon's own (effective) user.
    pub(crate) uid: u32,
    /// `[daemon] socket_group`: its name as configured, and its number.
    pub(crate) group: Option<(String, u32)>,
}

impl Trust {
    /// This process's user, and `group`.
    pub(crate) fn of_this_process(group: Option<(String, u32)>) -> Self {
        Self {
            uid: rustix::process::geteuid().as_raw(),
            group,
        }
    }

    /// Whether `c` may change things: the daemon's own user, root, or a
    /// member of the group (its own group or a supplementary one).
    pub(crate) fn admits(&self, c: &Cred) -> bool {
        c.uid == self.uid
            || c.uid == 0
            || self
                .group
                .as_ref()
                .is_some_and(|(_, g)| c.gid == *g || c.groups.contains(g))
    }

    /// Who is admitted, in words (`uid 0 (root)`, `or group baton`).
    pub(crate) fn describe(&self) -> String {
        let user = if self.uid == 0 {
            "uid 0 (root)".to_owned()
        } else {
            format!("uid {} or root", self.uid)
        };
        match &self.group {
            Some((name, gid)) if name == &gid.to_string() => format!("{user}, or group {gid}"),
            Some((name, gid)) => format!("{user}, or group {name} ({gid})"),
            None => user,
        }
    }
}

/// `SO_PEERGROUPS` (Linux 4.13): not in the `libc` crate for every target.
#[cfg(any(target_arch = "sparc", target_arch = "sparc64"))]
const SO_PEERGROUPS: libc::c_int = 0x3d;
#[cfg(not(any(target_arch = "sparc", target_arch = "sparc64")))]
const SO_PEERGROUPS: libc::c_int = 59;

/// The supplementary groups of the peer of the Unix socket `fd`, as the
/// kernel recorded them at `connect`.
#[allow(unsafe_code)] // One getsockopt, which rustix does not offer for this option.
fn peer_groups(fd: std::os::fd::BorrowedFd<'_>) -> std::io::Result<Vec<u32>> {
    use std::os::fd::AsRawFd;
    const GID: usize = std::mem::size_of::<libc::gid_t>();
    let mut groups: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut len = libc::socklen_t::try_from(groups.len() * GID)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))?;
        // Safety: `groups` is a live, writable buffer of `len` bytes; the
        // kernel writes at most `len` bytes into it and sets `len` to what
        // it wrote (or, with ERANGE, to what it needs).
        let r = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &raw mut len,
            )
        };
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if r == 0 {
            groups.truncate(len / GID);
            return Ok(groups);
        }
        let e = std::io::Error::last_os_error();
        // The kernel holds at most NGROUPS_MAX (65536) groups: this grows
        // once, to the size it asked for.
        if e.raw_os_error() == Some(libc::ERANGE) && len / GID > groups.len() {
            groups.resize(len / GID, 0);
            continue;
        }
        return Err(e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cred(uid: u32, gid: u32, groups: &[u32]) -> Cred {
        Cred {
            uid,
            gid,
            groups: groups.to_vec(),
        }
    }

    #[test]
    fn the_daemons_user_root_and_the_group_are_admitted_and_no_one_else() {
        let t = Trust {
            uid: 1000,
            group: Some(("baton".into(), 500)),
        };
        assert!(t.admits(&cred(1000, 1000, &[])));
        assert!(t.admits(&cred(0, 0, &[])));
        assert!(t.admits(&cred(1001, 500, &[])));
        assert!(t.admits(&cred(1001, 1001, &[7, 500])));
        assert!(!t.admits(&cred(1001, 1001, &[7, 501])));
        assert!(!t.admits(&cred(65534, 65534, &[])));
        let alone = Trust {
            uid: 1000,
            group: None,
        };
        assert!(!alone.admits(&cred(1001, 500, &[500])));
        assert_eq!(t.describe(), "uid 1000 or root, or group baton (500)");
        assert_eq!(
            Trust {
                uid: 0,
                group: None
            }
            .describe(),
            "uid 0 (root)"
        );
    }

    #[test]
    fn a_socket_says_who_connected_to_it() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let groups = peer_groups(a.as_fd()).unwrap();
        let mine = rustix::process::getgroups().unwrap();
        let mine: Vec<u32> = mine.iter().map(|g| g.as_raw()).collect();
        assert_eq!(groups, mine);
    }
}
