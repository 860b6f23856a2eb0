//! A job as the scheduler runs it: its declaration ([`crate::Job`])
//! checked once, at build: the schedule parsed, the zone found, the
//! self-fencing rule kept. Nothing here runs or waits.

use std::time::Duration;

use baton_cron::Schedule;
use jiff::tz::TimeZone;

use crate::error::BuildError;
use crate::job::{Check, Job, RunFn};
use crate::retry::Retry;

/// What a job's attempts run.
pub(crate) enum Work {
    /// Its function, in process.
    Function(RunFn),
    /// A command, each occurrence a child process under the command
    /// line's runner (`child.rs`): the program and its arguments.
    Command(Vec<String>),
}

/// A checked job.
pub(crate) struct Plan {
    pub(crate) name: String,
    /// The lock its runs hold: its own name unless it names one.
    pub(crate) lock: String,
    /// What an occurrence does that meets a run on the lock.
    pub(crate) overlap: crate::Overlap,
    /// The scheduler's jobs that hold the same lock, this one among them:
    /// their claims are kept in the lock's record (set at build).
    pub(crate) mates: Vec<String>,
    pub(crate) schedule: Schedule,
    /// The schedule as given, for the ledger's declaration.
    pub(crate) cron: String,
    pub(crate) zone: TimeZone,
    /// The zone's name as given, for the ledger's declaration.
    pub(crate) zone_name: String,
    pub(crate) retry: Retry,
    /// Each attempt's limit; `None` for none.
    pub(crate) timeout: Option<Duration>,
    /// The run's budget, past which it is alerted `overrunning`; `None` for
    /// none.
    pub(crate) max_runtime: Option<Duration>,
    /// How old an occurrence passed while no replica ran may be and still
    /// run at the start (`catch_up.rs`); zero for none.
    pub(crate) catch_up_window: Duration,
    /// What of them runs.
    pub(crate) catch_up: crate::CatchUp,
    pub(crate) ttl: Duration,
    pub(crate) takeover_grace: Duration,
    pub(crate) grace: Duration,
    pub(crate) history_keep: u32,
    /// What an attempt runs.
    pub(crate) work: Work,
    /// Run once each after the function, in order ([`crate::Job::check`]).
    pub(crate) checks: Vec<Check>,
    /// Occurrences that came due while the store could not be reached:
    /// neither run nor recorded yet (`run::settle_owed` records them
    /// missed once the store answers).
    pub(crate) owed: std::sync::Mutex<Vec<i64>>,
}

impl Plan {
    /// Whether its attempts run in process (not a [`Work::Command`]).
    pub(crate) fn in_process(&self) -> bool {
        matches!(self.work, Work::Function(_))
    }

