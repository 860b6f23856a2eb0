//! Reading and writing the rows' values in SQLite: times as INTEGER
//! microseconds, counts and fences as non-negative integers, words as text.

use std::str::FromStr;

use baton_store::ledger::UnknownWord;
use jiff::Timestamp;

/// A time as stored: microseconds since the Unix epoch.
pub(crate) fn micros(t: Timestamp) -> i64 {
    t.as_microsecond()
}

/// Reads a stored time from column `idx`.
pub(crate) fn time(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Timestamp> {
    from_micros(idx, row.get(idx)?)
}

/// Reads a stored time that may be absent from column `idx`.
pub(crate) fn time_opt(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Option<Timestamp>> {
    row.get::<_, Option<i64>>(idx)?
        .map(|us| from_micros(idx, us))
        .transpose()
}

fn from_micros(idx: usize, us: i64) -> rusqlite::Result<Timestamp> {
    Timestamp::from_microsecond(us).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Integer, Box::new(e))
    })
}

/// Reads a count or a fence (never negative when written by the ledger)
/// from column `idx`.
pub(crate) fn unsigned(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<u64> {
    let n: i64 = row.get(idx)?;
    u64::try_from(n).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(idx, n))
}

/// [`unsigned`], for a column that may be NULL.
pub(crate) fn unsigned_opt(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Option<u64>> {
    match row.get::<_, Option<i64>>(idx)? {
        None => Ok(None),
        Some(n) => u64::try_from(n)
            .map(Some)
            .map_err(|_| rusqlite::Error::IntegralValueOutOfRange(idx, n)),
    }
}

/// Reads a stored word (a verdict, an outcome, a reason, a kind) from
/// column `idx`: a word this build does not know fails the read.
pub(crate) fn word<T>(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<T>
where
    T: FromStr<Err = UnknownWord>,
{
    parse(idx, &row.get::<_, String>(idx)?)
}

/// [`word`], for a column that may be NULL.
pub(crate) fn word_opt<T>(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<Option<T>>
where
    T: FromStr<Err = UnknownWord>,
{
    row.get::<_, Option<String>>(idx)?
        .map(|s| parse(idx, &s))
        .transpose()
}

fn parse<T: FromStr<Err = UnknownWord>>(idx: usize, s: &str) -> rusqlite::Result<T> {
    s.parse().map_err(|e: UnknownWord| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}
