//! The values that cross the ledger's API: what callers write ([`NewRun`],
//! [`Attempt`], [`Finished`], [`NewAlert`], [`Miss`]) and what they read
//! back (the `*Row` and `*State` types, [`JobTallies`]), and what a call
//! came to ([`Begun`], [`Missed`], [`Queued`], [`Withdrawn`]). Plain data
//! with public fields, the same for every store; how a store keeps them is
//! its own business.
//!
//! Times are [`Timestamp`]s here (stores keep them to the microsecond). An
//! *occurrence* is a scheduled instant in whole Unix seconds.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use jiff::Timestamp;

use crate::words::{
    AlertKind, AttemptOutcome, Decision, MissReason, RunVerdict, SkipReason, StepKind,
};

/// What a tick reads before it decides, in one read
/// ([`super::Records::overview`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Overview {
    /// The store's clock when it was read (`None` for a store of this host
    /// alone: see [`super::Records::store_clock`]).
    pub clock: Option<Timestamp>,
    /// Every job's row, by name.
    pub jobs: Vec<JobState>,
    /// The jobs with an occurrence queued, by name.
    pub queued: Vec<String>,
}

/// A job a service declared ([`super::Records::declare`]): a job that a
/// program embedding baton's scheduler runs, kept in the ledger so that the
/// command line can show and control it without a `baton.toml` naming it.
///
/// The ledger keeps the declaration as given and decides nothing from it:
/// what `config` means is the command line's to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declaration {
    /// The job.
    pub job: String,
    /// The job's settings as the command line writes them: the keys of a
    /// `[jobs.NAME]` table in TOML (`schedule`, `timezone`, `retries`, …).
    pub config: String,
    /// Who declared it, for people: the service, host and process.
    pub by: String,
    /// When it was last declared.
    pub declared: Timestamp,
}

/// One job asked of [`super::Records::job_records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobAsk {
    /// The job.
    pub job: String,
    /// An occurrence whose decision to read (Unix seconds), if any.
    pub occurrence: Option<i64>,
    /// How many of its newest alerts to read.
    pub alerts: u32,
    /// How many of its newest missed ranges to read.
    pub missed: u32,
}

/// What the ledger holds of one job, as a status shows it, read with every
/// other job's from one snapshot ([`super::Records::job_records`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobRecord {
    /// Its row, when the ledger has heard of it.
    pub state: Option<JobState>,
    /// Its newest run, with its attempts.
    pub last: Option<RunRow>,
    /// Its newest unfinished run, with its attempts.
    pub running: Option<RunRow>,
    /// Each step's state.
    pub steps: Vec<StepState>,
    /// Its missed occurrences counted by reason ([`super::Records::missed_counts`]).
    pub missed_counts: Vec<(MissReason, u64, bool)>,
    /// Its newest missed ranges, as many as asked.
    pub missed: Vec<MissedRow>,
    /// Its newest pause, if any.
    pub pause: Option<PauseRow>,
    /// Its queued occurrences, oldest first.
    pub queued: Vec<DecisionRow>,
    /// Its current watermark.
    pub watermark: Option<WatermarkRow>,
    /// Its newest alerts, as many as asked.
    pub alerts: Vec<AlertRow>,
    /// The decision recorded for the occurrence asked, if any.
    pub decision: Option<DecisionRow>,
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
    /// Whether it is a backfill's run of a past occurrence
    /// (`baton backfill`): only such a start may run an occurrence the
    /// ledger records missed. Every other start of one is refused
    /// ([`Begun::Missed`]): the miss was decided first.
    pub backfill: bool,
}

/// What [`crate::ledger::Records::begin_run`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Begun {
    /// The run is recorded (and, for a scheduled run, its occurrence decided
    /// `started`): go ahead.
    Started,
    /// The occurrence was already decided, by this process or another one.
    /// Nothing was written; the run must not start.
    AlreadyDecided(DecisionRow),
    /// The occurrence lies in a range the ledger records missed (another
    /// process found the lock busy, say, and decided first), and the start
    /// is not a backfill's. Nothing was written; the run must not start.
    Missed(MissedRow),
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

/// How a backfill's `queued` row begins its `detail`
/// ([`Records::request_backfill`](super::Records::request_backfill)): the
/// words that tell the scheduler running the job that the occurrence is
/// behind the lock's claim on purpose, by an operator's request.
pub const BACKFILL_DETAIL: &str = "backfill requested by ";

