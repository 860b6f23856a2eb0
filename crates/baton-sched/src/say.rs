//! The scheduler's one way to print to stderr, through
//! `baton_runner::console`: a write never blocks (a stuck log collector
//! must not stop a supervisor renewing its lease) and one that fails is
//! dropped, never a panic (a reader that went away, cron's pipe or a closed
//! terminal, must not kill a process that holds a lease while its job runs).

/// Writes one line to stderr, prefixed `baton: `.
pub fn line(args: std::fmt::Arguments<'_>) {
    baton_runner::console::stderr(format!("baton: {args}\n").as_bytes());
}
