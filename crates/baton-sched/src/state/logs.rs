//! The dated logs under `STATE_DIR/logs/`, dated in the scheduler's zone:
//!
//! - `baton_YYYY_MM_DD.log`: the envelope: each run's start, each step
//!   attempt and its outcome, retries with their delays, alerts, the verdict;
//! - `JOB_YYYY_MM_DD.log`: each attempt's output (standard output and error
//!   as written), between a header and a footer line, its start and its end
//!   kept within the step's `output_limit` and a note saying how much was
//!   cut between them ([`crate::state::output`]);
//! - `alerts.log`: append-only, one JSON object a line;
//! - `.pruned`: the day logs were last pruned.
//!
//! Every append is one `write(2)` of whole lines to a file opened through
//! [`crate::state::state_file`] (`O_APPEND | O_NOFOLLOW | O_NONBLOCK`, mode 0600,
//! and refused unless it is a regular file of this user's or root's that
//! nobody else may write), so lines written by concurrent processes never
//! interleave, and a link, a named pipe or another user's file planted in
//! `logs/` is never written through and never blocks. `logs/` itself is
//! created owner-only and checked once per [`Logs`] value as `locks/` is
//! ([`crate::state::state_dir::logs_dir`]): in a directory another user could
//! change, nothing is written.
//!
//! A special file planted at a log (a named pipe, a socket, a device) is no
//! log at all: a run moves it aside before it starts
//! ([`Logs::set_aside_planted`]), and so does any write that finds one
//! later, unopened ([`crate::state::state_file::set_aside`]); the file is written
//! afresh, and each one moved is kept for [`Logs::take_set_aside`], which the
//! caller turns into an alert. So such a file never blocks a run nor stops the schedule, and
//! nothing is written to it. A link or another user's file is refused where
//! it is and stays there.
//!
//! What a log that cannot be written means is the caller's to say: the
//! scheduler checks the files a run will write before it takes the lease
//! ([`Logs::check_shared`], [`Logs::check_job`]) and refuses the run then,
//! when nothing is lost yet; a write that fails once the run is under way is
//! reported and never stops the run. Dated logs older than `log_keep` are
//! removed, at most once a day.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::state::state_dir::StateError;
use crate::state::state_file::{self, SetAside, StateFileError};

