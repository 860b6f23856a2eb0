//! Watermarks: the `watermarks` table, each value a job's runs settled, in
//! order. The newest is the job's watermark; the older ones say how it got
//! there (which run, under which fence).
//!
//! The key `(job, seq)` numbers a job's values 1, 2, …: [`Ledger::settle`]
//! computes the next number in SQL, in the `BEGIN IMMEDIATE` transaction
//! that inserts it, so two settles never take the same number and none is
//! lost. The ledger does not judge who may settle: the caller does that
//! under the lock file's mutex (the token must still be the lease's), and
//! writes here before it lets the mutex go.

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::{Error, Fail};
use crate::ledger::{Ledger, Mode};
use crate::rows;

/// How many values pruning keeps per job.
const KEEP: u32 = 100;

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

impl Ledger {
    /// A job's watermark: the newest value settled; `None` when none was.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn watermark(&mut self, job: &str) -> Result<Option<WatermarkRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the watermark of job {job}"),
            |tx| {
                let newest = tx
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM watermarks WHERE job = ?1
                         ORDER BY seq DESC LIMIT 1"
                    ))?
                    .query_row([job], row)
                    .optional()?;
                Ok(newest)
            },
        )
    }

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
    /// As [`Ledger::see_jobs`]; [`Error::Invalid`] for a value longer than
    /// 4096 bytes or holding a NUL, or a fence beyond `i64::MAX` (nothing is
    /// written).
    ///
    /// # Example
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use baton_ledger::Ledger;
    /// let now: jiff::Timestamp = "2026-11-29T03:15:00Z".parse()?;
    /// let mut ledger = Ledger::open(dir.path(), now)?;
    /// let first = ledger.settle("etl", "2026-11-28", Some("9f3c1ab27de40518"), Some(42), now)?;
    /// let second = ledger.settle("etl", "2026-11-29", Some("0a1b2c3d4e5f6071"), Some(43), now)?;
    /// assert_eq!((first.seq, second.seq), (1, 2));
    /// assert_eq!(ledger.watermark("etl")?.unwrap().value, "2026-11-29");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn settle(
        &mut self,
        job: &str,
        value: &str,
        run_id: Option<&str>,
        fence: Option<u64>,
        now: Timestamp,
    ) -> Result<WatermarkRow, Error> {
        self.saw(now);
        let action = || format!("settle the watermark of job {job}");
        if let Err(problem) = crate::checks::watermark(value) {
            return Err(self.invalid(action(), problem));
        }
        let fence = match crate::checks::fence(fence) {
            Ok(fence) => fence,
            Err(problem) => return Err(self.invalid(action(), problem)),
        };
        self.transact(Mode::Write, action, |tx| {
            // A run of another job (one sharing the lock) holds the lease
            // but is not a run of this job: it may not settle its mark.
            if let Some(run) = run_id
                && let Some(owner) = crate::runs::job_of(tx, run)?
                && owner != job
            {
                return Err(Fail::Invalid(format!(
                    "run {run} is a run of job {owner}, not of {job}: only a run of {job} may \
                     settle its watermark"
                )));
            }
            let row = tx
                .prepare_cached(&format!(
                    "INSERT INTO watermarks (job, seq, value, run_id, fence, settled)
                     SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5
                     FROM watermarks WHERE job = ?1
                     RETURNING {COLUMNS}"
                ))?
                .query_row(params![job, value, run_id, fence, rows::micros(now)], row)?;
            Ok(row)
        })
    }

    /// The newest `limit` values settled for a job, newest first.
    ///
    /// # Errors
    ///
    /// As [`Ledger::see_jobs`].
    pub fn watermarks(&mut self, job: &str, limit: u32) -> Result<Vec<WatermarkRow>, Error> {
        self.transact(
            Mode::Read,
            || format!("read the watermarks of job {job}"),
            |tx| {
                let rows = tx
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM watermarks WHERE job = ?1
                         ORDER BY seq DESC LIMIT ?2"
                    ))?
                    .query_map(params![job, limit], row)?
                    .collect::<rusqlite::Result<_>>()?;
                Ok(rows)
            },
        )
    }
}

const COLUMNS: &str = "job, seq, value, run_id, fence, settled";

/// Deletes all but the job's newest [`KEEP`] values.
pub(crate) fn prune(conn: &Connection, job: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM watermarks WHERE job = ?1 AND seq NOT IN (
           SELECT seq FROM watermarks WHERE job = ?1 ORDER BY seq DESC LIMIT ?2)",
    )?
    .execute(params![job, KEEP])?;
    Ok(())
}

fn row(r: &Row<'_>) -> rusqlite::Result<WatermarkRow> {
    Ok(WatermarkRow {
        job: r.get(0)?,
        seq: rows::unsigned(r, 1)?,
        value: r.get(2)?,
        run_id: r.get(3)?,
        fence: rows::unsigned_opt(r, 4)?,
        settled: rows::time(r, 5)?,
    })
}
