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
//! that cannot be reserved is the caller's refusal ([`crate::engine::run_record`]).

use std::path::{Path, PathBuf};

use baton_store::ledger::Finished;
use baton_store::words::RunVerdict;
use jiff::Timestamp;

use crate::state::state_file::{self, StateFileError};

/// The room reserved for one end: a run id, a job name of up to 128
/// bytes, a verdict, an exit code and a time fit many times over.
const ROOM: usize = 1024;

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

impl EndSlot {
    /// Reserves the slot of `run_id` in `state`.
    pub(crate) fn reserve(state: &Path, run_id: &str) -> Result<Self, SlotError> {
        crate::state::state_dir::ends_dir(state)?;
        let path = path_of(state, run_id);
        state_file::reserve(&path, ROOM)?;
        Ok(Self { path })
    }

    /// Keeps `end` in the slot, for a later run to record.
    pub(crate) fn keep(&self, end: &Finished) -> Result<(), StateFileError> {
        let stored = Stored {
            run_id: end.run_id.clone(),
            job: end.job.clone(),
            finished: end.finished.to_string(),
            verdict: end.verdict,
            exit_code: end.exit_code,
            success: end.success,
        };
        // OK because a struct of strings and numbers always serializes.
        let mut line = serde_json::to_vec(&stored).expect("an end serializes");
        line.push(b'\n');
        line.truncate(ROOM);
        state_file::overwrite(&self.path, &line)
    }

    /// Removes the slot: the ledger has the run's end.
    pub(crate) fn remove(self) {
        remove(&self.path);
    }
}

fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// The end kept in `run_id`'s slot in `state`, if one was.
pub(crate) fn kept(state: &Path, run_id: &str) -> Option<Finished> {
    let text = state_file::read_marker(&path_of(state, run_id)).ok()??;
    let s: Stored = serde_json::from_str(text.trim()).ok()?;
    let finished: Timestamp = s.finished.parse().ok()?;
    (s.run_id == run_id).then_some(Finished {
        run_id: s.run_id,
        job: s.job,
        finished,
        verdict: s.verdict,
        exit_code: s.exit_code,
        success: s.success,
    })
}

/// Removes `run_id`'s slot in `state` once the ledger has its end.
pub(crate) fn forget(state: &Path, run_id: &str) {
    remove(&path_of(state, run_id));
}

#[cfg(test)]
mod tests {
    use super::*;

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
        slot.keep(&end).unwrap();
        let back = kept(d.path(), "r1").unwrap();
        assert_eq!(
            (back.verdict.as_str(), back.exit_code, back.finished),
            ("ok", 0, end.finished)
        );
        assert!(kept(d.path(), "r2").is_none());
        assert!(EndSlot::reserve(d.path(), "r1").is_err(), "reserved twice");
        forget(d.path(), "r1");
        assert!(!d.path().join("ends/r1.end").exists());
    }
}
