#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.
//! baton-pg against a real PostgreSQL server, started by the test kit for
//! each scenario and removed after it. Hosts are simulated by the facts a
//! holder states: a holder whose boot id is not this machine's cannot be
//! checked from here, exactly as one on another machine.

mod support;

mod bouncer;
mod claims;
mod evidence;
mod guards;
mod held;
mod lease;
mod ledger_upgrade;
mod lost_reply;
mod replica;
mod round_trips;
mod schema;
mod shared;
mod switch;
mod takeover;
mod timeouts;
mod tls;
