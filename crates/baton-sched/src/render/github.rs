//! GitHub Actions workflows: one per enabled job, on `workflow_dispatch` and
//! on the job's schedule, that checks out the repository and runs
//! `baton run JOB`. Rendered to read and commit by hand; baton never
//! installs them.
//!
//! There is no one-driver form: a runner keeps no state between runs, so a
//! per-minute `baton tick` could not remember what already ran. The job's
//! own schedule is the driver, whether or not `--per-job` is given, and
//! GitHub's scheduler decides when it is due. Jobs that share a lock share a
//! `concurrency` group, so GitHub never runs two of them at once either:
//! their leases live on different runners and cannot see each other.
//!
//! ## The schedule
//!
//! GitHub reads a schedule's cron in UTC, or in the IANA zone its entry's
//! `timezone` names. A job's schedule is written as UTC lines where some
//! fire at baton's instants all year ([`cron_in_utc`]:
//! every zone without daylight saving, and schedules such as `*/15 * * * *`
//! that a change of offset does not move); else as written, with the
//! job's zone as `timezone`, where GitHub's documented rules fire it as
//! baton does (`super::dst`); else it is refused, naming the date the
//! schedule would run at another instant. GitHub runs a schedule at most
//! once every 5 minutes, so a schedule with two runs closer than that is
//! refused: GitHub would drop runs.
//!
//! ## On the runner
//!
//! The workflow runs in a checkout of the repository that holds the
//! configuration: [`Options::config`] is, for this target, the
//! configuration's path relative to the repository's root, rendered under
//! `${{ github.workspace }}`. The state directory is under
//! `${{ runner.temp }}`, which the runner can write and forgets after the
//! run. A runner keeps no state between runs, so each run starts with an
//! empty ledger: a `baton tick` there would see the job for the first time
//! and leave the occurrence GitHub started it for (GitHub starts scheduled
//! runs late), so the workflow runs the job with `baton run`, on a schedule
//! and on a manual dispatch alike, and runs are kept apart by `concurrency`
//! only. The workflow runs on `ubuntu-latest`, and nothing installs baton:
//! [`Options::bin`] is where the binary must be on the runner (a step the
//! user adds puts it there, or a self-hosted runner named in `runs-on`
//! has it, as the workflow's first comment says), and `baton render
//! github` asks for it (`--bin`) rather than naming the binary that
//! renders.

use std::collections::BTreeSet;

use baton_cron::Kind;
use jiff::{SignedDuration, Timestamp};

use super::translate::{self, CronSchedule, CronShape, Untranslatable, shown};
use super::{Artefact, Options, Refusal, RenderError, Target, path_text, sh_word};
use crate::config::{Config, When, Zone};

/// GitHub's shortest interval between two runs of a schedule.
const SHORTEST: SignedDuration = SignedDuration::from_mins(5);

/// The workflows for `c`.
///
/// # Errors
///
/// Every job GitHub cannot run at baton's instants; a path that cannot be
/// written.
pub fn render(c: &Config, opts: &Options) -> Result<Vec<Artefact>, RenderError> {
    let bin = sh_word(&path_text(Target::Github, "the binary", &opts.bin)?);
    let rel = path_text(Target::Github, "the configuration", &opts.config)?;
    if opts.config.is_absolute() {
        return Err(RenderError::Path {
            target: Target::Github,
            what: "the configuration",
            path: opts.config.clone(),
            why: "the workflow needs its path inside the repository, relative to the \
                  checkout (--config-path-as PATH)",
        });
    }
    let config = format!("\"${{{{ github.workspace }}}}\"/{}", sh_word(&rel));
    let entries = super::per_job(c, Target::Github, opts.now, |job| {
        schedule(&job.when.value, &job.timezone.value, opts.now).map_err(|why| Refusal {
            job: job.name.clone(),
            target: Target::Github,
            why: why.to_string(),
        })
    })?;
    let mut out = Vec::new();
    for (name, schedule) in entries {
        let job = &c.jobs[&name];
        let read_in = if schedule.zone == "UTC" {
            "as cron in UTC".to_owned()
        } else {
            format!("as cron in {} (`timezone`)", schedule.zone)
        };
        let mut t = format!(
            "# Rendered by `baton render github`: job {name} of {rel} (in this\n\
             # repository), {} in {}, {read_in}.\n\
             # GitHub starts a scheduled run when it can (often minutes late, and\n\
             # under load it may drop one), and never more often than every 5 minutes.\n\
             # It runs on GitHub's ubuntu-latest, which has no baton, and nothing\n\
             # here installs it: add a step before baton's that puts the binary at\n\
             #   {}\n\
             # or, on a self-hosted runner that has it there, set `runs-on: self-hosted`.\n\
             # A runner keeps no state between runs: the state directory is under\n\
             # runner.temp and starts empty, so each run, scheduled or dispatched by\n\
             # hand (workflow_dispatch), runs the job now (`baton run`), and runs are\n\
             # kept apart by `concurrency` only.\n\
             name: {}\n\
             on:\n\
             \x20 workflow_dispatch:\n\
             \x20 schedule:\n",
            translate::shown(&job.when.value),
            job.timezone.value.name,
            opts.bin.display(),
            yaml_str(&format!("baton {name}")),
        );
        for line in &schedule.lines {
            t.push_str(&format!("    - cron: {}\n", yaml_str(&line.to_string())));
            if schedule.zone != "UTC" {
                t.push_str(&format!("      timezone: {}\n", yaml_str(&schedule.zone)));
            }
        }
        let state = yaml_str("${{ runner.temp }}/baton-state");
        let job_word = sh_word(&name);
        t.push_str(&format!(
            "# One run at a time of every job under the lock {lock:?}.\n\
             concurrency:\n\
             \x20 group: {group}\n\
             \x20 cancel-in-progress: false\n\
             jobs:\n\
             \x20 run:\n\
             \x20   runs-on: ubuntu-latest\n\
             \x20   steps:\n\
             \x20     - uses: actions/checkout@v4\n\
             \x20     - name: {run_step}\n\
             \x20       env:\n\
             \x20         BATON_STATE_DIR: {state}\n\
             \x20       run: {run}\n",
            lock = job.lock.value,
            group = yaml_str(&format!("baton-lock-{}", job.lock.value)),
            run_step = yaml_str(&format!("baton run {name}")),
            run = yaml_str(&format!("{bin} run --config {config} -- {job_word}")),
        ));
        out.push(Artefact {
            name: format!("baton-{name}.yml"),
            text: t,
        });
    }
    Ok(out)
}

