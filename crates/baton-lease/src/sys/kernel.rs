//! What the kernel says about the filesystem a path is on, and about the
//! synchronisation of its clock: `statfs(2)`, `/proc/self/mountinfo` and
//! `adjtimex(2)`, each a query that changes nothing. Interpreting the
//! answers is [`crate::filesystem`]'s and [`crate::timesync`]'s work.

use std::io;
use std::path::Path;

/// The filesystem's magic number (`f_type` of `statfs(2)`), as the kernel's
/// 32-bit constants are written.
pub(crate) fn fs_magic(path: &Path) -> io::Result<u32> {
    let s = rustix::fs::statfs(path)?;
    // `f_type` is a `long` holding a 32-bit constant; on a 32-bit kernel the
    // large ones (CIFS's 0xFF534D42) come sign-extended.
    #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
    Ok((s.f_type as i64 & 0xFFFF_FFFF) as u32)
}

/// The text of this process's mount table.
pub(crate) fn mountinfo() -> io::Result<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
}

/// What `adjtimex(2)` with no modes answers: its return value (the clock
/// state, `TIME_OK` … `TIME_ERROR`), `status` (the `STA_*` bits), and the
/// maximum and estimated errors in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timex {
    pub(crate) state: i32,
    pub(crate) status: i32,
    pub(crate) max_error_us: i64,
    pub(crate) est_error_us: i64,
}

/// `adjtimex(2)` with `modes = 0`: reads the kernel's clock discipline,
/// changes nothing, and needs no privilege.
#[allow(unsafe_code)] // One adjtimex query, which rustix does not offer.
pub(crate) fn adjtimex() -> io::Result<Timex> {
    // Safety: `timex` is a plain C struct for which all zeroes is a valid
    // value (modes 0: read only); the kernel writes into our stack copy and
    // keeps no pointer to it.
    let (rc, t) = unsafe {
        let mut t: libc::timex = std::mem::zeroed();
        let rc = libc::adjtimex(&mut t);
        (rc, t)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // `c_long` is `i32` on 32-bit targets.
    #[allow(clippy::unnecessary_cast)]
    Ok(Timex {
        state: rc,
        status: t.status,
        max_error_us: t.maxerror as i64,
        est_error_us: t.esterror as i64,
    })
}
