//! A tick of the daemon (its clock's, or `POST /v1/tick`'s): the same
//! decision `baton tick` makes ([`baton_sched::ops::tick::decide_due`]), made on
//! the configuration in force, then a worker for each start, and an answer
//! that says what started, what was skipped and why, and what was missed.
//!
//! Ticks run one at a time within the daemon; ticks of other processes
//! (`baton tick` from cron) run beside them, arbitrated by the ledger and
//! the lease's claims only.
//!
//! A scheduled occurrence whose worker could not be made (the system
//! refused the process: out of file descriptors or processes) is recorded
//! missed (`start-failed`) and alerted ([`baton_sched::ops::unstarted`]),
//! under the tick lock; left undecided, the next tick would record it
//! `superseded`, as if a later one had run in its place.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use baton_sched::engine::run::{Start, Told, occurrence_text};
use baton_sched::ops::tick::Unprepared;
use baton_store::words::MissReason;
use serde::Serialize;

use crate::state::{Daemon, Loaded};
use crate::worker::Unanswered;

/// A run that started.
#[derive(Debug, Serialize)]
pub(crate) struct Started {
    pub(crate) job: String,
    /// The occurrence (RFC 3339 UTC); `null` for a start of the job's queue.
    pub(crate) occurrence: Option<String>,
    pub(crate) run_id: String,
    pub(crate) fence: u64,
}

/// A start that did not start, and why.
#[derive(Debug, Serialize)]
pub(crate) struct Skipped {
    pub(crate) job: String,
    /// The occurrence (RFC 3339 UTC); `null` for a start of the job's queue.
    pub(crate) occurrence: Option<String>,
    /// `running` (another process runs it now), `in_flight` (this daemon
    /// already started it), `claimed` (it ran already), `decided` (another
    /// tick decided it first), `queued`, `coalesced`, `waiting` (every
    /// worker slot is busy: it starts when one frees), `error`.
    pub(crate) reason: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) holder: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<String>,
}

/// Occurrences that will not run.
#[derive(Debug, Serialize)]
pub(crate) struct Missed {
    pub(crate) job: String,
    pub(crate) reason: MissReason,
    pub(crate) first: String,
    pub(crate) last: String,
    pub(crate) count: u64,
    pub(crate) at_least: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) holder: Option<serde_json::Value>,
}

/// What a tick did.
#[derive(Debug, Serialize)]
pub(crate) struct Ticked {
    pub(crate) source: &'static str,
    pub(crate) now: String,
    /// The instant the decision was made at, on the clock it decides by (a
    /// shared store's): the clock's own business, not the API's.
    #[serde(skip)]
    pub(crate) decided_at: Option<jiff::Timestamp>,
    pub(crate) enabled: bool,
    pub(crate) started: Vec<Started>,
    pub(crate) skipped: Vec<Skipped>,
    pub(crate) missed: Vec<Missed>,
}

