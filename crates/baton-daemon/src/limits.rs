//! The limits the daemon reads a request by: its head (hyper's own limits,
//! named) and its body. They live here, apart from the code that enforces
//! them ([`crate::connection`], [`crate::api`]), so the answers that refuse
//! a request past one ([`crate::malformed`], [`crate::error`]) can say it.
//!
//! What it never does: enforce anything itself, or hold a limit that the
//! code reading requests does not apply.

/// The most bytes of a request's head (its request line and headers)
/// read: hyper's default, named so the answer can say it.
pub(crate) const HEAD_BYTES: usize = 8192 + 4096 * 100;
/// The most header lines a request may have: hyper's default.
pub(crate) const MAX_HEADERS: usize = 100;
/// The longest URI hyper reads, fixed in it (`u16::MAX - 1`).
pub(crate) const MAX_URI: usize = 65_534;

/// The most bytes of a request body read (axum's default, named so the
/// answer to a larger one can say it).
pub(crate) const BODY_BYTES: usize = 2 * 1024 * 1024;
