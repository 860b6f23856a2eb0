//! What a tick decides for one job before anything runs: it plans
//! ([`crate::engine::plan`]), records the plan's missed ranges in the ledger (one
//! alert per decision that recorded something, except for the deliberate
//! reasons, `paused` and `disabled`, which are only noted in the envelope
//! log), queues a catch-up batch, and says what to start.
//!
//! The ledger is the arbiter between ticks: a missed range or a batch is
//! written only if the job's mark is still below it, so when two ticks plan
//! the same outage one records it and the other, told the mark moved, plans
//! again from the new mark. This module never takes a lock and never runs
//! a step; when the ledger cannot be written it still says what to start
//! (the lock's claim keeps an occurrence from running twice), and leaves the
//! misses for a later tick to record. An occurrence a job's lock file says
//! started, but the ledger never heard of (its run could not record
//! itself), is never recorded missed.
//!
//! A first sighting more than `FUTURE_TOLERANCE` ahead of now is left as
//! it is (the clock that wrote it may be the honest one), and the tick
//! decides as if the job were seen just before its latest occurrence. A
//! mark more than
//! `FUTURE_TOLERANCE` ahead of now was raised by a process whose clock was
//! ahead: its decisions are taken back
//! ([`baton_store::ledger::Records::withdraw_ahead`], said by a `missed-withdrawn`
//! alert) and the present is decided again by this clock; what it ran
//! early stays decided, is never called missed, and never runs again. Only
//! when the ledger cannot take them back does the job keep its schedule
//! behind the mark, recording no misses (`behind_the_ledger`).

use std::collections::BTreeMap;

use baton_store::ledger::{JobState, Miss, Missed, Queued, Withdrawn};
use baton_store::words::{AlertKind, MissReason};
use jiff::Timestamp;

use crate::config::{Config, Job};
use crate::engine::alerts::{Alert, MissedInfo};
use crate::engine::plan::{self, Known, MissedRange, Pause};
use crate::engine::run::{Start, occurrence_text};
use crate::engine::surfaces::Surfaces;

/// How many times one tick plans a job again after another process moved
/// its mark.
const REPLANS: usize = 3;

/// The pauses of a job, as the plan sees them.
pub fn pauses(s: &mut Surfaces, job: &str) -> Vec<Pause> {
    s.ledger(|l| l.pauses(job, 100))
        .unwrap_or_default()
        .into_iter()
        .map(|p| Pause {
            since: p.since,
            end: match (p.until, p.ended) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
        })
        .collect()
}

/// What a tick decided for one job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decided {
    /// What to start, if anything.
    pub start: Option<Start>,
    /// Whether an alert was raised (missed occurrences recorded for a
    /// reason that is not deliberate).
    pub alerted: bool,
    /// The missed ranges this decision recorded, the deliberate ones
    /// included.
    pub missed: Vec<MissedRange>,
}

