//! The exit codes, in one place, with the numbers `--help` documents.
//!
//! The instrument fails only for the implementation under test: an exhibit
//! that races is the finding, not a failure. A race in baton outranks every
//! other outcome, because it is the one the instrument exists to catch.

/// How `baton-stress` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Baton never raced and the instrument worked for it (exhibit races
    /// included: they are reported, not failed).
    Clean,
    /// Baton raced: two holders at once, seen by the witness, a duplicate
    /// winner, or a lease lost while it was held.
    BatonRaced,
    /// The command line or the configuration was refused; nothing ran.
    Usage,
    /// The instrument broke while measuring baton: a contender failed, never
    /// finished, or gave up waiting. The lock was not shown to race, but the
    /// run is not evidence either.
    InstrumentBroken,
}

impl Exit {
    /// The process exit code.
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Clean => 0,
            Self::BatonRaced => 1,
            Self::Usage => 2,
            Self::InstrumentBroken => 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_the_documented_ones() {
        let codes: Vec<u8> = [
            Exit::Clean,
            Exit::BatonRaced,
            Exit::Usage,
            Exit::InstrumentBroken,
        ]
        .iter()
        .map(|e| e.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3]);
    }
}
