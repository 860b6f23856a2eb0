#![allow(clippy::unwrap_used)] // Tests state their expectations with unwrap.
//! baton-cron's integration tests: the parser's accepted forms and refusals,
//! hand-checked daylight-saving cases in real zones from the system's time
//! zone database, intervals, and a property test against a brute-force
//! oracle that walks instants one by one.

mod support;

mod bounds;
mod dst;
mod every;
mod oracle;
mod parse;
