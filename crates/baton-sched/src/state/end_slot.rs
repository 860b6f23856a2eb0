//! A run's end slot: room for its end, reserved in the state directory
//! (`ends/RUN.end`) before the run starts, so that the end of a run that
//! the ledger would not take (a full disk, a ledger locked for longer than
//! the TTL) is still kept somewhere durable, with the job's true verdict and
//! exit code, for a later run under the lock to record.
//!
//! The slot is created whole (spaces, synced) while there is room; the end
//! is written over it in place, which asks the filesystem for nothing, so
//! it lands on a disk that filled meanwhile. A slot without an end is a run
//! in flight or one that died: the run that records it `abandoned` removes
//! the slot. This module decides nothing about what a run may do: a slot
//! that cannot be reserved is the caller's refusal (`crate::engine::run_record`).

use std::path::{Path, PathBuf};

use baton_store::ledger::{Attempt, Finished, NewAlert};
use baton_store::words::{AlertKind, AttemptOutcome, RunVerdict, StepKind};
use jiff::Timestamp;

use crate::state::state_file::{self, StateFileError};

/// The room reserved for one end: a run id, a job name of up to 128
/// bytes, a verdict, an exit code and a time fit many times over, with
/// about a dozen of the run's last attempts (the older ones are left out
/// when they do not fit).
const ROOM: usize = 4096;

/// One run's slot.
#[derive(Debug)]
pub(crate) struct EndSlot {
    path: PathBuf,
}

/// What a slot says.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Stored {
    run_id: String,
    job: String,
    /// RFC 3339.
    finished: String,
    verdict: RunVerdict,
    exit_code: i32,
    success: bool,
    /// The attempts the ledger did not take either, oldest first.
    #[serde(default)]
    attempts: Vec<StoredAttempt>,
    /// The run's alerts the ledger did not take either, oldest first.
    #[serde(default)]
    alerts: Vec<StoredAlert>,
}

/// One alert in a slot (its job and run are the slot's).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct StoredAlert {
    /// RFC 3339.
    time: String,
    kind: AlertKind,
    occurrence: Option<i64>,
    message: String,
    json: String,
}

/// One attempt in a slot (its run and job are the slot's).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct StoredAttempt {
    seq: u32,
    step: String,
    kind: StepKind,
    attempt: u32,
    /// RFC 3339.
    started: String,
    /// RFC 3339.
    finished: String,
    exit_code: Option<i32>,
    signal: Option<i32>,
    outcome: AttemptOutcome,
}

/// What a slot kept: a run's end, and the attempts that were to be
/// recorded with it.
#[derive(Debug)]
pub(crate) struct Kept {
    /// The end.
    pub(crate) end: Finished,
    /// Its attempts not recorded yet, oldest first.
    pub(crate) attempts: Vec<Attempt>,
    /// Its alerts not recorded yet, oldest first.
    pub(crate) alerts: Vec<NewAlert>,
}

