//! What gets in a new operator's way: manual pages, completions, machine
//! output on every command that changes something, messages that name what
//! to type instead, and times written one way per surface.

mod backfill;
mod completions;
mod config;
mod history;
mod json;
mod man;
mod readme;
mod shell;
pub(crate) mod times;
mod unknown_job;
