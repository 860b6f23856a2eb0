//! The engine: what is due ([`plan`], [`decide`]), one run under its lease
//! ([`request`], [`run`]), its steps and checks with their retries
//! ([`steps`], `retry`, what an attempt starts: `step_spec`, its first
//! attempt made early: `early`), a run replaced by a later one (`replace`), its
//! records, and where what happened is said ([`surfaces`], [`alerts`],
//! [`webhook`], over [`post`], on threads [`pending`] waits for) and its
//! trace ([`trace`]). Every operation (`ops`) drives it; nothing here
//! parses arguments, picks an exit code or reads a view.

pub mod alerts;
mod current;
pub mod decide;
mod early;
mod kept_queue;
pub mod pending;
pub mod plan;
pub mod post;
pub(crate) mod replace;
pub mod request;
mod retry;
pub mod run;
mod run_record;
pub mod slots;
mod step_spec;
pub mod steps;
pub mod surfaces;
pub mod trace;
pub mod webhook;
