//! Reading and writing the rows' values in SQLite: times as INTEGER
//! microseconds, counts and fences as non-negative integers, words as text;
//! and each table's row as the API's value, from the columns its reads select.

use std::str::FromStr;

use baton_store::ledger::{
    AlertRow, DecisionRow, Declaration, JobState, MissedRow, PauseRow, RunRow, StepKind, StepState,
    UnknownWord, WatermarkRow,
};
use jiff::Timestamp;
use rusqlite::Row;

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

/// The columns [`job`] reads, in its order.
pub(crate) const JOB_COLUMNS: &str = "job, first_seen, last_decided, last_started, \
                                      last_attempt, last_success, last_failure, \
                                      consecutive_failures, last_run_id";

/// A row of `jobs` selected with [`JOB_COLUMNS`].
pub(crate) fn job(r: &Row<'_>) -> rusqlite::Result<JobState> {
    Ok(JobState {
        job: r.get(0)?,
        first_seen: time(r, 1)?,
        last_decided: r.get(2)?,
        last_started: r.get(3)?,
        last_attempt: time_opt(r, 4)?,
        last_success: time_opt(r, 5)?,
        last_failure: time_opt(r, 6)?,
        consecutive_failures: unsigned(r, 7)?,
        last_run_id: r.get(8)?,
    })
}

/// The columns [`decision`] reads, in its order.
pub(crate) const DECISION_COLUMNS: &str =
    "job, occurrence, decision, reason, run_id, decided, detail, coalesced, joined";

/// A row of `occurrences` selected with [`DECISION_COLUMNS`].
pub(crate) fn decision(r: &Row<'_>) -> rusqlite::Result<DecisionRow> {
    Ok(DecisionRow {
        job: r.get(0)?,
        occurrence: r.get(1)?,
        decision: word(r, 2)?,
        reason: r.get(3)?,
        run_id: r.get(4)?,
        decided: time(r, 5)?,
        detail: r.get(6)?,
        coalesced: unsigned(r, 7)?,
        joined: r.get(8)?,
    })
}

/// The columns [`run`] reads, in its order.
pub(crate) const RUN_COLUMNS: &str =
    "run_id, job, occurrence, manual, fence, host, pid, started, finished, verdict, exit_code";

/// A row of `runs` selected with [`RUN_COLUMNS`].
pub(crate) fn run(r: &Row<'_>) -> rusqlite::Result<RunRow> {
    Ok(RunRow {
        run_id: r.get(0)?,
        job: r.get(1)?,
        occurrence: r.get(2)?,
        manual: r.get(3)?,
        fence: unsigned_opt(r, 4)?,
        host: r.get(5)?,
        pid: r.get(6)?,
        started: time(r, 7)?,
        finished: time_opt(r, 8)?,
        verdict: word_opt(r, 9)?,
        exit_code: r.get(10)?,
        attempts: Vec::new(),
    })
}

/// The columns [`alert`] reads, in its order.
pub(crate) const ALERT_COLUMNS: &str = "id, time, job, kind, run_id, occurrence, message, json";

/// A row of `alerts` selected with [`ALERT_COLUMNS`].
pub(crate) fn alert(r: &Row<'_>) -> rusqlite::Result<AlertRow> {
    Ok(AlertRow {
        id: r.get(0)?,
        time: time(r, 1)?,
        job: r.get(2)?,
        kind: word(r, 3)?,
        run_id: r.get(4)?,
        occurrence: r.get(5)?,
        message: r.get(6)?,
        json: r.get(7)?,
    })
}

/// The columns [`missed`] reads, in its order.
pub(crate) const MISSED_COLUMNS: &str =
    "id, job, reason, first, last, count, at_least, decided, updated, detail";

/// A row of `missed` selected with [`MISSED_COLUMNS`].
pub(crate) fn missed(r: &Row<'_>) -> rusqlite::Result<MissedRow> {
    Ok(MissedRow {
        id: r.get(0)?,
        job: r.get(1)?,
        reason: word(r, 2)?,
        first: r.get(3)?,
        last: r.get(4)?,
        count: unsigned(r, 5)?,
        at_least: r.get(6)?,
        decided: time(r, 7)?,
        updated: time(r, 8)?,
        detail: r.get(9)?,
    })
}

/// The columns [`pause`] reads, in its order.
pub(crate) const PAUSE_COLUMNS: &str = "id, job, since, until, reason, who, ended";

/// A row of `pauses` selected with [`PAUSE_COLUMNS`].
pub(crate) fn declaration(r: &Row<'_>) -> rusqlite::Result<Declaration> {
    Ok(Declaration {
        job: r.get(0)?,
        config: r.get(1)?,
        by: r.get(2)?,
        declared: time(r, 3)?,
    })
}

pub(crate) fn pause(r: &Row<'_>) -> rusqlite::Result<PauseRow> {
    Ok(PauseRow {
        id: r.get(0)?,
        job: r.get(1)?,
        since: time(r, 2)?,
        until: time_opt(r, 3)?,
        reason: r.get(4)?,
        who: r.get(5)?,
        ended: time_opt(r, 6)?,
    })
}

/// The columns [`watermark`] reads, in its order.
pub(crate) const WATERMARK_COLUMNS: &str = "job, seq, value, run_id, fence, settled";

/// A row of `watermarks` selected with [`WATERMARK_COLUMNS`].
pub(crate) fn watermark(r: &Row<'_>) -> rusqlite::Result<WatermarkRow> {
    Ok(WatermarkRow {
        job: r.get(0)?,
        seq: unsigned(r, 1)?,
        value: r.get(2)?,
        run_id: r.get(3)?,
        fence: unsigned_opt(r, 4)?,
        settled: time(r, 5)?,
    })
}

/// A row of `steps`, selected as `job, step, kind, last_attempt, last_success,
/// last_failure, consecutive_failures`.
pub(crate) fn step(r: &Row<'_>) -> rusqlite::Result<StepState> {
    Ok(StepState {
        job: r.get(0)?,
        step: r.get(1)?,
        kind: word::<StepKind>(r, 2)?,
        last_attempt: time_opt(r, 3)?,
        last_success: time_opt(r, 4)?,
        last_failure: time_opt(r, 5)?,
        consecutive_failures: unsigned(r, 6)?,
    })
}
