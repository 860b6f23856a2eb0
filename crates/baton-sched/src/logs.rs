//! The dated logs under `STATE_DIR/logs/`, dated in the scheduler's zone:
//!
//! - `baton_YYYY_MM_DD.log`: the envelope: each run's start, each step
//!   attempt and its outcome, retries with their delays, alerts, the verdict;
//! - `JOB_YYYY_MM_DD.log`: each attempt's output (standard output and error
//!   as written), between a header and a footer line, cut at the step's
//!   `output_limit` with a note saying how much was not kept;
//! - `alerts.log`: append-only, one JSON object a line;
//! - `.pruned`: the day logs were last pruned.
//!
//! Every append is one `write(2)` of whole lines to a file opened through
//! [`crate::state_file`] (`O_APPEND | O_NOFOLLOW | O_NONBLOCK`, mode 0600,
//! and refused unless it is a regular file of this user's or root's that
//! nobody else may write), so lines written by concurrent processes never
//! interleave, and a link, a named pipe or another user's file planted in
//! `logs/` is never written through and never blocks. `logs/` itself is
//! created owner-only and checked once per [`Logs`] value as `locks/` is
//! ([`crate::state_dir::logs_dir`]): in a directory another user could
//! change, nothing is written.
//!
//! What a log that cannot be written means is the caller's to say: the
//! scheduler checks the files a run will write before it takes the lease
//! ([`Logs::check_shared`], [`Logs::check_job`]) and refuses the run then,
//! when nothing is lost yet; a write that fails once the run is under way is
//! reported and never stops the run. Dated logs older than `log_keep` are
//! removed, at most once a day.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::state_file::{self, StateFileError};

/// Why a log was not written (or a run's logs cannot be).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file is not one baton may write, or the write failed.
    #[error("{0}")]
    File(#[from] StateFileError),
    /// `logs/` cannot be created, or another user could change it.
    #[error("{0}")]
    Dir(String),
}

/// The logs of one state directory.
#[derive(Debug, Clone)]
pub struct Logs {
    state_dir: PathBuf,
    dir: PathBuf,
    tz: TimeZone,
    /// Whether `logs/` was created and found trusted, decided at the first
    /// write of this value (and of its clones).
    ready: Arc<OnceLock<Result<(), String>>>,
}

