//! The rules for a caller's arguments that every ledger applies before it
//! writes anything: a fence that fits a signed 64-bit column, a missed range
//! that makes sense, occurrences to queue in strictly ascending order, a
//! pause that ends after it begins, a watermark value of bounded size
//! without a NUL.
//!
//! Each rule returns the problem in words (the `problem` of
//! [`super::Error::Invalid`]), so that the SQLite ledger and the PostgreSQL
//! one refuse the same arguments with the same message. Nothing here reads
//! or writes a store, and nothing outside this module restates a rule.

use jiff::Timestamp;

use super::rows::Miss;

/// The largest watermark value stored, in bytes.
pub const MAX_WATERMARK: usize = 4096;

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
pub fn fence(fence: Option<u64>) -> Result<Option<i64>, String> {
    fence
        .map(i64::try_from)
        .transpose()
        .map_err(|_| format!("the fence {fence:?} does not fit the ledger"))
}

/// A missed range's count as stored, once the range is known to make sense:
/// `first` at or before `last`, and a count from 1 to the seconds between
/// them that fits a signed 64-bit integer.
///
/// # Errors
///
/// The problem, when the range does not make sense.
pub fn miss_count(m: &Miss<'_>) -> Result<i64, String> {
    if m.first > m.last {
        return Err(format!(
            "the range starts at {} after its end {}",
            m.first, m.last
        ));
    }
    let span = i128::from(m.last) - i128::from(m.first) + 1;
    if m.count == 0 {
        Err("a range holds at least one occurrence, not 0".into())
    } else if i128::from(m.count) > span {
        Err(format!(
            "{} occurrences do not fit the {span} seconds from {} to {}",
            m.count, m.first, m.last
        ))
    } else {
        i64::try_from(m.count)
            .map_err(|_| format!("a count of {} does not fit the ledger", m.count))
    }
}

/// The first and last of the occurrences to queue, once they are known to
/// be given and in strictly ascending order.
///
/// # Errors
///
/// The problem, when none is given or they are out of order.
pub fn queue(occurrences: &[i64]) -> Result<(i64, i64), String> {
    let (Some(&first), Some(&last)) = (occurrences.first(), occurrences.last()) else {
        return Err("no occurrence was given".into());
    };
    if occurrences.windows(2).any(|w| w[0] >= w[1]) {
        return Err("the occurrences are not in strictly ascending order".into());
    }
    Ok((first, last))
}

/// A pause beginning at `now` must end, if it ends on its own, after `now`.
///
/// # Errors
///
/// The problem, when `until` is not after `now`.
pub fn pause(until: Option<Timestamp>, now: Timestamp) -> Result<(), String> {
    match until {
        Some(until) if until <= now => Err(format!(
            "the pause would end at {until}, not after it begins at {now}"
        )),
        _ => Ok(()),
    }
}

/// A watermark value holds at most [`MAX_WATERMARK`] bytes and no NUL.
///
/// # Errors
///
/// The problem, when it is too long or holds a NUL.
pub fn watermark(value: &str) -> Result<(), String> {
    if value.len() > MAX_WATERMARK {
        return Err(format!(
            "the value is {} bytes, more than {MAX_WATERMARK}",
            value.len()
        ));
    }
    if value.contains('\0') {
        return Err("the value holds a NUL byte".into());
    }
    Ok(())
}
