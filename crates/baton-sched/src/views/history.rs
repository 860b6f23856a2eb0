//! `baton history [JOB]`: the job's runs (or every job's), newest first,
//! each with its steps' attempts. `--json` prints [`RunView`]s, times in
//! RFC 3339; the human form shows them on each job's wall clock.
//!
//! A run the ledger has no end for is shown as it is *now*, not as the
//! ledger last heard of it: running while its lease still names it and its
//! holder may run, `abandoned` once nothing of it can (`unfinished`). The
//! ledger learns the end itself from the next run under the lock; a read
//! command never writes it.

use std::time::Duration;

use baton_store::words::RunVerdict;
use serde::Serialize;

use crate::units::show_duration;

/// One run, as `history --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    /// Its id.
    pub run_id: String,
    /// Its job.
    pub job: String,
    /// Its occurrence (RFC 3339 UTC), or `manual`.
    pub occurrence: String,
    /// Whether it was started by hand.
    pub manual: bool,
    /// The fence of its lease.
    pub fence: Option<u64>,
    /// Its host.
    pub host: Option<String>,
    /// Its supervising process.
    pub pid: Option<u32>,
    /// When it started (RFC 3339).
    pub started: String,
    /// When it finished, if it did.
    pub finished: Option<String>,
    /// How long it ran, in milliseconds, once finished.
    pub duration_ms: Option<u64>,
    /// `ok`, `failed`, `check-failed`, `lease-lost`, `interrupted`,
    /// `abandoned` (its process died unrecorded); `null`
    /// while it runs (or if it died unrecorded).
    pub verdict: Option<String>,
    /// Its exit code, once finished.
    pub exit_code: Option<i32>,
    /// Its attempts, in order.
    pub attempts: Vec<AttemptView>,
}

/// One attempt of a step or check.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptView {
    /// The step's name.
    pub step: String,
    /// `step` or `check`.
    pub kind: String,
    /// Which attempt (1 for the first).
    pub attempt: u32,
    /// When it started.
    pub started: String,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// Its exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The signal it died of, when it did.
    pub signal: Option<i32>,
    /// `ok`, `failed`, `timeout`, `lease-lost`, `not-started`, `interrupted`.
    pub outcome: String,
}

fn ms(d: jiff::SignedDuration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(0)
}

impl From<baton_store::ledger::Attempt> for AttemptView {
    fn from(a: baton_store::ledger::Attempt) -> Self {
        Self::from(baton_store::ledger::AttemptRow {
            seq: a.seq,
            step: a.step,
            kind: a.kind,
            attempt: a.attempt,
            started: a.started,
            finished: a.finished,
            exit_code: a.exit_code,
            signal: a.signal,
            outcome: a.outcome,
        })
    }
}

impl From<baton_store::ledger::AttemptRow> for AttemptView {
    fn from(a: baton_store::ledger::AttemptRow) -> Self {
        Self {
            step: a.step,
            kind: a.kind.as_str().to_owned(),
            attempt: a.attempt,
            started: a.started.to_string(),
            duration_ms: ms(a.finished.duration_since(a.started)),
            exit_code: a.exit_code,
            signal: a.signal,
            outcome: a.outcome.to_string(),
        }
    }
}

impl From<baton_store::ledger::RunRow> for RunView {
    fn from(r: baton_store::ledger::RunRow) -> Self {
        // An abandoned run's end is unknown: `finished` is when the next
        // run found it so, which says nothing of how long it ran or how.
        let known = r.verdict != Some(RunVerdict::Abandoned);
        Self {
            occurrence: crate::engine::run::occurrence_text(r.occurrence),
            manual: r.manual,
            fence: r.fence,
            host: r.host,
            pid: r.pid,
            started: r.started.to_string(),
            duration_ms: r
                .finished
                .filter(|_| known)
                .map(|f| ms(f.duration_since(r.started))),
            finished: r.finished.map(|f| f.to_string()),
            verdict: r.verdict.map(|v| v.to_string()),
            exit_code: r.exit_code.filter(|_| known),
            attempts: r.attempts.into_iter().map(AttemptView::from).collect(),
            run_id: r.run_id,
            job: r.job,
        }
    }
}

