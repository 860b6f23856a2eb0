//! What the service's alert hook ([`crate::Builder::on_alert`]) receives:
//! an [`Alert`], the public type, and the hook's own type ([`Hook`]).
//!
//! It only says what an alert is: raising one (recording it, calling the
//! hook) is [`crate::alert`]'s, and nothing here records or calls anything.

use std::sync::Arc;

use baton_store::words::AlertKind;
use jiff::Timestamp;

/// An alert, as the hook given to [`crate::Builder::on_alert`] receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Alert {
    /// The job it concerns.
    pub job: String,
    /// What it is about, in the command line's words (`step-failed`,
    /// `lease-lost`, `overrunning`, `busy`, `missed`, …).
    pub kind: AlertKind,
    /// The run it concerns, if one.
    pub run_id: Option<String>,
    /// The occurrence it concerns (the first of a missed range), if one.
    pub occurrence: Option<Timestamp>,
    /// One line for people.
    pub message: String,
    /// When it was raised, by the scheduler's clock.
    pub time: Timestamp,
}

/// The service's hook.
pub(crate) type Hook = Arc<dyn Fn(&Alert) + Send + Sync>;
