//! The vocabulary the scheduler speaks: what a run came to
//! ([`RunVerdict`]), what each attempt of a step came to
//! ([`AttemptOutcome`]), whether it ran a step or a check ([`StepKind`]),
//! what was decided for an occurrence ([`Decision`]), why one did not run
//! ([`MissReason`], [`SkipReason`]), and what an alert is about
//! ([`AlertKind`]).
//!
//! Each concept is one enum, and code compares its variants, never text. A
//! word becomes text only where it meets SQL, JSON or a human: `as_str`,
//! `Display` and `Serialize` give the word as it is stored and shown;
//! `FromStr` and `Deserialize` read it back and refuse any other word with
//! [`UnknownWord`]. A store that reads a word it does not know fails the
//! read: it never guesses what a word meant.
//!
//! Each enum's `ALL` lists every word baton records, in the order its type
//! tells them, so that a reader of the tallies (the metrics) shows each at
//! 0 before its first event. The words sort as their text does: a map
//! keyed by them lists them as a map keyed by the text did.

/// A word that names none of a concept's values.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {word:?}")]
pub struct UnknownWord {
    what: &'static str,
    word: String,
}

impl UnknownWord {
    fn new(what: &'static str, word: &str) -> Self {
        Self {
            what,
            word: word.to_owned(),
        }
    }
}

/// Declares one concept's enum: each variant with its word (`Variant =
/// "word"`), and, after `former`, words only an older ledger holds, read
/// but never recorded (not in `ALL`). `what` names the concept in an
/// [`UnknownWord`].
macro_rules! words {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $word:literal, )+
        }
        $( former {
            $( $(#[$fmeta:meta])* $former:ident = $fword:literal, )+
        } )?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            $($( $(#[$fmeta])* $former, )+)?
        }

        impl $name {
            /// Every word baton records, in the order the type tells them.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The word, as stored and shown.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $word,)+
                    $($(Self::$former => $fword,)+)?
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::words::UnknownWord;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($word => Ok(Self::$variant),)+
                    $($($fword => Ok(Self::$former),)+)?
                    _ => Err($crate::words::UnknownWord::new($what, s)),
                }
            }
        }

        impl PartialOrd for $name {
            fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for $name {
            fn cmp(&self, other: &Self) -> std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let word = String::deserialize(d)?;
                word.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

mod alert;
mod occurrence;
mod run;

pub use alert::AlertKind;
pub use occurrence::{Decision, MissReason, SkipReason};
pub use run::{AttemptOutcome, RunVerdict, StepKind};

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fmt::{self, Debug};
    use std::str::FromStr;

    use super::*;

    /// Every word of `all` reads back as itself, and no two are the same.
    fn round_trip<T>(all: &[T], former: &[T])
    where
        T: Copy + Ord + Debug + fmt::Display + FromStr<Err = UnknownWord>,
    {
        for &w in all.iter().chain(former) {
            assert_eq!(w.to_string().parse::<T>(), Ok(w));
        }
        let words: BTreeSet<String> = all.iter().chain(former).map(T::to_string).collect();
        assert_eq!(words.len(), all.len() + former.len(), "{all:?}");
        let sorted: Vec<String> = BTreeSet::from_iter(all.iter().copied())
            .iter()
            .map(T::to_string)
            .collect();
        let mut by_text: Vec<String> = all.iter().map(T::to_string).collect();
        by_text.sort();
        assert_eq!(sorted, by_text, "they sort as their text does");
    }

    #[test]
    fn every_word_reads_back_as_itself() {
        round_trip(RunVerdict::ALL, &[]);
        round_trip(AttemptOutcome::ALL, &[]);
        round_trip(StepKind::ALL, &[]);
        round_trip(Decision::ALL, &[]);
        round_trip(
            MissReason::ALL,
            &[MissReason::MissedUnstated, MissReason::SkippedUnstated],
        );
        round_trip(SkipReason::ALL, &[]);
        round_trip(AlertKind::ALL, &[]);
    }

    #[test]
    fn an_unknown_word_is_refused_by_name() {
        let err = "Started".parse::<Decision>().unwrap_err();
        assert_eq!(err.to_string(), "unknown decision \"Started\"");
        let err = "crashed".parse::<RunVerdict>().unwrap_err();
        assert_eq!(err.to_string(), "unknown run verdict \"crashed\"");
    }

    #[test]
    fn json_holds_the_word() {
        let json = serde_json::to_string(&[MissReason::CatchUpMax]).unwrap();
        assert_eq!(json, r#"["catch-up-max"]"#);
        let back: Vec<MissReason> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, [MissReason::CatchUpMax]);
        let err = serde_json::from_str::<AlertKind>(r#""nope""#).unwrap_err();
        assert!(
            err.to_string().contains("unknown alert kind \"nope\""),
            "{err}"
        );
    }
}
