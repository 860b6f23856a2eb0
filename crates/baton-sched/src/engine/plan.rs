//! The plan: what a tick does with a job's pending occurrences.
//!
//! Given a job, now, and what the ledger knows (the last occurrence decided,
//! when the job was first seen, its pauses), [`plan`] says which occurrences
//! run, oldest first, and which are missed and why, as ranges. It is a pure
//! function: it reads no clock, no file and no ledger, so every policy is
//! tested with any "now". It never decides an occurrence at or before the
//! last one decided, never runs nor calls missed one before the job was
//! first seen (a job added to the configuration, or a fresh state
//! directory, waits for its first occurrence: `backfill` is for the past),
//! never calls one that started (the lock's claim, or a run the ledger
//! holds above its mark) missed,
//! and puts every run after every missed range, so that recording the misses
//! first and the runs after them keeps the ledger's mark moving forward.
//! Counting a long outage walks at most [`WALK_LIMIT`] occurrences; past
//! that, a range's count is a lower bound.

use baton_store::words::MissReason;
use jiff::{SignedDuration, Timestamp};

use crate::config::{CatchUp, Job};

/// The most occurrences one plan walks.
pub const WALK_LIMIT: u64 = 100_000;

/// How old an occurrence may be and still count as "now" for
/// `catch_up = "none"`.
pub const NOW_SLACK: SignedDuration = SignedDuration::from_secs(60);

/// A planner's reason in words, for an alert: "older than the catch-up
/// window". The planner misses occurrences for the first six reasons of
/// [`MissReason`]; any other is said by its word.
pub fn describe(reason: MissReason) -> &'static str {
    match reason {
        MissReason::OutsideWindow => "older than the catch-up window",
        MissReason::Superseded => "superseded by a later occurrence",
        MissReason::Late => "late (catch_up = \"none\" runs only what is due now)",
        MissReason::CatchUpMax => "beyond catch_up_max",
        MissReason::Paused => "while the job was paused",
        MissReason::Disabled => "while the job was disabled",
        other => other.as_str(),
    }
}

/// Consecutive occurrences missed for one reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissedRange {
    /// Why.
    pub reason: MissReason,
    /// The first, in seconds since 1970.
    pub first: i64,
    /// The last.
    pub last: i64,
    /// How many.
    pub count: u64,
    /// Whether `count` is a lower bound (the walk was cut short).
    pub at_least: bool,
}

/// What to do with a job's pending occurrences.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Missed, oldest first.
    pub missed: Vec<MissedRange>,
    /// To run, oldest first, each after every missed range.
    pub run: Vec<i64>,
}

impl Plan {
    /// Nothing to record and nothing to run.
    pub fn is_empty(&self) -> bool {
        self.missed.is_empty() && self.run.is_empty()
    }
}

/// A pause as the plan sees it: from `since`, until `end` (open if `None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pause {
    /// When it began.
    pub since: Timestamp,
    /// When it ended or ends.
    pub end: Option<Timestamp>,
}

impl Pause {
    fn covers(&self, t: Timestamp) -> bool {
        self.since <= t && self.end.is_none_or(|e| t < e)
    }
}

/// What the ledger knows of a job.
#[derive(Debug, Clone, Default)]
pub struct Known<'a> {
    /// The last occurrence decided.
    pub last_decided: Option<i64>,
    /// When the job was first seen; `None` for a job the ledger never saw
    /// (it is seen now). Nothing before it runs or is missed.
    pub first_seen: Option<Timestamp>,
    /// Its pauses, in any order.
    pub pauses: &'a [Pause],
    /// Occurrences after the last decided one that started all the same:
    /// the one the job's lock says started (its claim) although the ledger
    /// has no decision for it (the run could not record itself), and those
    /// a process whose clock was ahead ran early, whose decisions the ledger
    /// keeps above its mark. They ran, so they are never called missed.
    /// They may still be planned to run, where the ledger's decision and
    /// the lock's claim refuse them again. Sorted.
    pub claimed: &'a [i64],
}

