//! The exit codes, in one place, with the numbers `--help` documents. A
//! violation outranks every other outcome: it is what the campaign exists
//! to find.

/// How `baton-faults` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// Every trial ran and held every invariant.
    Clean,
    /// At least one trial saw a violation.
    Violated,
    /// The command line was refused, or what a scenario needs is missing;
    /// nothing ran.
    Usage,
    /// No violation, but the instrument failed in some trial (a command it
    /// needed did not start, a server did not come up): not evidence.
    InstrumentBroken,
}

impl Exit {
    /// The process exit code.
    pub(crate) fn code(self) -> u8 {
        match self {
            Self::Clean => 0,
            Self::Violated => 1,
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
            Exit::Violated,
            Exit::Usage,
            Exit::InstrumentBroken,
        ]
        .iter()
        .map(|e| e.code())
        .collect();
        assert_eq!(codes, [0, 1, 2, 3]);
    }
}
