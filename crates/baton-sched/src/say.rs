//! The scheduler's one way to speak on stderr. Each line is a `tracing`
//! event: the binary's subscriber writes it as `baton: LINE` (or as a JSON
//! object, for a daemon asked for JSON) through `baton_runner::console`, so
//! a write never blocks (a stuck log collector must not stop a supervisor
//! renewing its lease) and one that fails is dropped, never a panic (a
//! reader that went away, cron's pipe or a closed terminal, must not kill a
//! process that holds a lease while its job runs). Without a subscriber
//! (a library's own tests), nothing is written.

/// Says one line on stderr, for people: what happened.
pub fn line(args: std::fmt::Arguments<'_>) {
    tracing::info!(target: "baton_sched", "{args}");
}

/// Says one line on stderr, for people: something went wrong (an alert, a
/// warning, a record that could not be kept).
pub fn warn(args: std::fmt::Arguments<'_>) {
    tracing::warn!(target: "baton_sched", "{args}");
}