/// The plan for `job` at `now`. A job with jitter is planned on its
/// [`Job::due_clock`]: every instant compared with its occurrences (now,
/// when it was first seen, its pauses) moved back by its offset, so that an
/// occurrence is due, late, paused or before the job was seen exactly when
/// the instant it starts ([`Job::starts_at`]) is.
pub fn plan(job: &Job, now: Timestamp, known: &Known<'_>) -> Plan {
    if job.start_offset().is_zero() {
        return plan_due(job, now, known);
    }
    let back = |t: Timestamp| job.due_clock(t);
    let pauses: Vec<Pause> = known
        .pauses
        .iter()
        .map(|p| Pause {
            since: back(p.since),
            end: p.end.map(back),
        })
        .collect();
    let shifted = Known {
        first_seen: Some(back(known.first_seen.unwrap_or(now))),
        pauses: &pauses,
        ..*known
    };
    plan_due(job, back(now), &shifted)
}

/// The plan for `job` at `now`, on the clock its occurrences are due by.
fn plan_due(job: &Job, now: Timestamp, known: &Known<'_>) -> Plan {
    let schedule = &job.when.value.schedule;
    let tz = &job.timezone.value.tz;
    let Some(newest) = schedule.latest_at_or_before(now, tz) else {
        return Plan::default();
    };
    if known.last_decided.is_some_and(|d| d >= newest.as_second()) {
        return Plan::default(); // The common case: nothing new.
    }
    let policy = &job.policy;
    let catch_up = policy.catch_up.value;
    let window =
        SignedDuration::try_from(policy.catch_up_window.value).unwrap_or(SignedDuration::MAX);
    let window_start = now.checked_sub(window).unwrap_or(Timestamp::MIN);
    let second = |t: i64| Timestamp::from_second(t).unwrap_or(Timestamp::MIN);
    // Occurrences after `miss_floor` may run or be called missed: none
    // before the job was first seen, none at or before `last_decided`.
    let first_seen = known.first_seen.unwrap_or(now);
    let seen_floor = first_seen.as_second() - i64::from(first_seen.subsec_nanosecond() == 0);
    let miss_floor = known.last_decided.map_or(seen_floor, |d| d.max(seen_floor));
    let missable = |t: Timestamp| t.as_second() > miss_floor;
    let paused = |t: Timestamp| known.pauses.iter().any(|p| p.covers(t));
    let blocked = if !job.enabled.value {
        Some(MissReason::Disabled)
    } else if paused(now) {
        Some(MissReason::Paused)
    } else {
        None
    };

    let mut out = Ranges::new(known.claimed);
    // Before the window: missed, never run.
    if second(miss_floor) < window_start {
        walk(
            schedule,
            tz,
            second(miss_floor),
            window_start,
            &mut out,
            |t| {
                blocked.unwrap_or(if paused(t) {
                    MissReason::Paused
                } else {
                    MissReason::OutsideWindow
                })
            },
        );
    }
    // In the window: the newest `keep` are candidates, the older ones are
    // counted. The window starts at `window_start` itself, which `now` can
    // put mid-second: the occurrences strictly after the instant before it
    // are exactly those the walk above left out. (One whole second before
    // it would take the occurrence in that second a second time, as a
    // candidate after the walk had called it missed.)
    let before_window = just_before(window_start);
    let from = known
        .last_decided
        .map_or(before_window, |d| second(d).max(before_window));
    let keep = match catch_up {
        CatchUp::All => usize::try_from(policy.catch_up_max.value).unwrap_or(usize::MAX),
        CatchUp::Latest | CatchUp::None => 1,
    };
    let mut candidates = Candidates::new(keep);
    let mut walked = 0u64;
    for t in schedule.iter_after(from, tz).take_while(|&t| t <= now) {
        walked += 1;
        if walked > WALK_LIMIT {
            candidates.cut_short(schedule, tz, t, newest);
            break;
        }
        candidates.push(t);
    }
    let (older, kept) = candidates.finish();
    let mut run = Vec::new();
    if let Some(reason) = blocked {
        for (t, n, at_least) in older
            .iter()
            .copied()
            .chain(kept.iter().map(|&t| (t, 1, false)))
        {
            if missable(t) {
                out.add(reason, t.as_second(), n, at_least);
            }
        }
        return out.into_plan(run);
    }
    let older_reason = match catch_up {
        CatchUp::Latest => MissReason::Superseded,
        CatchUp::None => MissReason::Late,
        CatchUp::All => MissReason::CatchUpMax,
    };
    for &(t, n, at_least) in &older {
        if missable(t) {
            let reason = if paused(t) {
                MissReason::Paused
            } else {
                older_reason
            };
            out.add(reason, t.as_second(), n, at_least);
        }
    }
    for &t in &kept {
        if paused(t) {
            // Runs come after every miss: the ones before a paused
            // occurrence are superseded by it.
            for r in run.drain(..) {
                out.add(MissReason::Superseded, r, 1, false);
            }
            if missable(t) {
                out.add(MissReason::Paused, t.as_second(), 1, false);
            }
        } else if catch_up == CatchUp::None && now.duration_since(t) > NOW_SLACK {
            if missable(t) {
                out.add(MissReason::Late, t.as_second(), 1, false);
            }
        } else if missable(t) {
            run.push(t.as_second());
        }
    }
    out.into_plan(run)
}

