//! The operating system, behind one door.
//!
//! Every system call baton-lease makes lives below this module: opening and
//! creating lock files ([`file`]), the `flock` mutex ([`file`]), facts about
//! processes and process groups ([`process`]), the open-file limit that
//! reading them needs ([`descriptors`]), random bytes ([`random`]),
//! names in the abstract socket namespace ([`presence`]), and the kernel's
//! word on filesystems and on clock synchronisation ([`kernel`]).
//! clippy's `disallowed-methods` forbids the `flock` family anywhere else, so a
//! second path to the mutex cannot slip in unnoticed. Nothing here decides
//! anything: it reports what the kernel says and leaves judgement to
//! [`crate::decide`].

pub(crate) mod descriptors;
pub(crate) mod file;
pub(crate) mod kernel;
pub(crate) mod presence;
pub(crate) mod process;
pub(crate) mod random;