/// Ticks now; `None` when the daemon is stopping, `Err` when the state
/// directory cannot be used for it (nothing was decided, nothing started;
/// the error says why, as `baton tick` does).
pub(crate) async fn tick(
    d: &Arc<Daemon>,
    source: &'static str,
) -> Option<Result<Ticked, Unprepared>> {
    let _one = d.ticking.lock().await;
    if d.stopping.load(Ordering::SeqCst) {
        return None;
    }
    let loaded = d.current();
    let now = d.clock.wall();
    let mut out = Ticked {
        source,
        now: now.to_string(),
        decided_at: None,
        enabled: loaded.config.enabled(),
        started: Vec::new(),
        skipped: Vec::new(),
        missed: Vec::new(),
    };
    if !out.enabled {
        return Some(Ok(out));
    }
    let (l, clock, d2) = (Arc::clone(&loaded), Arc::clone(&d.clock), Arc::clone(d));
    let due = tokio::task::spawn_blocking(move || {
        baton_sched::ops::tick::preflight(&l.config, clock.wall())?;
        let kept = d2.take_ledger(&l.config);
        let (due, ledger) = baton_sched::ops::tick::decide_due_with(&l.config, &[], &clock, kept);
        if let Some(ledger) = ledger {
            d2.keep_ledger(&l.config, ledger);
        }
        Ok::<_, Unprepared>(due)
    })
    .await;
    let mut due = match due {
        Ok(Ok(due)) => {
            // Only a decision measured the store's clock: one that could not
            // be made (the store unreachable) keeps the last measurement, so
            // that the clock goes on planning by the store's clock, not by
            // this host's as if they agreed.
            if due.decided_at.is_some() {
                d.offset_us.store(
                    i64::try_from(due.offset.as_micros()).unwrap_or(0),
                    Ordering::SeqCst,
                );
            }
            due
        }
        Ok(Err(e)) => {
            tracing::error!("tick: {e}; nothing was run");
            return Some(Err(e));
        }
        Err(e) => {
            tracing::error!("tick: the decision failed: {e}");
            return Some(Ok(out));
        }
    };
    out.decided_at = due.decided_at;
    let held = std::mem::take(&mut due.webhooks);
    if due.ledger_unavailable || due.ledger_newer {
        // Nothing was decided (said when the ledger was tried): a tick
        // asked for over the API says so (`unusable_state`), as `baton
        // tick` exits 2. The decision's alerts still go out.
        if !held.is_empty() {
            let (l, clock) = (Arc::clone(&loaded), Arc::clone(&d.clock));
            tokio::task::spawn_blocking(move || {
                baton_sched::ops::tick::post_held(&l.config, &clock, held);
            });
        }
        return Some(Err(Unprepared::LedgerUnavailable));
    }
    for (job, m) in due.missed {
        out.missed.push(Missed {
            job,
            reason: m.reason,
            first: occurrence_text(Some(m.first)),
            last: occurrence_text(Some(m.last)),
            count: m.count,
            at_least: m.at_least,
            holder: None,
        });
    }
    let mut pending = Vec::new();
    for (job, start) in due.starts {
        let occurrence = start.occurrence().map(|at| occurrence_text(Some(at)));
        let Ok(permit) = Arc::clone(&d.slots).try_acquire_owned() else {
            // Every slot is busy: start it when one frees.
            let (d2, l2, j2) = (Arc::clone(d), Arc::clone(&loaded), job.clone());
            tokio::spawn(async move {
                if let Ok(p) = Arc::clone(&d2.slots).acquire_owned().await
                    && !d2.stopping.load(Ordering::SeqCst)
                {
                    let told = crate::worker::start(&d2, &l2, &j2, start, p).await;
                    if let Some(unstarted) = unstarted(&j2, start, told.as_ref()) {
                        let _one = d2.ticking.lock().await;
                        record_unstarted(&d2, &l2, vec![unstarted]).await;
                    }
                }
            });
            out.skipped.push(Skipped {
                job,
                occurrence,
                reason: "waiting",
                holder: None,
                message: Some(
                    "every worker slot is busy (max_parallel): it starts when one frees".into(),
                ),
            });
            continue;
        };
        let (d2, l2, j2) = (Arc::clone(d), Arc::clone(&loaded), job.clone());
        let h =
            tokio::spawn(async move { crate::worker::start(&d2, &l2, &j2, start, permit).await });
        pending.push((job, start, occurrence, h));
    }
    if !held.is_empty() {
        // Every start is on its way: the decision's alerts are posted
        // beside the runs, and no tick waits for a receiver.
        let (l, clock) = (Arc::clone(&loaded), Arc::clone(&d.clock));
        tokio::task::spawn_blocking(move || {
            baton_sched::ops::tick::post_held(&l.config, &clock, held);
        });
    }
    let mut failed = Vec::new();
    for (job, start, occurrence, h) in pending {
        let told = match h.await {
            Ok(t) => t,
            Err(e) => Some(Err(Unanswered::Task(e))),
        };
        match unstarted(&job, start, told.as_ref()) {
            Some(u) => failed.push((u, occurrence, told)),
            None => sort(&mut out, job, occurrence, told),
        }
    }
    if !failed.is_empty() {
        let recorded =
            record_unstarted(d, &loaded, failed.iter().map(|(u, ..)| u.clone()).collect()).await;
        for ((u, occurrence, told), missed) in failed.into_iter().zip(recorded) {
            if missed {
                out.missed.push(Missed {
                    job: u.job,
                    reason: MissReason::StartFailed,
                    first: occurrence.clone().unwrap_or_default(),
                    last: occurrence.unwrap_or_default(),
                    count: 1,
                    at_least: false,
                    holder: None,
                });
            } else {
                sort(&mut out, u.job, occurrence, told);
            }
        }
    }
    Some(Ok(out))
}