/// Decides `job`'s pending occurrences at `now`. `queued` says whether the
/// job has occurrences waiting.
pub fn job(
    s: &mut Surfaces,
    config: &Config,
    job: &Job,
    now: Timestamp,
    state: Option<&JobState>,
    queued: bool,
) -> Decided {
    let waiting = queued.then_some(Start::Queue);
    let mut alerted = false;
    let mut all_recorded: Vec<MissedRange> = Vec::new();
    let Some(newest) = job
        .when
        .value
        .schedule
        .latest_at_or_before(job.due_clock(now), &job.timezone.value.tz)
    else {
        return Decided {
            start: waiting,
            alerted,
            missed: Vec::new(),
        };
    };
    let latest = job.starts_at(newest).min(now);
    let mut state = state.cloned();
    if let Some(st) = state.as_ref().filter(|st| ahead_seen(st, now)) {
        s.note(&format!(
            "{}: first seen at {} by a clock ahead of this one ({now}); deciding as if seen \
             just before its latest occurrence",
            job.name, st.first_seen
        ));
    }
    // How old the latest occurrence may be and still run: the catch-up
    // window, or "now" for a job that never catches up.
    let mut window = jiff::SignedDuration::try_from(job.policy.catch_up_window.value)
        .unwrap_or(jiff::SignedDuration::MAX);
    if job.policy.catch_up.value == crate::config::CatchUp::None {
        window = window.min(crate::engine::plan::NOW_SLACK);
    }
    let sighted = |state: Option<JobState>| sighted(state, now, latest, window);
    state = sighted(state);
    let done = |start: Option<Start>, alerted: bool, missed: &mut Vec<MissedRange>| Decided {
        start,
        alerted,
        missed: std::mem::take(missed),
    };
    for _ in 0..REPLANS {
        let last_decided = state.as_ref().and_then(|st| st.last_decided);
        if let Some(ahead) = ahead_of(state.as_ref(), now) {
            // A clock ahead decided the present and the near future: take
            // its decisions back and decide them by this clock.
            let fresh = match s.ledger(|l| l.withdraw_ahead(&job.name, now, FUTURE_TOLERANCE)) {
                Some(Some(w)) => {
                    withdrawn(s, config, job, now, &w);
                    s.ledger(|l| l.job(&job.name))
                }
                // Nothing to take back here: another process did, or this
                // store never holds decisions ahead of its own clock.
                Some(None) => s.ledger(|l| l.job(&job.name)),
                None => None,
            };
            match fresh {
                Some(fresh) if ahead_of(fresh.as_ref(), now).is_none() => {
                    state = sighted(fresh);
                    continue;
                }
                _ => {
                    let seen = state.as_ref().map_or(now, |st| st.first_seen);
                    return Decided {
                        start: behind_the_ledger(s, config, job, now, seen, ahead).or(waiting),
                        alerted,
                        missed: all_recorded,
                    };
                }
            }
        }
        if last_decided.is_some_and(|d| d >= newest.as_second()) {
            return done(waiting, alerted, &mut all_recorded);
        }
        if !anything_to_decide(now, job.starts_at(newest), state.as_ref()) {
            return done(waiting, alerted, &mut all_recorded);
        }
        let pauses = pauses(s, &job.name);
        let mut known = Known {
            last_decided,
            first_seen: state.as_ref().map_or(Some(now), |st| Some(st.first_seen)),
            pauses: &pauses,
            claimed: &[],
        };
        let mut p = plan::plan(job, now, &known);
        let mut claimed = Vec::new();
        if !p.missed.is_empty() {
            // A claim the ledger never decided (its holder died between the
            // claim and the start record, or the ledger was lost since) is
            // never counted missed. Nor is an occurrence a clock ahead ran
            // early, above the mark.
            claimed.extend(claimed_unrecorded(config, job, last_decided, newest));
            claimed.extend(
                s.ledger(|l| l.decided_after(&job.name, last_decided, newest.as_second()))
                    .unwrap_or_default(),
            );
        }
        if !claimed.is_empty() {
            claimed.sort_unstable();
            claimed.dedup();
            known.claimed = &claimed;
            p = plan::plan(job, now, &known);
        }
        let mut recorded = Vec::new();
        let mut moved = false;
        for m in &p.missed {
            let miss = Miss {
                job: &job.name,
                reason: m.reason,
                first: m.first,
                last: m.last,
                count: m.count,
                at_least: m.at_least,
                detail: None,
                streak: m.reason.is_deliberate(),
            };
            match s.ledger(|l| l.miss(&miss, now)) {
                Some(Missed::Recorded) => recorded.push(m.clone()),
                Some(Missed::Extended) => {
                    if m.reason.is_deliberate() {
                        quietly(s, job, m);
                    }
                }
                Some(Missed::Moved) => {
                    moved = true;
                    break;
                }
                None => break, // Said once; a later tick records it.
            }
        }
        // A pause or `enabled = false` is a decision: its misses are noted,
        // never alerted.
        for m in recorded.iter().filter(|m| m.reason.is_deliberate()) {
            quietly(s, job, m);
        }
        let loud: Vec<MissedRange> = recorded
            .iter()
            .filter(|m| !m.reason.is_deliberate())
            .cloned()
            .collect();
        // One alert per stretch of recorded ranges between occurrences
        // that started: an alert's span never takes one in.
        for group in loud.chunk_by(|a, b| !claimed.iter().any(|&c| a.last < c && c < b.first)) {
            alert(s, config, job, group, &p.run, now);
            alerted = true;
        }
        all_recorded.extend(recorded);
        if moved {
            state = sighted(s.ledger(|l| l.job(&job.name)).flatten());
            continue;
        }
        return match p.run.as_slice() {
            [] => done(waiting, alerted, &mut all_recorded),
            // Occurrences already wait (behind a run that may since have
            // died): the new one takes its place behind them, as it would
            // behind a run in flight, so the queue runs oldest first. Run
            // ahead of them, its claim would pass theirs, and the holder
            // that drains them would find them claimed. So it is with an
            // overlap that waits, and with slots whatever the overlap (a
            // catch-up batch waits, and a free slot would start the new one
            // ahead of it): the free slot drains the queue instead.
            [at] if queued
                && (job.policy.overlap.value.waits() || job.policy.max_concurrent.value > 1) =>
            {
                // It joins what waits only when its overlap waits (`queue`:
                // one occurrence waits for all); behind a catch-up batch it
                // waits for its own run.
                let coalesce = job.policy.overlap.value.waits();
                match s.ledger(|l| l.enqueue(&job.name, &[*at], coalesce, now)) {
                    Some(Queued::Queued | Queued::Coalesced { .. }) => {
                        done(Some(Start::Queue), alerted, &mut all_recorded)
                    }
                    Some(Queued::Moved) => {
                        state = sighted(s.ledger(|l| l.job(&job.name)).flatten());
                        continue;
                    }
                    None => done(Some(Start::Scheduled(*at)), alerted, &mut all_recorded),
                }
            }
            [at] => done(Some(Start::Scheduled(*at)), alerted, &mut all_recorded),
            batch => match s.ledger(|l| l.enqueue(&job.name, batch, false, now)) {
                Some(Queued::Queued | Queued::Coalesced { .. }) => {
                    done(Some(Start::Queue), alerted, &mut all_recorded)
                }
                Some(Queued::Moved) => {
                    state = sighted(s.ledger(|l| l.job(&job.name)).flatten());
                    continue;
                }
                // The ledger cannot hold the batch: run the newest.
                None => done(
                    batch.last().map(|&at| Start::Scheduled(at)),
                    alerted,
                    &mut all_recorded,
                ),
            },
        };
    }
    done(waiting, alerted, &mut all_recorded)
}

