#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.
//! baton-embed's tests: replicas as processes on one store (SQLite, and
//! PostgreSQL with the `postgres` feature), a manual clock stepping through
//! occurrences and daylight saving, self-fencing, and a replica killed
//! mid-run.

mod alerts;
mod build;
mod catch_up;
mod checks;
mod command;
mod command_line;
mod exhibit;
mod fencing;
#[cfg(feature = "http")]
mod http;
mod manual;
mod pause;
#[cfg(feature = "postgres")]
mod pg;
mod policies;
mod readme;
mod replicas;
#[cfg(feature = "postgres")]
mod service;
mod shared_lock;
mod support;
mod timeout;
mod watermark;
