//! [`Records`]: the ledger as the scheduler sees it, and the contract every
//! store keeps for it. The scheduler holds a `dyn Records` and never learns
//! which store it talks to; every store gets this trait by implementing
//! [`Backend`](super::Backend) (`transactions.rs` writes each method once).
//!
//! The contract, for every method: one transaction, all of it written or
//! none of it; an occurrence is decided once across every process and host;
//! a decision never goes back behind a job's `last_decided` mark; no update
//! is lost between concurrent writers (counters change by expressions the
//! store evaluates, never by a value read back and written again); every
//! time comes from the caller, never a clock read here. A store that cannot
//! keep it returns an error and writes nothing.
//!
//! # Errors
//!
//! Every method fails with [`Error`]: [`Error::Invalid`] for arguments
//! refused (nothing written; the method says which), and [`Error::Store`]
//! for the store's own failure: a database locked by another writer for
//! longer than the store waits, a full disk, a server that does not answer
//! (the write's fate then unknown until the next read), a ledger a newer
//! baton wrote ([`Error::is_newer_schema`]), or files refused as they are
//! ([`Error::is_refused_file`]).

use jiff::Timestamp;

use super::error::Error;
use super::rows::{
    AlertRow, Attempt, Begun, DecisionRow, Declaration, Finished, JobAsk, JobRecord, JobState,
    JobTallies, Miss, Missed, MissedRow, NewAlert, NewRun, Overview, PauseRow, Queued, Recovered,
    Replacement, Requested, RunRow, StepState, WatermarkRow, Withdrawn,
};
use crate::words::MissReason;