/// Why a slot was not reserved.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SlotError {
    /// The directory of slots.
    #[error("{0}")]
    Dir(#[from] crate::state::state_dir::StateError),
    /// The file.
    #[error("{0}")]
    File(#[from] StateFileError),
}

fn path_of(state: &Path, run_id: &str) -> PathBuf {
    state.join("ends").join(format!("{run_id}.end"))
}

/// This process's spare slot ([`EndSlot::spare`]): not a `.end` file, so
/// no reader of kept ends ever takes it for one.
fn spare_path(state: &Path) -> PathBuf {
    state
        .join("ends")
        .join(format!(".spare-{}", std::process::id()))
}

/// A slot reserved ahead of its run ([`EndSlot::spare`]); removed when
/// dropped, unless a reservation took it.
#[derive(Debug)]
pub(crate) struct Spare(PathBuf);

impl Drop for Spare {
    fn drop(&mut self) {
        remove(&self.0);
    }
}

impl EndSlot {
    /// Reserves the slot of `run_id` in `state`.
    pub(crate) fn reserve(state: &Path, run_id: &str) -> Result<Self, SlotError> {
        crate::state::state_dir::ends_dir(state)?;
        let path = path_of(state, run_id);
        // This process's spare, when it reserved one: the room is there.
        if !path.exists() && std::fs::rename(spare_path(state), &path).is_ok() {
            return Ok(Self { path });
        }
        state_file::reserve(&path, ROOM)?;
        Ok(Self { path })
    }

    /// Keeps `end` in the slot, with as many of the newest of `attempts`
    /// (those to be recorded with it) and then of the run's `alerts` the
    /// ledger did not take as fit, for a later run or tick to record.
    pub(crate) fn keep(
        &self,
        end: &Finished,
        attempts: &[Attempt],
        alerts: &[NewAlert],
    ) -> Result<(), StateFileError> {
        let mut stored = Stored {
            run_id: end.run_id.clone(),
            job: end.job.clone(),
            finished: end.finished.to_string(),
            verdict: end.verdict,
            exit_code: end.exit_code,
            success: end.success,
            attempts: attempts
                .iter()
                .map(|a| StoredAttempt {
                    seq: a.seq,
                    step: a.step.clone(),
                    kind: a.kind,
                    attempt: a.attempt,
                    started: a.started.to_string(),
                    finished: a.finished.to_string(),
                    exit_code: a.exit_code,
                    signal: a.signal,
                    outcome: a.outcome,
                })
                .collect(),
            alerts: alerts
                .iter()
                .map(|a| StoredAlert {
                    time: a.time.to_string(),
                    kind: a.kind,
                    occurrence: a.occurrence,
                    message: a.message.clone(),
                    json: a.json.clone(),
                })
                .collect(),
        };
        loop {
            // OK because a struct of strings and numbers always serializes.
            let mut line = serde_json::to_vec(&stored).expect("an end serializes");
            line.push(b'\n');
            if line.len() <= ROOM || (stored.attempts.is_empty() && stored.alerts.is_empty()) {
                line.truncate(ROOM);
                return state_file::overwrite(&self.path, &line);
            }
            // The alerts went to every other surface already: they give
            // way first, the oldest first, then the attempts.
            if stored.alerts.is_empty() {
                stored.attempts.remove(0);
            } else {
                stored.alerts.remove(0);
            }
        }
    }

    /// Reserves a slot for a run of this process whose id is not known
    /// yet, under a name no run's slot has: the next [`EndSlot::reserve`]
    /// in `state` by this process takes it (a rename, which needs no
    /// room), so a run that reserved it before it asked another run to
    /// stop for it never finds the disk filled meanwhile. Removed when
    /// dropped, unless taken.
    /// Spares left by processes that died before they took or dropped
    /// theirs (a kill -9 while asking) are removed first.
    pub(crate) fn spare(state: &Path) -> Result<Spare, SlotError> {
        crate::state::state_dir::ends_dir(state)?;
        sweep_spares(state);
        let path = spare_path(state);
        remove(&path);
        state_file::reserve(&path, ROOM).inspect_err(|_| remove(&path))?;
        Ok(Spare(path))
    }

    /// Removes the slot: the ledger has the run's end.
    pub(crate) fn remove(self) {
        remove(&self.path);
    }
}

fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// Removes the spares in `state` whose process no longer runs. A spare is
/// only ever taken by the process named in it, so one whose process is
/// gone is room nobody will use. A process that may still run (its pid
/// alive, whoever has it now, or unreadable) keeps its spare.
fn sweep_spares(state: &Path) {
    let Ok(dir) = std::fs::read_dir(state.join("ends")) else {
        return;
    };
    for entry in dir.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(".spare-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !baton_lease::job::process_runs(pid) {
            remove(&entry.path());
        }
    }
}

/// The end kept in `run_id`'s slot in `state`, if one was, with its
/// attempts (an attempt that cannot be read back is left out).
pub(crate) fn kept(state: &Path, run_id: &str) -> Option<Kept> {
    let text = state_file::read_marker(&path_of(state, run_id)).ok()??;
    let s: Stored = serde_json::from_str(text.trim()).ok()?;
    let finished: Timestamp = s.finished.parse().ok()?;
    if s.run_id != run_id {
        return None;
    }
    let attempts = s
        .attempts
        .into_iter()
        .filter_map(|a| {
            Some(Attempt {
                run_id: s.run_id.clone(),
                job: s.job.clone(),
                seq: a.seq,
                step: a.step,
                kind: a.kind,
                attempt: a.attempt,
                started: a.started.parse().ok()?,
                finished: a.finished.parse().ok()?,
                exit_code: a.exit_code,
                signal: a.signal,
                outcome: a.outcome,
            })
        })
        .collect();
    let alerts = s
        .alerts
        .into_iter()
        .filter_map(|a| {
            Some(NewAlert {
                time: a.time.parse().ok()?,
                job: Some(s.job.clone()),
                kind: a.kind,
                run_id: Some(s.run_id.clone()),
                occurrence: a.occurrence,
                message: a.message,
                json: a.json,
            })
        })
        .collect();
    Some(Kept {
        end: Finished {
            run_id: s.run_id,
            job: s.job,
            finished,
            verdict: s.verdict,
            exit_code: s.exit_code,
            success: s.success,
        },
        attempts,
        alerts,
    })
}

