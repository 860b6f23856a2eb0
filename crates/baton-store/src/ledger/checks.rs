//! The rules for a caller's arguments that every ledger applies before it
//! writes anything: a fence that fits a signed 64-bit column, a missed range
//! that makes sense, occurrences to queue in strictly ascending order, a
//! pause that ends after it begins, a watermark value of bounded size
//! without a NUL.
//!
//! Each rule returns the problem as a [`Refusal`], shown in words as the
//! `problem` of [`super::Error::Invalid`], so that the SQLite ledger and the
//! PostgreSQL one refuse the same arguments with the same message. Nothing
//! here reads or writes a store, and nothing outside this module restates a
//! rule.

use jiff::Timestamp;

use super::rows::Miss;

/// The largest watermark value stored, in bytes.
pub const MAX_WATERMARK: usize = 4096;

/// The most runs of a job its ledger keeps (`history_keep`), as the command
/// line's key and the library's jobs take it.
pub const MAX_HISTORY_KEEP: u32 = 1_000_000;

/// Why a rule refuses an argument; its words are the `problem` of
/// [`super::Error::Invalid`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// A fence beyond `i64::MAX`.
    #[error("the fence {0:?} does not fit the ledger")]
    Fence(Option<u64>),
    /// A missed range whose first occurrence is after its last.
    #[error("the range starts at {first} after its end {last}")]
    Reversed {
        /// The range's first occurrence.
        first: i64,
        /// The range's last occurrence.
        last: i64,
    },
    /// A missed range of no occurrence.
    #[error("a range holds at least one occurrence, not 0")]
    Empty,
    /// A missed range counting more occurrences than it has seconds.
    #[error("{count} occurrences do not fit the {span} seconds from {first} to {last}")]
    Crowded {
        /// The count given.
        count: u64,
        /// The seconds from `first` to `last`, both included.
        span: i128,
        /// The range's first occurrence.
        first: i64,
        /// The range's last occurrence.
        last: i64,
    },
    /// A count beyond `i64::MAX`.
    #[error("a count of {0} does not fit the ledger")]
    Count(u64),
    /// No occurrence to queue.
    #[error("no occurrence was given")]
    NoOccurrence,
    /// Occurrences to queue out of order, or repeated.
    #[error("the occurrences are not in strictly ascending order")]
    Unordered,
    /// A pause that would end at or before it begins.
    #[error("the pause would end at {until}, not after it begins at {now}")]
    Pause {
        /// When the pause would end.
        until: Timestamp,
        /// When it begins.
        now: Timestamp,
    },
    /// A watermark value longer than [`MAX_WATERMARK`] bytes.
    #[error("the value is {0} bytes, more than {MAX_WATERMARK}")]
    TooLong(usize),
    /// A watermark value holding a NUL byte.
    #[error("the value holds a NUL byte")]
    Nul,
}

/// A fence as stored: it must fit a signed 64-bit integer.
///
/// # Errors
///
/// The problem, when the fence is beyond `i64::MAX`.
///
/// # Example
///
/// ```
/// assert_eq!(baton_store::ledger::checks::fence(Some(42)), Ok(Some(42)));
/// assert!(baton_store::ledger::checks::fence(Some(u64::MAX)).is_err());
/// ```
pub fn fence(fence: Option<u64>) -> Result<Option<i64>, Refusal> {
    fence
        .map(i64::try_from)
        .transpose()
        .map_err(|_| Refusal::Fence(fence))
}

/// A missed range's count as stored, once the range is known to make sense:
/// `first` at or before `last`, and a count from 1 to the seconds between
/// them that fits a signed 64-bit integer.
///
/// # Errors
///
/// The problem, when the range does not make sense.
pub fn miss_count(m: &Miss<'_>) -> Result<i64, Refusal> {
    let (first, last) = (m.first, m.last);
    if first > last {
        return Err(Refusal::Reversed { first, last });
    }
    let span = i128::from(last) - i128::from(first) + 1;
    if m.count == 0 {
        Err(Refusal::Empty)
    } else if i128::from(m.count) > span {
        Err(Refusal::Crowded {
            count: m.count,
            span,
            first,
            last,
        })
    } else {
        i64::try_from(m.count).map_err(|_| Refusal::Count(m.count))
    }
}

/// The first and last of the occurrences to queue, once they are known to
/// be given and in strictly ascending order.
///
/// # Errors
///
/// The problem, when none is given or they are out of order.
pub fn queue(occurrences: &[i64]) -> Result<(i64, i64), Refusal> {
    let (Some(&first), Some(&last)) = (occurrences.first(), occurrences.last()) else {
        return Err(Refusal::NoOccurrence);
    };
    if occurrences.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Refusal::Unordered);
    }
    Ok((first, last))
}

/// A pause beginning at `now` must end, if it ends on its own, after `now`.
///
/// # Errors
///
/// The problem, when `until` is not after `now`.
pub fn pause(until: Option<Timestamp>, now: Timestamp) -> Result<(), Refusal> {
    match until {
        Some(until) if until <= now => Err(Refusal::Pause { until, now }),
        _ => Ok(()),
    }
}

/// A watermark value holds at most [`MAX_WATERMARK`] bytes and no NUL.
///
/// # Errors
///
/// The problem, when it is too long or holds a NUL.
pub fn watermark(value: &str) -> Result<(), Refusal> {
    if value.len() > MAX_WATERMARK {
        return Err(Refusal::TooLong(value.len()));
    }
    if value.contains('\0') {
        return Err(Refusal::Nul);
    }
    Ok(())
}
