//! Cumulative tallies: the `tallies` and `durations` tables, counts per job
//! that pruning never touches, for the metrics; and [`Ledger::tallies`],
//! which reads them all.
//!
//! Every tally rises in the transaction that records the event it counts,
//! as an SQL expression (`count + n`), never a value read into Rust and
//! written back, so two writers never undo each other and a tally never
//! counts an event the ledger did not record, nor misses one it did:
//!
//! - `verdict`, by verdict word: a run finished ([`Ledger::finish_run`]),
//!   once per run (finishing it again counts nothing);
//! - `lease-lost`: a run finished with the verdict `lease-lost` (its lease
//!   was lost while it ran, and it was stopped);
//! - `missed`, by reason: the occurrences of a range recorded or extended
//!   by [`Ledger::miss`] (its `count`, a floor when `at_least`), less those
//!   of a range withdrawn because a clock ahead recorded it
//!   ([`Ledger::withdraw_ahead`]: the one way a tally falls);
//! - `skipped`, by reason: occurrences that had a decision other than a
//!   missed range and still never ran themselves: `coalesced` (they joined
//!   an occurrence already waiting in the queue, which runs for them, in
//!   [`Ledger::enqueue`]) and `claimed` (the lock file says they started,
//!   under a ledger lost since, in [`Ledger::claimed`]). A skipped
//!   occurrence was served or had run; a missed one was not, and did not;
//! - the run-duration histogram: a finished run's time from its start to
//!   its end, in the bucket of the first of [`BOUNDS`] it does not exceed
//!   (or `+Inf`). A run whose row the ledger lost (it was recovered since
//!   the run began) counts its verdict and no duration.
//!
//! The last success and failure are the job's row's (`jobs.last_success`,
//! `jobs.last_failure`), which pruning never touched either.
//!
//! This module never decides anything and never reads the clock: it
//! counts what the other modules record, inside their transactions.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use rusqlite::{Connection, params};

use crate::error::Error;
use crate::ledger::{Ledger, Mode};
use crate::rows::{self, Finished};

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

/// The kinds of counts in the `tallies` table.
const VERDICT: &str = "verdict";
const MISSED: &str = "missed";
const SKIPPED: &str = "skipped";
const LEASE_LOST: &str = "lease-lost";

/// The verdict of a run whose lease was lost.
const LEASE_LOST_VERDICT: &str = "lease-lost";

/// A job's cumulative tallies, as [`Ledger::tallies`] reads them.
///
/// The counts only rise, but for a missed range withdrawn because a clock
/// ahead recorded it (a ledger recovered from corruption starts again
/// from zero, as a restarted process's counters do). A ledger migrated
/// from version 2 started them from the rows it still held then.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobTallies {
    /// The job.
    pub job: String,
    /// Finished runs, by verdict (`ok`, `failed`, `check-failed`,
    /// `lease-lost`, `interrupted`, …).
    pub runs: BTreeMap<String, u64>,
    /// Occurrences that will not run, by reason (`busy`, `hung`,
    /// `superseded`, `paused`, …).
    pub missed: BTreeMap<String, u64>,
    /// Occurrences that never ran themselves yet were served or had run:
    /// `coalesced` and `claimed`.
    pub skipped: BTreeMap<String, u64>,
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

impl Ledger {
    /// Every job's cumulative tallies, by name, in one read transaction:
    /// each job the ledger knows (its row in `jobs`) or has counted.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::{Ledger, Miss};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// let busy = Miss {
    ///     job: "nightly",
    ///     reason: "busy",
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
    /// assert_eq!(tallies[0].missed["busy"], 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tallies(&mut self) -> Result<Vec<JobTallies>, Error> {
        self.transact(Mode::Read, || "read the tallies".into(), |tx| Ok(all(tx)?))
    }
}

/// Adds `n` to the job's count of `kind` and `word`.
fn add(conn: &Connection, job: &str, kind: &str, word: &str, n: i64) -> rusqlite::Result<()> {
    if n == 0 {
        return Ok(());
    }
    conn.prepare_cached(
        "INSERT INTO tallies (job, kind, word, count) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (job, kind, word) DO UPDATE SET count = count + excluded.count",
    )?
    .execute(params![job, kind, word, n])?;
    Ok(())
}