/// Every end kept in a slot in `state` (slots only reserved, of runs in
/// flight or that died, are not ends). Nothing is created: no `ends/`,
/// no end.
pub(crate) fn all_kept(state: &Path) -> Vec<Kept> {
    let Ok(dir) = std::fs::read_dir(state.join("ends")) else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name();
            let run_id = name.to_str()?.strip_suffix(".end")?.to_owned();
            kept(state, &run_id)
        })
        .collect()
}

/// Removes `run_id`'s slot in `state` once the ledger has its end.
pub(crate) fn forget(state: &Path, run_id: &str) {
    remove(&path_of(state, run_id));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spare_left_by_a_dead_process_is_swept_and_a_live_ones_kept() {
        let d = tempfile::tempdir().unwrap();
        let ends = d.path().join("ends");
        std::fs::create_dir_all(&ends).unwrap();
        // A process that ran and was reaped: its pid names nobody now
        // (unless reused within this test, which would only keep the file).
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mut live = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        std::fs::write(ends.join(format!(".spare-{dead}")), b"x").unwrap();
        std::fs::write(ends.join(format!(".spare-{}", live.id())), b"x").unwrap();
        std::fs::write(ends.join("r9.end"), b"x").unwrap();
        let spare = EndSlot::spare(d.path()).unwrap();
        let reused = baton_lease::job::process_runs(dead);
        assert_eq!(ends.join(format!(".spare-{dead}")).exists(), reused);
        assert!(ends.join(format!(".spare-{}", live.id())).exists());
        assert!(ends.join("r9.end").exists(), "a run's slot is never swept");
        assert!(spare_path(d.path()).exists());
        drop(spare);
        assert!(!spare_path(d.path()).exists());
        live.kill().unwrap();
        live.wait().unwrap();
    }

    #[test]
    fn an_end_kept_in_its_slot_reads_back_and_an_empty_slot_keeps_none() {
        let d = tempfile::tempdir().unwrap();
        let slot = EndSlot::reserve(d.path(), "r1").unwrap();
        assert!(kept(d.path(), "r1").is_none());
        let end = Finished {
            run_id: "r1".into(),
            job: "j".into(),
            finished: Timestamp::from_second(1_800_000_000).unwrap(),
            verdict: RunVerdict::Ok,
            exit_code: 0,
            success: true,
        };
        slot.keep(&end, &[], &[]).unwrap();
        let back = kept(d.path(), "r1").unwrap().end;
        assert_eq!(
            (back.verdict.as_str(), back.exit_code, back.finished),
            ("ok", 0, end.finished)
        );
        assert!(kept(d.path(), "r2").is_none());
        assert!(EndSlot::reserve(d.path(), "r1").is_err(), "reserved twice");
        forget(d.path(), "r1");
        assert!(!d.path().join("ends/r1.end").exists());
    }

    #[test]
    fn a_slot_keeps_the_newest_attempts_that_fit_beside_the_end() {
        let d = tempfile::tempdir().unwrap();
        let slot = EndSlot::reserve(d.path(), "r1").unwrap();
        let at = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        let end = Finished {
            run_id: "r1".into(),
            job: "j".into(),
            finished: at(100),
            verdict: RunVerdict::Failed,
            exit_code: 1,
            success: false,
        };
        let attempts: Vec<Attempt> = (1..=60)
            .map(|n| Attempt {
                run_id: "r1".into(),
                job: "j".into(),
                seq: n,
                step: "a-step-with-a-long-name".into(),
                kind: StepKind::Step,
                attempt: n,
                started: at(i64::from(n)),
                finished: at(i64::from(n) + 1),
                exit_code: Some(1),
                signal: None,
                outcome: AttemptOutcome::Failed,
            })
            .collect();
        slot.keep(&end, &attempts, &[]).unwrap();
        let back = kept(d.path(), "r1").unwrap();
        assert_eq!(back.end.exit_code, 1);
        let seqs: Vec<u32> = back.attempts.iter().map(|a| a.seq).collect();
        assert!(!seqs.is_empty() && seqs.len() < 60, "{seqs:?}");
        assert_eq!(seqs.last(), Some(&60), "the newest is kept: {seqs:?}");
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
        assert_eq!(back.attempts[0].started, at(i64::from(seqs[0])));
        assert_eq!(back.attempts[0].job, "j");
        assert_eq!(all_kept(d.path()).len(), 1);
    }
}