/// The scheduler's ledger: runs, decisions, missed ranges, the queue,
/// alerts, pauses, watermarks and tallies, in whichever store.
pub trait Records: Send {
    /// Where the records are, for messages: a database file's path, or the
    /// store's URL without its password.
    fn location(&self) -> String;
    /// What was moved aside as corrupt since the last call (SQLite only;
    /// other stores recover nothing and return none).
    fn take_recovered(&mut self) -> Vec<Recovered>;
    /// Looks whether the ledger's file is still the one it has open, and
    /// moves to the one at its path when not, writing nothing: what it
    /// left is then told by [`Records::take_recovered`]. A writer that
    /// must not write into a fresh file without knowing (a run's end,
    /// whose start that file lacks) asks first. Stores without files do
    /// nothing.
    ///
    /// # Errors
    ///
    /// When the file at the path is refused or cannot be opened.
    fn follow(&mut self) -> Result<(), Error>;
    /// Whether the connection to a server the ledger made last is
    /// encrypted (TLS); `None` for the ledger of this host's files, or
    /// before a connection was made.
    fn encrypted(&self) -> Option<bool>;
    /// Tells the ledger the time now: a file moved aside as corrupt during a
    /// later call that carries no time (a read) is stamped with it, so the
    /// name says when the corruption was found. Times only move forward here:
    /// an older time changes nothing.
    fn time_is(&mut self, now: Timestamp);
    /// Bounds each call from now on to `within` (the wait for its answer,
    /// and the server's timeout of its statements in proportion), or, with
    /// `None`, gives the store's own deadline back. A run's supervisor
    /// renews its lease only between calls, so it bounds them by its
    /// lease's renewal wait: a lost reply then never keeps it from renewing
    /// for longer than its TTL allows. A store whose calls never wait on
    /// a network ignores it.
    fn bound_calls(&mut self, within: Option<std::time::Duration>);
    /// Records that these jobs exist, in one transaction: each one not yet
    /// known is first seen at `now`; known ones are left as they are.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn see_jobs(&mut self, jobs: &[&str], now: Timestamp) -> Result<(), Error>;
    /// Copies what the write-ahead log holds into the database file, as far
    /// as no reader still needs it (a passive checkpoint: it never waits
    /// for, nor blocks, another process). Callers do it once after a batch
    /// of runs, so that `baton.db` alone (a backup's copy) is current.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn checkpoint(&mut self) -> Result<(), Error>;
    /// The store's own clock now, for a store that several hosts share:
    /// what is due is decided by it, so a host whose clock is off neither
    /// runs an occurrence early nor calls one missed. `None` for a store
    /// of this host alone (the SQLite ledger), whose clock is the host's.
    /// This is the one method that reads a clock, and it reads the store's.
    ///
    /// # Errors
    ///
    /// When the store cannot be reached.
    fn store_clock(&mut self) -> Result<Option<Timestamp>, Error>;
    /// What a tick reads before it decides, from one snapshot and in one
    /// round trip to a server: the store's clock ([`Records::store_clock`]),
    /// every job's row ([`Records::jobs`]) and the jobs with an occurrence
    /// queued ([`Records::queued_jobs`]).
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn overview(&mut self) -> Result<Overview, Error>;
    /// What the ledger holds of each job asked, as a status shows it
    /// ([`JobRecord`]), in the order asked: every read of every job from
    /// one snapshot, sent together (one round trip to a server).
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn job_records(&mut self, asks: &[JobAsk]) -> Result<Vec<JobRecord>, Error>;
    /// As [`Records::job_records`], and, in the same snapshot and round
    /// trip, the unfinished runs of every job `known` does not name (a job
    /// renamed or removed from the configuration while it ran), oldest
    /// first.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn job_records_and_others(
        &mut self,
        asks: &[JobAsk],
        known: &[String],
    ) -> Result<(Vec<JobRecord>, Vec<RunRow>), Error>;
    /// Every job's row, by name.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn jobs(&mut self) -> Result<Vec<JobState>, Error>;
    /// One job's row; `None` when the ledger has never heard of it.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn job(&mut self, job: &str) -> Result<Option<JobState>, Error>;
    /// Starts a run, in one transaction: for a scheduled run, records the
    /// occurrence's decision as `started` by this run (a `queued` occurrence
    /// becomes `started`, keeping its count of coalesced occurrences);
    /// inserts the run's row; updates the job's last attempt, last started
    /// and last decided occurrence, and last run id.
    ///
    /// When the occurrence has any other decision (`started`, `coalesced`,
    /// `claimed`: by another process, or an earlier call), nothing is written
    /// and the existing decision is returned: the run must not start. Of any
    /// number of processes starting the same occurrence at once, queued or
    /// not, exactly one gets [`Begun::Started`]. An occurrence with no
    /// decision that lies in a missed range is [`Begun::Missed`], nothing
    /// written, unless the start is a backfill's ([`NewRun::backfill`]),
    /// which may start an occurrence that was missed, once.
    ///
    /// Recording the same start again (the same run id, job and occurrence,
    /// as a caller does when it could not learn whether its first call
    /// committed) writes nothing and is [`Begun::Started`]: the start is
    /// recorded, once.
    ///
    /// # Errors
    ///
    /// As every call (see the module); a run id the ledger already holds for
    /// another job or occurrence is an a store failure (a constraint), and
    /// a fence beyond `i64::MAX` is [`Error::Invalid`]. Nothing is written
    /// then.
    fn begin_run(&mut self, run: &NewRun) -> Result<Begun, Error>;
    /// [`Records::begin_run`], and then, in the same transaction,
    /// [`Records::unfinished`] of each of `jobs`, in their order: the runs a
    /// new holder looks at once its start is recorded (a server is asked
    /// once, not once per job more).
    ///
    /// # Errors
    ///
    /// As [`Records::begin_run`]; when a read fails, nothing is written
    /// either.
    fn begin_run_then_unfinished(
        &mut self,
        run: &NewRun,
        jobs: &[&str],
    ) -> Result<(Begun, Vec<Vec<RunRow>>), Error>;
    /// Starts several runs in one transaction, each exactly as
    /// [`Records::begin_run`] starts it, in order, with one answer each:
    /// one commit (one `fsync`, one round trip to a server) for runs due
    /// at the same instant. Runs of one job and occurrence are decided in
    /// order: the first starts, the next finds it.
    ///
    /// # Errors
    ///
    /// As [`Records::begin_run`] for any of them: then nothing is written
    /// for any (the caller may start each on its own to learn which).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Begun, NewRun, Records};
    ///
    /// let now = jiff::Timestamp::now();
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let run = |job: &str, id: &str| NewRun {
    ///     run_id: id.into(),
    ///     job: job.into(),
    ///     occurrence: Some(now.as_second()),
    ///     fence: Some(7),
    ///     host: "ci-1".into(),
    ///     pid: 4242,
    ///     started: now,
    ///     backfill: false,
    /// };
    /// let begun = ledger.begin_runs(&[
    ///     run("a", "00000000000000a1"),
    ///     run("b", "00000000000000b1"),
    ///     run("a", "00000000000000a2"),
    /// ])?;
    /// assert_eq!(begun[..2], [Begun::Started, Begun::Started]);
    /// assert!(matches!(&begun[2], Begun::AlreadyDecided(d) if d.run_id.as_deref() == Some("00000000000000a1")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn begin_runs(&mut self, runs: &[NewRun]) -> Result<Vec<Begun>, Error>;
    /// Records one finished attempt and counts it against its step: the
    /// step's last attempt; its last success or last failure; its failure
    /// count reset to 0 by a success or raised by 1 by a failure. What each
    /// outcome word counts as is told on [`Attempt`].
    ///
    /// Recording the same `(run_id, seq)` again changes nothing. When the
    /// ledger no longer has the run (it was recovered from corruption since
    /// the run began), the step is still counted and no attempt row is
    /// written: an attempt cannot exist without its run.
    ///
    /// # Errors
    ///
    /// As every call (see the module); [`Error::Invalid`] when the run belongs to
    /// another job than `a.job` (nothing is written).
    fn record_attempt(&mut self, a: &Attempt) -> Result<(), Error>;
    /// Finishes a run, in one transaction: its finish time, verdict and exit
    /// code; the job's last success or last failure and its failure count;
    /// its tallies (verdict, lease lost, duration: see [`Records::tallies`]);
    /// then prunes the job's records:
    ///
    /// - runs: the newest `history_keep` stay (their attempts with them). A
    ///   `history_keep` of 0 keeps 1: a job's last run is what status shows.
    /// - occurrence decisions: those made before the oldest run kept go,
    ///   except the job's newest decision and its `queued` ones, which
    ///   always stay.
    /// - missed ranges: the newest 1,000 stay.
    /// - pauses: the newest 100 stay, and any that is not over at
    ///   `f.finished` (in force, or yet to begin) stays too.
    /// - watermarks: the newest 100 stay.
    ///
    /// Finishing a run that is finished already changes nothing. When the
    /// ledger no longer has the run (it was recovered since the run began),
    /// the job is still counted.
    ///
    /// # Errors
    ///
    /// As every call (see the module); [`Error::Invalid`] when the run belongs to
    /// another job than `f.job` (nothing is written).
    fn finish_run(&mut self, f: &Finished, history_keep: u32) -> Result<(), Error>;
    /// Records `attempts`, in order, each as [`Records::record_attempt`]
    /// does, and then finishes the run as [`Records::finish_run`] does, all
    /// in one transaction: the attempts and the end land together or not
    /// at all. With no attempts, it is [`Records::finish_run`].
    ///
    /// # Errors
    ///
    /// As those two; when one attempt or the end is refused, nothing is
    /// written.
    fn finish_run_after(
        &mut self,
        attempts: &[Attempt],
        f: &Finished,
        history_keep: u32,
    ) -> Result<(), Error>;
    /// [`Records::finish_run_after`], and then, in the same transaction,
    /// [`Records::next_unpaused`] of `jobs` at `now`: what the run's holder
    /// runs next from the queue, read as the end is written (a server is
    /// asked once, not twice).
    ///
    /// # Errors
    ///
    /// As [`Records::finish_run_after`]; when the queue cannot be read,
    /// nothing is written either.
    fn finish_run_then_next(
        &mut self,
        attempts: &[Attempt],
        f: &Finished,
        history_keep: u32,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<Option<(String, i64)>, Error>;
    /// Records that the lock file says this occurrence started, under a
    /// ledger that was lost since (it was recovered from corruption): the
    /// decision `claimed`, with a `detail` for a human (an empty one is
    /// stored as none), unless the occurrence has a decision. Raises the
    /// job's last decided occurrence either way, in the same transaction.
    ///
    /// Returns true when this call recorded it: the caller then says so
    /// once. A second process recording the same claim gets false, as does
    /// one that finds the occurrence started or queued. Like a run, a claim
    /// is not stopped by a missed range: the lock file says it started.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    ///
    /// A queued occurrence becomes claimed (it leaves the queue): the lock
    /// file's claim says it started, so it must never start again.
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Decision, Records};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// assert!(ledger.claimed("nightly", occ, "claimed by pid 4242", now)?);
    /// assert!(!ledger.claimed("nightly", occ, "claimed by pid 4242", now)?);
    /// let row = ledger.decision("nightly", occ)?.unwrap();
    /// assert_eq!(row.decision, Decision::Claimed);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn claimed(
        &mut self,
        job: &str,
        occurrence: i64,
        detail: &str,
        now: Timestamp,
    ) -> Result<bool, Error>;
    /// The decision recorded for one occurrence of a job, if any. An
    /// occurrence inside a missed range has none of its own: see
    /// [`Records::missed`].
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn decision(&mut self, job: &str, occurrence: i64) -> Result<Option<DecisionRow>, Error>;
    /// Records an alert.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn record_alert(&mut self, a: &NewAlert) -> Result<(), Error>;
    /// The newest `limit` alerts, of one job or of all, newest first.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn recent_alerts(&mut self, job: Option<&str>, limit: u32) -> Result<Vec<AlertRow>, Error>;
    /// The newest `limit` runs of a job, newest first (by start time), each
    /// with its attempts in order.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn history(&mut self, job: &str, limit: u32) -> Result<Vec<RunRow>, Error>;
    /// The newest run of a job, finished or not.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn last_run(&mut self, job: &str) -> Result<Option<RunRow>, Error>;
    /// The newest run of a job that has started and not finished. A run
    /// whose process died before finishing stays here until a later run
    /// prunes it; the lease, not the ledger, says whether it still runs.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn running(&mut self, job: &str) -> Result<Option<RunRow>, Error>;
    /// Asks the run `r.run_id`, if it is a run of `r.job`, to stop for a
    /// later run of that job (`overlap = "replace"`); returns whether this
    /// call recorded the request (`false`: it was asked already). The
    /// request is only a record: the run's own supervisor reads it
    /// ([`Records::replacement`]) and stops its tree; a run of another job,
    /// or one that has ended, never reads it. Requests are forgotten when
    /// their run ends, and a job's others a day after they were asked.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn ask_replace(&mut self, r: &Replacement) -> Result<bool, Error>;
    /// Takes back the request `r` this process recorded
    /// ([`Records::ask_replace`] said `true`), once the run that made it
    /// gave up waiting: left, the run it names would stop for nobody when
    /// its supervisor next reads it. A request another asker recorded
    /// first (another `asked`) is left. Returns whether one was taken back.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn withdraw_replace(&mut self, r: &Replacement) -> Result<bool, Error>;
    /// The request that run `run_id` of `job` stop, if one was made.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn replacement(&mut self, run_id: &str, job: &str) -> Result<Option<Replacement>, Error>;
    /// Every run of a job that has started and not finished, oldest first
    /// (without their attempts).
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn unfinished(&mut self, job: &str) -> Result<Vec<RunRow>, Error>;
    /// Every step (and check) of a job, by name.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn steps(&mut self, job: &str) -> Result<Vec<StepState>, Error>;
    /// Records that a range of a job's occurrences will not run, in one
    /// write transaction:
    ///
    /// 1. the job's row is created when missing (first seen at `now`);
    /// 2. when the job's last decided occurrence is at or after `m.first`,
    ///    nothing more is written: [`Missed::Moved`];
    /// 3. when `m.streak` is set and the job's newest range has the same
    ///    reason and ends at the last decided occurrence (nothing was
    ///    decided since), that range takes these occurrences in (its count
    ///    rises by `m.count`, its last becomes `m.last`, its `at_least`
    ///    holds if either does): [`Missed::Extended`];
    /// 4. otherwise a new range is recorded: [`Missed::Recorded`].
    ///
    /// In both written cases the job's last decided occurrence is raised to
    /// `m.last`, and the job's tally of missed occurrences for `m.reason`
    /// rises by `m.count`. Of any number of processes missing the same range at once,
    /// exactly one writes it.
    ///
    /// # Errors
    ///
    /// As every call (see the module); [`Error::Invalid`] when `m.first` is after
    /// `m.last`, `m.count` is 0, more than the seconds in the range, or
    /// beyond `i64::MAX` (nothing is written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Miss, Missed, Records};
    /// use baton_store::words::MissReason;
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// let paused = Miss {
    ///     job: "nightly",
    ///     reason: MissReason::Paused,
    ///     first: occ - 120,
    ///     last: occ - 60,
    ///     count: 2,
    ///     at_least: false,
    ///     detail: None,
    ///     streak: true,
    /// };
    /// assert_eq!(ledger.miss(&paused, now)?, Missed::Recorded); // Alert.
    /// // Another process planned the same outage: it finds the mark moved.
    /// assert_eq!(ledger.miss(&paused, now)?, Missed::Moved);
    /// // The pause goes on: the same row grows, quietly.
    /// let more = Miss { first: occ, last: occ, count: 1, ..paused };
    /// assert_eq!(ledger.miss(&more, now)?, Missed::Extended);
    /// let rows = ledger.missed("nightly", 10)?;
    /// assert_eq!((rows.len(), rows[0].first, rows[0].last, rows[0].count), (1, occ - 120, occ, 3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn miss(&mut self, m: &Miss<'_>, now: Timestamp) -> Result<Missed, Error>;
    /// Takes back what a clock ahead decided about `job`, when the job's
    /// last decided occurrence is more than `tolerance` seconds after `now`,
    /// in one write transaction. Once a clock is known to have been ahead,
    /// nothing decided after `now` is trusted (a clock a little ahead would
    /// otherwise keep the present from running until it comes):
    ///
    /// 1. every missed range of the job recorded at a time after `now` is
    ///    deleted, and the job's missed tally for its reason falls by its
    ///    count;
    /// 2. every queued occurrence queued at such a time is dropped;
    /// 3. the job's last decided occurrence becomes the newest one the
    ///    remaining decisions reach: the last of its remaining missed
    ///    ranges, or an occurrence with a decision that is not after `now`,
    ///    whichever is later (none when nothing
    ///    remains). The job's first-seen time stays, even when it too is
    ///    ahead: the clock that wrote it may be the honest one.
    ///
    /// An occurrence that started keeps its decision, whenever it was made:
    /// it never runs again. Returns `None` (nothing written) when the mark
    /// is not ahead, or the job is unknown: another process took the
    /// decisions back already.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Miss, Records};
    /// use baton_store::words::MissReason;
    /// let honest: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let ahead: jiff::Timestamp = "2026-11-30T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), honest)?;
    /// let (from, to) = (honest.as_second() + 1, ahead.as_second() - 1);
    /// let outage = Miss {
    ///     job: "j",
    ///     reason: MissReason::Superseded,
    ///     first: from,
    ///     last: to,
    ///     count: (to - from + 1) as u64,
    ///     at_least: false,
    ///     detail: None,
    ///     streak: false,
    /// };
    /// ledger.miss(&outage, ahead)?; // A clock a day ahead.
    /// let w = ledger.withdraw_ahead("j", honest, 60)?.unwrap();
    /// assert_eq!((w.was, w.now, w.ranges.len()), (to, None, 1));
    /// assert!(ledger.missed("j", 10)?.is_empty());
    /// assert_eq!(ledger.withdraw_ahead("j", honest, 60)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn withdraw_ahead(
        &mut self,
        job: &str,
        now: Timestamp,
        tolerance: i64,
    ) -> Result<Option<Withdrawn>, Error>;
    /// The occurrences of `job` after `after` and at or before `through`
    /// that have a decision (they started, are queued, or were claimed),
    /// oldest first: above the job's mark, only what a clock ahead decided.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn decided_after(
        &mut self,
        job: &str,
        after: Option<i64>,
        through: i64,
    ) -> Result<Vec<i64>, Error>;
    /// The newest `limit` missed ranges of a job, newest first.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn missed(&mut self, job: &str, limit: u32) -> Result<Vec<MissedRow>, Error>;
    /// How many occurrences of a job were missed, per reason: `(reason,
    /// occurrences, whether any range's count is a lower bound)`, ordered by
    /// reason. Counts the ranges pruning has kept.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn missed_counts(&mut self, job: &str) -> Result<Vec<(MissReason, u64, bool)>, Error>;
    /// Pauses a job from `now`, in one write transaction: the job's pause in
    /// force at `now`, if any, ends at `now`, and the new one is recorded,
    /// lasting until `until` (or until resumed, when `None`). Returns the new
    /// pause.
    ///
    /// # Errors
    ///
    /// As every call (see the module); [`Error::Invalid`] when `until` is not after
    /// `now` (nothing is written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::Records;
    /// use jiff::{SignedDuration, Timestamp};
    /// let now: Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let hour = SignedDuration::from_hours(1);
    /// let pause = ledger.pause("nightly", Some(now + hour), Some("migration"), "alice", now)?;
    /// assert!(pause.active(now));
    /// assert!(!pause.active(now + hour), "it lapses on its own");
    /// let ended = ledger.resume("nightly", now + hour / 2)?.unwrap();
    /// assert!(ended.covers(now) && !ended.active(now + hour / 2));
    /// assert_eq!(ledger.resume("nightly", now + hour / 2)?, None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn pause(
        &mut self,
        job: &str,
        until: Option<Timestamp>,
        reason: Option<&str>,
        who: &str,
        now: Timestamp,
    ) -> Result<PauseRow, Error>;
    /// Resumes a job: its pause in force at `now` ends at `now`. Returns
    /// that pause as ended; `None` when no pause was in force (never paused,
    /// resumed already, or lapsed), and then nothing is written.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn resume(&mut self, job: &str, now: Timestamp) -> Result<Option<PauseRow>, Error>;
    /// The newest `limit` pauses of a job, newest first, ended ones
    /// included.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn pauses(&mut self, job: &str, limit: u32) -> Result<Vec<PauseRow>, Error>;
    /// Records the jobs a service runs, in one write transaction: each
    /// declaration replaces its job's earlier one, and each job not yet
    /// known is first seen at its declaration's time. A declaration of a
    /// job nobody declares any more stays until it is declared again or
    /// the ledger is cleared: the command line shows it with its last
    /// declaration's time.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # use baton_ledger::Ledger;
    /// use baton_store::ledger::{Declaration, Records};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let report = Declaration {
    ///     job: "report".into(),
    ///     config: "schedule = \"*/5 * * * *\"\n".into(),
    ///     by: "billing on host-a (pid 4121)".into(),
    ///     declared: now,
    /// };
    /// ledger.declare(std::slice::from_ref(&report))?;
    /// assert_eq!(ledger.declarations()?, vec![report]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn declare(&mut self, declarations: &[Declaration]) -> Result<(), Error>;
    /// Every job a service declared, by name.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn declarations(&mut self) -> Result<Vec<Declaration>, Error>;
    /// The store's clock ([`Records::store_clock`]) and every declaration
    /// ([`Records::declarations`]), from one snapshot and in one round trip
    /// to a server.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn clock_and_declarations(&mut self) -> Result<(Option<Timestamp>, Vec<Declaration>), Error>;
    /// Puts occurrences of a job in its queue, in one write transaction:
    ///
    /// 1. the job's row is created when missing (first seen at `now`);
    /// 2. when the job's last decided occurrence is at or after the first
    ///    given one, nothing more is written: [`Queued::Moved`];
    /// 3. with `coalesce` (the job's `overlap = "queue"`: at most one
    ///    occurrence waits) and an occurrence already waiting, each given
    ///    occurrence is recorded `coalesced`, joining the job's newest queued
    ///    occurrence, whose count rises by as many, as does the job's tally
    ///    of occurrences skipped as `coalesced`: [`Queued::Coalesced`];
    /// 4. otherwise each waits as `queued`: [`Queued::Queued`].
    ///
    /// In both written cases the job's last decided occurrence is raised to
    /// the last given one. An occurrence that somehow has a decision keeps
    /// it.
    ///
    /// # Errors
    ///
    /// As every call (see the module); [`Error::Invalid`] when `occurrences` is
    /// empty or not strictly ascending (nothing is written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Begun, NewRun, Queued, Records};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// // The job's run is in flight: the next occurrence waits, and the one
    /// // after joins it.
    /// assert_eq!(ledger.enqueue("nightly", &[occ], true, now)?, Queued::Queued);
    /// assert_eq!(
    ///     ledger.enqueue("nightly", &[occ + 60], true, now)?,
    ///     Queued::Coalesced { into: occ }
    /// );
    /// // The lease's holder drains the queue.
    /// assert_eq!(ledger.next_queued(&["nightly"])?, Some(("nightly".to_string(), occ)));
    /// let run = NewRun {
    ///     run_id: "9f3c1ab27de40518".into(),
    ///     job: "nightly".into(),
    ///     occurrence: Some(occ),
    ///     fence: Some(42),
    ///     host: "ci-1".into(),
    ///     pid: 4242,
    ///     started: now,
    ///     backfill: false,
    /// };
    /// assert_eq!(ledger.begin_run(&run)?, Begun::Started);
    /// assert_eq!(ledger.next_queued(&["nightly"])?, None);
    /// assert_eq!(ledger.decision("nightly", occ)?.unwrap().coalesced, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn enqueue(
        &mut self,
        job: &str,
        occurrences: &[i64],
        coalesce: bool,
        now: Timestamp,
    ) -> Result<Queued, Error>;
    /// The oldest queued occurrence among these jobs (the jobs of one lock),
    /// with its job; of two jobs waiting at the same occurrence, the one
    /// whose name sorts first. `None` when none waits.
    ///
    /// It is a read: the caller then starts it with [`Records::begin_run`],
    /// which tells it when another process started it meanwhile.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn next_queued(&mut self, jobs: &[&str]) -> Result<Option<(String, i64)>, Error>;
    /// As [`Records::next_queued`], among the jobs that no pause holds at
    /// `now` (their queued occurrences wait for the resume): each job's
    /// newest pause and oldest queued occurrence are read together, in one
    /// round trip to a server.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn next_unpaused(
        &mut self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<Option<(String, i64)>, Error>;
    /// The jobs that have queued occurrences, by name (read through the
    /// partial index on queued rows: as cheap as the queue is short).
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn queued_jobs(&mut self) -> Result<Vec<String>, Error>;
    /// Queues past occurrences of `job` that an operator asked to run
    /// (`baton backfill` of a job a service runs): each one the ledger has
    /// no decision of is recorded `queued`, its detail saying so and by
    /// whom ([`super::BACKFILL_DETAIL`]), for the job's scheduler to run
    /// from its queue. The decision's key is the guard: an occurrence that
    /// ran, waits or was decided otherwise is left as it is and answered
    /// with its decision. The decided mark is not consulted: these are
    /// behind it on purpose. Whether an occurrence may run at all (the
    /// lock's claim, a lost ledger) is the caller's to have decided.
    ///
    /// # Errors
    ///
    /// As every call (see the module); none given, or out of order, is
    /// refused before anything is written.
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Records, Requested};
    ///
    /// let now = jiff::Timestamp::now();
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let first = now.as_second() - 7200;
    /// let asked = ledger.request_backfill("nightly", &[first, first + 3600], "ops", now)?;
    /// assert_eq!(asked, [Requested::Queued, Requested::Queued]);
    /// let again = ledger.request_backfill("nightly", &[first], "ops", now)?;
    /// assert!(matches!(&again[0], Requested::Decided(d) if d.backfill()));
    /// assert_eq!(ledger.next_queued(&["nightly"])?, Some(("nightly".into(), first)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn request_backfill(
        &mut self,
        job: &str,
        occurrences: &[i64],
        by: &str,
        now: Timestamp,
    ) -> Result<Vec<Requested>, Error>;
    /// Queues a run of `job` asked for now, as occurrence `at` (Unix
    /// seconds, the time it was asked), for the job's scheduler to run
    /// from its queue as it runs a backfill's
    /// ([`Records::request_backfill`]); its detail begins
    /// [`super::RUN_DETAIL`]. A decision already recorded for `at` (the
    /// schedule's occurrence of that second, or another request) is left as
    /// it is and answered.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn request_run(
        &mut self,
        job: &str,
        at: i64,
        by: &str,
        now: Timestamp,
    ) -> Result<Requested, Error>;
    /// A job's queued occurrences, oldest first.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn queued(&mut self, job: &str) -> Result<Vec<DecisionRow>, Error>;
    /// Every job's cumulative tallies, by name, in one read transaction:
    /// each job the ledger knows (its row in `jobs`) or has counted.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::{Miss, Records};
    /// use baton_store::words::MissReason;
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// let busy = Miss {
    ///     job: "nightly",
    ///     reason: MissReason::Busy,
    ///     first: occ - 240,
    ///     last: occ,
    ///     count: 5,
    ///     at_least: false,
    ///     detail: None,
    ///     streak: false,
    /// };
    /// ledger.miss(&busy, now)?;
    /// let tallies = ledger.tallies()?;
    /// assert_eq!(tallies[0].job, "nightly");
    /// assert_eq!(tallies[0].missed[&MissReason::Busy], 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn tallies(&mut self) -> Result<Vec<JobTallies>, Error>;
    /// A job's watermark: the newest value settled; `None` when none was.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn watermark(&mut self, job: &str) -> Result<Option<WatermarkRow>, Error>;
    /// Settles a job's watermark at `value`, by `run_id` under `fence` when
    /// given: one write transaction that records it as the job's newest
    /// value, numbered one more than the newest so far (1 for the first).
    /// Returns the row written.
    ///
    /// The caller must hold the job's lease and have checked its token under
    /// the lock file's mutex, which it keeps until this returns: the ledger
    /// does not compare fences.
    ///
    /// # Errors
    ///
    /// As every call (see the module); [`Error::Invalid`] for a value longer than
    /// 4096 bytes or holding a NUL, or a fence beyond `i64::MAX` (nothing is
    /// written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// use baton_store::ledger::Records;
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let first = ledger.settle("etl", "2026-11-28", Some("9f3c1ab27de40518"), Some(42), now)?;
    /// let second = ledger.settle("etl", "2026-11-29", Some("0a1b2c3d4e5f6071"), Some(43), now)?;
    /// assert_eq!((first.seq, second.seq), (1, 2));
    /// assert_eq!(ledger.watermark("etl")?.unwrap().value, "2026-11-29");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn settle(
        &mut self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<u64>,
        now: Timestamp,
    ) -> Result<WatermarkRow, Error>;
    /// The newest `limit` values settled for a job, newest first.
    ///
    /// # Errors
    ///
    /// As every call (see the module).
    fn watermarks(&mut self, job: &str, limit: u32) -> Result<Vec<WatermarkRow>, Error>;
}
