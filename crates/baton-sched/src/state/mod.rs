//! The files of the state directory other than lock files and the ledger:
//! the directory itself ([`state_dir`]), the one way such a file is opened
//! ([`state_file`]) or replaced ([`atomic`]), the dated logs ([`logs`]) and
//! a step's output on its way there ([`output`]), and a run's end slot.

pub mod atomic;
pub(crate) mod end_slot;
pub mod logs;
pub mod output;
pub mod state_dir;
pub mod state_file;