/// The human form: one block per run, its times on its job's wall clock
/// ([`crate::times::human`]; `zone_of` gives a job's zone), each run's
/// line led by its job's name when `with_job` (the runs of every job).
pub fn render(
    runs: &[RunView],
    zone_of: &dyn Fn(&str) -> jiff::tz::TimeZone,
    with_job: bool,
) -> String {
    if runs.is_empty() {
        return "no runs yet\n".into();
    }
    let mut out = String::new();
    for r in runs {
        let tz = zone_of(&r.job);
        let when = |t: &str| match t.parse::<jiff::Timestamp>() {
            Ok(t) => crate::times::human(t, &tz),
            Err(_) => t.to_owned(),
        };
        out.push_str(&format!(
            "{}  {}{}  run {}  fence {}{}  {} {}\n",
            when(&r.started),
            if with_job {
                format!("{}  ", r.job)
            } else {
                String::new()
            },
            r.verdict.as_deref().unwrap_or("running"),
            r.run_id,
            r.fence.map_or("?".into(), |f| f.to_string()),
            r.host
                .as_deref()
                .map(|h| format!(" on {h}"))
                .unwrap_or_default(),
            if r.manual {
                "manual".to_owned()
            } else {
                format!("occurrence {}", when(&r.occurrence))
            },
            r.duration_ms
                .map(|d| format!("in {}", show_duration(Duration::from_millis(d))))
                .unwrap_or_default(),
        ));
        for a in &r.attempts {
            let how = match (a.exit_code, a.signal) {
                (_, Some(s)) => format!("signal {s}"),
                (Some(c), None) => format!("exit {c}"),
                (None, None) => "no exit status".into(),
            };
            out.push_str(&format!(
                "  {} {} attempt {}: {} ({}, {})\n",
                a.kind,
                a.step,
                a.attempt,
                a.outcome,
                how,
                show_duration(Duration::from_millis(a.duration_ms))
            ));
        }
    }
    out
}

/// The newest `limit` runs of every job of `config`, newest first (each
/// job's read as [`read`] reads it).
///
/// # Errors
///
/// As [`read`], for the first job whose runs cannot be read.
///
/// Every job's runs are merged: those of the configuration's jobs, and of
/// the jobs the ledger knows that the configuration no longer names
/// ([`former_jobs`]: renamed or removed, their runs kept until pruned).
pub fn read_all(
    config: &crate::config::Config,
    limit: u32,
    now: jiff::Timestamp,
) -> Result<Vec<RunView>, baton_store::ledger::Error> {
    let mut all = Vec::new();
    for job in config.jobs.keys().cloned().chain(former_jobs(config, now)?) {
        all.extend(read(config, &job, limit, now)?);
    }
    let started = |r: &RunView| r.started.parse::<jiff::Timestamp>().ok();
    all.sort_by_key(|r| std::cmp::Reverse(started(r)));
    all.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    Ok(all)
}

/// The jobs the ledger knows that `config` does not name (renamed or
/// removed since they ran), by name; none when there is no ledger yet.
///
/// # Errors
///
/// As [`read`].
pub fn former_jobs(
    config: &crate::config::Config,
    now: jiff::Timestamp,
) -> Result<Vec<String>, baton_store::ledger::Error> {
    let Some(l) = crate::engine::surfaces::existing_records_alerting(config, now) else {
        return Ok(Vec::new());
    };
    Ok(l?
        .jobs()?
        .into_iter()
        .map(|j| j.job)
        .filter(|j| !config.jobs.contains_key(j))
        .collect())
}

/// The newest `limit` runs of `job`, as `history --json` prints them; none
/// when the state directory has no ledger yet.
///
/// # Errors
///
/// The ledger cannot be opened or read (said as `failed to …`).
pub fn read(
    config: &crate::config::Config,
    job: &str,
    limit: u32,
    now: jiff::Timestamp,
) -> Result<Vec<RunView>, baton_store::ledger::Error> {
    let Some(l) = crate::engine::surfaces::existing_records_alerting(config, now) else {
        return Ok(Vec::new());
    };
    let mut l = l?;
    let rows = l.history(job, limit)?;
    let mut views: Vec<RunView> = rows.into_iter().map(Into::into).collect();
    let store = crate::store::open(config).ok();
    judge_unfinished(config, job, &mut views, store.as_deref(), now);
    Ok(views)
}