/// A scheduled occurrence whose worker could not be made.
#[derive(Debug, Clone)]
struct Unstarted {
    job: String,
    at: i64,
    /// What the system refused.
    why: String,
}

/// The occurrence `start` of `job`, when `told` says its worker could not
/// be made ([`Unanswered::never_started`]).
fn unstarted(
    job: &str,
    start: Start,
    told: Option<&Result<Told, Unanswered>>,
) -> Option<Unstarted> {
    match (start, told) {
        (Start::Scheduled(at), Some(Err(e))) if e.never_started() => Some(Unstarted {
            job: job.to_owned(),
            at,
            why: e.to_string(),
        }),
        _ => None,
    }
}

/// Records each of `unstarted` missed (`start-failed`) and alerts it, on
/// the ledger the ticks keep; for each, whether the miss is the ledger's
/// decision now. The caller holds the tick lock ([`Daemon::ticking`]).
async fn record_unstarted(
    d: &Arc<Daemon>,
    loaded: &Arc<Loaded>,
    unstarted: Vec<Unstarted>,
) -> Vec<bool> {
    let count = unstarted.len();
    let (l, clock, d2) = (Arc::clone(loaded), Arc::clone(&d.clock), Arc::clone(d));
    let recorded = tokio::task::spawn_blocking(move || {
        let mut kept = d2.take_ledger(&l.config);
        let mut missed = Vec::with_capacity(unstarted.len());
        let mut held = Vec::new();
        for u in unstarted {
            // Said by the alert (or, unrecorded, by the warning).
            let (r, ledger) = baton_sched::ops::unstarted::record(
                &l.config,
                &clock,
                (&u.job, u.at),
                &u.why,
                kept,
            );
            kept = ledger;
            missed.push(r.missed);
            held.extend(r.webhooks);
        }
        if let Some(ledger) = kept {
            d2.keep_ledger(&l.config, ledger);
        }
        (missed, held)
    })
    .await;
    let Ok((missed, held)) = recorded else {
        return vec![false; count];
    };
    if !held.is_empty() {
        let (l, clock) = (Arc::clone(loaded), Arc::clone(&d.clock));
        tokio::task::spawn_blocking(move || {
            baton_sched::ops::tick::post_held(&l.config, &clock, held);
        });
    }
    missed
}

/// Files one worker's answer under started, skipped or missed.
pub(crate) fn sort(
    out: &mut Ticked,
    job: String,
    occurrence: Option<String>,
    told: Option<Result<Told, Unanswered>>,
) {
    let skip = |reason, holder, message| Skipped {
        job: job.clone(),
        occurrence: occurrence.clone(),
        reason,
        holder,
        message,
    };
    match told {
        None => out.skipped.push(skip("in_flight", None, None)),
        Some(Err(e)) => out.skipped.push(skip("error", None, Some(e.to_string()))),
        Some(Ok(t)) => match t {
            Told::Started { run_id, fence } => out.started.push(Started {
                job,
                occurrence,
                run_id,
                fence,
            }),
            Told::Claimed => out.skipped.push(skip("claimed", None, None)),
            Told::Running { holder } => out.skipped.push(skip(
                "running",
                holder
                    .as_ref()
                    .map(|h| crate::holder::holder_json(h, "live")),
                None,
            )),
            Told::Queued => out.skipped.push(skip("queued", None, None)),
            Told::Coalesced => out.skipped.push(skip("coalesced", None, None)),
            Told::Decided => out.skipped.push(skip("decided", None, None)),
            Told::Error { message } => out.skipped.push(skip("error", None, Some(message))),
            Told::Missed { reason, holder, .. } => out.missed.push(Missed {
                job,
                reason,
                first: occurrence.clone().unwrap_or_default(),
                last: occurrence.unwrap_or_default(),
                count: 1,
                at_least: false,
                holder: holder.as_ref().map(|h| {
                    let verdict = match reason {
                        MissReason::Busy => "live",
                        other => other.as_str(),
                    };
                    crate::holder::holder_json(h, verdict)
                }),
            }),
        },
    }
}