/// How a run asked for now ([`Records::request_run`](super::Records::request_run),
/// `POST /v1/jobs/{job}/run` of a service's router) begins its `queued`
/// row's `detail`.
pub const RUN_DETAIL: &str = "run requested by ";

impl DecisionRow {
    /// Whether this is an occurrence a backfill asked for
    /// ([`BACKFILL_DETAIL`]), still waiting or started since.
    pub fn backfill(&self) -> bool {
        self.detail
            .as_deref()
            .is_some_and(|d| d.starts_with(BACKFILL_DETAIL))
    }

    /// Whether someone asked for this occurrence rather than the schedule:
    /// a backfill's, or a run asked for now ([`RUN_DETAIL`]).
    pub fn requested(&self) -> bool {
        self.backfill()
            || self
                .detail
                .as_deref()
                .is_some_and(|d| d.starts_with(RUN_DETAIL))
    }

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
/// The `outcome` decides what the attempt does to its step's counters
/// ([`Effect::of`]): `ok` is a success, `interrupted` (a graceful shutdown
/// stopped it) is an attempt but neither a success nor a failure, and any
/// other (`failed`, `timeout`, `lease-lost`, `not-started` for a command
/// that could not be started) is a failure.
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
    /// What it came to.
    pub outcome: AttemptOutcome,
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
    /// What it came to.
    pub outcome: AttemptOutcome,
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
    /// What it came to.
    pub verdict: RunVerdict,
    /// The exit code it ended with.
    pub exit_code: i32,
    /// Whether it counts as a success (resets the job's failure count).
    /// When not, the verdict decides ([`Effect::of_run`]): an
    /// `interrupted` run moves none of the job's counters, any other is a
    /// failure.
    pub success: bool,
}

/// A request that a run in flight stop for a later run of its job
/// (`overlap = "replace"`): [`crate::ledger::Records::ask_replace`] records
/// it, and the run's own supervisor reads it
/// ([`crate::ledger::Records::replacement`]) and stops its steps' tree.
/// A request names the job it is for: a run of another job (one sharing
/// its lock) never reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The run asked to stop.
    pub run_id: String,
    /// The job it must be a run of.
    pub job: String,
    /// The occurrence that replaces it (Unix seconds); `None` for a run by
    /// hand or a backfill.
    pub by: Option<i64>,
    /// When it was asked.
    pub asked: Timestamp,
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
    pub verdict: Option<RunVerdict>,
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
    /// What it is about.
    pub kind: AlertKind,
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
    /// What it is about.
    pub kind: AlertKind,
    /// The run it concerns, if any.
    pub run_id: Option<String>,
    /// The occurrence it concerns, if any.
    pub occurrence: Option<i64>,
    /// One line for a human.
    pub message: String,
    /// The alert as JSON.
    pub json: String,
}

/// A decision that a range of a job's occurrences will not run, for
/// [`crate::ledger::Records::miss`].
///
/// It only records: it neither alerts nor stops a run. An occurrence inside
/// a missed range may still be started later by a backfill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Miss<'a> {
    /// The job.
    pub job: &'a str,
    /// Why they will not run.
    pub reason: MissReason,
    /// The first occurrence of the range, in Unix seconds.
    pub first: i64,
    /// The last occurrence of the range, in Unix seconds; at least `first`.
    pub last: i64,
    /// How many occurrences the range holds; at least 1, and no more than
    /// the seconds from `first` to `last`.
    pub count: u64,
    /// Whether counting stopped early, so `count` is a lower bound.
    pub at_least: bool,
    /// More words for a human; an empty one is stored as none.
    pub detail: Option<&'a str>,
    /// Whether the range continues a streak (a deliberate state such as
    /// `paused` or `disabled`): it then extends the job's newest range when
    /// that range has the same reason and nothing was decided after it.
    pub streak: bool,
}

/// What [`crate::ledger::Records::miss`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// A new range was recorded: the caller alerts once.
    Recorded,
    /// The job's newest range was extended to take these occurrences in (a
    /// streak goes on): the caller stays quiet.
    Extended,
    /// The job's last decided occurrence is at or after `first`: another
    /// process (or an earlier call) decided these occurrences already.
    /// Nothing was written; the caller plans again from the mark.
    Moved,
}