/// A run of `job` as [`read`] shows it: the one with id `run_id`, else
/// the one that started occurrence `at` (as the ledger's decision names
/// it); `None` when there is no such run (or no ledger yet).
///
/// # Errors
///
/// As [`read`].
pub fn find(
    config: &crate::config::Config,
    job: &str,
    run_id: Option<&str>,
    at: Option<i64>,
    now: jiff::Timestamp,
) -> Result<Option<RunView>, baton_store::ledger::Error> {
    let Some(l) = crate::engine::surfaces::existing_records_alerting(config, now) else {
        return Ok(None);
    };
    let mut l = l?;
    let id = match (run_id, at) {
        (Some(id), _) => Some(id.to_owned()),
        (None, Some(at)) => l.decision(job, at)?.and_then(|d| d.run_id),
        (None, None) => None,
    };
    let Some(id) = id else { return Ok(None) };
    run_of(config, job, &id, l, now)
}

/// What the ledger recorded of one occurrence of a job ([`occurrence`]).
#[derive(Debug, Clone)]
pub enum Recorded {
    /// A run started for it: as [`read`] shows it.
    Run(Box<RunView>),
    /// It was decided otherwise: queued, coalesced, claimed (or started,
    /// by a run the ledger no longer keeps).
    Decided(baton_store::words::Decision),
    /// It was recorded missed, for this reason.
    Missed(baton_store::words::MissReason),
    /// Nothing: it is not decided yet.
    Nothing,
}

/// How many of a job's newest missed ranges [`occurrence`] reads: an
/// occurrence just decided is in one of them.
const MISSED_READ: u32 = 16;

/// What the ledger recorded of `job`'s occurrence `at`: the run that
/// started it, another decision, a miss, or nothing (nor when there is no
/// ledger yet).
///
/// # Errors
///
/// As [`read`].
pub fn occurrence(
    config: &crate::config::Config,
    job: &str,
    at: i64,
    now: jiff::Timestamp,
) -> Result<Recorded, baton_store::ledger::Error> {
    let Some(l) = crate::engine::surfaces::existing_records_alerting(config, now) else {
        return Ok(Recorded::Nothing);
    };
    let mut l = l?;
    match l.decision(job, at)? {
        Some(d) => match d.run_id {
            Some(id) => Ok(run_of(config, job, &id, l, now)?
                .map_or(Recorded::Decided(d.decision), |v| {
                    Recorded::Run(Box::new(v))
                })),
            None => Ok(Recorded::Decided(d.decision)),
        },
        None => Ok(l
            .missed(job, MISSED_READ)?
            .into_iter()
            .find(|m| m.first <= at && at <= m.last)
            .map_or(Recorded::Nothing, |m| Recorded::Missed(m.reason))),
    }
}

/// Run `id` of `job` as [`read`] shows it, read from `l` (closed before
/// the run's lock is asked), or `None` when the ledger keeps no such run.
fn run_of(
    config: &crate::config::Config,
    job: &str,
    id: &str,
    mut l: Box<dyn baton_store::ledger::Records>,
    now: jiff::Timestamp,
) -> Result<Option<RunView>, baton_store::ledger::Error> {
    let keep = config.settings.history_keep.value.max(1);
    let rows = l.history(job, keep)?;
    drop(l);
    let mut views: Vec<RunView> = rows
        .into_iter()
        .filter(|r| r.run_id == id)
        .map(Into::into)
        .collect();
    let store = crate::store::open(config).ok();
    judge_unfinished(config, job, &mut views, store.as_deref(), now);
    Ok(views.pop())
}

