//! baton's command-line tests: the real binary, real processes, real signals.
#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.

mod support;

mod alerts;
mod blocked;
mod calendar;
mod claims;
mod clock;
mod contain;
mod crash;
mod daemon;
mod daemon_auth;
mod doctor;
mod dropin;
mod edges;
mod example;
mod exit_codes;
mod failover;
mod first_seen;
mod friction;
mod hardening;
mod history_page;
mod hosts;
mod http;
mod jitter;
mod lock_tools;
mod metrics;
mod overlap;
mod package;
mod page;
mod policies;
mod prometheus;
mod quiet;
mod records;
mod renamed;
mod render;
mod sched;
mod standby_stall;
mod states;
mod store;
mod store_tls;
mod trust;
mod unfinished;
mod upgrade;
mod versions;
mod webhook;
