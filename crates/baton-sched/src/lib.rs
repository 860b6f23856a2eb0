//! baton-sched: the scheduler around the run lock.
//!
//! `baton.toml` names jobs, their schedules in time zones, and their steps
//! and checks ([`config`]). `baton tick` runs what is due now, `baton run`
//! runs a job by hand; each run holds the job's lease (claiming its
//! occurrence in the same critical section, so one occurrence runs once)
//! and is supervised by `baton-runner`. What happened is written to the
//! ledger (through [`store`]), to dated logs, and as alerts on five
//! surfaces. `status`, `history` and `config` read it back for people and
//! scripts; [`views::job_state`] is the one answer to what state a job is
//! in, which every surface shows.
//!
//! The crate is in layers, each a folder, each using only those below it:
//!
//! - [`ops`]: the operations (tick, run now, backfill, pause, watermark),
//!   each returning an [`outcome::Outcome`];
//! - [`views`]: what is read without changing anything (status, page,
//!   metrics, history, calendar, the effective configuration);
//! - [`render`]: the configuration as a crontab, systemd units, GitHub
//!   workflows and the environment's reference; [`doctor`]: a host's check;
//! - [`engine`]: what is due, one run under its lease, its steps, retries,
//!   records and alerts;
//! - [`store`]: which store the configuration names, and the clock it
//!   decides by; [`state`]: the state directory's files and logs;
//! - [`config`]: reading and validating `baton.toml` (each key defined once,
//!   in `config/keys.rs`), and the small words everything speaks: [`times`],
//!   [`units`], [`http`] (an HTTP step and `baton __http`'s protocol).
//!
//! Nothing here prints or picks an exit code: messages are `tracing`
//! events the binary's subscriber writes, and results are typed.

pub mod config;
pub mod doctor;
pub mod engine;
pub mod http;
pub mod jitter;
pub mod ops;
pub mod outcome;
pub mod render;
mod say;
pub mod state;
pub mod store;
#[cfg(test)]
mod text_asserts;
pub mod times;
pub mod units;
pub mod views;
