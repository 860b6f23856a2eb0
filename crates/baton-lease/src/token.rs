//! The fencing pair: a random [`Token`] that names one acquisition, and a
//! [`Fence`] number that orders acquisitions.
//!
//! The token is what renew and release trust: they change a record only when
//! its token is theirs. The fence is what a job hands to whatever it writes,
//! so a store can reject a writer older than one it has already seen. Fences
//! of one lock strictly increase: a new fence is `max(previous + 1, wall
//! clock in microseconds)`, so they keep increasing when the lock file is
//! deleted by hand and the previous fence is lost (see `DESIGN.md`, "Fence").
//! Nothing outside this module invents either value.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;

/// A fresh, random 64-bit name for one acquisition, shown as 16 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Token([u8; 8]);

impl Token {
    /// A token from the operating system's random source.
    ///
    /// # Errors
    ///
    /// When the random source cannot be read.
    pub fn fresh() -> std::io::Result<Self> {
        let mut bytes = [0u8; 8];
        crate::sys::random::fill(&mut bytes)?;
        Ok(Self(bytes))
    }

    /// A token made from fixed bytes, for tests and for parsing.
    pub const fn from_bytes(bytes: [u8; 8]) -> Self {
        Self(bytes)
    }

    /// Its bytes: random ones, for a caller that needs fresh ids of its
    /// own (a trace's span ids).
    pub const fn to_bytes(self) -> [u8; 8] {
        self.0
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({self})")
    }
}

/// The text was not 16 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a token is 16 lowercase hex digits")]
pub struct BadToken;

impl FromStr for Token {
    type Err = BadToken;

    fn from_str(s: &str) -> Result<Self, BadToken> {
        let s = s.as_bytes();
        if s.len() != 16 {
            return Err(BadToken);
        }
        let mut out = [0u8; 8];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            out[i] = (hex(pair[0])? << 4) | hex(pair[1])?;
        }
        Ok(Self(out))
    }
}

fn hex(c: u8) -> Result<u8, BadToken> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(BadToken),
    }
}

/// The acquisition number of a lock: strictly greater than every fence handed
/// out before it for the same lock file (and, after the file was deleted,
/// greater than any fence issued before the wall clock's current reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fence(u64);

impl Fence {
    /// The fence after `previous`, at wall time `now`; `None` when the next
    /// fence would pass [`Fence::MAX`] (which only a record written by hand
    /// can bring about: the clock's microseconds reach it in year 10000).
    pub(crate) fn next(previous: Option<Fence>, now: Timestamp) -> Option<Fence> {
        let after = previous.map_or(1, |p| p.0.saturating_add(1));
        let micros = u64::try_from(now.as_microsecond()).unwrap_or(0);
        let next = after.max(micros.min(Self::MAX.0));
        (next <= Self::MAX.0).then_some(Fence(next))
    }

    /// The largest fence a record may carry: the last microsecond of year
    /// 9999, since 1970. Fences are wall-clock microseconds (or one more than
    /// the previous fence), so this leaves room for every fence the clock can
    /// issue, and a record that claims more is unreadable.
    pub const MAX: Fence = Fence(253_402_300_799_999_999);

    /// The number itself.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// A fence with this number (parsing and tests).
    pub const fn new(n: u64) -> Self {
        Self(n)
    }
}

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips_through_text() {
        let t = Token::from_bytes([0x9f, 0x3c, 0x1a, 0xb2, 0x7d, 0xe4, 0x05, 0x18]);
        assert_eq!(t.to_string(), "9f3c1ab27de40518");
        assert_eq!("9f3c1ab27de40518".parse::<Token>(), Ok(t));
    }

    #[test]
    fn token_rejects_anything_else() {
        for bad in [
            "",
            "9f3c1ab27de4051",
            "9f3c1ab27de405188",
            "9F3C1AB27DE40518",
            "zz3c1ab27de40518",
        ] {
            assert_eq!(bad.parse::<Token>(), Err(BadToken), "{bad:?}");
        }
    }

    #[test]
    fn fresh_tokens_differ() {
        let a = Token::fresh().unwrap();
        let b = Token::fresh().unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn fence_follows_the_previous_or_the_clock_whichever_is_later() {
        let t = Timestamp::from_microsecond(5_000).unwrap();
        assert_eq!(Fence::next(None, t), Some(Fence(5_000)));
        assert_eq!(Fence::next(Some(Fence(4_000)), t), Some(Fence(5_000)));
        assert_eq!(Fence::next(Some(Fence(9_000)), t), Some(Fence(9_001)));
        let before_epoch = Timestamp::from_second(-10).unwrap();
        assert_eq!(Fence::next(None, before_epoch), Some(Fence(1)));
        assert_eq!(Fence::next(Some(Fence::MAX), t), None);
        assert_eq!(Fence::next(Some(Fence(u64::MAX)), t), None);
        let last = Fence(Fence::MAX.0 - 1);
        assert_eq!(Fence::next(Some(last), t), Some(Fence::MAX));
        assert!(u64::try_from(Timestamp::MAX.as_microsecond()).unwrap() <= Fence::MAX.0);
    }
}
