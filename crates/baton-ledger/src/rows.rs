//! The values that cross the ledger's API for runs, decisions, steps and
//! alerts: what callers write ([`NewRun`], [`Attempt`], [`Finished`],
//! [`NewAlert`]) and what they read back (the `*Row` and `*State` types).
//! Plain data with public fields; the SQL that reads and writes them lives
//! in the modules named after their tables. The values of missed ranges,
//! the queue, pauses and watermarks live with their tables, in `missed.rs`,
//! `queue.rs`, `pauses.rs` and `watermarks.rs`.
//!
//! Times are [`Timestamp`]s here and INTEGER microseconds since the Unix
//! epoch in SQL; the conversions at the bottom of this file are the only
//! ones. An *occurrence* is a scheduled instant in whole Unix seconds.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;

/// What was decided for one occurrence of a job that runs or waits. Each
/// occurrence has at most one such decision. Occurrences that will not run
/// are not decided one by one: they are ranges in the `missed` table
/// ([`crate::MissedRow`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// A run was started for it ([`crate::Ledger::begin_run`]).
    Started,
    /// It waits for the job's lock and will start, in order
    /// ([`crate::Ledger::enqueue`]); [`crate::Ledger::begin_run`] turns it
    /// into `started`.
    Queued,
    /// It arrived while another occurrence was waiting, and is served by
    /// that one (named in [`DecisionRow::joined`]). It never runs itself.
    Coalesced,
    /// The lock file says it started, under a ledger that was lost since
    /// ([`crate::Ledger::claimed`]). It never runs again.
    Claimed,
}

impl Decision {
    /// The word stored in the ledger: `started`, `queued`, `coalesced` or
    /// `claimed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Started => "started",
            Self::Queued => "queued",
            Self::Coalesced => "coalesced",
            Self::Claimed => "claimed",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Decision {
    type Err = UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "started" => Ok(Self::Started),
            "queued" => Ok(Self::Queued),
            "coalesced" => Ok(Self::Coalesced),
            "claimed" => Ok(Self::Claimed),
            _ => Err(UnknownWord::new("decision", s)),
        }
    }
}

/// What an attempt ran: a step of the job, or a check that guards it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StepKind {
    /// A step of the job.
    Step,
    /// A check run before or between steps.
    Check,
}

impl StepKind {
    /// The word stored in the ledger: `step` or `check`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Step => "step",
            Self::Check => "check",
        }
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for StepKind {
    type Err = UnknownWord;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "step" => Ok(Self::Step),
            "check" => Ok(Self::Check),
            _ => Err(UnknownWord::new("step kind", s)),
        }
    }
}

/// A word that names no [`Decision`] or [`StepKind`].
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

/// A job as the ledger knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobState {
    /// The job's name.
    pub job: String,
    /// When the ledger first heard of it.
    pub first_seen: Timestamp,
    /// The high-water mark of the job's schedule: every occurrence at or
    /// before it has a decision (started, queued, coalesced, claimed, or a
    /// missed range). The scheduler plans from the occurrences after it.
    pub last_decided: Option<i64>,
    /// The largest occurrence started.
    pub last_started: Option<i64>,
    /// When its newest run started.
    pub last_attempt: Option<Timestamp>,
    /// When its newest successful run finished.
    pub last_success: Option<Timestamp>,
    /// When its newest failed run finished.
    pub last_failure: Option<Timestamp>,
    /// How many runs in a row have failed, counting back from the newest
    /// finished run; a success resets it, and an `interrupted` run (a
    /// graceful shutdown's stop) neither resets nor adds to it.
    pub consecutive_failures: u64,
    /// The run id of its newest run.
    pub last_run_id: Option<String>,
}

/// A run about to start.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// The run's id (16 hex characters, made by the caller).
    pub run_id: String,
    /// The job.
    pub job: String,
    /// The occurrence it runs for, in Unix seconds; `None` for a manual run.
    pub occurrence: Option<i64>,
    /// The fence of the lease it runs under, when it holds one.
    pub fence: Option<u64>,
    /// The host it runs on.
    pub host: String,
    /// The supervising process.
    pub pid: u32,
    /// When it started.
    pub started: Timestamp,
}

/// What [`crate::Ledger::begin_run`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Begun {
    /// The run is recorded (and, for a scheduled run, its occurrence decided
    /// `started`): go ahead.
    Started,
    /// The occurrence was already decided, by this process or another one.
    /// Nothing was written; the run must not start.
    AlreadyDecided(DecisionRow),
}

/// The decision recorded for one occurrence of a job.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionRow {
    /// The job.
    pub job: String,
    /// The occurrence, in Unix seconds.
    pub occurrence: i64,
    /// What was decided.
    pub decision: Decision,
    /// Why, when the decision was given a reason. None of the four
    /// decisions carries one; the column outlives version 1's skips, whose
    /// reasons moved to the `missed` table.
    pub reason: Option<String>,
    /// The run that started it, for `started`.
    pub run_id: Option<String>,
    /// When it was decided (for `started`, when its run started).
    pub decided: Timestamp,
    /// More words for a human, when given.
    pub detail: Option<String>,
    /// On a `queued` row, and on the `started` row it becomes: how many
    /// later occurrences coalesced into it. 0 otherwise.
    pub coalesced: u64,
    /// On a `coalesced` row: the occurrence it joined. `None` otherwise.
    pub joined: Option<i64>,
}

impl DecisionRow {
    /// What a start of `run` that found this decision already recorded
    /// comes to: [`Begun::Started`] when the decision is `run`'s own start
    /// (recorded by an earlier call whose answer was lost), else
    /// [`Begun::AlreadyDecided`]. Both ledgers decide it here.
    pub fn begun_by(self, run: &NewRun) -> Begun {
        if self.decision == Decision::Started && self.run_id.as_deref() == Some(&run.run_id) {
            Begun::Started
        } else {
            Begun::AlreadyDecided(self)
        }
    }
}

