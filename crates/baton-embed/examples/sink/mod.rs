//! The replicas' sink: the file every run of the replica examples appends
//! its `start` and `end` lines to, one format for baton's replica and for
//! the exhibit beside it, so that the tests read both with one reader.
//!
//! A line is `WHAT JOB OCCURRENCE FENCE RUN_ID WALL_US PID`. Lines are
//! appended only here, under the flock of `SINK.lock`, so that lines of
//! several processes never interleave.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use baton_embed::{Clock, SystemClock};
use baton_lease::{FileMutex, Sharing};

/// One run, as its lines name it.
pub struct Run<'a> {
    /// The job's name.
    pub job: &'a str,
    /// The occurrence, in Unix seconds.
    pub occurrence: i64,
    /// The run's fencing token (0 for a scheduler that has none).
    pub fence: u64,
    /// The run's id, unique across every replica.
    pub run_id: &'a str,
}

/// Appends `what` (`start` or `end`) of `run` to `sink`, stamped with the
/// wall clock before the lock is waited for.
pub fn append(sink: &Path, what: &str, run: &Run<'_>) -> std::io::Result<()> {
    let line = format!(
        "{what} {} {} {} {} {} {}\n",
        run.job,
        run.occurrence,
        run.fence,
        run.run_id,
        SystemClock.wall().as_microsecond(),
        std::process::id()
    );
    let guard = FileMutex::lock(
        &sink.with_extension("lock"),
        Sharing::Exclusive,
        Duration::from_secs(10),
    )
    .map_err(std::io::Error::other)?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(sink)?;
    f.write_all(line.as_bytes())?;
    f.sync_data()?;
    drop(guard);
    Ok(())
}