/// How far ahead of now, in seconds, the ledger's mark may be before it is
/// taken for the work of a clock that was off.
const FUTURE_TOLERANCE: i64 = baton_lease::FUTURE_CLAIM_TOLERANCE;

/// The job's mark, when it is more than [`FUTURE_TOLERANCE`] ahead of `now`.
fn ahead_of(state: Option<&JobState>, now: Timestamp) -> Option<i64> {
    state
        .and_then(|st| st.last_decided)
        .filter(|&d| d > now.as_second() + FUTURE_TOLERANCE)
}

/// Says that the ledger took back what a clock ahead decided for `job`:
/// a `missed-withdrawn` alert per decision taken back, naming the span of
/// its ranges (the `missed` alert that recorded them no longer holds), or,
/// when only the mark and the queue were ahead, a `clock-skew` alert.
fn withdrawn(s: &mut Surfaces, config: &Config, job: &Job, now: Timestamp, w: &Withdrawn) {
    let ahead_by = jiff::SignedDuration::from_secs(w.was - now.as_second());
    let said = |taken: &str| {
        format!(
            "{}: the ledger had decided occurrences up to {}, {} ahead of this host's clock (a \
             process whose clock was ahead decided them, or this clock was set back); its \
             decisions are taken back ({taken}{}) and decided again by this clock; what ran \
             early stays recorded and does not run again",
            job.name,
            occurrence_text(Some(w.was)),
            crate::units::show_duration(ahead_by.unsigned_abs()),
            if w.unqueued > 0 {
                format!(", {} queued occurrence(s) dropped", w.unqueued)
            } else {
                String::new()
            },
        )
    };
    let label = |kind: AlertKind, message: String| {
        let mut a = Alert::scheduler(kind, now.to_string(), message);
        a.job = job.name.clone();
        a.lock = crate::engine::run::lock_label(config, job);
        a.name = job.lock.value.clone();
        a.occurrence = Some(occurrence_text(Some(w.was)));
        a
    };
    let mut ranges = w.ranges.clone();
    ranges.sort_by_key(|r| (r.decided, r.first));
    if ranges.is_empty() {
        s.alert(&label(
            AlertKind::ClockSkew,
            said("nothing it recorded missed"),
        ));
    }
    // One alert per decision taken back (the ranges one `missed` alert
    // recorded share its time): its span is that alert's.
    for decision in ranges.chunk_by(|a, b| a.decided == b.decided) {
        let mut by_reason = BTreeMap::new();
        for r in decision {
            *by_reason.entry(r.reason).or_insert(0) += r.count;
        }
        let count: u64 = decision.iter().map(|r| r.count).sum();
        let first = decision.iter().map(|r| r.first).min().unwrap_or_default();
        let last = decision.iter().map(|r| r.last).max().unwrap_or_default();
        let mut a = label(
            AlertKind::MissedWithdrawn,
            said(&format!(
                "{count} occurrence(s) it recorded missed, {} to {}, are not missed after all",
                occurrence_text(Some(first)),
                occurrence_text(Some(last)),
            )),
        );
        a.reason = Some(reasons(&by_reason));
        a.missed = Some(MissedInfo {
            count,
            at_least: decision.iter().any(|r| r.at_least),
            first: occurrence_text(Some(first)),
            last: occurrence_text(Some(last)),
            by_reason,
        });
        s.alert(&a);
    }
}

