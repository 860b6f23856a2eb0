//! Missed ranges: the `missed` table, one row per decision that a range of
//! a job's occurrences will not run, and [`Ledger::miss`], the one call that
//! writes it.
//!
//! A decision covers `first..=last` with `count` occurrences in it (a year
//! of downtime of a per-second job is one row, not millions), and is
//! written in the same `BEGIN IMMEDIATE` transaction that raises
//! `jobs.last_decided`, only while that mark is still below the range: of
//! two processes planning the same outage, the first records it and the
//! other is told the mark moved ([`Missed::Moved`]), plans again from it and
//! finds nothing left. So a range is never recorded twice, nor overlapping
//! another decision, and nothing here is read into Rust and written back
//! outside that transaction. Rows are numbered by `AUTOINCREMENT`, so a
//! job's newest range has the largest id (the index `(job, id DESC)` finds
//! it), and a number is never reused after pruning.

use jiff::Timestamp;
use rusqlite::{Connection, Row, params};

use crate::error::{Error, Fail};
use crate::ledger::{Ledger, Mode};
use crate::rows;
use crate::{jobs, tallies};

/// How many missed ranges pruning keeps per job.
const KEEP: u32 = 1_000;

/// A decision that a range of a job's occurrences will not run, for
/// [`Ledger::miss`].
///
/// It only records: it neither alerts nor stops a run. An occurrence inside
/// a missed range may still be started later by a backfill.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Miss<'a> {
    /// The job.
    pub job: &'a str,
    /// Why they will not run: `superseded`, `outside-window`, `late`,
    /// `catch-up-max`, `paused`, `disabled`, `busy`, `hung`, …
    pub reason: &'a str,
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

/// What [`Ledger::miss`] did.
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
    pub reason: String,
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

impl Ledger {
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
    /// As [`Ledger::see_jobs`]; [`Error::Invalid`] when `m.first` is after
    /// `m.last`, `m.count` is 0, more than the seconds in the range, or
    /// beyond `i64::MAX` (nothing is written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::{Ledger, Miss, Missed};
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let occ = now.as_second();
    /// let paused = Miss {
    ///     job: "nightly",
    ///     reason: "paused",
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
    pub fn miss(&mut self, m: &Miss<'_>, now: Timestamp) -> Result<Missed, Error> {
        self.saw(now);
        let action = || {
            format!(
                "record occurrences {}..={} of job {} as missed ({})",
                m.first, m.last, m.job, m.reason
            )
        };
        let count = match crate::checks::miss_count(m) {
            Ok(count) => count,
            Err(problem) => return Err(self.invalid(action(), problem)),
        };
        let detail = m.detail.filter(|d| !d.is_empty());
        self.transact(Mode::Write, action, |tx| {
            jobs::see(tx, &[m.job], now)?;
            if jobs::decided_through(tx, m.job, m.first)? {
                return Ok(Missed::Moved);
            }
            let outcome = if m.streak && extend(tx, m, count, now)? {
                Missed::Extended
            } else {
                insert(tx, m, count, detail, now)?;
                Missed::Recorded
            };
            tallies::missed(tx, m.job, m.reason, count)?;
            jobs::decided(tx, m.job, m.last, now)?;
            Ok(outcome)
        })
    }

    /// The newest `limit` missed ranges of a job, newest first.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn missed(&mut self, job: &str, limit: u32) -> Result<Vec<MissedRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the missed occurrences of job {job}"),
            |tx| Ok(recent(tx, job, limit)?),
        )
    }

    /// How many occurrences of a job were missed, per reason: `(reason,
    /// occurrences, whether any range's count is a lower bound)`, ordered by
    /// reason. Counts the ranges pruning has kept.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn missed_counts(&mut self, job: &str) -> Result<Vec<(String, u64, bool)>, Error> {
        self.transact(
            Mode::Read,
            || format!("count the missed occurrences of job {job}"),
            |tx| Ok(counts(tx, job)?),
        )
    }
}

/// Extends the job's newest range by `m` when it has the same reason and
/// ends at the job's last decided occurrence. One statement, evaluated on
/// the rows as they are under the write lock. Returns whether it did.
fn extend(conn: &Connection, m: &Miss<'_>, count: i64, now: Timestamp) -> Result<bool, Fail> {
    let changed = conn
        .prepare_cached(
            "UPDATE missed SET
               count = count + ?3,
               last = ?4,
               at_least = at_least OR ?5,
               updated = ?6
             WHERE id = (SELECT MAX(id) FROM missed WHERE job = ?1)
               AND reason = ?2
               AND last = (SELECT last_decided FROM jobs WHERE job = ?1)",
        )?
        .execute(params![
            m.job,
            m.reason,
            count,
            m.last,
            m.at_least,
            rows::micros(now)
        ])?;
    Ok(changed == 1)
}

fn insert(
    conn: &Connection,
    m: &Miss<'_>,
    count: i64,
    detail: Option<&str>,
    now: Timestamp,
) -> Result<(), Fail> {
    conn.prepare_cached(
        "INSERT INTO missed (job, reason, first, last, count, at_least, decided, updated, detail)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8)",
    )?
    .execute(params![
        m.job,
        m.reason,
        m.first,
        m.last,
        count,
        m.at_least,
        rows::micros(now),
        detail
    ])?;
    Ok(())
}

const COLUMNS: &str = "id, job, reason, first, last, count, at_least, decided, updated, detail";

fn recent(conn: &Connection, job: &str, limit: u32) -> rusqlite::Result<Vec<MissedRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM missed WHERE job = ?1 ORDER BY id DESC LIMIT ?2"
    ))?
    .query_map(params![job, limit], row)?
    .collect()
}

fn counts(conn: &Connection, job: &str) -> rusqlite::Result<Vec<(String, u64, bool)>> {
    conn.prepare_cached(
        "SELECT reason, SUM(count), MAX(at_least) FROM missed
         WHERE job = ?1 GROUP BY reason ORDER BY reason",
    )?
    .query_map([job], |r| Ok((r.get(0)?, rows::unsigned(r, 1)?, r.get(2)?)))?
    .collect()
}

/// The job's ranges recorded after `decided_us` (microseconds), oldest
/// first.
pub(crate) fn decided_after(
    conn: &Connection,
    job: &str,
    decided_us: i64,
) -> rusqlite::Result<Vec<MissedRow>> {
    conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM missed WHERE job = ?1 AND decided > ?2 ORDER BY first"
    ))?
    .query_map(params![job, decided_us], row)?
    .collect()
}

/// Deletes all but the job's newest [`KEEP`] ranges.
pub(crate) fn prune(conn: &Connection, job: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM missed WHERE job = ?1 AND id NOT IN (
           SELECT id FROM missed WHERE job = ?1 ORDER BY id DESC LIMIT ?2)",
    )?
    .execute(params![job, KEEP])?;
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<MissedRow> {
    Ok(MissedRow {
        id: r.get(0)?,
        job: r.get(1)?,
        reason: r.get(2)?,
        first: r.get(3)?,
        last: r.get(4)?,
        count: rows::unsigned(r, 5)?,
        at_least: r.get(6)?,
        decided: rows::time(r, 7)?,
        updated: rows::time(r, 8)?,
        detail: r.get(9)?,
    })
}
