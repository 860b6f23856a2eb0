//! The one place baton prints. Messages go to stderr, machine output (`lock
//! show`, `lock break`'s record) to stdout, and the two never mix. A write
//! that fails is dropped, never a panic: a reader that went away (a dead
//! `| logger`, a closed terminal) must not kill a holder while its job runs.

use std::io::Write;

/// Writes one line to stderr.
pub fn to_stderr(args: std::fmt::Arguments<'_>) {
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}

/// Writes to stdout and flushes.
pub fn to_stdout(args: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_fmt(args);
    let _ = o.flush();
}

/// A line on stderr.
macro_rules! say {
    ($($t:tt)*) => { $crate::say::to_stderr(format_args!($($t)*)) };
}

/// Text on stdout.
macro_rules! out {
    ($($t:tt)*) => { $crate::say::to_stdout(format_args!($($t)*)) };
}

/// A line on stdout.
macro_rules! outln {
    ($($t:tt)*) => { $crate::say::to_stdout(format_args!("{}\n", format_args!($($t)*))) };
}