/// `when` in `zone` as GitHub schedule entries: UTC lines where some fire at
/// baton's instants, else the fields as written in `zone` (its `timezone`)
/// where GitHub's rules fire them as baton does.
///
/// # Errors
///
/// Why GitHub cannot run it at baton's instants: more often than every 5
/// minutes, no UTC line and no `timezone` entry that does (both reasons),
/// or what UTC cron cannot express at all (seconds, an interval that does
/// not divide a day).
pub fn schedule(when: &When, zone: &Zone, now: Timestamp) -> Result<CronSchedule, Untranslatable> {
    if let Some(why) = too_often(when, zone, now) {
        return Err(why);
    }
    let utc_why = match cron_in_utc(when, zone, now) {
        Ok(s) => return Ok(s),
        Err(why) => why,
    };
    let f = match (when.schedule.kind(), when.schedule.fields()) {
        (Kind::Fixed | Kind::Wildcard, Some(f)) if !when.schedule.has_seconds() => f,
        _ => return Err(utc_why),
    };
    let zone_why = match super::dst::check(super::dst::Rules::Github, when, f, zone, now) {
        Ok(()) => {
            return Ok(CronSchedule {
                zone: zone.name.clone(),
                lines: vec![translate::same_fields(when, f)?],
            });
        }
        Err(why) => why,
    };
    Err(Untranslatable::NeitherGithub {
        zone: zone.name.clone(),
        in_zone: Box::new(zone_why),
        utc: Box::new(utc_why),
    })
}

/// `when` as cron lines read in UTC, GitHub Actions' default zone: lines
/// that fire at baton's instants over the years ahead (`super::utc`).
///
/// # Errors
///
/// Why no UTC cron line can express it: sub-minute, an interval that does
/// not divide a day, day fields that cannot move across midnight, or a
/// zone whose offset changes so that every candidate line fires at another
/// instant than baton on some date, which the error names.
pub fn cron_in_utc(
    when: &When,
    zone: &Zone,
    now: Timestamp,
) -> Result<CronSchedule, Untranslatable> {
    let f = match translate::cron_shape(when)? {
        CronShape::Lines(lines) => return Ok(lines),
        CronShape::Fields(f) => f,
    };
    Ok(CronSchedule {
        zone: "UTC".into(),
        lines: super::utc::lines(when, f, zone, now)?,
    })
}

/// Why `when` runs more often than GitHub's shortest interval, if it does:
/// two of its times of day closer than 5 minutes (across midnight too, when
/// two days in a row fire).
fn too_often(when: &When, zone: &Zone, now: Timestamp) -> Option<Untranslatable> {
    if let Kind::Every(p) = when.schedule.kind() {
        let p = SignedDuration::try_from(p).unwrap_or(SignedDuration::MAX);
        return (p < SHORTEST).then(|| Untranslatable::EveryTooOften {
            schedule: shown(when),
            secs: p.as_secs(),
        });
    }
    let f = when.schedule.fields()?;
    let times: BTreeSet<i32> = f
        .hour()
        .values()
        .flat_map(|h| {
            f.minute()
                .values()
                .map(move |m| i32::from(h) * 60 + i32::from(m))
        })
        .collect();
    let times: Vec<i32> = times.into_iter().collect();
    let mut closest: Option<(i32, i32, i32)> =
        times.windows(2).map(|w| (w[1] - w[0], w[0], w[1])).min();
    if let (Some(&first), Some(&last)) = (times.first(), times.last()) {
        let across = first + 1440 - last;
        if closest.is_none_or(|c| across < c.0) && two_days_in_a_row(f, zone, now) {
            closest = Some((across, last, first));
        }
    }
    let (gap, a, b) = closest?;
    let hm = |t: i32| format!("{:02}:{:02}", t / 60, t % 60);
    (gap < 5).then(|| Untranslatable::TooClose {
        schedule: shown(when),
        gap,
        first: hm(a),
        second: hm(b),
    })
}

/// Whether `f` fires on two days in a row (in `zone`) in the four years
/// after `now`.
fn two_days_in_a_row(f: &baton_cron::Fields, zone: &Zone, now: Timestamp) -> bool {
    // OK to cast: an hour (0-23) and a minute (0-59).
    let hour = f.hour().values().next().unwrap_or(0) as i8;
    let minute = f.minute().values().next().unwrap_or(0) as i8;
    let fires = |d: jiff::civil::Date| super::changes::matches(f, d.at(hour, minute, 0, 0));
    let mut day = zone.tz.to_datetime(now).date();
    let mut before = fires(day);
    for _ in 0..(4 * 366) {
        let Ok(next) = day.tomorrow() else {
            return false;
        };
        let fires_next = fires(next);
        if before && fires_next {
            return true;
        }
        before = fires_next;
        day = next;
    }
    false
}

/// A YAML scalar in single quotes (`'` doubled).
fn yaml_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
