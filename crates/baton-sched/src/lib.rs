//! baton-sched: the scheduler around the run lock.
//!
//! `baton.toml` names jobs, their schedules in time zones, and their steps
//! and checks ([`config`]). `baton tick` runs what is due now, `baton run`
//! runs a job by hand; each run holds the job's lease (claiming its
//! occurrence in the same critical section, so one occurrence runs once)
//! and is supervised by `baton-runner`. What happened is written to the
//! ledger (`baton-ledger`), to dated logs, and as alerts on five surfaces.
//! `status`, `history` and `config` read it back for people and scripts;
//! [`job_state`] is the one answer to what state a job is in, which every
//! surface shows, and [`overdue`] judges lateness against the schedule.
//!
//! Map: [`config`] reads and validates (and [`config::dropin`] writes the
//! `jobs.d/` drop-ins the daemon's jobs API manages); [`units`] parses
//! durations and sizes; [`http`] says what an HTTP step sends and what
//! `baton __http`'s exit codes mean; [`calendar`] lists a schedule's next
//! occurrences for people to check, with what daylight saving does to them;
//! [`page`] renders the status as an HTML page for browsers; [`metrics`]
//! renders the ledger's tallies and the jobs' state for `GET /metrics`;
//! [`render`] turns the configuration into a crontab, systemd units, GitHub
//! workflows and a reference of the environment variables baton reads;
//! [`doctor`] checks a host and says what is wrong and how to fix it.

pub mod alerts;
pub mod atomic;
pub mod backfill;
pub mod calendar;
pub mod config;
pub mod decide;
pub mod doctor;
mod end_slot;
pub mod history;
pub mod http;
pub mod job_state;
pub mod logs;
pub mod metrics;
pub mod outcome;
pub mod output;
pub mod overdue;
pub mod page;
pub mod pause;
pub mod plan;
pub mod render;
pub mod request;
mod retry;
pub mod run;
mod run_record;
mod say;
pub mod show;
pub mod state_dir;
pub mod state_file;
pub mod status;
pub mod steps;
pub mod store;
pub mod surfaces;
pub mod tick;
pub mod times;
pub mod units;
pub mod watermark;