/// Counts missed occurrences.
pub(crate) fn missed(conn: &Connection, job: &str, reason: &str, n: i64) -> rusqlite::Result<()> {
    add(conn, job, MISSED, reason, n)
}

/// Takes back `n` missed occurrences whose range was withdrawn (a clock
/// ahead decided them, [`Ledger::withdraw_ahead`]); never below zero.
pub(crate) fn unmissed(conn: &Connection, job: &str, reason: &str, n: i64) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE tallies SET count = MAX(0, count - ?4) WHERE job = ?1 AND kind = ?2 AND word = ?3",
    )?
    .execute(params![job, MISSED, reason, n])?;
    Ok(())
}

/// Counts skipped occurrences (`coalesced`, `claimed`).
pub(crate) fn skipped(conn: &Connection, job: &str, reason: &str, n: i64) -> rusqlite::Result<()> {
    add(conn, job, SKIPPED, reason, n)
}

/// Counts a finished run: its verdict, a lost lease, and, when the ledger
/// has the run's start (`started`), its duration. Called once per run, in
/// the transaction that finishes it.
///
/// (The bucket is [`bucket`]'s, shared with every ledger.)
pub(crate) fn finished(
    conn: &Connection,
    f: &Finished,
    started: Option<Timestamp>,
) -> rusqlite::Result<()> {
    add(conn, &f.job, VERDICT, &f.verdict, 1)?;
    if f.verdict == LEASE_LOST_VERDICT {
        add(conn, &f.job, LEASE_LOST, "", 1)?;
    }
    let Some(started) = started else {
        return Ok(());
    };
    let (us, bound) = bucket(started, f.finished);
    conn.prepare_cached(
        "INSERT INTO durations (job, bound, count, sum_us) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT (job, bound) DO UPDATE SET
           count = count + 1,
           sum_us = sum_us + excluded.sum_us",
    )?
    .execute(params![f.job, bound, us])?;
    Ok(())
}

fn all(conn: &Connection) -> rusqlite::Result<Vec<JobTallies>> {
    let mut jobs: BTreeMap<String, JobTallies> = BTreeMap::new();
    let mut stmt =
        conn.prepare_cached("SELECT job, last_success, last_failure FROM jobs ORDER BY job")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let t = entry(&mut jobs, r.get(0)?);
        t.last_success = rows::time_opt(r, 1)?;
        t.last_failure = rows::time_opt(r, 2)?;
    }
    drop(found);
    let mut stmt = conn.prepare_cached("SELECT job, kind, word, count FROM tallies")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let t = entry(&mut jobs, r.get(0)?);
        let kind: String = r.get(1)?;
        let word: String = r.get(2)?;
        let n = rows::unsigned(r, 3)?;
        match kind.as_str() {
            VERDICT => *t.runs.entry(word).or_default() += n,
            MISSED => *t.missed.entry(word).or_default() += n,
            SKIPPED => *t.skipped.entry(word).or_default() += n,
            LEASE_LOST => t.lease_losses += n,
            _ => {} // A kind a later version counts: not this build's to show.
        }
    }
    drop(found);
    let mut stmt = conn.prepare_cached("SELECT job, bound, count, sum_us FROM durations")?;
    let mut found = stmt.query([])?;
    while let Some(r) = found.next()? {
        let t = entry(&mut jobs, r.get(0)?);
        let bound: i64 = r.get(1)?;
        let i = BOUNDS_US
            .iter()
            .position(|&b| bound <= b)
            .unwrap_or(BOUNDS_US.len() - 1);
        t.durations.buckets[i] += rows::unsigned(r, 2)?;
        t.durations.sum += Duration::from_micros(rows::unsigned(r, 3)?);
    }
    drop(found);
    Ok(jobs.into_values().collect())
}

fn entry(jobs: &mut BTreeMap<String, JobTallies>, job: String) -> &mut JobTallies {
    jobs.entry(job.clone()).or_insert_with(|| JobTallies {
        job,
        ..JobTallies::default()
    })
}

/// A run's duration in microseconds from `started` to `finished` (0 when
/// the wall clock stepped back between them), and the upper bound of its
/// histogram bucket: the first of [`BOUNDS_US`] it does not exceed, else
/// `i64::MAX`. Every ledger files durations with this.
pub fn bucket(started: Timestamp, finished: Timestamp) -> (i64, i64) {
    let us = (rows::micros(finished) - rows::micros(started)).max(0);
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
}