/// A missed range as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct MissedRow {
    /// Its number; a job's later ranges have larger numbers.
    pub id: i64,
    /// The job.
    pub job: String,
    /// Why its occurrences did not run.
    pub reason: MissReason,
    /// Its first occurrence, in Unix seconds.
    pub first: i64,
    /// Its last occurrence, in Unix seconds (raised when a streak extends
    /// it).
    pub last: i64,
    /// How many occurrences it holds.
    pub count: u64,
    /// Whether `count` is a lower bound (counting stopped early).
    pub at_least: bool,
    /// When it was first recorded.
    pub decided: Timestamp,
    /// When it was last extended (`decided` when never).
    pub updated: Timestamp,
    /// More words for a human, as first recorded.
    pub detail: Option<String>,
}

/// A pause of a job, as read back.
///
/// The ledger only records it: what a pause does to the job's occurrences
/// (they are missed, as `paused`) is decided by the scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseRow {
    /// Its number; a job's later pauses have larger numbers.
    pub id: i64,
    /// The job.
    pub job: String,
    /// When it began.
    pub since: Timestamp,
    /// When it lapses on its own; `None` for a pause until resumed.
    pub until: Option<Timestamp>,
    /// Why, as given.
    pub reason: Option<String>,
    /// Who paused the job (a user name, as given).
    pub who: String,
    /// When it was resumed or replaced by a newer pause; `None` while
    /// neither happened.
    pub ended: Option<Timestamp>,
}

impl PauseRow {
    /// Whether the pause covered instant `t`: `since <= t < min(until,
    /// ended)`, a missing bound being open.
    pub fn covers(&self, t: Timestamp) -> bool {
        self.since <= t && self.until.is_none_or(|u| t < u) && self.ended.is_none_or(|e| t < e)
    }

    /// Whether it is in force at `now` ([`PauseRow::covers`] `now`).
    pub fn active(&self, now: Timestamp) -> bool {
        self.covers(now)
    }
}

/// What [`crate::ledger::Records::enqueue`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Queued {
    /// The occurrences wait as `queued`, to start in order.
    Queued,
    /// An occurrence was already waiting: the given ones are recorded
    /// `coalesced`, served by that one, whose count rose.
    Coalesced {
        /// The waiting occurrence they joined (the job's newest queued
        /// one).
        into: i64,
    },
    /// The job's last decided occurrence is at or after the first given
    /// one: another process (or an earlier call) decided them already.
    /// Nothing was written; the caller plans again from the mark.
    Moved,
}

/// What a backfill's request came to for one occurrence
/// ([`Records::request_backfill`](super::Records::request_backfill)).
#[derive(Debug, Clone, PartialEq)]
pub enum Requested {
    /// It waits in the queue as `queued`, for the job's scheduler.
    Queued,
    /// The ledger decided it already (it ran, or waits, or was claimed):
    /// nothing was written for it.
    Decided(DecisionRow),
}

/// A value a job's run settled, as read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkRow {
    /// The job.
    pub job: String,
    /// Its number among the job's values: 1 for the first, then one more
    /// for each.
    pub seq: u64,
    /// The value, as given.
    pub value: String,
    /// The run that settled it, when given.
    pub run_id: Option<String>,
    /// The fence of that run's lease, when given.
    pub fence: Option<u64>,
    /// When it was settled.
    pub settled: Timestamp,
}

/// What [`crate::ledger::Records::withdraw_ahead`] took back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Withdrawn {
    /// The job's mark before: the last occurrence a clock ahead decided.
    pub was: i64,
    /// The job's mark now: the last occurrence the remaining decisions
    /// reach (none when nothing remains).
    pub now: Option<i64>,
    /// The missed ranges withdrawn, oldest first.
    pub ranges: Vec<MissedRow>,
    /// How many queued occurrences were dropped.
    pub unqueued: u64,
}

