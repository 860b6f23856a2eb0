//! What the pages read of the ledger: each job's newest runs and missed
//! ranges ([`RecentRuns`]), read once per page and never written. A
//! ledger that cannot be read is said on the page, not a failure of it.

use std::collections::BTreeMap;

use baton_store::ledger::MissedRow;
use jiff::Timestamp;

use crate::config::Config;
use crate::views::history::RunView;

/// How many of each job's runs (and missed ranges) the page reads: its
/// strip's marks, and the runs its timeline can draw.
pub const RUNS_READ: u32 = 50;

/// Each job's newest runs and missed ranges, newest first, as the page
/// shows them.
#[derive(Debug, Clone, Default)]
pub struct RecentRuns {
    /// Runs per job name. A job missing here has no runs listed.
    pub by_job: BTreeMap<String, Vec<RunView>>,
    /// Missed ranges per job name. A job missing here shows none.
    pub missed: BTreeMap<String, Vec<MissedRow>>,
    /// How many runs of each job were asked for: a job with this many may
    /// have older ones that were not read.
    pub limit: u32,
    /// Why the runs could not be read, when they could not; the page says
    /// so instead of listing none.
    pub error: Option<String>,
}

impl RecentRuns {
    /// Reads the newest `limit` runs and missed ranges of each of
    /// `config`'s jobs (of `only`, when given) from the ledger. A ledger
    /// that does not exist yet reads as no runs and is not created.
    ///
    /// # Errors
    ///
    /// None returned: a ledger that cannot be opened or read is recorded in
    /// [`RecentRuns::error`], and the jobs read before it keep their runs.
    pub fn read(config: &Config, now: Timestamp, limit: u32) -> Self {
        Self::read_of(config, now, limit, None)
    }

    /// [`RecentRuns::read`], of one job or of all.
    pub(super) fn read_of(config: &Config, now: Timestamp, limit: u32, only: Option<&str>) -> Self {
        let mut out = Self {
            limit,
            ..Self::default()
        };
        let mut ledger = match crate::engine::surfaces::existing_records_alerting(config, now) {
            None => return out,
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                out.error = Some(e.to_string());
                return out;
            }
        };
        let store = crate::store::open(config).ok();
        for name in config.jobs.keys().filter(|n| only.is_none_or(|o| o == *n)) {
            let read = ledger
                .history(name, limit)
                .and_then(|rows| Ok((rows, ledger.missed(name, limit)?)));
            match read {
                Ok((rows, missed)) => {
                    let mut views: Vec<RunView> = rows.into_iter().map(Into::into).collect();
                    crate::views::history::judge_unfinished(
                        config,
                        name,
                        &mut views,
                        store.as_deref(),
                        now,
                    );
                    out.by_job.insert(name.clone(), views);
                    out.missed.insert(name.clone(), missed);
                }
                Err(e) => {
                    out.error = Some(e.to_string());
                    break;
                }
            }
        }
        out
    }

    /// Whether `job`'s runs and misses are unknown: the ledger failed
    /// before they were read. A job of no runs that was read is known to
    /// have none.
    pub(super) fn unread(&self, job: &str) -> bool {
        self.error.is_some() && !self.by_job.contains_key(job)
    }

    pub(super) fn runs(&self, job: &str) -> &[RunView] {
        self.by_job.get(job).map_or(&[][..], Vec::as_slice)
    }

    pub(super) fn misses(&self, job: &str) -> &[MissedRow] {
        self.missed.get(job).map_or(&[][..], Vec::as_slice)
    }
}
