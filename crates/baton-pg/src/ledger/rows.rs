//! The conversions between the API's values (`baton_ledger`'s row types)
//! and the stored ones: times as `bigint` microseconds since the Unix
//! epoch, counts and fences as non-negative `bigint`, words as text. The
//! only place that reads a column; a value that does not fit its type is
//! [`Fail::Value`], never a panic nor a silent default.

use std::str::FromStr;

use baton_store::ledger::UnknownWord;
use jiff::Timestamp;
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

use super::fail::Fail;

/// A time as stored: microseconds since the Unix epoch.
pub(crate) fn micros(t: Timestamp) -> i64 {
    t.as_microsecond()
}

/// Column `idx`, as its SQL type maps to `T`.
pub(crate) fn get<'a, T: FromSql<'a>>(r: &'a Row, idx: usize) -> Result<T, Fail> {
    Ok(r.try_get(idx)?)
}

/// A stored time.
pub(crate) fn time(r: &Row, idx: usize) -> Result<Timestamp, Fail> {
    from_micros(get(r, idx)?)
}

/// A stored time that may be absent.
pub(crate) fn time_opt(r: &Row, idx: usize) -> Result<Option<Timestamp>, Fail> {
    get::<Option<i64>>(r, idx)?.map(from_micros).transpose()
}

fn from_micros(us: i64) -> Result<Timestamp, Fail> {
    Timestamp::from_microsecond(us).map_err(|e| Fail::Value(format!("time {us}: {e}")))
}

/// A stored integer that must fit `T` (a count, a fence, a pid, an exit
/// code).
pub(crate) fn int<T: TryFrom<i64>>(r: &Row, idx: usize) -> Result<T, Fail> {
    fit(get::<i64>(r, idx)?)
}

/// [`int`], for a column that may be NULL.
pub(crate) fn int_opt<T: TryFrom<i64>>(r: &Row, idx: usize) -> Result<Option<T>, Fail> {
    get::<Option<i64>>(r, idx)?.map(fit).transpose()
}

fn fit<T: TryFrom<i64>>(n: i64) -> Result<T, Fail> {
    T::try_from(n)
        .map_err(|_| Fail::Value(format!("{n} does not fit {}", std::any::type_name::<T>())))
}

/// A stored word (a verdict, an outcome, a reason, a kind): a word this
/// build does not know fails the read.
pub(crate) fn word<T: FromStr<Err = UnknownWord>>(r: &Row, idx: usize) -> Result<T, Fail> {
    parse(&get::<String>(r, idx)?)
}

/// [`word`], for a column that may be NULL.
pub(crate) fn word_opt<T: FromStr<Err = UnknownWord>>(
    r: &Row,
    idx: usize,
) -> Result<Option<T>, Fail> {
    get::<Option<String>>(r, idx)?
        .map(|s| parse(&s))
        .transpose()
}

fn parse<T: FromStr<Err = UnknownWord>>(s: &str) -> Result<T, Fail> {
    s.parse()
        .map_err(|e: UnknownWord| Fail::Value(e.to_string()))
}