/// Why a log was not written (or a run's logs cannot be).
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file is not one baton may write, or the write failed.
    #[error("{0}")]
    File(#[from] StateFileError),
    /// `logs/` cannot be created, or another user could change it.
    #[error("{0}")]
    Dir(#[source] Arc<StateError>),
}

/// The logs of one state directory.
#[derive(Debug, Clone)]
pub struct Logs {
    state_dir: PathBuf,
    dir: PathBuf,
    tz: TimeZone,
    /// Whether `logs/` was created and found trusted, decided at the first
    /// write of this value (and of its clones).
    ready: Arc<OnceLock<Result<(), Arc<StateError>>>>,
    /// The special files this value's writes (and its clones') moved aside,
    /// not yet reported.
    set_aside: Arc<Mutex<Vec<SetAside>>>,
}

impl Logs {
    /// The logs in `state_dir/logs`, dated in `tz`.
    pub fn new(state_dir: &Path, tz: TimeZone) -> Self {
        Self {
            state_dir: state_dir.to_owned(),
            dir: state_dir.join("logs"),
            tz,
            ready: Arc::new(OnceLock::new()),
            set_aside: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The special files moved aside since the last call (by this value or
    /// a clone of it), for the caller to report.
    pub fn take_set_aside(&self) -> Vec<SetAside> {
        self.set_aside
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
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
    /// missing), the envelope of the day and `alerts.log`, each absent, a
    /// file baton may write, or a special file its first write sets aside.
    /// Nothing is opened.
    ///
    /// # Errors
    ///
    /// The first that cannot be written, and why.
    pub fn check_shared(&self, now: Timestamp) -> Result<(), LogError> {
        self.ready()?;
        check(&self.dated("baton", now))?;
        check(&self.alerts_path())?;
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
        Ok(check(&self.dated(job, now))?)
    }

    /// Sets aside the special files planted where a run at `now` writes: the
    /// envelope of the day, `alerts.log` and, with `job`, that job's output
    /// log (for [`Logs::take_set_aside`]). One that cannot be moved is left
    /// for the write that finds it to refuse and report.
    pub fn set_aside_planted(&self, job: Option<&str>, now: Timestamp) {
        let mut paths = vec![self.dated("baton", now), self.alerts_path()];
        paths.extend(job.map(|j| self.dated(j, now)));
        for p in paths {
            if let Ok(Some(moved)) = state_file::set_aside(&p)
                && let Ok(mut v) = self.set_aside.lock()
            {
                v.push(moved);
            }
        }
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
                crate::state::state_dir::logs_dir(&self.state_dir)
                    .map(drop)
                    .map_err(Arc::new)
            })
            .clone()
            .map_err(LogError::Dir)
    }

    /// One `write(2)` of `bytes` at the end of `path`, created when missing
    /// (and `logs/` again, if it was removed meanwhile); a special file there
    /// is set aside first.
    fn append(&self, path: &Path, bytes: &[u8]) -> Result<(), LogError> {
        self.ready()?;
        match state_file::append(path, bytes) {
            Err(e) if e.is_missing() => {
                crate::state::state_dir::logs_dir(&self.state_dir)
                    .map_err(|e| LogError::Dir(Arc::new(e)))?;
                Ok(state_file::append(path, bytes)?)
            }
            Err(refused @ StateFileError::Untrusted(_)) => {
                // What cannot be moved stays refused, as it was found.
                let Ok(Some(moved)) = state_file::set_aside(path) else {
                    return Err(refused.into());
                };
                if let Ok(mut v) = self.set_aside.lock() {
                    v.push(moved);
                }
                Ok(state_file::append(path, bytes)?)
            }
            r => Ok(r?),
        }
    }
}

/// The end of a job's output log, as a view shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tail {
    /// The log it was read from.
    pub path: PathBuf,
    /// Its last lines, oldest first (invalid UTF-8 replaced), without their
    /// line breaks.
    pub lines: Vec<String>,
    /// Whether the run's output holds more than `lines` (or began before
    /// the part of the log that was read).
    pub cut: bool,
}

/// How much of the end of a log [`Logs::tail`] reads.
pub(crate) const TAIL_BYTES: u64 = 256 * 1024;

impl Logs {
    /// The last `max` lines of run `run_id`'s output in `job`'s log of the
    /// day `at` falls on (`at`: when the run's last attempt started, since
    /// each attempt writes to the log of the day it started): from the
    /// run's first header line (`=== … run=ID … start`) to its last frame
    /// line (to the log's end while an attempt has no footer yet). The day
    /// is taken in the scheduler's zone and, when that log does not name the
    /// run (the zone was changed since it ran), in each offset a zone can
    /// have. `None` when no log names the run: another run's lines are never
    /// shown as its. When the run's first header is before the log's last
    /// 256 KiB, its lines are taken from the frame line before its first one
    /// in that part, and said cut. Reading changes nothing, and the file is
    /// opened as every log is ([`state_file::read_tail`]).
    ///
    /// # Errors
    ///
    /// The log of the day in the scheduler's zone is not a file baton
    /// writes (a link, a pipe, another user's), or cannot be read. The other
    /// days' logs are only looked in: one that cannot be read is passed.
    pub fn tail(
        &self,
        job: &str,
        at: Timestamp,
        run_id: &str,
        max: usize,
    ) -> Result<Option<Tail>, LogError> {
        let mark = format!(" run={run_id} ");
        for (i, path) in self.days_of(job, at).into_iter().enumerate() {
            let read = match state_file::read_tail(&path, TAIL_BYTES) {
                Ok(Some(read)) => read,
                Ok(None) => continue,
                Err(e) if i == 0 => return Err(e.into()),
                Err(_) => continue,
            };
            let (bytes, whole) = read;
            if let Some((lines, cut)) =
                run_lines(&String::from_utf8_lossy(&bytes), whole, &mark, max)
            {
                return Ok(Some(Tail { path, lines, cut }));
            }
        }
        Ok(None)
    }

    /// The logs of `job` a run whose attempt started at `at` may have
    /// written: the one of its day in the scheduler's zone first, then those
    /// of its day at every whole-hour offset a zone can have (at most four
    /// files in all).
    fn days_of(&self, job: &str, at: Timestamp) -> Vec<PathBuf> {
        let mut days = vec![self.dated(job, at)];
        for hours in -25..=25 {
            let Ok(offset) = jiff::tz::Offset::from_hours(hours) else {
                continue;
            };
            let day = at
                .to_zoned_datetime(TimeZone::fixed(offset))
                .strftime("%Y_%m_%d")
                .to_string();
            let path = self.dir.join(format!("{job}_{day}.log"));
            if !days.contains(&path) {
                days.push(path);
            }
        }
        days
    }
}

/// The last `max` of the lines of `text` (the end of a job's log, `whole`
/// when it is all of it) that belong to the run whose frame lines hold
/// `mark`, and whether more of them were left out; `None` when no frame line
/// holds it.
fn run_lines(text: &str, whole: bool, mark: &str, max: usize) -> Option<(Vec<String>, bool)> {
    let mut lines: Vec<&str> = text.lines().collect();
    // A read that began inside the file began inside a line, too.
    if !whole && !lines.is_empty() {
        lines.remove(0);
    }
    let frame = |l: &&str| l.starts_with("=== ");
    let ours = |l: &&str| frame(l) && l.contains(mark);
    let first = lines.iter().position(ours)?;
    let last = lines.iter().rposition(ours)?;
    let end = if lines[last].ends_with(" start") {
        lines.len()
    } else {
        last + 1
    };
    let (start, mut cut) = if lines[first].ends_with(" start") {
        (first, false)
    } else {
        // Its header is before what was read: its output runs back to the
        // frame line before, another run's, or to the start of the read.
        let from = lines[..first].iter().rposition(frame).map_or(0, |i| i + 1);
        (from, true)
    };
    // A run in a slot tags its lines with it and names it in its frames:
    // the runs of the other slots, side by side in the file, are left out.
    let tag = lines[first]
        .split(' ')
        .find_map(|w| w.strip_prefix("slot="))
        .map(|n| format!("[slot {n}] "));
    let kept: Vec<&str> = lines[start..end]
        .iter()
        .filter(|l| match &tag {
            None => true,
            Some(tag) => ours(l) || l.starts_with(tag.as_str()),
        })
        .copied()
        .collect();
    let mut kept = &kept[..];
    if kept.len() > max {
        kept = &kept[kept.len() - max..];
        cut = true;
    }
    Some((kept.iter().map(|l| (*l).to_owned()).collect(), cut))
}

/// [`state_file::check`], passing a special file: the first write sets it
/// aside.
fn check(path: &Path) -> Result<(), StateFileError> {
    match state_file::check(path) {
        Err(StateFileError::Untrusted(_)) if state_file::is_special(path) => Ok(()),
        r => r,
    }
}

/// The job whose dated log `path` is (`JOB_YYYY_MM_DD.log` in the logs
/// directory), if it is one; the envelope (`baton_…`) is no job's.
pub(crate) fn job_of_log(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    log_day(name)?;
    let job = name.get(..name.len().checked_sub(".log".len() + 11)?)?;
    (job != "baton" && !job.is_empty()).then(|| job.to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(job_of_log(&l.dated("baton", t)), None);
        assert_eq!(
            job_of_log(&l.dated("nightly_db", t)).as_deref(),
            Some("nightly_db")
        );
        assert_eq!(job_of_log(&l.dir().join("alerts.log")), None);
        l.envelope(t, "hello\nworld").unwrap();
        let text = std::fs::read_to_string(l.dated("baton", t)).unwrap();
        assert_eq!(text, "2026-11-30T01:30:00.000+05:30 hello world\n");
    }

    #[test]
    fn a_runs_tail_starts_at_its_first_header_and_keeps_the_last_lines() {
        let tmp = tempfile::tempdir().unwrap();
        let l = logs(tmp.path());
        let t: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        assert_eq!(l.tail("job", t, "r2", 5).unwrap(), None, "no log yet");
        std::fs::create_dir_all(l.dir()).unwrap();
        let mut text = String::new();
        for run in ["r1", "r2"] {
            text.push_str(&format!(
                "=== stamp job run={run} step=main attempt=1 start\n"
            ));
            for i in 0..3 {
                text.push_str(&format!("{run} line {i}\n"));
            }
            text.push_str(&format!(
                "=== stamp job run={run} step=main attempt=1 exit 0\n"
            ));
        }
        l.job_lines("job", t, text.as_bytes()).unwrap();
        let tail = l.tail("job", t, "r2", 50).unwrap().unwrap();
        assert_eq!(tail.path, l.dated("job", t));
        assert_eq!(tail.lines.len(), 5, "{tail:?}");
        assert!(tail.lines[0].contains("run=r2 step=main"), "{tail:?}");
        assert!(!tail.cut);
        let tail = l.tail("job", t, "r2", 2).unwrap().unwrap();
        assert_eq!(
            tail.lines,
            [
                "r2 line 2",
                "=== stamp job run=r2 step=main attempt=1 exit 0"
            ]
        );
        assert!(tail.cut);
        // A run the log does not name: none of another run's lines.
        assert_eq!(l.tail("job", t, "r9", 3).unwrap(), None);
        // An earlier run ends at its own footer, before the later run's lines.
        let tail = l.tail("job", t, "r1", 50).unwrap().unwrap();
        assert_eq!(tail.lines.len(), 5, "{tail:?}");
        assert_eq!(
            tail.lines[4],
            "=== stamp job run=r1 step=main attempt=1 exit 0"
        );
        assert!(!tail.cut);
        // An attempt with no footer yet runs to the log's end.
        l.job_lines(
            "job",
            t,
            b"=== stamp job run=r3 step=main attempt=2 start\nr3 out\n",
        )
        .unwrap();
        let tail = l.tail("job", t, "r3", 50).unwrap().unwrap();
        assert_eq!(
            tail.lines,
            ["=== stamp job run=r3 step=main attempt=2 start", "r3 out"]
        );
    }

    #[test]
    fn a_run_written_under_another_zone_is_found_in_the_log_of_its_day_there() {
        let tmp = tempfile::tempdir().unwrap();
        // 20:00 UTC on the 29th was the 30th in Kolkata, where the run wrote.
        let t: Timestamp = "2026-11-29T20:00:00Z".parse().unwrap();
        let then = logs(tmp.path());
        then.job_lines(
            "job",
            t,
            b"=== stamp job run=r1 step=main attempt=1 start\nr1 out\n=== stamp job run=r1 step=main attempt=1 exit 0\n",
        )
        .unwrap();
        // Now in UTC, whose log of the 29th holds another run.
        let now = Logs::new(tmp.path(), TimeZone::UTC);
        now.job_lines(
            "job",
            t,
            b"=== stamp job run=r0 step=main attempt=1 start\nr0 out\n=== stamp job run=r0 step=main attempt=1 exit 0\n",
        )
        .unwrap();
        let tail = now.tail("job", t, "r1", 50).unwrap().unwrap();
        assert_eq!(tail.path, then.dated("job", t));
        assert_eq!(tail.lines[1], "r1 out");
        assert_eq!(
            now.tail("job", t, "r0", 50).unwrap().unwrap().path,
            now.dated("job", t)
        );
        assert_eq!(now.tail("job", t, "r2", 50).unwrap(), None);
    }

    #[test]
    fn a_run_whose_header_is_before_the_part_read_starts_after_the_frame_before_it() {
        let text = "cut line\n=== x run=r0 step=main attempt=1 exit 0\nr1 a\nr1 b\n=== x run=r1 step=main attempt=1 exit 0\n=== x run=r2 step=main attempt=1 start\nr2 a\n";
        let (lines, cut) = run_lines(text, false, " run=r1 ", 50).unwrap();
        assert_eq!(
            lines,
            ["r1 a", "r1 b", "=== x run=r1 step=main attempt=1 exit 0"]
        );
        assert!(cut);
        assert_eq!(run_lines(text, false, " run=r9 ", 50), None);
    }

    #[test]
    fn a_run_in_a_slot_keeps_its_own_lines_of_a_log_it_shares_with_other_slots() {
        let text = "=== x run=r1 slot=1 step=main attempt=1 start\n\
                    [slot 1] one a\n\
                    === x run=r2 slot=2 step=main attempt=1 start\n\
                    [slot 2] two a\n\
                    [slot 1] one b\n\
                    [slot 2] two b\n\
                    === x run=r1 slot=1 step=main attempt=1 exit 0\n\
                    [slot 2] two c\n";
        let (lines, cut) = run_lines(text, true, " run=r1 ", 50).unwrap();
        assert_eq!(
            lines,
            [
                "=== x run=r1 slot=1 step=main attempt=1 start",
                "[slot 1] one a",
                "[slot 1] one b",
                "=== x run=r1 slot=1 step=main attempt=1 exit 0"
            ]
        );
        assert!(!cut);
        let (lines, _) = run_lines(text, true, " run=r2 ", 50).unwrap();
        assert_eq!(
            lines,
            [
                "=== x run=r2 slot=2 step=main attempt=1 start",
                "[slot 2] two a",
                "[slot 2] two b",
                "[slot 2] two c"
            ]
        );
    }

    #[test]
    fn a_tail_is_never_read_through_a_pipe_or_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let l = logs(tmp.path());
        let t: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        std::fs::create_dir_all(l.dir()).unwrap();
        // A pipe nobody writes would block a read that opened it plainly.
        fifo(&l.dated("piped", t));
        let e = l.tail("piped", t, "r1", 5).unwrap_err().to_string();
        assert!(e.contains("piped_2026_11_29.log"), "{e}");
        let secret = tmp.path().join("secret");
        std::fs::write(&secret, "secret\n").unwrap();
        std::os::unix::fs::symlink(&secret, l.dated("linked", t)).unwrap();
        let e = l.tail("linked", t, "r1", 5).unwrap_err().to_string();
        assert!(e.contains("linked_2026_11_29.log"), "{e}");
        assert!(!e.contains("secret\n"), "{e}");
    }

    /// Makes a named pipe at `p`.
    fn fifo(p: &Path) {
        let mode = rustix::fs::Mode::from_raw_mode(0o600);
        rustix::fs::mknodat(rustix::fs::CWD, p, rustix::fs::FileType::Fifo, mode, 0).unwrap();
    }

    #[test]
    fn a_named_pipe_at_a_log_is_set_aside_and_the_log_written_afresh() {
        let tmp = tempfile::tempdir().unwrap();
        let l = logs(tmp.path());
        let t: Timestamp = "2026-11-29T10:00:00Z".parse().unwrap();
        std::fs::create_dir_all(l.dir()).unwrap();
        let planted = [l.dated("baton", t), l.alerts_path(), l.dated("job", t)];
        for p in &planted {
            fifo(p);
        }
        l.check_shared(t).unwrap();
        l.check_job("job", t).unwrap();
        // Checking moves nothing.
        assert!(l.take_set_aside().is_empty());
        l.envelope(t, "one").unwrap();
        l.alert("{}").unwrap();
        l.clone().job_lines("job", t, b"out\n").unwrap();
        let moved = l.take_set_aside();
        let from: Vec<&Path> = moved.iter().map(|m| m.path.as_path()).collect();
        assert_eq!(
            from,
            planted.iter().map(PathBuf::as_path).collect::<Vec<_>>()
        );
        for (m, p) in moved.iter().zip(&planted) {
            assert_eq!(m.what, "a named pipe");
            assert!(std::fs::symlink_metadata(p).unwrap().is_file(), "{m}");
            let t = std::fs::symlink_metadata(&m.to).unwrap().file_type();
            assert!(std::os::unix::fs::FileTypeExt::is_fifo(&t), "{m}");
        }
        assert_eq!(std::fs::read_to_string(l.dated("job", t)).unwrap(), "out\n");
        assert!(l.take_set_aside().is_empty());
        // Set aside before a run writes anything, for that run to report.
        for p in [l.alerts_path(), l.dated("job", t)] {
            std::fs::remove_file(&p).unwrap();
            fifo(&p);
        }
        l.set_aside_planted(None, t);
        let moved = l.take_set_aside();
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert!(
            moved[0].to.ends_with("alerts.log.set-aside.2"),
            "{}",
            moved[0]
        );
        l.set_aside_planted(Some("job"), t);
        let moved = l.take_set_aside();
        assert_eq!(moved.len(), 1, "{moved:?}");
        assert!(
            moved[0].to.ends_with("job_2026_11_29.log.set-aside.2"),
            "{}",
            moved[0]
        );
        assert!(!l.dated("job", t).exists());
        // A link is refused where it is, never moved.
        let link = l.dated("other", t);
        std::os::unix::fs::symlink(l.alerts_path(), &link).unwrap();
        assert!(l.check_job("other", t).is_err());
        assert!(l.job_lines("other", t, b"x\n").is_err());
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert!(l.take_set_aside().is_empty());
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
