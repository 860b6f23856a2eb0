//! A time zone and the name it was given by: what `timezone` is read
//! into. Two zones are the same when their names are.
//!
//! This module owns only the type. It must never read the system's zone
//! (the key's default does, in [`super::keys`]) nor a clock.

use jiff::tz::TimeZone;

/// A time zone and the name it was given by.
#[derive(Debug, Clone)]
pub struct Zone {
    /// The IANA name (`Europe/Berlin`).
    pub name: String,
    /// The zone.
    pub tz: TimeZone,
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
