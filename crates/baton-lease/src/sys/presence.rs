//! Names in Linux's abstract socket namespace: binding one for as long as a
//! socket lives, and asking the kernel who holds one already.
//!
//! An abstract name belongs to no directory: no rename or removal in any
//! filesystem moves it, and the kernel frees it when the last descriptor of
//! its socket closes (at the holder's exit, `kill -9` included). A name is
//! held by a listening stream socket, so that a process that finds it taken
//! can connect and read the listener's credentials (`SO_PEERCRED`, recorded
//! by the kernel at `listen`, not claimed by the holder). The connection is
//! never accepted; it waits in the listener's queue until the listener
//! closes. Nothing here decides anything: it binds, or it reports who the
//! kernel says listens on the name.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

/// How many unaccepted connections a listener keeps queued (the kernel caps
/// it at `net.core.somaxconn`, 4,096 by default). Every process that asks
/// who listens leaves one; a full queue makes the next one's answer "none".
const BACKLOG: i32 = 4096;

/// How many times a name is asked again when nothing listens on it (a holder
/// may be between its `bind` and its `listen`).
const ATTEMPTS: u32 = 3;

/// The process the kernel says listens on a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Peer {
    /// Its process id, in this process's pid namespace (0 when it is in none
    /// this process can name).
    pub(crate) pid: u32,
    /// Its effective user id when it started listening.
    pub(crate) uid: u32,
}

/// Binds `name` (without the leading NUL) to a new listening socket: `None`
/// when another socket holds it.
///
/// # Errors
///
/// A name too long for an address, or a failure to make a socket.
pub(crate) fn bind(name: &[u8]) -> io::Result<Option<OwnedFd>> {
    let addr = SocketAddrUnix::new_abstract_name(name)?;
    let fd = socket()?;
    match rustix::net::bind(&fd, &addr) {
        Ok(()) => {
            rustix::net::listen(&fd, BACKLOG)?;
            Ok(Some(fd))
        }
        Err(Errno::ADDRINUSE) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Who listens on `name`: `None` when nothing does (nothing bound, or a
/// socket bound that does not listen, as a baton holder always does), or
/// when the listener's queue is full.
///
/// # Errors
///
/// A name too long for an address, or a failure to make a socket.
pub(crate) fn listener(name: &[u8]) -> io::Result<Option<Peer>> {
    let addr = SocketAddrUnix::new_abstract_name(name)?;
    for _ in 0..ATTEMPTS {
        let probe = socket()?;
        match rustix::net::connect(&probe, &addr) {
            Ok(()) => return peer(probe.as_fd()).map(Some),
            // Nothing listens: nothing bound, or bound and not listening
            // yet (a holder between its `bind` and its `listen`).
            Err(Errno::CONNREFUSED) => std::thread::yield_now(),
            // The listener's queue is full.
            Err(Errno::AGAIN) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}

/// The credentials the kernel recorded for the other end of `fd`
/// (`SO_PEERCRED`). Read into a plain `ucred`: the kernel says pid 0 for a
/// listener in no pid namespace this process can name (a contender in a
/// child namespace asking about a holder outside it), which rustix's
/// `UCred`, whose pid is never 0, cannot hold.
#[allow(unsafe_code)] // One getsockopt(2) into a struct of this frame.
fn peer(fd: BorrowedFd<'_>) -> io::Result<Peer> {
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = libc::socklen_t::try_from(std::mem::size_of::<libc::ucred>())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // Safety: `cred` and `len` live in this frame; `len` is `cred`'s size,
    // which is what SO_PEERCRED writes at most.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Peer {
        pid: u32::try_from(cred.pid).unwrap_or(0),
        uid: cred.uid,
    })
}

fn socket() -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::STREAM,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(tag: &str) -> Vec<u8> {
        format!("baton-lease-test/{}/{tag}", std::process::id()).into_bytes()
    }

    #[test]
    fn a_bound_name_is_held_by_this_process_until_its_socket_closes() {
        let n = name("closes");
        assert_eq!(listener(&n).unwrap(), None);
        let fd = bind(&n).unwrap().expect("a fresh name binds");
        assert!(bind(&n).unwrap().is_none(), "the name is held");
        let peer = listener(&n).unwrap().expect("its listener is named");
        assert_eq!(peer.pid, std::process::id());
        assert_eq!(peer.uid, rustix::process::geteuid().as_raw());
        drop(fd);
        assert_eq!(listener(&n).unwrap(), None);
        assert!(bind(&n).unwrap().is_some());
    }

    #[test]
    fn a_name_bound_without_listening_has_no_listener() {
        let n = name("deaf");
        let addr = SocketAddrUnix::new_abstract_name(&n).unwrap();
        let squatter = socket().unwrap();
        rustix::net::bind(&squatter, &addr).unwrap();
        assert_eq!(listener(&n).unwrap(), None);
    }
}
