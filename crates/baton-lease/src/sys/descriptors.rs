//! This process's open-file limit (`RLIMIT_NOFILE`): remembered when a
//! supervisor starts, and given back when a look at `/proc` is refused for
//! want of a descriptor (`EMFILE`), so that a supervisor whose limit was
//! lowered under it (`prlimit --nofile` by its owner or by root) can still
//! see its job's processes, and so let go of its lease once they are gone.
//!
//! It raises this process's own limit only, never above what it was when
//! remembered (or, with nothing remembered, the soft limit to the hard one,
//! which needs no privilege). It decides nothing: a look that is still
//! refused after it is the caller's to treat as "cannot tell".

use std::io;
use std::sync::OnceLock;

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

/// The limit when [`remember`] was first called.
static AT_START: OnceLock<Rlimit> = OnceLock::new();

/// Remembers the limit as it is now, the first time it is called; later
/// calls keep the first.
pub(crate) fn remember() {
    let _ = AT_START.get_or_init(|| getrlimit(Resource::Nofile));
}

/// Whether `e` is the kernel's refusal of a descriptor to this process
/// (`EMFILE`). The whole system's table being full (`ENFILE`) is not: no
/// limit of this process gives that back.
pub(crate) fn exhausted(e: &io::Error) -> bool {
    e.raw_os_error() == Some(rustix::io::Errno::MFILE.raw_os_error())
}

/// `None` (no limit) as the largest number, for comparing.
fn value(v: Option<u64>) -> u64 {
    v.unwrap_or(u64::MAX)
}

/// The number back as a limit: the largest is "no limit".
fn limit(v: u64) -> Option<u64> {
    (v != u64::MAX).then_some(v)
}

/// Raises the limit back towards the remembered one; `true` when it rose.
/// Raising the hard limit needs `CAP_SYS_RESOURCE`; without it, the soft
/// limit is raised as far as the hard one allows.
pub(crate) fn regain() -> bool {
    let now = getrlimit(Resource::Nofile);
    let (soft, hard) = (value(now.current), value(now.maximum));
    let (start_soft, start_hard) = AT_START
        .get()
        .map_or((hard, hard), |s| (value(s.current), value(s.maximum)));
    let want_soft = soft.max(start_soft);
    // The hard limit back first (it needs the privilege to rise), then as
    // much as the hard limit as it is allows.
    for h in [hard.max(start_hard), hard] {
        let s = want_soft.min(h);
        if (s, h) != (soft, hard)
            && setrlimit(
                Resource::Nofile,
                Rlimit {
                    current: limit(s),
                    maximum: limit(h),
                },
            )
            .is_ok()
        {
            return true;
        }
    }
    false
}

/// Runs `look`, and once more after [`regain`] when it was refused a
/// descriptor and the limit could be raised.
pub(crate) fn regaining<T>(look: impl Fn() -> io::Result<T>) -> io::Result<T> {
    match look() {
        Err(e) if exhausted(&e) && regain() => look(),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_limit_compares_above_every_number_and_comes_back_as_none() {
        assert_eq!(value(None), u64::MAX);
        assert_eq!(limit(value(None)), None);
        assert_eq!(limit(value(Some(1024))), Some(1024));
    }

    #[test]
    fn only_this_processs_own_refusal_counts_as_exhausted() {
        let emfile = io::Error::from_raw_os_error(rustix::io::Errno::MFILE.raw_os_error());
        let enfile = io::Error::from_raw_os_error(rustix::io::Errno::NFILE.raw_os_error());
        assert!(exhausted(&emfile));
        assert!(!exhausted(&enfile));
        assert!(!exhausted(&io::Error::from(io::ErrorKind::NotFound)));
    }
}