/// How often, at most, one job's `clock-skew` alert is raised.
const SKEW_ALERT_EVERY: jiff::SignedDuration = jiff::SignedDuration::from_hours(1);

/// The job's mark is `ahead` of this host's clock: a process whose clock was
/// ahead decided occurrences that have not come yet (or this clock was set
/// back). Those decisions are not trusted to supersede the present: the job
/// keeps its schedule. The newest occurrence now within the window runs
/// unless something decided it already (each occurrence still runs at most
/// once: the ledger's key and the lock's claim of the one that ran early
/// both stand); nothing is called missed, so the skewed process's bogus
/// misses are not joined by others. Said by an alert at most once an hour.
/// As everywhere, nothing before the job was first seen (`seen`) runs.
fn behind_the_ledger(
    s: &mut Surfaces,
    config: &Config,
    job: &Job,
    now: Timestamp,
    seen: Timestamp,
    ahead: i64,
) -> Option<Start> {
    let recent = s
        .ledger(|l| l.recent_alerts(Some(&job.name), 50))
        .unwrap_or_default();
    let said = recent.iter().any(|a| {
        a.kind == AlertKind::ClockSkew && now.duration_since(a.time).abs() < SKEW_ALERT_EVERY
    });
    let pauses = pauses(s, &job.name);
    let fresh = Known {
        last_decided: None,
        first_seen: Some(seen),
        pauses: &pauses,
        claimed: &[],
    };
    let due = plan::plan(job, now, &fresh)
        .run
        .last()
        .copied()
        .filter(|&at| {
            s.ledger(|l| l.decision(&job.name, at))
                .is_none_or(|d| d.is_none())
        });
    if !said {
        let ahead_by = jiff::SignedDuration::from_secs(ahead - now.as_second());
        let runs = due.map_or_else(
            || "nothing is due now".to_owned(),
            |at| format!("{} is due now", occurrence_text(Some(at))),
        );
        let message = format!(
            "{}: the ledger has decided occurrences up to {}, {} ahead of this host's clock (a \
             process whose clock was ahead decided them, or this clock was set back); they do not \
             stop the schedule: {runs}, and what ran early does not run again",
            job.name,
            occurrence_text(Some(ahead)),
            crate::units::show_duration(ahead_by.unsigned_abs()),
        );
        let mut a = Alert::scheduler(AlertKind::ClockSkew, now.to_string(), message);
        a.job = job.name.clone();
        a.lock = crate::engine::run::lock_label(config, job);
        a.name = job.lock.value.clone();
        a.occurrence = Some(occurrence_text(Some(ahead)));
        s.alert(&a);
    }
    due.map(Start::Scheduled)
}

/// The occurrence `job`'s lock file says the job last started, when the
/// ledger has decided nothing at or after it (`last_decided` is before it)
/// and it is not in the future. Only with lock files: a run goes on there
/// when the ledger cannot record it, so the claim is the record that it
/// ran. In the shared store no run starts unrecorded, so a claim the
/// ledger does not know never ran, and is not looked up.
fn claimed_unrecorded(
    config: &Config,
    job: &Job,
    last_decided: Option<i64>,
    newest: Timestamp,
) -> Option<i64> {
    let store = crate::store::open(config).ok()?;
    if store.shared() {
        return None;
    }
    // Each record alone: a guard that cannot be read never hides the
    // lock's own claims.
    let slots = crate::store::claim_of_slots(store.as_ref(), job)
        .ok()
        .flatten();
    let guard = crate::store::claim_in_guard(store.as_ref(), job)
        .ok()
        .flatten();
    let claim = slots.max(guard)?;
    (last_decided.is_none_or(|d| claim > d) && claim <= newest.as_second()).then_some(claim)
}

/// Whether the job's first sighting is more than `FUTURE_TOLERANCE` ahead
/// of `now`.
fn ahead_seen(st: &JobState, now: Timestamp) -> bool {
    st.first_seen.as_second() > now.as_second() + FUTURE_TOLERANCE
}

