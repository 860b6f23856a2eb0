//! Whether a job is overdue: an occurrence its schedule says should have
//! started did not. This module owns the test; [`crate::views::job_state`] ranks
//! it among the states, and nothing else may judge lateness.
//!
//! The test looks at one occurrence: the latest whose time is at least
//! [`GRACE`] ago (`latest_due`). It is judged only when it came at or
//! after the job was first seen (an occurrence from before a job existed is
//! neither run nor missed) and after the newest occurrence the job started.
//! The catch-up window plays no part: a job whose ticks stopped is overdue
//! [`GRACE`] after its first unstarted occurrence, however wide its window.
//!
//! A job is first seen when a tick (or the daemon) first reads it: the
//! ledger records that instant. A job no tick has ever seen (the crontab
//! line was never installed, the daemon never started) has no such record,
//! and is judged as first seen when the file that defines it last changed
//! (`baton.toml`, or its `jobs.d/` drop-in, which the daemon's `PUT`
//! writes), never later than now (`first_sighting`): so it is overdue
//! once an occurrence after that should have started, and `new` until
//! then, without `status` writing anything. A tick that then reads it
//! records its own now, later than the file's time, and runs nothing from
//! before it: the job is `new` again until its next occurrence comes due.
//! The file's time is the earlier of its modification time and its
//! status-change time, which no `touch -d` can set, so a modification
//! time put in the future leaves the job judged from when the file really
//! changed; one the clock itself put ahead (set back since) counts as now,
//! which delays the verdict by as much as the clock was ahead, never for
//! ever.
//!
//! Such an occurrence is **not** overdue (`judge`) when
//! - the job is disabled or paused (nothing is late that was stopped on
//!   purpose);
//! - it waits in the job's queue, was coalesced into an occurrence waiting
//!   there, or the lock's claim says it ran;
//! - it was missed as `paused` or `disabled` (deliberate), or as `busy` (a
//!   live run held its lock: the job's own, or a lock mate's);
//! - no tick has decided it yet while a live run holds the job's lock (the
//!   tick will find the lock busy and queue or skip it).
//!
//! Everything else is overdue: an occurrence no tick has decided (the
//! crontab line is gone, the daemon is down), or one missed for any other
//! reason (`hung`, `orphaned`, `version-conflict`, `outside-window`,
//! `late`, `catch-up-max`, `ledger-unavailable`, `start-failed`, …),
//! until a later occurrence starts.

use std::time::Duration;

use baton_store::words::MissReason;
use jiff::Timestamp;

use crate::config::Job;

/// How long after its time an occurrence may go unstarted before its job
/// is overdue: two minutes, so that with a tick once a minute (cron, the
/// daemon) one tick may come late or be lost without an alarm.
pub const GRACE: Duration = Duration::from_secs(120);

/// What became of an occurrence, as the ledger records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// No tick has decided it.
    Undecided,
    /// It started, waits in the queue, was coalesced into one waiting, or
    /// the lock's claim says it ran.
    Served,
    /// It was recorded missed, for this reason.
    Missed(MissReason),
    /// Decided, but the ledger could not say how (its record was pruned,
    /// or it could not be read).
    Unknown,
}

/// When a job counts as first seen: `recorded`, the sighting the ledger
/// keeps, when it has one; else `defined`, when the file that defines the
/// job last changed, or `now` if that is later; `None` when neither is
/// known.
pub(crate) fn first_sighting(
    recorded: Option<Timestamp>,
    defined: Option<Timestamp>,
    now: Timestamp,
) -> Option<Timestamp> {
    recorded.or_else(|| defined.map(|t| t.min(now)))
}

/// The latest occurrence of `job` at least [`GRACE`] before `now`, if it
/// came at or after `first_seen` (when the job was first seen:
/// [`first_sighting`]). `None` also when that is not known.
pub(crate) fn latest_due(
    job: &Job,
    now: Timestamp,
    first_seen: Option<Timestamp>,
) -> Option<Timestamp> {
    let grace = jiff::SignedDuration::try_from(GRACE).ok()?;
    let edge = now.checked_sub(grace).ok()?;
    let at = job
        .when
        .value
        .schedule
        .latest_at_or_before(job.due_clock(edge), &job.timezone.value.tz)?;
    (job.starts_at(at) >= first_seen?).then_some(at)
}

