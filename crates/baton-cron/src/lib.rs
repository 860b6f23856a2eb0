//! baton-cron: when a schedule fires, in a time zone.
//!
//! This crate owns one question: given a schedule, an instant and an IANA
//! time zone, which instants are its occurrences? A [`Schedule`] is a cron
//! expression (five fields, six with seconds first, or a macro such as
//! `@daily`) or a fixed interval ([`Schedule::every`]). Its occurrences are
//! UTC instants, strictly increasing, never repeated.
//!
//! # How a cron schedule meets daylight saving
//!
//! A wall-clock time *matches* when its second (0 for five-field
//! expressions), minute, hour, day-of-month, month and day-of-week are
//! allowed by the fields. Day-of-month and day-of-week combine as in Vixie
//! cron: when either field starts with `*`, a day must match both; otherwise
//! it may match either.
//!
//! A cron schedule is **wildcard** when its minute or its hour field starts
//! with `*` (`*/15 * * * *`, `30 * * * *`, `* 2 * * *`), and **fixed**
//! otherwise (`30 2 * * *`, `0,30 2 * * *`, `0 3 * * 0`). This is how Vixie
//! cron and cronie tell the two apart.
//!
//! - **A wildcard schedule follows elapsed time.** An instant is an
//!   occurrence when its wall-clock time matches. When clocks spring forward,
//!   the skipped wall-clock times never happen, so nothing fires in them.
//!   When clocks fall back, the repeated wall-clock times happen twice, and
//!   fire twice: `*/15 * * * *` in New York on the fall-back day fires at
//!   01:00, 01:15, 01:30 and 01:45 EDT, then again at 01:00 to 01:45 EST.
//! - **A fixed schedule fires once per matching wall-clock time.** A time
//!   that happens once fires then. A time that happens twice, in a fall-back
//!   fold, fires the first time only (before the clocks go back). A time that
//!   does not happen, in a spring-forward gap, fires once at the end of the
//!   gap, the instant the clocks jump: `30 2 * * *` in New York on
//!   2026-03-08 fires at 03:00 EDT. However many matching times a gap
//!   swallows (`0,30 2 * * *` loses both 02:00 and 02:30), they fire once
//!   together at that instant, and the day is never skipped.
//! - **Intervals ignore zones.** [`Schedule::every`] fires at whole multiples
//!   of its period since 1970-01-01T00:00:00Z, in every zone alike.
//!
//! Whatever the rules, occurrences come out in strictly increasing order, and
//! two wall-clock times that land on the same instant are one occurrence.
//!
//! # What it never does
//!
//! It never reads the clock: every question takes the instant it is about.
//! It never touches files; only building a `jiff::tz::TimeZone`, which the
//! caller does, may read the system's time zone database. Every refusal
//! happens when a schedule is parsed, with a one-line [`ParseError`] naming
//! the offending part; evaluating a schedule cannot fail, and answers `None`
//! only when nothing fires within about 100 years (or within the range of
//! `jiff::Timestamp`).
//!
//! ```
//! use baton_cron::Schedule;
//! use jiff::{Timestamp, tz::TimeZone};
//!
//! let every_quarter: Schedule = "*/15 * * * *".parse()?;
//! let tz = TimeZone::get("America/New_York")?;
//! let t: Timestamp = "2026-11-01T05:40:00Z".parse()?; // 01:40 EDT
//! let next: Vec<String> =
//!     every_quarter.iter_after(t, &tz).take(2).map(|t| t.to_string()).collect();
//! // 01:45 EDT, then 01:00 EST: the clocks went back at 02:00 EDT.
//! assert_eq!(next, ["2026-11-01T05:45:00Z", "2026-11-01T06:00:00Z"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Map of the crate: `parse` reads expressions into [`Fields`]; `civil`
//! finds matching wall-clock times; `resolve` turns them into instants in a
//! zone (the rules above); `every` does intervals; [`Schedule`] is the
//! public face; `error` says why a schedule was refused. `DESIGN.md` beside
//! this crate's manifest explains why baton has its own evaluator and how it
//! is tested.

mod civil;
mod error;
mod every;
mod field;
mod parse;
mod resolve;
mod schedule;

pub use error::ParseError;
pub use field::{Field, FieldSet, Fields};
pub use schedule::{Kind, Schedule};
