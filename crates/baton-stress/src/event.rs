//! The contender's line protocol: one JSON object per line on its stdout,
//! written the moment the thing it reports happens, so a contender killed
//! with `kill -9` has already told the parent everything up to its death.
//!
//! The parent talks back on the contender's stdin: one line `go T` (the
//! boot-clock instant, in milliseconds, that every contender busy-waits to),
//! and later end-of-file, which tells a holder to let go.

use serde::{Deserialize, Serialize};

/// One thing a contender reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Event {
    /// Started and waiting for `go`.
    Ready,
    /// A single-decision contender (or one thread) decided.
    Decided {
        /// Whether it believes it holds the lock now.
        won: bool,
    },
    /// One acquisition in a churn or polling loop.
    Win,
    /// The witness named another live holder at this holder's claim.
    Overlap {
        /// The other holder's pid.
        other: u32,
    },
    /// A holder found, at renewal or release, that the lease had passed to
    /// someone else while it believed it held it.
    Displaced,
    /// With N slots: the most holders this contender has seen at once so
    /// far, counted at one instant right after its claim (sent only when it
    /// grows).
    Held {
        /// Holders at that instant, this one included.
        holders: u32,
    },
    /// The exhibit failed in the way its seed describes (not the instrument).
    Defect {
        /// Which defect.
        kind: DefectKind,
        /// What was seen.
        detail: String,
    },
    /// The instrument failed (I/O on its own files, an unexpected answer).
    Error {
        /// What failed.
        detail: String,
    },
    /// The contender is finished.
    Done {
        /// Acquisition attempts made.
        attempts: u64,
        /// How late after the start instant it began, in microseconds.
        late_us: u64,
        /// Whether it gave up before finishing its rounds.
        gave_up: bool,
    },
}

/// The exhibits' observed defects, by the seed that describes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DefectKind {
    /// Seed 000: two saves through the fixed `<id>.json.tmp`; the loser's
    /// rename finds the file already moved (`FileNotFoundError` in the seed).
    TempPathCollision,
    /// Seed 000: two unserialised writes into the one temporary file left a
    /// record that no longer parses; every later tick fails the same way.
    CorruptRecord,
    /// The counter: every slot counted taken and none given back (a holder
    /// killed while it held one never decremented, or two releases left
    /// one decrement); nothing can acquire again.
    Wedged,
}

impl DefectKind {
    /// A short human name.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Self::TempPathCollision => {
                "temp-path collision (the fixed <id>.json.tmp renamed twice)"
            }
            Self::CorruptRecord => "corrupt record (two writers in one temp file)",
            Self::Wedged => "wedged (every slot counted taken, none given back)",
        }
    }
}

impl Event {
    /// The line for this event, without its newline.
    pub(crate) fn line(&self) -> String {
        // OK because every variant is plain data that serde_json can always render.
        serde_json::to_string(self)
            .unwrap_or_else(|_| r#"{"event":"error","detail":"unrenderable event"}"#.into())
    }

    /// Parses one line.
    ///
    /// # Errors
    ///
    /// A line that is no event (the parent reports it as an instrument error).
    pub(crate) fn parse(line: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_as_one_line() {
        for e in [
            Event::Ready,
            Event::Decided { won: true },
            Event::Overlap { other: 7 },
            Event::Defect {
                kind: DefectKind::TempPathCollision,
                detail: "x\ny".into(),
            },
            Event::Done {
                attempts: 3,
                late_us: 0,
                gave_up: false,
            },
        ] {
            let l = e.line();
            assert!(!l.contains('\n'));
            assert_eq!(Event::parse(&l).unwrap(), e);
        }
        assert_eq!(Event::Win.line(), r#"{"event":"win"}"#);
    }
}
