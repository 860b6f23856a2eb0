//! The conversions between the API's values (`baton_ledger`'s row types)
//! and the stored ones: times as `bigint` microseconds since the Unix
//! epoch, counts and fences as non-negative `bigint`, words as text. The
//! only place that reads a column; a value that does not fit its type is
//! [`Fail::Value`], never a panic nor a silent default.

use std::str::FromStr;

use baton_store::ledger::{
    AlertRow, DecisionRow, JobState, MissedRow, PauseRow, RunRow, StepKind, StepState, UnknownWord,
    WatermarkRow,
};
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

/// The columns [`job`] reads, in its order.
pub(crate) const JOB_COLUMNS: &str = "job, first_seen, last_decided, last_started, \
                                      last_attempt, last_success, last_failure, \
                                      consecutive_failures, last_run_id";

/// A row of `baton.jobs` selected with [`JOB_COLUMNS`].
pub(crate) fn job(r: &Row) -> Result<JobState, Fail> {
    Ok(JobState {
        job: get(r, 0)?,
        first_seen: time(r, 1)?,
        last_decided: get(r, 2)?,
        last_started: get(r, 3)?,
        last_attempt: time_opt(r, 4)?,
        last_success: time_opt(r, 5)?,
        last_failure: time_opt(r, 6)?,
        consecutive_failures: int(r, 7)?,
        last_run_id: get(r, 8)?,
    })
}

/// The columns [`decision`] reads, in its order.
pub(crate) const DECISION_COLUMNS: &str =
    "job, occurrence, decision, reason, run_id, decided, detail, coalesced, joined";

/// A row of `baton.occurrences` selected with [`DECISION_COLUMNS`].
pub(crate) fn decision(r: &Row) -> Result<DecisionRow, Fail> {
    Ok(DecisionRow {
        job: get(r, 0)?,
        occurrence: get(r, 1)?,
        decision: word(r, 2)?,
        reason: get(r, 3)?,
        run_id: get(r, 4)?,
        decided: time(r, 5)?,
        detail: get(r, 6)?,
        coalesced: int(r, 7)?,
        joined: get(r, 8)?,
    })
}

/// The columns [`run`] reads, in its order.
pub(crate) const RUN_COLUMNS: &str =
    "run_id, job, occurrence, manual, fence, host, pid, started, finished, verdict, exit_code";

/// A row of `baton.runs` selected with [`RUN_COLUMNS`].
pub(crate) fn run(r: &Row) -> Result<RunRow, Fail> {
    Ok(RunRow {
        run_id: get(r, 0)?,
        job: get(r, 1)?,
        occurrence: get(r, 2)?,
        manual: get(r, 3)?,
        fence: int_opt(r, 4)?,
        host: get(r, 5)?,
        pid: int_opt(r, 6)?,
        started: time(r, 7)?,
        finished: time_opt(r, 8)?,
        verdict: word_opt(r, 9)?,
        exit_code: int_opt(r, 10)?,
        attempts: Vec::new(),
    })
}

/// The columns [`alert`] reads, in its order.
pub(crate) const ALERT_COLUMNS: &str = "id, time, job, kind, run_id, occurrence, message, json";

/// A row of `baton.alerts` selected with [`ALERT_COLUMNS`].
pub(crate) fn alert(r: &Row) -> Result<AlertRow, Fail> {
    Ok(AlertRow {
        id: get(r, 0)?,
        time: time(r, 1)?,
        job: get(r, 2)?,
        kind: word(r, 3)?,
        run_id: get(r, 4)?,
        occurrence: get(r, 5)?,
        message: get(r, 6)?,
        json: get(r, 7)?,
    })
}

/// The columns [`missed`] reads, in its order.
pub(crate) const MISSED_COLUMNS: &str =
    "id, job, reason, first, last, count, at_least, decided, updated, detail";

/// A row of `baton.missed` selected with [`MISSED_COLUMNS`].
pub(crate) fn missed(r: &Row) -> Result<MissedRow, Fail> {
    Ok(MissedRow {
        id: get(r, 0)?,
        job: get(r, 1)?,
        reason: word(r, 2)?,
        first: get(r, 3)?,
        last: get(r, 4)?,
        count: int(r, 5)?,
        at_least: get(r, 6)?,
        decided: time(r, 7)?,
        updated: time(r, 8)?,
        detail: get(r, 9)?,
    })
}

/// The columns [`pause`] reads, in its order.
pub(crate) const PAUSE_COLUMNS: &str = "id, job, since, until, reason, who, ended";

/// A row of `baton.pauses` selected with [`PAUSE_COLUMNS`].
pub(crate) fn pause(r: &Row) -> Result<PauseRow, Fail> {
    Ok(PauseRow {
        id: get(r, 0)?,
        job: get(r, 1)?,
        since: time(r, 2)?,
        until: time_opt(r, 3)?,
        reason: get(r, 4)?,
        who: get(r, 5)?,
        ended: time_opt(r, 6)?,
    })
}

/// The columns [`watermark`] reads, in its order.
pub(crate) const WATERMARK_COLUMNS: &str = "job, seq, value, run_id, fence, settled";

/// A row of `baton.watermarks` selected with [`WATERMARK_COLUMNS`].
pub(crate) fn watermark(r: &Row) -> Result<WatermarkRow, Fail> {
    Ok(WatermarkRow {
        job: get(r, 0)?,
        seq: int(r, 1)?,
        value: get(r, 2)?,
        run_id: get(r, 3)?,
        fence: int_opt(r, 4)?,
        settled: time(r, 5)?,
    })
}

/// A row of `baton.steps`, selected as `job, step, kind, last_attempt,
/// last_success, last_failure, consecutive_failures`.
pub(crate) fn step(r: &Row) -> Result<StepState, Fail> {
    Ok(StepState {
        job: get(r, 0)?,
        step: get(r, 1)?,
        kind: word::<StepKind>(r, 2)?,
        last_attempt: time_opt(r, 3)?,
        last_success: time_opt(r, 4)?,
        last_failure: time_opt(r, 5)?,
        consecutive_failures: int(r, 6)?,
    })
}
