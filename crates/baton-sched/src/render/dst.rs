//! How each target fires a cron schedule read in a zone where the zone's
//! clocks change, against baton: the one place that says which schedules a
//! per-job entry in a zone may carry.
//!
//! baton's rules ([`baton_cron`]): a *fixed* schedule (neither minute nor
//! hour starts with `*`) runs a skipped time once when the clocks jump, and
//! a repeated time once, the first time it shows; a *wildcard* schedule runs
//! at every instant whose wall clock matches, so never in a gap and twice in
//! a fold. Each target's rules, and what follows:
//!
//! - **cron** ([`Rules::Cron`]): a cron that matches the zone's clock each
//!   minute (cronie under `CRON_TZ=`) never runs a skipped time and runs a
//!   repeated one twice; Vixie cron and cronie in the host's zone instead
//!   make up skipped fixed times and run repeated ones once, and both run
//!   wildcard lines by the clock. Wildcard schedules fire as baton does
//!   under every one of them. A fixed time the clocks repeat is kept: a
//!   line runs `baton tick -- JOB`, and the second tick of a cron that
//!   fires twice finds the occurrence decided and runs nothing, so the job
//!   runs once, at the first, as baton runs it. A fixed time the clocks
//!   skip is refused: the first kind of cron never fires it.
//! - **systemd** ([`Rules::Systemd`]): `OnCalendar=` runs a repeated time
//!   once, the first time it shows, and does not run a skipped time then
//!   (systemd 252 skips it; the tests hold this against the installed
//!   `systemd-analyze`). So a fixed time in a gap is refused, a wildcard
//!   time in a fold is refused, and a wildcard time in a gap is kept only
//!   when the time it would move to, shifted by the gap, fires anyway (a
//!   systemd that shifts skipped times then changes nothing). A refusal
//!   here is of the zone's wall clock only: [`super::systemd`] then tries
//!   UTC expressions, which no clock change moves ([`super::utc`]).
//! - **GitHub Actions with `timezone`** ([`Rules::Github`]): its
//!   documentation says that at a spring-forward change scheduled workflows
//!   "in skipped hours advance to the next valid time" (2:30 to 3:00), and
//!   says nothing of the repeated hour. So one fixed time in a gap, where
//!   the jump itself is no time of the schedule, runs as baton runs it; any
//!   other time in a window is refused.
//!
//! A refusal names the time, the zone and the date of the first change
//! where the target would run at another instant.

use baton_cron::{Fields, Kind};
use jiff::Timestamp;

use super::changes::{self, OffsetChange, hm, matches, touched};
use super::translate::{Mismatch, Untranslatable, shown};
use crate::config::{When, Zone};

/// Whose rules a schedule is judged by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rules {
    /// A crontab line read in the zone.
    Cron,
    /// A systemd `OnCalendar=` expression in the zone.
    Systemd,
    /// A GitHub Actions schedule entry with `timezone`.
    Github,
}

/// `Ok` when the target fires `f` (the fields of `when`) in `zone` at
/// baton's instants at every clock change of the next
/// [`changes::HORIZON`] after `now`; else why not, naming the first.
pub(crate) fn check(
    rules: Rules,
    when: &When,
    f: &Fields,
    zone: &Zone,
    now: Timestamp,
) -> Result<(), Untranslatable> {
    let wildcard = when.schedule.kind() == Kind::Wildcard;
    for change in changes::offset_changes(zone, now) {
        let times = touched(f, &change);
        if times.is_empty() {
            continue;
        }
        let why = match rules {
            Rules::Cron => cron(wildcard, &change),
            Rules::Systemd => systemd(wildcard, f, &change, &times),
            Rules::Github => github(wildcard, f, &change, &times),
        };
        if let Some(why) = why {
            let at = match &times[..] {
                [one] => hm(*one),
                [first, ..] => format!("{} and other times", hm(*first)),
                [] => unreachable!("OK because an empty list was skipped above"),
            };
            return Err(Untranslatable::ClockChange {
                schedule: shown(when),
                at,
                zone: zone.name.clone(),
                change: change.describe(),
                why,
            });
        }
    }
    Ok(())
}

fn cron(wildcard: bool, change: &OffsetChange) -> Option<Mismatch> {
    // A repeated time fired twice runs the job once: the second
    // `baton tick -- JOB` finds its occurrence decided.
    if wildcard || !change.skips() {
        return None;
    }
    Some(Mismatch::CronSkipped {
        jump: change.window().1,
    })
}

fn systemd(
    wildcard: bool,
    f: &Fields,
    change: &OffsetChange,
    times: &[jiff::civil::DateTime],
) -> Option<Mismatch> {
    let jump = change.window().1;
    match (change.skips(), wildcard) {
        (true, false) => Some(Mismatch::SystemdSkipped { jump }),
        (true, true) => {
            let shifted_fire = times.iter().all(|t| {
                t.checked_add(change.size())
                    .is_ok_and(|later| matches(f, later))
            });
            (!shifted_fire).then_some(Mismatch::SystemdShifted)
        }
        (false, true) => Some(Mismatch::SystemdRepeated),
        (false, false) => None,
    }
}

fn github(
    wildcard: bool,
    f: &Fields,
    change: &OffsetChange,
    times: &[jiff::civil::DateTime],
) -> Option<Mismatch> {
    let jump = change.window().1;
    if !change.skips() {
        return Some(Mismatch::GithubRepeated);
    }
    if wildcard {
        return Some(Mismatch::GithubMoved { jump });
    }
    if times.len() > 1 || matches(f, jump) {
        return Some(Mismatch::GithubMovedMany { jump });
    }
    None
}