/// The overdue occurrence (Unix seconds), if the module's test holds:
/// `due` is [`latest_due`]'s answer, `last_started` the newest occurrence
/// the job started, `stopped` whether the job is disabled or paused,
/// `lock_live` whether a live run holds the job's lock now, and `fate`
/// says what the ledger recorded of an occurrence (asked only when one is
/// judged).
pub(crate) fn judge(
    due: Option<Timestamp>,
    last_started: Option<i64>,
    stopped: bool,
    lock_live: bool,
    fate: impl FnOnce(i64) -> Fate,
) -> Option<i64> {
    if stopped {
        return None;
    }
    let at = due?.as_second();
    if last_started.is_some_and(|s| s >= at) {
        return None;
    }
    let excused = match fate(at) {
        Fate::Served => true,
        Fate::Missed(reason) => matches!(
            reason,
            MissReason::Paused | MissReason::Disabled | MissReason::Busy
        ),
        Fate::Undecided => lock_live,
        Fate::Unknown => false,
    };
    (!excused).then_some(at)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::{self, Overrides};

    fn job(when: &str) -> Job {
        let text = format!(
            "[scheduler]\nstate_dir = \"/nonexistent\"\ntimezone = \"UTC\"\n\
             [jobs.j]\n{when}\ncatch_up_window = \"1d\"\nrun = \"true\"\n"
        );
        let c = config::parse(&text, Path::new("/etc/baton.toml"), &Overrides::default()).unwrap();
        (*c.jobs["j"]).clone()
    }

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn the_occurrence_judged_is_the_latest_past_its_grace_since_the_first_sighting() {
        let j = job("schedule = \"0 3 * * *\"");
        let seen = Some(t("2026-03-01T12:00:00Z"));
        // Hours before its first occurrence since it was seen: none.
        assert_eq!(latest_due(&j, t("2026-03-01T20:00:00Z"), seen), None);
        // Within the grace of 03:00: none yet.
        assert_eq!(latest_due(&j, t("2026-03-02T03:01:59Z"), seen), None);
        assert_eq!(
            latest_due(&j, t("2026-03-02T03:02:00Z"), seen),
            Some(t("2026-03-02T03:00:00Z"))
        );
        // Never seen: nothing is judged.
        assert_eq!(latest_due(&j, t("2026-03-05T00:00:00Z"), None), None);
    }

    #[test]
    fn with_jitter_an_occurrence_is_judged_only_past_its_start_and_its_grace() {
        let j = job("schedule = \"0 3 * * *\"\njitter = \"1h\"");
        let off = jiff::SignedDuration::try_from(j.start_offset()).unwrap();
        assert!(!off.is_zero(), "this name's offset in an hour is not 0");
        let three = t("2026-03-02T03:00:00Z");
        let grace = jiff::SignedDuration::try_from(GRACE).unwrap();
        let edge = three.checked_add(off).unwrap().checked_add(grace).unwrap();
        let seen = Some(t("2026-03-01T12:00:00Z"));
        // Past the occurrence's grace but not its start's: not yet late.
        let before = edge
            .checked_sub(jiff::SignedDuration::from_secs(1))
            .unwrap();
        assert_eq!(latest_due(&j, before, seen), None);
        assert_eq!(latest_due(&j, edge, seen), Some(three));
        // Seen after the occurrence but before its start: it is judged.
        let between = three.checked_add(off / 2).unwrap();
        assert_eq!(latest_due(&j, edge, Some(between)), Some(three));
    }

    #[test]
    fn a_job_no_tick_saw_counts_as_seen_when_its_file_changed_never_later_than_now() {
        let now = t("2026-03-05T12:00:00Z");
        let (ledger, file) = (t("2026-03-04T00:00:00Z"), t("2026-03-03T00:00:00Z"));
        // The ledger's sighting, when it has one, whatever the file says.
        assert_eq!(first_sighting(Some(ledger), Some(file), now), Some(ledger));
        assert_eq!(first_sighting(Some(ledger), None, now), Some(ledger));
        // Else the file's time, at most now.
        assert_eq!(first_sighting(None, Some(file), now), Some(file));
        let ahead = t("2027-03-05T12:00:00Z");
        assert_eq!(first_sighting(None, Some(ahead), now), Some(now));
        assert_eq!(first_sighting(None, None, now), None);
        // An every-minute job in a file of two days ago is due; one in a
        // file from the future is not, and nothing panics.
        let j = job("schedule = \"* * * * *\"");
        let seen = first_sighting(None, Some(file), now);
        assert_eq!(latest_due(&j, now, seen), Some(t("2026-03-05T11:58:00Z")));
        let seen = first_sighting(None, Some(ahead), now);
        assert_eq!(latest_due(&j, now, seen), None);
    }

    #[test]
    fn the_catch_up_window_plays_no_part() {
        // A one-day window, an every-minute job: three minutes without a
        // tick are enough.
        let j = job("schedule = \"* * * * *\"");
        let seen = Some(t("2026-03-01T12:00:00Z"));
        let due = latest_due(&j, t("2026-03-01T12:05:00Z"), seen);
        assert_eq!(due, Some(t("2026-03-01T12:03:00Z")));
        let started = Some(t("2026-03-01T12:02:00Z").as_second());
        assert_eq!(
            judge(due, started, false, false, |_| Fate::Undecided),
            Some(t("2026-03-01T12:03:00Z").as_second())
        );
    }

    #[test]
    fn what_excuses_an_unstarted_occurrence() {
        let due = Some(t("2026-03-02T03:00:00Z"));
        let at = due.map(Timestamp::as_second);
        let late = |fate: Fate, stopped, lock_live| judge(due, None, stopped, lock_live, |_| fate);
        assert_eq!(late(Fate::Undecided, false, false), at);
        assert_eq!(late(Fate::Unknown, false, false), at);
        for reason in [
            MissReason::Hung,
            MissReason::Orphaned,
            MissReason::OutsideWindow,
            MissReason::Late,
            MissReason::LedgerUnavailable,
            MissReason::StartFailed,
        ] {
            assert_eq!(late(Fate::Missed(reason), false, false), at, "{reason}");
        }
        assert_eq!(late(Fate::Served, false, false), None);
        for reason in [MissReason::Paused, MissReason::Disabled, MissReason::Busy] {
            assert_eq!(late(Fate::Missed(reason), false, false), None, "{reason}");
        }
        assert_eq!(
            late(Fate::Undecided, false, true),
            None,
            "behind a live run"
        );
        assert_eq!(late(Fate::Undecided, true, false), None, "stopped");
        // Started (or a later one started): not late.
        assert_eq!(judge(due, at, false, false, |_| Fate::Undecided), None);
        assert_eq!(judge(None, None, false, false, |_| Fate::Undecided), None);
    }
}