/// The job's state as this tick decides by it. A sighting ahead of this
/// clock means a clock ahead saw the job first, or this one is behind, and
/// nothing here can tell which. Waiting for the sighting would silence the
/// job until then; writing this clock's now over it would, when this clock
/// is the one behind, hand the honest clock an hour the job never had, to
/// count as missed. So the ledger keeps it, and this tick decides as if
/// the job were seen at `latest` (its latest occurrence's start, or now):
/// that occurrence runs, nothing earlier is missed. One older than
/// `window` (the catch-up window, or a minute with `catch_up = "none"`)
/// could not run, and is before the sighting the ledger keeps: it is
/// neither run nor missed (the job is taken as seen now).
fn sighted(
    state: Option<JobState>,
    now: Timestamp,
    latest: Timestamp,
    window: jiff::SignedDuration,
) -> Option<JobState> {
    state.map(|mut st| {
        if ahead_seen(&st, now) {
            st.first_seen = if now.duration_since(latest) > window {
                now
            } else {
                latest
            };
        }
        st
    })
}

/// Whether the newest occurrence, which `starts` then, can run or be
/// missed: only one starting at or after the job was first seen can. When it cannot, no older one can
/// either, and the plan is skipped without reading the ledger.
fn anything_to_decide(now: Timestamp, starts: Timestamp, state: Option<&JobState>) -> bool {
    starts >= state.map_or(now, |st| st.first_seen)
}

/// Notes a deliberate miss (`paused`, `disabled`) in the envelope log: it
/// is recorded in the ledger and shown by `status`, and alerts nobody.
fn quietly(s: &mut Surfaces, job: &Job, m: &MissedRange) {
    let n = if m.at_least {
        format!("at least {}", m.count)
    } else {
        m.count.to_string()
    };
    let span = if m.first == m.last {
        occurrence_text(Some(m.first))
    } else {
        format!(
            "{} to {}",
            occurrence_text(Some(m.first)),
            occurrence_text(Some(m.last))
        )
    };
    s.note(&format!(
        "{}: {n} occurrence(s) not run {} ({span}), recorded as {}; no alert: it is deliberate",
        job.name,
        plan::describe(m.reason),
        m.reason.as_str()
    ));
}

/// The reasons of an alert's ranges, as its `reason` lists them: their
/// words, in order, comma-separated.
fn reasons(by_reason: &BTreeMap<MissReason, u64>) -> String {
    let words: Vec<&str> = by_reason.keys().map(|r| r.as_str()).collect();
    words.join(",")
}

/// One alert for the ranges one decision recorded.
fn alert(
    s: &mut Surfaces,
    config: &Config,
    job: &Job,
    ranges: &[MissedRange],
    run: &[i64],
    now: Timestamp,
) {
    let count: u64 = ranges.iter().map(|r| r.count).sum();
    let at_least = ranges.iter().any(|r| r.at_least);
    let mut by_reason = BTreeMap::new();
    for r in ranges {
        *by_reason.entry(r.reason).or_insert(0) += r.count;
    }
    let first = ranges.iter().map(|r| r.first).min().unwrap_or_default();
    let last = ranges.iter().map(|r| r.last).max().unwrap_or_default();
    let parts: Vec<String> = ranges
        .iter()
        .map(|r| {
            let n = if r.at_least {
                format!("at least {}", r.count)
            } else {
                r.count.to_string()
            };
            if r.first == r.last {
                format!(
                    "{n} {} ({})",
                    plan::describe(r.reason),
                    occurrence_text(Some(r.first))
                )
            } else {
                format!(
                    "{n} {} ({} to {})",
                    plan::describe(r.reason),
                    occurrence_text(Some(r.first)),
                    occurrence_text(Some(r.last))
                )
            }
        })
        .collect();
    let runs = match run {
        [] => String::new(),
        [one] => format!("; {} is due now", occurrence_text(Some(*one))),
        many => format!("; {} are due now, oldest first", many.len()),
    };
    let total = if at_least {
        format!("at least {count}")
    } else {
        count.to_string()
    };
    let lock = crate::engine::run::lock_label(config, job);
    let alert = Alert {
        kind: AlertKind::Missed,
        job: job.name.clone(),
        occurrence: Some(occurrence_text(Some(last))),
        run_id: None,
        lock,
        name: job.lock.value.clone(),
        holder: None,
        fence: None,
        time: now.to_string(),
        step: None,
        message: format!(
            "{}: {total} occurrence(s) missed: {}{runs}",
            job.name,
            parts.join(", ")
        ),
        status: None,
        reason: Some(reasons(&by_reason)),
        missed: Some(MissedInfo {
            count,
            at_least,
            first: occurrence_text(Some(first)),
            last: occurrence_text(Some(last)),
            by_reason,
        }),
    };
    s.alert(&alert);
}