/// The last instant before `t`: an occurrence is strictly after it exactly
/// when it is at or after `t`, and at or before it exactly when it is
/// before `t`, whatever fraction of a second `t` carries.
fn just_before(t: Timestamp) -> Timestamp {
    t.checked_sub(SignedDuration::from_nanos(1))
        .unwrap_or(Timestamp::MIN)
}

/// Walks the occurrences in `[from, to)`, classifying each; at most
/// [`WALK_LIMIT`], the rest counted as one lower bound.
fn walk(
    schedule: &baton_cron::Schedule,
    tz: &jiff::tz::TimeZone,
    from: Timestamp,
    to: Timestamp,
    out: &mut Ranges<'_>,
    reason: impl Fn(Timestamp) -> MissReason,
) {
    let mut n = 0u64;
    for t in schedule.iter_after(from, tz).take_while(|&t| t < to) {
        n += 1;
        if n > WALK_LIMIT {
            // The last one before `to` closes the range: counted as at least.
            let last = schedule
                .latest_at_or_before(just_before(to), tz)
                .unwrap_or(t);
            out.add(reason(last), last.as_second(), 1, true);
            return;
        }
        out.add(reason(t), t.as_second(), 1, false);
    }
}

/// The newest `keep` occurrences seen, and the older ones as counted runs.
struct Candidates {
    keep: usize,
    newest: std::collections::VecDeque<Timestamp>,
    older: Vec<(Timestamp, u64, bool)>,
}

impl Candidates {
    fn new(keep: usize) -> Self {
        Self {
            keep: keep.max(1),
            newest: std::collections::VecDeque::new(),
            older: Vec::new(),
        }
    }

    fn push(&mut self, t: Timestamp) {
        self.newest.push_back(t);
        if self.newest.len() > self.keep
            && let Some(old) = self.newest.pop_front()
        {
            self.older.push((old, 1, false));
        }
    }

    /// The walk stopped at `at` before reaching `newest`: keep `newest` (and
    /// nothing between, which is counted as one lower bound).
    fn cut_short(
        &mut self,
        schedule: &baton_cron::Schedule,
        tz: &jiff::tz::TimeZone,
        at: Timestamp,
        newest: Timestamp,
    ) {
        for t in self.newest.drain(..) {
            self.older.push((t, 1, false));
        }
        let before = schedule
            .latest_at_or_before(
                newest
                    .checked_sub(SignedDuration::from_secs(1))
                    .unwrap_or(newest),
                tz,
            )
            .filter(|&b| b >= at);
        if let Some(b) = before {
            self.older.push((b, 1, true));
        }
        self.newest.push_back(newest);
    }

    fn finish(self) -> (Vec<(Timestamp, u64, bool)>, Vec<Timestamp>) {
        (self.older, self.newest.into())
    }
}

/// Missed occurrences merged into ranges of one reason, in time order,
/// leaving out those that started ([`Known::claimed`]): a range stops
/// before one and the next range starts after it.
#[derive(Default)]
struct Ranges<'a> {
    ranges: Vec<MissedRange>,
    claimed: &'a [i64],
    split: bool,
}

impl<'a> Ranges<'a> {
    fn new(claimed: &'a [i64]) -> Self {
        Self {
            claimed,
            ..Self::default()
        }
    }