/// One finished attempt of a step or a check.
///
/// The `outcome` word decides what the attempt does to its step's counters
/// ([`crate::Effect::of`]): `ok` is a success, `interrupted` (a graceful
/// shutdown stopped it) is an attempt but neither a success nor a failure,
/// and any other word (`failed`, `timeout`, `lease-lost`, `not-started`
/// for a command that could not be started, …) is a failure.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The run it belongs to.
    pub run_id: String,
    /// The job of that run. It lets the step's counters be kept even when
    /// the run's row is gone (the ledger was recovered since the run began).
    pub job: String,
    /// Its position in the run, from 0 or 1 as the caller counts; unique
    /// within the run.
    pub seq: u32,
    /// The step's (or check's) name.
    pub step: String,
    /// A step or a check.
    pub kind: StepKind,
    /// Which attempt of the step this is (1 for the first try).
    pub attempt: u32,
    /// When it started.
    pub started: Timestamp,
    /// When it finished.
    pub finished: Timestamp,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// `ok`, `failed`, `timeout`, `lease-lost`, `not-started`, `interrupted`, …
    pub outcome: String,
}

/// An attempt as read back, within its [`RunRow`].
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptRow {
    /// Its position in the run.
    pub seq: u32,
    /// The step's (or check's) name.
    pub step: String,
    /// A step or a check.
    pub kind: StepKind,
    /// Which attempt of the step this was.
    pub attempt: u32,
    /// When it started.
    pub started: Timestamp,
    /// When it finished.
    pub finished: Timestamp,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    /// The outcome word given when it was recorded.
    pub outcome: String,
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The run.
    pub run_id: String,
    /// Its job.
    pub job: String,
    /// When it finished.
    pub finished: Timestamp,
    /// The verdict word (`ok`, `failed`, `timeout`, …).
    pub verdict: String,
    /// The exit code it ended with.
    pub exit_code: i32,
    /// Whether it counts as a success (resets the job's failure count).
    /// When not, the verdict decides ([`crate::Effect::of_run`]): an
    /// `interrupted` run moves none of the job's counters, any other is a
    /// failure.
    pub success: bool,
}

/// A run as read back, with its attempts in order.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    /// The run's id.
    pub run_id: String,
    /// The job.
    pub job: String,
    /// The occurrence it ran for; `None` for a manual run.
    pub occurrence: Option<i64>,
    /// Whether it was started by hand (no occurrence).
    pub manual: bool,
    /// The fence of its lease, when it held one.
    pub fence: Option<u64>,
    /// The host it ran on.
    pub host: Option<String>,
    /// The supervising process.
    pub pid: Option<u32>,
    /// When it started.
    pub started: Timestamp,
    /// When it finished; `None` while it runs (or if it died unrecorded).
    pub finished: Option<Timestamp>,
    /// Its verdict, once finished.
    pub verdict: Option<String>,
    /// Its exit code, once finished.
    pub exit_code: Option<i32>,
    /// Its attempts, in `seq` order.
    pub attempts: Vec<AttemptRow>,
}

/// A step (or check) of a job as the ledger knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepState {
    /// The job.
    pub job: String,
    /// The step's name.
    pub step: String,
    /// A step or a check (as last recorded).
    pub kind: StepKind,
    /// When its newest attempt started.
    pub last_attempt: Option<Timestamp>,
    /// When its newest successful attempt finished.
    pub last_success: Option<Timestamp>,
    /// When its newest failed attempt finished.
    pub last_failure: Option<Timestamp>,
    /// How many attempts in a row have failed; a success resets it.
    pub consecutive_failures: u64,
}

/// An alert to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAlert {
    /// When it was raised.
    pub time: Timestamp,
    /// The job it concerns, if any (a recovered ledger concerns none).
    pub job: Option<String>,
    /// What kind of alert (`failure`, `missed`, `ledger-recovered`, …).
    pub kind: String,
    /// The run it concerns, if any.
    pub run_id: Option<String>,
    /// The occurrence it concerns, if any.
    pub occurrence: Option<i64>,
    /// One line for a human.
    pub message: String,
    /// The alert as JSON, as it was delivered.
    pub json: String,
}

/// An alert as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertRow {
    /// Its number; later alerts have larger numbers.
    pub id: i64,
    /// When it was raised.
    pub time: Timestamp,
    /// The job it concerns, if any.
    pub job: Option<String>,
    /// What kind of alert.
    pub kind: String,
    /// The run it concerns, if any.
    pub run_id: Option<String>,
    /// The occurrence it concerns, if any.
    pub occurrence: Option<i64>,
    /// One line for a human.
    pub message: String,
    /// The alert as JSON.
    pub json: String,
}

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

/// Reads a stored word (a decision, a step kind) from column `idx`.
pub(crate) fn word<T>(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<T>
where
    T: FromStr<Err = UnknownWord>,
{
    let s: String = row.get(idx)?;
    s.parse().map_err(|e: UnknownWord| {
        rusqlite::Error::FromSqlConversionFailure(idx, rusqlite::types::Type::Text, Box::new(e))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        for d in [
            Decision::Started,
            Decision::Queued,
            Decision::Coalesced,
            Decision::Claimed,
        ] {
            assert_eq!(d.as_str().parse::<Decision>(), Ok(d));
        }
        for k in [StepKind::Step, StepKind::Check] {
            assert_eq!(k.as_str().parse::<StepKind>(), Ok(k));
        }
        let err = "Started".parse::<Decision>().unwrap_err();
        assert_eq!(err.to_string(), "unknown decision \"Started\"");
    }
}