/// A database this ledger stopped using for a fresh one: one it found
/// corrupt and moved aside, or one that was removed or replaced under it.
///
/// The moved files are kept, never deleted: an operator may want what was
/// readable in them. The caller raises an alert for each one it is told to
/// ([`Reset::alerts`]); a run begun before any of them records its start
/// again with its end, since the fresh database does not have it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// Where the database went (`STATE_DIR/baton.db.corrupt-20261129T031500Z`);
    /// its `-wal` and `-shm`, when there were any, are beside it under the
    /// same name with their suffixes. For [`Reset::Lost`], the path where
    /// the fresh one is.
    pub moved_to: PathBuf,
    /// What SQLite said about it, or what happened to it.
    pub reason: String,
    /// Why it is no longer used.
    pub how: Reset,
}

/// Why a ledger's database was left for a fresh one ([`Recovered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// This ledger found it corrupt and moved it aside.
    Corrupt,
    /// Another process found it corrupt and moved it aside (and alerted
    /// it); this ledger followed the path to the fresh one.
    Followed,
    /// It was removed, or replaced by another file, while this ledger had
    /// it open (an operator's `rm`, a restore by `mv`): what it held is not
    /// in the fresh one.
    Lost,
}

impl Reset {
    /// Whether the caller raises an alert for it: the process that moved
    /// a corrupt file aside alerts it, once; a lost file is alerted by each
    /// process that had it open.
    pub fn alerts(self) -> bool {
        !matches!(self, Reset::Followed)
    }
}

/// What an attempt's outcome does to its step's counters (and a run's
/// verdict to its job's): the rule every ledger applies when it counts an
/// attempt against its step or a run against its job.
///
/// ```
/// use baton_store::ledger::Effect;
/// use baton_store::words::AttemptOutcome;
/// assert_eq!(Effect::of(AttemptOutcome::Ok), Effect::Success);
/// assert_eq!(Effect::of(AttemptOutcome::Timeout), Effect::Failure);
/// assert_eq!(Effect::of(AttemptOutcome::NotStarted), Effect::Failure);
/// assert_eq!(Effect::of(AttemptOutcome::Interrupted), Effect::Neutral);
/// assert_eq!(Effect::of(AttemptOutcome::Replaced), Effect::Neutral);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `ok`: last success, failures reset.
    Success,
    /// `interrupted`: stopped by a graceful shutdown (SIGTERM or SIGINT to
    /// the daemon or to the tick or run supervising it), or `replaced`:
    /// stopped for a later run of its job (`overlap = "replace"`), which is
    /// what the job asked for. It is an attempt (a step's last attempt
    /// moves) but neither a success nor a failure: no other counter moves.
    Neutral,
    /// Any other outcome, `not-started` (the command could not be started)
    /// included: last failure, failures + 1.
    Failure,
}

impl Effect {
    /// The effect of an attempt's outcome.
    pub fn of(outcome: AttemptOutcome) -> Self {
        match outcome {
            AttemptOutcome::Ok => Self::Success,
            AttemptOutcome::Interrupted | AttemptOutcome::Replaced => Self::Neutral,
            _ => Self::Failure,
        }
    }

    /// The effect of a run's end: a success when the run says so; else
    /// nothing for an `interrupted` or `replaced` run, and a failure for
    /// any other.
    pub fn of_run(verdict: RunVerdict, success: bool) -> Self {
        match (success, verdict) {
            (true, _) => Self::Success,
            (false, RunVerdict::Interrupted | RunVerdict::Replaced) => Self::Neutral,
            (false, _) => Self::Failure,
        }
    }

    /// Whether it resets the failures and sets the last success.
    pub fn success(self) -> bool {
        self == Self::Success
    }

    /// Whether it adds a failure and sets the last failure.
    pub fn failure(self) -> bool {
        self == Self::Failure
    }
}

/// The upper bounds of the run-duration histogram's buckets, in seconds;
/// a last bucket, `+Inf`, takes the rest. Fixed: a ledger's counts are
/// only meaningful against the bounds they were counted with.
pub const BOUNDS: [f64; 10] = [
    0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 10800.0,
];

/// [`BOUNDS`] in microseconds, as stored (the `bound` of a `durations`
/// row), then `+Inf` as `i64::MAX`. A run's duration counts in the first
/// bucket whose bound it does not exceed.
pub const BOUNDS_US: [i64; 11] = [
    100_000,
    500_000,
    1_000_000,
    5_000_000,
    15_000_000,
    60_000_000,
    300_000_000,
    900_000_000,
    3_600_000_000,
    10_800_000_000,
    i64::MAX,
];

