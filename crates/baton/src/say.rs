//! The one place baton prints. Messages go to stderr, machine output (`lock
//! show`, `lock break`'s record) to stdout, and the two never mix. Messages
//! go through `baton_runner::console`, so a write never blocks a holder
//! whose stderr nobody reads. A write that fails is dropped, never a panic:
//! a reader that went away (a dead `| logger`, a closed terminal) must not
//! kill a holder while its job runs.
//! The one exception is [`try_to_stdout`], for output that is a command's
//! whole product: there a write that fails is the command's failure.

use std::io::Write;

/// Writes one line to stderr, without blocking: as it is, or as an event
/// where the process writes JSON lines ([`crate::log`]).
pub fn to_stderr(args: std::fmt::Arguments<'_>) {
    if crate::log::writes_json() {
        tracing::info!(target: "baton", "{args}");
        return;
    }
    baton_runner::console::stderr(format!("{args}\n").as_bytes());
}

/// The first failed write to stdout (a full disk), kept for the command's
/// end: what was written is incomplete, so the command cannot end with
/// success ([`stdout_failed`]).
static STDOUT_FAILED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Writes to stdout and flushes. A write that fails is dropped (a holder
/// goes on), and remembered for [`stdout_failed`]; a reader that went away
/// (a closed pipe: `baton history | head`) is no failure.
pub fn to_stdout(args: std::fmt::Arguments<'_>) {
    let mut o = std::io::stdout().lock();
    let wrote = o.write_fmt(args).and_then(|()| o.flush());
    if let Err(e) = wrote
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        let _ = STDOUT_FAILED.set(e.to_string());
    }
}

/// Why the command's output on stdout is incomplete, if a write of it
/// failed.
pub fn stdout_failed() -> Option<&'static str> {
    STDOUT_FAILED.get().map(String::as_str)
}

/// Writes `text` to stdout and flushes, saying whether it got there: for
/// output that is the command's whole product (`baton render`), where a
/// write that fails must fail the command.
///
/// # Errors
///
/// The write's or the flush's error (a full disk, a closed pipe).
pub fn try_to_stdout(text: &str) -> std::io::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()
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