/// Gives each run of `job` in `views` that the ledger has no end for the
/// verdict [`unfinished`] finds at `now` (asking `store` for the job's lock
/// only when there is such a run). The newest such run, when no slot of the
/// job's lock holds it, is judged by the job's former lock when its guard
/// says it runs there ([`crate::views::slots::with_former_lock`]: its
/// `lock` was changed while it ran, or another host's configuration names
/// another lock), as `status` judges it: never `abandoned` while it holds
/// that lock.
pub(crate) fn judge_unfinished(
    config: &crate::config::Config,
    job: &str,
    views: &mut [RunView],
    store: Option<&dyn crate::store::Store>,
    now: jiff::Timestamp,
) {
    let Some(in_flight) = views.iter().find(|v| v.verdict.is_none()) else {
        return;
    };
    let in_flight = in_flight.run_id.clone();
    // Only `of_run` is asked of them: the slots' order is enough.
    let slots = match (config.jobs.get(job), store) {
        (Some(j), Some(s)) => crate::views::slots::with_former_lock(
            config,
            j,
            crate::views::slots::Slots(
                j.slot_refs_in(s)
                    .iter()
                    .map(|(_, l)| s.inspect(l).ok().flatten())
                    .collect(),
            ),
            Some(&in_flight),
            now,
        ),
        _ => crate::views::slots::Slots(Vec::new()),
    };
    let state = &config.settings.state_dir.value;
    for v in views.iter_mut().filter(|v| v.verdict.is_none()) {
        // An end the ledger did not take, kept in the run's slot here: what
        // the run came to, until a tick records it.
        if let Some(crate::state::end_slot::Kept { end, attempts, .. }) =
            crate::state::end_slot::kept(state, &v.run_id)
        {
            v.verdict = Some(end.verdict.to_string());
            v.exit_code = Some(end.exit_code);
            v.finished = Some(end.finished.to_string());
            v.duration_ms = v
                .started
                .parse::<jiff::Timestamp>()
                .ok()
                .map(|started| ms(end.finished.duration_since(started)));
            v.attempts
                .extend(attempts.into_iter().map(AttemptView::from));
            continue;
        }
        let lock = slots.of_run(&v.run_id);
        v.verdict =
            unfinished(state, &v.run_id, v.host.as_deref(), v.pid, lock).map(|v| v.to_string());
    }
}

/// What a run the ledger has no end for is now: the end it kept in its
/// slot in `state` when the ledger would not take it (recorded by the next
/// tick), `abandoned` when nothing of it can still run, `None` while it may
/// (or when that cannot be told).
///
/// `lock` is the job's lock judged now (`None` when it cannot be read). A
/// holder that is this run, live, hung or orphaned, says it may still run.
/// Otherwise a run of this host is judged by its supervising process: gone,
/// the run is over (a step dies with its supervisor); alive, it may still
/// run (its job's lock may have been renamed since it started, and a pid
/// reused since is taken for it, the safe way round). A run of another host
/// is over when its lock is free, taken by another run, or held by a
/// provably dead holder or one past its TTL and grace (whose self-fencing
/// has stopped it by then).
pub(crate) fn unfinished(
    state: &std::path::Path,
    run_id: &str,
    host: Option<&str>,
    pid: Option<u32>,
    lock: Option<&baton_lease::Verdict>,
) -> Option<RunVerdict> {
    use baton_lease::Verdict as V;
    const OVER: Option<RunVerdict> = Some(RunVerdict::Abandoned);
    if let Some(kept) = crate::state::end_slot::kept(state, run_id) {
        return Some(kept.end.verdict);
    }
    if let Some(V::Live { holder, .. } | V::Hung { holder, .. } | V::Orphaned { holder, .. }) = lock
        && holder.run() == Some(run_id)
    {
        return None;
    }
    if host.is_some_and(|h| h == baton_lease::Observer::here().host)
        && let Some(pid) = pid
    {
        return if baton_lease::job::process_runs(pid) {
            None
        } else {
            OVER
        };
    }
    match lock? {
        V::Absent
        | V::Free(_)
        | V::Abandoned { .. }
        | V::Dead { .. }
        | V::Expired { .. }
        | V::Live { .. }
        | V::Hung { .. }
        | V::Orphaned { .. } => OVER,
        V::Writing { .. } | V::Refused(_) => None,
    }
}