impl Logs {
    /// The logs in `state_dir/logs`, dated in `tz`.
    pub fn new(state_dir: &Path, tz: TimeZone) -> Self {
        Self {
            state_dir: state_dir.to_owned(),
            dir: state_dir.join("logs"),
            tz,
            ready: Arc::new(OnceLock::new()),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `PREFIX_YYYY_MM_DD.log` for the day `at` falls on.
    pub fn dated(&self, prefix: &str, at: Timestamp) -> PathBuf {
        let day = at.to_zoned_datetime(self.tz.clone()).strftime("%Y_%m_%d");
        self.dir.join(format!("{prefix}_{day}.log"))
    }

    /// `alerts.log`.
    pub fn alerts_path(&self) -> PathBuf {
        self.dir.join("alerts.log")
    }

    /// A time as the logs show it: in the scheduler's zone, to the
    /// millisecond, with its offset.
    pub fn stamp(&self, at: Timestamp) -> String {
        at.to_zoned_datetime(self.tz.clone())
            .strftime("%Y-%m-%dT%H:%M:%S%.3f%:z")
            .to_string()
    }

    /// Appends a line to the envelope.
    ///
    /// # Errors
    ///
    /// When the log cannot be written (the caller says so, and goes on).
    pub fn envelope(&self, at: Timestamp, line: &str) -> Result<(), LogError> {
        let text = format!("{} {}\n", self.stamp(at), one_line(line));
        self.append(&self.dated("baton", at), text.as_bytes())
    }

    /// Appends a JSON alert to `alerts.log`.
    ///
    /// # Errors
    ///
    /// When the log cannot be written.
    pub fn alert(&self, json: &str) -> Result<(), LogError> {
        self.append(
            &self.alerts_path(),
            format!("{}\n", one_line(json)).as_bytes(),
        )
    }

    /// Appends whole lines to a job's dated output log.
    ///
    /// # Errors
    ///
    /// When the log cannot be written.
    pub fn job_lines(&self, job: &str, at: Timestamp, text: &[u8]) -> Result<(), LogError> {
        self.append(&self.dated(job, at), text)
    }

    /// Checks what every run and tick at `now` writes: `logs/` (created when
    /// missing), the envelope of the day and `alerts.log`, each absent or a
    /// file baton may write. Nothing is opened.
    ///
    /// # Errors
    ///
    /// The first that cannot be written, and why.
    pub fn check_shared(&self, now: Timestamp) -> Result<(), LogError> {
        self.ready()?;
        state_file::check(&self.dated("baton", now))?;
        state_file::check(&self.alerts_path())?;
        Ok(())
    }

    /// Checks, as [`Logs::check_shared`], the output log of `job` for a run
    /// starting at `now`.
    ///
    /// # Errors
    ///
    /// When it cannot be written, and why.
    pub fn check_job(&self, job: &str, now: Timestamp) -> Result<(), LogError> {
        self.ready()?;
        Ok(state_file::check(&self.dated(job, now))?)
    }

    /// Removes dated logs (`*_YYYY_MM_DD.log`) older than `keep`, at most
    /// once a day (the marker `.pruned` remembers the day it last ran).
    ///
    /// # Errors
    ///
    /// When `logs/` or the marker cannot be used: nothing is pruned then
    /// (the caller says so; nothing is lost but disk space).
    pub fn prune(&self, now: Timestamp, keep: Duration) -> Result<(), LogError> {
        self.ready()?;
        let today = now
            .to_zoned_datetime(self.tz.clone())
            .strftime("%Y_%m_%d")
            .to_string();
        let marker = self.dir.join(".pruned");
        if state_file::read_marker(&marker)?.is_some_and(|d| d.trim() == today) {
            return Ok(());
        }
        let Ok(cutoff) = now.checked_sub(jiff::SignedDuration::try_from(keep).unwrap_or_default())
        else {
            return Ok(());
        };
        let oldest = cutoff
            .to_zoned_datetime(self.tz.clone())
            .strftime("%Y_%m_%d")
            .to_string();
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                if let Some(day) = log_day(&name)
                    && day < oldest.as_str()
                {
                    // OK to ignore: a log that cannot be removed today is
                    // tried again tomorrow; removing never follows a link.
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        state_file::rewrite_marker(&marker, format!("{today}\n").as_bytes())?;
        Ok(())
    }

    /// `logs/`, created owner-only when missing and checked as `locks/` is,
    /// once for this value.
    fn ready(&self) -> Result<(), LogError> {
        self.ready
            .get_or_init(|| {
                crate::state_dir::logs_dir(&self.state_dir)
                    .map(drop)
                    .map_err(|e| e.to_string())
            })
            .clone()
            .map_err(LogError::Dir)
    }

    /// One `write(2)` of `bytes` at the end of `path`, created when missing
    /// (and `logs/` again, if it was removed meanwhile).
    fn append(&self, path: &Path, bytes: &[u8]) -> Result<(), LogError> {
        self.ready()?;
        match state_file::append(path, bytes) {
            Err(e) if e.is_missing() => {
                crate::state_dir::logs_dir(&self.state_dir)
                    .map_err(|e| LogError::Dir(e.to_string()))?;
                Ok(state_file::append(path, bytes)?)
            }
            r => Ok(r?),
        }
    }
}

/// The `YYYY_MM_DD` of a dated log's name.
fn log_day(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".log")?;
    let day = stem.get(stem.len().checked_sub(10)?..)?;
    let ok = day.len() == 10
        && day.bytes().enumerate().all(|(i, b)| match i {
            4 | 7 => b == b'_',
            _ => b.is_ascii_digit(),
        })
        && stem.as_bytes().get(stem.len().checked_sub(11)?) == Some(&b'_');
    ok.then_some(day)
}

/// A line with no line breaks in it.
fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// A step attempt's output on its way to the job's log: whole lines only,
/// the first `limit` bytes kept, then a note saying how much was cut. With
/// `tee`, the output is also copied to this process's standard output as it
/// comes.
pub struct OutputSink {
    logs: Logs,
    job: String,
    at: Timestamp,
    limit: u64,
    kept: u64,
    cut: u64,
    partial: Vec<u8>,
    tee: bool,
    /// Bytes not copied to standard output: its reader was too far behind.
    not_teed: u64,
    failed: Option<String>,
    done: std::sync::Arc<std::sync::Mutex<Option<Captured>>>,
}

/// What became of an attempt's output.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// Bytes kept.
    pub kept: u64,
    /// Bytes not kept (over the limit).
    pub cut: u64,
    /// A write that failed, if one did.
    pub failed: Option<String>,
}

impl OutputSink {
    /// A sink for one attempt of `job` that started at `at`. The returned
    /// cell holds the summary once the output has ended.
    pub fn new(
        logs: Logs,
        job: &str,
        at: Timestamp,
        limit: u64,
        tee: bool,
    ) -> (Self, std::sync::Arc<std::sync::Mutex<Option<Captured>>>) {
        let done = std::sync::Arc::new(std::sync::Mutex::new(None));
        (
            Self {
                logs,
                job: job.to_owned(),
                at,
                limit,
                kept: 0,
                cut: 0,
                partial: Vec::new(),
                tee,
                not_teed: 0,
                failed: None,
                done: std::sync::Arc::clone(&done),
            },
            done,
        )
    }