/// A job's cumulative tallies, as [`crate::ledger::Records::tallies`] reads them.
///
/// The counts only rise (a ledger recovered from corruption starts again
/// from zero, as a restarted process's counters do): a missed range
/// withdrawn because a clock ahead recorded it stays counted in `missed`,
/// and is counted again in `withdrawn`. A ledger migrated
/// from version 2 started them from the rows it still held then.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobTallies {
    /// The job.
    pub job: String,
    /// Finished runs, by verdict.
    pub runs: BTreeMap<RunVerdict, u64>,
    /// Occurrences that will not run, by reason.
    pub missed: BTreeMap<MissReason, u64>,
    /// Of `missed`, those a clock ahead recorded and an honest one took
    /// back (`missed-withdrawn`), by the reason they were counted under.
    pub withdrawn: BTreeMap<MissReason, u64>,
    /// Occurrences that never ran themselves yet were served or had run.
    pub skipped: BTreeMap<SkipReason, u64>,
    /// Runs that lost their lease.
    pub lease_losses: u64,
    /// The run-duration histogram.
    pub durations: Durations,
    /// When its newest successful run finished.
    pub last_success: Option<Timestamp>,
    /// When its newest failed run finished.
    pub last_failure: Option<Timestamp>,
}

/// A run-duration histogram: counts per bucket of [`BOUNDS`] and `+Inf`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Durations {
    /// The runs in each bucket alone (not cumulative): `buckets[i]` counts
    /// the runs longer than `BOUNDS[i - 1]` and at most `BOUNDS[i]`;
    /// `buckets[10]` the runs longer than the last bound.
    pub buckets: [u64; 11],
    /// The sum of all the durations.
    pub sum: Duration,
}

impl Durations {
    /// How many runs were counted.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// The cumulative counts per upper bound in seconds, as Prometheus
    /// exposes them, `+Inf` (as [`f64::INFINITY`]) last.
    pub fn cumulative(&self) -> Vec<(f64, u64)> {
        let mut total = 0;
        BOUNDS
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.buckets)
            .map(|(le, n)| {
                total += n;
                (le, total)
            })
            .collect()
    }
}

/// A run's duration in microseconds from `started` to `finished` (0 when
/// the wall clock stepped back between them), and the upper bound of its
/// histogram bucket: the first of [`BOUNDS_US`] it does not exceed, else
/// `i64::MAX`. Every ledger files durations with this.
pub fn bucket(started: Timestamp, finished: Timestamp) -> (i64, i64) {
    let us = (finished.as_microsecond() - started.as_microsecond()).max(0);
    let bound = BOUNDS_US
        .iter()
        .copied()
        .find(|&b| us <= b)
        .unwrap_or(i64::MAX);
    (us, bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_agree() {
        for (s, us) in BOUNDS.iter().zip(BOUNDS_US) {
            assert_eq!((s * 1e6).round() as i64, us);
        }
        let d = Durations {
            buckets: [1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1],
            sum: Duration::from_secs(3),
        };
        assert_eq!(d.count(), 4);
        let c = d.cumulative();
        assert_eq!(c[0], (0.1, 1));
        assert_eq!(c[2], (1.0, 3));
        assert_eq!(c[10], (f64::INFINITY, 4));
    }

    #[test]
    fn outcomes_have_effects() {
        use crate::words::{AttemptOutcome as O, RunVerdict as V};
        assert_eq!(Effect::of(O::Ok), Effect::Success);
        assert_eq!(Effect::of(O::Interrupted), Effect::Neutral);
        assert_eq!(Effect::of(O::Replaced), Effect::Neutral);
        for &o in O::ALL {
            if !matches!(o, O::Ok | O::Interrupted | O::Replaced) {
                assert_eq!(Effect::of(o), Effect::Failure, "{o}");
            }
        }
        assert_eq!(Effect::of_run(V::Ok, true), Effect::Success);
        assert_eq!(Effect::of_run(V::Interrupted, false), Effect::Neutral);
        assert_eq!(Effect::of_run(V::Replaced, false), Effect::Neutral);
        assert_eq!(Effect::of_run(V::Ok, false), Effect::Failure);
        assert_eq!(Effect::of_run(V::Abandoned, false), Effect::Failure);
    }
}