    /// Adds `n` occurrences ending at `last` (`n > 1` only for a lower-bound
    /// jump, whose first is unknown: it is then the range's start).
    fn add(&mut self, reason: MissReason, last: i64, n: u64, at_least: bool) {
        if n == 1 && self.claimed.binary_search(&last).is_ok() {
            self.split = true;
            return;
        }
        let split = std::mem::take(&mut self.split);
        match self.ranges.last_mut() {
            Some(r) if r.reason == reason && r.last < last && !split => {
                r.last = last;
                r.count += n;
                r.at_least |= at_least;
            }
            _ => self.ranges.push(MissedRange {
                reason,
                first: last,
                last,
                count: n,
                at_least,
            }),
        }
    }

    fn into_plan(mut self, run: Vec<i64>) -> Plan {
        self.ranges.sort_by_key(|r| r.first);
        Plan {
            missed: self.ranges,
            run,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Overrides, parse};

    fn job(extra: &str) -> Job {
        let text = format!(
            "[scheduler]\nstate_dir = \"/tmp/x\"\ntimezone = \"UTC\"\n\
             [jobs.j]\nrun = \"true\"\n{extra}\n"
        );
        let c = parse(
            &text,
            std::path::Path::new("/tmp/baton.toml"),
            &Overrides::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        (*c.jobs["j"]).clone()
    }

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn sec(s: &str) -> i64 {
        t(s).as_second()
    }

    fn known(last: Option<&str>, seen: &str) -> Known<'static> {
        Known {
            last_decided: last.map(sec),
            first_seen: Some(t(seen)),
            pauses: &[],
            claimed: &[],
        }
    }

    /// `HH:MM` on 2026-11-29 UTC, the day most tests plan on.
    fn at(hm: &str) -> i64 {
        sec(&format!("2026-11-29T{hm}:00Z"))
    }

    /// An exact count of occurrences between two times of [`at`].
    fn range(reason: MissReason, first: &str, last: &str, count: u64) -> MissedRange {
        MissedRange {
            reason,
            first: at(first),
            last: at(last),
            count,
            at_least: false,
        }
    }

    const HOURLY: &str = "schedule = \"0 * * * *\"";

    #[test]
    fn with_jitter_an_occurrence_is_due_at_its_start_and_keeps_its_instant() {
        let j = job(&format!("{HOURLY}\njitter = \"1h\""));
        let offset = SignedDuration::try_from(j.start_offset()).unwrap();
        assert!(!offset.is_zero(), "this name's offset in an hour is not 0");
        let ten = t("2026-11-29T10:00:00Z");
        let starts = ten.checked_add(offset).unwrap();
        let k = known(Some("2026-11-29T09:00:00Z"), "2026-11-01T00:00:00Z");
        let before = starts.checked_sub(SignedDuration::from_secs(1)).unwrap();
        assert!(
            plan(&j, before, &k).is_empty(),
            "not due a second before its start"
        );
        assert_eq!(
            plan(&j, starts, &k).run,
            vec![at("10:00")],
            "due at its start"
        );
        // Seen after the occurrence but before its start: it is the job's.
        let seen = ten.checked_add(SignedDuration::from_secs(1)).unwrap();
        let fresh = Known {
            last_decided: None,
            first_seen: Some(seen.min(before)),
            pauses: &[],
            claimed: &[],
        };
        assert_eq!(plan(&j, starts, &fresh).run, vec![at("10:00")]);
        // A pause over its start, not its instant, pauses it.
        let pauses = [Pause {
            since: before,
            end: Some(starts.checked_add(SignedDuration::from_secs(60)).unwrap()),
        }];
        let paused = Known {
            pauses: &pauses,
            ..k.clone()
        };
        let p = plan(&j, starts, &paused);
        assert!(p.run.is_empty(), "{p:?}");
        assert_eq!(p.missed[0].reason, MissReason::Paused);
        assert_eq!(p.missed[0].first, at("10:00"));
    }

    #[test]
    fn nothing_new_is_nothing_to_do() {
        let j = job(HOURLY);
        let k = known(Some("2026-11-29T10:00:00Z"), "2026-11-01T00:00:00Z");
        assert!(plan(&j, t("2026-11-29T10:59:59Z"), &k).is_empty());
    }

    #[test]
    fn the_due_occurrence_runs() {
        let j = job(HOURLY);
        let k = known(Some("2026-11-29T09:00:00Z"), "2026-11-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T10:00:30Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        assert!(p.missed.is_empty());
    }

    #[test]
    fn latest_after_downtime_runs_the_newest_and_misses_the_rest() {
        // Down from 03:30 to 10:20, window 2h: 04:00..08:00 outside the
        // window, 09:00 superseded, 10:00 runs.
        let j = job(&format!("{HOURLY}\ncatch_up_window = \"2h\""));
        let k = known(Some("2026-11-29T03:00:00Z"), "2026-11-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        assert_eq!(
            p.missed,
            vec![
                range(MissReason::OutsideWindow, "04:00", "08:00", 5),
                range(MissReason::Superseded, "09:00", "09:00", 1),
            ]
        );
    }

    #[test]
    fn none_runs_only_what_is_due_now() {
        let j = job(&format!(
            "{HOURLY}\ncatch_up = \"none\"\ncatch_up_window = \"3h\""
        ));
        let k = known(Some("2026-11-29T07:00:00Z"), "2026-11-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T10:00:40Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        assert_eq!(p.missed, vec![range(MissReason::Late, "08:00", "09:00", 2)]);
        // Two minutes late: nothing runs.
        let p = plan(&j, t("2026-11-29T10:02:00Z"), &k);
        assert!(p.run.is_empty());
        assert_eq!(p.missed, vec![range(MissReason::Late, "08:00", "10:00", 3)]);
    }

    #[test]
    fn all_runs_every_one_in_the_window_oldest_first_up_to_the_max() {
        let j = job(&format!(
            "{HOURLY}\ncatch_up = \"all\"\ncatch_up_window = \"4h\"\ncatch_up_max = 3"
        ));
        let k = known(Some("2026-11-29T03:00:00Z"), "2026-11-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        // Window from 06:20: 07..10 in it, the oldest beyond the max.
        assert_eq!(p.run, vec![at("08:00"), at("09:00"), at("10:00")]);
        assert_eq!(
            p.missed,
            vec![
                range(MissReason::OutsideWindow, "04:00", "06:00", 3),
                range(MissReason::CatchUpMax, "07:00", "07:00", 1),
            ]
        );
        assert!(p.missed.iter().all(|m| m.last < p.run[0]));
    }

    #[test]
    fn an_occurrence_in_the_second_before_the_window_is_outside_it_and_counted_once() {
        // Now 10:20:00.3 with a 4h window: the window opens at 06:20:00.3,
        // so 06:20 lies just before it. It is missed as outside the window,
        // and never also a candidate to run or to miss again.
        let j =
            job("every = \"1m\"\ncatch_up = \"all\"\ncatch_up_window = \"4h\"\ncatch_up_max = 300");
        let k = known(Some("2026-11-29T06:00:00Z"), "2026-11-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T10:20:00.3Z"), &k);
        assert_eq!(
            p.missed,
            vec![range(MissReason::OutsideWindow, "06:01", "06:20", 20)]
        );
        assert_eq!(p.run.first(), Some(&at("06:21")));
        assert_eq!(p.run.len(), 240);
        // On a whole second the window opens on 06:20, which is in it.
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert_eq!(p.missed[0].last, at("06:19"));
        assert_eq!(p.run.first(), Some(&at("06:20")));
    }

    #[test]
    fn nothing_before_the_job_was_first_seen_runs_or_is_missed() {
        // A fresh ledger: first seen now; the occurrence of 10:00, in the
        // window, is before it: neither run nor missed.
        let j = job(&format!("{HOURLY}\ncatch_up = \"all\""));
        let k = known(None, "2026-11-29T10:20:00Z");
        assert!(plan(&j, t("2026-11-29T10:20:00Z"), &k).is_empty());
        // Seen at 10:00:00.4, in the occurrence's second: it is before the
        // sighting, and stays so at later ticks.
        let k = known(None, "2026-11-29T10:00:00.4Z");
        assert!(plan(&j, t("2026-11-29T10:00:00.4Z"), &k).is_empty());
        assert!(plan(&j, t("2026-11-29T10:59:00Z"), &k).is_empty());
        // Seen on the second itself: that occurrence is its first.
        let k = known(None, "2026-11-29T10:00:00Z");
        let p = plan(&j, t("2026-11-29T10:00:00.2Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        // The first occurrence after the sighting runs when it comes.
        let k = known(None, "2026-11-29T10:20:00Z");
        let p = plan(&j, t("2026-11-29T11:00:05Z"), &k);
        assert_eq!(p.run, vec![at("11:00")]);
        assert!(p.missed.is_empty());
        // Seen at 05:30, never decided, back at 10:20 with a 1h window:
        // 06:00..09:00 missed, not 05:00.
        let j = job(HOURLY);
        let k = known(None, "2026-11-29T05:30:00Z");
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        assert_eq!(
            p.missed,
            vec![range(MissReason::OutsideWindow, "06:00", "09:00", 4)]
        );
    }

    #[test]
    fn a_paused_job_misses_as_paused_and_a_past_pause_still_counts() {
        let j = job(&format!("{HOURLY}\ncatch_up_window = \"3h\""));
        let pauses = [Pause {
            since: t("2026-11-29T05:30:00Z"),
            end: None,
        }];
        let k = Known {
            last_decided: Some(at("05:00")),
            first_seen: Some(t("2026-11-01T00:00:00Z")),
            pauses: &pauses,
            claimed: &[],
        };
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert!(p.run.is_empty());
        assert_eq!(
            p.missed,
            vec![range(MissReason::Paused, "06:00", "10:00", 5)]
        );
        // Resumed at 08:30: 06..08 paused, 09 superseded, 10 runs.
        let pauses = [Pause {
            since: t("2026-11-29T05:30:00Z"),
            end: Some(t("2026-11-29T08:30:00Z")),
        }];
        let k = Known {
            pauses: &pauses,
            ..k
        };
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        assert_eq!(
            p.missed,
            vec![
                range(MissReason::Paused, "06:00", "08:00", 3),
                range(MissReason::Superseded, "09:00", "09:00", 1),
            ]
        );
    }

    #[test]
    fn the_occurrence_the_lock_claims_is_never_missed() {
        // 06:00 outside the window; 07..09 superseded; 10:00 runs. The lock
        // says 08:00 started (its run could not record itself): the ranges
        // go around it.
        let j = job(&format!("{HOURLY}\ncatch_up_window = \"4h\""));
        let k = Known {
            claimed: &[at("08:00")],
            ..known(Some("2026-11-29T05:00:00Z"), "2026-11-01T00:00:00Z")
        };
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert_eq!(p.run, vec![at("10:00")]);
        assert_eq!(
            p.missed,
            vec![
                range(MissReason::OutsideWindow, "06:00", "06:00", 1),
                range(MissReason::Superseded, "07:00", "07:00", 1),
                range(MissReason::Superseded, "09:00", "09:00", 1),
            ]
        );
        // The claimed one, newest now, still plans to run: the lock refuses it.
        let p = plan(&j, t("2026-11-29T08:20:00Z"), &k);
        assert_eq!(p.run, vec![at("08:00")]);
        assert!(p.missed.iter().all(|m| m.last < at("08:00")));
    }

    #[test]
    fn a_disabled_job_misses_everything_as_disabled() {
        let j = job(&format!("{HOURLY}\nenabled = false"));
        let k = known(Some("2026-11-29T08:00:00Z"), "2026-11-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T10:20:00Z"), &k);
        assert!(p.run.is_empty());
        assert_eq!(
            p.missed,
            vec![range(MissReason::Disabled, "09:00", "10:00", 2)]
        );
    }

    #[test]
    fn a_year_of_a_per_second_schedule_is_counted_without_walking_it() {
        let j = job("every = \"1s\"");
        let k = known(Some("2025-11-29T00:00:00Z"), "2025-01-01T00:00:00Z");
        let p = plan(&j, t("2026-11-29T00:00:00Z"), &k);
        assert_eq!(p.run, vec![at("00:00")]);
        let total: u64 = p.missed.iter().map(|m| m.count).sum();
        assert!(p.missed.iter().any(|m| m.at_least));
        assert!(total > WALK_LIMIT, "{total}");
        assert!(p.missed.iter().all(|m| m.last < p.run[0]));
    }
}

#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::config::{Overrides, parse};

    const SCHEDULES: &[&str] = &[
        "schedule = \"0 * * * *\"",
        "schedule = \"*/15 * * * *\"",
        "schedule = \"30 2 * * *\"",
        "every = \"7m\"",
        "every = \"1s\"",
    ];
    const ZONES: &[&str] = &["UTC", "America/New_York", "Australia/Lord_Howe"];

    fn job(schedule: &str, zone: &str, policy: &str, window: u32, max: u32, enabled: bool) -> Job {
        let text = format!(
            "[scheduler]\nstate_dir = \"/tmp/x\"\ntimezone = \"{zone}\"\n\
             [jobs.j]\nrun = \"true\"\n{schedule}\ncatch_up = \"{policy}\"\n\
             catch_up_window = \"{window}s\"\ncatch_up_max = {max}\nenabled = {enabled}\n"
        );
        parse(
            &text,
            std::path::Path::new("/tmp/baton.toml"),
            &Overrides::default(),
        )
        .unwrap()
        .jobs
        .remove("j")
        .map(|j| *j)
        .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        #[test]
        fn plans_keep_their_invariants(
            s in 0..SCHEDULES.len(),
            z in 0..ZONES.len(),
            policy in prop_oneof![Just("latest"), Just("none"), Just("all")],
            window in 1u32..200_000,
            max in 1u32..20,
            enabled in any::<bool>(),
            // now in 2026, often mid-second as a real clock reads it; last
            // decided and first seen up to 3 days back.
            now in 1_767_225_600i64..1_798_761_600,
            nanos in prop_oneof![Just(0i32), 0i32..1_000_000_000],
            back in proptest::option::of(0i64..260_000),
            seen_back in 0i64..260_000,
            pause in proptest::option::of((0i64..260_000, proptest::option::of(0i64..260_000))),
        ) {
            let j = job(SCHEDULES[s], ZONES[z], policy, window, max, enabled);
            let now_t = Timestamp::new(now, nanos).unwrap();
            let last = back.map(|b| now - b);
            let seen = Timestamp::from_second(now - seen_back).unwrap();
            let pauses: Vec<Pause> = pause
                .map(|(a, len)| Pause {
                    since: Timestamp::from_second(now - a).unwrap(),
                    end: len.map(|l| Timestamp::from_second(now - a + l).unwrap()),
                })
                .into_iter()
                .collect();
            let k = Known { last_decided: last, first_seen: Some(seen), pauses: &pauses, claimed: &[] };
            let p = plan(&j, now_t, &k);
            let miss_floor = last.map_or(seen.as_second() - 1, |d| d.max(seen.as_second() - 1));
            // Runs: ascending, undecided, due, at most the max, none when blocked.
            prop_assert!(p.run.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(p.run.iter().all(|&r| last.is_none_or(|d| r > d) && r <= now));
            // Nothing before the job was first seen runs.
            prop_assert!(p.run.iter().all(|&r| r > miss_floor), "{:?} floor {miss_floor}", p.run);
            prop_assert!(p.run.len() <= usize::try_from(max).unwrap().max(1));
            if !enabled {
                prop_assert!(p.run.is_empty());
            }
            // Misses: ascending, disjoint, after the floor, before every run.
            for m in &p.missed {
                prop_assert!(m.first <= m.last && m.count >= 1);
                prop_assert!(m.first > miss_floor, "{m:?} floor {miss_floor}");
                prop_assert!(m.last <= now);
            }
            prop_assert!(p.missed.windows(2).all(|w| w[0].last < w[1].first));
            if let (Some(m), Some(&r)) = (p.missed.last(), p.run.first()) {
                prop_assert!(m.last < r);
            }
            // Every run and every missed endpoint is an occurrence.
            let sched = &j.when.value.schedule;
            let tz = &j.timezone.value.tz;
            for x in p.run.iter().chain(p.missed.iter().flat_map(|m| [&m.first, &m.last])) {
                let at = Timestamp::from_second(*x).unwrap();
                prop_assert_eq!(sched.latest_at_or_before(at, tz), Some(at));
            }
            // An occurrence the lock claims is in no missed range.
            if let Some(x) = p.missed.first().map(|m| m.first) {
                let around = plan(&j, now_t, &Known { claimed: &[x], ..k.clone() });
                prop_assert!(
                    around.missed.iter().all(|m| !(m.first <= x && x <= m.last)),
                    "{x} in {:?}", around.missed
                );
            }
            // Planning again after recording it finds nothing older to do.
            let mark = p.run.iter().chain(p.missed.iter().map(|m| &m.last)).max().copied();
            if let Some(mark) = mark {
                let again = plan(&j, now_t, &Known { last_decided: Some(mark.max(last.unwrap_or(mark))), ..k });
                prop_assert!(again.is_empty(), "{again:?}");
            }
        }
    }
}