    fn write(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Err(e) = self.logs.job_lines(&self.job, self.at, bytes)
            && self.failed.is_none()
        {
            self.failed = Some(format!("the output log is not written: {e}"));
        }
    }
}

impl baton_runner::Sink for OutputSink {
    fn chunk(&mut self, bytes: &[u8]) {
        if self.tee {
            // Never waits on the reader: a supervisor is renewing meanwhile.
            self.not_teed += baton_runner::console::stdout(bytes) as u64;
        }
        let room = self.limit.saturating_sub(self.kept);
        let take = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
        self.cut += (bytes.len() - take) as u64;
        self.kept += take as u64;
        self.partial.extend_from_slice(&bytes[..take]);
        // Whole lines go out; a line longer than 64 KiB goes out as it is.
        let end = match self.partial.iter().rposition(|&b| b == b'\n') {
            Some(i) => i + 1,
            None if self.partial.len() >= 64 * 1024 => self.partial.len(),
            None => return,
        };
        let lines: Vec<u8> = self.partial.drain(..end).collect();
        self.write(&lines);
    }

    fn end(&mut self) {
        let mut rest = std::mem::take(&mut self.partial);
        if !rest.is_empty() && rest.last() != Some(&b'\n') {
            rest.push(b'\n');
        }
        if self.cut > 0 {
            rest.extend_from_slice(
                format!(
                    "[baton: output cut after {}; {} more bytes were not kept]\n",
                    crate::units::show_size(self.limit),
                    self.cut
                )
                .as_bytes(),
            );
        }
        if self.not_teed > 0 {
            rest.extend_from_slice(
                format!(
                    "[baton: {} bytes of this output were not copied to standard output: it was \
                     not being read]\n",
                    self.not_teed
                )
                .as_bytes(),
            );
        }
        self.write(&rest);
        if let Ok(mut d) = self.done.lock() {
            *d = Some(Captured {
                kept: self.kept,
                cut: self.cut,
                failed: self.failed.take(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use baton_runner::Sink;

    fn logs(dir: &Path) -> Logs {
        Logs::new(dir, TimeZone::get("Asia/Kolkata").unwrap())
    }

    #[test]
    fn logs_are_dated_in_the_schedulers_zone() {
        let tmp = tempfile::tempdir().unwrap();
        let l = logs(tmp.path());
        // 20:00 UTC is already the next day in Kolkata.
        let t: Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
        assert!(l.dated("baton", t).ends_with("logs/baton_2026_11_30.log"));
        l.envelope(t, "hello\nworld").unwrap();
        let text = std::fs::read_to_string(l.dated("baton", t)).unwrap();
        assert_eq!(text, "2026-11-30T01:30:00.000+05:30 hello world\n");
    }

    #[test]
    fn output_is_cut_at_the_limit_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let l = logs(tmp.path());
        let t: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        let (mut sink, done) = OutputSink::new(l.clone(), "job", t, 10, false);
        sink.chunk(b"12345");
        sink.chunk(b"67\n890abcdef\nmore");
        sink.end();
        let text = std::fs::read_to_string(l.dated("job", t)).unwrap();
        assert_eq!(
            text,
            "1234567\n89\n[baton: output cut after 10B; 12 more bytes were not kept]\n"
        );
        assert_eq!(done.lock().unwrap().clone().unwrap().cut, 12);
    }

    #[test]
    fn old_logs_are_pruned_once_a_day() {
        let tmp = tempfile::tempdir().unwrap();
        let l = logs(tmp.path());
        let now: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        std::fs::create_dir_all(l.dir()).unwrap();
        for name in [
            "baton_2026_10_01.log",
            "job_2026_11_28.log",
            "alerts.log",
            "x_2026_01_01.txt",
        ] {
            std::fs::write(l.dir().join(name), "x\n").unwrap();
        }
        l.prune(now, Duration::from_secs(30 * 86_400)).unwrap();
        assert!(!l.dir().join("baton_2026_10_01.log").exists());
        assert!(l.dir().join("job_2026_11_28.log").exists());
        assert!(l.dir().join("alerts.log").exists());
        assert!(l.dir().join("x_2026_01_01.txt").exists());
        assert_eq!(log_day("a_b_2026_01_02.log"), Some("2026_01_02"));
        assert_eq!(log_day("2026_01_02.log"), None);
    }
}
