//! The scheduler's one way to print to stderr. A write that fails is
//! dropped, never a panic: a reader that went away (cron's pipe, a closed
//! terminal) must not kill a process that holds a lease while its job runs.

use std::io::Write;

/// Writes one line to stderr, prefixed `baton: `.
pub fn line(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "baton: {args}");
}
