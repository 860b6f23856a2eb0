//! What people and monitors read, changing nothing: a job's state
//! ([`job_state`], with [`overdue`] judging lateness), [`status`] and its
//! HTML [`page`], [`metrics`], [`history`], the [`calendar`] of a schedule,
//! the effective configuration ([`show`]) and the jobs services declared
//! ([`declared`]). Every view reads the same
//! facts through [`status`], so no two surfaces disagree.

pub mod calendar;
pub mod declared;
pub mod history;
pub mod job_state;
pub mod metrics;
pub mod overdue;
pub mod page;
pub mod show;
pub mod slots;
pub mod status;