    /// Checks `job` for a store whose renewals block at most
    /// `renew_wait(ttl)`.
    pub(crate) fn of(
        job: Job,
        renew_wait: impl Fn(Duration) -> Duration,
    ) -> Result<Self, BuildError> {
        check_name(&job.name)?;
        let lock = job.lock.clone().unwrap_or_else(|| job.name.clone());
        if let Some(why) = bad_name(&lock) {
            return Err(BuildError::BadLock {
                job: job.name,
                lock,
                why,
            });
        }
        let schedule = Schedule::parse(&job.cron).map_err(|source| BuildError::Cron {
            job: job.name.clone(),
            expr: job.cron.clone(),
            source: Box::new(source),
        })?;
        let zone = TimeZone::get(&job.zone).map_err(|source| BuildError::TimeZone {
            job: job.name.clone(),
            zone: job.zone.clone(),
            source,
        })?;
        too_large(&job)?;
        if job.backoff > job.backoff_max {
            return Err(BuildError::Backoff {
                job: job.name,
                backoff: job.backoff,
                max: job.backoff_max,
            });
        }
        baton_runner::check_self_fencing(
            job.ttl,
            renew_wait(job.ttl),
            job.grace,
            job.takeover_grace,
            ("the lease's ttl", "the grace", "the takeover grace"),
        )
        .map_err(|source| BuildError::Unfenced {
            job: job.name.clone(),
            source: Box::new(source),
        })?;
        let work = match (job.run, job.command) {
            (Some(run), _) => Work::Function(run),
            (None, Some(argv)) => {
                if argv.first().is_none_or(|p| p.is_empty()) {
                    return Err(BuildError::BadCommand {
                        job: job.name,
                        why: "it names no program",
                    });
                }
                if argv.iter().any(|a| a.contains('\0')) {
                    return Err(BuildError::BadCommand {
                        job: job.name,
                        why: "an argument holds a NUL byte",
                    });
                }
                if let Some(c) = job.checks.first() {
                    return Err(BuildError::BadCheck {
                        check: c.name.clone(),
                        job: job.name,
                        why: "a command job has no checks (its runner runs its command alone)",
                    });
                }
                Work::Command(argv)
            }
            (None, None) => return Err(BuildError::NothingToRun(job.name)),
        };
        if let Some(c) = job
            .checks
            .iter()
            .enumerate()
            .find(|(i, c)| {
                c.name.trim().is_empty()
                    || c.name == job.name
                    || job.checks[..*i].iter().any(|o| o.name == c.name)
            })
            .map(|(_, c)| c)
        {
            let why = if c.name == job.name {
                "a check may not be named as its job (the job's step is)"
            } else if c.name.trim().is_empty() {
                "a check needs a name"
            } else {
                "two checks have this name: history tells a job's steps apart by name"
            };
            return Err(BuildError::BadCheck {
                check: c.name.clone(),
                job: job.name,
                why,
            });
        }
        Ok(Self {
            mates: vec![job.name.clone()],
            name: job.name,
            lock,
            overlap: job.overlap,
            schedule,
            cron: job.cron,
            zone,
            zone_name: job.zone,
            retry: Retry {
                attempts: job.retries.saturating_add(1),
                backoff: job.backoff,
                backoff_max: job.backoff_max,
            },
            timeout: Some(job.timeout).filter(|t| !t.is_zero()),
            max_runtime: Some(job.max_runtime).filter(|t| !t.is_zero()),
            catch_up_window: job.catch_up_window,
            catch_up: job.catch_up,
            ttl: job.ttl,
            takeover_grace: job.takeover_grace,
            grace: job.grace,
            history_keep: job.history_keep,
            work,
            checks: job.checks,
            owed: std::sync::Mutex::default(),
        })
    }
}

/// A job's name names its lock file and its ledger key: a word of
/// letters, digits, `-`, `_` and `.`, not starting with `.`.
fn check_name(name: &str) -> Result<(), BuildError> {
    match bad_name(name) {
        Some(why) => Err(BuildError::BadName {
            name: name.to_owned(),
            why,
        }),
        None => Ok(()),
    }
}

/// What is wrong with `name` as a lock's or a job's name, if anything.
fn bad_name(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("it is empty")
    } else if name.len() > baton_lease::MAX_KEY_BYTES {
        Some("it is longer than 128 bytes")
    } else if name.starts_with('.') {
        Some("it starts with '.'")
    } else if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("only letters, digits, '-', '_' and '.' may name a job or a lock")
    } else {
        None
    }
}

/// Refuses a setting of `job` the command line would refuse for the same
/// key ([`BuildError::TooLarge`]).
fn too_large(job: &Job) -> Result<(), BuildError> {
    let refused = |setting, value: String, most: String| {
        Err(BuildError::TooLarge {
            job: job.name.clone(),
            setting,
            value,
            most,
        })
    };
    let durations = [
        ("ttl", job.ttl),
        ("takeover_grace", job.takeover_grace),
        ("grace", job.grace),
        ("timeout", job.timeout),
        ("max_runtime", job.max_runtime),
        ("catch_up_window", job.catch_up_window),
        ("backoff", job.backoff),
        ("backoff_max", job.backoff_max),
    ];
    let most = baton_runner::MAX_DURATION;
    if let Some((setting, d)) = durations.into_iter().find(|(_, d)| *d > most) {
        return refused(setting, format!("{d:?}"), "ten years at most".into());
    }
    if job.retries > baton_runner::MAX_RETRIES {
        let most = format!("{} at most", baton_runner::MAX_RETRIES);
        return refused("retries", job.retries.to_string(), most);
    }
    let kept = baton_store::ledger::MAX_HISTORY_KEEP;
    if job.history_keep > kept {
        let value = job.history_keep.to_string();
        return refused("history_keep", value, format!("{kept} at most"));
    }
    Ok(())
}
